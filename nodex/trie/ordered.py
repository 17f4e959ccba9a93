"""
The root of a list stored in a trie by position: the transactions root and
the receipts root of a block.
"""

from collections.abc import Sequence

from nodex.crypto import keccak256
from nodex.trie.hexary import BLANK_ROOT, HexaryTrie
from nodex.trie.nibbles import key_to_nibbles
from nodex.trie.node_rlp import encode_bytes, encode_list_payload
from nodex.trie.nodes import encode_leaf


def index_key(index: int) -> bytes:
    """
    The trie key of position C{index}: the RLP of the integer (0 is the
    empty string, so its key is C{0x80}).
    """
    return encode_bytes(index.to_bytes((index.bit_length() + 7) // 8, "big"))


_FIRST_PATH = key_to_nibbles(index_key(0))
"""The nibble path of position 0."""

_FIRST_LEAF_HEAD = encode_leaf(_FIRST_PATH, b"\x00")[1:-1]
"""The RLP of position 0's path in a leaf (its hex-prefix path as an RLP
string): the same in every one-item root."""


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
    if not items:
        return BLANK_ROOT
    if len(items) == 1:
        # One leaf at the root, the common block of an automining node: its
        # path's encoding is a constant (encode_leaf's payload is the path's
        # RLP, then the value's).
        return keccak256(encode_list_payload(_FIRST_LEAF_HEAD + encode_bytes(items[0])))
    trie = HexaryTrie(_no_nodes)
    for index, item in enumerate(items):
        trie.put(index_key(index), item)
    return trie.root_hash


__all__ = ["index_key", "ordered_trie_root"]
