"""
The chain service (L5): imports blocks from any source, keeps the head and
the canonical chain, and answers reads (C{docs/chain-service.md}).

Every write (an import, a mined block, a rewind) runs on one writer thread
and is one atomic batch of the store: headers, bodies, receipts, total
difficulty, trie nodes, code, and, when the head moves, the canonical index,
the transaction lookup, the log index and the head pointer.  The writer keeps
its own view of the head (the I{tip}); the public L{ChainService.head} moves
on the reactor thread after the batch is written, and the observers are told
then.  Reads run on the reader pool against what the store holds.
"""

from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from threading import Lock
from typing import Any, TypeVar

from twisted.application.service import Service
from twisted.internet.defer import Deferred, maybeDeferred, succeed
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger
from zope.interface import implementer

from nodex.chain.errors import ChainError, InvalidBlockError
from nodex.chain.forkchoice import find_reorganisation, is_heavier, write_canonical_changes
from nodex.chain.logindex import INDEX_LAG, LogIndexer, indexed_through, stale_sections, unindex_block
from nodex.chain.processing import (
    Ancestor,
    BlockHashes,
    BlockOutcome,
    apply_block,
    cumulative_difficulty,
    effective_gas_price,
    validate_block,
    validate_header,
    validate_uncles,
)
from nodex.chain.rules import MAX_UNCLE_DEPTH, ChainRules
from nodex.db.errors import StoreError
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
    read_tx_lookup,
    write_body_rlp,
    write_code,
    write_head_hash,
    write_header_rlp,
    write_receipts_rlp,
    write_total_difficulty,
    write_trie_nodes,
)
from nodex.evm.instructions.system import compute_contract_address
from nodex.interfaces import (
    ChainEvent,
    ChainHead,
    IChainService,
    ImportResult,
    ReceiptView,
    TransactionLocation,
)
from nodex.primitives import Address, Hash32
from nodex.services.threads import ChainThreads
from nodex.state.errors import StateError
from nodex.state.state import State
from nodex.structures.accounts import Account
from nodex.structures.blocks import Block
from nodex.structures.headers import Header
from nodex.structures.receipts import Receipt, decode_receipts, encode_receipts

T = TypeVar("T")

BlockProducer = Callable[[Header, State, BlockHashes], tuple[Block, BlockOutcome] | None]
"""
Builds and seals a block on the tip: given the tip's header, a L{State} at
its state root (which it may change) and the tip's ancestry for BLOCKHASH,
returns the sealed block and the outcome of executing it, or L{None} to
store nothing (it must then have left the state unchanged: reads only).
"""

TIP_STATE_BLOCKS = 256
"""The writer keeps one L{State} across this many of its own blocks before starting afresh (bounded memory)."""

RECENT_BLOCKS = 64
"""How many recently written blocks (with their receipts) the service keeps decoded for reads."""


class ChainNotInitializedError(ChainError):
    """
    The store holds no chain (L{nodex.chain.genesis.initialize_chain} was not run on it).
    """


@dataclass(frozen=True)
class _Change:
    """
    What a writer job did, for the reactor thread to publish.
    """

    result: Any
    head: ChainHead | None = None
    event: ChainEvent | None = None
    reason: str | None = None


