"""
Tests for L{nodex.chain.processing}.

The module also holds the small sample chain that the builder, fork-choice
and service tests share: funded keys, rules with a chosen minimum
difficulty, signed transfers and sealed blocks built on a store.
"""

import itertools
from collections.abc import Sequence
from dataclasses import replace

from twisted.trial.unittest import SynchronousTestCase

from nodex.chain.building.builder import BuiltBlock, build_block, seal_block
from nodex.chain.difficulty import DifficultyRules
from nodex.chain.errors import InvalidBlockError, InvalidSealError
from nodex.chain.genesis import GenesisAllocation, GenesisSpec, initialize_chain
from nodex.chain.seal.pow import solve
from nodex.chain.processing import (
    Ancestor,
    apply_block,
    block_environment,
    cumulative_difficulty,
    effective_gas_price,
    finish_block,
    receipts_root,
    transactions_root,
    uncles_hash,
    validate_block,
    validate_header,
    validate_uncles,
)
from nodex.chain.rules import ChainRules, ForkSchedule
from nodex.crypto import keccak256, private_key_to_address
from nodex.db.kv import KeyValueStore
from nodex.db.memory import MemoryStore
from nodex.db.schema import read_canonical_hash
from nodex.evm.forks import CANCUN, CANCUN_CLZ
from nodex.primitives import Address, Hash32
from nodex.state.state import State
from nodex.structures.blocks import Block
from nodex.structures.bloom import merge_blooms
from nodex.structures.logs import Log
from nodex.structures.receipts import Receipt
from nodex.structures.headers import EMPTY_UNCLES_HASH, Header
from nodex.structures.transactions import FeeMarketTransaction, LegacyTransaction, Transaction, sign_transaction

KEYS = [keccak256(b"cow"), keccak256(b"cow1"), keccak256(b"cow2")]
ADDRESSES = [private_key_to_address(key) for key in KEYS]
COINBASE = Address(bytes.fromhex("ec4ddeb4380ad69b3e509baad9f158cdf4e4681d"))
RECIPIENT = Address(b"\x42" * 20)
CHAIN_ID = 33
GAS_LIMIT = 30_000_000


def sample_rules(minimum_difficulty: int = 1) -> ChainRules:
    """
    Regtest's rules with another minimum difficulty (a larger one makes
    heavier side chains possible without making them longer).
    """
    return ChainRules(
        chain_id=CHAIN_ID,
        difficulty=DifficultyRules(duration=10, divisor=2048, minimum=minimum_difficulty, reset_after=600),
        target_gas_limit=GAS_LIMIT,
        fixed_gas_limit=True,
        max_seconds_in_future=60,
    )


RULES = sample_rules()


def sample_genesis(difficulty: int = 1) -> GenesisSpec:
    """
    A genesis that funds the sample keys with 10^30 wei each.
    """
    return GenesisSpec(
        timestamp=0,
        extra_data=b"sample",
        gas_limit=GAS_LIMIT,
        difficulty=difficulty,
        coinbase=Address(b"\x33" * 20),
        minimum_gas_price=0,
        alloc={address: GenesisAllocation(10**30) for address in ADDRESSES},
    )


def sample_store(difficulty: int = 1, store: KeyValueStore | None = None) -> tuple[KeyValueStore, Header]:
    """
    A store holding the sample genesis, and its genesis header.
    """
    store = MemoryStore() if store is None else store
    return store, initialize_chain(store, "regtest", sample_genesis(difficulty))


def transfer(key: int, nonce: int, value: int = 1, gas_price: int = 1, to: bytes = RECIPIENT) -> Transaction:
    """
    A signed legacy (EIP-155) transfer from sample key C{key}.
    """
    unsigned = LegacyTransaction(nonce=nonce, gas_price=gas_price, gas=21_000, to=to, value=value, data=b"")
    return sign_transaction(unsigned, KEYS[key], CHAIN_ID)


