"""
One door for blocks (L4, DESIGN §3–§4): the importer that every block goes
through, whatever its source — the built-in miner, a dev-chain method, a
peer, a merged-mining submission, C{eth_submitWork}, a chain file, an
operator's rewind.

L{BlockImporter} is plain synchronous Python over a key-value store.  Blocks
from outside (L{BlockImporter.import_blocks}) are validated — header, seal,
uncles, transactions, roots — and executed on their parent's state; the
blocks this node makes (L{BlockImporter.make}, from a request of
L{nodex.chain.building.making}) are built on the tip; either way a block ends in one
write routine (L{BlockImporter._commit}): one atomic batch of the store
that holds the block, its receipts, state and code, and, when fork choice
adopts it, the canonical index, the transaction lookup and the log index.
Runs of empty blocks and rewinds go through the same routine.  Each step
returns an L{Imported}: the outcome, the L{ChainEvent} to publish and the
new head.

The importer keeps the writer's view of the chain: the I{tip}, the tip's
decoded state for the next block, and the blocks kept aside
(L{nodex.chain.aside}): those whose parent has not arrived, and those
stamped ahead of the clock by more than the network's drift limit, which
wait until they are due.  It must be driven by one thread at a time: the
chain service's writer lane (C{nodex.services.chain}) or C{nodex import}.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from nodex.chain.aside import FUTURE_BOUNDS, LOCAL, ORPHAN_BOUNDS, BlockSource, Bounds, Held, HeldBlocks
from nodex.chain.building.builder import BuiltBlock, seal_block
from nodex.chain.dev.blocks import SealSearchError, empty_blocks
from nodex.chain.errors import ChainError, InvalidBlockError
from nodex.chain.forkchoice import find_reorganisation, is_heavier, write_canonical_changes
from nodex.chain.logs.index import indexed_through
from nodex.chain.building.making import BlockRequest, Declined, EmptyRun, SnapshotBlock, build_requested
from nodex.chain.outcomes import (
    HOLD_SECONDS,
    ChainEvent,
    ChainHead,
    Imported,
    ImportOutcome,
    ImportResult,
    Unused,
    outcomes,
)
from nodex.chain.seal.pow import solve
from nodex.chain.processing import (
    BlockOutcome,
    apply_block,
    cumulative_difficulty,
    validate_block,
    validate_header,
    validate_seal,
    validate_uncles,
)
from nodex.chain.rules import ChainRules
from nodex.chain.tip import (
    TIP_STATE_BLOCKS,
    BlockReader,
    ChainNotInitializedError,
    ChainTip,
    HeaderReader,
    ReceiptsReader,
    ancestry_hashes,
    read_head,
)
from nodex.db.kv import KeyValueStore
from nodex.db.schema import (
    delete_body_rlp,
    delete_header_rlp,
    delete_receipts_rlp,
    delete_total_difficulty,
    read_canonical_hash,
    read_header_rlp,
    read_total_difficulty,
    write_body_rlp,
    write_code,
    write_header_rlp,
    write_receipts_rlp,
    write_total_difficulty,
    write_trie_nodes,
)
from nodex.state.errors import StateError
from nodex.state.state import State
from nodex.structures.blocks import Block
from nodex.structures.headers import Header
from nodex.structures.receipts import Receipt, encode_receipts

EMPTY_RUN_BATCH = 1024
"""The blocks of an empty run (L{EmptyRun}) written in one batch."""

MAX_NONCES = 2**22
"""The most template nonces the built-in solver tries for one block made
here (a few seconds of hashing): enough for regtest and devnet, not for
main, whose blocks come from merged miners."""


@dataclass
class _Writing:
    """
    A block ready for L{BlockImporter._commit}.
    """

    block: Block
    receipts: tuple[Receipt, ...]
    total_difficulty: int
    nodes: dict[bytes, bytes] = field(default_factory=dict)
    code: dict[bytes, bytes] = field(default_factory=dict)


class BlockImporter(ChainTip):
    """
    The writer's side of one chain: every block enters here.

    @ivar tip: the head as the importer knows it (ahead of what readers see
        until the lane publishes it).
    """

    def __init__(
        self,
        store: KeyValueStore,
        rules: ChainRules,
        read_header: HeaderReader | None = None,
        read_block: BlockReader | None = None,
        read_receipts: ReceiptsReader | None = None,
        orphan_bounds: Bounds = ORPHAN_BOUNDS,
        future_bounds: Bounds = FUTURE_BOUNDS,
    ) -> None:
        """
        The store, rules and readers as L{ChainTip} takes them, and:

        @param orphan_bounds: how many blocks with an unknown parent to keep aside.
        @param future_bounds: how many blocks ahead of the clock to hold.
        """
        super().__init__(store, rules, read_header, read_block, read_receipts)
        self.orphans = HeldBlocks(orphan_bounds)
        self.future = HeldBlocks(future_bounds)
        self._unused: list[Unused] = []

    # Blocks from outside

    def import_blocks(self, blocks: Iterable[Block], now: int | None, source: BlockSource) -> list[Imported]:
        """
        Validate, execute and store blocks in order, each in its own batch
        (a crash leaves a prefix of whole blocks), adopting a block when
        its chain is the heaviest; after each block stored, the kept-aside
        blocks that waited for it.  Stops after the first refused block.

        @param now: the local time, for the drift limit and the blocks kept
            aside (L{None}: no check of the time, as for old blocks from a file).
        @param source: where the blocks come from.
        @return: the steps of the blocks given and of the kept blocks that
            followed them, the refused one last.
        """
        if now is not None:
            self._expire(now)
        steps: list[Imported] = []
        for block in blocks:
            done = self._import_with_children(block, now, source)
            steps.extend(done)
            if done[0].result is ImportResult.INVALID_BLOCK:
                break
        return steps

    def release_due(self, now: int) -> list[Imported]:
        """
        Import the held blocks whose time has come (and what waited for them).
        """
        steps: list[Imported] = []
        for held in self.future.pop_due(now):
            done = self._import_with_children(held.block, now, held.source)
            if done[0].result is ImportResult.INVALID_BLOCK:
                self._unused.append(Unused(held.block.hash, held.source, f"invalid once due: {done[0].reason}"))
            steps.extend(done)
        return steps

    def next_due(self) -> int | None:
        """
        The local time at which the earliest held block is due, or L{None}.
        """
        return self.future.next_due()

    def take_unused(self) -> list[Unused]:
        """
        The kept-aside blocks that left unused since the last call.
        """
        unused, self._unused = self._unused, []
        return unused

    @property
    def orphan_count(self) -> int:
        """
        How many blocks wait for their parent.
        """
        return len(self.orphans)

    def _import_with_children(self, block: Block, now: int | None, source: BlockSource) -> list[Imported]:
        """
        Import one block; once it is stored, the kept blocks that descend from it.
        """
        steps = [self._import_one(block, now, source)]
        if not steps[0].result or not steps[0].result.stored:
            return steps
        waiting = [block.hash]
        while waiting:
            for held in self.orphans.pop_children(waiting.pop()):
                step = self._import_one(held.block, now, held.source)
                steps.append(step)
                if step.result is not None and step.result.stored:
                    waiting.append(held.block.hash)
                elif step.result is ImportResult.INVALID_BLOCK:
                    self._unused.append(Unused(held.block.hash, held.source, f"invalid: {step.reason}"))
        return steps

    def _import_one(self, block: Block, now: int | None, source: BlockSource) -> Imported:
        """
        Import one block (no kept-aside blocks).
        """
        header = block.header
        block_hash = header.hash

        def answer(result: ImportResult, reason: str | None = None) -> Imported:
            refused = block if result is ImportResult.INVALID_BLOCK else None
            return Imported(result, reason=reason, block_hash=block_hash, source=source, refused=refused)

        if block_hash in self.future:
            return Imported(ImportResult.EXIST, block_hash=block_hash, source=source, due=self.future.due_of(block_hash))
        if block_hash in self.orphans or read_header_rlp(self.store, block_hash):
            return answer(ImportResult.EXIST)
        tip = self.tip
        if header.parent_hash == tip.header.hash:
            parent: Header | None = tip.header
            parent_total_difficulty: int | None = tip.total_difficulty
        else:
            parent = self._read_header(header.parent_hash)
            parent_total_difficulty = None if parent is None else read_total_difficulty(self.store, parent.hash)
        limit = self.rules.max_seconds_in_future
        ahead = None if now is None or limit is None or header.timestamp <= now + limit else header.timestamp - now
        if parent is None or parent_total_difficulty is None or ahead is not None:
            return self._keep_aside(block, parent, source, now, ahead)
        try:
            validate_header(parent, header, self.rules)
            validate_uncles(block, self.ancestry(parent) if block.uncles else [], self.rules)
            on_tip = parent.hash == tip.header.hash
            state = self._state_for(parent)
            self._tip_state = None
            outcome = apply_block(
                block, state, self.rules.chain_id, self.block_hashes(parent), self.rules.forks,
                impersonation=source.built_here and self.rules.impersonation,
            )
            validate_block(block, outcome)
        except (InvalidBlockError, StateError) as exc:
            return answer(ImportResult.INVALID_BLOCK, str(exc))
        writing = _Writing(
            block, outcome.receipts, parent_total_difficulty + cumulative_difficulty(block), outcome.nodes, outcome.code
        )
        return self._commit([writing], state if on_tip else None, source=source)

    def _keep_aside(
        self, block: Block, parent: Header | None, source: BlockSource, now: int | None, ahead: int | None
    ) -> Imported:
        """
        Keep a block whose parent is unknown, or which is ahead of the
        clock, once it passes what can be checked without its parent (a
        known parent's rules, else the seal and the network's minimum
        difficulty), so that nothing is kept unchecked.
        """
        header = block.header

        def answer(result: ImportResult, reason: str | None = None) -> Imported:
            refused = block if result is ImportResult.INVALID_BLOCK else None
            return Imported(result, reason=reason, block_hash=header.hash, source=source, refused=refused)

        if ahead is not None and ahead > HOLD_SECONDS:
            return answer(
                ImportResult.DROPPED,
                f"timestamp {header.timestamp} is {ahead} s ahead of the local clock, beyond the {HOLD_SECONDS} s"
                " a block is held",
            )
        try:
            if parent is not None:
                validate_header(parent, header, self.rules)
            else:
                if header.difficulty < self.rules.difficulty.minimum:
                    raise InvalidBlockError(
                        f"difficulty {header.difficulty} is below the network's minimum {self.rules.difficulty.minimum}"
                    )
                validate_seal(header)
        except InvalidBlockError as exc:
            return answer(ImportResult.INVALID_BLOCK, str(exc))
        clock = 0 if now is None else now
        if ahead is not None:
            limit = self.rules.max_seconds_in_future or 0
            due = header.timestamp - limit
            self._note_pushed_out(self.future.add(block, source, clock, due=due))
            reason = f"timestamp {header.timestamp} is {ahead} s ahead of the local clock: held until it is due"
            return Imported(ImportResult.FUTURE_BLOCK, reason=reason, block_hash=header.hash, source=source, due=due)
        self._note_pushed_out(self.orphans.add(block, source, clock))
        return answer(ImportResult.NO_PARENT)

    def _note_pushed_out(self, pushed: Sequence[Held]) -> None:
        """
        Remember kept-aside blocks pushed out for room.
        """
        for held in pushed:
            self._unused.append(Unused(held.block.hash, held.source, "pushed out: no room left for its source"))

    def _expire(self, now: int) -> None:
        """
        Forget the blocks whose parent did not come in time.
        """
        for held in self.orphans.expire(now):
            self._unused.append(Unused(held.block.hash, held.source, "its parent never came"))

    # Blocks made here

    def make(self, request: BlockRequest, max_nonces: int = MAX_NONCES) -> Imported:
        """
        Build what C{request} asks for on the tip, seal it with the
        built-in solver (cheap seals only) and store it.

        @return: the step; its C{built} holds the builder's account of the
            block (the candidates it left out), or the L{Declined} answer
            when no block was made.
        @raise nodex.chain.building.making.NotDueError: the block cannot be stamped
            yet (the network's drift limit).
        @raise SealSearchError: no seal within C{max_nonces}.
        @raise TransactionRejectedError: a lone candidate breaks an admission rule.
        """
        if isinstance(request, EmptyRun):
            return self._make_empty_run(request, max_nonces)
        built, state = self.build(request)
        if isinstance(built, Declined):
            # Reads only: the state is still the tip's.
            self._tip_state = state
            return Imported(None, built=built)
        header = built.block.header
        seal = solve(header.hash_for_merged_mining, header.difficulty, range(max_nonces))
        if seal is None:
            raise SealSearchError(
                f"no seal for block {header.number} at difficulty {header.difficulty} in {max_nonces} nonces:"
                " this network needs a merged miner"
            )
        block = seal_block(built.block, seal)
        # No validate_header or validate_block here: their outcome is
        # certain.  The solver's search is the seal's check (the canonical
        # template, committing to the header's hash for merged mining); the
        # builder made the other header fields on this very parent with the
        # functions validate_header checks them with (next_difficulty, and
        # next_gas_limit passed through check_gas_limit), refused a
        # timestamp not after the parent's or beyond 64 bits and extra data
        # beyond the limit, kept the parent's minimum gas price, let no
        # transaction take more than the gas left; and it copied the roots,
        # gas, bloom and fees from the very outcome validate_block would
        # compare them with.  A block sealed elsewhere (store_built) or from
        # outside is checked whole.
        writing = _Writing(
            block, built.outcome.receipts, self.tip.total_difficulty + cumulative_difficulty(block),
            built.outcome.nodes, built.outcome.code,
        )
        # A snapshot's block has a state of its own, not the one built on.
        kept = None if isinstance(request, SnapshotBlock) else state
        return self._commit([writing], kept, built=built)

    def build(self, request: BlockRequest) -> tuple[BuiltBlock | Declined, State]:
        """
        Build the unsealed block C{request} asks for on the tip without
        storing it: the first half of a block whose seal is searched
        elsewhere (L{store_built} is the second).

        @return: the built block (or why none was) and the state it was
            built on, changed into the block's; the tip's kept state is
            handed over with it.
        """
        assert not isinstance(request, EmptyRun), "an empty run is made whole by make()"
        tip = self.tip.header
        state = self._state_for(tip)
        self._tip_state = None
        try:
            built = build_requested(request, tip, state, self.block_hashes(tip), self.rules, self.ancestry)
        except BaseException:
            # A refusal before any change (a lone candidate's admission, a
            # block not due yet) leaves the state as it was.
            self._tip_state = state
            raise
        return built, state

    def store_built(self, block: Block, outcome: BlockOutcome, state: State | None = None) -> Imported:
        """
        Store a block built here (L{build}) and sealed elsewhere; its header
        rules, seal and roots are checked, not its execution.

        @param state: the state it was built on: kept for the next block
            when the block becomes the tip.
        """
        header = block.header
        if read_header_rlp(self.store, header.hash) is not None:
            return Imported(ImportResult.EXIST, block_hash=header.hash)
        parent = self._read_header(header.parent_hash)
        parent_total_difficulty = None if parent is None else read_total_difficulty(self.store, parent.hash)
        if parent is None or parent_total_difficulty is None:
            return Imported(ImportResult.NO_PARENT, block_hash=header.hash)
        try:
            validate_header(parent, header, self.rules)
            validate_block(block, outcome)
        except InvalidBlockError as exc:
            return Imported(ImportResult.INVALID_BLOCK, reason=str(exc), block_hash=header.hash)
        if parent.hash == self.tip.header.hash:
            self._tip_state = None
        else:
            state = None
        writing = _Writing(
            block, outcome.receipts, parent_total_difficulty + cumulative_difficulty(block), outcome.nodes, outcome.code
        )
        return self._commit([writing], state)

    def _make_empty_run(self, request: EmptyRun, max_nonces: int) -> Imported:
        """
        Make and store a run of empty blocks on the tip, L{EMPTY_RUN_BATCH}
        blocks a batch (a crash leaves a prefix of whole blocks); nothing
        is executed, since an empty block changes no state.

        @return: one step for the whole run: the last block, the new head,
            and one event adopting every block of the run.
        """
        tip = self.tip
        first = request.time.stamp(tip.header.timestamp)
        blocks = empty_blocks(
            tip.header, request.count, first, request.interval, request.coinbase, self.rules,
            request.extra_data, max_nonces,
        )
        self._tip_state = None
        adopted: list[Block] = []
        pending: list[_Writing] = []
        parent = tip.header
        total_difficulty = tip.total_difficulty
        for block in blocks:
            validate_header(parent, block.header, self.rules)
            total_difficulty += block.header.difficulty
            pending.append(_Writing(block, (), total_difficulty))
            parent = block.header
            if len(pending) >= EMPTY_RUN_BATCH:
                adopted.extend(self._commit_run(pending))
                pending = []
        if pending:
            adopted.extend(self._commit_run(pending))
        if not adopted:
            return Imported(None)
        self.index_logs()
        event = ChainEvent(tuple(adopted), (), tuple(() for _ in adopted), ())
        last = adopted[-1]
        return Imported(ImportResult.IMPORTED_BEST, last, (), self.tip, event, block_hash=last.hash)

    def _commit_run(self, run: Sequence[_Writing]) -> list[Block]:
        """
        Store a batch of an empty run; the run's blocks are then held for
        its one event, for which their fields and hashes suffice.
        """
        self._commit(run, None, index=False)
        blocks = [writing.block for writing in run]
        for block in blocks:
            block.header.forget_encodings()
        return blocks

    # Rewinds

    def rewind(self, number: int) -> Imported:
        """
        Make the canonical block at C{number} the head, deleting the
        canonical blocks above it (C{evm_revert}, C{evm_reset}); side-chain
        blocks stay.  A number at or above the tip changes nothing.

        @raise ChainError: C{number} is negative or has no canonical block.
        """
        tip = self.tip
        if number < 0:
            raise ChainError(f"cannot rewind to the negative block number {number}")
        if number >= tip.header.number:
            return Imported(None)
        target_hash = read_canonical_hash(self.store, number)
        target = None if target_hash is None else self._read_header(target_hash)
        total_difficulty = None if target is None else read_total_difficulty(self.store, target.hash)
        if target is None or total_difficulty is None:
            raise ChainError(f"the store has no canonical block {number} to rewind to")
        return self._commit((), None, rewind_to=ChainHead(target, total_difficulty))

    # The one write

    def _commit(
        self,
        writings: Sequence[_Writing],
        state: State | None,
        rewind_to: ChainHead | None = None,
        source: BlockSource = LOCAL,
        index: bool = True,
        built: BuiltBlock | None = None,
    ) -> Imported:
        """
        Write blocks (each on the one before, the first on a stored block)
        and what fork choice makes of them in one atomic batch; or, with
        C{rewind_to}, make that canonical block the head and delete the
        canonical blocks above it.

        @param state: the last block's state, if it was built or executed on
            the tip's state and may be kept for the next block.
        @param index: extend the log index's bitmaps after the write.
        @param built: the builder's account of the block made here (L{make}), for the step.
        @return: the step of the last block (or of the rewind).
        """
        batch = self.store.batch()
        for writing in writings:
            block = writing.block
            block_hash = block.hash
            write_header_rlp(batch, block_hash, block.header.encode())
            write_body_rlp(batch, block_hash, block.encode_body())
            write_receipts_rlp(batch, block_hash, encode_receipts(writing.receipts))
            write_total_difficulty(batch, block_hash, writing.total_difficulty)
            write_trie_nodes(batch, writing.nodes)
            for code_hash, code in writing.code.items():
                write_code(batch, code_hash, code)
        tip = self.tip
        stale = True
        if rewind_to is not None:
            event, stale = self._rewind_into(batch, rewind_to)
            head = rewind_to
            result = None
        else:
            last = writings[-1]
            if not is_heavier(last.total_difficulty, tip.total_difficulty):
                self.store.write(batch)
                return Imported(
                    ImportResult.IMPORTED_NOT_BEST, last.block, last.receipts, block_hash=last.block.hash, source=source,
                    built=built,
                )
            event = self._adopt_into(batch, writings)
            head = ChainHead(last.block.header, last.total_difficulty)
            result = ImportResult.IMPORTED_BEST
            if event.abandoned:
                state = None
        self.store.write(batch)
        self.tip = head
        self._keep_tip_state(state)
        if index:
            self.index_logs(force=bool(event.abandoned) and stale)
        if result is None:
            return Imported(None, head=head, event=event)
        last = writings[-1]
        return Imported(
            result, last.block, last.receipts, head, event, block_hash=last.block.hash, source=source, built=built
        )

    def _adopt_into(self, batch: object, writings: Sequence[_Writing]) -> ChainEvent:
        """
        Make the last of C{writings} the head in C{batch}: the canonical
        index, transaction lookup and log index from the common ancestor.
        """
        tip = self.tip
        first = writings[0].block
        if first.header.parent_hash == tip.header.hash:
            if len(writings) == 1:
                adopted: tuple[Block, ...] = (first,)
                receipts: tuple[tuple[Receipt, ...], ...] = (writings[0].receipts,)
            else:
                adopted = tuple(writing.block for writing in writings)
                receipts = tuple(writing.receipts for writing in writings)
            write_canonical_changes(batch, tip.header, (), adopted)  # type: ignore[arg-type]
            return ChainEvent(adopted, (), receipts, ())
        pending = {writing.block.hash: writing for writing in writings}
        reorganisation = find_reorganisation(
            lambda wanted: pending[wanted].block.header if wanted in pending else self._read_header(wanted),
            tip.header,
            writings[-1].block.header,
        )

        def block_of(header: Header) -> Block:
            return pending[header.hash].block if header.hash in pending else self.stored_block(header.hash)

        def receipts_of(header: Header) -> tuple[Receipt, ...]:
            return pending[header.hash].receipts if header.hash in pending else self.stored_receipts(header.hash)

        abandoned = tuple(self.stored_block(old.hash) for old in reorganisation.abandoned)
        adopted = tuple(block_of(new) for new in reorganisation.adopted)
        write_canonical_changes(batch, reorganisation.ancestor, abandoned, adopted)  # type: ignore[arg-type]
        return ChainEvent(
            adopted,
            abandoned,
            tuple(receipts_of(new) for new in reorganisation.adopted),
            tuple(self.stored_receipts(old.hash) for old in abandoned),
        )

    def _rewind_into(self, batch: object, target: ChainHead) -> tuple[ChainEvent, bool]:
        """
        Make C{target} the head in C{batch}, deleting the canonical blocks above it.

        @return: the event, and whether the log index's bitmaps held any of
            the deleted blocks (then marked for a rebuild).
        """
        abandoned = []
        abandoned_receipts = []
        for height in range(target.header.number + 1, self.tip.header.number + 1):
            block_hash = read_canonical_hash(self.store, height)
            if block_hash is None:
                continue
            abandoned.append(self.stored_block(block_hash))
            abandoned_receipts.append(self.stored_receipts(block_hash))
        through = indexed_through(self.store)
        write_canonical_changes(batch, target.header, abandoned, (), through)  # type: ignore[arg-type]
        for block in abandoned:
            block_hash = block.hash
            delete_header_rlp(batch, block_hash)  # type: ignore[arg-type]
            delete_body_rlp(batch, block_hash)  # type: ignore[arg-type]
            delete_receipts_rlp(batch, block_hash)  # type: ignore[arg-type]
            delete_total_difficulty(batch, block_hash)  # type: ignore[arg-type]
        stale = any(block.number <= through for block in abandoned)
        return ChainEvent((), tuple(abandoned), (), tuple(abandoned_receipts), rewound=True), stale


__all__ = [
    "EMPTY_RUN_BATCH",
    "HOLD_SECONDS",
    "MAX_NONCES",
    "TIP_STATE_BLOCKS",
    "BlockImporter",
    "ChainEvent",
    "ChainHead",
    "ChainNotInitializedError",
    "ImportOutcome",
    "ImportResult",
    "Imported",
    "Unused",
    "ancestry_hashes",
    "outcomes",
    "read_head",
]
