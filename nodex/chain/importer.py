"""
One door for blocks (L4, DESIGN §3–§4): the importer that every block goes
through, whatever its source — the built-in miner, a peer, a merged-mining
submission, C{eth_submitWork}, a chain file, an operator's rewind.

L{BlockImporter} is plain synchronous Python over a key-value store: given a
block (or a run of blocks) it validates the header, seal, uncles,
transactions and roots, executes the block on its parent's state, writes
everything in one atomic batch of the store, and returns an L{Imported}: the
outcome (new head, side chain, already known, no parent, refused with a
reason) and the L{ChainEvent} to publish.  It keeps the writer's view of the
chain (the I{tip}, the tip's decoded state for the next block, the blocks
kept aside until their parent arrives) and must be driven by one thread at a
time: the chain service's writer lane (C{nodex.services.chain}).
"""

from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from nodex.chain.errors import ChainError, InvalidBlockError
from nodex.chain.forkchoice import find_reorganisation, is_heavier, write_canonical_changes
from nodex.chain.logindex import INDEX_LAG, LogIndexer, indexed_through, unindex_block
from nodex.chain.processing import (
    Ancestor,
    BlockHashes,
    BlockOutcome,
    apply_block,
    cumulative_difficulty,
    validate_block,
    validate_header,
    validate_uncles,
)
from nodex.chain.rules import MAX_UNCLE_DEPTH, ChainRules
from nodex.db.kv import KeyValueStore
from nodex.db.schema import (
    delete_body_rlp,
    delete_canonical_hash,
    delete_header_rlp,
    delete_receipts_rlp,
    delete_total_difficulty,
    delete_tx_lookup,
    read_body_rlp,
    read_canonical_hash,
    read_head_hash,
    read_header_rlp,
    read_receipts_rlp,
    read_total_difficulty,
    write_body_rlp,
    write_code,
    write_head_hash,
    write_header_rlp,
    write_receipts_rlp,
    write_total_difficulty,
    write_trie_nodes,
)
from nodex.primitives import Hash32
from nodex.state.errors import StateError
from nodex.state.state import State
from nodex.structures.blocks import Block
from nodex.structures.bloom import BLOOM_BYTES
from nodex.trie.hexary import BLANK_ROOT
from nodex.structures.headers import Header
from nodex.structures.receipts import Receipt, decode_receipts, encode_receipts

TIP_STATE_BLOCKS = 256
"""The importer keeps one L{State} across this many blocks on its tip before starting afresh (bounded memory)."""

EMPTY_RUN_BATCH = 1024
"""The blocks of an empty run (L{BlockImporter.store_empty_run}) written in one batch."""

MAX_ORPHANS = 256
"""The most blocks kept aside until their parent arrives; the oldest goes first beyond it."""


class ImportResult:
    """
    The outcome names of a block import (reference §3.5), as plain strings.
    """

    IMPORTED_BEST = "IMPORTED_BEST"
    IMPORTED_NOT_BEST = "IMPORTED_NOT_BEST"
    EXIST = "EXIST"
    NO_PARENT = "NO_PARENT"
    INVALID_BLOCK = "INVALID_BLOCK"


@dataclass(frozen=True)
class ChainHead:
    """
    The best block as the node knows it now.

    @ivar header: the head block's header.
    @ivar total_difficulty: the chain's total difficulty up to and including it.
    """

    header: Header
    total_difficulty: int


@dataclass(frozen=True)
class ChainEvent:
    """
    What one change of the canonical chain did, oldest blocks first.

    @ivar adopted: blocks that became canonical (the new head last).
    @ivar abandoned: blocks that left the canonical chain in a reorganisation.
    @ivar adopted_receipts: the receipts of each adopted block, in order.
    @ivar abandoned_receipts: the receipts of each abandoned block, in order.
    @ivar rewound: C{True} when the change is a rewind (C{evm_revert},
        C{evm_reset}): the abandoned blocks are deleted, not replaced, and
        their transactions must not go back to the pool (which the caller
        clears).
    """

    adopted: tuple[Block, ...]
    abandoned: tuple[Block, ...] = ()
    adopted_receipts: tuple[tuple[Receipt, ...], ...] = ()
    abandoned_receipts: tuple[tuple[Receipt, ...], ...] = ()
    rewound: bool = False