def fee_market_transfer(key: int, nonce: int, max_fee: int, priority_fee: int) -> Transaction:
    """
    A signed type 2 transfer of 1 wei from sample key C{key}.
    """
    unsigned = FeeMarketTransaction(
        chain_id=CHAIN_ID,
        nonce=nonce,
        max_priority_fee_per_gas=priority_fee,
        max_fee_per_gas=max_fee,
        gas=21_000,
        to=RECIPIENT,
        value=1,
        data=b"",
    )
    return sign_transaction(unsigned, KEYS[key], None)


def canonical_hashes(store: KeyValueStore, parent: Header) -> "object":
    """
    A BLOCKHASH lookup over the store's canonical index up to C{parent}.
    """

    def lookup(number: int) -> Hash32 | None:
        if not 0 <= number <= parent.number:
            return None
        found = read_canonical_hash(store, number)
        return None if found is None else Hash32(found)

    return lookup


def build_on(
    store: KeyValueStore,
    parent: Header,
    transactions: Sequence[Transaction] = (),
    rules: ChainRules | None = None,
    timestamp: int | None = None,
    uncles: Sequence[Header] = (),
    extra_data: bytes = b"",
    block_hashes: "object | None" = None,
) -> BuiltBlock:
    """
    A sealed block on C{parent} (whose state is in C{store}).

    @param block_hashes: the BLOCKHASH lookup; by default the store's
        canonical index (right for a block on the canonical head).
    """
    rules = sample_rules() if rules is None else rules
    state = State.from_store(store, parent.state_root)
    built = build_block(
        parent,
        state,
        transactions,
        COINBASE,
        parent.timestamp + 1 if timestamp is None else timestamp,
        rules,
        canonical_hashes(store, parent) if block_hashes is None else block_hashes,  # type: ignore[arg-type]
        extra_data,
        uncles,
    )
    header = built.block.header
    seal = solve(header.hash_for_merged_mining, header.difficulty, itertools.count())
    assert seal is not None
    return BuiltBlock(seal_block(built.block, seal), built.outcome, built.skipped)


def execute(store: KeyValueStore, parent: Header, block: Block) -> "object":
    """
    Run L{apply_block} for C{block} on C{parent}'s state in C{store}.
    """
    return apply_block(block, State.from_store(store, parent.state_root), CHAIN_ID, canonical_hashes(store, parent))


def reseal(header: Header) -> Header:
    """
    C{header} with a fresh valid seal (after a field was changed).
    """
    seal = solve(header.hash_for_merged_mining, header.difficulty, itertools.count())
    assert seal is not None
    return seal_block(Block(header), seal).header


