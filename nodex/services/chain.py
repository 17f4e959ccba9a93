"""
The chain service (L5): the writer lane around the importer, the head, and
the reads of the chain (C{docs/chain-service.md}).

Every block enters through one door, L{nodex.chain.importer.BlockImporter}
(DESIGN §4): imports from any source, blocks this node builds, rewinds.
The service runs the importer on one writer thread, one job at a time in
arrival order, and publishes what each job changed on the reactor thread:
the public L{ChainService.head} moves after the block's batch is written,
and the observers are told then.  Reads run on the reader pool against
what the store holds, or at once from a cache of the blocks written last.
"""

from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Sequence
from threading import Lock
from typing import Any, TypeVar

from twisted.application.service import Service
from twisted.internet.defer import Deferred, maybeDeferred, succeed
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger
from zope.interface import implementer

from nodex.chain.errors import ChainError
from nodex.chain.importer import (
    BlockImporter,
    BlockProducer,
    ChainNotInitializedError,
    Imported,
    ImportOutcome,
    outcomes,
    read_head,
)
from nodex.chain.logindex import stale_sections
from nodex.chain.processing import BlockOutcome, effective_gas_price
from nodex.chain.rules import ChainRules
from nodex.db.errors import StoreError
from nodex.db.kv import KeyValueStore
from nodex.db.schema import (
    read_body_rlp,
    read_canonical_hash,
    read_header_rlp,
    read_receipts_rlp,
    read_total_difficulty,
    read_tx_lookup,
)
from nodex.evm.instructions.system import compute_contract_address
from nodex.interfaces import (
    BadBlock,
    ChainEvent,
    ChainHead,
    IBlockSource,
    IChainService,
    ImportResult,
    ReceiptView,
    TransactionLocation,
)
from nodex.primitives import Address, Hash32
from nodex.services.threads import ChainThreads, yield_interpreter
from nodex.state.state import State
from nodex.structures.accounts import Account
from nodex.structures.blocks import Block
from nodex.structures.headers import Header
from nodex.structures.receipts import Receipt, decode_receipts

T = TypeVar("T")

RECENT_BLOCKS = 64
"""How many recently written blocks (with their receipts) the service keeps decoded for reads."""

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


