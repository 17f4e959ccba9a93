"""
Tests for L{nodex.services.pool}: validation with the reference's messages,
pending and queued transactions, replacement, limits and eviction, chain
events, observers and persistence.
"""

from dataclasses import replace
from collections.abc import Callable
from typing import Any

from twisted.internet.defer import Deferred, maybeDeferred
from twisted.internet.task import Clock
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase
from zope.interface import implementer
from zope.interface.verify import verifyObject

from nodex.crypto import SECP256K1_N, keccak256, private_key_to_address
from nodex.db.memory import MemoryStore
from nodex.db.schema import METADATA
from nodex.api.chain import ChainEvent, ChainHead, IChainService, ReceiptView, TransactionLocation
from nodex.api.pool import ITransactionPool
from nodex.primitives import Address, Hash32
from nodex.api.errors import InvalidTransactionRejectedError, TransactionRejectedError
from nodex.chain.admission import check_admission, check_transaction
from nodex.services.automine import RELAYED_GRACE_SECONDS, AutoMining
from nodex.services.followups import FollowUps
from nodex.services.pool import (
    MAX_RECHECKS,
    NONCES_KEPT_BLOCKS,
    POOL_KEY_PREFIX,
    TransactionPool,
    pool_key,
    store_account_reader,
)
from nodex.structures.accounts import Account
from nodex.structures.blocks import Block
from nodex.structures.headers import EMPTY_UNCLES_HASH, Header
from nodex.structures.receipts import Receipt
from nodex.structures.transactions import (
    FeeMarketTransaction,
    LegacyTransaction,
    Transaction,
    impersonate,
    sign_transaction,
)
from nodex.trie import BLANK_ROOT, MissingTrieNodeError, SecureTrie
from nodex.trie.nodecache import NodeCache

CHAIN_ID = 33
KEYS = [keccak256(seed.encode()) for seed in ("cow", "cow1", "cow2")]
ADDRESSES = [private_key_to_address(key) for key in KEYS]
POOR_KEY = keccak256(b"nobody")
RECIPIENT = Address(bytes.fromhex("7986b3df570230288501eea3d890bd66948c9b79"))
FUNDS = 10**18


def in_thread(function: Any, *args: Any, **kwargs: Any) -> Deferred[Any]:
    """
    Run a function at once, as the services' thread runner would in a thread.
    """
    return maybeDeferred(function, *args, **kwargs)


def make_header(number: int, parent: bytes, state_root: bytes = BLANK_ROOT, **changes: Any) -> Header:
    """
    A header for the fakes: regtest-like limits, empty roots.
    """
    fields: dict[str, Any] = dict(
        parent_hash=Hash32(parent),
        uncles_hash=EMPTY_UNCLES_HASH,
        coinbase=Address(b"\x33" * 20),
        state_root=Hash32(state_root),
        transactions_root=Hash32(BLANK_ROOT),
        receipts_root=Hash32(BLANK_ROOT),
        logs_bloom=b"\x00" * 256,
        difficulty=1,
        number=number,
        gas_limit=30_000_000,
        gas_used=0,
        timestamp=1000 + number,
        extra_data=b"",
        paid_fees=0,
        minimum_gas_price=0,
        uncle_count=0,
    )
    fields.update(changes)
    return Header(**fields)


def funded_state(store: MemoryStore, balances: dict[Address, tuple[int, int]]) -> bytes:
    """
    Write a state holding C{address: (nonce, balance)} into C{store}; return its root.
    """
    from nodex.db.schema import write_trie_nodes

    trie = SecureTrie(lambda node_hash: store.get("trie_nodes", node_hash))
    for address, (nonce, balance) in balances.items():
        trie.put(address, Account(nonce=nonce, balance=balance).encode())
    root = trie.root_hash
    batch = store.batch()
    write_trie_nodes(batch, trie.commit())
    store.write(batch)
    return root


@implementer(IChainService)

def recording_last(function: Callable[..., Any], into: list[Any]) -> Callable[..., Any]:
    """
    C{function}, noting the last argument of each call in C{into} (the
    address an account read is for, the key a store read is for).
    """

    def recorded(*args: Any) -> Any:
        into.append(args[-1])
        return function(*args)

    return recorded

class FakeChainService:
    """
    An in-memory chain: canonical blocks appended by L{adopt}, with their
    receipts; enough for the pool and the RPC edge.
    """

    def __init__(self, store: MemoryStore, state_root: bytes = BLANK_ROOT, **header_changes: Any) -> None:
        """
        A chain of one genesis block over C{store}, with C{state_root}.
        """
        self.chain_id = CHAIN_ID
        self.store = store
        genesis = Block(make_header(0, b"\x00" * 32, state_root, **header_changes))
        self.blocks: dict[bytes, Block] = {genesis.hash: genesis}
        self.receipts: dict[bytes, tuple[Receipt, ...]] = {genesis.hash: ()}
        self.canonical: list[bytes] = [genesis.hash]
        self.observers: list[Any] = []
        self.head = ChainHead(genesis.header, 1)
        self.rewound_to: list[int] = []

    def adopt(self, transactions: tuple[Transaction, ...] = (), state_root: bytes | None = None, **changes: Any) -> Block:
        """
        Append a block of C{transactions} (each using 21000 gas) and tell the observers.
        """
        parent = self.head.header
        if state_root is None:
            state_root = self._bump_nonces(parent.state_root, transactions)
        receipts = tuple(Receipt.from_logs(tx.type, 1, 21000 * (i + 1), ()) for i, tx in enumerate(transactions))
        header = make_header(
            parent.number + 1,
            parent.hash,
            parent.state_root if state_root is None else state_root,
            gas_used=21000 * len(transactions),
            **changes,
        )
        block = Block(header, transactions)
        self.blocks[block.hash] = block
        self.receipts[block.hash] = receipts
        self.canonical.append(block.hash)
        self.head = ChainHead(header, self.head.total_difficulty + 1)
        self.tell(ChainEvent((block,), (), (receipts,)))
        return block

    def _bump_nonces(self, root: bytes, transactions: tuple[Transaction, ...]) -> bytes:
        """
        The state after C{transactions}, as far as nonces go (value and fees are not moved).
        """
        from nodex.db.schema import write_trie_nodes

        trie = SecureTrie(lambda node_hash: self.store.get("trie_nodes", node_hash), root)
        for tx in transactions:
            raw = trie.get(tx.sender)
            account = Account() if raw is None else Account.decode(raw)
            trie.put(tx.sender, replace(account, nonce=tx.nonce + 1).encode())
        new_root = trie.root_hash
        batch = self.store.batch()
        write_trie_nodes(batch, trie.commit())
        self.store.write(batch)
        return new_root

    def tell(self, event: ChainEvent) -> None:
        """
        Deliver a chain event to the observers.
        """
        for observer in self.observers:
            observer(event)

    def get_block_by_hash(self, block_hash: bytes) -> Deferred[Block | None]:
        """
        Any block by hash.
        """
        return maybeDeferred(self.blocks.get, bytes(block_hash))

    def get_block_by_number(self, number: int) -> Deferred[Block | None]:
        """
        A canonical block by number.
        """
        if number < len(self.canonical):
            return maybeDeferred(self.blocks.get, self.canonical[number])
        return maybeDeferred(lambda: None)

    def get_total_difficulty(self, block_hash: bytes) -> Deferred[int | None]:
        """
        The block number plus one (difficulty 1 per block).
        """
        block = self.blocks.get(bytes(block_hash))
        return maybeDeferred(lambda: None if block is None else block.header.number + 1)

    def is_canonical(self, block_hash: bytes) -> Deferred[bool]:
        """
        Whether the block is canonical.
        """
        return maybeDeferred(lambda: bytes(block_hash) in self.canonical)

    def _locate(self, tx_hash: bytes) -> TransactionLocation | None:
        """
        Where a canonical transaction sits.
        """
        for number, block_hash in enumerate(self.canonical):
            for index, tx in enumerate(self.blocks[block_hash].transactions):
                if tx.hash == tx_hash:
                    return TransactionLocation(tx, Hash32(block_hash), number, index)
        return None

    def get_transaction(self, tx_hash: bytes) -> Deferred[TransactionLocation | None]:
        """
        A canonical transaction and its position.
        """
        return maybeDeferred(self._locate, bytes(tx_hash))

    def _view(self, location: TransactionLocation) -> ReceiptView:
        """
        The receipt view of a located transaction.
        """
        receipts = self.receipts[location.block_hash]
        receipt = receipts[location.index]
        previous = receipts[location.index - 1].cumulative_gas_used if location.index else 0
        first_log = sum(len(r.logs) for r in receipts[: location.index])
        tx = location.transaction
        created = keccak256(tx.sender + bytes([tx.nonce]))[12:] if tx.is_create else None
        return ReceiptView(
            receipt, location, receipt.cumulative_gas_used - previous, first_log, created, tx.effective_gas_price
        )

    def get_receipt(self, tx_hash: bytes) -> Deferred[ReceiptView | None]:
        """
        The receipt of a canonical transaction.
        """
        location = self._locate(bytes(tx_hash))
        return maybeDeferred(lambda: None if location is None else self._view(location))

    def get_block_receipts(self, block_hash: bytes) -> Deferred[list[ReceiptView] | None]:
        """
        The receipts of a stored block.
        """
        block = self.blocks.get(bytes(block_hash))
        if block is None:
            return maybeDeferred(lambda: None)
        views = [
            self._view(TransactionLocation(tx, Hash32(block.hash), block.header.number, index))
            for index, tx in enumerate(block.transactions)
        ]
        return maybeDeferred(lambda: views)

    def import_block(self, block: Block) -> Deferred[str]:
        """
        Refuse every block (the fake only grows by L{adopt}).
        """
        return maybeDeferred(lambda: "INVALID_BLOCK")

    def add_observer(self, observer: Any) -> None:
        """
        Register a chain observer.
        """
        self.observers.append(observer)

    def rewind(self, number: int) -> Deferred[None]:
        """
        Make block C{number} the head.
        """
        self.rewound_to.append(number)
        del self.canonical[number + 1 :]
        self.head = ChainHead(self.blocks[self.canonical[-1]].header, number + 1)
        return maybeDeferred(lambda: None)