class ApplyBlockTests(SynchronousTestCase):
    """
    Tests for L{apply_block}.
    """

    def test_outcome_matches_built_header(self) -> None:
        """
        Executing a built block again gives the roots, gas, bloom and fees its header commits to.
        """
        store, genesis = sample_store()
        built = build_on(store, genesis, [transfer(0, 0, gas_price=2), transfer(1, 0, gas_price=3)])
        outcome = execute(store, genesis, built.block)
        header = built.block.header
        self.assertEqual(outcome.state_root, header.state_root)
        self.assertEqual(outcome.receipts_root, header.receipts_root)
        self.assertEqual(outcome.transactions_root, header.transactions_root)
        self.assertEqual(outcome.gas_used, 42_000)
        self.assertEqual(outcome.paid_fees, 21_000 * 2 + 21_000 * 3)
        self.assertEqual(header.paid_fees, outcome.paid_fees)
        validate_block(built.block, outcome)

    def test_fees_credited_to_coinbase(self) -> None:
        """
        The coinbase receives gas used times the effective price, and the recipient the value.
        """
        store, genesis = sample_store()
        built = build_on(store, genesis, [transfer(0, 0, value=5, gas_price=7)])
        state = State.from_store(store, genesis.state_root)
        apply_block(built.block, state, CHAIN_ID, canonical_hashes(store, genesis))
        self.assertEqual(state.get_balance(COINBASE), 21_000 * 7)
        self.assertEqual(state.get_balance(RECIPIENT), 5)
        self.assertEqual(state.get_nonce(ADDRESSES[0]), 1)

    def test_nodes_and_code_returned(self) -> None:
        """
        The outcome carries the new trie nodes, including the new state root's node.
        """
        store, genesis = sample_store()
        built = build_on(store, genesis, [transfer(0, 0)])
        self.assertIn(built.outcome.state_root, built.outcome.nodes)
        self.assertEqual(built.outcome.code, {})

    def test_bad_nonce_is_invalid_block(self) -> None:
        """
        A transaction whose nonce is not the sender's makes the block invalid, naming the transaction.
        """
        store, genesis = sample_store()
        built = build_on(store, genesis)
        bad = Block(built.block.header, (transfer(0, 3),))
        error = self.assertRaises(InvalidBlockError, execute, store, genesis, bad)
        self.assertIn("transaction 0", str(error))
        self.assertIn("nonce", str(error))

    def test_price_below_minimum_is_invalid_block(self) -> None:
        """
        A transaction paying less than the block's minimum gas price makes it invalid.
        """
        store, genesis = sample_store()
        built = build_on(store, genesis)
        header = replace(built.block.header, minimum_gas_price=10)
        cheap = Block(header, (transfer(0, 0, gas_price=9),))
        error = self.assertRaises(InvalidBlockError, execute, store, genesis, cheap)
        self.assertIn("minimum gas price 10", str(error))

    def test_other_chain_is_invalid_block(self) -> None:
        """
        A transaction signed for another chain id makes the block invalid.
        """
        store, genesis = sample_store()
        built = build_on(store, genesis)
        unsigned = LegacyTransaction(nonce=0, gas_price=1, gas=21_000, to=RECIPIENT, value=1, data=b"")
        foreign = sign_transaction(unsigned, KEYS[0], 30)
        error = self.assertRaises(InvalidBlockError, execute, store, genesis, Block(built.block.header, (foreign,)))
        self.assertIn("chain id 30", str(error))

    def test_unprotected_legacy_accepted(self) -> None:
        """
        A legacy transaction signed without a chain id (before EIP-155) runs on any chain.
        """
        store, genesis = sample_store()
        unsigned = LegacyTransaction(nonce=0, gas_price=1, gas=21_000, to=RECIPIENT, value=1, data=b"")
        built = build_on(store, genesis, [sign_transaction(unsigned, KEYS[0], None)])
        self.assertEqual(len(built.block.transactions), 1)
        validate_block(built.block, execute(store, genesis, built.block))

    def test_bad_signature_is_invalid_block(self) -> None:
        """
        A transaction whose signature gives no sender makes the block invalid.
        """
        store, genesis = sample_store()
        built = build_on(store, genesis)
        forged = replace(transfer(0, 0), s=0)
        self.assertRaises(InvalidBlockError, execute, store, genesis, Block(built.block.header, (forged,)))


