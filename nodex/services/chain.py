"""
The chain service (L5): the writer lane around the importer, the head, and
the reads of the chain (C{docs/chain-service.md}).

Every block enters through one door, L{nodex.chain.importer.BlockImporter}
(DESIGN §4): blocks from outside (peers, miners' submissions, chain files)
and the blocks this node makes (its miner's, its dev chain's), and rewinds.
The service runs the importer on one writer thread, one job at a time in
arrival order, and publishes what each job changed on the reactor thread:
the public L{ChainService.head} moves after the block's batch is written,
and the observers are told then.  Blocks held for being ahead of the clock
are imported by a writer job when they are due.  Its writing half is the
small L{IChainWriter} the miner, the dev chain and the work service are
given; its reading half is L{nodex.services.chainreader.ChainReader}.
"""

from collections import deque
from collections.abc import Callable, Sequence
from threading import Lock
from typing import Any

from twisted.application.service import Service
from twisted.internet.defer import Deferred, fail, maybeDeferred, succeed
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.logger import Logger
from zope.interface import implementer

from nodex.chain.aside import BlockSource, SourceKind
from nodex.chain.building.builder import BuiltBlock
from nodex.chain.importer import (
    BlockImporter,
    ChainNotInitializedError,
    Imported,
    ImportOutcome,
    Unused,
    outcomes,
    read_head,
)
from nodex.chain.logs.index import stale_sections
from nodex.chain.building.making import BlockRequest, Declined
from nodex.chain.processing import BlockOutcome
from nodex.chain.rules import ChainRules
from nodex.db.errors import StoreError
from nodex.db.kv import KeyValueStore
from nodex.api.chain import (
    BadBlock,
    ChainEvent,
    ChainHead,
    IBlockSource,
    IChainService,
    IChainWriter,
    IPeerChain,
    ImportResult,
)
from nodex.services.chainreader import RECENT_BLOCKS, ChainReader, receipt_views
from nodex.services.clockcheck import ClockCheck
from nodex.services.followups import FollowUps
from nodex.services.loglines import LineThrottle
from nodex.services.threads import ChainThreads, SerialThread
from nodex.state.state import State
from nodex.structures.blocks import Block

IMPORT_LOG_INTERVAL = 1.0
"""The fewest seconds between two "imported block" lines: a sync or a run
imports thousands of blocks a second, and the next line counts the blocks
that went unlogged (as the miner does for mined blocks)."""

BAD_BLOCKS_KEPT = 16
"""How many refused blocks L{ChainService.bad_blocks} keeps (C{debug_getBadBlocks})."""

RUN_JOB_BLOCKS = 64
"""The most blocks of a run imported in one writer job: the observers of a
job's blocks are told in one turn of the reactor, so a long run is cut into
jobs whose publishing stays short (L{ChainService.import_blocks})."""

SMALL_REWIND_BLOCKS = 64
"""The most blocks a rewind may delete to count as a small writer job (run
at once when the writer is idle): what C{loadFixture}'s C{evm_revert} does
before every test of a suite, one or a few blocks."""


def _writer_idle(threads: ChainThreads | None) -> Callable[[], bool]:
    """
    Whether the writer of C{threads} would run a small job at once
    (L{SerialThread.idle}); always without threads (everything runs at
    once: unit tests); never for another kind of writer (the network
    simulator's), whose C{run_small} then decides.
    """
    if threads is None:
        return lambda: True
    writer = getattr(threads, "writer", None)
    if isinstance(writer, SerialThread):
        return lambda: writer.idle
    return lambda: False


