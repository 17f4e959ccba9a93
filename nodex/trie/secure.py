"""
The secure trie: a hexary trie keyed by the Keccak-256 of each key, as
Ethereum's state and storage tries are, so that no one can choose keys that
make paths long.
"""

from nodex.crypto import keccak256
from nodex.trie.errors import TrieError
from nodex.trie.hexary import HexaryTrie
from nodex.trie.nibbles import key_to_nibbles


class SecureTrie(HexaryTrie):
    """
    A L{HexaryTrie} that stores each key at the path of its Keccak-256 hash.

    L{get}, L{put}, L{delete} and L{prove} take the original keys;
    L{items}, L{next_key} and L{previous_key} work on the hashed keys, the
    only ones the trie holds.
    """

    def _nibbles(self, key: bytes) -> bytes:
        """
        The nibble path of Keccak-256 of C{key}.

        @raise TrieError: the key is not C{bytes}.
        """
        if not isinstance(key, bytes):
            raise TrieError(f"trie keys are bytes, not {type(key).__name__}")
        return key_to_nibbles(keccak256(key))


__all__ = ["SecureTrie"]
