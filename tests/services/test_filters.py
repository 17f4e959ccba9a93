"""
Tests for L{nodex.services.filters}.
"""

from collections.abc import Callable
from dataclasses import replace

from twisted.internet.defer import fail, maybeDeferred
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase
from zope.interface.verify import verifyObject

from nodex.chain.genesis import GenesisAllocation, initialize_chain
from nodex.chain.logs.search import (
    BlockRangeTooLargeError,
    FilterNotFoundError,
    LogFilter,
    LogLimitError,
    LogQueryError,
    TooManyLogsError,
    warm_block_log_cache,
)
from nodex.db.memory import MemoryStore
from nodex.api.chain import ChainEvent, ChainHead
from nodex.api.errors import BlockNotFoundError
from nodex.api.filters import IFilterService
from nodex.primitives import Address, Hash32
from nodex.services.chain import ChainService
from nodex.services.filters import FILTER_EXPIRY, FilterOverflowError, FilterService
from nodex.structures.blocks import Block
from nodex.structures.headers import Header
from nodex.structures.logs import Log
from nodex.structures.receipts import Receipt
from nodex.structures.transactions import LegacyTransaction, sign_transaction
from tests.chain.test_calls import runtime, selector, word
from tests.chain.logs.test_search import make_block, store_block
from tests.chain.test_processing import KEYS, build_on, sample_genesis, sample_rules
from nodex.api.chain import ImportResult
from tests.chain.chainmaker import import_one

TOPIC = Hash32(b"\x0a" * 32)
OTHER = Hash32(b"\x0b" * 32)
EMITTER = Address(b"\x01" * 20)


class FakeChain:
    """
    The parts of L{nodex.api.chain.IChainService} the filter service uses:
    the head and the observers.
    """

    def __init__(self, head: Block) -> None:
        """
        Start with C{head} as the head.
        """
        self.head = ChainHead(head.header, 1)
        self.observers: list[Callable[[ChainEvent], None]] = []

    def add_observer(self, observer: Callable[[ChainEvent], None]) -> None:
        """
        Remember an observer.
        """
        self.observers.append(observer)

    def publish(self, event: ChainEvent) -> None:
        """
        Move the head to the event's last adopted block and tell the observers.
        """
        if event.adopted:
            self.head = ChainHead(event.adopted[-1].header, 1)
        for observer in self.observers:
            observer(event)


class FakePool:
    """
    The observer registration of L{nodex.api.pool.ITransactionPool}.
    """

    def __init__(self) -> None:
        """
        No observers yet.
        """
        self.observers: list[Callable[[object], None]] = []

    def add_observer(self, observer: Callable[[object], None]) -> None:
        """
        Remember an observer.
        """
        self.observers.append(observer)


def topic_logs(number: int) -> list[list[Log]]:
    """
    One transaction with one log of TOPIC carrying the block number.
    """
    return [[Log(EMITTER, (TOPIC,), number.to_bytes(2, "big"))]]