@implementer(IChainService, IChainWriter, IBlockSource, IPeerChain)
class ChainService(ChainReader, Service):
    """
    The chain of one store.

    @ivar rules: the network's consensus constants.
    @ivar store: the key-value store the chain lives in.
    """

    log = Logger()

    def __init__(
        self,
        store: KeyValueStore,
        rules: ChainRules,
        clock: IReactorTime,
        threads: ChainThreads | None = None,
        close_store: bool = False,
        follow_ups: FollowUps | None = None,
    ) -> None:
        """
        @param store: a store whose chain has been initialised by the time
            the service starts (or is first used); it may still be closed
            now (the composition root opens it when the node starts).
        @param clock: the local time: the drift limit's, and when held
            blocks are due.
        @param threads: the writer thread and reader pool; L{None} runs
            everything at once on the calling thread (unit tests).
        @param close_store: close the store when the service stops.
        @param follow_ups: what the RPC edge holds while it answers (a new
            one by default): the observers of a block made for the answer
            being computed are told after it is sent (L{make}).
        """
        super().__init__(store, threads.run_reader if threads else maybeDeferred)
        self.rules = rules
        self._clock = clock
        self._threads = threads
        self._close_store = close_store
        self.follow_ups = follow_ups if follow_ups is not None else FollowUps()
        self._run_writer: Callable[..., Deferred[Any]] = threads.run_writer if threads else maybeDeferred
        self._run_small_writer: Callable[..., Deferred[Any]] = threads.run_writer_small if threads else maybeDeferred
        self._writer_idle = _writer_idle(threads)
        self._observers: list[Callable[[ChainEvent], None]] = []
        self._side_observers: list[Callable[[Block], None]] = []
        self._unused_observers: list[Callable[[Unused], None]] = []
        # Refused blocks, newest last (debug_getBadBlocks): appended by the
        # writer thread, read on the reactor thread, hence the lock.
        self._bad_blocks: deque[BadBlock] = deque(maxlen=BAD_BLOCKS_KEPT)
        self._bad_blocks_lock = Lock()
        self._importer: BlockImporter | None = None
        self._head: ChainHead | None = None
        self._import_lines = LineThrottle(IMPORT_LOG_INTERVAL)
        self._rewind_lines = LineThrottle(IMPORT_LOG_INTERVAL)
        self._release_call: IDelayedCall | None = None
        self._clock_check = ClockCheck(rules.max_seconds_in_future or 0)

    @property
    def importer(self) -> BlockImporter:
        """
        The importer of this chain, made on first use (the writer's own:
        only writer jobs touch it).

        @raise ChainNotInitializedError: the store holds no chain.
        """
        if self._importer is None:
            self._importer = BlockImporter(
                self.store,
                self.rules,
                read_header=self._thd_header,
                read_block=self._thd_block,
                read_receipts=self._thd_receipts,
            )
        return self._importer

    # Service

    def startService(self) -> None:
        """
        Read the head, start the writer thread and the reader pool.

        @raise ChainNotInitializedError: the store holds no chain.
        """
        head = self.head
        if self._threads is not None:
            self._threads.start()
        super().startService()
        self.log.info(
            "chain at block {number} 0x{hash}, total difficulty {td}",
            number=head.header.number,
            hash=head.header.hash.hex(),
            td=head.total_difficulty,
        )
        if self.importer.logs_indexed < head.header.number or stale_sections(self.store):
            self._catch_up_logs()

    def _catch_up_logs(self) -> None:
        """
        Bring the log index's bitmaps up to the head in writer jobs of a
        bounded size (a store written by an older nodex, or one whose last
        blocks were imported just before a stop), each queued after the
        writes already waiting.
        """

        def step() -> int:
            return self._thd_index_logs(force=True)

        def again(remaining: int) -> None:
            if remaining and self.running:
                self._catch_up_logs()

        self._run_writer(step).addCallback(again).addErrback(
            lambda failure: self.log.failure("indexing the logs of stored blocks failed", failure)
        )

    def stopService(self) -> None:
        """
        Let the queued writes finish, stop the threads and close the store.
        """
        super().stopService()
        if self._release_call is not None and self._release_call.active():
            self._release_call.cancel()
        self._release_call = None
        if self._threads is not None:
            self._threads.stop()
        if self._close_store:
            self.store.close()

    # The head

    @property
    def chain_id(self) -> int:
        """
        The EIP-155 chain id.
        """
        return self.rules.chain_id

    @property
    def head(self) -> ChainHead:
        """
        The best block as the reactor thread knows it.

        @raise ChainNotInitializedError: the store holds no chain.
        """
        if self._head is None:
            self._head = read_head(self.store, self._thd_header)
        return self._head

    def add_observer(self, observer: Callable[[ChainEvent], None]) -> None:
        """
        Call C{observer} on the reactor thread after every change of the canonical chain.
        """
        self._observers.append(observer)

    def add_side_observer(self, observer: Callable[[Block], None]) -> None:
        """
        Call C{observer} on the reactor thread with every valid block stored
        off the canonical chain (C{IMPORTED_NOT_BEST}), whatever its source:
        a peer, a merged miner, this node's own miner losing a race.  Such
        blocks are the uncle candidates of the blocks this node builds.
        """
        self._side_observers.append(observer)

    def add_unused_observer(self, observer: Callable[[Unused], None]) -> None:
        """
        Call C{observer} on the reactor thread with every block kept aside
        (an orphan, a block ahead of the clock) that left without being
        imported: its parent never came, it was pushed out for room, or it
        turned out invalid once due.  The peer network counts such blocks
        against their senders.
        """
        self._unused_observers.append(observer)

    def _publish(self, step: Imported) -> Imported:
        """
        On the reactor thread: move the head and tell the observers (the
        side-block observers of a block stored off the canonical chain).
        """
        if step.head is not None:
            self._head = step.head
        if step.event is not None:
            self._tell_observers(step.event)
        elif step.result is ImportResult.IMPORTED_NOT_BEST and step.block is not None:
            for side_observer in list(self._side_observers):
                try:
                    side_observer(step.block)
                except Exception:
                    self.log.failure("side-block observer {observer!r} failed", observer=side_observer)
        return step

    def _tell_observers(self, event: ChainEvent) -> None:
        """
        Tell the observers of the chain of C{event}; one that fails is logged.
        """
        for observer in list(self._observers):
            try:
                observer(event)
            except Exception:
                self.log.failure("chain observer {observer!r} failed", observer=observer)

    def _publish_after_answer(self, step: Imported) -> Imported:
        """
        L{_publish} for a block made for the request being answered: the
        head moves now, and the observers are told once the answer has been
        sent (L{FollowUps}), when the edge holds one; otherwise now.
        """
        follow_ups = self.follow_ups
        if step.event is None or not follow_ups.holding:
            return self._publish(step)
        if step.head is not None:
            self._head = step.head
        follow_ups.later(self._tell_observers, step.event)
        return step

    def _publish_job(self, job: "_Job") -> list[ImportOutcome]:
        """
        On the reactor thread: publish the steps of an import job in order,
        report the blocks that left the kept-aside sets unused, and wait
        for the next held block to come due.
        """
        for step in job.steps:
            self._publish(step)
        for unused in job.unused:
            self.log.info(
                "dropped kept-aside block 0x{hash} from {source}: {reason}",
                hash=unused.block_hash.hex(), source=describe_source(unused.source), reason=unused.reason,
            )
            for observer in list(self._unused_observers):
                try:
                    observer(unused)
                except Exception:
                    self.log.failure("kept-aside observer {observer!r} failed", observer=observer)
        self._wait_for_due(job.due)
        return outcomes(step for step in job.steps if step.result is not None)

    # Blocks from outside

    def bad_blocks(self) -> list[BadBlock]:
        """
        The last L{BAD_BLOCKS_KEPT} blocks refused by the importer since the
        node started, oldest first, each with the rule it broke.
        """
        with self._bad_blocks_lock:
            return list(self._bad_blocks)

    def import_blocks(self, blocks: Sequence[Block], source: BlockSource) -> Deferred[list[ImportOutcome]]:
        """
        Import blocks from outside in order, each validated, executed and
        written in its own batch, in writer jobs of at most
        L{RUN_JOB_BLOCKS} blocks, stopping after the first invalid one.
        A block whose parent is unknown is kept aside (C{NO_PARENT}); one
        stamped beyond the network's drift limit from the clock is held
        until it is due (C{FUTURE_BLOCK}), or dropped when it is hours ahead.

        @param source: where the blocks come from: a peer (its node id
            bounds what it may have kept aside), a miner's submission of a
            template built here, a chain file.
        @return: a Deferred firing with an L{ImportOutcome} per block
            imported, kept or refused (kept-aside blocks that followed them
            included), the refused one last.
        """
        pending = list(blocks)
        stamps = {block.hash: block.header.timestamp for block in pending} if source.kind is SourceKind.PEER else {}
        done: list[ImportOutcome] = []
        finished: Deferred[list[ImportOutcome]] = Deferred()

        def published(job: _Job) -> None:
            done.extend(self._publish_job(job))
            if job.stopped or not pending:
                self._check_clock(done, stamps, source)
                finished.callback(done)
            else:
                next_job()

        def next_job() -> None:
            run = pending[:RUN_JOB_BLOCKS]
            del pending[:RUN_JOB_BLOCKS]
            self._run_writer(self._thd_import_run, run, source).addCallback(published).addErrback(finished.errback)

        next_job()
        return finished

    def _check_clock(self, done: Sequence[ImportOutcome], stamps: dict[bytes, int], source: BlockSource) -> None:
        """
        Tell the clock check how far ahead of the clock a peer's new blocks are stamped.
        """
        if not stamps or source.peer is None or self.rules.max_seconds_in_future is None:
            return
        now = int(self._clock.seconds())
        for outcome in done:
            if outcome.result in (ImportResult.IMPORTED_BEST, ImportResult.FUTURE_BLOCK):
                stamp = stamps.get(outcome.block_hash)
                if stamp is not None:
                    self._clock_check.observe(source.peer, stamp - now)

    def _wait_for_due(self, due: int | None) -> None:
        """
        Import the held blocks when the earliest of them is due.
        """
        if due is None or not self.running:
            return
        if self._release_call is not None and self._release_call.active():
            if self._release_call.getTime() <= due:
                return
            self._release_call.cancel()
        delay = max(0.0, due - self._clock.seconds())
        self._release_call = self._clock.callLater(delay, self._release_due)

    def _release_due(self) -> None:
        """
        Import the held blocks that are due now (a writer job).
        """
        self._release_call = None
        self._run_writer(self._thd_release_due).addCallback(self._publish_job).addErrback(
            lambda failure: self.log.failure("importing held blocks failed", failure)
        )

    # Blocks made here (IChainWriter)

    def make(self, request: BlockRequest, small: bool = False, after_answer: bool = False) -> Deferred[Imported]:
        """
        Build the block C{request} asks for on the tip, seal it with the
        built-in solver and store it, in one writer job, so that blocks
        made one after another each build on the last.

        @param small: the block is known to be small (see
            L{nodex.services.threads.SerialThread.run_small}): when the writer
            is idle it is made at once on the calling thread.
        @param after_answer: the observers may be told after the answer of
            the request being served is sent (L{_publish_after_answer}):
            the caller and its callbacks read nothing they change.
        @return: a Deferred firing with the published step (its C{block}
            L{None} when the request made none: see its C{built}), or failing
            with L{nodex.chain.building.making.NotDueError} (not yet: the drift
            limit), L{nodex.chain.dev.blocks.SealSearchError},
            L{TransactionRejectedError} (a lone candidate's admission) or
            L{InvalidBlockError}.
        """
        publish = self._publish_after_answer if after_answer else self._publish
        if small and self._writer_idle():
            # What run_small would do, without its Deferred (maybeDeferred:
            # ~1.5 us an automined send): the block is made here, now.
            try:
                if after_answer and self.follow_ups.holding:
                    # The cache of recent blocks only serves reads, and no
                    # read comes before the follow-ups have run: it takes
                    # the block after the answer too, before the observers.
                    step = self.importer.make(request)
                    self.follow_ups.later(self._after_write, step)
                    return succeed(self._publish_after_answer(step))
                return succeed(publish(self._thd_make(request)))
            except Exception:
                return fail()
        run = self._run_small_writer if small else self._run_writer
        made = run(self._thd_make, request)
        if made.called and type(made.result) is Imported:
            # The job ran at once (a small block, a writer of the simulator's
            # that was idle, or a unit test's runner): its step
            # is published here, one Deferred callback run fewer for each
            # automined transaction.  Deferred.result is Twisted's attribute
            # (read, never written); tests.services.test_chain's
            # test_make_at_once breaks if it stops holding a fired result.
            try:
                return succeed(publish(made.result))
            except Exception:
                return fail()
        return made.addCallback(publish)

    def build(self, request: BlockRequest) -> "Deferred[tuple[BuiltBlock | Declined, State]]":
        """
        Build the unsealed block C{request} asks for on the tip without
        storing it (on the writer thread): the first half of a block whose
        seal is searched elsewhere; L{store_built} is the second.

        @return: a Deferred firing with the built block (or why none was)
            and the state it was built on.
        """
        return self._run_writer(lambda: self.importer.build(request))

    def store_built(self, block: Block, outcome: BlockOutcome, state: State | None = None) -> Deferred[ImportOutcome]:
        """
        Store a block L{build} made and a seal search sealed; its header
        rules, seal and roots are checked.

        @param state: the state it was built on: kept for the next block
            when the block becomes the tip.
        @return: a Deferred firing with its outcome.
        """

        def job() -> Imported:
            step = self.importer.store_built(block, outcome, state)
            if step.result is ImportResult.INVALID_BLOCK:
                self.log.warn(
                    "invalid built block {number} 0x{hash}: {reason}",
                    number=block.number, hash=block.hash.hex(), reason=step.reason,
                )
            self._after_write(step)
            return step

        return self._run_writer(job).addCallback(self._publish).addCallback(lambda step: step.outcome())

    def set_rules(self, rules: ChainRules) -> Deferred[None]:
        """
        Replace the network's rules between two writer jobs, for the blocks
        built and imported from now on (C{evm_setBlockGasLimit} on a dev chain).
        """

        def job() -> None:
            self.rules = rules
            self.importer.rules = rules

        return self._run_writer(job)

    def rewind(self, number: int) -> Deferred[None]:
        """
        Make the canonical block at C{number} the head, deleting the canonical
        blocks above it (C{evm_revert}, C{evm_reset}); a number at or above
        the head changes nothing.  Observers get a L{ChainEvent} whose
        C{rewound} is set.  A rewind of at most L{SMALL_REWIND_BLOCKS}
        blocks is a small writer job (at once when the writer is idle: no
        thread hop for the C{evm_revert} of a test's few blocks).
        """
        small = 0 <= self.head.header.number - number <= SMALL_REWIND_BLOCKS
        run = self._run_small_writer if small else self._run_writer
        return run(self._thd_rewind, number).addCallback(self._publish).addCallback(lambda _: None)

    # Writer jobs: the importer, then the service's cache of recent blocks

    def _thd_import_run(self, blocks: Sequence[Block], source: BlockSource) -> "_Job":
        """
        Import blocks in order through the importer, stopping after the
        first refused one (writer thread).
        """
        now = int(self._clock.seconds())
        importer = self.importer
        steps: list[Imported] = []
        stopped = False
        for block in blocks:
            done = importer.import_blocks([block], now, source)
            if self._threads is not None and not block.transactions:
                self._threads.yield_interpreter()
            self._after_import(done)
            steps.extend(done)
            if done[0].result is ImportResult.INVALID_BLOCK:
                stopped = True
                break
        return _Job(steps, stopped, importer.take_unused(), importer.next_due())

    def _thd_release_due(self) -> "_Job":
        """
        Import the held blocks that are due (writer thread).
        """
        importer = self.importer
        steps = importer.release_due(int(self._clock.seconds()))
        self._after_import(steps)
        return _Job(steps, False, importer.take_unused(), importer.next_due())

    def _after_import(self, steps: Sequence[Imported]) -> None:
        """
        Keep what an import wrote, note refused blocks, log (writer thread).
        """
        for step in steps:
            if step.result is ImportResult.INVALID_BLOCK and step.refused is not None:
                with self._bad_blocks_lock:
                    self._bad_blocks.append(BadBlock(step.refused, step.reason or ""))
            self._after_write(step)
            self._log_import(step)

    def _thd_make(self, request: BlockRequest) -> Imported:
        """
        Make and store the block of a request (writer thread).
        """
        step = self.importer.make(request)
        self._after_write(step)
        return step

    def _thd_rewind(self, number: int) -> Imported:
        """
        Delete the canonical blocks above C{number} and move the head there (writer thread).
        """
        step = self.importer.rewind(number)
        if step.event is not None:
            with self._recent_lock:
                for block in step.event.abandoned:
                    self._forget_lookups(block)
                    self._recent.pop(block.hash, None)
            self._log_rewind(number)
        return step

    def _log_rewind(self, number: int) -> None:
        """
        Say that the chain was rewound, at most once every
        L{IMPORT_LOG_INTERVAL} (a test suite's C{evm_revert} before every
        test made a line each, and a line costs about a tenth of the
        rewind); the next line counts the rewinds that went unlogged.
        """
        unlogged = self._rewind_lines.due(self._clock.seconds())
        if unlogged is None:
            return
        self.log.info(
            "rewound the chain to block {number}{since}",
            number=number,
            since=f" ({unlogged} rewinds since the last line)" if unlogged else "",
        )

    def _after_write(self, step: Imported) -> None:
        """
        Keep a block just written in the cache of recent blocks.
        """
        if step.block is None:
            return
        event = step.event
        if event is None:
            self._remember(step.block, step.receipts)
        else:
            self._remember(step.block, step.receipts, event.adopted, event.abandoned)
            if event.abandoned:
                self.log.info(
                    "reorganisation at block {number}: {abandoned} blocks abandoned, {adopted} adopted",
                    number=event.adopted[0].number - 1,
                    abandoned=len(event.abandoned),
                    adopted=len(event.adopted),
                )

    def _thd_index_logs(self, force: bool = False) -> int:
        """
        Extend the log index's bitmaps (L{BlockImporter.index_logs}); a
        failure is logged: the blocks are stored, and searches read the
        blooms the bitmaps lack.

        @return: how many blocks are still to index.
        """
        try:
            return self.importer.index_logs(force=force)
        except StoreError:
            self.log.failure("indexing the logs of blocks up to {number} failed", number=self.importer.tip.header.number)
            return 0

    def _log_import(self, step: Imported) -> None:
        """
        The log line of one imported or refused block.
        """
        block = step.block
        if step.result is ImportResult.INVALID_BLOCK:
            assert step.block_hash is not None
            self.log.warn("invalid block 0x{hash}: {reason}", hash=step.block_hash.hex(), reason=step.reason)
        elif block is not None and step.result is ImportResult.IMPORTED_BEST:
            unlogged = self._import_lines.due(self._clock.seconds())
            if unlogged is None:
                return
            self.log.info(
                "imported block {number} 0x{hash} with {count} transactions{since}",
                number=block.number,
                hash=block.hash.hex(),
                count=len(block.transactions),
                since=f" ({unlogged} blocks imported since the last line)" if unlogged else "",
            )
        elif block is not None and step.result is ImportResult.IMPORTED_NOT_BEST:
            self.log.info("imported side block {number} 0x{hash}", number=block.number, hash=block.hash.hex())
        elif step.result is ImportResult.FUTURE_BLOCK:
            self.log.info("holding block 0x{hash}: {reason}", hash=(step.block_hash or b"").hex(), reason=step.reason)
        elif step.result is ImportResult.DROPPED:
            self.log.info("dropped block 0x{hash}: {reason}", hash=(step.block_hash or b"").hex(), reason=step.reason)


class _Job:
    """
    What one import job did, for the reactor thread to publish.

    @ivar steps: the importer's steps, in order.
    @ivar stopped: the run stopped at a refused block.
    @ivar unused: the kept-aside blocks that left unused.
    @ivar due: when the earliest held block is due, or L{None}.
    """

    def __init__(self, steps: list[Imported], stopped: bool, unused: list[Unused], due: int | None) -> None:
        self.steps = steps
        self.stopped = stopped
        self.unused = unused
        self.due = due


def describe_source(source: BlockSource) -> str:
    """
    How a log line names where a block came from.
    """
    if source.peer is not None:
        return f"peer {source.peer.hex()[:8]}"
    return source.kind.value


__all__ = [
    "ChainNotInitializedError",
    "ChainService",
    "RECENT_BLOCKS",
    "RUN_JOB_BLOCKS",
    "describe_source",
    "receipt_views",
]
