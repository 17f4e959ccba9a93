"""
The root of a list stored in a trie by position: the transactions root and
the receipts root of a block.
"""

from collections.abc import Sequence

from nodex.trie.hexary import HexaryTrie
from nodex.trie.node_rlp import encode_bytes


def index_key(index: int) -> bytes:
    """
    The trie key of position C{index}: the RLP of the integer (0 is the
    empty string, so its key is C{0x80}).
    """
    return encode_bytes(index.to_bytes((index.bit_length() + 7) // 8, "big"))


def _no_nodes(node_hash: bytes) -> None:
    """
    The node reader of a trie built from nothing: it never has a node.
    """
    return None


def ordered_trie_root(items: Sequence[bytes]) -> bytes:
    """
    The root hash of the trie mapping C{rlp(i)} to C{items[i]}.

    @param items: the encoded transactions or receipts, in block order.
    """
    trie = HexaryTrie(_no_nodes)
    for index, item in enumerate(items):
        trie.put(index_key(index), item)
    return trie.root_hash


__all__ = ["index_key", "ordered_trie_root"]
