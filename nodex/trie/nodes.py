"""
The decoded trie nodes the hexary trie keeps in memory, and their RLP.

A node object caches C{ref}, the bytes that stand for it inside its
parent's encoding: C{0xa0} followed by its Keccak-256 hash when its RLP is
32 bytes or longer, otherwise the RLP itself (an embedded node).  C{ref} is
L{None} while the node is dirty.  C{stored} says whether the node's RLP is
already in the node store (or embedded in a stored parent), so that a
commit writes only what changed.

A child slot holds L{None} (blank), a 33-byte C{bytes} reference to a node
not loaded yet, or a node object.
"""

from binascii import unhexlify
from typing import Union

from nodex.rlpcore import LIST_PREFIXES, PREFIX_TABLE_SIZE, STRING_PREFIXES
from nodex.trie.errors import MalformedNodeError
from nodex.trie.nibbles import NIBBLE_TO_HEX, decode_path
from nodex.trie.node_rlp import (
    EMPTY_STRING,
    RLPItem,
    decode,
    decode_item,
    encode_bytes,
    encode_list_payload,
    list_payload_bounds,
)

HASH_REF_PREFIX = b"\xa0"
"""The RLP prefix of a 32-byte string: a hash reference starts with it."""


class LeafNode:
    """
    The end of a key: the rest of its nibble path and its value.
    """

    __slots__ = ("path", "value", "ref", "stored")

    def __init__(self, path: bytes, value: bytes) -> None:
        """
        @param path: the remaining nibbles of the key.
        @param value: the non-empty value.
        """
        self.path = path
        self.value = value
        self.ref: bytes | None = None
        self.stored = False


class ExtensionNode:
    """
    A run of nibbles shared by every key below, leading to one branch.
    """

    __slots__ = ("path", "child", "ref", "stored")

    def __init__(self, path: bytes, child: "Child") -> None:
        """
        @param path: the shared nibbles (at least one).
        @param child: the branch below.
        """
        self.path = path
        self.child = child
        self.ref: bytes | None = None
        self.stored = False


class BranchNode:
    """
    Sixteen children, one per next nibble, and the value of the key that ends here.
    """

    __slots__ = ("children", "value", "ref", "stored")

    def __init__(self) -> None:
        """
        Create an empty branch; the caller fills at least two of its slots.
        """
        self.children: list[Child] = [None] * 16
        self.value = b""
        self.ref: bytes | None = None
        self.stored = False


Node = Union[LeafNode, ExtensionNode, BranchNode]
Child = Union[None, bytes, Node]


def _child_from_item(item: RLPItem) -> Child:
    """
    Turn one child item of a decoded node into a child slot.

    @raise MalformedNodeError: the item is neither blank, a hash nor a node.
    """
    if isinstance(item, list):
        node = node_from_items(item)
        node.stored = True
        return node
    if not item:
        return None
    if len(item) == 32:
        return HASH_REF_PREFIX + item
    raise MalformedNodeError(f"child reference of {len(item)} bytes is neither a hash nor a node")


def node_from_items(items: RLPItem) -> Node:
    """
    Build a node object from its decoded RLP: a 2-item list (leaf or
    extension) or a 17-item list (branch).

    @raise MalformedNodeError: the structure is not a trie node.
    """
    if not isinstance(items, list):
        raise MalformedNodeError("a trie node must be an RLP list")
    if len(items) == 17:
        value = items[16]
        if not isinstance(value, bytes):
            raise MalformedNodeError("a branch node's value must be a byte string")
        branch = BranchNode()
        branch.children = [_child_from_item(item) for item in items[:16]]
        branch.value = value
        return branch
    if len(items) == 2:
        encoded_path, second = items
        if not isinstance(encoded_path, bytes):
            raise MalformedNodeError("a leaf or extension path must be a byte string")
        path, is_leaf = decode_path(encoded_path)
        if is_leaf:
            if not isinstance(second, bytes):
                raise MalformedNodeError("a leaf node's value must be a byte string")
            return LeafNode(path, second)
        if not path:
            raise MalformedNodeError("an extension node with an empty path")
        return ExtensionNode(path, _child_from_item(second))
    raise MalformedNodeError(f"a trie node has 2 or 17 items, not {len(items)}")