def legacy(
    nonce: int, key: bytes = KEYS[0], gas_price: int = 0, gas: int = 21000, value: int = 1, data: bytes = b"",
    chain_id: int | None = CHAIN_ID, to: bytes = RECIPIENT,
) -> Transaction:
    """
    A signed legacy transfer.
    """
    return sign_transaction(LegacyTransaction(nonce, gas_price, gas, to, value, data), key, chain_id)


class PoolFixture:
    """
    A pool over a fake chain whose head state funds the three test accounts.
    """

    def make_pool(self, **options: Any) -> TransactionPool:
        """
        A new pool (and C{self.chain}, C{self.store}) with the test accounts funded.
        """
        self.store = MemoryStore()
        root = funded_state(self.store, {address: (0, FUNDS) for address in ADDRESSES})
        self.chain = FakeChainService(self.store, root, **options.pop("header", {}))
        return TransactionPool(self.chain, self.store, in_thread, **options)

    def reject(self, test: SynchronousTestCase, pool: TransactionPool, tx: Transaction, message: str) -> None:
        """
        Assert that C{pool} rejects C{tx} with C{message} and keeps nothing of it.
        """
        failure = test.failureResultOf(pool.add(tx), TransactionRejectedError)
        test.assertEqual(failure.getErrorMessage(), message)
        test.assertIsNone(pool.get(tx.hash))
        test.assertEqual(
            [key for key, _ in self.store.iterate(METADATA, POOL_KEY_PREFIX) if key.endswith(tx.hash)], []
        )


