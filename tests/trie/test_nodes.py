"""
Tests for L{nodex.trie.nodes}: decoding stored nodes, and encoding them.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.trie.errors import MalformedNodeError
from nodex.trie.nibbles import encode_path
from nodex.trie.node_rlp import encode, encode_list_payload
from nodex.trie.nodes import (
    BranchNode,
    ExtensionNode,
    LeafNode,
    decode_node,
    encode_branch,
    encode_extension,
    encode_leaf,
)

HASH = bytes(range(32))


class DecodeNodeTests(SynchronousTestCase):
    """
    Tests for L{decode_node}.
    """

    def test_branch_of_hashes(self) -> None:
        """
        A branch of blanks and hashes keeps each hash as a 33-byte reference,
        and its value.
        """
        items = [HASH if index % 2 else b"" for index in range(16)] + [b"value"]
        node = decode_node(encode(items))
        self.assertIsInstance(node, BranchNode)
        assert isinstance(node, BranchNode)
        self.assertEqual(node.children[1], b"\xa0" + HASH)
        self.assertIsNone(node.children[0])
        self.assertEqual(node.value, b"value")

    def test_branch_with_embedded_child(self) -> None:
        """
        An embedded child becomes a node object marked stored.
        """
        leaf = [encode_path(b"\x01", True), b"x"]
        items = [leaf] + [b""] * 15 + [b""]
        node = decode_node(encode(items))
        assert isinstance(node, BranchNode)
        child = node.children[0]
        self.assertIsInstance(child, LeafNode)
        assert isinstance(child, LeafNode)
        self.assertEqual((child.path, child.value, child.stored), (b"\x01", b"x", True))

    def test_leaf_with_hash_sized_path(self) -> None:
        """
        A leaf whose encoded path is 32 bytes (it looks like a hash) is still a leaf.
        """
        path = bytes([5] * 63)
        node = decode_node(encode([encode_path(path, True), b"v"]))
        assert isinstance(node, LeafNode)
        self.assertEqual((node.path, node.value), (path, b"v"))

    def test_extension(self) -> None:
        """
        An extension keeps its path and its child's reference.
        """
        node = decode_node(encode([encode_path(b"\x01\x02", False), HASH]))
        assert isinstance(node, ExtensionNode)
        self.assertEqual((node.path, node.child), (b"\x01\x02", b"\xa0" + HASH))

    def test_malformed(self) -> None:
        """
        Byte strings, lists of the wrong length, empty extension paths, bad
        child references and trailing bytes raise L{MalformedNodeError}.
        """
        bad = [
            encode(b"not a list"),
            encode([b"a", b"b", b"c"]),
            encode([encode_path(b"", False), HASH]),
            encode([encode_path(b"\x01", False), b"\x01\x02"]),
            encode([b""] * 16 + [[b"x"]]),
            encode([b""] * 17) + b"\x00",
            b"",
        ]
        for encoded in bad:
            self.assertRaises(MalformedNodeError, decode_node, encoded)


# Lengths around the short/long-form boundaries of RLP (55/56 bytes) and the prefix tables (1,024 bytes).
_EDGE_VALUES = [
    b"\x00",
    b"\x7f",
    b"\x80",
    b"\xff",
    b"\x01\x02",
    b"v" * 55,
    b"v" * 56,
    b"v" * 1023,
    b"v" * 1024,
    b"v" * 5000,
]
_EDGE_PATHS = [
    bytes(index % 16 for index in range(length)) for length in (0, 1, 2, 3, 64, 109, 110, 111, 2045, 2046, 2047)
]


class EncodeNodeTests(SynchronousTestCase):
    """
    Tests for L{encode_leaf}, L{encode_extension} and L{encode_branch}, which write the RLP out: each against the
    general encoder of the node's items.
    """

    def test_leaf(self) -> None:
        """
        A leaf of any path (even, odd, empty, short or long in RLP) and value is the RLP list of its hex-prefix path
        and its value.
        """
        for path in _EDGE_PATHS:
            for value in _EDGE_VALUES:
                self.assertEqual(encode_leaf(path, value), encode([encode_path(path, True), value]), (len(path), value[:4]))

    def test_extension(self) -> None:
        """
        An extension of any path is the RLP list of its hex-prefix path and its child's reference (a hash or an
        embedded node).
        """
        embedded = encode([encode_path(b"\x01", True), b"x"])
        for path in _EDGE_PATHS[1:]:
            for child in (b"\xa0" + HASH, embedded):
                expected = encode_list_payload(encode(encode_path(path, False)) + child)
                self.assertEqual(encode_extension(path, child), expected, len(path))

    def test_branch(self) -> None:
        """
        A branch is the RLP list of its sixteen child references and its value, whether empty, a single byte, or long
        enough to take the long form of a list.
        """
        refs = [b"\x80" if index % 3 else b"\xa0" + HASH for index in range(16)]
        for value in [b""] + _EDGE_VALUES:
            self.assertEqual(encode_branch(refs, value), encode_list_payload(b"".join(refs) + encode(value)), value[:4])
