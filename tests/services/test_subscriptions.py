"""
Tests for L{nodex.services.subscriptions}.
"""

from typing import Any

from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase
from zope.interface.verify import verifyObject

from nodex.chain.logs.search import LogEntry, LogFilter
from nodex.api.chain import ChainEvent, ImportResult
from nodex.api.errors import SubscriptionLimitError
from nodex.api.peers import SyncStatus
from nodex.api.subscriptions import ISubscriptionService, NewHead
from nodex.services.chain import ChainService
from nodex.services.subscriptions import (
    LOGS,
    NEW_HEADS,
    PENDING_TRANSACTIONS,
    SYNCING,
    SubscriptionService,
)
from nodex.structures.blocks import Block
from nodex.structures.logs import Log
from nodex.structures.receipts import Receipt
from tests.chain.logs.test_search import make_block
from tests.chain.test_processing import build_on, sample_rules, sample_store, transfer
from tests.chain.chainmaker import import_one
from tests.services.test_filters import EMITTER, OTHER, TOPIC, FakeChain, FakePool, SteppingClock, topic_logs


class Recorder:
    """
    A C{deliver} callable that keeps what it gets.
    """

    def __init__(self) -> None:
        """
        Nothing delivered yet.
        """
        self.items: list[Any] = []

    def __call__(self, item: Any) -> None:
        """
        Keep C{item}.
        """
        self.items.append(item)


def counter_bytes() -> Any:
    """
    A C{random_bytes} that draws 16-byte ids 1, 2, 3, ...
    """
    state = {"next": 0}

    def draw(size: int) -> bytes:
        """
        The next id.
        """
        state["next"] += 1
        return state["next"].to_bytes(size, "big")

    return draw


