"""
The miner (L5): builds blocks of pending transactions on the head, seals
them with the built-in merged-mining solver and stores them through the
chain service's writer (C{docs/chain-service.md}, DESIGN §2).

Modes (C{mining.mode}): C{auto} (the pool asks for a block after each
accepted transaction, and waits for it), C{interval:N} (a block every N
seconds on the injected clock), C{manual} (only when asked: C{evm_mine}) and
C{off}.  L{Miner.start} and L{Miner.stop} (C{evm_startMining},
C{evm_stopMining}) switch the automatic modes on and off.
"""

import heapq
import itertools
from collections.abc import Callable, Sequence

from twisted.application.service import Service
from twisted.internet.defer import Deferred, DeferredLock, maybeDeferred
from twisted.internet.interfaces import IReactorTime
from twisted.internet.task import LoopingCall
from twisted.logger import Logger
from zope.interface import implementer

from nodex.chain.builder import BuiltBlock, SkippedTransaction, build_block, seal_block
from nodex.chain.errors import InvalidBlockError
from nodex.chain.pow import Seal, solve
from nodex.chain.processing import BlockHashes, BlockOutcome, effective_gas_price
from nodex.interfaces import IMiner, ImportResult, ITransactionPool
from nodex.primitives import UINT64_CEILING, Address
from nodex.services.chain import ChainService
from nodex.services.errors import DevChainInputError, ServiceError
from nodex.services.threads import RunInThread, SerialThread
from nodex.state.state import State
from nodex.structures.blocks import Block
from nodex.structures.errors import InvalidTransactionError
from nodex.structures.headers import Header
from nodex.structures.transactions import Transaction

MODES = ("auto", "interval", "manual", "off")

MAX_NONCES = 2**22
"""The most template nonces the built-in solver tries for one block (a few
seconds of hashing): enough for regtest and devnet difficulties, not for
main, whose blocks come from merged miners."""

SMALL_BLOCK_GAS = 100_000
"""
The most gas a transaction mined alone (L{Miner.mine_alone}) may carry for
its block to count as a small writer job, built on the reactor thread when
the writer is idle: at the EVM's slowest measured rate (alt_bn128 pairings,
about 4 Mgas/s) 25 ms, at its usual 20 Mgas/s 5 ms; a native or ERC-20
transfer takes well under a millisecond.
"""

CHEAP_SEAL_DIFFICULTY = 64
"""
The highest difficulty whose seal is searched in the same job that builds
the block: the search then tries a few dozen template nonces on average (well
under a millisecond), as on regtest (difficulty 1).  Above it, building and
sealing are split (L{Miner._produce_sealed}): the writer builds, the seal is
searched on the miner's own thread in batches of L{SEAL_BATCH_NONCES}, and
the sealed block is stored through the importer, so that neither the
reactor nor the writer waits for the search.
"""

SEAL_BATCH_NONCES = 1 << 14
"""Template nonces tried in one job of the seal thread (about 50 ms); between
two batches the miner checks whether the head moved or the node is stopping."""

MINED_LOG_INTERVAL = 1.0
"""The fewest seconds between two "mined block" log lines.  A block mined
sooner after the last line is only counted, and the next line says how many
blocks went unlogged: in C{auto} mode a block per transaction, one line (and
one flush of the log file) each cost about 4 % of the node's time
(C{benchmarks/RESULTS.md}, "End to end").  A level would not help: the
node's log observers write every level."""


class MiningModeError(ServiceError):
    """
    A mining mode is not one of C{auto}, C{interval:SECONDS}, C{manual}, C{off}.
    """


class SealNotFoundError(ServiceError):
    """
    The built-in solver found no seal for a block within its nonce budget.
    """


class MiningStoppedError(ServiceError):
    """
    The node stopped while the miner searched for a seal.
    """


class _TipMoved(Exception):
    """
    Another block became the head while a seal was searched: build again.
    """


def parse_mining_mode(text: str) -> tuple[str, float | None]:
    """
    Split a C{mining.mode} value into the mode and, for C{interval}, its seconds.

    @raise MiningModeError: the value is not a mode.
    """
    if text in ("auto", "manual", "off"):
        return text, None
    if text.startswith("interval:"):
        try:
            seconds = float(text[len("interval:") :])
        except ValueError:
            seconds = 0.0
        if seconds > 0:
            return "interval", seconds
    raise MiningModeError(f"unknown mining mode {text!r}: want auto, interval:SECONDS, manual or off")


