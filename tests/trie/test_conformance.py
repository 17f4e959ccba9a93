"""
The ethereum/tests TrieTests vectors, run against L{HexaryTrie} and L{SecureTrie}.
"""

from typing import Any

from twisted.trial.unittest import SynchronousTestCase

from nodex.trie import HexaryTrie, SecureTrie
from tests.conformance import load_fixture


def _bytes(text: str | None) -> bytes:
    """
    A vector's key or value: C{0x}-prefixed hex, plain text, or null (empty).
    """
    if text is None:
        return b""
    if text.startswith("0x"):
        return bytes.fromhex(text[2:])
    return text.encode("utf-8")


def _no_nodes(node_hash: bytes) -> None:
    """
    A node reader with no nodes: the vectors start from the empty trie.
    """
    return None


class TrieTestsConformanceTests(SynchronousTestCase):
    """
    Every vector of TrieTests gives the expected root.
    """

    def _check_roots(self, filename: str, trie_class: type[HexaryTrie]) -> None:
        """
        Apply each vector's inputs in order and compare the root.
        """
        vectors: dict[str, Any] = load_fixture("TrieTests", filename)
        self.assertTrue(vectors)
        for name, vector in vectors.items():
            pairs = vector["in"].items() if isinstance(vector["in"], dict) else vector["in"]
            trie = trie_class(_no_nodes)
            for key, value in pairs:
                trie.put(_bytes(key), _bytes(value))
            self.assertEqual("0x" + trie.root_hash.hex(), vector["root"], f"{filename}: {name}")

    def test_trietest(self) -> None:
        """
        trietest.json: ordered inserts and deletions (null values).
        """
        self._check_roots("trietest.json", HexaryTrie)

    def test_trietest_secure(self) -> None:
        """
        trietest_secureTrie.json, on the secure trie.
        """
        self._check_roots("trietest_secureTrie.json", SecureTrie)

    def test_trieanyorder(self) -> None:
        """
        trieanyorder.json: the root does not depend on insertion order.
        """
        self._check_roots("trieanyorder.json", HexaryTrie)

    def test_trieanyorder_secure(self) -> None:
        """
        trieanyorder_secureTrie.json, on the secure trie.
        """
        self._check_roots("trieanyorder_secureTrie.json", SecureTrie)

    def test_hex_encoded_securetrie(self) -> None:
        """
        hex_encoded_securetrie_test.json: hex keys and values on the secure trie.
        """
        self._check_roots("hex_encoded_securetrie_test.json", SecureTrie)

    def test_trietestnextprev(self) -> None:
        """
        trietestnextprev.json: the previous and next key of each probe
        (an empty string in the vector means there is none).
        """
        vectors: dict[str, Any] = load_fixture("TrieTests", "trietestnextprev.json")
        for name, vector in vectors.items():
            trie = HexaryTrie(_no_nodes)
            for key in vector["in"]:
                trie.put(_bytes(key), _bytes(key))
            for probe, previous, following in vector["tests"]:
                self.assertEqual(trie.previous_key(_bytes(probe)) or b"", _bytes(previous), name)
                self.assertEqual(trie.next_key(_bytes(probe)) or b"", _bytes(following), name)