class SubscriptionServiceTests(SynchronousTestCase):
    """
    Tests for L{SubscriptionService} over a fake chain and pool.
    """

    def setUp(self) -> None:
        """
        A fake chain at block 0 and a fake pool, observed by the service.
        """
        genesis, _ = make_block(0, [])
        self.chain = FakeChain(genesis)
        self.pool = FakePool()
        self.service = SubscriptionService(self.chain, self.pool, random_bytes=counter_bytes())  # type: ignore[arg-type]

    def adopt(self, *blocks: tuple[Block, tuple[Receipt, ...]], abandoned: tuple[tuple[Block, tuple[Receipt, ...]], ...] = ()) -> None:
        """
        Publish a change adopting C{blocks} (and abandoning C{abandoned}).
        """
        self.chain.publish(
            ChainEvent(
                tuple(block for block, _ in blocks),
                tuple(block for block, _ in abandoned),
                tuple(receipts for _, receipts in blocks),
                tuple(receipts for _, receipts in abandoned),
            )
        )

    def test_interface(self) -> None:
        """
        The service provides L{ISubscriptionService}.
        """
        self.assertTrue(verifyObject(ISubscriptionService, self.service))

    def test_ids_are_random_16_bytes(self) -> None:
        """
        Ids are 16 bytes drawn from the random source; a drawn id already in
        use is drawn again.
        """
        draws = iter([b"\x01" * 16, b"\x01" * 16, b"\x02" * 16])
        service = SubscriptionService(self.chain, None, random_bytes=lambda size: next(draws))  # type: ignore[arg-type]
        self.assertEqual(service.subscribe(NEW_HEADS, Recorder()), b"\x01" * 16)
        self.assertEqual(service.subscribe(NEW_HEADS, Recorder()), b"\x02" * 16)
        default = SubscriptionService(self.chain, None)  # type: ignore[arg-type]
        first, second = default.subscribe(NEW_HEADS, Recorder()), default.subscribe(NEW_HEADS, Recorder())
        self.assertEqual((len(first), len(second)), (16, 16))
        self.assertNotEqual(first, second)

    def test_unknown_kind(self) -> None:
        """
        An unknown kind is refused.
        """
        self.assertRaises(ValueError, self.service.subscribe, "newBlocks", Recorder())

    def test_new_heads_in_order_with_total_difficulty(self) -> None:
        """
        Each adopted block goes to every newHeads subscription, oldest first,
        as one shared L{NewHead} carrying its total difficulty.
        """
        first, second = Recorder(), Recorder()
        self.service.subscribe(NEW_HEADS, first)
        self.service.subscribe(NEW_HEADS, second)
        one, two = make_block(1, []), make_block(2, [])
        self.adopt(one, two)
        self.assertEqual([head.block for head in first.items], [one[0], two[0]])
        # FakeChain reports total difficulty 1 for its head; each block adds 1.
        self.assertEqual([head.total_difficulty for head in first.items], [0, 1])
        self.assertIs(first.items[0], second.items[0])

    def test_unsubscribe(self) -> None:
        """
        An ended subscription gets nothing more; ending it twice says so.
        """
        recorder = Recorder()
        subscription = self.service.subscribe(NEW_HEADS, recorder)
        self.assertEqual(self.service.count(), 1)
        self.assertTrue(self.service.unsubscribe(subscription))
        self.assertFalse(self.service.unsubscribe(subscription))
        self.adopt(make_block(1, []))
        self.assertEqual((recorder.items, self.service.count()), ([], 0))

    def test_logs_filtered(self) -> None:
        """
        A logs subscription gets the logs its filter selects, in block order,
        with their place in the chain.
        """
        everything, topical, elsewhere = Recorder(), Recorder(), Recorder()
        self.service.subscribe(LOGS, everything)
        self.service.subscribe(LOGS, topical, log_filter=LogFilter(topics=((TOPIC,),)))
        self.service.subscribe(LOGS, elsewhere, log_filter=LogFilter(addresses=(OTHER[:20],)))  # type: ignore[arg-type]
        mixed = [[Log(EMITTER, (OTHER,), b"a"), Log(EMITTER, (TOPIC,), b"b")], [Log(EMITTER, (TOPIC,), b"c")]]
        block, receipts = make_block(1, mixed)
        self.adopt((block, receipts))
        self.assertEqual([entry.log.data for entry in everything.items], [b"a", b"b", b"c"])
        self.assertEqual([(entry.log_index, entry.transaction_index) for entry in topical.items], [(1, 0), (2, 1)])
        self.assertEqual(topical.items[0].block_hash, block.hash)
        self.assertFalse(any(entry.removed for entry in everything.items))
        self.assertEqual(elsewhere.items, [])

    def test_reorganisation_removes_then_adopts(self) -> None:
        """
        In a reorganisation the abandoned blocks' logs come first with
        C{removed} set, then the adopted blocks' heads and logs, in order.
        """
        events: list[Any] = []
        self.service.subscribe(LOGS, events.append)
        self.service.subscribe(NEW_HEADS, events.append)
        old = make_block(1, topic_logs(1))
        self.adopt(old)
        new1, new2 = make_block(1, topic_logs(11), salt=1), make_block(2, topic_logs(12), salt=1)
        events.clear()
        self.adopt(new1, new2, abandoned=(old,))
        shapes = [
            ("log", item.block_hash, item.removed) if isinstance(item, LogEntry) else ("head", item.block.hash)
            for item in events
        ]
        self.assertEqual(
            shapes,
            [
                ("log", old[0].hash, True),
                ("head", new1[0].hash),
                ("log", new1[0].hash, False),
                ("head", new2[0].hash),
                ("log", new2[0].hash, False),
            ],
        )

    def test_rewind_removes_logs(self) -> None:
        """
        A rewind (C{evm_revert}) revokes the deleted blocks' logs and
        announces no head.
        """
        events: list[Any] = []
        self.service.subscribe(LOGS, events.append)
        self.service.subscribe(NEW_HEADS, events.append)
        block, receipts = make_block(1, topic_logs(1))
        self.chain.publish(ChainEvent((), (block,), (), (receipts,), rewound=True))
        self.assertEqual([(entry.block_hash, entry.removed) for entry in events], [(block.hash, True)])

    def test_pending_transactions(self) -> None:
        """
        newPendingTransactions gets each transaction's hash, or the
        transaction itself when it asked for full transactions.
        """
        hashes, full = Recorder(), Recorder()
        self.service.subscribe(PENDING_TRANSACTIONS, hashes)
        self.service.subscribe(PENDING_TRANSACTIONS, full, full_transactions=True)
        transaction = transfer(0, 0)
        for observer in self.pool.observers:
            self.assertIsNone(observer(transaction))
        self.assertEqual((hashes.items, full.items), ([transaction.hash], [transaction]))

    def test_syncing(self) -> None:
        """
        A change of the sync status goes to the syncing subscriptions only.
        """
        syncing, heads = Recorder(), Recorder()
        self.service.subscribe(SYNCING, syncing)
        self.service.subscribe(NEW_HEADS, heads)
        status = SyncStatus(True, 0, 10, 100)
        self.service.sync_status_changed(status)
        self.assertEqual((syncing.items, heads.items), ([status], []))

    def test_node_wide_limit(self) -> None:
        """
        Past the node's limit a subscription is refused.
        """
        service = SubscriptionService(self.chain, None, max_subscriptions=2)  # type: ignore[arg-type]
        service.subscribe(NEW_HEADS, Recorder())
        service.subscribe(SYNCING, Recorder())
        self.assertRaises(SubscriptionLimitError, service.subscribe, LOGS, Recorder())

    def test_failing_deliver_is_logged(self) -> None:
        """
        A deliver callable that raises is logged; the others still get the head.
        """

        def broken(item: Any) -> None:
            """
            An edge with a bug.
            """
            raise RuntimeError("edge bug")

        recorder = Recorder()
        self.service.subscribe(NEW_HEADS, broken)
        self.service.subscribe(NEW_HEADS, recorder)
        self.adopt(make_block(1, []))
        self.assertEqual(len(recorder.items), 1)
        self.assertEqual(len(self.flushLoggedErrors(RuntimeError)), 1)