class EnvironmentTests(SynchronousTestCase):
    """
    Tests for L{block_environment}, L{effective_gas_price} and the root helpers.
    """

    def test_environment(self) -> None:
        """
        Base fee 0, blob base fee 1, PREVRANDAO the difficulty as a word, the header's fields.
        """
        store, genesis = sample_store(difficulty=5)
        environment = block_environment(genesis, 33, lambda number: None)
        self.assertEqual(environment.base_fee, 0)
        self.assertEqual(environment.blob_base_fee, 1)
        self.assertEqual(environment.prev_randao, (5).to_bytes(32, "big"))
        self.assertEqual((environment.number, environment.gas_limit, environment.chain_id), (0, GAS_LIMIT, 33))

    def test_environment_fork_by_number(self) -> None:
        """
        The block's rule set comes from the schedule by block number: Cancun+CLZ by default.
        """
        store, genesis = sample_store()
        self.assertIs(block_environment(genesis, 33, lambda number: None).fork, CANCUN_CLZ)
        schedule = ForkSchedule.from_mapping({0: "Cancun", 1: "Cancun+CLZ"})
        self.assertIs(block_environment(genesis, 33, lambda number: None, schedule).fork, CANCUN)
        child = replace(genesis, number=1)
        self.assertIs(block_environment(child, 33, lambda number: None, schedule).fork, CANCUN_CLZ)

    def test_effective_price(self) -> None:
        """
        A type 2 transaction pays min(maxFee, maxPriorityFee); a legacy one its gas price.
        """
        self.assertEqual(effective_gas_price(fee_market_transfer(0, 0, 10, 4)), 4)
        self.assertEqual(effective_gas_price(fee_market_transfer(0, 0, 3, 4)), 3)
        self.assertEqual(effective_gas_price(transfer(0, 0, gas_price=6)), 6)

    def test_outcome_bloom(self) -> None:
        """
        A block's bloom is the union of its receipts' blooms: one receipt's
        own bloom, none's the empty bloom.
        """
        first = Receipt.from_logs(0, 1, 21_000, [Log(Address(b"\x01" * 20), (Hash32(b"\x02" * 32),), b"")])
        second = Receipt.from_logs(0, 1, 42_000, [Log(Address(b"\x03" * 20), (), b"")])
        store, genesis = sample_store()
        for receipts in ((), (first,), (second,), (first, second)):
            state = State.from_store(store, genesis.state_root)
            outcome = finish_block(state, [transfer(0, 0)] * len(receipts), receipts, 0)
            self.assertEqual(outcome.logs_bloom, merge_blooms(receipt.bloom for receipt in receipts))
        self.assertNotEqual(first.bloom, merge_blooms([first.bloom, second.bloom]))
        self.assertEqual(outcome.logs_bloom, merge_blooms([first.bloom, second.bloom]))

    def test_empty_roots(self) -> None:
        """
        No transactions or receipts give the empty trie root; no uncles the empty-list hash.
        """
        empty = keccak256(b"\x80")
        self.assertEqual(transactions_root(()), empty)
        self.assertEqual(receipts_root(()), empty)
        self.assertEqual(uncles_hash(()), EMPTY_UNCLES_HASH)


class ValidateHeaderTests(SynchronousTestCase):
    """
    Tests for L{validate_header}.
    """

    def setUp(self) -> None:
        """
        A sample chain and one valid block on it.
        """
        self.store, self.genesis = sample_store()
        self.header = build_on(self.store, self.genesis).block.header
        self.rules = sample_rules()

    def check(self, header: Header, now: int | None = None) -> str:
        """
        The message of the L{InvalidBlockError} that C{header} raises.
        """
        return str(self.assertRaises(InvalidBlockError, validate_header, self.genesis, header, self.rules, now))

    def test_valid(self) -> None:
        """
        A built and sealed block passes.
        """
        validate_header(self.genesis, self.header, self.rules, now=1)

    def test_parent_hash(self) -> None:
        """
        A header naming another parent is refused.
        """
        self.assertIn("parent hash", self.check(reseal(replace(self.header, parent_hash=Hash32(b"\x01" * 32)))))

    def test_number(self) -> None:
        """
        A header whose number does not follow the parent's is refused.
        """
        self.assertIn("block number 2", self.check(reseal(replace(self.header, number=2))))

    def test_timestamp_not_after_parent(self) -> None:
        """
        A timestamp equal to the parent's is refused.
        """
        self.assertIn("not after the parent", self.check(reseal(replace(self.header, timestamp=0))))

    def test_timestamp_beyond_64_bits(self) -> None:
        """
        A timestamp that does not fit in 64 bits is refused (the node's own
        header would otherwise be stored and never decode again).
        """
        self.assertIn("64 bits", self.check(reseal(replace(self.header, timestamp=2**64))))

    def test_timestamp_in_future(self) -> None:
        """
        A timestamp more than the allowed seconds ahead of the local clock is refused.
        """
        header = reseal(replace(self.header, timestamp=100))
        self.assertIn("in the future", self.check(header, now=39))
        validate_header(self.genesis, header, self.rules, now=40)

    def test_difficulty(self) -> None:
        """
        A difficulty other than the rules give is refused.
        """
        self.assertIn("difficulty 2", self.check(reseal(replace(self.header, difficulty=2))))

    def test_gas_limit(self) -> None:
        """
        A gas limit other than regtest's fixed one is refused.
        """
        self.assertIn("gas limit", self.check(reseal(replace(self.header, gas_limit=GAS_LIMIT - 1))))

    def test_gas_used_above_limit(self) -> None:
        """
        A header using more gas than its limit is refused.
        """
        self.assertIn("exceeds the gas limit", self.check(reseal(replace(self.header, gas_used=GAS_LIMIT + 1))))

    def test_minimum_gas_price(self) -> None:
        """
        A minimum gas price that jumps away from the parent's is refused.
        """
        self.assertIn("minimum gas price", self.check(reseal(replace(self.header, minimum_gas_price=5))))

    def test_seal_missing(self) -> None:
        """
        A header without a seal is refused with the seal's reason.
        """
        header = replace(
            self.header,
            bitcoin_merged_mining_header=b"",
            bitcoin_merged_mining_merkle_proof=b"",
            bitcoin_merged_mining_coinbase_transaction=b"",
        )
        error = self.assertRaises(InvalidSealError, validate_header, self.genesis, header, self.rules)
        self.assertIn("invalid seal", str(error))

    def test_seal_of_another_header(self) -> None:
        """
        A seal made for other header contents does not seal this header.
        """
        header = replace(self.header, extra_data=b"changed")
        self.assertRaises(InvalidSealError, validate_header, self.genesis, header, self.rules)

    def test_seal_not_checked(self) -> None:
        """
        With C{seal=False} (a header the node's solver has just sealed) the
        seal is not checked; the other rules still are.
        """
        header = replace(self.header, extra_data=b"changed")
        validate_header(self.genesis, header, self.rules, seal=False)
        late = replace(self.header, gas_used=GAS_LIMIT + 1)
        self.assertRaises(InvalidBlockError, validate_header, self.genesis, late, self.rules, seal=False)


