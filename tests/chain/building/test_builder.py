"""
Tests for L{nodex.chain.building.builder}.
"""

from dataclasses import replace

from twisted.trial.unittest import SynchronousTestCase

from nodex.chain.building.builder import build_block, seal_block
from nodex.chain.errors import InvalidBlockError
from nodex.chain.genesis import initialize_chain
from nodex.chain.seal.pow import Seal
from nodex.chain.processing import validate_block, validate_header
from nodex.chain.rules import MIN_GAS_LIMIT
from nodex.db.memory import MemoryStore
from nodex.db.schema import write_trie_nodes
from nodex.state.state import State
from nodex.structures.headers import Header
from nodex.structures.transactions import LegacyTransaction, sign_transaction
from tests.chain.test_processing import (
    ADDRESSES,
    COINBASE,
    GAS_LIMIT,
    KEYS,
    build_on,
    canonical_hashes,
    execute,
    sample_genesis,
    sample_rules,
    sample_store,
    transfer,
)


class BuildBlockTests(SynchronousTestCase):
    """
    Tests for L{build_block} and L{seal_block}.
    """

    def setUp(self) -> None:
        """
        A sample chain at genesis.
        """
        self.store, self.genesis = sample_store()
        self.rules = sample_rules()

    def build(self, candidates: list, timestamp: int = 1, **keywords: object):  # type: ignore[no-untyped-def]
        """
        Build an unsealed block on genesis.
        """
        state = State.from_store(self.store, self.genesis.state_root)
        return build_block(
            self.genesis, state, candidates, COINBASE, timestamp, self.rules,
            canonical_hashes(self.store, self.genesis), **keywords,
        )

    def test_header_fields(self) -> None:
        """
        The template follows the parent: number, parent hash, gas limit,
        difficulty, minimum gas price, coinbase, timestamp, extra data.
        """
        header = self.build([], timestamp=5, extra_data=b"x").block.header
        self.assertEqual((header.number, header.parent_hash), (1, self.genesis.hash))
        self.assertEqual((header.gas_limit, header.difficulty, header.minimum_gas_price), (GAS_LIMIT, 1, 0))
        self.assertEqual((header.coinbase, header.timestamp, header.extra_data), (COINBASE, 5, b"x"))

    def test_block_executes_to_its_header(self) -> None:
        """
        Re-executing a built block gives exactly its header's commitments.
        """
        built = build_on(self.store, self.genesis, [transfer(0, 0), transfer(0, 1), transfer(1, 0)])
        self.assertEqual(len(built.block.transactions), 3)
        validate_block(built.block, execute(self.store, self.genesis, built.block))
        validate_header(self.genesis, built.block.header, self.rules)

    def test_invalid_skipped_and_reported(self) -> None:
        """
        A candidate with a used nonce or too little balance is left out and reported as invalid.
        """
        used = transfer(0, 0)
        poor = transfer(1, 0, value=10**31)
        built = self.build([used, used, poor, transfer(2, 0)])
        self.assertEqual([tx.hash for tx in built.block.transactions], [used.hash, transfer(2, 0).hash])
        skipped = [(entry.transaction.hash, entry.invalid) for entry in built.skipped]
        self.assertEqual(skipped, [(used.hash, True), (poor.hash, True)])
        self.assertIn("nonce", built.skipped[0].reason)
        self.assertIn("insufficient funds", built.skipped[1].reason)

    def test_mined_candidate_does_not_block_sender(self) -> None:
        """
        A candidate whose nonce is already used (taken before the previous
        block was stored) is dropped, and its sender's next one still goes in.
        """
        store, genesis = self.store, self.genesis
        first = build_on(store, genesis, [transfer(0, 0)])
        batch = store.batch()
        write_trie_nodes(batch, first.outcome.nodes)
        store.write(batch)
        state = State.from_store(store, first.block.header.state_root)
        built = build_block(
            first.block.header, state, [transfer(0, 0), transfer(0, 1)], COINBASE, 2, self.rules,
            canonical_hashes(store, first.block.header),
        )
        self.assertEqual(built.block.transactions, (transfer(0, 1),))
        self.assertEqual([(s.transaction, s.invalid) for s in built.skipped], [(transfer(0, 0), True)])

    def test_nonce_gap_not_invalid(self) -> None:
        """
        A candidate ahead of its sender's nonce is left out but not invalid,
        and so are its sender's later candidates.
        """
        built = self.build([transfer(0, 1), transfer(0, 0)])
        self.assertEqual(built.block.transactions, ())
        self.assertEqual([s.invalid for s in built.skipped], [False, False])

    def test_bad_signature_invalid(self) -> None:
        """
        A candidate whose signature gives no sender is reported as invalid.
        """
        forged = replace(transfer(0, 0), s=0)
        built = self.build([forged])
        self.assertEqual((built.block.transactions, built.skipped[0].invalid), ((), True))

    def test_other_chain_invalid(self) -> None:
        """
        A candidate signed for another chain is reported as invalid.
        """
        foreign = sign_transaction(
            LegacyTransaction(nonce=0, gas_price=1, gas=21_000, to=b"\x01" * 20, value=0, data=b""), KEYS[0], 31
        )
        built = self.build([foreign])
        self.assertEqual((built.block.transactions, built.skipped[0].invalid), ((), True))
        self.assertIn("chain id", built.skipped[0].reason)

    def test_full_block(self) -> None:
        """
        A candidate that needs more gas than is left waits for a later block.
        """
        big = sign_transaction(
            LegacyTransaction(nonce=0, gas_price=0, gas=GAS_LIMIT - 20_000, to=b"\x01" * 20, value=0, data=b""),
            KEYS[0],
            33,
        )
        built = self.build([transfer(1, 0), big])
        self.assertEqual(len(built.block.transactions), 1)
        self.assertEqual((built.skipped[0].transaction.hash, built.skipped[0].invalid), (big.hash, False))
        self.assertIn("exceeds", built.skipped[0].reason)

    def test_minimum_price(self) -> None:
        """
        A candidate below the parent's minimum gas price is invalid for the block.
        """
        self.genesis = replace(self.genesis, minimum_gas_price=5)
        built = self.build([transfer(0, 0, gas_price=4)])
        self.assertEqual(built.block.transactions, ())
        self.assertIn("minimum gas price 5", built.skipped[0].reason)

    def test_timestamp_must_follow(self) -> None:
        """
        A timestamp that does not follow the parent's is refused.
        """
        self.assertRaises(InvalidBlockError, self.build, [], timestamp=0)

    def test_extra_data_limit(self) -> None:
        """
        More than 32 bytes of extra data are refused.
        """
        self.assertRaises(InvalidBlockError, self.build, [], extra_data=b"x" * 33)

    def test_seal_keeps_mining_hash(self) -> None:
        """
        Sealing fills the three merged-mining fields and keeps the hash for merged mining.
        """
        block = self.build([]).block
        sealed = seal_block(block, Seal(b"h" * 80, b"", b"c" * 50))
        self.assertEqual(sealed.header.hash_for_merged_mining, block.header.hash_for_merged_mining)
        decoded = Header.decode(sealed.header.encode())
        self.assertEqual(decoded.hash_for_merged_mining, block.header.hash_for_merged_mining)
        self.assertEqual(sealed.header.bitcoin_merged_mining_header, b"h" * 80)
        self.assertEqual(sealed.header.bitcoin_merged_mining_coinbase_transaction, b"c" * 50)

    def test_state_changed(self) -> None:
        """
        The given state ends at the block's state root.
        """
        state = State.from_store(self.store, self.genesis.state_root)
        built = build_block(
            self.genesis, state, [transfer(0, 0)], COINBASE, 1, self.rules, canonical_hashes(self.store, self.genesis)
        )
        self.assertEqual(state.get_nonce(ADDRESSES[0]), 1)
        self.assertEqual(built.outcome.state_root, built.block.header.state_root)