class SubscriptionServiceChainTests(SynchronousTestCase):
    """
    L{SubscriptionService} over the real L{ChainService}.
    """

    def test_heavier_side_chain(self) -> None:
        """
        Importing a heavier side chain announces its blocks in order, each
        readable through the chain service when it is announced, with the
        total difficulty the chain service stores for it.
        """
        clock = Clock()
        clock.advance(1000)
        store, genesis = sample_store()
        chain = ChainService(store, sample_rules(), clock)
        service = SubscriptionService(chain, None)
        seen: list[tuple[NewHead, Block | None, int | None]] = []

        def deliver(head: NewHead) -> None:
            """
            Read the announced block back through the chain service.
            """
            stored = self.successResultOf(chain.get_block_by_hash(head.block.hash))
            total = self.successResultOf(chain.get_total_difficulty(head.block.hash))
            seen.append((head, stored, total))

        service.subscribe(NEW_HEADS, deliver)
        a1 = build_on(store, genesis, [transfer(0, 0)], extra_data=b"a").block
        self.assertEqual(self.successResultOf(import_one(chain, a1)), ImportResult.IMPORTED_BEST)
        b1 = build_on(store, genesis, extra_data=b"b").block
        self.assertEqual(self.successResultOf(import_one(chain, b1)), ImportResult.IMPORTED_NOT_BEST)
        b2 = build_on(store, b1.header).block
        self.assertEqual(self.successResultOf(import_one(chain, b2)), ImportResult.IMPORTED_BEST)
        self.assertEqual([head.block.hash for head, _, _ in seen], [a1.hash, b1.hash, b2.hash])
        for head, stored, total in seen:
            self.assertEqual(stored, head.block)
            self.assertEqual(total, head.total_difficulty)


class ManySubscriptionsTests(SynchronousTestCase):
    """
    Many subscriptions and long blocks (issue 26).
    """

    def test_thousand_log_subscriptions_share_entries(self) -> None:
        """
        A thousand match-all C{logs} subscriptions and a block of 923 logs:
        each gets all 923 in order, and every subscriber gets the same
        entry object for a log (built once, encoded once by the edge), one
        subscriber after the other.
        """
        genesis, _ = make_block(0, [])
        chain = FakeChain(genesis)
        service = SubscriptionService(chain, None)  # type: ignore[arg-type]
        delivered: list[tuple[int, Any]] = []
        for member in range(1000):
            service.subscribe(LOGS, lambda item, member=member: delivered.append((member, item)))
        block, receipts = make_block(1, [[Log(EMITTER, (TOPIC,), n.to_bytes(2, "big"))] for n in range(923)])
        chain.publish(ChainEvent((block,), adopted_receipts=(receipts,)))
        self.assertEqual(len(delivered), 923_000)
        by_member: dict[int, list[Any]] = {}
        for member, item in delivered:
            by_member.setdefault(member, []).append(item)
        first = by_member[0]
        self.assertEqual([int.from_bytes(entry.log.data, "big") for entry in first], list(range(923)))
        self.assertTrue(all(by_member[member][n] is first[n] for member in (1, 500, 999) for n in (0, 461, 922)))
        # One log to all its subscribers, then the next.
        self.assertEqual({item for _, item in delivered[:1000]}, {first[0]})

    def test_deliveries_in_slices_keep_order(self) -> None:
        """
        Deliveries that take longer than a slice of the reactor's time go
        on at its next turns, in the order of the changes: each block's
        head, then its logs, then the next block's.
        """
        genesis, _ = make_block(0, [])
        chain = FakeChain(genesis)
        clock = SteppingClock(0.001)
        service = SubscriptionService(chain, None, clock=clock)  # type: ignore[arg-type]
        events: list[Any] = []
        for _ in range(20):
            service.subscribe(LOGS, events.append)
        service.subscribe(NEW_HEADS, events.append)
        blocks = []
        for number in (1, 2):
            block, receipts = make_block(number, [[Log(EMITTER, (TOPIC,), bytes([number, n]))] for n in range(50)])
            chain.publish(ChainEvent((block,), adopted_receipts=(receipts,)))
            blocks.append(block)
        self.assertLess(len(events), 2 * (1 + 50 * 20))
        while service._runner.pending:
            clock.advance(0)
        self.assertEqual(len(events), 2 * (1 + 50 * 20))
        heads = [index for index, item in enumerate(events) if isinstance(item, NewHead)]
        self.assertEqual(heads, [0, 1 + 50 * 20])
        self.assertEqual([events[index].block for index in heads], blocks)
        self.assertEqual([item.log.data[1] for item in events[1:21]], [0] * 20)
