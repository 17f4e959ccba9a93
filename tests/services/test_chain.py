"""
Tests for L{nodex.services.chain} and L{nodex.services.threads}.
"""

import threading
from dataclasses import replace
from typing import Any

from twisted.internet import reactor
from twisted.internet.defer import Deferred, inlineCallbacks, maybeDeferred
from twisted.internet.task import Clock
from twisted.logger import Logger, formatEvent
from twisted.trial.unittest import SynchronousTestCase, TestCase
from zope.interface.verify import verifyObject

from nodex.chain.aside import FILE, Bounds, from_peer
from nodex.chain.building.builder import BuiltBlock
from nodex.chain.importer import Unused
from nodex.chain.building.making import BlockTime, Declined, NotDueError, TransactionsBlock
from nodex.chain.difficulty import DifficultyRules
from nodex.chain.genesis import GenesisAllocation, initialize_chain
from nodex.db.kv import KeyValueStore
from nodex.db.memory import MemoryStore
from nodex.db.rocks import RocksStore
from nodex.db.schema import (
    read_block_bloom,
    read_canonical_hash,
    read_head_hash,
    read_header_rlp,
    read_tx_lookup,
)
from nodex.api.chain import ChainEvent, IChainService, IChainWriter, ImportResult, IPeerChain
from nodex.primitives import Address, Hash32
import nodex.chain.tip as tip_module
from nodex.chain.importer import BlockImporter
import nodex.services.chain as chain_module
import nodex.services.threads as threads_module
from nodex.services.chainreader import RECENT_ANCESTORS
from nodex.chain.logs.index import LogIndexer, indexed_through, stale_sections
from nodex.services.chain import (
    BAD_BLOCKS_KEPT,
    RECENT_BLOCKS,
    IMPORT_LOG_INTERVAL,
    RUN_JOB_BLOCKS,
    SMALL_REWIND_BLOCKS,
    ChainNotInitializedError,
    ChainService,
)
from nodex.services.pool import TransactionPool
from nodex.services.threads import ChainThreads, SerialThread
from nodex.structures.blocks import Block
from nodex.structures.headers import Header
from nodex.structures.transactions import LegacyTransaction, Transaction, sign_transaction
from tests.chain.chainmaker import import_explained, import_one, store_block
from tests.chain.test_processing import (
    COINBASE,
    KEYS,
    RECIPIENT,
    build_on,
    fee_market_transfer,
    reseal,
    sample_genesis,
    sample_rules,
    sample_store,
    transfer,
)


original = LogIndexer.catch_up


