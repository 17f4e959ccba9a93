"""
Tests for L{nodex.services.pending}: the kept pending block, and that each
change the block depends on gives a fresh one.
"""

from dataclasses import replace
from types import SimpleNamespace
from typing import Any

from twisted.internet.defer import Deferred, succeed
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from nodex.chain.rules import ChainRules
from nodex.services.blocktime import BlockClock
from nodex.services.chain import ChainService
from nodex.services.pending import PendingBlock, PendingBlocks
from nodex.services.sideblocks import SideBlocks
from nodex.structures.blocks import Block
from nodex.structures.headers import Header
from nodex.structures.transactions import Transaction
from tests.chain.test_processing import COINBASE, sample_rules, sample_store, transfer
from tests.services.test_miner import FakePool, make_miner


class FakeReads:
    """
    Builds a pending block with transactions: an empty block on the parent
    at the given time, the candidates' hashes recorded.
    """

    def __init__(self) -> None:
        self.built: list[tuple[bytes, ...]] = []

    def thd_build(
        self, parent: Header, candidates: list[Transaction], timestamp: int, side: Any, coinbase: bytes, rules: ChainRules
    ) -> Any:
        """
        Record the build; give a block and an outcome without state.
        """
        self.built.append(tuple(tx.hash for tx in candidates))
        header = replace(parent, number=parent.number + 1, timestamp=timestamp, parent_hash=parent.hash)
        outcome = SimpleNamespace(nodes={}, code={}, receipts=())
        return SimpleNamespace(block=Block(header, tuple(candidates), ()), outcome=outcome)


class PendingBlocksTests(SynchronousTestCase):
    """
    Tests for L{PendingBlocks}.
    """

    def setUp(self) -> None:
        """
        A chain at genesis, a clock at 1000, an empty pool, no side blocks.
        """
        self.clock = Clock()
        self.clock.advance(1000)
        self.store, self.genesis = sample_store()
        self.chain = ChainService(self.store, replace(sample_rules(), max_seconds_in_future=None), self.clock)
        self.pool = FakePool()
        self.block_clock = BlockClock(self.clock, self.chain.rules)
        self.reads = FakeReads()
        self.side = SideBlocks(self.chain)
        self.miner = make_miner(self.chain, COINBASE, "manual", self.clock, self.pool)
        self.pending = PendingBlocks(
            self.chain, self.pool, self.miner, self.block_clock, self.reads,
            lambda f, *args: succeed(f(*args)), lambda nodes, code: None, self.side,
        )

    def block(self) -> PendingBlock:
        """
        The pending block now.
        """
        result: PendingBlock = self.successResultOf(self.pending.block())
        return result

    def test_kept(self) -> None:
        """
        With nothing changed, the same block object answers again, with or
        without pending transactions (one build for the latter).
        """
        first = self.block()
        self.assertIs(self.block(), first)
        self.assertEqual((first.header.number, first.header.timestamp), (1, 1000))
        self.pool.transactions.append(transfer(0, 0))
        second = self.block()
        self.assertIsNot(second, first)
        self.assertIs(self.block(), second)
        self.assertEqual(len(self.reads.built), 1)

    def test_new_transaction(self) -> None:
        """
        A transaction entering an empty pool gives a block built with it;
        its leaving gives an empty block again.
        """
        empty = self.block()
        self.pool.transactions.append(transfer(0, 0))
        full = self.block()
        self.assertEqual(full.block.transactions, (transfer(0, 0),))
        self.pool.transactions.append(transfer(0, 1))
        self.assertEqual(len(self.block().block.transactions), 2)
        self.pool.clear()
        again = self.block()
        self.assertEqual(again.block.transactions, ())
        self.assertEqual(again.header, empty.header)

    def test_new_head(self) -> None:
        """
        A new head gives a block on it; a rewind gives one on the older head.
        """
        self.assertEqual(self.block().header.number, 1)
        self.successResultOf(self.miner.mine())
        self.assertEqual(self.block().header.number, 2)
        self.successResultOf(self.chain.rewind(0))
        self.assertEqual(self.block().header.number, 1)

    def test_time(self) -> None:
        """
        The clock's next second, an offset (C{evm_increaseTime}) and a set
        time (C{evm_setNextBlockTimestamp}) each give a block of that time.
        """
        self.assertEqual(self.block().header.timestamp, 1000)
        self.clock.advance(0.5)
        self.assertEqual(self.block().header.timestamp, 1000)
        self.clock.advance(0.5)
        self.assertEqual(self.block().header.timestamp, 1001)
        self.block_clock.increase(10)
        self.assertEqual(self.block().header.timestamp, 1011)
        self.block_clock.set_next(5000)
        self.assertEqual(self.block().header.timestamp, 5010)
        self.block_clock.consume()
        self.assertEqual(self.block().header.timestamp, 1001)

    def test_coinbase(self) -> None:
        """
        A new coinbase gives a block crediting it.
        """
        self.block()
        self.miner.coinbase = b"\x22" * 20
        self.assertEqual(self.block().header.coinbase, b"\x22" * 20)

    def test_late_build(self) -> None:
        """
        A build that ends after the pool emptied and the empty block was
        kept does not stand for the empty block afterwards.
        """
        builds: list[Deferred[Any]] = []

        def later(f: Any, *args: Any) -> Deferred[Any]:
            done: Deferred[Any] = Deferred()
            builds.append(done)
            done.addCallback(lambda _: f(*args))
            return done

        self.pending._run_in_thread = later
        self.pool.transactions.append(transfer(0, 0))
        building = self.pending.block()
        self.pool.clear()
        empty = self.block()
        builds[0].callback(None)
        self.assertEqual(len(self.successResultOf(building).block.transactions), 1)
        self.assertEqual(self.block().block.transactions, ())
        self.assertEqual(self.block().header, empty.header)

    def test_header_now(self) -> None:
        """
        While the pool is empty, the header is known at once (the kept
        block's, as L{PendingBlocks.header} gives it) without reading the
        pool's pending list; with a transaction pending, or a side block
        worth naming as an uncle, it is not (the block is built).
        """
        asked: list[int] = []
        pending_list = self.pool.pending
        self.pool.pending = lambda: asked.append(1) or pending_list()  # type: ignore[method-assign]
        header = self.pending.header_now()
        assert header is not None
        self.assertIs(header, self.block().header)
        self.assertIs(self.successResultOf(self.pending.header()), header)
        self.successResultOf(self.miner.mine())
        del asked[:]  # the miner reads the pool
        self.clock.advance(1)
        moved = self.pending.header_now()
        assert moved is not None
        self.assertEqual((moved.number, moved.timestamp, moved.parent_hash), (2, 1001, self.chain.head.header.hash))
        self.assertIs(self.block().header, moved)
        self.assertEqual((asked, self.reads.built), ([], []))
        self.pool.transactions.append(transfer(0, 0))
        self.assertIsNone(self.pending.header_now())
        self.assertEqual(self.successResultOf(self.pending.header()), self.block().header)
        self.assertEqual(len(self.reads.built), 1)
        self.pool.clear()
        self.side._candidates = (replace(self.genesis, number=1, extra_data=b"side"),)
        self.assertIsNone(self.pending.header_now())
        self.block()
        self.assertEqual(len(self.reads.built), 2)