def order_candidates(transactions: Sequence[Transaction]) -> list[Transaction]:
    """
    Order pending transactions for a block: the best-paying first, each
    sender's in nonce order (the next transaction of a sender competes on
    its own price once the previous one is taken); equal prices keep the
    order they were given in.  Transactions without a valid signature come last.
    """
    by_sender: dict[bytes, list[Transaction]] = {}
    unsigned: list[Transaction] = []
    for transaction in transactions:
        try:
            sender = transaction.sender
        except InvalidTransactionError:
            unsigned.append(transaction)
            continue
        by_sender.setdefault(sender, []).append(transaction)
    heap: list[tuple[int, int, int, bytes]] = []
    counter = itertools.count()
    for sender, queue in by_sender.items():
        queue.sort(key=lambda transaction: transaction.nonce)
        heapq.heappush(heap, (-effective_gas_price(queue[0]), next(counter), 0, sender))
    ordered = []
    while heap:
        _price, _order, position, sender = heapq.heappop(heap)
        queue = by_sender[sender]
        ordered.append(queue[position])
        if position + 1 < len(queue):
            following = queue[position + 1]
            heapq.heappush(heap, (-effective_gas_price(following), next(counter), position + 1, sender))
    return ordered + unsigned


@implementer(IMiner)
class Miner(Service):
    """
    The block producer of one chain.

    @ivar coinbase: the address credited with the fees.
    @ivar mode: C{auto}, C{interval}, C{manual} or C{off}.
    @ivar interval: the seconds between blocks in C{interval} mode.
    @ivar pool: where pending transactions come from (may be set after
        construction, since the pool also needs the miner).
    @ivar uncles: given the parent on the writer thread, the side-chain
        headers a new block may include as uncles (set by the composition
        root to the work service's L{nodex.services.work.WorkService.thd_uncles});
        L{None}: no uncles.
    @ivar blocks_mined: how many blocks this miner has produced (the metrics).
    """

    log = Logger()

    def __init__(
        self,
        chain: ChainService,
        coinbase: Address,
        mode: str,
        clock: IReactorTime,
        pool: ITransactionPool | None = None,
        extra_data: bytes = b"",
        max_nonces: int = MAX_NONCES,
        run_seal_search: RunInThread = maybeDeferred,
        seal_thread: SerialThread | None = None,
    ) -> None:
        """
        @param mode: a C{mining.mode} value (C{interval:N} included).
        @param extra_data: the extra data of every block (at most 32 bytes).
        @param max_nonces: how many template nonces the solver tries per block.
        @param run_seal_search: runs a batch of the seal search off the
            reactor thread (the node gives it a thread of its own; unit
            tests run it at once).
        @param seal_thread: a thread of the miner's own for the seal search,
            started and stopped with the service (instead of
            C{run_seal_search}).
        @raise MiningModeError: C{mode} is not a mode.
        """
        self.chain = chain
        self.coinbase = coinbase
        self.mode, self.interval = parse_mining_mode(mode)
        self.pool = pool
        self._clock = clock
        self._extra_data = extra_data
        self._max_nonces = max_nonces
        self._enabled = self.mode in ("auto", "interval")
        self._offset = 0
        self._next_timestamp: int | None = None
        self._loop: LoopingCall | None = None
        self._logged_at: float | None = None
        self._unlogged = 0
        self._seal_thread = seal_thread
        self._run_seal_search = run_seal_search if seal_thread is None else seal_thread.run
        self._sealing = DeferredLock()
        self._stopped = False
        self.uncles: Callable[[Header], Sequence[Header]] | None = None
        self.blocks_mined = 0

    @property
    def is_mining(self) -> bool:
        """
        Whether blocks are produced without being asked (auto or interval, not stopped).
        """
        return self._enabled and self.mode in ("auto", "interval")

    def startService(self) -> None:
        """
        Start the interval loop, if that is the mode.
        """
        self._stopped = False
        if self._seal_thread is not None:
            self._seal_thread.start()
        super().startService()
        self._update_loop()

    def stopService(self) -> None:
        """
        Stop the interval loop, and any seal search at its next batch.
        """
        self._stopped = True
        super().stopService()
        self._update_loop()
        if self._seal_thread is not None:
            self._seal_thread.stop()

    def start(self) -> None:
        """
        Resume automatic mining (C{evm_startMining}); a no-op when running.
        """
        self._enabled = True
        self._update_loop()

    def stop(self) -> None:
        """
        Suspend automatic mining (C{evm_stopMining}); C{mine} still works.
        """
        self._enabled = False
        self._update_loop()

    def _update_loop(self) -> None:
        """
        Run the interval loop exactly while the service runs in interval mode and mining is on.
        """
        wanted = self.running and self.is_mining and self.mode == "interval"
        if wanted and self._loop is None:
            self._loop = LoopingCall(self._tick)
            self._loop.clock = self._clock
            assert self.interval is not None
            self._loop.start(self.interval, now=False)
        elif not wanted and self._loop is not None:
            if self._loop.running:
                self._loop.stop()
            self._loop = None

    def _tick(self) -> Deferred[None]:
        """
        One block of the interval loop; a failure is logged, not fatal.
        """
        return maybeDeferred(self.mine).addCallbacks(
            lambda block: None,
            lambda failure: self.log.failure("interval mining failed", failure),
        )

    def increase_time(self, seconds: int) -> int:
        """
        Add C{seconds} (when positive) to the offset of the next block's
        timestamp and return the accumulated offset (C{evm_increaseTime}).
        """
        if seconds > 0:
            self._check_block_time(self._base_time(), self._offset + seconds)
            self._offset += seconds
        return self._offset

    @property
    def time_offset(self) -> int:
        """
        The offset the next block's timestamp gets.
        """
        return self._offset

    # Dev-chain controls (evm_setNextBlockTimestamp, evm_setAutomine,
    # evm_setIntervalMining, hardhat_mine): see nodex.services.devchain.

    def set_next_timestamp(self, timestamp: int) -> None:
        """
        Give the next block exactly C{timestamp} (the C{increase_time}
        offset is then added to it); later blocks follow the clock again.

        @raise DevChainInputError: the timestamp with the offset does not fit in 64 bits.
        """
        self._check_block_time(timestamp, self._offset)
        self._next_timestamp = timestamp

    @staticmethod
    def _check_block_time(base: int, offset: int) -> None:
        """
        Refuse a time offset or set timestamp that would stamp the next
        block past the 64 bits a header's timestamp has.

        @raise DevChainInputError: C{base + offset} does not fit.
        """
        if base + offset >= UINT64_CEILING:
            raise DevChainInputError(
                f"the next block's timestamp {base} + {offset} seconds would not fit in 64 bits"
            )

    def _base_time(self) -> int:
        """
        The time the next block's timestamp starts from: the one set by
        L{set_next_timestamp}, else the clock's.
        """
        if self._next_timestamp is not None:
            return self._next_timestamp
        return int(self._clock.seconds())

    def take_block_time(self) -> int:
        """
        The wanted timestamp of the next block (before the parent-plus-one
        rule) for a block produced elsewhere (C{hardhat_mine}), consuming
        the offset and the set timestamp as a mined block does.
        """
        wanted = self._base_time() + self._offset
        self._offset = 0
        self._next_timestamp = None
        return wanted

    def set_mode(self, mode: str) -> None:
        """
        Switch to another C{mining.mode} (C{auto}, C{interval:N},
        C{manual}, C{off}) and resume automatic mining in the automatic modes.

        @raise MiningModeError: C{mode} is not a mode.
        """
        self.mode, self.interval = parse_mining_mode(mode)
        self._enabled = self.mode in ("auto", "interval")
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._loop = None
        self._update_loop()

    def mine(self, empty: bool = True) -> Deferred[Block | None]:
        """
        Build, seal and store one block of the pool's pending transactions
        on the head, after any block already being produced.

        The timestamp is max(now + the C{increase_time} offset, parent + 1);
        the offset is consumed.  Candidates that turn out invalid on the
        head state are removed from the pool.

        @param empty: store the block even when it includes none of the
            candidates; C{False} (automining) stores nothing then: a block
            that arrived meanwhile already brought them.
        @return: a Deferred firing with the new block (L{None} when an
            empty one was not wanted), or failing with
            L{SealNotFoundError} when the difficulty is beyond the built-in solver.
        """
        candidates = order_candidates(self.pool.pending()) if self.pool is not None else []
        return self._produce(lambda state: candidates, empty=empty)

    def mine_alone(self, transaction: Transaction, check: Callable[[State], bool]) -> Deferred[Block | None]:
        """
        Mine a block of C{transaction} alone if C{check}, run on the writer
        thread with the head's state just before the block is built, says
        so: the pool's admission and its block in one writer job, the path
        of a transaction sent to an idle pool in C{auto} mode.

        @param check: reads the state (it must not change it) and returns
            whether to mine now; an exception it raises fails the returned
            Deferred and nothing is mined.
        @return: a Deferred firing with the new block, or L{None} when
            C{check} said not to mine (the C{increase_time} offset is then
            kept for the next block).
        """
        refusal: list[BaseException] = []

        def candidates(state: State) -> list[Transaction] | None:
            try:
                wanted = check(state)
            except Exception as exc:
                refusal.append(exc)
                return None
            return [transaction] if wanted else None

        return self._produce(candidates, refusal, small=transaction.gas <= SMALL_BLOCK_GAS)

    def _produce(
        self,
        take: Callable[[State], list[Transaction] | None],
        refusal: Sequence[BaseException] = (),
        small: bool = False,
        empty: bool = True,
    ) -> Deferred[Block | None]:
        """
        Build, seal and store a block of the transactions C{take} chooses
        given the head's state (on the writer thread); L{None} stores
        nothing and keeps the timestamp offset.

        A seal at most L{CHEAP_SEAL_DIFFICULTY} is searched in the job that
        builds the block; a dearer one on the miner's seal thread, one
        block at a time (L{_produce_sealed}).

        @param refusal: where C{take} leaves the exception that made it
            decline, if any: the returned Deferred then fails with it.
        @param small: the block is small enough to be built at once on the
            reactor thread when the writer is idle (L{SMALL_BLOCK_GAS}),
            which only a cheap seal allows.
        @param empty: store a block that includes none of the transactions C{take} chose.
        """
        if self.chain.head.header.difficulty > CHEAP_SEAL_DIFFICULTY:
            return self._sealing.run(lambda: Deferred.fromCoroutine(self._produce_sealed(take, refusal, empty)))
        now = self._base_time()
        offset, self._offset = self._offset, 0
        skipped: list[SkippedTransaction] = []

        def produce(parent: Header, state: State, block_hashes: BlockHashes) -> tuple[Block, BlockOutcome] | None:
            built = self._build(take, parent, state, block_hashes, now + offset, empty)
            if built is None:
                return None
            header = built.block.header
            seal = solve(header.hash_for_merged_mining, header.difficulty, range(self._max_nonces))
            if seal is None:
                raise self._no_seal(header)
            skipped.extend(built.skipped)
            return seal_block(built.block, seal), built.outcome

        def produced(block: Block | None) -> Block | None:
            if block is None:
                self._offset += offset
                if refusal:
                    raise refusal[0]
                return None
            return self._mined(block, skipped)

        return self.chain.produce_block(produce, small=small).addCallback(produced)

    def _build(
        self,
        take: Callable[[State], list[Transaction] | None],
        parent: Header,
        state: State,
        block_hashes: BlockHashes,
        wanted_time: int,
        empty: bool = True,
    ) -> BuiltBlock | None:
        """
        Build an unsealed block on C{parent} of what C{take} chooses
        (writer thread); L{None} when C{take} declines, or when the block
        would include none of its transactions and C{empty} is false.
        """
        candidates = take(state)
        if candidates is None:
            return None
        timestamp = max(wanted_time, parent.timestamp + 1)
        uncles = self.uncles(parent) if self.uncles is not None else ()
        built = build_block(
            parent, state, candidates, self.coinbase, timestamp, self.chain.rules, block_hashes, self._extra_data, uncles
        )
        if not empty and not built.block.transactions:
            return None
        return built

    async def _produce_sealed(
        self, take: Callable[[State], list[Transaction] | None], refusal: Sequence[BaseException], empty: bool = True
    ) -> Block | None:
        """
        Build on the writer, search the seal on the seal thread, store the
        sealed block through the importer; build again when the head moved
        during the search.
        """
        now = self._base_time()
        offset, self._offset = self._offset, 0
        while True:
            built, state = await self.chain.build_on_tip(
                lambda parent, state, block_hashes: self._build(take, parent, state, block_hashes, now + offset, empty)
            )
            if built is None:
                self._offset += offset
                if refusal:
                    raise refusal[0]
                return None
            try:
                seal = await self._search_seal(built.block.header)
            except _TipMoved:
                continue
            except BaseException:
                self._offset += offset
                raise
            block = seal_block(built.block, seal)
            result = await self.chain.import_built_block(block, built.outcome, state)
            if result == ImportResult.INVALID_BLOCK:
                raise InvalidBlockError(f"the miner's block {block.number} 0x{block.hash.hex()} was refused")
            if result != ImportResult.IMPORTED_BEST:
                self.log.info(
                    "mined block {number} 0x{hash} lost to another block at its height",
                    number=block.number,
                    hash=block.hash.hex(),
                )
            return self._mined(block, built.skipped)

    async def _search_seal(self, header: Header) -> Seal:
        """
        Search the canonical template's seal of C{header} on the seal
        thread, in batches; between batches, give up when the node stops
        and start over when another block became the head.

        @raise SealNotFoundError: no seal within the nonce budget.
        @raise MiningStoppedError: the miner stopped.
        @raise _TipMoved: the head is no longer C{header}'s parent.
        """
        start = 0
        while start < self._max_nonces:
            if self._stopped:
                raise MiningStoppedError("the node stopped while a seal was searched")
            if self.chain.head.header.hash != header.parent_hash:
                raise _TipMoved()
            nonces = range(start, min(start + SEAL_BATCH_NONCES, self._max_nonces))
            seal = await self._run_seal_search(solve, header.hash_for_merged_mining, header.difficulty, nonces)
            if seal is not None:
                return seal
            start = nonces.stop
        raise self._no_seal(header)

    def _no_seal(self, header: Header) -> SealNotFoundError:
        """
        The error of a block whose seal is beyond the nonce budget.
        """
        return SealNotFoundError(
            f"no seal for block {header.number} at difficulty {header.difficulty}"
            f" in {self._max_nonces} nonces: this network needs a merged miner"
        )

    def _mined(self, block: Block, skipped: Sequence[SkippedTransaction]) -> Block:
        """
        After a block is stored: drop the transactions the builder found
        invalid from the pool, and log the block.
        """
        self._next_timestamp = None
        invalid = [entry for entry in skipped if entry.invalid]
        for entry in invalid:
            self.log.info(
                "dropping transaction 0x{hash}: {reason}",
                hash=entry.transaction.hash.hex(),
                reason=entry.reason,
            )
        if invalid and self.pool is not None:
            self.pool.remove([entry.transaction.hash for entry in invalid])
        self.blocks_mined += 1
        self._log_mined(block)
        return block

    def _log_mined(self, block: Block) -> None:
        """
        Log a mined block, unless the last such line is less than
        L{MINED_LOG_INTERVAL} old: then only count it for the next line.
        """
        now = self._clock.seconds()
        if self._logged_at is not None and now - self._logged_at < MINED_LOG_INTERVAL:
            self._unlogged += 1
            return
        self._logged_at = now
        unlogged, self._unlogged = self._unlogged, 0
        if unlogged:
            self.log.info(
                "mined block {number} 0x{hash} with {count} transactions"
                " ({unlogged} blocks mined since the last line)",
                number=block.number,
                hash=block.hash.hex(),
                count=len(block.transactions),
                unlogged=unlogged,
            )
        else:
            self.log.info(
                "mined block {number} 0x{hash} with {count} transactions",
                number=block.number,
                hash=block.hash.hex(),
                count=len(block.transactions),
            )


__all__ = [
    "CHEAP_SEAL_DIFFICULTY",
    "MAX_NONCES",
    "MINED_LOG_INTERVAL",
    "MODES",
    "SEAL_BATCH_NONCES",
    "SMALL_BLOCK_GAS",
    "Miner",
    "MiningModeError",
    "MiningStoppedError",
    "SealNotFoundError",
    "order_candidates",
    "parse_mining_mode",
]