def _decode_plain_branch(encoded: bytes) -> BranchNode | None:
    """
    Decode a branch whose children are all blank or hashes (nearly every
    stored branch) straight from the bytes: a hash child's reference is its
    33-byte slice, prefix included.

    @return: the branch, or L{None} when C{encoded} is anything else.
    @raise MalformedNodeError: C{encoded} is not one RLP list.
    """
    position, stop = list_payload_bounds(encoded)
    children: list[Child] = []
    while len(children) < 16 and position < stop:
        first = encoded[position]
        if first == 0x80:
            children.append(None)
            position += 1
        elif first == 0xA0 and position + 33 <= stop:
            children.append(encoded[position : position + 33])
            position += 33
        else:
            return None
    if len(children) != 16 or position >= stop:
        return None
    value, position = decode_item(encoded, position, stop)
    if position != stop or not isinstance(value, bytes):
        return None
    branch = BranchNode()
    branch.children = children
    branch.value = value
    return branch


def copy_node(node: Node) -> Node:
    """
    A copy of C{node} that a trie may change: its embedded children copied
    too, its hashed children (references) shared; the same C{ref} and
    C{stored}.
    """
    kind = type(node)
    copy: Node
    if kind is BranchNode:
        copy = BranchNode()
        copy.children = [
            child if child is None or type(child) is bytes else copy_node(child)  # type: ignore[arg-type]
            for child in node.children  # type: ignore[union-attr]
        ]
        copy.value = node.value  # type: ignore[union-attr]
    elif kind is LeafNode:
        copy = LeafNode(node.path, node.value)  # type: ignore[union-attr]
    else:
        child = node.child  # type: ignore[union-attr]
        copy = ExtensionNode(node.path, child if child is None or type(child) is bytes else copy_node(child))
    copy.ref = node.ref
    copy.stored = node.stored
    return copy


def decode_node(encoded: bytes) -> Node:
    """
    Decode the RLP of a stored node.  Embedded children become node objects;
    hashed children stay references.

    @raise MalformedNodeError: the bytes are not a trie node.
    """
    encoded = bytes(encoded)
    return _decode_plain_branch(encoded) or node_from_items(decode(encoded))


def _encoded_path(path: bytes, flags: bytes) -> bytes:
    """
    The RLP string of a hex-prefix path (L{nodex.trie.nibbles.encode_path}, inlined with L{encode_bytes}):
    C{flags} is the flag nibble, with the pad nibble for an even path, as hexadecimal digits.
    """
    packed = unhexlify(flags + path.translate(NIBBLE_TO_HEX))
    length = len(packed)
    if length == 1:
        # 0x00, 0x1?, 0x20 or 0x3?: below 0x80, its own encoding.
        return packed
    if length < PREFIX_TABLE_SIZE:
        return STRING_PREFIXES[length] + packed
    return encode_bytes(packed)


def encode_leaf(path: bytes, value: bytes) -> bytes:
    """
    The RLP of a leaf node: its hex-prefix path and its value as RLP strings, in a list.  Written out (a leaf is
    encoded and hashed at every change of its value, the commonest change of a block) with the same result as
    C{encode_list_payload(encode_bytes(encode_path(path, True)) + encode_bytes(value))}.
    """
    head = _encoded_path(path, b"3" if len(path) & 1 else b"20")
    length = len(value)
    if length == 1 and value[0] < 0x80:
        payload = head + value
    elif length < PREFIX_TABLE_SIZE:
        payload = b"".join((head, STRING_PREFIXES[length], value))
    else:
        payload = head + encode_bytes(value)
    length = len(payload)
    if length < PREFIX_TABLE_SIZE:
        return LIST_PREFIXES[length] + payload
    return encode_list_payload(payload)


def encode_extension(path: bytes, child_ref: bytes) -> bytes:
    """
    The RLP of an extension node whose child stands as C{child_ref}.
    """
    return encode_list_payload(_encoded_path(path, b"1" if len(path) & 1 else b"00") + child_ref)


def encode_branch(child_refs: list[bytes], value: bytes) -> bytes:
    """
    The RLP of a branch node whose sixteen children stand as C{child_refs}.
    """
    payload = b"".join(child_refs) + (encode_bytes(value) if value else EMPTY_STRING)
    length = len(payload)
    if length < PREFIX_TABLE_SIZE:
        return LIST_PREFIXES[length] + payload
    return encode_list_payload(payload)


__all__ = [
    "BranchNode",
    "Child",
    "copy_node",
    "ExtensionNode",
    "HASH_REF_PREFIX",
    "LeafNode",
    "Node",
    "decode_node",
    "encode_branch",
    "encode_extension",
    "encode_leaf",
    "node_from_items",
]