@implementer(IChainService, IBlockSource)
class ChainService(Service):
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
    ) -> None:
        """
        @param store: a store whose chain has been initialised by the time
            the service starts (or is first used); it may still be closed
            now (the composition root opens it when the node starts).
        @param clock: the time source of the check of future timestamps.
        @param threads: the writer thread and reader pool; L{None} runs
            everything at once on the calling thread (unit tests).
        @param close_store: close the store when the service stops.
        """
        self.store = store
        self.rules = rules
        self._clock = clock
        self._threads = threads
        self._close_store = close_store
        self._run_writer: Callable[..., Deferred[Any]] = threads.run_writer if threads else maybeDeferred
        self._run_small_writer: Callable[..., Deferred[Any]] = threads.run_writer_small if threads else maybeDeferred
        self._run_reader: Callable[..., Deferred[Any]] = threads.run_reader if threads else maybeDeferred
        self._observers: list[Callable[[ChainEvent], None]] = []
        self._side_observers: list[Callable[[Block], None]] = []
        self._recent: OrderedDict[bytes, tuple[Block, tuple[Receipt, ...]]] = OrderedDict()
        self._recent_lookup: dict[bytes, tuple[bytes, int]] = {}
        self._recent_lock = Lock()
        # Refused blocks, newest last (debug_getBadBlocks): appended by the
        # writer thread, read on the reactor thread, hence the lock.
        self._bad_blocks: deque[BadBlock] = deque(maxlen=BAD_BLOCKS_KEPT)
        self._bad_blocks_lock = Lock()
        self._importer: BlockImporter | None = None
        self._head: ChainHead | None = None
        self._logged_at: float | None = None
        self._unlogged = 0

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

    def _publish(self, step: Imported) -> Any:
        """
        On the reactor thread: move the head and tell the observers (the
        side-block observers of a block stored off the canonical chain).
        """
        if step.head is not None:
            self._head = step.head
        if step.event is not None:
            for observer in list(self._observers):
                try:
                    observer(step.event)
                except Exception:
                    self.log.failure("chain observer {observer!r} failed", observer=observer)
        elif step.result == ImportResult.IMPORTED_NOT_BEST and step.block is not None:
            for side_observer in list(self._side_observers):
                try:
                    side_observer(step.block)
                except Exception:
                    self.log.failure("side-block observer {observer!r} failed", observer=side_observer)
        return step.result

    def _publish_all(self, steps: Sequence[Imported]) -> list[ImportOutcome]:
        """
        On the reactor thread: publish the steps of an import, in order.
        """
        for step in steps:
            self._publish(step)
        return outcomes(steps)

    # Imports

    def bad_blocks(self) -> list[BadBlock]:
        """
        The last L{BAD_BLOCKS_KEPT} blocks refused by the importer since the
        node started, oldest first, each with the rule it broke.
        """
        with self._bad_blocks_lock:
            return list(self._bad_blocks)

    def import_block(self, block: Block) -> Deferred[str]:
        """
        Validate, execute and store a block from any source; adopt it if its
        chain is the heaviest.

        @return: a Deferred firing with an L{ImportResult} name; an invalid
            block's reason is logged.
        """
        return self.import_block_explained(block).addCallback(lambda explained: explained[0])

    def import_block_explained(self, block: Block) -> Deferred[tuple[str, str | None]]:
        """
        Like L{import_block}, with the reason an invalid block was refused
        (for merged-mining submissions and peer scoring).

        @return: a Deferred firing with the L{ImportResult} name and, for
            C{INVALID_BLOCK}, the broken rule (else L{None}).
        """

        def explained(found: list[ImportOutcome]) -> tuple[str, str | None]:
            return found[0].result, found[0].reason

        return (
            self._run_writer(self._thd_import_run, [block])
            .addCallback(lambda job: self._publish_all(job[0]))
            .addCallback(explained)
        )

    def import_blocks(self, blocks: Sequence[Block], built_here: bool = False) -> Deferred[list[ImportOutcome]]:
        """
        Import a run of blocks in order, each validated, executed and
        written in its own batch, in writer jobs of at most
        L{RUN_JOB_BLOCKS} blocks, stopping after the first invalid one.

        @param built_here: the blocks are this node's own templates, sealed
            by a miner (see L{BlockImporter.import_block}).

        @return: a Deferred firing with an L{ImportOutcome} per block
            imported or refused (blocks kept aside that followed them
            included), the refused one last.
        """
        pending = list(blocks)
        done: list[ImportOutcome] = []
        finished: Deferred[list[ImportOutcome]] = Deferred()

        def published(job: tuple[list[Imported], bool]) -> None:
            steps, stopped = job
            done.extend(self._publish_all(steps))
            if stopped or not pending:
                finished.callback(done)
            else:
                next_job()

        def next_job() -> None:
            job = pending[:RUN_JOB_BLOCKS]
            del pending[:RUN_JOB_BLOCKS]
            self._run_writer(self._thd_import_run, job, built_here).addCallback(published).addErrback(finished.errback)

        next_job()
        return finished

    def import_built_block(self, block: Block, outcome: BlockOutcome, state: State | None = None) -> Deferred[str]:
        """
        Store a block whose execution outcome is already known (built by this
        node on the state of its parent); its header rules and seal are
        still checked.

        @param state: the state the block was built on, after the block: kept
            for the next block when the block becomes the tip.
        @return: a Deferred firing with an L{ImportResult} name.
        """
        return self._write(self._thd_import_built, block, outcome, state)

    def build_on_tip(self, build: Callable[[Header, State, Any], T]) -> Deferred[tuple[T, State]]:
        """
        Run C{build} on the writer thread with the tip's header, a state at
        its root and its BLOCKHASH lookup, without storing anything: the
        first half of a block whose seal is searched elsewhere (the second
        is L{import_built_block}).

        @return: a Deferred firing with what C{build} returned and the state
            it built on (changed by it).
        """

        def job() -> tuple[T, State]:
            header, state, block_hashes = self.importer.tip_state()
            return build(header, state, block_hashes), state

        return self._run_writer(job)

    def produce_block(self, producer: BlockProducer, small: bool = False) -> Deferred[Block | None]:
        """
        Build a block on the tip on the writer thread and store it, so that
        blocks produced one after another each build on the previous one.

        @param small: the producer's block is known to be small (see
            L{nodex.services.threads.SerialThread.run_small}): when the writer
            is idle it is built at once on the calling thread.
        @return: a Deferred firing with the stored block (L{None} when the
            producer declined), or failing with L{InvalidBlockError} if the
            producer's block breaks a rule.
        """
        return self._write(self._thd_produce, producer, small=small)

    def store_empty_blocks(self, build: Callable[[Header], Iterable[Block]]) -> Deferred[Block | None]:
        """
        Build a run of empty blocks on the tip with C{build} and store them
        through the importer, all in one writer job (C{hardhat_mine}); the
        observers get one event adopting the whole run.

        @return: a Deferred firing with the last block stored (L{None} when
            C{build} gave none), or failing with L{InvalidBlockError}.
        """
        return self._write(self._thd_store_empty_blocks, build)

    def _thd_store_empty_blocks(self, build: Callable[[Header], Iterable[Block]]) -> Imported:
        """
        Build and store a run of empty blocks on the tip (writer thread).
        """
        step = self.importer.store_empty_run(build(self.importer.tip.header))
        self._after_write(step)
        return step

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
        C{rewound} is set.
        """
        return self._write(self._thd_rewind, number)

    def _write(self, function: Callable[..., Imported], *args: Any, small: bool = False) -> Deferred[Any]:
        """
        Run a writer job and publish what it changed.

        @param small: the job is known to take a few milliseconds at most:
            it may run at once on this thread when the writer is idle.
        """
        run = self._run_small_writer if small else self._run_writer
        return run(function, *args).addCallback(self._publish)

    # Writer jobs: the importer, then the service's cache of recent blocks

    def _thd_import_run(self, blocks: Sequence[Block], built_here: bool = False) -> tuple[list[Imported], bool]:
        """
        Import blocks in order through the importer, stopping after the
        first refused one (writer thread).

        @return: the steps, and whether the run stopped at a refused block.
        """
        now = int(self._clock.seconds())
        steps: list[Imported] = []
        for block in blocks:
            done = self.importer.import_block(block, now, built_here)
            if self._threads is not None and not block.transactions:
                yield_interpreter()
            if done[0].result == ImportResult.INVALID_BLOCK:
                with self._bad_blocks_lock:
                    self._bad_blocks.append(BadBlock(block, done[0].reason or ""))
            for step in done:
                self._after_write(step)
                self._log_import(step)
            steps.extend(done)
            if done[0].result == ImportResult.INVALID_BLOCK:
                return steps, True
        return steps, False

    def _log_import(self, step: Imported) -> None:
        """
        The log line of one imported or refused block.
        """
        block = step.block
        if step.result == ImportResult.INVALID_BLOCK:
            assert step.block_hash is not None
            self.log.warn("invalid block 0x{hash}: {reason}", hash=step.block_hash.hex(), reason=step.reason)
        elif block is not None and step.result == ImportResult.IMPORTED_BEST:
            now = self._clock.seconds()
            if self._logged_at is not None and now - self._logged_at < IMPORT_LOG_INTERVAL:
                self._unlogged += 1
                return
            self._logged_at = now
            unlogged, self._unlogged = self._unlogged, 0
            self.log.info(
                "imported block {number} 0x{hash} with {count} transactions{since}",
                number=block.number,
                hash=block.hash.hex(),
                count=len(block.transactions),
                since=f" ({unlogged} blocks imported since the last line)" if unlogged else "",
            )
        elif block is not None and step.result == ImportResult.IMPORTED_NOT_BEST:
            self.log.info("imported side block {number} 0x{hash}", number=block.number, hash=block.hash.hex())

    def _thd_import_built(self, block: Block, outcome: BlockOutcome, state: State | None) -> Imported:
        """
        Store a block whose outcome is known (writer thread).
        """
        step = self.importer.import_built(block, outcome)
        if step.result == ImportResult.INVALID_BLOCK:
            self.log.warn(
                "invalid built block {number} 0x{hash}: {reason}",
                number=block.number,
                hash=block.hash.hex(),
                reason=step.reason,
            )
        elif state is not None and step.result == ImportResult.IMPORTED_BEST:
            self.importer.keep_tip_state(block.header, state)
        self._after_write(step)
        return step

    def _thd_produce(self, producer: BlockProducer) -> Imported:
        """
        Have C{producer} build on the tip and store its block (writer thread).
        """
        step = self.importer.produce(producer)
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
            self.log.info("rewound the chain to block {number}", number=number)
        return step

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

    def _remember(
        self,
        block: Block,
        receipts: tuple[Receipt, ...],
        adopted: tuple[Block, ...] = (),
        abandoned: tuple[Block, ...] = (),
    ) -> None:
        """
        Keep a just-written block and its receipts decoded for reads, and
        the canonical transactions of the kept blocks by hash, so that a
        recent transaction or receipt is answered without a thread.

        @param adopted: the blocks that became canonical with this write.
        @param abandoned: the blocks that left the canonical chain.
        """
        with self._recent_lock:
            self._recent[block.hash] = (block, receipts)
            for old in abandoned:
                self._forget_lookups(old)
            for new in adopted:
                if new.hash in self._recent:
                    for index, transaction in enumerate(new.transactions):
                        self._recent_lookup[transaction.hash] = (new.hash, index)
            while len(self._recent) > RECENT_BLOCKS:
                _, (evicted, _receipts) = self._recent.popitem(last=False)
                self._forget_lookups(evicted)

    def _forget_lookups(self, block: Block) -> None:
        """
        Drop the kept lookups of C{block}'s transactions (with the lock held).
        """
        block_hash = block.hash
        for transaction in block.transactions:
            found = self._recent_lookup.get(transaction.hash)
            if found is not None and found[0] == block_hash:
                del self._recent_lookup[transaction.hash]

    def _recent_location(self, tx_hash: bytes) -> tuple[Block, tuple[Receipt, ...], int] | None:
        """
        A canonical transaction of a kept block: the block, its receipts and
        the index, or L{None} when it is not kept.
        """
        with self._recent_lock:
            found = self._recent_lookup.get(tx_hash)
            recent = None if found is None else self._recent.get(found[0])
        if recent is None or found is None:
            return None
        return recent[0], recent[1], found[1]


    # Reads (any thread)

    def _thd_header(self, block_hash: bytes) -> Header | None:
        """
        A stored header by hash, or L{None}.
        """
        with self._recent_lock:
            recent = self._recent.get(block_hash)
        if recent is not None:
            return recent[0].header
        raw = read_header_rlp(self.store, block_hash)
        return None if raw is None else Header.decode(raw)

    def _thd_block(self, block_hash: bytes) -> Block | None:
        """
        A stored block by hash, or L{None}.
        """
        with self._recent_lock:
            recent = self._recent.get(block_hash)
        if recent is not None:
            return recent[0]
        header = self._thd_header(block_hash)
        if header is None:
            return None
        body = read_body_rlp(self.store, block_hash)
        if body is None:
            return None
        return Block.from_body(header, body)

    def _thd_receipts(self, block_hash: bytes) -> tuple[Receipt, ...] | None:
        """
        A stored block's receipts, or L{None}.
        """
        with self._recent_lock:
            recent = self._recent.get(block_hash)
        if recent is not None:
            return recent[1]
        raw = read_receipts_rlp(self.store, block_hash)
        return None if raw is None else decode_receipts(raw)

    def _thd_canonical_block(self, number: int) -> Block | None:
        """
        The canonical block at C{number}, or L{None}.
        """
        if number < 0:
            return None
        try:
            block_hash = read_canonical_hash(self.store, number)
        except StoreError:
            return None
        return None if block_hash is None else self._thd_block(block_hash)

    def _thd_is_canonical(self, block_hash: bytes) -> bool:
        """
        Whether a stored block is the canonical one at its height.
        """
        header = self._thd_header(block_hash)
        return header is not None and read_canonical_hash(self.store, header.number) == block_hash

    def _thd_transaction(self, tx_hash: bytes) -> TransactionLocation | None:
        """
        A canonical transaction and its place, or L{None}.
        """
        found = read_tx_lookup(self.store, tx_hash)
        if found is None:
            return None
        block_hash, index = found
        block = self._thd_block(block_hash)
        if block is None or index >= len(block.transactions):
            return None
        return TransactionLocation(block.transactions[index], Hash32(block_hash), block.number, index)

    def _thd_receipt(self, tx_hash: bytes) -> ReceiptView | None:
        """
        The receipt view of a canonical transaction, or L{None}.
        """
        found = read_tx_lookup(self.store, tx_hash)
        if found is None:
            return None
        views = self._thd_block_receipts(found[0], only=found[1])
        return views[0] if views else None

    def _thd_block_receipts(self, block_hash: bytes, only: int | None = None) -> list[ReceiptView] | None:
        """
        The receipt views of a stored block (only the one at index C{only}, if given), or L{None}.
        """
        block = self._thd_block(block_hash)
        receipts = self._thd_receipts(block_hash)
        if block is None or receipts is None:
            return None
        return receipt_views(block, receipts, only)

    # Public reads

    def _recent_block(self, block_hash: bytes) -> tuple[Block, tuple[Receipt, ...]] | None:
        """
        A recently written block and its receipts, if they are kept.
        """
        with self._recent_lock:
            return self._recent.get(block_hash)

    def get_block_by_hash(self, block_hash: bytes) -> Deferred[Block | None]:
        """
        Any stored block (canonical or not) by hash, or L{None}; a recent
        one at once, others in a reader thread.
        """
        recent = self._recent_block(block_hash)
        if recent is not None:
            return succeed(recent[0])
        return self._run_reader(self._thd_block, block_hash)

    def get_block_by_number(self, number: int) -> Deferred[Block | None]:
        """
        The canonical block at C{number}, or L{None} above the head; the
        head block at once, others in a reader thread.
        """
        head = self.head.header
        if number == head.number:
            recent = self._recent_block(head.hash)
            if recent is not None:
                return succeed(recent[0])
        return self._run_reader(self._thd_canonical_block, number)

    def get_header_by_hash(self, block_hash: bytes) -> Deferred[Header | None]:
        """
        Any stored header by hash, or L{None}; a recent one at once.
        """
        recent = self._recent_block(block_hash)
        if recent is not None:
            return succeed(recent[0].header)
        return self._run_reader(self._thd_header, block_hash)

    def get_total_difficulty(self, block_hash: bytes) -> Deferred[int | None]:
        """
        The total difficulty up to a stored block, or L{None}.
        """
        return self._run_reader(read_total_difficulty, self.store, block_hash)

    def is_canonical(self, block_hash: bytes) -> Deferred[bool]:
        """
        Whether a block is on the canonical chain.
        """
        return self._run_reader(self._thd_is_canonical, block_hash)

    def get_transaction(self, tx_hash: bytes) -> Deferred[TransactionLocation | None]:
        """
        A transaction of the canonical chain by hash, or L{None}; one of the
        recently written blocks is answered at once, others in a reader thread.
        """
        recent = self._recent_location(tx_hash)
        if recent is not None:
            block, _receipts, index = recent
            return succeed(TransactionLocation(block.transactions[index], Hash32(block.hash), block.number, index))
        return self._run_reader(self._thd_transaction, tx_hash)

    def get_receipt(self, tx_hash: bytes) -> Deferred[ReceiptView | None]:
        """
        The receipt of a canonical transaction, or L{None}; one of the
        recently written blocks is answered at once, others in a reader thread.
        """
        recent = self._recent_location(tx_hash)
        if recent is not None:
            block, receipts, index = recent
            return succeed(receipt_views(block, receipts, index)[0])
        return self._run_reader(self._thd_receipt, tx_hash)

    def get_block_receipts(self, block_hash: bytes) -> Deferred[list[ReceiptView] | None]:
        """
        The receipts of a stored block in transaction order, or L{None}; a
        recent block's at once.
        """
        recent = self._recent_block(block_hash)
        if recent is not None:
            return succeed(receipt_views(recent[0], recent[1]))
        return self._run_reader(self._thd_block_receipts, block_hash)

    def run_with_state(self, function: Callable[[State], T], state_root: bytes | None = None) -> Deferred[T]:
        """
        Run C{function} on a reader thread with a fresh L{State} at
        C{state_root} (the head's by default); its changes are thrown away.
        """
        root = self.head.header.state_root if state_root is None else state_root
        return self._run_reader(lambda: function(State.from_store(self.store, root)))

    def get_account(self, address: bytes, state_root: bytes | None = None) -> Deferred[Account | None]:
        """
        An account at C{state_root} (the head's by default), or L{None}.
        """
        return self.run_with_state(lambda state: state.get_account(Address(address)), state_root)

    def get_blocks_by_hash(self, block_hashes: Iterable[bytes]) -> Deferred[list[Block | None]]:
        """
        Several stored blocks at once (in the order asked), L{None} for the unknown.
        """
        hashes = list(block_hashes)
        return self._run_reader(lambda: [self._thd_block(block_hash) for block_hash in hashes])

    def get_headers_by_number(self, numbers: Sequence[int]) -> Deferred[list[Header | None]]:
        """
        Several canonical headers in one reader job (in the order asked),
        L{None} above the head; for peers' header requests
        (L{nodex.interfaces.IBlockSource}).
        """
        wanted = list(numbers)

        def read() -> list[Header | None]:
            hashes = [read_canonical_hash(self.store, number) for number in wanted]
            return [None if block_hash is None else self._thd_header(block_hash) for block_hash in hashes]

        return self._run_reader(read)


def receipt_views(block: Block, receipts: Sequence[Receipt], only: int | None = None) -> list[ReceiptView]:
    """
    The receipt views of a block's transactions (only the one at index
    C{only}, if given): each receipt with its transaction's place, own gas,
    first log index, created contract and effective gas price.
    """
    views = []
    previous_gas = 0
    log_index = 0
    for index, (transaction, receipt) in enumerate(zip(block.transactions, receipts)):
        if only is None or index == only:
            contract: Address | None = None
            if transaction.to == b"" and receipt.status == 1:
                contract = compute_contract_address(transaction.sender, transaction.nonce)
            views.append(
                ReceiptView(
                    receipt=receipt,
                    location=TransactionLocation(transaction, Hash32(block.hash), block.number, index),
                    gas_used=receipt.cumulative_gas_used - previous_gas,
                    first_log_index=log_index,
                    contract_address=contract,
                    effective_gas_price=effective_gas_price(transaction),
                )
            )
        previous_gas = receipt.cumulative_gas_used
        log_index += len(receipt.logs)
    return views


__all__ = [
    "BlockProducer",
    "ChainNotInitializedError",
    "ChainService",
    "RECENT_BLOCKS",
    "RUN_JOB_BLOCKS",
    "receipt_views",
]