class ChainServiceMixin:
    """
    Tests of L{ChainService} run over both stores; subclasses provide
    L{make_store}.
    """

    def make_store(self) -> KeyValueStore:
        """
        A new empty store.
        """
        raise NotImplementedError()

    def setUp(self) -> None:
        """
        A chain service over a sample genesis, recording its events.
        """
        self.clock = Clock()
        self.clock.advance(1000)
        self.store, self.genesis = sample_store(store=self.make_store())
        self.chain = ChainService(self.store, sample_rules(), self.clock)
        self.events: list[ChainEvent] = []
        self.chain.add_observer(self.events.append)

    def build(self, parent: Header, transactions: list = [], **keywords: Any) -> BuiltBlock:  # noqa: B006
        """
        A sealed block on C{parent} built against the service's store.
        """
        return build_on(self.store, parent, transactions, rules=self.chain.rules, **keywords)

    def import_chain(self, parent: Header, count: int) -> None:
        """
        Build and import C{count} empty blocks, one on the other, from C{parent}.
        """
        for _ in range(count):
            block = build_on(self.store, parent).block
            self.imported(block)
            parent = block.header

    def imported(self, block: Block) -> str:
        """
        Import C{block} and return the result name.
        """
        return self.successResultOf(import_one(self.chain, block))  # type: ignore[attr-defined,no-any-return]

    def test_interface(self) -> None:
        """
        The service provides L{IChainService}, L{IChainWriter} and L{IPeerChain} (the reads and
        batch reads the peer network uses).
        """
        for interface in (IChainService, IChainWriter, IPeerChain):
            self.assertTrue(verifyObject(interface, self.chain))  # type: ignore[attr-defined]
        self.assertEqual(self.chain.chain_id, 33)  # type: ignore[attr-defined]

    def test_head_from_store(self) -> None:
        """
        A new service starts at the stored head, genesis here, with its total difficulty.
        """
        self.assertEqual(self.chain.head.header, self.genesis)  # type: ignore[attr-defined]
        self.assertEqual(self.chain.head.total_difficulty, 1)  # type: ignore[attr-defined]

    def test_import_best(self) -> None:
        """
        A valid child of the head becomes the head, is indexed, and observers hear of it.
        """
        tx = transfer(0, 0, gas_price=3)
        block = self.build(self.genesis, [tx]).block
        self.assertEqual(self.imported(block), ImportResult.IMPORTED_BEST)
        self.assertEqual(self.chain.head.header, block.header)  # type: ignore[attr-defined]
        self.assertEqual(self.chain.head.total_difficulty, 2)  # type: ignore[attr-defined]
        self.assertEqual(read_canonical_hash(self.store, 1), block.hash)  # type: ignore[attr-defined]
        self.assertEqual(read_head_hash(self.store), block.hash)
        self.assertEqual(read_tx_lookup(self.store, tx.hash), (block.hash, 0))
        self.assertEqual(read_block_bloom(self.store, 1), block.header.logs_bloom)
        [event] = self.events
        self.assertEqual((event.adopted, event.abandoned, event.rewound), ((block,), (), False))
        self.assertEqual(event.adopted_receipts[0][0].cumulative_gas_used, 21_000)

    def test_import_exist(self) -> None:
        """
        A block already stored is reported as existing and changes nothing.
        """
        block = self.build(self.genesis).block
        self.imported(block)
        self.assertEqual(self.imported(block), ImportResult.EXIST)
        self.assertEqual(len(self.events), 1)

    def test_import_no_parent(self) -> None:
        """
        A block whose parent is unknown is reported as such and not stored.
        """
        first = self.build(self.genesis).block
        second = build_on(self.store, first.header).block
        self.assertEqual(self.imported(second), ImportResult.NO_PARENT)
        self.assertIsNone(read_header_rlp(self.store, second.hash))

    def test_import_invalid(self) -> None:
        """
        A block whose state root is wrong is invalid; nothing is stored and the head stays.
        """
        built = self.build(self.genesis, [transfer(0, 0)])
        header = replace(built.block.header, state_root=Hash32(b"\x00" * 32))
        bad = Block(header, built.block.transactions)
        self.assertEqual(self.imported(bad), ImportResult.INVALID_BLOCK)
        self.assertIsNone(read_header_rlp(self.store, bad.hash))
        self.assertEqual(self.chain.head.header, self.genesis)  # type: ignore[attr-defined]
        self.assertEqual(self.events, [])
        self.assertEqual(self.imported(built.block), ImportResult.IMPORTED_BEST)

    def test_import_explained(self) -> None:
        """
        An import's outcome gives the broken rule of an invalid block, and no reason otherwise.
        """
        built = self.build(self.genesis)
        bad = Block(reseal(replace(built.block.header, gas_used=7)))
        result, reason = self.successResultOf(import_explained(self.chain, bad))
        self.assertEqual(result, ImportResult.INVALID_BLOCK)
        self.assertIn("gas used 7", reason)
        explained = self.successResultOf(import_explained(self.chain, built.block))
        self.assertEqual(explained, (ImportResult.IMPORTED_BEST, None))
        self.assertEqual(len(self.events), 1)

    def test_bad_blocks_kept(self) -> None:
        """
        Refused blocks are kept with their reasons, oldest first, at most
        BAD_BLOCKS_KEPT of them; imported ones are not.
        """
        built = self.build(self.genesis)
        self.assertEqual(self.imported(built.block), ImportResult.IMPORTED_BEST)
        refused = []
        for gas_used in range(1, BAD_BLOCKS_KEPT + 3):
            bad = Block(reseal(replace(self.build(built.block.header).block.header, gas_used=gas_used)))
            self.assertEqual(self.imported(bad), ImportResult.INVALID_BLOCK)
            refused.append(bad)
        kept = self.chain.bad_blocks()  # type: ignore[attr-defined]
        self.assertEqual([entry.block for entry in kept], refused[-BAD_BLOCKS_KEPT:])
        self.assertIn(f"gas used {BAD_BLOCKS_KEPT + 2}", kept[-1].reason)

    def test_import_future_block(self) -> None:
        """
        A block more than a minute ahead of the clock is held, not refused
        (and not stored before it is due); one within the minute imports.
        """
        block = self.build(self.genesis, timestamp=1061).block
        self.assertEqual(self.imported(block), ImportResult.FUTURE_BLOCK)
        self.assertIsNone(read_header_rlp(self.store, block.hash))
        self.assertEqual(self.chain.bad_blocks(), [])  # type: ignore[attr-defined]
        other = self.build(self.genesis, timestamp=1060, extra_data=b"o").block
        self.assertEqual(self.imported(other), ImportResult.IMPORTED_BEST)

    def test_side_chain_tie(self) -> None:
        """
        A competing block of equal total difficulty is stored but does not replace the head.
        """
        first = self.build(self.genesis, extra_data=b"a").block
        rival = self.build(self.genesis, extra_data=b"b").block
        self.imported(first)
        self.assertEqual(self.imported(rival), ImportResult.IMPORTED_NOT_BEST)
        self.assertEqual(self.chain.head.header, first.header)  # type: ignore[attr-defined]
        stored = self.successResultOf(self.chain.get_block_by_hash(rival.hash))  # type: ignore[attr-defined]
        self.assertEqual(stored, rival)
        self.assertFalse(self.successResultOf(self.chain.is_canonical(rival.hash)))  # type: ignore[attr-defined]
        self.assertEqual(len(self.events), 1)

    def test_side_block_observers(self) -> None:
        """
        A block stored off the canonical chain is handed to the side-block
        observers (the uncle candidates); blocks that move the head, and
        blocks already known, are not.
        """
        sides: list[Block] = []
        self.chain.add_side_observer(sides.append)  # type: ignore[attr-defined]
        first = self.build(self.genesis, extra_data=b"a").block
        rival = self.build(self.genesis, extra_data=b"b").block
        self.imported(first)
        self.assertEqual(sides, [])
        self.assertEqual(self.imported(rival), ImportResult.IMPORTED_NOT_BEST)
        self.assertEqual(sides, [rival])
        self.assertEqual(self.imported(rival), ImportResult.EXIST)
        self.assertEqual(sides, [rival])

    def test_side_block_observer_failure(self) -> None:
        """
        A side-block observer that raises is logged; the others still hear of the block.
        """

        def broken(block: Block) -> None:
            raise RuntimeError("observer bug")

        sides: list[Block] = []
        self.chain.add_side_observer(broken)  # type: ignore[attr-defined]
        self.chain.add_side_observer(sides.append)  # type: ignore[attr-defined]
        self.imported(self.build(self.genesis, extra_data=b"a").block)
        rival = self.build(self.genesis, extra_data=b"b").block
        self.assertEqual(self.imported(rival), ImportResult.IMPORTED_NOT_BEST)
        self.assertEqual(sides, [rival])
        self.assertEqual(len(self.flushLoggedErrors(RuntimeError)), 1)  # type: ignore[attr-defined]

    def test_reorganisation_longer(self) -> None:
        """
        A longer side chain replaces the canonical one: index, lookups,
        receipts and the event all follow it.
        """
        old_tx = transfer(0, 0)
        shared_tx = transfer(1, 0)
        a1 = self.build(self.genesis, [old_tx, shared_tx], extra_data=b"a").block
        self.imported(a1)
        b1 = self.build(self.genesis, [shared_tx], extra_data=b"b").block
        self.assertEqual(self.imported(b1), ImportResult.IMPORTED_NOT_BEST)
        new_tx = transfer(2, 0)
        b2 = build_on(self.store, b1.header, [new_tx]).block
        self.assertEqual(self.imported(b2), ImportResult.IMPORTED_BEST)
        self.assertEqual(self.chain.head.header, b2.header)  # type: ignore[attr-defined]
        self.assertEqual(self.chain.head.total_difficulty, 3)  # type: ignore[attr-defined]
        self.assertEqual((read_canonical_hash(self.store, 1), read_canonical_hash(self.store, 2)), (b1.hash, b2.hash))
        self.assertIsNone(self.successResultOf(self.chain.get_transaction(old_tx.hash)))  # type: ignore[attr-defined]
        self.assertIsNone(self.successResultOf(self.chain.get_receipt(old_tx.hash)))  # type: ignore[attr-defined]
        shared = self.successResultOf(self.chain.get_transaction(shared_tx.hash))  # type: ignore[attr-defined]
        self.assertEqual((shared.block_hash, shared.index), (b1.hash, 0))
        receipt = self.successResultOf(self.chain.get_receipt(new_tx.hash))  # type: ignore[attr-defined]
        self.assertEqual((receipt.location.block_hash, receipt.location.block_number), (b2.hash, 2))
        self.assertFalse(self.successResultOf(self.chain.is_canonical(a1.hash)))  # type: ignore[attr-defined]
        event = self.events[-1]
        self.assertEqual((event.abandoned, event.adopted), ((a1,), (b1, b2)))
        self.assertEqual([len(receipts) for receipts in event.abandoned_receipts], [2])
        self.assertEqual([len(receipts) for receipts in event.adopted_receipts], [1, 1])

    def test_reorganisation_heavier(self) -> None:
        """
        With difficulty that rises for quick blocks, a side block of the same
        height but more difficulty becomes the head.
        """
        rules = replace(
            sample_rules(), difficulty=DifficultyRules(duration=10, divisor=2, minimum=1000, reset_after=None)
        )
        store, genesis = sample_store(difficulty=1000, store=self.make_store())
        chain = ChainService(store, rules, self.clock)
        events: list[ChainEvent] = []
        chain.add_observer(events.append)
        slow = build_on(store, genesis, [transfer(0, 0)], rules=rules, timestamp=20).block
        quick = build_on(store, genesis, rules=rules, timestamp=1).block
        self.assertEqual((slow.header.difficulty, quick.header.difficulty), (1000, 1500))
        self.assertEqual(self.successResultOf(import_one(chain, slow)), ImportResult.IMPORTED_BEST)
        self.assertEqual(self.successResultOf(import_one(chain, quick)), ImportResult.IMPORTED_BEST)
        self.assertEqual((chain.head.header, chain.head.total_difficulty), (quick.header, 2500))
        self.assertEqual((events[-1].abandoned, events[-1].adopted), ((slow,), (quick,)))
        self.assertIsNone(read_tx_lookup(store, slow.transactions[0].hash))

    def test_uncle_adds_difficulty(self) -> None:
        """
        A block including an uncle adds the uncle's difficulty to the total.
        """
        a1 = self.build(self.genesis, extra_data=b"a").block
        b1 = self.build(self.genesis, extra_data=b"b").block
        self.imported(a1)
        self.imported(b1)
        a2 = build_on(self.store, a1.header, uncles=[b1.header]).block
        self.assertEqual(self.imported(a2), ImportResult.IMPORTED_BEST)
        self.assertEqual(self.chain.head.total_difficulty, 4)  # type: ignore[attr-defined]
        again = build_on(self.store, a2.header, uncles=[b1.header]).block
        self.assertEqual(self.imported(again), ImportResult.INVALID_BLOCK)

    def test_reads(self) -> None:
        """
        Blocks by number and hash, header, total difficulty, transactions and
        receipt views read back what was imported.
        """
        first = transfer(0, 0, gas_price=2)
        second = fee_market_transfer(1, 0, max_fee=10, priority_fee=4)
        block = self.build(self.genesis, [first, second]).block
        self.imported(block)
        chain = self.chain
        self.assertEqual(self.successResultOf(chain.get_block_by_number(1)), block)  # type: ignore[attr-defined]
        self.assertIsNone(self.successResultOf(chain.get_block_by_number(2)))  # type: ignore[attr-defined]
        self.assertIsNone(self.successResultOf(chain.get_block_by_number(2**64)))  # type: ignore[attr-defined]
        header = self.successResultOf(chain.get_header_by_hash(block.hash))  # type: ignore[attr-defined]
        self.assertEqual(header, block.header)
        self.assertEqual(self.successResultOf(chain.get_total_difficulty(block.hash)), 2)  # type: ignore[attr-defined]
        self.assertIsNone(self.successResultOf(chain.get_block_by_hash(b"\x00" * 32)))  # type: ignore[attr-defined]
        location = self.successResultOf(chain.get_transaction(second.hash))  # type: ignore[attr-defined]
        self.assertEqual((location.transaction, location.index, location.block_number), (second, 1, 1))
        views = self.successResultOf(chain.get_block_receipts(block.hash))  # type: ignore[attr-defined]
        self.assertEqual([view.gas_used for view in views], [21_000, 21_000])
        self.assertEqual([view.effective_gas_price for view in views], [2, 4])
        self.assertEqual([view.receipt.cumulative_gas_used for view in views], [21_000, 42_000])
        self.assertEqual([view.first_log_index for view in views], [0, 0])
        self.assertIsNone(self.successResultOf(chain.get_block_receipts(b"\x01" * 32)))  # type: ignore[attr-defined]
        account = self.successResultOf(chain.get_account(RECIPIENT))  # type: ignore[attr-defined]
        self.assertEqual(account.balance, 2)

    def request(self, transactions: tuple[Transaction, ...] = (), **keywords: Any) -> TransactionsBlock:
        """
        A request for a block of C{transactions} on whatever the tip is, stamped by the test clock.
        """
        now = int(self.clock.seconds())
        return TransactionsBlock(COINBASE, BlockTime(now, now, None), transactions, **keywords)

    def test_make(self) -> None:
        """
        Made blocks build on the tip one after another, and are stored like imports.
        """
        first = self.successResultOf(self.chain.make(self.request((transfer(0, 0),)))).block  # type: ignore[attr-defined]
        second = self.successResultOf(self.chain.make(self.request((transfer(0, 1),)))).block  # type: ignore[attr-defined]
        self.assertEqual((first.number, second.number), (1, 2))
        self.assertEqual((len(first.transactions), len(second.transactions)), (1, 1))
        self.assertEqual(self.chain.head.header, second.header)  # type: ignore[attr-defined]
        self.assertEqual(len(self.events), 2)

    def test_make_at_once_on_an_idle_writer(self) -> None:
        """
        A small block for an idle writer (L{SerialThread.idle}) is made and
        published before C{make} returns, once, without the writer's
        C{run_small}; a publication that fails fails the Deferred; a busy
        writer is given the job.
        """
        def run(function: Any, *args: Any) -> Deferred[Any]:
            self.fail("the idle writer was given the job")

        self.chain._run_small_writer = run  # type: ignore[attr-defined]
        published: list[Any] = []
        publish = self.chain._publish  # type: ignore[attr-defined]
        self.chain._publish = lambda step: published.append(step) or publish(step)  # type: ignore[attr-defined]
        made = self.chain.make(self.request((transfer(0, 0),)), small=True)  # type: ignore[attr-defined]
        self.assertEqual((len(self.events), published), (1, [self.successResultOf(made)]))
        self.assertEqual(self.chain.head.header, published[0].block.header)  # type: ignore[attr-defined]

        def broken(step: Any) -> Any:
            raise RuntimeError("publication")

        self.chain._publish = broken  # type: ignore[attr-defined]
        self.failureResultOf(self.chain.make(self.request((transfer(0, 1),)), small=True), RuntimeError)
        self.chain._publish = publish  # type: ignore[attr-defined]
        self.chain._run_small_writer = maybeDeferred  # type: ignore[attr-defined]
        given: list[Any] = []
        self.chain._writer_idle = lambda: given.append("busy") and False  # type: ignore[attr-defined]
        self.successResultOf(self.chain.make(self.request((transfer(0, 2),)), small=True))  # type: ignore[attr-defined]
        # (The block whose publication failed was stored, untold.)
        self.assertEqual((given, len(self.events)), (["busy"], 2))

    def test_writer_idle(self) -> None:
        """
        A L{SerialThread} is idle once started, while no job is outstanding.
        """
        writer = SerialThread(Clock(), "test-writer")
        self.assertFalse(writer.idle)
        writer._thread = object()  # type: ignore[assignment]
        self.assertTrue(writer.idle)
        writer.run(lambda: None)
        self.assertFalse(writer.idle)

    def test_make_at_once(self) -> None:
        """
        A small block made by a writer whose C{run_small} ran it at once
        (the network simulator's, say) is published before C{make}
        returns, once, through Twisted's fired-Deferred C{result} (the
        attribute the fast path reads); a publication that fails fails the
        Deferred.
        """
        self.chain._writer_idle = lambda: False  # type: ignore[attr-defined]
        self.assertEqual(maybeDeferred(lambda: 5).result, 5)
        added: list[Any] = []
        held: list[Deferred[Any]] = []

        class Recording(Deferred):  # type: ignore[type-arg]
            def addCallback(self, *args: Any, **keywords: Any) -> Any:
                added.append(args)
                return super().addCallback(*args, **keywords)

        def run(function: Any, *args: Any) -> Deferred[Any]:
            job = Recording()
            if held:
                job.addCallback(lambda _: function(*args))
                held[0] = job
                return job
            job.callback(function(*args))
            return job

        self.chain._run_small_writer = run  # type: ignore[attr-defined]
        published: list[Any] = []
        publish = self.chain._publish  # type: ignore[attr-defined]
        self.chain._publish = lambda step: published.append(step) or publish(step)  # type: ignore[attr-defined]
        made = self.chain.make(self.request((transfer(0, 0),)), small=True)  # type: ignore[attr-defined]
        self.assertEqual(len(self.events), 1)
        self.assertEqual(published, [self.successResultOf(made)])
        self.assertEqual(self.chain.head.header, published[0].block.header)  # type: ignore[attr-defined]
        self.assertEqual(added, [])
        # A busy writer: published when the job's result comes.
        held.append(Deferred())
        later = self.chain.make(self.request((transfer(0, 1),)), small=True)  # type: ignore[attr-defined]
        self.assertNoResult(later)
        held[0].callback(None)
        self.assertEqual(published[1:], [self.successResultOf(later)])
        held.clear()

        def broken(step: Any) -> Any:
            raise RuntimeError("publication")

        self.chain._publish = broken  # type: ignore[attr-defined]
        failed = self.chain.make(self.request((transfer(0, 2),)), small=True)  # type: ignore[attr-defined]
        self.failureResultOf(failed, RuntimeError)

    def test_make_declined(self) -> None:
        """
        A request that may not make an empty block, whose candidates cannot
        be included, stores nothing and says so.
        """
        step = self.successResultOf(
            self.chain.make(self.request((transfer(0, 5),), empty=False))  # type: ignore[attr-defined]
        )
        self.assertIsNone(step.block)
        self.assertIsInstance(step.built, Declined)
        self.assertEqual(self.chain.head.header, self.genesis)  # type: ignore[attr-defined]

    def test_make_not_due(self) -> None:
        """
        A request whose block would be stamped beyond the drift limit fails
        with the time it is due, and stores nothing.
        """
        now = int(self.clock.seconds())
        request = TransactionsBlock(COINBASE, BlockTime(now, self.genesis.timestamp - 100, 60), ())
        failure = self.failureResultOf(self.chain.make(request), NotDueError)  # type: ignore[attr-defined]
        self.assertEqual(failure.value.due, self.genesis.timestamp + 1 - 60)
        self.assertEqual(self.chain.head.header, self.genesis)  # type: ignore[attr-defined]

    def test_store_built(self) -> None:
        """
        A block with its known outcome is stored without executing it again.
        """
        built = self.build(self.genesis, [transfer(0, 0)])
        storing = self.chain.store_built(built.block, built.outcome)  # type: ignore[attr-defined]
        self.assertEqual(self.successResultOf(storing).result, ImportResult.IMPORTED_BEST)
        wrong = replace(built.outcome, gas_used=1)
        other = self.build(self.genesis, extra_data=b"x")
        outcome = self.successResultOf(self.chain.store_built(other.block, wrong))  # type: ignore[attr-defined]
        self.assertEqual(outcome.result, ImportResult.INVALID_BLOCK)

    def test_held_block_imported_when_due(self) -> None:
        """
        A block a peer stamps beyond the drift limit is held, then imported
        by the service when its time comes on the clock; nothing about it
        counts against the peer.
        """
        chain = ChainService(self.store, replace(sample_rules(), max_seconds_in_future=60), self.clock)
        chain.startService()
        self.addCleanup(chain.stopService)
        block = self.build(self.genesis, timestamp=int(self.clock.seconds()) + 90).block
        found = self.successResultOf(chain.import_blocks([block], from_peer(b"\x09" * 64)))
        self.assertEqual([outcome.result for outcome in found], [ImportResult.FUTURE_BLOCK])
        self.clock.advance(29)
        self.assertEqual(chain.head.header, self.genesis)
        self.clock.advance(1)
        self.assertEqual(chain.head.header, block.header)

    def test_unused_reported(self) -> None:
        """
        A kept-aside block pushed out for room reaches the unused-block observers with its source.
        """
        self.chain.importer.orphans.bounds = Bounds(1, 1 << 20, 1, 1 << 20)  # type: ignore[attr-defined]
        first = self.build(self.genesis).block
        second = build_on(self.store, first.header).block
        third = build_on(self.store, first.header, extra_data=b"3").block
        unused: list[Unused] = []
        self.chain.add_unused_observer(unused.append)  # type: ignore[attr-defined]
        peer = from_peer(b"\x07" * 64)
        self.successResultOf(self.chain.import_blocks([second], peer))  # type: ignore[attr-defined]
        self.successResultOf(self.chain.import_blocks([third], peer))  # type: ignore[attr-defined]
        self.assertEqual([(entry.block_hash, entry.source) for entry in unused], [(second.hash, peer)])

    def test_rewind(self) -> None:
        """
        Rewinding deletes the canonical blocks above the number, their
        lookups and index, moves the head, and tells observers it rewound.
        """
        tx = transfer(0, 0)
        b1 = self.build(self.genesis).block
        self.imported(b1)
        b2 = build_on(self.store, b1.header, [tx]).block
        self.imported(b2)
        self.assertIsNone(self.successResultOf(self.chain.rewind(1)))  # type: ignore[attr-defined]
        self.assertEqual(self.chain.head.header, b1.header)  # type: ignore[attr-defined]
        self.assertEqual(self.chain.head.total_difficulty, 2)  # type: ignore[attr-defined]
        self.assertIsNone(read_canonical_hash(self.store, 2))
        self.assertIsNone(read_tx_lookup(self.store, tx.hash))
        self.assertIsNone(read_header_rlp(self.store, b2.hash))
        self.assertIsNone(self.successResultOf(self.chain.get_block_by_hash(b2.hash)))  # type: ignore[attr-defined]
        self.assertEqual(read_head_hash(self.store), b1.hash)
        self.assertIsNone(self.successResultOf(self.chain.get_transaction(tx.hash)))  # type: ignore[attr-defined]
        self.assertIsNone(self.successResultOf(self.chain.get_receipt(tx.hash)))  # type: ignore[attr-defined]
        event = self.events[-1]
        self.assertEqual((event.abandoned, event.adopted, event.rewound), ((b2,), (), True))
        self.assertEqual(self.imported(b2), ImportResult.IMPORTED_BEST)

    def test_log_bitmaps_follow_the_chain(self) -> None:
        """
        The log index's bitmaps are extended once they trail the head by
        L{INDEX_LAG} blocks, and rebuilt at once after a reorganisation and
        after a rewind.
        """
        self.patch(tip_module, "INDEX_LAG", 3)
        self.import_chain(self.genesis, 5)
        # genesis (-1 -> 2 at block 2), then every third block
        self.assertEqual(indexed_through(self.store), 5)
        side = self.build(self.genesis, extra_data=b"side").block
        self.imported(side)
        self.assertEqual(indexed_through(self.store), 5)
        self.import_chain(side.header, 6)
        self.assertEqual(read_canonical_hash(self.store, 1), side.hash)
        # the reorganisation came with the side chain's sixth block: the
        # section was rebuilt then; the seventh waits for the lag
        self.assertEqual(stale_sections(self.store), set())
        self.assertEqual(indexed_through(self.store), 6)
        self.assertEqual(self.chain.head.header.number, 7)  # type: ignore[attr-defined]
        self.successResultOf(self.chain.rewind(2))  # type: ignore[attr-defined]
        self.assertEqual((indexed_through(self.store), stale_sections(self.store)), (2, set()))

    def test_rewind_of_unindexed_blocks(self) -> None:
        """
        A rewind of blocks the bitmaps have not reached yet (they trail the
        head) marks no section stale and indexes nothing at once.
        """
        self.patch(tip_module, "INDEX_LAG", 100)
        self.import_chain(self.genesis, 5)
        through = indexed_through(self.store)
        self.assertLess(through, 3)
        self.successResultOf(self.chain.rewind(3))  # type: ignore[attr-defined]
        self.assertEqual((indexed_through(self.store), stale_sections(self.store)), (through, set()))

    def test_log_bitmaps_caught_up_at_start(self) -> None:
        """
        A chain whose bitmaps trail its head (a store migrated from schema
        version 1, or blocks imported just before a stop) is caught up when
        the service starts, in steps.
        """
        self.patch(tip_module, "INDEX_LAG", 1000)
        self.import_chain(self.genesis, 5)
        self.assertEqual(indexed_through(self.store), -1)
        self.patch(LogIndexer, "catch_up", lambda indexer, head, limit=2: original(indexer, head, limit))
        chain = ChainService(self.store, sample_rules(), self.clock)
        chain.startService()
        self.addCleanup(chain.stopService)
        self.assertEqual(indexed_through(self.store), 5)

    def test_rewind_lines(self) -> None:
        """
        Rewinds are logged at most once a second, the next line counting
        those that went unlogged.
        """
        lines: list[str] = []
        self.chain.log = Logger(observer=lambda event: lines.append(formatEvent(event)))  # type: ignore[attr-defined]
        self.import_chain(self.genesis, 4)
        for number in (3, 2, 1):
            self.successResultOf(self.chain.rewind(number))  # type: ignore[attr-defined]
        self.clock.advance(IMPORT_LOG_INTERVAL)
        self.successResultOf(self.chain.rewind(0))  # type: ignore[attr-defined]
        rewinds = [line for line in lines if line.startswith("rewound")]
        self.assertEqual(
            rewinds, ["rewound the chain to block 3", "rewound the chain to block 0 (2 rewinds since the last line)"]
        )

    def test_small_rewind_at_once(self) -> None:
        """
        A rewind of at most L{SMALL_REWIND_BLOCKS} blocks is a small writer
        job (run at once when the writer is idle), a longer one a writer
        job like any other.
        """
        jobs: list[str] = []
        writer, small = self.chain._run_writer, self.chain._run_small_writer  # type: ignore[attr-defined]
        self.chain._run_writer = lambda *args: jobs.append("writer") or writer(*args)  # type: ignore[attr-defined]
        self.chain._run_small_writer = lambda *args: jobs.append("small") or small(*args)  # type: ignore[attr-defined]
        self.import_chain(self.genesis, SMALL_REWIND_BLOCKS + 3)
        del jobs[:]
        self.successResultOf(self.chain.rewind(2))  # type: ignore[attr-defined]
        self.successResultOf(self.chain.rewind(1))  # type: ignore[attr-defined]
        self.assertEqual(jobs, ["writer", "small"])
        self.assertEqual(self.chain.head.header.number, 1)  # type: ignore[attr-defined]

    def test_rewind_above_head(self) -> None:
        """
        Rewinding to the head or above changes nothing and tells no one.
        """
        self.successResultOf(self.chain.rewind(5))  # type: ignore[attr-defined]
        self.assertEqual((self.chain.head.header, self.events), (self.genesis, []))  # type: ignore[attr-defined]

    def test_restart(self) -> None:
        """
        A new service over the same store starts at the head the last one wrote.
        """
        block = self.build(self.genesis).block
        self.imported(block)
        again = ChainService(self.store, sample_rules(), self.clock)
        self.assertEqual(again.head, self.chain.head)  # type: ignore[attr-defined]

    def test_observer_failure_contained(self) -> None:
        """
        An observer that raises is logged; the others still hear of the change.
        """

        def broken(event: ChainEvent) -> None:
            raise RuntimeError("observer bug")

        self.chain.add_observer(broken)  # type: ignore[attr-defined]
        later: list[ChainEvent] = []
        self.chain.add_observer(later.append)  # type: ignore[attr-defined]
        self.imported(self.build(self.genesis).block)
        self.assertEqual(len(later), 1)
        self.assertEqual(len(self.flushLoggedErrors(RuntimeError)), 1)  # type: ignore[attr-defined]