@implementer(IChainService)
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
        @param store: a store whose chain has been initialised.
        @param clock: the time source of the check of future timestamps.
        @param threads: the writer thread and reader pool; L{None} runs
            everything at once on the calling thread (unit tests).
        @param close_store: close the store when the service stops.
        @raise ChainNotInitializedError: the store holds no chain.
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
        self._recent: OrderedDict[bytes, tuple[Block, tuple[Receipt, ...]]] = OrderedDict()
        self._recent_lookup: dict[bytes, tuple[bytes, int]] = {}
        self._recent_lock = Lock()
        self._tip = self._read_head()
        self._head = self._tip
        self._tip_state: State | None = None
        self._tip_state_age = 0
        self._log_indexer = LogIndexer(store)
        self._logs_indexed = indexed_through(store)

    # Service

    def startService(self) -> None:
        """
        Start the writer thread and the reader pool.
        """
        if self._threads is not None:
            self._threads.start()
        super().startService()
        self.log.info(
            "chain at block {number} 0x{hash}, total difficulty {td}",
            number=self._head.header.number,
            hash=self._head.header.hash.hex(),
            td=self._head.total_difficulty,
        )
        if self._logs_indexed < self._head.header.number or stale_sections(self.store):
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
        """
        return self._head

    def add_observer(self, observer: Callable[[ChainEvent], None]) -> None:
        """
        Call C{observer} on the reactor thread after every change of the canonical chain.
        """
        self._observers.append(observer)

    def _read_head(self) -> ChainHead:
        """
        The head the store records.

        @raise ChainNotInitializedError: there is none.
        """
        head_hash = read_head_hash(self.store)
        header = None if head_hash is None else self._thd_header(head_hash)
        if header is None:
            raise ChainNotInitializedError("the store holds no chain: write its genesis first")
        total_difficulty = read_total_difficulty(self.store, header.hash)
        if total_difficulty is None:
            raise ChainNotInitializedError(f"the store has no total difficulty for its head 0x{header.hash.hex()}")
        return ChainHead(header, total_difficulty)

    def _publish(self, change: _Change) -> Any:
        """
        On the reactor thread: move the head and tell the observers.
        """
        if change.head is not None:
            self._head = change.head
        if change.event is not None:
            for observer in list(self._observers):
                try:
                    observer(change.event)
                except Exception:
                    self.log.failure("chain observer {observer!r} failed", observer=observer)
        return change.result

    def _write(self, function: Callable[..., _Change], *args: Any, small: bool = False) -> Deferred[Any]:
        """
        Run a writer job and publish what it changed.

        @param small: the job is known to take a few milliseconds at most:
            it may run at once on this thread when the writer is idle.
        """
        run = self._run_small_writer if small else self._run_writer
        return run(function, *args).addCallback(self._publish)

    # Imports

    def import_block(self, block: Block) -> Deferred[str]:
        """
        Validate, execute and store a block from any source; adopt it if its
        chain is the heaviest.

        @return: a Deferred firing with an L{ImportResult} name; an invalid
            block's reason is logged.
        """
        return self._write(self._thd_import_block, block)

    def import_block_explained(self, block: Block) -> Deferred[tuple[str, str | None]]:
        """
        Like L{import_block}, with the reason an invalid block was refused
        (for merged-mining submissions and peer scoring).

        @return: a Deferred firing with the L{ImportResult} name and, for
            C{INVALID_BLOCK}, the broken rule (else L{None}).
        """
        return self._run_writer(self._thd_import_block, block).addCallback(
            lambda change: (self._publish(change), change.reason)
        )

    def import_built_block(self, block: Block, outcome: BlockOutcome) -> Deferred[str]:
        """
        Store a block whose execution outcome is already known (built by this
        node on the state of its parent); its header rules and seal are
        still checked.

        @return: a Deferred firing with an L{ImportResult} name.
        """
        return self._write(self._thd_import_built_block, block, outcome)

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
        return self._write(self._thd_produce_block, producer, small=small)

    def rewind(self, number: int) -> Deferred[None]:
        """
        Make the canonical block at C{number} the head, deleting the canonical
        blocks above it (C{evm_revert}, C{evm_reset}); a number at or above
        the head changes nothing.  Observers get a L{ChainEvent} whose
        C{rewound} is set.
        """
        return self._write(self._thd_rewind, number)

    def _thd_import_block(self, block: Block) -> _Change:
        """
        Import a block from any source (writer thread).
        """
        header = block.header
        if read_header_rlp(self.store, header.hash) is not None:
            return _Change(ImportResult.EXIST)
        parent = self._thd_header(header.parent_hash)
        if parent is None:
            return _Change(ImportResult.NO_PARENT)
        parent_total_difficulty = read_total_difficulty(self.store, parent.hash)
        if parent_total_difficulty is None:
            return _Change(ImportResult.NO_PARENT)
        on_tip = parent.hash == self._tip.header.hash
        try:
            validate_header(parent, header, self.rules, now=int(self._clock.seconds()))
            validate_uncles(block, self._thd_ancestry(parent) if block.uncles else [], self.rules)
            state = self._thd_state_for(parent)
            self._tip_state = None
            outcome = apply_block(block, state, self.rules.chain_id, self._thd_block_hashes(parent))
            validate_block(block, outcome)
        except (InvalidBlockError, StateError) as exc:
            self.log.warn(
                "invalid block {number} 0x{hash}: {reason}", number=header.number, hash=header.hash.hex(), reason=exc
            )
            return _Change(ImportResult.INVALID_BLOCK, reason=str(exc))
        change = self._thd_store(block, outcome, parent_total_difficulty, state if on_tip else None)
        if change.result == ImportResult.IMPORTED_BEST:
            self.log.info(
                "imported block {number} 0x{hash} with {count} transactions",
                number=header.number,
                hash=header.hash.hex(),
                count=len(block.transactions),
            )
        return change

    def _thd_import_built_block(self, block: Block, outcome: BlockOutcome) -> _Change:
        """
        Store a block whose outcome is known (writer thread).
        """
        header = block.header
        if read_header_rlp(self.store, header.hash) is not None:
            return _Change(ImportResult.EXIST)
        parent = self._thd_header(header.parent_hash)
        parent_total_difficulty = None if parent is None else read_total_difficulty(self.store, parent.hash)
        if parent is None or parent_total_difficulty is None:
            return _Change(ImportResult.NO_PARENT)
        try:
            validate_header(parent, header, self.rules)
            validate_block(block, outcome)
        except InvalidBlockError as exc:
            self.log.warn(
                "invalid built block {number} 0x{hash}: {reason}",
                number=header.number,
                hash=header.hash.hex(),
                reason=exc,
            )
            return _Change(ImportResult.INVALID_BLOCK)
        if parent.hash == self._tip.header.hash:
            self._tip_state = None
        return self._thd_store(block, outcome, parent_total_difficulty, None)

    def _thd_produce_block(self, producer: BlockProducer) -> _Change:
        """
        Have C{producer} build on the tip and store its block (writer thread).
        """
        tip = self._tip.header
        state = self._thd_state_for(tip)
        self._tip_state = None
        produced = producer(tip, state, self._thd_block_hashes(tip))
        if produced is None:
            # Declined after reading only: the state is still the tip's.
            self._tip_state = state
            return _Change(None)
        block, outcome = produced
        if block.header.parent_hash != tip.hash:
            raise InvalidBlockError("a produced block must build on the tip")
        validate_header(tip, block.header, self.rules)
        validate_block(block, outcome)
        change = self._thd_store(block, outcome, self._tip.total_difficulty, state)
        return _Change(block, change.head, change.event)

    def _thd_store(
        self, block: Block, outcome: BlockOutcome, parent_total_difficulty: int, state: State | None
    ) -> _Change:
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
        tip = self._tip
        if not is_heavier(total_difficulty, tip.total_difficulty):
            self.store.write(batch)
            self._remember(block, outcome.receipts)
            self.log.info(
                "imported side block {number} 0x{hash}", number=header.number, hash=block_hash.hex()
            )
            return _Change(ImportResult.IMPORTED_NOT_BEST)
        if header.parent_hash == tip.header.hash:
            abandoned: tuple[Block, ...] = ()
            adopted: tuple[Block, ...] = (block,)
            write_canonical_changes(batch, tip.header, abandoned, adopted)
            abandoned_receipts: tuple[tuple[Receipt, ...], ...] = ()
            adopted_receipts: tuple[tuple[Receipt, ...], ...] = (outcome.receipts,)
        else:
            pending = {block_hash: header}
            reorganisation = find_reorganisation(
                lambda wanted: pending.get(wanted) or self._thd_header(wanted), tip.header, header
            )
            abandoned = tuple(self._thd_stored_block(old.hash) for old in reorganisation.abandoned)
            adopted = tuple(self._thd_stored_block(new.hash) for new in reorganisation.adopted[:-1]) + (block,)
            write_canonical_changes(batch, reorganisation.ancestor, abandoned, adopted)
            abandoned_receipts = tuple(self._thd_stored_receipts(old.hash) for old in abandoned)
            adopted_receipts = tuple(self._thd_stored_receipts(new.hash) for new in adopted[:-1]) + (
                outcome.receipts,
            )
            state = None
            self.log.info(
                "reorganisation at block {number}: {abandoned} blocks abandoned, {adopted} adopted",
                number=reorganisation.ancestor.number,
                abandoned=len(abandoned),
                adopted=len(adopted),
            )
        self.store.write(batch)
        self._remember(block, outcome.receipts, adopted, abandoned)
        head = ChainHead(header, total_difficulty)
        self._tip = head
        self._keep_tip_state(state)
        self._thd_index_logs(force=bool(abandoned))
        event = ChainEvent(adopted, abandoned, adopted_receipts, abandoned_receipts)
        return _Change(ImportResult.IMPORTED_BEST, head, event)

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

    def _thd_rewind(self, number: int) -> _Change:
        """
        Delete the canonical blocks above C{number} and move the head there (writer thread).
        """
        tip = self._tip
        if number < 0:
            raise ChainError(f"cannot rewind to the negative block number {number}")
        if number >= tip.header.number:
            return _Change(None)
        target_hash = read_canonical_hash(self.store, number)
        target = None if target_hash is None else self._thd_header(target_hash)
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
            block = self._thd_stored_block(block_hash)
            abandoned.append(block)
            abandoned_receipts.append(self._thd_stored_receipts(block_hash))
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
        with self._recent_lock:
            for block in abandoned:
                self._forget_lookups(block)
                self._recent.pop(block.hash, None)
        head = ChainHead(target, total_difficulty)
        self._tip = head
        self._tip_state = None
        self._thd_index_logs(force=True)
        self.log.info("rewound the chain to block {number}", number=number)
        event = ChainEvent((), tuple(abandoned), (), tuple(abandoned_receipts), rewound=True)
        return _Change(None, head, event)

    # Writer helpers

    def _thd_index_logs(self, force: bool = False) -> int:
        """
        Extend the log index's bitmaps to the tip once they trail it by
        L{INDEX_LAG} blocks (at once with C{force}: after a reorganisation
        or a rewind, whose sections need rebuilding). A failure is logged:
        the blocks are stored, and searches read the blooms the bitmaps
        lack.

        @return: how many blocks are still to index.
        """
        tip = self._tip.header.number
        if not force and tip - self._logs_indexed < INDEX_LAG:
            return 0
        try:
            remaining = self._log_indexer.catch_up(tip)
        except StoreError:
            self.log.failure("indexing the logs of blocks up to {number} failed", number=tip)
            return 0
        self._logs_indexed = tip - remaining
        return remaining

    def _thd_state_for(self, parent: Header) -> State:
        """
        A state at C{parent}'s state root: the kept tip state when it is the tip's.
        """
        if self._tip_state is not None and parent.hash == self._tip.header.hash:
            return self._tip_state
        return State.from_store(self.store, parent.state_root)

    def _thd_ancestry(self, parent: Header) -> list[Ancestor]:
        """
        C{parent} and its ancestors, as many as an uncle check needs.
        """
        ancestry = []
        header: Header | None = parent
        while header is not None and len(ancestry) < MAX_UNCLE_DEPTH:
            block = self._thd_stored_block(header.hash)
            ancestry.append(Ancestor(header, frozenset(uncle.hash for uncle in block.uncles)))
            header = None if header.number == 0 else self._thd_header(header.parent_hash)
        return ancestry

    def _thd_block_hashes(self, parent: Header) -> BlockHashes:
        """
        The BLOCKHASH lookup of a child of C{parent}: the canonical index when
        C{parent} is the tip, else a walk up C{parent}'s own ancestry.
        """
        store = self.store
        if parent.hash == self._tip.header.hash:
            top = parent.number

            def canonical(number: int) -> Hash32 | None:
                if not 0 <= number <= top:
                    return None
                found = read_canonical_hash(store, number)
                return None if found is None else Hash32(found)

            return canonical
        walked: dict[int, Hash32] = {parent.number: parent.hash}
        cursor = [parent]

        def walk(number: int) -> Hash32 | None:
            if not 0 <= number <= parent.number:
                return None
            while number not in walked:
                header = self._thd_header(cursor[0].parent_hash)
                if header is None:
                    return None
                walked[header.number] = header.hash
                cursor[0] = header
            return walked[number]

        return walk

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

    def _thd_stored_block(self, block_hash: bytes) -> Block:
        """
        A block that must be stored.

        @raise ChainError: it is not.
        """
        block = self._thd_block(block_hash)
        if block is None:
            raise ChainError(f"the store has no block 0x{block_hash.hex()}")
        return block

    def _thd_stored_receipts(self, block_hash: bytes) -> tuple[Receipt, ...]:
        """
        The receipts of a block that must be stored.

        @raise ChainError: they are not.
        """
        receipts = self._thd_receipts(block_hash)
        if receipts is None:
            raise ChainError(f"the store has no receipts for block 0x{block_hash.hex()}")
        return receipts

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
        head = self._head.header
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
        root = self._head.header.state_root if state_root is None else state_root
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


__all__ = ["BlockProducer", "ChainNotInitializedError", "ChainService", "receipt_views"]