class BuildBlockChecksTests(SynchronousTestCase):
    """
    The checks L{build_block} makes so that the importer need not check
    the header of a block made here again (L{BlockImporter.make}).
    """

    def test_timestamp_beyond_64_bits(self) -> None:
        """
        A timestamp that does not fit in 64 bits is refused before any
        transaction runs: the state is left as it was.
        """
        store, genesis = sample_store()
        state = State.from_store(store, genesis.state_root)
        with self.assertRaises(InvalidBlockError) as caught:
            build_block(
                genesis, state, [transfer(0, 0)], COINBASE, 2**64, sample_rules(), canonical_hashes(store, genesis)
            )
        self.assertIn("64 bits", str(caught.exception))
        self.assertEqual(state.get_nonce(ADDRESSES[0]), 0)
        built = build_block(
            genesis, state, [transfer(0, 0)], COINBASE, 2**64 - 1, sample_rules(), canonical_hashes(store, genesis)
        )
        validate_header(genesis, built.block.header, sample_rules(), seal=False)

    def test_gas_limit_checked_as_an_importer_does(self) -> None:
        """
        On a parent whose gas limit is below the minimum (a genesis may be),
        the moving limit cannot reach a valid one: the template is refused
        with the reason an importer would give, rather than made.
        """
        store = MemoryStore()
        genesis = initialize_chain(store, "regtest", replace(sample_genesis(), gas_limit=MIN_GAS_LIMIT // 3))
        rules = replace(sample_rules(), fixed_gas_limit=False)
        state = State.from_store(store, genesis.state_root)
        with self.assertRaises(InvalidBlockError) as caught:
            build_block(genesis, state, [], COINBASE, 1, rules, canonical_hashes(store, genesis))
        self.assertIn("below the minimum", str(caught.exception))

    def test_header_made_once_with_the_outcome(self) -> None:
        """
        The header commits to the execution's outcome and to the rules'
        values for the parent, and passes every check an importer makes.
        """
        store, genesis = sample_store()
        rules = replace(sample_rules(), fixed_gas_limit=False, target_gas_limit=GAS_LIMIT + 10**6)
        built = build_on(store, genesis, [transfer(0, 0), transfer(1, 0)], rules=rules, extra_data=b"made")
        header, outcome = built.block.header, built.outcome
        self.assertEqual(
            (header.state_root, header.transactions_root, header.receipts_root, header.logs_bloom),
            (outcome.state_root, outcome.transactions_root, outcome.receipts_root, outcome.logs_bloom),
        )
        self.assertEqual((header.gas_used, header.paid_fees), (42_000, outcome.paid_fees))
        self.assertEqual(
            (header.gas_limit, header.extra_data, header.uncle_count), (GAS_LIMIT + GAS_LIMIT // 1024, b"made", 0)
        )
        validate_header(genesis, header, rules)
        validate_block(built.block, execute(store, genesis, built.block))
