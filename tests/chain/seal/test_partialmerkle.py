"""
Tests for L{nodex.chain.seal.partialmerkle}: Bitcoin's partial merkle trees on
transaction ids built by the tests, odd and even trees.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.chain.errors import MalformedBitcoinDataError
from nodex.chain.seal.partialmerkle import PartialMerkleTree, build, coinbase_branch, decode, encode, extract
from tests.chain import bitcoin_blocks as bb


def ids(count: int) -> list[bytes]:
    """
    The txids of C{count} distinct transactions.
    """
    return [bb.double_sha256(bb.transaction(seed)) for seed in range(count)]


class PartialMerkleTreeTests(SynchronousTestCase):
    """
    Build, encode, decode and extract.
    """

    def test_round_trip_any_matches(self) -> None:
        """
        For trees of 1 to 13 leaves and several match patterns, extracting gives
        the block's merkle root and exactly the matched transactions.
        """
        for count in range(1, 14):
            txids = ids(count)
            for pattern in ({0}, {count - 1}, {0, count // 2}, set(range(count)), set()):
                matched = [index in pattern for index in range(count)]
                tree = decode(encode(build(txids, matched)))
                root, found = extract(tree)
                self.assertEqual(root, bb.merkle_root(txids))
                self.assertEqual(found, [(index, txids[index]) for index in sorted(pattern)])

    def test_known_encoding(self) -> None:
        """
        A tree of 3 with the coinbase matched: flags 1,1,1,0,0 (0x07 after
        packing from the low bit), hashes txid0, txid1, the hash of txid2 doubled.
        """
        txids = ids(3)
        tree = build(txids, [True, False, False])
        self.assertEqual(tree.flags, (True, True, True, False, False))
        self.assertEqual(tree.hashes, (txids[0], txids[1], bb.double_sha256(txids[2] + txids[2])))
        self.assertEqual(encode(tree), b"\x03\x00\x00\x00\x03" + b"".join(tree.hashes) + b"\x01\x07")

    def test_coinbase_tree_is_the_branch(self) -> None:
        """
        The coinbase-only tree's hashes are the coinbase txid and its branch, bottom-up.
        """
        for count in (1, 2, 3, 4, 7, 8, 9):
            txids = ids(count)
            tree = build(txids, [True] + [False] * (count - 1))
            self.assertEqual(list(tree.hashes), [txids[0]] + bb.branch(txids))
            self.assertEqual(coinbase_branch(count, tree.hashes), bb.branch(txids))

    def test_coinbase_branch_refusals(self) -> None:
        """
        A branch of the wrong depth, or with identical siblings, is refused.
        """
        txids = ids(4)
        hashes = [txids[0]] + bb.branch(txids)
        self.assertRaises(MalformedBitcoinDataError, coinbase_branch, 5, hashes)
        self.assertRaises(MalformedBitcoinDataError, coinbase_branch, 0, hashes)
        self.assertRaises(MalformedBitcoinDataError, coinbase_branch, 4, [txids[0], txids[0], hashes[2]])

    def test_malformed(self) -> None:
        """
        Truncated data, trailing bytes, missing or extra hashes and flags are refused.
        """
        raw = encode(build(ids(5), [False, True, False, False, True]))
        self.assertRaises(MalformedBitcoinDataError, decode, raw[:-1])
        self.assertRaises(MalformedBitcoinDataError, decode, raw + b"\x00")
        self.assertRaises(MalformedBitcoinDataError, decode, raw[:3])
        tree = decode(raw)
        self.assertRaises(MalformedBitcoinDataError, extract, PartialMerkleTree(5, tree.hashes[:-1], tree.flags))
        self.assertRaises(MalformedBitcoinDataError, extract, PartialMerkleTree(5, tree.hashes + (b"\x00" * 32,), tree.flags))
        self.assertRaises(MalformedBitcoinDataError, extract, PartialMerkleTree(5, tree.hashes, tree.flags[:3]))
        self.assertRaises(MalformedBitcoinDataError, extract, PartialMerkleTree(0, (), ()))
        self.assertRaises(MalformedBitcoinDataError, build, [], [])
