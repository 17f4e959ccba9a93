"""
Tests for L{nodex.chain.receiptnodes}, checked against py-trie, an
independent implementation of the hexary trie.
"""

import rlp
from trie import HexaryTrie as ReferenceTrie
from twisted.trial.unittest import SynchronousTestCase

from nodex.chain.receiptnodes import receipt_trie_nodes
from nodex.crypto import keccak256


def reference_root(values: list[bytes]) -> bytes:
    """
    The root of the trie of C{rlp(i) -> values[i]}, by py-trie.
    """
    trie = ReferenceTrie({})
    for index, value in enumerate(values):
        trie[rlp.encode(index)] = value
    return trie.root_hash


class ReceiptTrieNodesTests(SynchronousTestCase):
    """
    Tests for L{receipt_trie_nodes}.
    """

    def receipts(self, count: int) -> list[bytes]:
        """
        C{count} distinct receipt-like values, some under 32 bytes (embedded
        in their parent) and some above.
        """
        return [bytes([index % 256]) * (5 if index % 3 == 0 else 90 + index) for index in range(count)]

    def test_prove_under_reference_root(self) -> None:
        """
        For blocks of 1 to 300 receipts, the nodes of every sampled index,
        read root first, prove its value under py-trie's root; the last node
        is the root and the first holds the receipt's path end.
        """
        for count in (1, 2, 3, 17, 130, 300):
            values = self.receipts(count)
            root = reference_root(values)
            for index in sorted({0, 1 % count, count // 2, count - 1}):
                nodes = receipt_trie_nodes(values, index)
                self.assertEqual(keccak256(nodes[-1]), root)
                proof = tuple(rlp.decode(node) for node in reversed(nodes))
                self.assertEqual(ReferenceTrie.get_from_proof(root, rlp.encode(index), proof), values[index])

    def test_single_receipt_is_one_node(self) -> None:
        """
        A one-transaction block's trie is one leaf, which is also the root.
        """
        values = self.receipts(1)
        nodes = receipt_trie_nodes(values, 0)
        self.assertEqual(len(nodes), 1)
        self.assertEqual(rlp.decode(nodes[0])[1], values[0])

    def test_index_out_of_range(self) -> None:
        """
        An index beyond the block's receipts is an error, not an absence proof.
        """
        self.assertRaises(IndexError, receipt_trie_nodes, self.receipts(3), 3)
        self.assertRaises(IndexError, receipt_trie_nodes, self.receipts(3), -1)