CONTRACT = Address(b"\xc0" * 20)


def call(key: int, nonce: int) -> Transaction:
    """
    A signed call of the BLOCKHASH contract at L{CONTRACT}.
    """
    unsigned = LegacyTransaction(nonce=nonce, gas_price=1, gas=100_000, to=CONTRACT, value=0, data=b"")
    return sign_transaction(unsigned, KEYS[key], 33)


class MemoryChainServiceTests(ChainServiceMixin, SynchronousTestCase):
    """
    L{ChainService} over a L{MemoryStore}.
    """

    def make_store(self) -> KeyValueStore:
        """
        A memory store.
        """
        return MemoryStore()

    def test_blockhash_follows_own_chain(self) -> None:
        """
        BLOCKHASH sees the block's own ancestry: the canonical parent for a
        block on the head, the side-chain parent for a block on a side chain.
        """
        store = MemoryStore()
        spec = sample_genesis()
        # PUSH1 1, NUMBER, SUB, BLOCKHASH, PUSH1 0, SSTORE, STOP: slot 0 = hash of the parent.
        code = bytes.fromhex("600143034060005500")
        spec = replace(spec, alloc={**spec.alloc, CONTRACT: GenesisAllocation(0, code=code)})
        genesis = initialize_chain(store, "regtest", spec)
        chain = ChainService(store, sample_rules(), self.clock)
        a1 = build_on(store, genesis, extra_data=b"a").block
        b1 = build_on(store, genesis, extra_data=b"b").block
        self.successResultOf(import_one(chain, a1))
        self.successResultOf(import_one(chain, b1))
        a2 = build_on(store, a1.header, [call(0, 0)]).block
        side = {0: genesis.hash, 1: b1.hash}
        b2 = build_on(store, b1.header, [call(0, 0)], block_hashes=side.get).block
        self.assertEqual(self.successResultOf(import_one(chain, a2)), ImportResult.IMPORTED_BEST)
        self.assertEqual(self.successResultOf(import_one(chain, b2)), ImportResult.IMPORTED_NOT_BEST)

        def slot(state_root: bytes) -> int:
            return self.successResultOf(
                chain.run_with_state(lambda state: state.get_storage(CONTRACT, 0), state_root)
            )

        self.assertEqual(slot(a2.header.state_root), int.from_bytes(a1.hash, "big"))
        self.assertEqual(slot(b2.header.state_root), int.from_bytes(b1.hash, "big"))

    def test_reorganisation_returns_transactions_to_pool(self) -> None:
        """
        With the real pool observing the chain, a reorganisation puts the
        abandoned block's transactions that the new chain lacks back into
        the pool, and keeps out those the new chain includes.
        """
        store, genesis = sample_store()
        chain = ChainService(store, sample_rules(), self.clock)
        pool = TransactionPool(chain, store, maybeDeferred)
        lost = transfer(0, 0)
        kept = transfer(1, 0)
        a1 = build_on(store, genesis, [lost, kept], extra_data=b"a").block
        self.assertEqual(self.successResultOf(import_one(chain, a1)), ImportResult.IMPORTED_BEST)
        b1 = build_on(store, genesis, [kept], extra_data=b"b").block
        self.successResultOf(import_one(chain, b1))
        b2 = build_on(store, b1.header, block_hashes={0: genesis.hash, 1: b1.hash}.get).block
        self.assertEqual(self.successResultOf(import_one(chain, b2)), ImportResult.IMPORTED_BEST)
        self.assertEqual([tx.hash for tx in pool.pending()], [lost.hash])
        self.assertIsNone(pool.get(kept.hash))

    def test_import_blocks_in_jobs(self) -> None:
        """
        A run of blocks is imported in writer jobs of at most
        L{RUN_JOB_BLOCKS} blocks, with an outcome and an event per block,
        and one "imported block" log line for the lot while the clock stands.
        """
        from twisted.logger import globalLogPublisher

        builder_store, _ = sample_store()
        builder = BlockImporter(builder_store, sample_rules())
        blocks = []
        parent = self.genesis
        for _ in range(RUN_JOB_BLOCKS * 2 + 5):
            block = build_on(builder_store, parent).block
            store_block(builder, block)
            blocks.append(block)
            parent = block.header
        jobs: list[int] = []
        run_writer = self.chain._run_writer
        self.chain._run_writer = lambda function, *args: (jobs.append(len(args[0])), run_writer(function, *args))[1]
        lines: list[dict] = []
        globalLogPublisher.addObserver(lines.append)
        self.addCleanup(globalLogPublisher.removeObserver, lines.append)
        found = self.successResultOf(self.chain.import_blocks(blocks, FILE))
        self.assertEqual(jobs, [RUN_JOB_BLOCKS, RUN_JOB_BLOCKS, 5])
        self.assertEqual([outcome.block_hash for outcome in found], [block.hash for block in blocks])
        self.assertEqual({outcome.result for outcome in found}, {ImportResult.IMPORTED_BEST})
        self.assertEqual(len(self.events), len(blocks))
        self.assertEqual(self.chain.head.header, blocks[-1].header)
        imported = [line for line in lines if line.get("log_format", "").startswith("imported block")]
        self.assertEqual(len(imported), 1)

    def test_import_blocks_stops_at_invalid(self) -> None:
        """
        A run stops at its first invalid block, which is the last outcome;
        the blocks after it are not tried.
        """
        builder_store, _ = sample_store()
        builder = BlockImporter(builder_store, sample_rules())
        blocks = []
        parent = self.genesis
        for _ in range(4):
            block = build_on(builder_store, parent).block
            store_block(builder, block)
            blocks.append(block)
            parent = block.header
        bad = Block(reseal(replace(blocks[1].header, state_root=Hash32(b"\x05" * 32))))
        found = self.successResultOf(self.chain.import_blocks([blocks[0], bad, blocks[2], blocks[3]], FILE))
        self.assertEqual([outcome.result for outcome in found], [ImportResult.IMPORTED_BEST, ImportResult.INVALID_BLOCK])
        self.assertIn("state root", found[1].reason)
        self.assertEqual(self.chain.head.header, blocks[0].header)

    def test_uninitialized_store(self) -> None:
        """
        A store without a chain is refused with a clear error when the
        service starts (the store may still be closed when it is made).
        """
        chain = ChainService(MemoryStore(), sample_rules(), Clock())
        error = self.assertRaises(ChainNotInitializedError, chain.startService)
        self.assertIn("genesis", str(error))


