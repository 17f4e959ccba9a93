"""
Tests for L{nodex.trie.ordered}.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.trie import BLANK_ROOT, HexaryTrie, ordered_trie_root
from nodex.trie.ordered import index_key


class OrderedTrieRootTests(SynchronousTestCase):
    """
    Tests for L{ordered_trie_root}.
    """

    def test_empty(self) -> None:
        """
        No items give the blank root (a block with no transactions).
        """
        self.assertEqual(ordered_trie_root([]), BLANK_ROOT)

    def test_index_keys(self) -> None:
        """
        Position keys are the RLP of the index: 0 is C{0x80}, small numbers are
        one byte, 128 and above are prefixed.
        """
        self.assertEqual(index_key(0), b"\x80")
        self.assertEqual(index_key(1), b"\x01")
        self.assertEqual(index_key(127), b"\x7f")
        self.assertEqual(index_key(128), b"\x81\x80")
        self.assertEqual(index_key(256), b"\x82\x01\x00")

    def test_matches_trie(self) -> None:
        """
        The root equals a trie filled by hand with the same keys, for lists
        long enough to use multi-byte keys.
        """
        items = [bytes([index % 251]) * (index % 90 + 1) for index in range(300)]
        trie = HexaryTrie({}.get)
        for index, item in enumerate(items):
            trie.put(index_key(index), item)
        self.assertEqual(ordered_trie_root(items), trie.root_hash)

    def test_one_item(self) -> None:
        """
        A one-item list (its shortcut: a lone leaf) has the root of the trie
        holding that item, whether the item is short or long.
        """
        for item in (
            b"\x01", b"\x7f", b"\x80", b"\xff", b"\x00\x01", b"short", b"\x02" * 40, b"\x05" * 52, b"\x06" * 53,
            b"\x07" * 54, b"\x08" * 55, b"\x09" * 56, b"\x0a" * 255, b"\x0b" * 256, b"\x03" * 2000, b"\x04" * 70000,
        ):
            trie = HexaryTrie({}.get)
            trie.put(index_key(0), item)
            self.assertEqual(ordered_trie_root([item]), trie.root_hash)

    def test_known_root(self) -> None:
        """
        A fixed three-item list has the root that py-trie computes for it.
        """
        items = [b"one transaction", b"\x02" * 40, b"third"]
        self.assertEqual(
            ordered_trie_root(items).hex(),
            "eaffd04787896a40da9b231cf80f6a425b63bfcf6ab7c26e41acbf84cfb640f6",
        )
