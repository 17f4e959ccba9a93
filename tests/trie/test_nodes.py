"""
Tests for L{nodex.trie.nodes}: decoding stored nodes.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.trie.errors import MalformedNodeError
from nodex.trie.nibbles import encode_path
from nodex.trie.node_rlp import encode
from nodex.trie.nodes import BranchNode, ExtensionNode, LeafNode, decode_node

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