@dataclass(frozen=True)
class ImportOutcome:
    """
    The outcome of one block of an import, as the edges report it.

    @ivar block_hash: the block's hash.
    @ivar result: an L{ImportResult} name.
    @ivar reason: the broken rule of an C{INVALID_BLOCK}, else L{None}.
    """

    block_hash: Hash32
    result: str
    reason: str | None = None


@dataclass(frozen=True)
class Imported:
    """
    What one step of the importer did, for the writer lane to publish.

    @ivar result: an L{ImportResult} name, or for a produced block the
        block (L{None} when the producer declined), for a rewind L{None}.
    @ivar block: the block written, if one was.
    @ivar receipts: its receipts.
    @ivar head: the new head, when the head moved.
    @ivar event: the change of the canonical chain, when there was one.
    @ivar reason: why a block was refused.
    @ivar block_hash: the hash of the block the step was about.
    """

    result: Any
    block: Block | None = None
    receipts: tuple[Receipt, ...] = ()
    head: ChainHead | None = None
    event: ChainEvent | None = None
    reason: str | None = None
    block_hash: Hash32 | None = None

    def outcome(self) -> ImportOutcome:
        """
        The edge's view of this step (for imports).
        """
        assert self.block_hash is not None
        return ImportOutcome(self.block_hash, self.result, self.reason)


BlockProducer = Callable[[Header, State, BlockHashes], tuple[Block, BlockOutcome] | None]
"""
Builds and seals a block on the tip: given the tip's header, a L{State} at
its state root (which it may change) and the tip's ancestry for BLOCKHASH,
returns the sealed block and the outcome of executing it, or L{None} to
store nothing (it must then have left the state unchanged: reads only).
"""

HeaderReader = Callable[[bytes], Header | None]
BlockReader = Callable[[bytes], Block | None]
ReceiptsReader = Callable[[bytes], tuple[Receipt, ...] | None]


class ChainNotInitializedError(ChainError):
    """
    The store holds no chain (L{nodex.chain.genesis.initialize_chain} was not run on it).
    """