class TransactionPoolValidationTests(PoolFixture, SynchronousTestCase):
    """
    L{TransactionPool.add} accepts valid transactions and refuses the others
    with the reference's messages.
    """

    def test_interface(self) -> None:
        """
        L{TransactionPool} provides L{ITransactionPool}.
        """
        self.assertTrue(verifyObject(ITransactionPool, self.make_pool()))

    def test_accepts_valid_transaction(self) -> None:
        """
        A valid transfer is accepted, answered with its hash, pending and persisted.
        """
        pool = self.make_pool()
        tx = legacy(0)
        self.assertEqual(self.successResultOf(pool.add(tx)), tx.hash)
        self.assertEqual(pool.pending(), [tx])
        self.assertEqual(pool.queued(), [])
        self.assertIs(pool.get(tx.hash), tx)
        self.assertEqual(self.store.get(METADATA, POOL_KEY_PREFIX + tx.hash), tx.encode())

    def test_accepts_fee_market_transaction(self) -> None:
        """
        Type 2 transactions are accepted.
        """
        pool = self.make_pool()
        unsigned = FeeMarketTransaction(CHAIN_ID, 0, 1, 2, 21000, RECIPIENT, 0, b"")
        tx = sign_transaction(unsigned, KEYS[0], None)
        self.assertEqual(self.successResultOf(pool.add(tx)), tx.hash)

    def test_wrong_chain_id(self) -> None:
        """
        A transaction signed for another chain is refused, as one that can
        never be valid here; a refusal of the moment is not such a one.
        """
        pool = self.make_pool()
        self.reject(self, pool, legacy(0, chain_id=31), "Invalid chainId: 31")
        self.failureResultOf(pool.add(legacy(0, chain_id=31)), InvalidTransactionRejectedError)
        self.successResultOf(pool.add(legacy(0)))
        failure = self.failureResultOf(pool.add(legacy(0)), TransactionRejectedError)
        self.assertNotIsInstance(failure.value, InvalidTransactionRejectedError)

    def test_pre_eip155_accepted(self) -> None:
        """
        A legacy transaction without a chain id is valid on every chain.
        """
        pool = self.make_pool()
        tx = legacy(0, chain_id=None)
        self.assertEqual(self.successResultOf(pool.add(tx)), tx.hash)

    def test_bad_signature(self) -> None:
        """
        A signature with a high s (EIP-2) is refused.
        """
        pool = self.make_pool()
        good = legacy(0)
        bad = replace(good, s=SECP256K1_N - good.s)
        failure = self.failureResultOf(pool.add(bad), InvalidTransactionRejectedError)
        self.assertIn("invalid signature", failure.getErrorMessage())
        self.assertEqual(len(pool), 0)

    def test_low_nonce(self) -> None:
        """
        A nonce below the sender's state nonce is refused.
        """
        self.store = MemoryStore()
        root = funded_state(self.store, {ADDRESSES[0]: (5, FUNDS)})
        self.chain = FakeChainService(self.store, root)
        pool = TransactionPool(self.chain, self.store, in_thread)
        self.reject(self, pool, legacy(4), "transaction nonce too low")

    def test_nonce_too_high(self) -> None:
        """
        A nonce as far ahead as the account's slots is refused.
        """
        pool = self.make_pool()
        self.reject(self, pool, legacy(16), "transaction nonce too high")

    def test_insufficient_funds(self) -> None:
        """
        A sender that cannot pay gas times price plus value is refused.
        """
        pool = self.make_pool()
        self.reject(self, pool, legacy(0, value=FUNDS + 1), "insufficient funds")
        self.reject(self, pool, legacy(0, key=POOR_KEY, gas_price=1), "insufficient funds")

    def test_insufficient_funds_with_pending(self) -> None:
        """
        A sender that can pay for each transaction but not for all of them is refused.
        """
        pool = self.make_pool()
        self.successResultOf(pool.add(legacy(0, value=FUNDS // 2 + 1)))
        self.reject(
            self, pool, legacy(1, value=FUNDS // 2), "insufficient funds to pay for pending and new transactions"
        )

    def test_price_below_minimum(self) -> None:
        """
        A gas price below the head's minimum gas price is refused.
        """
        pool = self.make_pool(header={"minimum_gas_price": 10})
        self.reject(self, pool, legacy(0, gas_price=9), "transaction's gas price lower than block's minimum")
        self.successResultOf(pool.add(legacy(0, gas_price=10)))

    def test_intrinsic_gas(self) -> None:
        """
        Gas below the intrinsic cost is refused.
        """
        pool = self.make_pool()
        self.reject(self, pool, legacy(0, gas=20999), "transaction's basic cost is above the gas limit")

    def test_block_gas_limit(self) -> None:
        """
        Gas above the head's gas limit is refused.
        """
        pool = self.make_pool()
        self.reject(
            self,
            pool,
            legacy(0, gas=30_000_001),
            "transaction's gas limit of 30000001 exceeds the block's gas limit of 30000000",
        )

    def test_size(self) -> None:
        """
        A transaction above 128 KiB is refused with both sizes.
        """
        pool = self.make_pool()
        tx = legacy(0, data=b"\x01" * 131072, gas=29_000_000)
        self.reject(self, pool, tx, f"transaction's size is higher than defined maximum: {len(tx.encode())} > 131072")

    def test_init_code_size(self) -> None:
        """
        A creation with more than 49,152 bytes of init code is refused.
        """
        pool = self.make_pool()
        tx = legacy(0, data=b"\x01" * 49153, gas=29_000_000, to=b"")
        self.reject(self, pool, tx, "transaction's init code size is invalid")

    def test_duplicates(self) -> None:
        """
        The same transaction twice is refused, naming whether it is pending or queued.
        """
        pool = self.make_pool()
        pending, queued = legacy(0), legacy(2)
        self.successResultOf(pool.add(pending))
        self.successResultOf(pool.add(queued))
        message = self.failureResultOf(pool.add(pending), TransactionRejectedError).getErrorMessage()
        self.assertEqual(message, "pending transaction with same hash already exists")
        message = self.failureResultOf(pool.add(queued), TransactionRejectedError).getErrorMessage()
        self.assertEqual(message, "queued transaction with same hash already exists")


class TransactionPoolImpersonationTests(PoolFixture, SynchronousTestCase):
    """
    The impersonation marker: admitted only from a sender impersonated now
    on a dev chain's pool (C{docs/devchain.md}).
    """

    def setUp(self) -> None:
        """
        A marked transfer from the funded C{ADDRESSES[0]}, and the set of
        impersonated addresses the pool consults.
        """
        self.impersonated: set[bytes] = set()
        self.marked = impersonate(LegacyTransaction(0, 0, 21000, RECIPIENT, 1, b""), ADDRESSES[0], CHAIN_ID)

    def test_admitted_while_impersonated(self) -> None:
        """
        An impersonated sender's marked transaction is admitted and persisted.
        """
        self.impersonated.add(ADDRESSES[0])
        pool = self.make_pool(impersonating=self.impersonated.__contains__)
        self.assertEqual(self.successResultOf(pool.add(self.marked)), self.marked.hash)
        self.assertEqual(pool.pending(), [self.marked])
        self.assertEqual(self.store.get(METADATA, POOL_KEY_PREFIX + self.marked.hash), self.marked.encode())

    def test_refused_when_not_impersonated(self) -> None:
        """
        A dev chain's pool refuses the marker of a sender nobody impersonates.
        """
        pool = self.make_pool(impersonating=self.impersonated.__contains__)
        failure = self.failureResultOf(pool.add(self.marked), TransactionRejectedError)
        self.assertIn("impersonated sender's marker", failure.getErrorMessage())
        self.assertEqual(len(pool), 0)

    def test_refused_off_dev_chains(self) -> None:
        """
        A pool without impersonation (main, testnet) refuses every marker.
        """
        pool = self.make_pool()
        failure = self.failureResultOf(pool.add(self.marked), TransactionRejectedError)
        self.assertIn("invalid signature", failure.getErrorMessage())

    def test_restart_forgets(self) -> None:
        """
        After a restart nobody is impersonated: a persisted marked
        transaction is dropped, as Hardhat and Anvil forget theirs.
        """
        self.impersonated.add(ADDRESSES[0])
        pool = self.make_pool(impersonating=self.impersonated.__contains__)
        self.successResultOf(pool.add(self.marked))
        chain = FakeChainService(self.store, self.chain.head.header.state_root)
        restarted = TransactionPool(chain, self.store, in_thread, impersonating=set().__contains__)
        self.assertEqual(self.successResultOf(restarted.load()), 0)
        self.assertEqual(list(self.store.iterate(METADATA, POOL_KEY_PREFIX)), [])


class QueuedThread:
    """
    Stands in for a L{nodex.services.threads.SerialThread}: jobs wait until
    L{flush}, as they would on a thread, and record what thread ran them.
    """

    def __init__(self) -> None:
        """
        No jobs yet; not started.
        """
        self.jobs: list[tuple[Deferred[Any], Callable[..., Any], tuple[Any, ...]]] = []
        self.started = self.stopped = False

    def start(self) -> None:
        """
        Record the start.
        """
        self.started = True

    def stop(self) -> None:
        """
        Record the stop.
        """
        self.stopped = True

    def run(self, function: Callable[..., Any], *args: Any) -> Deferred[Any]:
        """
        Queue a job.
        """
        waiting: Deferred[Any] = Deferred()
        self.jobs.append((waiting, function, args))
        return waiting

    def flush(self) -> None:
        """
        Run the queued jobs in order; a job's exception fails its
        Deferred, as a real thread's does.
        """
        while self.jobs:
            waiting, function, args = self.jobs.pop(0)
            try:
                result = function(*args)
            except Exception:
                waiting.errback()
            else:
                waiting.callback(result)


class TransactionPoolStoreThreadTests(PoolFixture, SynchronousTestCase):
    """
    The pool writes its changes on its store thread, never on the calling
    (reactor) thread, and answers once the write is done.
    """

    def test_write_on_store_thread(self) -> None:
        """
        An accepted transaction is written by a job of the store thread;
        L{TransactionPool.add} answers after it.
        """
        thread = QueuedThread()
        pool = self.make_pool(store_thread=thread)
        pool.startService()
        self.assertTrue(thread.started)
        tx = legacy(0)
        adding = pool.add(tx)
        self.assertNoResult(adding)
        self.assertEqual(list(self.store.iterate(METADATA, POOL_KEY_PREFIX)), [])
        self.assertEqual(len(thread.jobs), 1)
        thread.flush()
        self.assertEqual(self.successResultOf(adding), tx.hash)
        self.assertEqual([key for key, _ in self.store.iterate(METADATA, POOL_KEY_PREFIX)], [pool_key(tx.hash)])
        pool.stopService()
        self.assertTrue(thread.stopped)

    def test_no_writes_after_stop(self) -> None:
        """
        Once the pool has stopped (the node is stopping, the store about to
        close), changes are not written: a block import that finishes then
        cannot write to a closed store.
        """
        thread = QueuedThread()
        pool = self.make_pool(store_thread=thread)
        pool.startService()
        pool.stopService()
        adding = pool.add(legacy(0))
        self.assertEqual(thread.jobs, [])
        self.successResultOf(adding)
        self.assertEqual(list(self.store.iterate(METADATA, POOL_KEY_PREFIX)), [])

    def test_failed_write_logged(self) -> None:
        """
        A write that fails is logged; the transaction stays pooled.
        """
        thread = QueuedThread()
        pool = self.make_pool(store_thread=thread)
        tx = legacy(0)
        adding = pool.add(tx)
        waiting, _function, _args = thread.jobs.pop(0)
        waiting.errback(RuntimeError("disk full"))
        self.assertEqual(self.successResultOf(adding), tx.hash)
        self.assertEqual(len(self.flushLoggedErrors(RuntimeError)), 1)
        self.assertIs(pool.get(tx.hash), tx)


class TransactionPoolOrderingTests(PoolFixture, SynchronousTestCase):
    """
    Pending and queued transactions, replacement, limits and eviction.
    """

    def test_gap_queues_and_promotes(self) -> None:
        """
        A transaction after a nonce gap is queued; closing the gap makes both
        pending, and the observers hear of each.
        """
        pool = self.make_pool()
        heard: list[Transaction] = []
        pool.add_observer(heard.append)
        later, first = legacy(1), legacy(0)
        self.successResultOf(pool.add(later))
        self.assertEqual((pool.pending(), pool.queued(), heard), ([], [later], []))
        self.assertFalse(pool.is_pending(later.hash))
        self.successResultOf(pool.add(first))
        self.assertEqual((pool.pending(), pool.queued()), ([first, later], []))
        self.assertEqual(heard, [first, later])

    def test_pending_ordered_by_price_then_nonce(self) -> None:
        """
        Senders are interleaved by the price of their next transaction; each sender's stay in nonce order.
        """
        pool = self.make_pool()
        a0, a1 = legacy(0, gas_price=1), legacy(1, gas_price=9)
        b0 = legacy(0, key=KEYS[1], gas_price=5)
        for tx in (a0, a1, b0):
            self.successResultOf(pool.add(tx))
        self.assertEqual(pool.pending(), [b0, a0, a1])

    def test_replacement_needs_price_bump(self) -> None:
        """
        A transaction with the nonce of a pooled one replaces it only when it pays 40 % more.
        """
        pool = self.make_pool()
        old = legacy(0, gas_price=100)
        self.successResultOf(pool.add(old))
        self.reject(self, pool, legacy(0, gas_price=139), "gas price not enough to bump transaction")
        new = legacy(0, gas_price=140)
        self.successResultOf(pool.add(new))
        self.assertEqual(pool.pending(), [new])
        self.assertIsNone(pool.get(old.hash))
        self.assertIsNone(self.store.get(METADATA, POOL_KEY_PREFIX + old.hash))

    def test_replacement_of_free_transaction(self) -> None:
        """
        On regtest (price 0), any other transaction with the same nonce replaces a free one.
        """
        pool = self.make_pool()
        self.successResultOf(pool.add(legacy(0, value=1)))
        new = legacy(0, value=2)
        self.successResultOf(pool.add(new))
        self.assertEqual(pool.pending(), [new])

    def test_account_quota(self) -> None:
        """
        A sender holds at most as many transactions as its slots.
        """
        pool = self.make_pool(account_slots=2)
        self.successResultOf(pool.add(legacy(0)))
        self.successResultOf(pool.add(legacy(1)))
        self.reject(self, pool, legacy(2), "account exceeds quota")
        self.successResultOf(pool.add(legacy(1, value=5)))

    def test_global_limit_evicts_cheapest_queued(self) -> None:
        """
        A full pool drops its cheapest queued transaction for a new one.
        """
        pool = self.make_pool(global_slots=3)
        cheap, dear = legacy(5, gas_price=1), legacy(5, key=KEYS[1], gas_price=2)
        pending = legacy(0, key=KEYS[2])
        for tx in (cheap, dear, pending):
            self.successResultOf(pool.add(tx))
        newcomer = legacy(0)
        self.successResultOf(pool.add(newcomer))
        self.assertEqual(len(pool), 3)
        self.assertIsNone(pool.get(cheap.hash))
        self.assertIsNone(self.store.get(METADATA, POOL_KEY_PREFIX + cheap.hash))

    def test_global_limit_full_of_pending(self) -> None:
        """
        A pool full of pending transactions drops the cheapest last one of
        another sender for a better-paying newcomer, and refuses one that pays no more.
        """
        pool = self.make_pool(global_slots=2)
        cheap, dear = legacy(0, gas_price=1), legacy(0, key=KEYS[1], gas_price=5)
        self.successResultOf(pool.add(cheap))
        self.successResultOf(pool.add(dear))
        self.reject(self, pool, legacy(0, key=KEYS[2], gas_price=1), "transaction pool is full")
        newcomer = legacy(0, key=KEYS[2], gas_price=3)
        self.successResultOf(pool.add(newcomer))
        self.assertEqual(set(pool.pending()), {dear, newcomer})

    def test_next_nonce(self) -> None:
        """
        The next nonce counts the state nonce and the pending run, not queued transactions.
        """
        pool = self.make_pool()
        self.assertEqual(self.successResultOf(pool.next_nonce(ADDRESSES[0])), 0)
        self.successResultOf(pool.add(legacy(0)))
        self.successResultOf(pool.add(legacy(1)))
        self.successResultOf(pool.add(legacy(3)))
        self.assertEqual(self.successResultOf(pool.next_nonce(ADDRESSES[0])), 2)

    def test_next_nonce_of_an_unknown_sender_at_once(self) -> None:
        """
        The nonce of a sender the pool does not follow is read at the head
        at once, not in the reader pool (here one that never runs a job).
        """
        pool = self.make_pool()
        pool._run_in_thread = lambda *args: Deferred()  # type: ignore[method-assign]
        self.assertEqual(self.successResultOf(pool.next_nonce(ADDRESSES[1])), 0)

    def counting_reads(self, pool: TransactionPool) -> list[Address]:
        """
        Make C{pool} record the addresses whose accounts it reads.
        """
        reads: list[Address] = []
        pool._read_account = recording_last(pool._read_account, reads)  # type: ignore[method-assign]
        return reads

    def test_next_nonce_after_the_senders_block(self) -> None:
        """
        After a block holding transactions of a sender the pool does not
        follow (automined ones), its next nonce is the one after its last
        in the block, without reading its account.
        """
        pool = self.make_pool()
        reads = self.counting_reads(pool)
        self.chain.adopt((legacy(0), legacy(1), legacy(0, key=KEYS[1])))
        self.assertEqual(self.successResultOf(pool.next_nonce(ADDRESSES[0])), 2)
        self.assertEqual(self.successResultOf(pool.next_nonce(ADDRESSES[1])), 1)
        self.assertEqual(reads, [])
        self.assertEqual(self.successResultOf(pool.next_nonce(ADDRESSES[2])), 0)
        self.assertEqual(reads, [ADDRESSES[2]])
        self.successResultOf(pool.next_nonce(ADDRESSES[2]))
        self.assertEqual(reads, [ADDRESSES[2]], "the nonce read at the head is kept for it")

    def test_next_nonce_after_a_rewind(self) -> None:
        """
        The nonces are kept by block: after a rewind to a block, a sender's
        next nonce is its nonce in that block's state, not after the later
        blocks (read once, then kept for that block).
        """
        pool = self.make_pool()
        reads = self.counting_reads(pool)
        self.chain.adopt((legacy(0),))
        fixture = self.chain.head.header.number
        self.chain.adopt((legacy(1),))
        self.chain.adopt((legacy(2),))
        self.assertEqual(self.successResultOf(pool.next_nonce(ADDRESSES[0])), 3)
        self.successResultOf(self.chain.rewind(fixture))
        self.chain.tell(ChainEvent((), (), rewound=True))
        self.assertEqual(self.successResultOf(pool.next_nonce(ADDRESSES[0])), 1)
        self.chain.adopt((legacy(1, gas_price=2),))
        self.assertEqual(self.successResultOf(pool.next_nonce(ADDRESSES[0])), 2)
        self.assertEqual(reads, [])

    def test_next_nonce_of_an_impersonated_sender_read(self) -> None:
        """
        An impersonated sender may be a contract, whose nonce its CREATEs
        move too: after its block, its nonce is read from the head's state.
        """
        pool = self.make_pool()
        reads = self.counting_reads(pool)
        marked = impersonate(LegacyTransaction(0, 0, 21000, RECIPIENT, 1, b""), ADDRESSES[1], CHAIN_ID)
        self.chain.adopt((marked,), state_root=funded_state(self.store, {ADDRESSES[1]: (7, FUNDS)}))
        self.assertEqual(self.successResultOf(pool.next_nonce(ADDRESSES[1])), 7)
        self.assertEqual(reads, [ADDRESSES[1]])

    def test_next_nonce_blocks_kept(self) -> None:
        """
        The nonces of at most L{NONCES_KEPT_BLOCKS} blocks are kept, the
        oldest dropped first.
        """
        pool = self.make_pool()
        first = self.chain.adopt((legacy(0),))
        for nonce in range(1, NONCES_KEPT_BLOCKS + 1):
            self.chain.adopt((legacy(nonce),))
        self.assertEqual(len(pool._nonces_at), NONCES_KEPT_BLOCKS)
        self.assertNotIn(first.hash, pool._nonces_at)
        self.assertEqual(pool._nonces_at[self.chain.head.header.hash], {ADDRESSES[0]: NONCES_KEPT_BLOCKS + 1})


class TransactionPoolEventsTests(PoolFixture, SynchronousTestCase):
    """
    The pool follows the chain, waits for its observers, clears, and persists.
    """

    def test_observer_deferred_delays_answer(self) -> None:
        """
        C{add} fires only after the Deferred an observer returned (auto mining).
        """
        pool = self.make_pool()
        mined: Deferred[None] = Deferred()
        pool.add_observer(lambda tx: mined)
        adding = pool.add(legacy(0))
        self.assertNoResult(adding)
        mined.callback(None)
        self.assertEqual(self.successResultOf(adding), legacy(0).hash)

    def test_observer_failure_is_logged(self) -> None:
        """
        An observer that fails does not fail the add; the failure is logged.
        """
        pool = self.make_pool()
        pool.add_observer(lambda tx: 1 / 0)
        tx = legacy(0)
        self.assertEqual(self.successResultOf(pool.add(tx)), tx.hash)
        self.assertEqual(len(self.flushLoggedErrors(ZeroDivisionError)), 1)

    def test_mined_transactions_leave(self) -> None:
        """
        A block that includes pooled transactions removes them (and their
        stored copies) and advances the sender's nonce, dropping stale ones.
        """
        pool = self.make_pool()
        first, second, third = legacy(0), legacy(1), legacy(2)
        for tx in (first, second, third):
            self.successResultOf(pool.add(tx))
        other_second = legacy(1, value=99)
        self.chain.adopt((first, other_second))
        self.assertEqual(pool.pending(), [third])
        self.assertEqual([key for key, _ in self.store.iterate(METADATA, POOL_KEY_PREFIX)], [POOL_KEY_PREFIX + third.hash])
        self.reject(self, pool, legacy(1, value=7), "transaction nonce too low")

    def test_abandoned_transactions_return(self) -> None:
        """
        The transactions of an abandoned block come back into the pool.
        """
        pool = self.make_pool()
        tx = legacy(0)
        self.successResultOf(pool.add(tx))
        block = self.chain.adopt((tx,))
        self.assertEqual(len(pool), 0)
        self.successResultOf(self.chain.rewind(0))
        self.chain.tell(ChainEvent((), (block,)))
        self.assertEqual(pool.pending(), [tx])

    def test_reorganisation_with_nothing_pooled(self) -> None:
        """
        A reorganisation while nothing is pooled: of the abandoned block's
        transactions, those the adopted block holds too are not offered to
        the pool again; the others come back.
        """
        pool = self.make_pool()
        both, only_abandoned = legacy(0), legacy(1)
        abandoned = self.chain.adopt((both, only_abandoned))
        self.successResultOf(self.chain.rewind(0))
        observers, self.chain.observers = self.chain.observers, []
        adopted = self.chain.adopt((both,))
        self.chain.observers = observers
        offered: list[Transaction] = []
        add = pool.add

        def offer(transaction: Transaction, *rest: Any) -> Deferred[Any]:
            offered.append(transaction)
            return add(transaction, *rest)

        pool.add = offer  # type: ignore[method-assign]
        self.chain.tell(ChainEvent((adopted,), (abandoned,)))
        self.assertEqual(offered, [only_abandoned])
        self.assertEqual(pool.pending(), [only_abandoned])

    def test_clear(self) -> None:
        """
        C{clear} drops everything, from memory and from the store.
        """
        pool = self.make_pool()
        self.successResultOf(pool.add(legacy(0)))
        self.successResultOf(pool.add(legacy(3)))
        pool.clear()
        self.assertEqual((pool.pending(), pool.queued(), len(pool)), ([], [], 0))
        self.assertEqual(list(self.store.iterate(METADATA, POOL_KEY_PREFIX)), [])

    def test_survives_restart(self) -> None:
        """
        A new pool on the same store takes back the persisted transactions,
        re-validated: those the head has made invalid are deleted.
        """
        pool = self.make_pool()
        kept, queued, invalid = legacy(0), legacy(2), legacy(0, key=KEYS[1])
        for tx in (queued, kept, invalid):
            self.successResultOf(pool.add(tx))
        self.store.write(self._garbage())
        root = funded_state(self.store, {ADDRESSES[0]: (0, FUNDS), ADDRESSES[1]: (1, FUNDS)})
        chain = FakeChainService(self.store, root)
        restarted = TransactionPool(chain, self.store, in_thread)
        self.assertEqual(self.successResultOf(restarted.load()), 2)
        self.assertEqual((restarted.pending(), restarted.queued()), ([kept], [queued]))
        stored = sorted(key for key, _ in self.store.iterate(METADATA, POOL_KEY_PREFIX))
        self.assertEqual(stored, sorted(POOL_KEY_PREFIX + tx.hash for tx in (kept, queued)))

    def _garbage(self) -> Any:
        """
        A batch that stores bytes that are no transaction under a pool key.
        """
        batch = self.store.batch()
        batch.put(METADATA, POOL_KEY_PREFIX + b"\x01" * 32, b"\x05garbage")
        return batch

    def test_store_account_reader(self) -> None:
        """
        The default account reader reads the state trie of the store.
        """
        store = MemoryStore()
        root = funded_state(store, {ADDRESSES[0]: (3, 7)})
        read = store_account_reader(store)
        self.assertEqual(read(root, ADDRESSES[0]), Account(nonce=3, balance=7))
        self.assertIsNone(read(root, ADDRESSES[1]))

    def test_store_account_reader_keeps_nodes(self) -> None:
        """
        The default account reader keeps the decoded nodes it walked: a
        second read at the same state reads nothing from the store, and a
        missing state still fails as missing.
        """
        store = MemoryStore()
        root = funded_state(store, {ADDRESSES[0]: (3, 7), ADDRESSES[1]: (1, 2)})
        reads: list[bytes] = []
        store.get = recording_last(store.get, reads)  # type: ignore[method-assign]
        cache = NodeCache(16)
        read = store_account_reader(store, cache)
        found = (read(root, ADDRESSES[0]), read(root, ADDRESSES[1]))
        self.assertEqual(found, (Account(nonce=3, balance=7), Account(nonce=1, balance=2)))
        first = len(reads)
        self.assertGreater(first, 0)
        self.assertEqual((read(root, ADDRESSES[0]), read(root, ADDRESSES[1])), found)
        self.assertEqual(len(reads), first)
        self.assertGreater(len(cache), 0)
        self.assertRaises(MissingTrieNodeError, read, b"\x07" * 32, ADDRESSES[0])

    def test_rejection_in_failure(self) -> None:
        """
        A rejection is a L{Failure} of L{TransactionRejectedError}, not an exception raised by C{add}.
        """
        pool = self.make_pool()
        result = pool.add(legacy(0, chain_id=1))
        self.assertIsInstance(self.failureResultOf(result), Failure)

    def test_remove(self) -> None:
        """
        C{remove} drops the named transactions (from the store too) and ignores unknown hashes.
        """
        pool = self.make_pool()
        kept, dropped = legacy(0), legacy(0, key=KEYS[1])
        self.successResultOf(pool.add(kept))
        self.successResultOf(pool.add(dropped))
        pool.remove([dropped.hash, b"\x07" * 32])
        self.assertEqual(pool.pending(), [kept])
        self.assertIsNone(self.store.get(METADATA, POOL_KEY_PREFIX + dropped.hash))

    def test_rewind_brings_nothing_back(self) -> None:
        """
        After a rewind the abandoned transactions stay out, and the sender's
        nonce is read again from the new head.
        """
        pool = self.make_pool()
        tx = legacy(0)
        self.successResultOf(pool.add(tx))
        block = self.chain.adopt((tx,))
        self.successResultOf(pool.add(legacy(1)))
        self.successResultOf(self.chain.rewind(0))
        self.chain.tell(ChainEvent((), (block,), rewound=True))
        self.assertEqual(len(pool), 1)
        pool.clear()
        self.assertEqual(self.successResultOf(pool.next_nonce(ADDRESSES[0])), 0)

    def test_start_loads(self) -> None:
        """
        Starting the pool as a service takes back the persisted transactions.
        """
        pool = self.make_pool()
        tx = legacy(0)
        self.successResultOf(pool.add(tx))
        restarted = TransactionPool(self.chain, self.store, in_thread)
        restarted.startService()
        self.assertEqual(restarted.pending(), [tx])

    def test_auto_mined_not_written(self) -> None:
        """
        A transaction that its observer mines before C{add} answers is never
        written to the store; one left pending is written before the answer.
        """
        pool = self.make_pool()
        mined = legacy(0)
        pool.add_observer(lambda tx: self.chain.adopt((tx,)) and None if tx is mined else None)
        self.successResultOf(pool.add(mined))
        self.assertEqual(list(self.store.iterate(METADATA, POOL_KEY_PREFIX)), [])
        kept = legacy(0, key=KEYS[1])
        self.successResultOf(pool.add(kept))
        self.assertEqual([key for key, _ in self.store.iterate(METADATA, POOL_KEY_PREFIX)], [POOL_KEY_PREFIX + kept.hash])


class RecordingMiner:
    """
    A miner whose blocks complete when the test says, recording what each block took.
    """

    def __init__(self, pool: TransactionPool, chain: FakeChainService, synchronous: bool = False) -> None:
        """
        A miner in auto mode over C{pool} and C{chain}.
        """
        self.pool = pool
        self.chain = chain
        self.synchronous = synchronous
        self.mode = "auto"
        self.is_mining = True
        self.blocks: list[tuple[Transaction, ...]] = []
        self.empty_wanted: list[bool] = []
        self.running: list[Deferred[None]] = []
        self.lone = True

    def mine(self, empty: bool = True) -> Deferred[None]:
        """
        Take the pending transactions now; store the block when L{finish} is called.
        """
        candidates = tuple(self.pool.pending())
        self.blocks.append(candidates)
        self.empty_wanted.append(empty)
        if self.synchronous:
            self.chain.adopt(candidates)
            return maybeDeferred(lambda: None)
        done: Deferred[None] = Deferred()
        done.addCallback(lambda _: self.chain.adopt(candidates) and None)
        self.running.append(done)
        return done

    def finish(self) -> None:
        """
        Store the oldest block being mined.
        """
        self.running.pop(0).callback(None)

    @property
    def due_now(self) -> bool:
        """
        Whether the miner takes transactions to mine alone.
        """
        return self.lone

    def mine_alone(self, transaction: Transaction, admission: Any) -> "Deferred[tuple[int, int] | None]":
        """
        When L{finish} is called: admit C{transaction} by C{admission}'s
        rules on the head's state, then store a block of it if it is
        executable, else answer its sender's account.
        """
        from nodex.state.state import State

        def decide(_: object) -> tuple[int, int] | None:
            state = State.from_store(self.chain.store, self.chain.head.header.state_root)
            head = self.chain.head.header
            check_transaction(transaction, admission.rules, head.gas_limit, head.minimum_gas_price)
            sender = transaction.sender
            nonce, balance = state.get_nonce(sender), state.get_balance(sender)
            check_admission(transaction, nonce, balance, {}, admission.rules)
            if transaction.nonce != nonce:
                return (nonce, balance)
            self.blocks.append((transaction,))
            self.chain.adopt((transaction,))
            return None

        done: Deferred[None] = Deferred()
        self.running.append(done)
        return done.addCallback(decide)


class AutoMiningTests(PoolFixture, SynchronousTestCase):
    """
    Tests for L{AutoMining}, the pool observer of the C{auto} mode.
    """

    def setUp(self) -> None:
        """
        A pool watched by L{AutoMining} over a controllable miner that
        mines no transaction alone (so that every transaction goes the
        pool's way: the fast lane is L{AutoMiningFastLaneTests}').
        """
        self.pool = self.make_pool()
        self.miner = RecordingMiner(self.pool, self.chain)
        self.miner.lone = False
        self.pool.watch_for_miner(AutoMining(self.miner, self.pool))  # type: ignore[arg-type]

    def test_answer_after_block(self) -> None:
        """
        C{add} fires once the block holding the transaction is stored.
        """
        tx = legacy(0)
        adding = self.pool.add(tx)
        self.assertNoResult(adding)
        self.miner.finish()
        self.assertEqual(self.successResultOf(adding), tx.hash)
        self.assertEqual(self.miner.blocks, [(tx,)])
        self.assertEqual(len(self.pool), 0)

    def test_gap_closed_mines_once(self) -> None:
        """
        Transactions that become pending together share one block.
        """
        later, first = legacy(1), legacy(0)
        self.successResultOf(self.pool.add(later))
        self.assertEqual(self.miner.blocks, [])
        adding = self.pool.add(first)
        self.assertEqual(self.miner.blocks, [(first, later)])
        self.miner.finish()
        self.successResultOf(adding)
        self.assertEqual(len(self.pool), 0)

    def test_gap_closed_by_a_block_mines_it(self) -> None:
        """
        A queued transaction whose gap a block closes (the sender's earlier
        transaction mined without passing through this pool, as the fast
        lane of C{auto} mode mines it) becomes pending and gets its block:
        it is not left waiting for the next transaction (the hang of
        issue 27).
        """
        first, later = legacy(0), legacy(1)
        self.successResultOf(self.pool.add(later))
        self.assertEqual((self.pool.queued(), self.miner.blocks), ([later], []))
        self.chain.adopt((first,))
        self.assertEqual(self.miner.blocks, [(later,)])
        self.miner.finish()
        self.assertEqual(len(self.pool), 0)

    def test_newcomer_during_block_gets_its_own(self) -> None:
        """
        A transaction that arrives while a block is mined without it asks for another block.
        """
        first, second = legacy(0), legacy(0, key=KEYS[1])
        one = self.pool.add(first)
        two = self.pool.add(second)
        self.assertEqual(self.miner.blocks, [(first,), (first, second)])
        self.miner.finish()
        self.successResultOf(one)
        self.assertNoResult(two)
        self.miner.finish()
        self.successResultOf(two)

    def test_not_mining(self) -> None:
        """
        A stopped miner, or one in another mode, mines nothing.
        """
        self.miner.is_mining = False
        self.successResultOf(self.pool.add(legacy(0)))
        self.miner.is_mining, self.miner.mode = True, "manual"
        self.successResultOf(self.pool.add(legacy(0, key=KEYS[1])))
        self.assertEqual(self.miner.blocks, [])

    def test_synchronous_miner(self) -> None:
        """
        A miner that stores its block at once answers at once.
        """
        self.miner.synchronous = True
        tx = legacy(0)
        self.assertEqual(self.successResultOf(self.pool.add(tx)), tx.hash)
        self.assertEqual(len(self.pool), 0)

    def test_failed_block(self) -> None:
        """
        A block that fails is logged; the waiting add still answers and the transaction stays pending.
        """
        tx = legacy(0)
        adding = self.pool.add(tx)
        self.miner.running.pop(0).errback(RuntimeError("no block"))
        self.assertEqual(self.successResultOf(adding), tx.hash)
        self.assertEqual(self.pool.pending(), [tx])
        self.assertEqual(len(self.flushLoggedErrors(RuntimeError)), 1)


class AutoMiningFastLaneTests(PoolFixture, SynchronousTestCase):
    """
    Tests for the pool watched by an automining miner: a transaction sent
    to an empty pool is admitted and mined in one miner job.
    """

    def setUp(self) -> None:
        """
        A pool automining through a controllable miner, and an observer.
        """
        self.pool = self.make_pool()
        self.miner = RecordingMiner(self.pool, self.chain)
        self.pool.watch_for_miner(AutoMining(self.miner, self.pool))  # type: ignore[arg-type]
        self.seen: list[Transaction] = []
        self.pool.add_observer(self.seen.append)

    def test_mined_without_entering_the_pool(self) -> None:
        """
        An executable transaction is mined by one C{mine_alone} job; the
        observers still hear of it, and the pool and its store stay empty.
        """
        tx = legacy(0)
        adding = self.pool.add(tx)
        self.assertNoResult(adding)
        self.assertEqual(len(self.miner.running), 1)
        self.miner.finish()
        self.assertEqual(self.successResultOf(adding), tx.hash)
        self.assertEqual(self.miner.blocks, [(tx,)])
        self.assertEqual(self.seen, [tx])
        self.assertEqual(len(self.pool), 0)
        self.assertEqual(list(self.store.iterate(METADATA, POOL_KEY_PREFIX)), [])

    def test_observers_after_the_answer(self) -> None:
        """
        While the RPC edge holds the follow-ups, the observers of a
        transaction mined alone hear of it when the hold ends, after the
        pool's C{add} has fired with its hash.
        """
        follow_ups = FollowUps()
        self.pool = self.make_pool(follow_ups=follow_ups)
        self.miner = RecordingMiner(self.pool, self.chain)
        self.pool.watch_for_miner(AutoMining(self.miner, self.pool))  # type: ignore[arg-type]
        self.pool.add_observer(self.seen.append)
        tx = legacy(0)
        follow_ups.hold()
        adding = self.pool.add(tx)
        self.miner.finish()
        self.assertEqual((self.successResultOf(adding), self.seen), (tx.hash, []))
        follow_ups.release()
        self.assertEqual(self.seen, [tx])

    def test_mined_at_once_while_held(self) -> None:
        """
        A transaction the miner mines at once (its Deferred fired when
        C{mine_alone} returns) while the RPC edge holds the follow-ups: the
        pool's C{add} fires at once with its hash, nothing stays in flight,
        and its observers hear of it when the hold ends; one whose nonce is
        ahead (the miner answers its sender's account) is queued; without a
        hold, the observers hear of a mined one at once.
        """
        follow_ups = FollowUps()
        self.pool = self.make_pool(follow_ups=follow_ups)
        self.miner = RecordingMiner(self.pool, self.chain)
        self.pool.watch_for_miner(AutoMining(self.miner, self.pool))  # type: ignore[arg-type]
        self.pool.add_observer(self.seen.append)
        mine_alone = self.miner.mine_alone

        def at_once(transaction: Transaction, admission: Any) -> "Deferred[tuple[int, int] | None]":
            offered = mine_alone(transaction, admission)
            self.miner.finish()
            return offered

        self.miner.mine_alone = at_once  # type: ignore[method-assign]
        first, ahead = legacy(0), legacy(2)
        follow_ups.hold()
        self.assertEqual((self.successResultOf(self.pool.add(first)), self.seen), (first.hash, []))
        self.assertEqual(self.pool._in_flight, {})
        self.assertEqual(self.successResultOf(self.pool.add(ahead)), ahead.hash)
        self.assertEqual(self.pool.queued(), [ahead])
        follow_ups.release()
        self.assertEqual(self.seen, [first])
        self.pool.remove([ahead.hash])
        second = legacy(1)
        self.assertEqual(self.successResultOf(self.pool.add(second)), second.hash)
        self.assertEqual(self.seen, [first, second])

    def test_ahead_nonce_queued(self) -> None:
        """
        A transaction whose nonce is ahead of its sender's is not mined: it
        is queued as usual, and mined with the one that closes the gap.
        """
        later = legacy(1)
        adding = self.pool.add(later)
        self.miner.finish()
        self.assertEqual(self.successResultOf(adding), later.hash)
        self.assertEqual((self.miner.blocks, self.pool.queued(), self.seen), ([], [later], []))
        first = legacy(0)
        adding = self.pool.add(first)
        self.assertEqual(self.miner.blocks, [(first, later)])
        self.miner.finish()
        self.successResultOf(adding)
        self.assertEqual(len(self.pool), 0)

    def test_refusals(self) -> None:
        """
        A used nonce, a nonce beyond the sender's slots and a cost above the
        balance are refused with the reference's messages; nothing is mined.
        """
        self.pool.add(legacy(0))
        self.miner.finish()
        for tx, message in (
            (legacy(0, gas_price=7), "transaction nonce too low"),
            (legacy(1 + 16), "transaction nonce too high"),
            (legacy(1, value=FUNDS + 1), "insufficient funds"),
        ):
            adding = self.pool.add(tx)
            self.miner.finish()
            self.assertEqual(self.failureResultOf(adding, TransactionRejectedError).getErrorMessage(), message)
        self.assertEqual(len(self.miner.blocks), 1)
        self.assertEqual(len(self.pool), 0)

    def test_invalid_signature_refused(self) -> None:
        """
        The stateless checks run in the same job: a wrong chain id is refused.
        """
        tx = legacy(0, chain_id=5)
        adding = self.pool.add(tx)
        self.miner.finish()
        self.assertEqual(self.failureResultOf(adding, TransactionRejectedError).getErrorMessage(), "Invalid chainId: 5")

    def test_next_nonce_counts_in_flight(self) -> None:
        """
        While a transaction is being admitted and mined, its sender's next
        nonce is already past it.
        """
        adding = self.pool.add(legacy(0))
        self.assertEqual(self.successResultOf(self.pool.next_nonce(ADDRESSES[0])), 1)
        self.miner.finish()
        self.successResultOf(adding)
        self.assertEqual(self.successResultOf(self.pool.next_nonce(ADDRESSES[0])), 1)

    def test_busy_pool_takes_the_usual_path(self) -> None:
        """
        With transactions in the pool, a newcomer is admitted first and
        mined by C{mine}, with the others.
        """
        queued = legacy(2)
        self.pool.add(queued)
        self.miner.finish()
        other = legacy(0, key=KEYS[1])
        adding = self.pool.add(other)
        self.assertEqual(self.miner.blocks, [(other,)])
        self.miner.finish()
        self.successResultOf(adding)
        self.assertEqual(self.pool.queued(), [queued])


class RelayedTransactionTests(PoolFixture, SynchronousTestCase):
    """
    Transactions relayed by peers in C{auto} mode: no block of their own;
    mined after L{RELAYED_GRACE_SECONDS} if no peer's block brought them.
    """

    def setUp(self) -> None:
        """
        A pool automining through a controllable miner on a L{Clock}, and an observer.
        """
        self.clock = Clock()
        self.pool = self.make_pool()
        self.miner = RecordingMiner(self.pool, self.chain)
        self.automining = AutoMining(self.miner, self.pool, self.clock)  # type: ignore[arg-type]
        self.pool.watch_for_miner(self.automining)
        self.seen: list[Transaction] = []
        self.pool.add_observer(self.seen.append)

    def test_peer_block_brings_it(self) -> None:
        """
        A relayed transaction is admitted as pending, passed on to the
        observers (the other peers), and asks for no block; the block of
        the peer that mined it drops it from the pool, and nothing is mined
        when the grace ends.
        """
        tx = legacy(0)
        self.assertEqual(self.successResultOf(self.pool.add(tx, relayed=True)), tx.hash)
        self.assertEqual((self.miner.blocks, self.pool.pending(), self.seen), ([], [tx], [tx]))
        self.chain.adopt((tx,))
        self.assertEqual(len(self.pool), 0)
        self.clock.advance(RELAYED_GRACE_SECONDS)
        self.assertEqual(self.miner.blocks, [])

    def test_mined_after_the_grace(self) -> None:
        """
        Relayed transactions still pending when the grace ends are mined, in one block.
        """
        first, second = legacy(0), legacy(0, key=KEYS[1])
        self.successResultOf(self.pool.add(first, relayed=True))
        self.clock.advance(RELAYED_GRACE_SECONDS / 2)
        self.successResultOf(self.pool.add(second, relayed=True))
        self.clock.advance(RELAYED_GRACE_SECONDS / 2 - 0.01)
        self.assertEqual(self.miner.blocks, [])
        self.clock.advance(0.01)
        self.assertEqual(self.miner.blocks, [(first, second)])
        # A peer's block may still bring them before this block is built: then no (empty) block.
        self.assertEqual(self.miner.empty_wanted, [False])
        self.miner.finish()
        self.assertEqual(len(self.pool), 0)
        self.clock.advance(RELAYED_GRACE_SECONDS)
        self.assertEqual(len(self.miner.blocks), 1)

    def test_local_transaction_takes_them_along(self) -> None:
        """
        A client's transaction is mined at once, and its block takes the
        pending relayed ones along.
        """
        relayed, local = legacy(0), legacy(0, key=KEYS[1])
        self.successResultOf(self.pool.add(relayed, relayed=True))
        adding = self.pool.add(local)
        self.assertEqual(self.miner.blocks, [(relayed, local)])
        self.miner.finish()
        self.successResultOf(adding)
        self.clock.advance(RELAYED_GRACE_SECONDS)
        self.assertEqual(len(self.miner.blocks), 1)

    def test_not_automining(self) -> None:
        """
        In other modes (or stopped), relayed transactions just wait: no timer.
        """
        self.miner.mode = "manual"
        self.successResultOf(self.pool.add(legacy(0), relayed=True))
        self.assertEqual(self.clock.getDelayedCalls(), [])

    def test_stop_cancels_the_grace(self) -> None:
        """
        Stopping the automining (the miner stops it) cancels the grace's timer.
        """
        self.successResultOf(self.pool.add(legacy(0), relayed=True))
        self.assertEqual(len(self.clock.getDelayedCalls()), 1)
        self.automining.stop()
        self.assertEqual(self.clock.getDelayedCalls(), [])


class StaleCheckTests(PoolFixture, SynchronousTestCase):
    """
    A transaction checked against a head that a block then replaces.
    """

    def setUp(self) -> None:
        """
        A pool whose checks wait until the test runs them.
        """
        self.pool = self.make_pool()
        self.checks = QueuedThread()
        self.pool._run_in_thread = self.checks.run  # type: ignore[method-assign]

    def test_block_holding_it_arrived_during_the_check(self) -> None:
        """
        A block that holds the transaction, stored while its check ran
        against the state before it, makes the pool refuse it (nonce too
        low), as a check against the new head would.
        """
        tx = legacy(0)
        adding = self.pool.add(tx, relayed=True)
        self.chain.adopt((tx,))
        self.checks.flush()
        failure = self.failureResultOf(adding, TransactionRejectedError)
        self.assertEqual(failure.getErrorMessage(), "transaction nonce too low")
        self.assertEqual(len(self.pool), 0)

    def test_store_closed_after_stop(self) -> None:
        """
        A check still running when the node stops, which finds the store
        closed, ends as a refusal of the stopped pool, not as the store's
        error.
        """
        adding = self.pool.add(legacy(0), relayed=True)
        self.pool.stopService()
        self.store.close()
        self.checks.flush()
        failure = self.failureResultOf(adding, TransactionRejectedError)
        self.assertEqual(failure.getErrorMessage(), "the transaction pool has stopped")
        self.assertEqual(len(self.pool), 0)

    def test_store_error_while_running(self) -> None:
        """
        The same failure while the pool runs is not hidden: it is the store's error.
        """
        adding = self.pool.add(legacy(0), relayed=True)
        self.store.close()
        self.checks.flush()
        self.assertIsNone(self.failureResultOf(adding).check(TransactionRejectedError))

    def test_head_moved_without_it(self) -> None:
        """
        A block without the transaction, stored during its check, changes nothing: it is admitted.
        """
        tx = legacy(0)
        adding = self.pool.add(tx)
        self.chain.adopt((legacy(0, key=KEYS[1]),))
        self.checks.flush()
        self.assertEqual(self.successResultOf(adding), tx.hash)
        self.assertEqual(self.pool.pending(), [tx])


    def test_nonce_reached_during_the_check(self) -> None:
        """
        A block that mines the sender's previous transaction while the
        next one is checked against the state before it: the next one is
        checked again against the new head and admitted as pending, not
        queued behind a nonce the chain has already used.
        """
        first, second = legacy(0), legacy(1)
        adding = self.pool.add(second)
        self.chain.adopt((first,))
        self.checks.flush()
        self.assertEqual(self.successResultOf(adding), second.hash)
        self.assertEqual((self.pool.pending(), self.pool.queued()), ([second], []))


    def test_rechecks_are_bounded(self) -> None:
        """
        Under a stream of blocks (one stored during every read) the sender
        is read again at most L{MAX_RECHECKS} times, then the transaction
        is admitted with the last read.
        """
        tx = legacy(0)
        adding = self.pool.add(tx)
        runs = 0
        while self.checks.jobs:
            waiting, function, args = self.checks.jobs.pop(0)
            self.chain.adopt((legacy(runs, key=KEYS[1]),))
            waiting.callback(function(*args))
            runs += 1
        self.assertEqual(runs, 1 + MAX_RECHECKS)
        self.assertEqual(self.successResultOf(adding), tx.hash)


class TransactionPoolPropertyTests(PoolFixture, SynchronousTestCase):
    """
    Invariants of the pool under random streams of transactions.
    """

    def test_invariants(self) -> None:
        """
        Whatever arrives, each sender's pending transactions run consecutively
        from its state nonce, no sender exceeds its slots nor the pool its
        size, the indexes agree, and the store holds exactly the pool.
        """
        from hypothesis import given, settings
        from hypothesis import strategies as st

        arrivals = st.lists(
            st.tuples(st.integers(0, 2), st.integers(0, 6), st.integers(0, 4), st.integers(0, 3)),
            max_size=40,
        )

        @settings(max_examples=60, deadline=None)
        @given(arrivals, st.booleans())
        def check(stream: list[tuple[int, int, int, int]], mine: bool) -> None:
            pool = self.make_pool(account_slots=4, global_slots=7)
            for index, (who, nonce, price, value) in enumerate(stream):
                pool.add(legacy(nonce, key=KEYS[who], gas_price=price, value=value)).addErrback(
                    lambda failure: failure.trap(TransactionRejectedError)
                )
                if mine and index % 5 == 4:
                    self.chain.adopt(tuple(pool.pending()))
            pending, queued = pool.pending(), pool.queued()
            self.assertEqual(len(pending) + len(queued), len(pool))
            self.assertLessEqual(len(pool), 7)
            self.assertEqual({tx.hash for tx in pending + queued}, {tx.hash for tx in pool._by_hash.values()})
            for address in ADDRESSES:
                mine_pending = sorted(tx.nonce for tx in pending if tx.sender == address)
                mine_all = [tx for tx in pending + queued if tx.sender == address]
                self.assertLessEqual(len(mine_all), 4)
                if mine_pending:
                    start = self.successResultOf(pool.next_nonce(address)) - len(mine_pending)
                    self.assertEqual(mine_pending, list(range(start, start + len(mine_pending))))
            stored = {key[len(POOL_KEY_PREFIX):] for key, _ in self.store.iterate(METADATA, POOL_KEY_PREFIX)}
            self.assertEqual(stored, {tx.hash for tx in pending + queued})

        check()


class PoolBytesTests(PoolFixture, SynchronousTestCase):
    """
    The pool counts bytes beside slots (issue 26).
    """

    def sized(self, nonce: int, key: bytes = KEYS[0], gas_price: int = 0, size: int = 1000) -> Transaction:
        """
        A transaction carrying C{size} zero bytes of data.
        """
        return legacy(nonce, key, gas_price=gas_price, gas=21000 + 4 * size, value=0, data=b"\x00" * size)

    def test_bytes_at_the_limit_and_past_it(self) -> None:
        """
        Transactions fill the pool up to exactly its bytes; one byte more
        evicts the cheapest (a queued one first), or is refused when
        nothing pays less.
        """
        first, second = self.sized(0, KEYS[0], gas_price=2), self.sized(0, KEYS[1], gas_price=1)
        limit = len(first.encode()) + len(second.encode())
        pool = self.make_pool(global_bytes=limit)
        self.successResultOf(pool.add(first))
        self.successResultOf(pool.add(second))
        self.assertEqual(len(pool), 2)
        self.reject(self, pool, self.sized(0, KEYS[2], gas_price=1, size=1), "transaction pool is full")
        richer = self.sized(0, KEYS[2], gas_price=3, size=1)
        self.successResultOf(pool.add(richer))
        self.assertIsNone(pool.get(second.hash))
        self.assertIsNone(self.store.get(METADATA, POOL_KEY_PREFIX + second.hash))
        self.assertEqual(set(pool.pending()), {first, richer})

    def test_unpaid_transactions_of_empty_accounts(self) -> None:
        """
        Zero-price transactions from accounts that hold nothing (issue 26:
        256 such keys sent 4,096 transactions of 120 KB, which all stayed in
        memory, on disk and across restarts) take at most a sixteenth of
        the pool's bytes; beyond, they are refused, while a funded
        account's zero-price transaction still gets in.
        """
        pool = self.make_pool(global_bytes=64 * 1024)
        keys = [keccak256(b"unfunded %d" % n) for n in range(20)]
        accepted = []
        for key in keys:
            outcome = pool.add(self.sized(0, key))
            if outcome.called and isinstance(outcome.result, Failure):
                failure = self.failureResultOf(outcome, TransactionRejectedError)
                self.assertEqual(
                    failure.getErrorMessage(),
                    "transaction pool is full of transactions that pay nothing from accounts that hold nothing",
                )
            else:
                accepted.append(self.successResultOf(outcome))
        size = len(self.sized(0, keys[0]).encode())
        self.assertEqual(len(accepted), 64 * 1024 // 16 // size)
        self.assertLessEqual(sum(len(pool.get(tx_hash).encode()) for tx_hash in accepted), 64 * 1024 // 16)
        self.successResultOf(pool.add(self.sized(0, KEYS[0])))
        self.assertEqual(len(pool), len(accepted) + 1)

    def test_persisted_bytes_bounded(self) -> None:
        """
        A store holding more pooled bytes than the pool holds (written by a
        version that counted no bytes) is read only up to the bytes; the
        rest is deleted, not loaded.
        """
        pool = self.make_pool()
        transactions = [self.sized(nonce, size=3000) for nonce in range(6)]
        batch = self.store.batch()
        for transaction in transactions:
            batch.put(METADATA, pool_key(transaction.hash), transaction.encode())
        self.store.write(batch)
        size = len(transactions[0].encode())
        restarted = TransactionPool(self.chain, self.store, in_thread, global_bytes=3 * size)
        self.assertLessEqual(self.successResultOf(restarted.load()), 3)
        stored = [key for key, _ in self.store.iterate(METADATA, POOL_KEY_PREFIX)]
        self.assertLessEqual(len(stored), 3)