class ValidateBlockTests(SynchronousTestCase):
    """
    Tests for L{validate_block}.
    """

    def setUp(self) -> None:
        """
        One built block with a transaction, and its outcome.
        """
        self.store, self.genesis = sample_store()
        self.built = build_on(self.store, self.genesis, [transfer(0, 0, gas_price=2)])

    def check(self, **changes: object) -> str:
        """
        The message of the L{InvalidBlockError} for the block with C{changes} to its header.
        """
        block = Block(replace(self.built.block.header, **changes), self.built.block.transactions)
        outcome = execute(self.store, self.genesis, block)
        return str(self.assertRaises(InvalidBlockError, validate_block, block, outcome))

    def test_transactions_root(self) -> None:
        """
        A transactions root other than the body's is refused.
        """
        self.assertIn("transactions root", self.check(transactions_root=Hash32(b"\x00" * 32)))

    def test_state_root(self) -> None:
        """
        A state root other than the executed one is refused.
        """
        self.assertIn("state root", self.check(state_root=Hash32(b"\x00" * 32)))

    def test_receipts_root(self) -> None:
        """
        A receipts root other than the executed one is refused.
        """
        self.assertIn("receipts root", self.check(receipts_root=Hash32(b"\x00" * 32)))

    def test_gas_used(self) -> None:
        """
        A gas used other than the executed one is refused.
        """
        self.assertIn("gas used", self.check(gas_used=1))

    def test_bloom(self) -> None:
        """
        A bloom other than the receipts' is refused.
        """
        self.assertIn("bloom", self.check(logs_bloom=b"\xff" * 256))

    def test_paid_fees(self) -> None:
        """
        Paid fees other than the executed ones are refused.
        """
        self.assertIn("paid fees", self.check(paid_fees=1))


