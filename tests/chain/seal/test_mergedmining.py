"""
Tests for L{nodex.chain.seal.mergedmining}, L{nodex.chain.uncles}, L{nodex.chain.seal.pow.search}
and the difficulty vectors of reference §13.1, on Bitcoin blocks built by the tests.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.chain.seal import sha256state
from nodex.chain.difficulty import DEVNET_RULES, MAIN_RULES, REGTEST_RULES, next_difficulty
from nodex.chain.errors import InvalidSealError
from nodex.chain.seal.mergedmining import (
    MAX_COINBASE_SIZE,
    SubmissionError,
    committed_hash,
    seal_from_block,
    seal_from_branch,
    seal_from_transaction_ids,
)
from nodex.chain.seal.partialmerkle import tree_height
from nodex.chain.seal.pow import MERGED_MINING_TAG, check_seal, search, seal_target, solve
from nodex.chain.processing import Ancestor
from nodex.chain.uncles import select_uncles, still_useful
from nodex.crypto import keccak256
from nodex.structures.headers import Header
from tests.chain import bitcoin_blocks as bb

HASH = keccak256(b"a template")
DIFFICULTY = 1000
TARGET = seal_target(DIFFICULTY)


class SealFromBlockTests(SynchronousTestCase):
    """
    Whole Bitcoin blocks (C{mnr_submitBitcoinBlock}).
    """

    def test_one_transaction(self) -> None:
        """
        A block of its coinbase alone seals with an empty proof.
        """
        raw, header, _ids = bb.mined_block(bb.tagged_coinbase(HASH), 0, TARGET)
        seal = seal_from_block(raw)
        self.assertEqual(seal.bitcoin_header, header)
        self.assertEqual(seal.merkle_proof, b"")
        check_seal(HASH, DIFFICULTY, seal)

    def test_many_transactions_odd_and_even(self) -> None:
        """
        Blocks of 2 to 9 transactions (odd levels doubled) give a proof of the tree's depth that leads to the root.
        """
        for others in range(1, 9):
            raw, _header, ids = bb.mined_block(bb.tagged_coinbase(HASH), others, TARGET)
            seal = seal_from_block(raw)
            self.assertEqual(seal.merkle_proof, b"".join(bb.branch(ids)))
            self.assertEqual(len(seal.merkle_proof) // 32, tree_height(others + 1))
            check_seal(HASH, DIFFICULTY, seal)

    def test_long_coinbase_is_compressed(self) -> None:
        """
        A coinbase whose tag lies beyond its first 64 bytes is stored in mid-state form and still checks.
        """
        coinbase = bb.tagged_coinbase(HASH, prefix=b"\x00" * 150)
        raw, _header, _ids = bb.mined_block(coinbase, 2, TARGET)
        seal = seal_from_block(raw)
        self.assertEqual(int.from_bytes(seal.coinbase[:8], "big") % 64, 0)
        self.assertGreater(int.from_bytes(seal.coinbase[:8], "big"), 0)
        check_seal(HASH, DIFFICULTY, seal)

    def test_work_above_target_refused(self) -> None:
        """
        A header whose hash is above the target does not seal.
        """
        coinbase = bb.tagged_coinbase(HASH)
        header = bb.unmined_header(bb.merkle_root([bb.double_sha256(coinbase)]), TARGET)
        seal = seal_from_block(bb.block(header, [coinbase]))
        self.assertRaises(InvalidSealError, check_seal, HASH, DIFFICULTY, seal)

    def test_tag_missing(self) -> None:
        """
        A coinbase without the tag is refused when the submission is read.
        """
        raw, _header, _ids = bb.mined_block(bb.coinbase(b"\x00" * 41), 0, TARGET)
        error = self.assertRaises(SubmissionError, seal_from_block, raw)
        self.assertIn("does not contain the merged-mining tag", str(error))

    def test_tag_followed_by_too_many_bytes(self) -> None:
        """
        More than 128 bytes after the committed hash: the seal is refused.
        """
        raw, _header, _ids = bb.mined_block(bb.tagged_coinbase(HASH, suffix=b"\x00" * 200), 0, TARGET)
        error = self.assertRaises(InvalidSealError, check_seal, HASH, DIFFICULTY, seal_from_block(raw))
        self.assertIn("follow the merged-mining hash", str(error))

    def test_tag_too_early_in_stored_form(self) -> None:
        """
        A stored coinbase whose mid-state stops more than one SHA-256 block
        before the tag (the tag too early in the uncompressed tail) is refused.
        """
        coinbase = bb.tagged_coinbase(HASH, prefix=b"\x00" * 100)
        raw, _header, _ids = bb.mined_block(coinbase, 0, TARGET)
        seal = seal_from_block(raw)
        early = (0).to_bytes(8, "big") + sha256state.state_to_bytes(sha256state.INITIAL_STATE) + coinbase
        error = self.assertRaises(
            InvalidSealError, check_seal, HASH, DIFFICULTY, type(seal)(seal.bitcoin_header, b"", early)
        )
        self.assertIn("last SHA-256 blocks", str(error))

    def test_last_tag_counts(self) -> None:
        """
        An earlier tag committing to another hash does not count; only the last does.
        """
        other = keccak256(b"other")
        coinbase = bb.coinbase(MERGED_MINING_TAG + other + MERGED_MINING_TAG + HASH)
        raw, _header, _ids = bb.mined_block(coinbase, 0, TARGET)
        seal = seal_from_block(raw)
        check_seal(HASH, DIFFICULTY, seal)
        self.assertRaises(InvalidSealError, check_seal, other, DIFFICULTY, seal)

    def test_truncated_and_trailing(self) -> None:
        """
        A truncated block, or one with bytes after its last transaction, is malformed.
        """
        raw, _header, _ids = bb.mined_block(bb.tagged_coinbase(HASH), 2, TARGET)
        self.assertRaises(SubmissionError, seal_from_block, raw[:-1])
        self.assertRaises(SubmissionError, seal_from_block, raw + b"\x00")
        self.assertRaises(SubmissionError, seal_from_block, raw[:80])

    def test_oversized_coinbase(self) -> None:
        """
        A coinbase above the size limit is refused.
        """
        coinbase = bb.tagged_coinbase(HASH, input_script=b"\x00" * MAX_COINBASE_SIZE)
        raw, _header, _ids = bb.mined_block(coinbase, 0, 2**256 - 1)
        error = self.assertRaises(SubmissionError, seal_from_block, raw)
        self.assertIn("exceeds", str(error))


class SealFromTransactionIdsTests(SynchronousTestCase):
    """
    Header, coinbase and transaction ids in display order (C{mnr_submitBitcoinBlockTransactions}).
    """

    def test_accepted(self) -> None:
        """
        The ids in display (reversed) order, coinbase first, seal the block.
        """
        coinbase = bb.tagged_coinbase(HASH)
        _raw, header, ids = bb.mined_block(coinbase, 4, TARGET)
        seal = seal_from_transaction_ids(header, coinbase, [txid[::-1] for txid in ids])
        check_seal(HASH, DIFFICULTY, seal)

    def test_internal_order_refused(self) -> None:
        """
        Ids in internal order do not start with the coinbase's display id.
        """
        coinbase = bb.tagged_coinbase(HASH)
        _raw, header, ids = bb.mined_block(coinbase, 2, TARGET)
        error = self.assertRaises(SubmissionError, seal_from_transaction_ids, header, coinbase, ids)
        self.assertIn("is not the coinbase's", str(error))

    def test_malformed_pieces(self) -> None:
        """
        A short header, a truncated coinbase, a short id or no ids are refused.
        """
        coinbase = bb.tagged_coinbase(HASH)
        _raw, header, ids = bb.mined_block(coinbase, 1, TARGET)
        display = [txid[::-1] for txid in ids]
        self.assertRaises(SubmissionError, seal_from_transaction_ids, header[:79], coinbase, display)
        self.assertRaises(SubmissionError, seal_from_transaction_ids, header, coinbase[:-3], display)
        self.assertRaises(SubmissionError, seal_from_transaction_ids, header, coinbase + b"\x00", display)
        self.assertRaises(SubmissionError, seal_from_transaction_ids, header, coinbase, [display[0], b"\x00" * 31])
        self.assertRaises(SubmissionError, seal_from_transaction_ids, header, coinbase, [])

    def test_missing_transaction_misses_root(self) -> None:
        """
        Leaving a transaction out gives a branch that does not reach the header's root.
        """
        coinbase = bb.tagged_coinbase(HASH)
        _raw, header, ids = bb.mined_block(coinbase, 4, TARGET)
        seal = seal_from_transaction_ids(header, coinbase, [txid[::-1] for txid in ids[:-1]])
        error = self.assertRaises(InvalidSealError, check_seal, HASH, DIFFICULTY, seal)
        self.assertIn("merkle root", str(error))


class SealFromBranchTests(SynchronousTestCase):
    """
    Header, coinbase, coinbase id and branch in internal order (C{mnr_submitBitcoinBlockPartialMerkle}).
    """

    def test_odd_and_even_trees(self) -> None:
        """
        Branches of trees of 1 to 12 transactions seal their blocks.
        """
        coinbase = bb.tagged_coinbase(HASH)
        for count in range(1, 13):
            _raw, header, ids = bb.mined_block(coinbase, count - 1, TARGET)
            seal = seal_from_branch(header, coinbase, [ids[0]] + bb.branch(ids), count)
            check_seal(HASH, DIFFICULTY, seal)

    def test_branch_not_reaching_root(self) -> None:
        """
        A wrong sibling leads elsewhere than the header's merkle root.
        """
        coinbase = bb.tagged_coinbase(HASH)
        _raw, header, ids = bb.mined_block(coinbase, 3, TARGET)
        siblings = bb.branch(ids)
        siblings[1] = b"\x55" * 32
        seal = seal_from_branch(header, coinbase, [ids[0]] + siblings, 4)
        self.assertRaises(InvalidSealError, check_seal, HASH, DIFFICULTY, seal)

    def test_wrong_depth_and_first_hash(self) -> None:
        """
        The branch must have the depth of a tree of the given count, and start with the coinbase id.
        """
        coinbase = bb.tagged_coinbase(HASH)
        _raw, header, ids = bb.mined_block(coinbase, 4, TARGET)
        hashes = [ids[0]] + bb.branch(ids)
        error = self.assertRaises(SubmissionError, seal_from_branch, header, coinbase, hashes, 9)
        self.assertIn("needs 4", str(error))
        self.assertRaises(SubmissionError, seal_from_branch, header, coinbase, [ids[1]] + hashes[1:], 5)
        self.assertRaises(SubmissionError, seal_from_branch, header, coinbase, hashes, 0)

    def test_empty_list(self) -> None:
        """
        An empty list has the reference's message.
        """
        coinbase = bb.tagged_coinbase(HASH)
        error = self.assertRaises(SubmissionError, seal_from_branch, b"\x00" * 80, coinbase, [], 1)
        self.assertEqual(str(error), "The list of merkle hashes can't be empty")

    def test_depths(self) -> None:
        """
        The depth of a tree of n leaves is the number of halvings down to one.
        """
        self.assertEqual([tree_height(n) for n in (1, 2, 3, 4, 5, 8, 9, 16, 17)], [0, 1, 2, 2, 3, 3, 4, 4, 5])


class CommittedHashTests(SynchronousTestCase):
    """
    Tests for L{committed_hash}.
    """

    def test_last_tag(self) -> None:
        """
        The 32 bytes after the last tag.
        """
        self.assertEqual(committed_hash(b"x" + MERGED_MINING_TAG + b"\x01" * 32 + MERGED_MINING_TAG + HASH), HASH)

    def test_short_or_missing(self) -> None:
        """
        No tag, or fewer than 32 bytes after it, is an error.
        """
        self.assertRaises(SubmissionError, committed_hash, b"no tag here")
        self.assertRaises(SubmissionError, committed_hash, MERGED_MINING_TAG + HASH[:31])


class SearchTests(SynchronousTestCase):
    """
    Tests for L{search}, the CPU miner's batch.
    """

    def test_same_as_solve(self) -> None:
        """
        The batch finds the same seal as the plain solver, after the same number of tries.
        """
        seal, tried = search(HASH, 5000, 0, 100_000)
        self.assertEqual(seal, solve(HASH, 5000, range(100_000)))
        self.assertIsNotNone(seal)
        assert seal is not None
        self.assertEqual(seal, solve(HASH, 5000, range(tried)))
        self.assertIsNone(solve(HASH, 5000, range(tried - 1)))
        check_seal(HASH, 5000, seal)

    def test_crosses_the_32_bit_boundary(self) -> None:
        """
        A batch that crosses into the next high word carries correctly.
        """
        start = 2**32 - 10
        self.assertEqual(search(HASH, 5000, start, 50_000)[0], solve(HASH, 5000, range(start, start + 50_000)))

    def test_nothing_found(self) -> None:
        """
        A batch without a seal reports every nonce tried.
        """
        self.assertEqual(search(HASH, 2**200, 0, 5000), (None, 5000))

    def test_stopped(self) -> None:
        """
        A stopped batch ends at the next check.
        """
        self.assertEqual(search(HASH, 2**200, 0, 100_000, lambda: True), (None, 4096))


def _header(number: int, parent: bytes, salt: bytes = b"") -> Header:
    return Header(
        parent_hash=parent,
        uncles_hash=b"\x00" * 32,
        coinbase=b"\x00" * 20,
        state_root=b"\x00" * 32,
        transactions_root=b"\x00" * 32,
        receipts_root=b"\x00" * 32,
        logs_bloom=b"\x00" * 256,
        difficulty=1,
        number=number,
        gas_limit=1,
        gas_used=0,
        timestamp=number,
        extra_data=salt,
        paid_fees=0,
        minimum_gas_price=0,
        uncle_count=0,
    )


class SelectUnclesTests(SynchronousTestCase):
    """
    Tests for L{select_uncles}.
    """

    def setUp(self) -> None:
        """
        A chain of 12 headers; ancestry of a child of the last.
        """
        chain = [_header(0, b"\x00" * 32)]
        for number in range(1, 12):
            chain.append(_header(number, chain[-1].hash))
        self.chain = chain
        self.ancestry = [Ancestor(header, frozenset()) for header in reversed(chain)]

    def side(self, number: int, salt: bytes = b"side") -> Header:
        """
        A side block at C{number}, child of the canonical block below it.
        """
        return _header(number, self.chain[number - 1].hash, salt)

    def test_rules(self) -> None:
        """
        Children of the 7 latest ancestors qualify (nearest first); deeper
        ones, ancestors, included ones and duplicates do not.
        """
        near, far, too_far = self.side(11), self.side(6), self.side(5)
        included = self.side(9)
        ancestry = [Ancestor(self.ancestry[0].header, frozenset({included.hash}))] + self.ancestry[1:]
        chosen = select_uncles([far, too_far, near, near, self.chain[10], included], ancestry)
        self.assertEqual(chosen, [near, far])

    def test_at_most_ten(self) -> None:
        """
        No more than 10 uncles.
        """
        side = [self.side(11, bytes([salt])) for salt in range(12)]
        self.assertEqual(len(select_uncles(side, self.ancestry)), 10)

    def test_still_useful(self) -> None:
        """
        A side block stays useful while a child of the head could include it.
        """
        self.assertTrue(still_useful(self.side(5), 11))
        self.assertFalse(still_useful(self.side(4), 11))


class DifficultyVectorTests(SynchronousTestCase):
    """
    Vectors computed by hand from reference §13.1.
    """

    def test_devnet(self) -> None:
        """
        Devnet: duration 14, divisor 400, minimum 131072, reset after 600 s.
        """
        self.assertEqual(next_difficulty(DEVNET_RULES, 400_000, 100, 110, 0), 401_000)
        self.assertEqual(next_difficulty(DEVNET_RULES, 400_000, 100, 115, 0), 399_000)
        self.assertEqual(next_difficulty(DEVNET_RULES, 400_000, 100, 114, 0), 400_000)
        self.assertEqual(next_difficulty(DEVNET_RULES, 400_000, 100, 128, 1), 400_000)
        self.assertEqual(next_difficulty(DEVNET_RULES, 131_072, 100, 200, 0), 131_072)
        self.assertEqual(next_difficulty(DEVNET_RULES, 10**9, 100, 700, 0), 131_072)

    def test_regtest_and_main(self) -> None:
        """
        Regtest's divisor 2048 keeps small difficulties; main never resets.
        """
        self.assertEqual(next_difficulty(REGTEST_RULES, 4096, 0, 1, 0), 4098)
        self.assertEqual(next_difficulty(REGTEST_RULES, 4096, 0, 11, 0), 4094)
        self.assertEqual(next_difficulty(MAIN_RULES, 8 * 10**15, 0, 10_000, 0), 8 * 10**15 - 2 * 10**13)