class RocksChainServiceTests(ChainServiceMixin, SynchronousTestCase):
    """
    L{ChainService} over a L{RocksStore}.
    """

    def make_store(self) -> KeyValueStore:
        """
        A RocksDB store under the test's temporary directory, closed after the test.
        """
        store = RocksStore.open(self.mktemp())
        self.addCleanup(store.close)
        return store

    def test_reopened_store(self) -> None:
        """
        After the store is closed and opened again, the service starts at the same head.
        """
        path = self.mktemp()
        store = RocksStore.open(path)
        _, genesis = sample_store(store=store)
        chain = ChainService(store, sample_rules(), self.clock, close_store=True)
        chain.startService()
        block = build_on(store, genesis, [transfer(0, 0)]).block
        self.successResultOf(import_one(chain, block))
        chain.stopService()
        reopened = RocksStore.open(path)
        self.addCleanup(reopened.close)
        again = ChainService(reopened, sample_rules(), self.clock)
        self.assertEqual(again.head.header, block.header)
        location = self.successResultOf(again.get_transaction(block.transactions[0].hash))
        self.assertEqual(location.block_hash, block.hash)


class HeldReads:
    """
    Threads whose writes run at once and whose reads wait until L{release}:
    shows which reads need a thread.
    """

    def __init__(self) -> None:
        """
        No read waits yet.
        """
        self.reads: list[tuple[Deferred[Any], Any, tuple[Any, ...]]] = []

    def start(self) -> None:
        """
        Nothing to start.
        """

    def stop(self) -> None:
        """
        Nothing to stop.
        """

    def run_writer(self, function: Any, *args: Any) -> Deferred[Any]:
        """
        Write now.
        """
        return maybeDeferred(function, *args)

    run_writer_small = run_writer

    def yield_interpreter(self) -> None:
        """
        Writes run on the caller's thread: nothing to hand over.
        """

    def run_reader(self, function: Any, *args: Any) -> Deferred[Any]:
        """
        Hold the read.
        """
        deferred: Deferred[Any] = Deferred()
        self.reads.append((deferred, function, args))
        return deferred

    def release(self) -> None:
        """
        Run the held reads.
        """
        reads, self.reads = self.reads, []
        for deferred, function, args in reads:
            deferred.callback(function(*args))