class BlockImporter:
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
        max_orphans: int = MAX_ORPHANS,
    ) -> None:
        """
        @param store: a store whose chain has been initialised.
        @param rules: the network's consensus rules.
        @param read_header: reads a stored header by hash (the store by
            default; the chain service passes one that also looks in its
            cache of recent blocks).
        @param read_block: likewise for whole blocks.
        @param read_receipts: likewise for a block's receipts.
        @param max_orphans: how many blocks with an unknown parent to keep aside.
        @raise ChainNotInitializedError: the store holds no chain.
        """
        self.store = store
        self.rules = rules
        self._read_header = read_header or self._stored_header
        self._read_block = read_block or self._stored_block
        self._read_receipts = read_receipts or self._stored_receipts
        self._max_orphans = max_orphans
        self._orphans: OrderedDict[bytes, Block] = OrderedDict()
        self.tip = read_head(store, self._read_header)
        self._tip_state: State | None = None
        self._tip_state_age = 0
        self._log_indexer = LogIndexer(store)
        self._logs_indexed = indexed_through(store)

    # Imports

    def import_block(self, block: Block, now: int | None = None, built_here: bool = False) -> list[Imported]:
        """
        Validate, execute and store a block from any source, adopting it if
        its chain is the heaviest; then the blocks kept aside that were
        waiting for it, and theirs.

        @param now: the time for the check of future timestamps (L{None}: no check).
        @param built_here: the block was built by this node (a template
            sealed by a miner): on a network whose rules allow it, its
            transactions may carry the impersonation marker of a dev
            chain's own users; a block from a peer or a chain file never may.
        @return: the step of C{block} first, then those of the kept blocks
            that followed it.  A block whose parent is unknown is kept aside
            (at most L{MAX_ORPHANS}) and answers C{NO_PARENT}.
        """
        steps = [self._import_one(block, now, built_here)]
        if steps[0].result in (ImportResult.IMPORTED_BEST, ImportResult.IMPORTED_NOT_BEST):
            steps.extend(self._adopt_orphans(block.hash, now))
        return steps

    def import_run(self, blocks: Iterable[Block], now: int | None = None) -> list[Imported]:
        """
        Import consecutive blocks in order, each in its own batch (so that a
        crash leaves a prefix of whole blocks), stopping after the first
        that is refused.

        @return: the steps of the blocks imported (kept-aside blocks that
            followed them included), the refused one last.
        """
        steps: list[Imported] = []
        for block in blocks:
            done = self.import_block(block, now)
            steps.extend(done)
            if done[0].result == ImportResult.INVALID_BLOCK:
                break
        return steps

    def import_built(self, block: Block, outcome: BlockOutcome) -> Imported:
        """
        Store a block whose execution outcome is already known (built by
        this node on its parent's state); the header rules, the seal and
        the outcome's roots are still checked.
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
        return self._store_block(block, outcome, parent_total_difficulty, None)

    def produce(self, producer: BlockProducer) -> Imported:
        """
        Have C{producer} build and seal a block on the tip and store it.

        @return: a step whose C{result} is the stored block, or L{None} when
            the producer declined (after reads only).
        @raise InvalidBlockError: the produced block breaks a rule.
        """
        tip = self.tip.header
        state = self._state_for(tip)
        self._tip_state = None
        produced = producer(tip, state, self.block_hashes(tip))
        if produced is None:
            self._tip_state = state
            return Imported(None)
        block, outcome = produced
        if block.header.parent_hash != tip.hash:
            raise InvalidBlockError("a produced block must build on the tip")
        validate_header(tip, block.header, self.rules)
        validate_block(block, outcome)
        stored = self._store_block(block, outcome, self.tip.total_difficulty, state)
        return Imported(
            block, block, stored.receipts, stored.head, stored.event, block_hash=block.hash
        )

    def store_empty_run(self, blocks: Iterable[Block], batch_blocks: int = EMPTY_RUN_BATCH) -> Imported:
        """
        Store a run of empty blocks built on the tip, each on the one before
        (C{hardhat_mine}): each is checked like any block's header and seal,
        and must carry no transaction or uncle and keep its parent's state
        root, roots and bloom of an empty block; nothing is executed, since
        an empty block changes no state.  Every C{batch_blocks} blocks are
        one atomic write that also moves the head, so that a crash leaves a
        prefix of whole blocks.

        @return: one step for the whole run: the last block, the new head,
            and one event adopting every block of the run.
        @raise InvalidBlockError: a block breaks a rule; the blocks before
            it in its batch are not stored, those of earlier batches are.
        """
        empty_bloom = bytes(BLOOM_BYTES)
        adopted: list[Block] = []
        pending: list[Block] = []
        parent = self.tip.header
        total_difficulty = self.tip.total_difficulty
        self._tip_state = None
        for block in blocks:
            header = block.header
            if block.transactions or block.uncles:
                raise InvalidBlockError(f"block {header.number} of an empty run carries transactions or uncles")
            validate_header(parent, header, self.rules)
            if (
                header.state_root != parent.state_root
                or header.transactions_root != BLANK_ROOT
                or header.receipts_root != BLANK_ROOT
                or header.logs_bloom != empty_bloom
                or header.gas_used
                or header.paid_fees
            ):
                raise InvalidBlockError(f"block {header.number} of an empty run has the roots of a non-empty block")
            total_difficulty += header.difficulty
            pending.append(block)
            parent = header
            if len(pending) >= batch_blocks:
                self._write_empty_run(pending, total_difficulty)
                adopted.extend(pending)
                pending = []
        if pending:
            self._write_empty_run(pending, total_difficulty)
            adopted.extend(pending)
        if not adopted:
            return Imported(None)
        self.index_logs()
        event = ChainEvent(tuple(adopted), (), tuple(() for _ in adopted), ())
        last = adopted[-1]
        return Imported(last, last, (), self.tip, event, block_hash=last.hash)

    def _write_empty_run(self, blocks: Sequence[Block], total_difficulty: int) -> None:
        """
        Write checked empty blocks that extend the tip in one batch and make
        the last the head (C{total_difficulty} is the last one's).
        """
        batch = self.store.batch()
        running = self.tip.total_difficulty
        no_receipts = encode_receipts(())
        for block in blocks:
            block_hash = block.hash
            running += block.header.difficulty
            write_header_rlp(batch, block_hash, block.header.encode())
            write_body_rlp(batch, block_hash, block.encode_body())
            write_receipts_rlp(batch, block_hash, no_receipts)
            write_total_difficulty(batch, block_hash, running)
        write_canonical_changes(batch, self.tip.header, (), blocks)
        self.store.write(batch)
        self.tip = ChainHead(blocks[-1].header, total_difficulty)
        # The run's blocks are held for its one event: written, they need
        # their fields and hashes only.
        for block in blocks:
            block.header.forget_encodings()

    def tip_state(self) -> tuple[Header, State, BlockHashes]:
        """
        The tip's header, a state at its root (the kept one, handed over:
        the caller may change it) and its BLOCKHASH lookup, for building a
        block whose seal is searched elsewhere (L{import_built} stores it).
        """
        tip = self.tip.header
        state = self._state_for(tip)
        self._tip_state = None
        return tip, state, self.block_hashes(tip)

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
        abandoned = []
        abandoned_receipts = []
        batch = self.store.batch()
        for height in range(number + 1, tip.header.number + 1):
            block_hash = read_canonical_hash(self.store, height)
            if block_hash is None:
                continue
            block = self.stored_block(block_hash)
            abandoned.append(block)
            abandoned_receipts.append(self.stored_receipts(block_hash))
            for transaction in block.transactions:
                delete_tx_lookup(batch, transaction.hash)
            delete_canonical_hash(batch, height)
            unindex_block(batch, block.header)
            delete_header_rlp(batch, block_hash)
            delete_body_rlp(batch, block_hash)
            delete_receipts_rlp(batch, block_hash)
            delete_total_difficulty(batch, block_hash)
        write_head_hash(batch, target.hash)
        self.store.write(batch)
        head = ChainHead(target, total_difficulty)
        self.tip = head
        self._tip_state = None
        self.index_logs(force=True)
        event = ChainEvent((), tuple(abandoned), (), tuple(abandoned_receipts), rewound=True)
        return Imported(None, head=head, event=event)

    @property
    def orphan_count(self) -> int:
        """
        How many blocks wait for their parent.
        """
        return len(self._orphans)

    # The steps

    def _import_one(self, block: Block, now: int | None, built_here: bool = False) -> Imported:
        """
        Import one block (no kept-aside blocks).
        """
        header = block.header
        block_hash = header.hash
        if read_header_rlp(self.store, block_hash) is not None:
            return Imported(ImportResult.EXIST, block_hash=block_hash)
        tip = self.tip
        if header.parent_hash == tip.header.hash:
            parent: Header | None = tip.header
            parent_total_difficulty: int | None = tip.total_difficulty
        else:
            parent = self._read_header(header.parent_hash)
            parent_total_difficulty = None if parent is None else read_total_difficulty(self.store, parent.hash)
        if parent is None or parent_total_difficulty is None:
            self._keep_orphan(block)
            return Imported(ImportResult.NO_PARENT, block_hash=block_hash)
        on_tip = parent.hash == tip.header.hash
        try:
            validate_header(parent, header, self.rules, now=now)
            validate_uncles(block, self.ancestry(parent) if block.uncles else [], self.rules)
            state = self._state_for(parent)
            self._tip_state = None
            outcome = apply_block(
                block, state, self.rules.chain_id, self.block_hashes(parent), self.rules.forks,
                impersonation=built_here and self.rules.impersonation,
            )
            validate_block(block, outcome)
        except (InvalidBlockError, StateError) as exc:
            return Imported(ImportResult.INVALID_BLOCK, reason=str(exc), block_hash=block_hash)
        return self._store_block(block, outcome, parent_total_difficulty, state if on_tip else None)

    def _keep_orphan(self, block: Block) -> None:
        """
        Keep a block whose parent is unknown until the parent arrives.
        """
        self._orphans[block.hash] = block
        self._orphans.move_to_end(block.hash)
        while len(self._orphans) > self._max_orphans:
            self._orphans.popitem(last=False)

    def _adopt_orphans(self, parent_hash: bytes, now: int | None) -> list[Imported]:
        """
        Import the kept blocks that descend from a block just stored.
        """
        steps: list[Imported] = []
        waiting = [parent_hash]
        while waiting:
            parent = waiting.pop()
            children = [block for block in self._orphans.values() if block.header.parent_hash == parent]
            for child in children:
                del self._orphans[child.hash]
                step = self._import_one(child, now)
                steps.append(step)
                if step.result in (ImportResult.IMPORTED_BEST, ImportResult.IMPORTED_NOT_BEST):
                    waiting.append(child.hash)
        return steps

    def _store_block(
        self, block: Block, outcome: BlockOutcome, parent_total_difficulty: int, state: State | None
    ) -> Imported:
        """
        Write a validated block in one batch, adopting it if it is the heaviest.

        @param state: the block's state, if it was executed on the tip's
            state and may be kept for the next block.
        """
        header = block.header
        block_hash = header.hash
        total_difficulty = parent_total_difficulty + cumulative_difficulty(block)
        batch = self.store.batch()
        write_header_rlp(batch, block_hash, header.encode())
        write_body_rlp(batch, block_hash, block.encode_body())
        write_receipts_rlp(batch, block_hash, encode_receipts(outcome.receipts))
        write_total_difficulty(batch, block_hash, total_difficulty)
        write_trie_nodes(batch, outcome.nodes)
        for code_hash, code in outcome.code.items():
            write_code(batch, code_hash, code)
        tip = self.tip
        if not is_heavier(total_difficulty, tip.total_difficulty):
            self.store.write(batch)
            return Imported(ImportResult.IMPORTED_NOT_BEST, block, outcome.receipts, block_hash=block_hash)
        if header.parent_hash == tip.header.hash:
            abandoned: tuple[Block, ...] = ()
            adopted: tuple[Block, ...] = (block,)
            write_canonical_changes(batch, tip.header, abandoned, adopted)
            abandoned_receipts: tuple[tuple[Receipt, ...], ...] = ()
            adopted_receipts: tuple[tuple[Receipt, ...], ...] = (outcome.receipts,)
        else:
            pending = {block_hash: header}
            reorganisation = find_reorganisation(
                lambda wanted: pending.get(wanted) or self._read_header(wanted), tip.header, header
            )
            abandoned = tuple(self.stored_block(old.hash) for old in reorganisation.abandoned)
            adopted = tuple(self.stored_block(new.hash) for new in reorganisation.adopted[:-1]) + (block,)
            write_canonical_changes(batch, reorganisation.ancestor, abandoned, adopted)
            abandoned_receipts = tuple(self.stored_receipts(old.hash) for old in abandoned)
            adopted_receipts = tuple(self.stored_receipts(new.hash) for new in adopted[:-1]) + (outcome.receipts,)
            state = None
        self.store.write(batch)
        head = ChainHead(header, total_difficulty)
        self.tip = head
        self._keep_tip_state(state)
        self.index_logs(force=bool(abandoned))
        event = ChainEvent(adopted, abandoned, adopted_receipts, abandoned_receipts)
        return Imported(ImportResult.IMPORTED_BEST, block, outcome.receipts, head, event, block_hash=block_hash)

    def _keep_tip_state(self, state: State | None) -> None:
        """
        Keep the state of the new tip for the next block built on it, for a while.
        """
        if state is None or self._tip_state_age >= TIP_STATE_BLOCKS:
            self._tip_state = None
            self._tip_state_age = 0
            return
        self._tip_state = state
        self._tip_state_age += 1

    def keep_tip_state(self, header: Header, state: State) -> None:
        """
        Hand back the state of L{tip_state} after a block built on it was
        stored as the new tip (L{import_built}), so that the next block
        starts from it; ignored when the tip is another block.
        """
        if header.hash == self.tip.header.hash:
            self._keep_tip_state(state)

    # Reads the writer needs

    def index_logs(self, force: bool = False) -> int:
        """
        Extend the log index's bitmaps to the tip once they trail it by
        L{INDEX_LAG} blocks (at once with C{force}: after a reorganisation
        or a rewind, whose sections need rebuilding).  A store failure
        leaves the bitmaps behind (searches then read the blooms).

        @return: how many blocks are still to index.
        @raise StoreError: the store failed (the caller logs it).
        """
        tip = self.tip.header.number
        if not force and tip - self._logs_indexed < INDEX_LAG:
            return 0
        remaining = self._log_indexer.catch_up(tip)
        self._logs_indexed = tip - remaining
        return remaining

    @property
    def logs_indexed(self) -> int:
        """
        The highest block whose logs the bitmaps hold.
        """
        return self._logs_indexed

    def _state_for(self, parent: Header) -> State:
        """
        A state at C{parent}'s state root: the kept tip state when it is the tip's.
        """
        if self._tip_state is not None and parent.hash == self.tip.header.hash:
            return self._tip_state
        return State.from_store(self.store, parent.state_root)

    def ancestry(self, parent: Header) -> list[Ancestor]:
        """
        C{parent} and its ancestors, as many as an uncle check needs.
        """
        ancestry = []
        header: Header | None = parent
        while header is not None and len(ancestry) < MAX_UNCLE_DEPTH:
            block = self.stored_block(header.hash)
            ancestry.append(Ancestor(header, frozenset(uncle.hash for uncle in block.uncles)))
            header = None if header.number == 0 else self._read_header(header.parent_hash)
        return ancestry

    def block_hashes(self, parent: Header) -> BlockHashes:
        """
        The BLOCKHASH lookup of a child of C{parent}: the canonical index when
        C{parent} is the tip, else a walk up C{parent}'s own ancestry.
        """
        store = self.store
        if parent.hash == self.tip.header.hash:
            top = parent.number

            def canonical(number: int) -> Hash32 | None:
                if not 0 <= number <= top:
                    return None
                found = read_canonical_hash(store, number)
                return None if found is None else Hash32(found)

            return canonical
        return ancestry_hashes(parent, self._read_header)

    def stored_block(self, block_hash: bytes) -> Block:
        """
        A block that must be stored.

        @raise ChainError: it is not.
        """
        block = self._read_block(block_hash)
        if block is None:
            raise ChainError(f"the store has no block 0x{block_hash.hex()}")
        return block

    def stored_receipts(self, block_hash: bytes) -> tuple[Receipt, ...]:
        """
        The receipts of a block that must be stored.

        @raise ChainError: they are not.
        """
        receipts = self._read_receipts(block_hash)
        if receipts is None:
            raise ChainError(f"the store has no receipts for block 0x{block_hash.hex()}")
        return receipts

    def _stored_header(self, block_hash: bytes) -> Header | None:
        raw = read_header_rlp(self.store, block_hash)
        return None if raw is None else Header.decode(raw)

    def _stored_block(self, block_hash: bytes) -> Block | None:
        header = self._stored_header(block_hash)
        body = None if header is None else read_body_rlp(self.store, block_hash)
        return None if header is None or body is None else Block.from_body(header, body)

    def _stored_receipts(self, block_hash: bytes) -> tuple[Receipt, ...] | None:
        raw = read_receipts_rlp(self.store, block_hash)
        return None if raw is None else decode_receipts(raw)


def ancestry_hashes(parent: Header, read_header: HeaderReader) -> BlockHashes:
    """
    The BLOCKHASH lookup of a child of C{parent} that walks C{parent}'s own
    ancestry (right for a block off the canonical chain), reading each
    header once, lazily.
    """
    walked: dict[int, Hash32] = {parent.number: parent.hash}
    cursor = [parent]

    def walk(number: int) -> Hash32 | None:
        if not 0 <= number <= parent.number:
            return None
        while number not in walked:
            header = read_header(cursor[0].parent_hash)
            if header is None:
                return None
            walked[header.number] = header.hash
            cursor[0] = header
        return walked[number]

    return walk


def read_head(store: KeyValueStore, read_header: HeaderReader) -> ChainHead:
    """
    The head the store records.

    @raise ChainNotInitializedError: there is none.
    """
    head_hash = read_head_hash(store)
    header = None if head_hash is None else read_header(head_hash)
    if header is None:
        raise ChainNotInitializedError("the store holds no chain: write its genesis first")
    total_difficulty = read_total_difficulty(store, header.hash)
    if total_difficulty is None:
        raise ChainNotInitializedError(f"the store has no total difficulty for its head 0x{header.hash.hex()}")
    return ChainHead(header, total_difficulty)


def outcomes(steps: Sequence[Imported]) -> list[ImportOutcome]:
    """
    The edge's view of import steps.
    """
    return [step.outcome() for step in steps]


__all__ = [
    "BlockImporter",
    "BlockProducer",
    "ChainEvent",
    "ChainHead",
    "ChainNotInitializedError",
    "ImportOutcome",
    "ImportResult",
    "Imported",
    "MAX_ORPHANS",
    "TIP_STATE_BLOCKS",
    "ancestry_hashes",
    "outcomes",
    "read_head",
]