class UncleTests(SynchronousTestCase):
    """
    Tests for L{validate_uncles} and L{cumulative_difficulty}.
    """

    def setUp(self) -> None:
        """
        Genesis with two competing children, A and B.
        """
        self.store, self.genesis = sample_store()
        self.a = build_on(self.store, self.genesis, extra_data=b"a").block
        self.b = build_on(self.store, self.genesis, extra_data=b"b").block
        self.ancestry = [Ancestor(self.a.header, frozenset()), Ancestor(self.genesis, frozenset())]

    def with_uncles(self, uncles: Sequence[Header], **changes: object) -> Block:
        """
        An (unsealed) child of A with C{uncles}.
        """
        header = replace(
            self.a.header,
            parent_hash=self.a.hash,
            number=2,
            uncles_hash=uncles_hash(uncles),
            uncle_count=len(uncles),
        )
        return Block(replace(header, **changes), (), tuple(uncles))

    def test_valid_uncle(self) -> None:
        """
        A sealed sibling of the parent is a valid uncle and adds its difficulty.
        """
        block = self.with_uncles([self.b.header])
        validate_uncles(block, self.ancestry, RULES)
        self.assertEqual(cumulative_difficulty(block), block.header.difficulty + self.b.header.difficulty)

    def test_uncles_hash_of_none(self) -> None:
        """
        The uncles hash of no uncles is Keccak-256 of the RLP empty list;
        of some, of the list of their headers.
        """
        self.assertEqual(uncles_hash(()), keccak256(b"\xc0"))
        header = self.b.header
        encoded = header.encode()
        self.assertEqual(uncles_hash([header]), keccak256(bytes([0xF9]) + len(encoded).to_bytes(2, "big") + encoded))

    def test_uncles_hash(self) -> None:
        """
        An uncles hash that does not match the uncles is refused.
        """
        block = self.with_uncles([self.b.header], uncles_hash=EMPTY_UNCLES_HASH)
        self.assertRaises(InvalidBlockError, validate_uncles, block, self.ancestry, RULES)

    def test_uncle_count(self) -> None:
        """
        An uncle count that differs from the uncles is refused.
        """
        block = self.with_uncles([self.b.header], uncle_count=0)
        error = self.assertRaises(InvalidBlockError, validate_uncles, block, self.ancestry, RULES)
        self.assertIn("uncle count", str(error))

    def test_ancestor_is_not_uncle(self) -> None:
        """
        An ancestor cannot be an uncle.
        """
        block = self.with_uncles([self.a.header])
        error = self.assertRaises(InvalidBlockError, validate_uncles, block, self.ancestry, RULES)
        self.assertIn("ancestor", str(error))

    def test_twice(self) -> None:
        """
        The same uncle twice in one block is refused.
        """
        block = self.with_uncles([self.b.header, self.b.header])
        self.assertIn("twice", str(self.assertRaises(InvalidBlockError, validate_uncles, block, self.ancestry, RULES)))

    def test_already_included(self) -> None:
        """
        An uncle an ancestor already included is refused.
        """
        ancestry = [Ancestor(self.a.header, frozenset({self.b.hash})), Ancestor(self.genesis, frozenset())]
        block = self.with_uncles([self.b.header])
        error = self.assertRaises(InvalidBlockError, validate_uncles, block, ancestry, RULES)
        self.assertIn("already included", str(error))

    def test_unknown_parent(self) -> None:
        """
        An uncle whose parent is not a recent ancestor is refused.
        """
        stranger = reseal(replace(self.b.header, parent_hash=Hash32(b"\x05" * 32)))
        block = self.with_uncles([stranger])
        error = self.assertRaises(InvalidBlockError, validate_uncles, block, self.ancestry, RULES)
        self.assertIn("not the child", str(error))

    def test_too_many(self) -> None:
        """
        More than ten uncles are refused.
        """
        block = self.with_uncles([self.b.header] * 11)
        error = self.assertRaises(InvalidBlockError, validate_uncles, block, self.ancestry, RULES)
        self.assertIn("at most 10", str(error))

    def test_invalid_uncle_header(self) -> None:
        """
        An uncle whose header breaks a rule against its parent is refused.
        """
        wrong = reseal(replace(self.b.header, difficulty=9))
        error = self.assertRaises(InvalidBlockError, validate_uncles, self.with_uncles([wrong]), self.ancestry, RULES)
        self.assertIn("difficulty 9", str(error))

    def test_unsealed_uncle(self) -> None:
        """
        An uncle without a valid seal is refused.
        """
        unsealed = replace(self.b.header, bitcoin_merged_mining_header=b"")
        self.assertRaises(InvalidSealError, validate_uncles, self.with_uncles([unsealed]), self.ancestry, RULES)