class FilterServiceTests(SynchronousTestCase):
    """
    Tests for L{FilterService}.
    """

    def setUp(self) -> None:
        """
        A stored chain of 10 blocks with a TOPIC log each, a fake chain and pool.
        """
        self.store = MemoryStore()
        self.blocks: list[Block] = []
        for number in range(10):
            block, receipts = make_block(number, topic_logs(number))
            store_block(self.store, block, receipts)
            self.blocks.append(block)
        self.chain = FakeChain(self.blocks[-1])
        self.pool = FakePool()
        self.clock = Clock()
        self.ids = iter([5, 5, 7, 9, 11, 13, 15])
        self.service = FilterService(
            self.store, self.chain, self.pool, maybeDeferred, self.clock,  # type: ignore[arg-type]
            max_block_range=100, max_logs=50, random_bits=lambda bits: next(self.ids),
        )

    def adopt(self, number: int, logs: list[list[Log]], salt: int = 0) -> tuple[Block, tuple[Receipt, ...]]:
        """
        Store and publish a new canonical block.
        """
        block, receipts = make_block(number, logs, salt=salt)
        store_block(self.store, block, receipts)
        self.chain.publish(ChainEvent((block,), adopted_receipts=(receipts,)))
        return block, receipts

    def test_interface(self) -> None:
        """
        The service provides L{IFilterService}.
        """
        self.assertTrue(verifyObject(IFilterService, self.service))

    def test_warms_its_cache_at_start(self) -> None:
        """
        The service walks the newest stored blocks with logs into its cache
        in its reader pool when it starts (not when it is made: the store
        may not be open yet); a failure there is logged.
        """
        calls: list[tuple[object, ...]] = []

        def record(function: Callable[..., object], *args: object) -> object:
            """
            Remember what runs in the pool, and run it.
            """
            calls.append((function, *args))
            return maybeDeferred(function, *args)

        service = FilterService(self.store, self.chain, None, record, self.clock)  # type: ignore[arg-type]
        self.assertEqual(calls, [])
        service.startService()
        self.assertEqual(len(service._cache), 10)
        self.assertEqual(calls[0][:3], (warm_block_log_cache, self.store, 9))

        def failing(function: Callable[..., object], *args: object) -> object:
            """
            Fail whatever runs in the pool.
            """
            return fail(RuntimeError("no pool"))

        FilterService(self.store, self.chain, None, failing, self.clock).startService()  # type: ignore[arg-type]
        self.assertEqual(len(self.flushLoggedErrors(RuntimeError)), 1)

    def test_get_logs_range(self) -> None:
        """
        C{get_logs} searches the range; open ends are the head.
        """
        entries = self.successResultOf(self.service.get_logs(3, 5, LogFilter(topics=((TOPIC,),))))
        self.assertEqual([entry.block_number for entry in entries], [3, 4, 5])
        entries = self.successResultOf(self.service.get_logs(None, None, LogFilter()))
        self.assertEqual([entry.block_number for entry in entries], [9])
        entries = self.successResultOf(self.service.get_logs(8, 1000, LogFilter()))
        self.assertEqual([entry.block_number for entry in entries], [8, 9])
        self.assertEqual(self.successResultOf(self.service.get_logs(50, 60, LogFilter())), [])
        self.assertEqual(self.successResultOf(self.service.get_logs(10, None, LogFilter())), [])

    def test_get_logs_refusals(self) -> None:
        """
        Reversed ranges, oversized ranges and too many logs are refused.
        """
        failure = self.failureResultOf(self.service.get_logs(5, 3, LogFilter()), LogQueryError)
        self.assertIn("fromBlock 5 is greater than toBlock 3", str(failure.value))
        for number in range(10, 200):
            block, receipts = make_block(number, topic_logs(number))
            store_block(self.store, block, receipts)
        self.chain.head = ChainHead(block.header, 1)
        failure = self.failureResultOf(self.service.get_logs(0, 101, LogFilter()), BlockRangeTooLargeError)
        self.assertEqual(str(failure.value), "Cannot query more than 100 blocks at once")
        self.failureResultOf(self.service.get_logs(0, 100, LogFilter()), TooManyLogsError)

    def test_search_time_limit(self) -> None:
        """
        A search still running at the time limit gives up with -32011's error.
        """
        from nodex.chain.calls import CallTimeoutError

        service = FilterService(self.store, self.chain, None, self.slow, self.clock, time_limit=5)  # type: ignore[arg-type]
        self.failureResultOf(service.get_logs(0, 9, LogFilter()), CallTimeoutError)

    def slow(self, function: Callable[..., object], *args: object) -> object:
        """
        Run C{function} as if it started after the clock passed every deadline.
        """
        self.clock.advance(10)
        return maybeDeferred(function, *args)

    def test_block_hash(self) -> None:
        """
        C{get_block_logs} reads one block; an unknown hash is an error.
        """
        entries = self.successResultOf(self.service.get_block_logs(self.blocks[4].hash, LogFilter()))
        self.assertEqual([entry.block_number for entry in entries], [4])
        self.failureResultOf(self.service.get_block_logs(b"\x01" * 32, LogFilter()), BlockNotFoundError)

    def test_ids_are_random_and_unique(self) -> None:
        """
        Ids come from the random source; a repeated draw is drawn again.
        """
        self.assertEqual(self.service.new_block_filter(), 5)
        self.assertEqual(self.service.new_block_filter(), 7)

    def test_real_ids_are_large(self) -> None:
        """
        Without an injected source, ids are random 128-bit numbers.
        """
        service = FilterService(self.store, self.chain, None, maybeDeferred, self.clock)  # type: ignore[arg-type]
        ids = {service.new_block_filter() for _ in range(20)}
        self.assertEqual(len(ids), 20)
        self.assertTrue(all(0 < filter_id < 2**128 for filter_id in ids))
        self.assertTrue(any(filter_id > 2**64 for filter_id in ids))

    def test_log_filter_accumulates(self) -> None:
        """
        A log filter gathers the logs of every new block until polled, then starts afresh.
        """
        filter_id = self.service.new_log_filter(None, None, LogFilter(topics=((TOPIC,),)))
        self.assertEqual(self.service.get_filter_changes(filter_id), [])
        self.adopt(10, topic_logs(10))
        self.adopt(11, [[Log(EMITTER, (OTHER,), b"")]])
        self.adopt(12, topic_logs(12))
        changes = self.service.get_filter_changes(filter_id)
        self.assertEqual([entry.block_number for entry in changes], [10, 12])
        self.assertEqual(self.service.get_filter_changes(filter_id), [])

    def test_log_filter_range(self) -> None:
        """
        A live filter with fixed bounds takes only the blocks inside them.
        """
        filter_id = self.service.new_log_filter(11, 12, LogFilter())
        for number in (10, 11, 12, 13):
            self.adopt(number, topic_logs(number))
        self.assertEqual([entry.block_number for entry in self.service.get_filter_changes(filter_id)], [11, 12])
        self.assertRaises(LogQueryError, self.service.new_log_filter, 5, 4, LogFilter())

    def test_removed_logs(self) -> None:
        """
        After a reorganisation the abandoned block's logs come again with C{removed}.
        """
        filter_id = self.service.new_log_filter(None, None, LogFilter())
        old, old_receipts = self.adopt(10, topic_logs(10))
        new, new_receipts = make_block(10, [[Log(EMITTER, (OTHER,), b"new")]], salt=1)
        self.chain.publish(ChainEvent((new,), (old,), (new_receipts,), (old_receipts,)))
        changes = self.service.get_filter_changes(filter_id)
        self.assertEqual([(entry.block_hash, entry.removed) for entry in changes],
                         [(old.hash, False), (old.hash, True), (new.hash, False)])

    def test_block_filter(self) -> None:
        """
        A block filter gathers the hashes of adopted blocks; its logs are every hash since install.
        """
        filter_id = self.service.new_block_filter()
        first, _ = self.adopt(10, [])
        second, _ = self.adopt(11, [])
        self.assertEqual(self.service.get_filter_changes(filter_id), [first.hash, second.hash])
        self.assertEqual(self.service.get_filter_changes(filter_id), [])
        self.assertEqual(self.successResultOf(self.service.get_filter_logs(filter_id)), [first.hash, second.hash])

    def test_pending_filter(self) -> None:
        """
        A pending-transaction filter gathers the hashes the pool announces.
        """
        filter_id = self.service.new_pending_transaction_filter()
        transaction = LegacyTransaction(nonce=1, gas_price=1, gas=21000, to=b"\x02" * 20, value=0, data=b"", v=27, r=1, s=1)
        for observer in self.pool.observers:
            observer(transaction)
        self.assertEqual(self.service.get_filter_changes(filter_id), [transaction.hash])

    def test_filter_logs(self) -> None:
        """
        C{get_filter_logs} of a log filter searches its range now.
        """
        filter_id = self.service.new_log_filter(2, 4, LogFilter())
        entries = self.successResultOf(self.service.get_filter_logs(filter_id))
        self.assertEqual([entry.block_number for entry in entries], [2, 3, 4])

    def test_expiry(self) -> None:
        """
        A filter polled within five minutes lives on; five minutes without
        a poll and it is gone.
        """
        filter_id = self.service.new_block_filter()
        self.clock.advance(FILTER_EXPIRY - 1)
        self.service.get_filter_changes(filter_id)
        self.clock.advance(FILTER_EXPIRY - 1)
        self.service.get_filter_changes(filter_id)
        self.clock.advance(FILTER_EXPIRY)
        self.assertRaises(FilterNotFoundError, self.service.get_filter_changes, filter_id)
        self.failureResultOf(self.service.get_filter_logs(filter_id), FilterNotFoundError)

    def test_filter_limit(self) -> None:
        """
        Installing beyond the limit is refused until a filter goes.
        """
        from nodex.services import filters as module

        self.patch(module, "MAX_FILTERS", 2)
        service = FilterService(self.store, self.chain, None, maybeDeferred, self.clock)  # type: ignore[arg-type]
        first = service.new_block_filter()
        service.new_pending_transaction_filter()
        error = self.assertRaises(LogLimitError, service.new_log_filter, None, None, LogFilter())
        self.assertIn("too many filters", str(error))
        service.uninstall_filter(first)
        service.new_block_filter()

    def test_uninstall(self) -> None:
        """
        Uninstalling answers true once, then false; the id is then unknown.
        """
        filter_id = self.service.new_block_filter()
        self.assertTrue(self.service.uninstall_filter(filter_id))
        self.assertFalse(self.service.uninstall_filter(filter_id))
        error = self.assertRaises(FilterNotFoundError, self.service.get_filter_changes, filter_id)
        self.assertEqual(str(error), "filter not found")


