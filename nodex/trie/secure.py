"""
The secure trie: a hexary trie keyed by the Keccak-256 of each key, as
Ethereum's state and storage tries are, so that no one can choose keys that
make paths long.
"""

from nodex.crypto import keccak256
from nodex.trie.errors import TrieError
from nodex.trie.hexary import HexaryTrie
from nodex.trie.nibbles import key_to_nibbles

PATHS_KEPT = 16_384
"""The most keys whose hashed paths L{SecureTrie} keeps, shared by every
trie of the process (a few MiB; all are dropped when it is full): the same
accounts and storage slots recur block after block (an automined token
transfer's sender, contract and two balance slots), and each path costs a
Keccak-256.  A path depends on its key alone, so a kept one is never stale."""

_kept_paths: dict[bytes, bytes] = {}


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
        path = _kept_paths.get(key)
        if path is None:
            path = key_to_nibbles(keccak256(key))
            if len(_kept_paths) >= PATHS_KEPT:
                _kept_paths.clear()
            _kept_paths[bytes(key)] = path
        return path


__all__ = ["PATHS_KEPT", "SecureTrie"]