class RecentReadsTests(SynchronousTestCase):
    """
    Transactions and receipts of recently written canonical blocks are
    answered without a thread; older ones, side blocks and unknown hashes
    are read in the reader pool.
    """

    def setUp(self) -> None:
        """
        A chain whose reads are held.
        """
        self.store, self.genesis = sample_store()
        self.threads = HeldReads()
        clock = Clock()
        clock.advance(10**6)
        self.chain = ChainService(self.store, sample_rules(), clock, threads=self.threads)  # type: ignore[arg-type]

    def test_recent_at_once(self) -> None:
        """
        A transaction of the head block and its receipt come at once.
        """
        tx = transfer(0, 0, gas_price=5)
        block = build_on(self.store, self.genesis, [tx]).block
        self.successResultOf(import_one(self.chain, block))
        location = self.successResultOf(self.chain.get_transaction(tx.hash))
        self.assertEqual((location.block_hash, location.index, location.transaction), (block.hash, 0, tx))
        receipt = self.successResultOf(self.chain.get_receipt(tx.hash))
        self.assertEqual((receipt.gas_used, receipt.effective_gas_price), (21_000, 5))
        self.assertEqual(self.successResultOf(self.chain.get_block_by_number(1)), block)
        self.assertEqual(self.successResultOf(self.chain.get_block_by_hash(block.hash)), block)
        self.assertEqual(self.successResultOf(self.chain.get_header_by_hash(block.hash)), block.header)
        [view] = self.successResultOf(self.chain.get_block_receipts(block.hash))
        self.assertEqual(view.receipt, receipt.receipt)
        self.assertEqual(
            self.successResultOf(self.chain.get_total_difficulty(block.hash)), self.chain.head.total_difficulty
        )
        self.assertEqual(self.threads.reads, [])

    def test_block_fees(self) -> None:
        """
        A block's fees are the price and gas of its receipt views, for a
        recent block at once and for a stored one in the reader pool.
        """
        transactions = [transfer(0, 0, gas_price=7), fee_market_transfer(1, 0, max_fee=10, priority_fee=4)]
        block = build_on(self.store, self.genesis, transactions).block
        self.successResultOf(import_one(self.chain, block))
        views = self.successResultOf(self.chain.get_block_receipts(block.hash))
        wanted = [(view.effective_gas_price, view.gas_used) for view in views]
        self.assertEqual(wanted, [(7, 21_000), (4, 21_000)])
        self.assertEqual(self.successResultOf(self.chain.get_block_fees(block.hash)), wanted)
        self.assertEqual(self.threads.reads, [])
        reopened = ChainService(self.store, sample_rules(), Clock(), threads=self.threads)  # type: ignore[arg-type]
        reading = reopened.get_block_fees(block.hash)
        unknown = reopened.get_block_fees(b"\x01" * 32)
        self.threads.release()
        self.assertEqual(self.successResultOf(reading), wanted)
        self.assertIsNone(self.successResultOf(unknown))

    def test_recent_ancestors_at_once(self) -> None:
        """
        The canonical blocks just below the head come at once, by their
        parents among the recent blocks; below L{RECENT_ANCESTORS} (and the
        genesis block, never written as a recent block) they are read in
        the reader pool.
        """
        blocks = []
        parent = self.genesis
        for _ in range(RECENT_ANCESTORS + 2):
            block = build_on(self.store, parent).block
            self.successResultOf(import_one(self.chain, block))
            blocks.append(block)
            parent = block.header
        head = blocks[-1].header.number
        for number in range(head - RECENT_ANCESTORS, head + 1):
            self.assertEqual(self.successResultOf(self.chain.get_block_by_number(number)), blocks[number - 1])
        self.assertEqual(self.threads.reads, [])
        deeper = self.chain.get_block_by_number(head - RECENT_ANCESTORS - 1)
        genesis = self.chain.get_block_by_number(0)
        self.assertNoResult(deeper)
        self.assertNoResult(genesis)
        self.threads.release()
        self.assertEqual(self.successResultOf(deeper), blocks[head - RECENT_ANCESTORS - 2])
        self.assertEqual(self.successResultOf(genesis).header, self.genesis)

    def test_unknown_and_side_in_thread(self) -> None:
        """
        An unknown hash and a transaction of a side block go to the reader
        pool, which answers L{None} for both.
        """
        first = build_on(self.store, self.genesis, extra_data=b"a").block
        self.successResultOf(import_one(self.chain, first))
        side_tx = transfer(1, 0)
        side = build_on(self.store, self.genesis, [side_tx], extra_data=b"b").block
        self.successResultOf(import_one(self.chain, side))
        unknown = self.chain.get_receipt(b"\x07" * 32)
        on_side = self.chain.get_transaction(side_tx.hash)
        below_head = self.chain.get_block_by_number(0)
        side_difficulty = self.chain.get_total_difficulty(side.hash)
        self.assertNoResult(unknown)
        self.assertNoResult(on_side)
        self.assertNoResult(below_head)
        self.assertNoResult(side_difficulty)
        self.threads.release()
        self.assertIsNone(self.successResultOf(unknown))
        self.assertIsNone(self.successResultOf(on_side))
        self.assertEqual(self.successResultOf(below_head).header, self.genesis)
        self.assertEqual(self.successResultOf(side_difficulty), self.chain.head.total_difficulty)

    def test_old_in_thread(self) -> None:
        """
        Once its block is no longer among the recent ones, a transaction is
        read in the reader pool, with the same answer.
        """
        tx = transfer(0, 0)
        parent = build_on(self.store, self.genesis, [tx]).block
        self.successResultOf(import_one(self.chain, parent))
        for _ in range(RECENT_BLOCKS):
            child = build_on(self.store, parent.header).block
            self.assertEqual(self.successResultOf(import_one(self.chain, child)), ImportResult.IMPORTED_BEST)
            parent = child
        receipt = self.chain.get_receipt(tx.hash)
        self.assertNoResult(receipt)
        self.threads.release()
        self.assertEqual(self.successResultOf(receipt).location.block_number, 1)