EVENTS = Address(b"\xe0" * 20)


class RealChainTests(SynchronousTestCase):
    """
    The filter service over the real L{nodex.services.chain.ChainService}:
    its events and its log index (written by the chain's import batches)
    give the same answers as the fake's.
    """

    def setUp(self) -> None:
        """
        A chain whose genesis holds the Events contract, with a filter service on it.
        """
        spec = sample_genesis()
        spec = replace(spec, alloc={**spec.alloc, EVENTS: GenesisAllocation(0, code=runtime("Events"))})
        self.store = MemoryStore()
        self.genesis = initialize_chain(self.store, "regtest", spec)
        self.clock = Clock()
        self.clock.advance(1000)
        self.chain = ChainService(self.store, sample_rules(), self.clock)
        self.service = FilterService(self.store, self.chain, None, maybeDeferred, self.clock)

    def emit(self, key: int, nonce: int, amount: int) -> LegacyTransaction:
        """
        A signed call of C{emitOneIndexed(amount)} on the Events contract.
        """
        unsigned = LegacyTransaction(
            nonce=nonce, gas_price=1, gas=100_000, to=EVENTS, value=0, data=selector("emitOneIndexed(uint256)") + word(amount)
        )
        return sign_transaction(unsigned, KEYS[key], 33)  # type: ignore[return-value]

    def build(self, parent: Header, transactions: list[LegacyTransaction], extra: bytes) -> Block:
        """
        A sealed block on C{parent}, built against the store.
        """
        return build_on(self.store, parent, transactions, rules=sample_rules(), extra_data=extra).block

    def amounts(self, entries: list[object]) -> list[tuple[int, bool]]:
        """
        The amounts (the log data) and removed flags of log entries.
        """
        return [(int.from_bytes(entry.log.data, "big"), entry.removed) for entry in entries]  # type: ignore[attr-defined]

    def test_reorganisation(self) -> None:
        """
        A heavier side chain makes the filter deliver the abandoned log with
        removed set, then the adopted ones; searches see only the new chain.
        """
        log_filter = self.service.new_log_filter(None, None, LogFilter(addresses=(EVENTS,)))
        a1 = self.build(self.genesis, [self.emit(0, 0, 7)], b"a")
        self.assertEqual(self.successResultOf(import_one(self.chain, a1)), ImportResult.IMPORTED_BEST)
        self.assertEqual(self.amounts(self.service.get_filter_changes(log_filter)), [(7, False)])
        b1 = self.build(self.genesis, [self.emit(1, 0, 8)], b"b")
        self.assertEqual(self.successResultOf(import_one(self.chain, b1)), ImportResult.IMPORTED_NOT_BEST)
        b2 = self.build(b1.header, [self.emit(1, 1, 9)], b"b")
        self.assertEqual(self.successResultOf(import_one(self.chain, b2)), ImportResult.IMPORTED_BEST)
        changes = self.service.get_filter_changes(log_filter)
        self.assertEqual(self.amounts(changes), [(7, True), (8, False), (9, False)])
        self.assertEqual(changes[0].block_hash, a1.hash)
        found = self.successResultOf(self.service.get_logs(0, None, LogFilter(addresses=(EVENTS,))))
        self.assertEqual(self.amounts(found), [(8, False), (9, False)])
        self.assertEqual([entry.transaction_hash for entry in found], [b1.transactions[0].hash, b2.transactions[0].hash])
        old = self.successResultOf(self.service.get_block_logs(a1.hash, LogFilter()))
        self.assertEqual(self.amounts(old), [(7, False)])


class SteppingClock(Clock):
    """
    A clock that moves on by C{step} seconds at every reading, as if each
    step of work took that long.
    """

    def __init__(self, step: float) -> None:
        super().__init__()
        self.step = step

    def seconds(self) -> float:
        self.rightNow += self.step
        return self.rightNow


class FilterBoundsTests(SynchronousTestCase):
    """
    The bounds of the filters (issue 26): shared work, unread changes,
    clients' quotas, expiry, the reactor's time.
    """

    def setUp(self) -> None:
        """
        A chain of one stored block and a filter service on it.
        """
        self.store = MemoryStore()
        block, receipts = make_block(0, [])
        store_block(self.store, block, receipts)
        self.chain = FakeChain(block)
        self.pool = FakePool()
        self.clock = Clock()
        self.service = self.make_service(self.clock)

    def make_service(self, clock: Clock, **options: object) -> FilterService:
        """
        A filter service over the test chain.
        """
        return FilterService(self.store, self.chain, self.pool, maybeDeferred, clock, **options)  # type: ignore[arg-type]

    def adopt(self, number: int, logs: list[list[Log]]) -> Block:
        """
        Store and publish a new canonical block.
        """
        block, receipts = make_block(number, logs)
        store_block(self.store, block, receipts)
        self.chain.publish(ChainEvent((block,), adopted_receipts=(receipts,)))
        return block

    def test_thousand_filters_share_entries(self) -> None:
        """
        A thousand match-all filters and a block of 923 logs (issue 26: each
        filter built its own 923 entries on the reactor, a six-second stall
        and 155 MB): every filter gets all 923, and they are the same 923
        entry objects, built once.
        """
        filters = [self.service.new_log_filter(None, None, LogFilter()) for _ in range(1000)]
        self.adopt(1, [[Log(EMITTER, (TOPIC,), n.to_bytes(2, "big"))] for n in range(923)])
        first = self.service.get_filter_changes(filters[0])
        self.assertEqual([int.from_bytes(entry.log.data, "big") for entry in first], list(range(923)))
        for filter_id in filters[1:]:
            changes = self.service.get_filter_changes(filter_id)
            self.assertEqual(len(changes), 923)
            self.assertTrue(all(mine is theirs for mine, theirs in zip(changes, first)))

    def test_unread_changes_bounded(self) -> None:
        """
        A log filter may hold L{MAX_PENDING_CHANGES} unread logs; one more
        and it is removed: its next poll says why (once), later ones that
        it is not found.  A filter polled in time keeps going.
        """
        from nodex.services import filters as module

        self.patch(module, "MAX_PENDING_CHANGES", 4)
        slow = self.service.new_log_filter(None, None, LogFilter())
        steady = self.service.new_log_filter(None, None, LogFilter())
        self.adopt(1, topic_logs(1) * 2)
        self.adopt(2, topic_logs(2) * 2)
        self.assertEqual(len(self.service.get_filter_changes(steady)), 4)
        self.assertEqual(self.service.count(), 2)
        self.adopt(3, topic_logs(3))
        self.assertEqual(self.service.count(), 1)
        error = self.assertRaises(FilterOverflowError, self.service.get_filter_changes, slow)
        self.assertEqual(
            str(error),
            f"filter 0x{slow:x} was removed: more than 4 changes waited unread in it; "
            "install a new filter, and read the blocks since its last poll with eth_getLogs",
        )
        self.assertIsInstance(error, FilterNotFoundError)
        error = self.assertRaises(FilterNotFoundError, self.service.get_filter_changes, slow)
        self.assertEqual(str(error), "filter not found")
        self.assertEqual(len(self.service.get_filter_changes(steady)), 1)

    def test_hash_filters_bounded(self) -> None:
        """
        A block filter reads the one feed of block hashes, which keeps the
        latest L{MAX_HISTORY}: a filter that leaves exactly that many unread
        gets them all; one more and it is removed, as a log filter is.
        """
        from nodex.services import filters as module

        self.patch(module, "MAX_HISTORY", 3)
        service = self.make_service(self.clock)
        at_limit, past_limit = service.new_block_filter(), service.new_block_filter()
        blocks = [self.adopt(number, []) for number in (1, 2, 3)]
        self.assertEqual(service.get_filter_changes(at_limit), [block.hash for block in blocks])
        self.adopt(4, [])
        self.assertRaises(FilterOverflowError, service.get_filter_changes, past_limit)
        self.assertEqual(len(service.get_filter_changes(at_limit)), 1)
        self.assertEqual(len(self.successResultOf(service.get_filter_logs(at_limit))), 3)

    def test_filter_logs_does_not_renew(self) -> None:
        """
        C{eth_getFilterLogs} reads a filter without restarting its expiry
        (issue 26: it kept an unread filter alive for ever); a poll of its
        changes does.
        """
        read = self.service.new_log_filter(None, None, LogFilter())
        polled = self.service.new_log_filter(None, None, LogFilter())
        self.clock.advance(FILTER_EXPIRY - 1)
        self.successResultOf(self.service.get_filter_logs(read))
        self.service.get_filter_changes(polled)
        self.clock.advance(1)
        self.failureResultOf(self.service.get_filter_logs(read), FilterNotFoundError)
        self.clock.advance(FILTER_EXPIRY - 2)
        self.successResultOf(self.service.get_filter_logs(polled))
        self.service.get_filter_changes(polled)

    def test_quota_per_client(self) -> None:
        """
        Each client keeps at most its quota of filters (issue 26: one
        client could take the whole node's 10,000): at the quota it is
        refused, others are not; a filter uninstalled or expired gives its
        place back.  Filters without a client count only in the total.
        """
        service = self.make_service(self.clock, max_filters_per_client=2)
        first = service.new_log_filter(None, None, LogFilter(), owner="client a")
        service.new_block_filter(owner="client a")
        error = self.assertRaises(LogLimitError, service.new_pending_transaction_filter, owner="client a")
        self.assertEqual(
            str(error), "this client has installed its limit of 2 filters; uninstall some or let them expire"
        )
        service.new_block_filter(owner="client b")
        for _ in range(3):
            service.new_block_filter()
        service.uninstall_filter(first)
        service.new_block_filter(owner="client a")
        self.assertRaises(LogLimitError, service.new_block_filter, owner="client a")
        self.clock.advance(FILTER_EXPIRY)
        service.new_block_filter(owner="client a")
        service.new_block_filter(owner="client a")

    def test_delivery_in_slices(self) -> None:
        """
        When delivering a block's logs takes longer than a slice of the
        reactor's time, the rest is delivered at the next turns of the
        reactor, in order: a poll meanwhile gets what has come so far, the
        next poll the rest.
        """
        clock = SteppingClock(0.001)
        service = self.make_service(clock)
        filters = [service.new_log_filter(None, None, LogFilter(topics=((Hash32(n.to_bytes(32, "big")),),)))
                   for n in range(300)]
        watcher = service.new_log_filter(None, None, LogFilter())
        logs = [[Log(EMITTER, (Hash32(n.to_bytes(32, "big")),), n.to_bytes(2, "big"))] for n in range(300)]
        self.adopt(1, logs)
        self.adopt(2, [[Log(EMITTER, (TOPIC,), b"\xff\xff")]])
        self.assertTrue(service._runner.pending)
        received = service.get_filter_changes(watcher)
        self.assertLess(len(received), 301)
        while service._runner.pending:
            clock.advance(0)
        received += service.get_filter_changes(watcher)
        self.assertEqual([int.from_bytes(entry.log.data, "big") for entry in received], [*range(300), 0xFFFF])
        self.assertEqual([len(service.get_filter_changes(filter_id)) for filter_id in filters], [1] * 300)