original_make = chain_module.ChainService._thd_make


class ChainThreadsTests(TestCase):
    """
    Tests for L{ChainThreads} with a L{ChainService} on real threads.
    """

    @inlineCallbacks
    def test_writes_in_order(self) -> Any:
        """
        Writes queued together run one after another on the writer thread,
        each producing on the previous one; reads run on the reader pool.
        """
        store, genesis = sample_store()
        threads = ChainThreads(reactor, readers=2)
        chain = ChainService(store, sample_rules(), reactor, threads=threads)
        chain.startService()
        self.addCleanup(chain.stopService)
        names: list[str] = []
        self.patch(
            chain_module.ChainService, "_thd_make",
            lambda service, request: (names.append(threading.current_thread().name), original_make(service, request))[1],
        )
        requests = [TransactionsBlock(COINBASE, BlockTime(0, 0, None), (transfer(0, nonce),)) for nonce in range(3)]
        pending = [chain.make(request) for request in requests]
        blocks = []
        for deferred in pending:
            blocks.append((yield deferred).block)
        self.assertEqual([block.number for block in blocks], [1, 2, 3])
        self.assertEqual(chain.head.header, blocks[-1].header)
        self.assertEqual(len(set(names)), 1)
        self.assertIn("writer", names[0])
        block = yield chain.get_block_by_number(2)
        self.assertEqual(block, blocks[1])

    @inlineCallbacks
    def test_run_yields_between_blocks(self) -> Any:
        """
        The writer importing a run hands the interpreter lock over after
        each empty block (L{SerialThread.yield_interpreter}, the module's
        L{yield_interpreter}), on the writer thread, not after a block with
        transactions.
        """
        store, genesis = sample_store()
        other, _ = sample_store()
        blocks, parent = [], genesis
        for index in range(4):
            block = build_on(other, parent, [transfer(0, 0)] if index == 1 else []).block
            store_block(BlockImporter(other, sample_rules()), block)
            blocks.append(block)
            parent = block.header
        yielded: list[str] = []
        self.patch(threads_module, "yield_interpreter", lambda: yielded.append(threading.current_thread().name))
        threads = ChainThreads(reactor, readers=1)
        chain = ChainService(store, sample_rules(), reactor, threads=threads)
        chain.startService()
        self.addCleanup(chain.stopService)
        outcomes = yield chain.import_blocks(blocks, FILE)
        self.assertEqual([outcome.result for outcome in outcomes], [ImportResult.IMPORTED_BEST] * 4)
        self.assertEqual(len(yielded), 3)
        self.assertIn("writer", yielded[0])

    @inlineCallbacks
    def test_serial_thread_failure(self) -> Any:
        """
        An exception in a job fails its Deferred; later jobs still run, in order.
        """
        serial = SerialThread(reactor, "test-serial")
        order: list[int] = []
        failing = serial.run(lambda: 1 // 0)
        later = serial.run(order.append, 1)
        serial.start()
        self.addCleanup(serial.stop)
        yield self.assertFailure(failing, ZeroDivisionError)
        yield later
        self.assertEqual(order, [1])

    def test_serial_thread_stop_drains(self) -> None:
        """
        Stopping runs the jobs already queued before the thread ends.
        """
        serial = SerialThread(reactor, "test-serial")
        done: list[int] = []
        serial.run(done.append, 1)
        serial.run(done.append, 2)
        serial.start()
        serial.stop()
        self.assertEqual(done, [1, 2])

    @inlineCallbacks
    def test_small_job_at_once_when_idle(self) -> Any:
        """
        A small job runs at once on the calling thread when the writer is
        idle; while a job is queued or running, it waits its turn on the
        writer thread, after the jobs before it.
        """
        serial = SerialThread(reactor, "test-serial")
        serial.start()
        self.addCleanup(serial.stop)
        now = serial.run_small(lambda: threading.current_thread().name)
        self.assertEqual(self.successResultOf(now), threading.current_thread().name)
        self.failureResultOf(serial.run_small(lambda: 1 // 0), ZeroDivisionError)
        gate = threading.Event()
        order: list[str] = []
        blocking = serial.run(lambda: (gate.wait(10), order.append("first")))
        waiting = serial.run_small(lambda: order.append(threading.current_thread().name))
        self.assertNoResult(waiting)
        gate.set()
        yield blocking
        yield waiting
        self.assertEqual(order, ["first", "test-serial"])
        # Idle again once every result was delivered.
        again = serial.run_small(lambda: threading.current_thread().name)
        self.assertEqual(self.successResultOf(again), threading.current_thread().name)

    def test_small_job_queued_before_start(self) -> None:
        """
        Before the thread starts, a small job is queued like any other.
        """
        serial = SerialThread(reactor, "test-serial")
        done: list[int] = []
        serial.run_small(done.append, 1)
        self.assertEqual(done, [])
        serial.start()
        serial.stop()
        self.assertEqual(done, [1])

    def test_needs_a_reader(self) -> None:
        """
        A reader pool of no threads is refused.
        """
        self.assertRaises(ValueError, ChainThreads, reactor, readers=0)


_MINING_CHILD = """
import sys
from twisted.internet.task import Clock
from nodex.db.rocks import RocksStore
from nodex.services.blocktime import BlockClock
from nodex.services.chain import ChainService
from nodex.services.miner import Miner
from tests.chain.test_processing import COINBASE, sample_rules, sample_store, transfer

class Pool:
    def __init__(self):
        self.next = []
    def pending(self):
        pending, self.next = self.next, []
        return pending
    def remove(self, hashes):
        pass
    def watch_for_miner(self, automining):
        pass

store, genesis = sample_store(store=RocksStore.open(sys.argv[1]))
clock = Clock()
chain = ChainService(store, sample_rules(), clock)
pool = Pool()
miner = Miner(chain, pool, COINBASE, "manual", clock, BlockClock(clock, chain.rules))
for nonce in range(100000):
    tx = transfer(0, nonce)
    pool.next = [tx]
    block = miner.mine().result
    sys.stdout.write(f"{block.number} {tx.hash.hex()}\\n")
    sys.stdout.flush()
"""


class KilledWriterTests(SynchronousTestCase):
    """
    A process killed with SIGKILL while it mines leaves a consistent chain.
    """

    def test_sigkill_while_mining(self) -> None:
        """
        After a C{kill -9} in the middle of mining, the reopened chain holds
        every block whose import was reported, its head is the last block of
        a complete canonical index, and each reported transaction has its receipt.
        """
        import os
        import signal
        import subprocess
        import sys

        path = os.path.abspath(self.mktemp())
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        child = subprocess.Popen(
            [sys.executable, "-c", _MINING_CHILD, path],
            stdout=subprocess.PIPE,
            cwd=root,
            env={**os.environ, "PYTHONPATH": root},
            text=True,
        )
        seen = []
        assert child.stdout is not None
        for line in child.stdout:
            seen.append(line.split())
            if len(seen) == 40:
                break
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        child.stdout.close()
        self.assertEqual(len(seen), 40)
        store = RocksStore.open(path)
        self.addCleanup(store.close)
        chain = ChainService(store, sample_rules(), Clock())
        head = chain.head.header
        self.assertGreaterEqual(head.number, int(seen[-1][0]))
        self.assertEqual(read_head_hash(store), head.hash)
        header = head
        while header.number > 0:
            self.assertEqual(read_canonical_hash(store, header.number), header.hash)
            parent = self.successResultOf(chain.get_header_by_hash(header.parent_hash))
            self.assertIsNotNone(parent)
            header = parent
        self.assertIsNone(read_canonical_hash(store, head.number + 1))
        for number, tx_hash in seen:
            receipt = self.successResultOf(chain.get_receipt(bytes.fromhex(tx_hash)))
            self.assertEqual(receipt.location.block_number, int(number))
