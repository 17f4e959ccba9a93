"""
The miner (L5): asks the chain's writer for blocks of the pool's pending
transactions, sealed with the built-in merged-mining solver
(C{docs/chain-service.md}, DESIGN §2).

The path is one way, top to bottom: the miner reads the pool and makes a
request (L{nodex.chain.building.making.TransactionsBlock}: the candidates, the
coinbase, the time, the uncle candidates); the writer
(L{nodex.api.chain.IChainWriter}) has the importer build it on the tip,
seal it and store it; nothing below calls back up.

Modes (C{mining.mode}): C{auto} (L{nodex.services.automine}: the miner
watches the pool and mines a block for each transaction of this node's
clients before the RPC answer), C{interval:N} (a block every N seconds on
the injected clock), C{manual} (only when asked: C{evm_mine}) and C{off}.
L{Miner.start} and L{Miner.stop} (C{evm_startMining}, C{evm_stopMining})
switch the automatic modes on and off.  No block is stamped beyond the
network's drift limit (L{nodex.services.blocktime}): when the head is that
far ahead, the next block waits until it is due, and every transaction
that arrives meanwhile joins it.
"""

import heapq
import itertools
from collections.abc import Callable, Sequence
from typing import Any

from twisted.application.service import Service
from twisted.internet.defer import Deferred, DeferredLock, fail, maybeDeferred, succeed
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.internet.task import LoopingCall, deferLater
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from nodex.chain.building.builder import BuiltBlock, SkippedTransaction, seal_block
from nodex.chain.dev.blocks import SealSearchError
from nodex.chain.errors import InvalidBlockError
from nodex.chain.importer import MAX_NONCES
from nodex.chain.outcomes import Imported
from nodex.chain.building.making import LoneAdmission, NotDueError, TransactionsBlock
from nodex.chain.seal.pow import Seal, solve
from nodex.chain.processing import effective_gas_price
from nodex.api.chain import IChainWriter, ImportResult
from nodex.api.mining import IMiner
from nodex.api.pool import ITransactionPool
from nodex.primitives import Address
from nodex.services.automine import AutoMining
from nodex.services.blocktime import BlockClock
from nodex.services.loglines import LineThrottle
from nodex.api.errors import ServiceError
from nodex.services.sideblocks import SideBlocks
from nodex.services.threads import RunInThread, SerialThread
from nodex.structures.blocks import Block
from nodex.structures.errors import InvalidTransactionError
from nodex.structures.headers import Header
from nodex.structures.transactions import Transaction

MODES = ("auto", "interval", "manual", "off")

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
    @ivar blocks_mined: how many blocks this miner has produced (the metrics).
    """

    log = Logger()

    def __init__(
        self,
        writer: IChainWriter,
        pool: ITransactionPool,
        coinbase: Address,
        mode: str,
        clock: IReactorTime,
        block_clock: BlockClock,
        side_blocks: SideBlocks | None = None,
        extra_data: bytes = b"",
        max_nonces: int = MAX_NONCES,
        run_seal_search: RunInThread = maybeDeferred,
        seal_thread: SerialThread | None = None,
    ) -> None:
        """
        @param writer: builds, seals and stores the blocks.
        @param pool: where pending transactions come from; the miner watches
            it for automining.
        @param mode: a C{mining.mode} value (C{interval:N} included).
        @param block_clock: the time policy of the node's blocks.
        @param side_blocks: the uncle candidates (L{None}: no uncles).
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
        self._writer = writer
        self.pool = pool
        self.coinbase = coinbase
        self.mode, self.interval = parse_mining_mode(mode)
        self._clock = clock
        self.block_clock = block_clock
        self._side_blocks = side_blocks
        self._extra_data = extra_data
        self._max_nonces = max_nonces
        self._enabled = self.mode in ("auto", "interval")
        self._loop: LoopingCall | None = None
        self._mined_lines = LineThrottle(MINED_LOG_INTERVAL)
        self._seal_thread = seal_thread
        self._run_seal_search = run_seal_search if seal_thread is None else seal_thread.run
        self._sealing = DeferredLock()
        self._stopped = False
        self._due_call: IDelayedCall | None = None
        self._due_waiters: list[Deferred[Block | None]] = []
        self._due_empty = False
        self.blocks_mined = 0
        self.automining = AutoMining(self, pool, clock)
        pool.watch_for_miner(self.automining)

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
        Stop the interval loop, any wait for a due block, and any seal
        search at its next batch.
        """
        self._stopped = True
        super().stopService()
        self._update_loop()
        self.automining.stop()
        if self._due_call is not None and self._due_call.active():
            self._due_call.cancel()
        self._due_call = None
        waiters, self._due_waiters = self._due_waiters, []
        for waiter in waiters:
            waiter.errback(MiningStoppedError("the node stopped while a block waited for its time"))
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

        @raise DevChainInputError: beyond 64 bits, or beyond the network's drift limit.
        """
        return self.block_clock.increase(seconds)

    def chain_time(self) -> int:
        """
        The time the next block would be stamped with before the
        parent-plus-one rule (L{BlockClock.wanted}: what C{evm_snapshot}
        remembers under the Ethereum conventions).
        """
        return self.block_clock.wanted()

    def set_chain_time(self, timestamp: int) -> None:
        """
        Make the next blocks' time go on from C{timestamp} now (L{BlockClock.set_chain_time}).
        """
        self.block_clock.set_chain_time(timestamp)

    @property
    def time_offset(self) -> int:
        """
        The offset the next block's timestamp gets.
        """
        return self.block_clock.offset

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

    # Blocks

    def mine(self, empty: bool = True) -> Deferred[Block | None]:
        """
        Build, seal and store one block of the pool's pending transactions
        on the head, after any block already being produced.

        The timestamp follows the node's L{BlockClock} (the clock, moved by
        the dev chain's controls, after the parent's, within the drift
        limit); when the head is already at the limit, the block waits
        until it is due and then takes every transaction pending by then,
        and the other calls made meanwhile share it.  Candidates that turn
        out invalid on the head state are removed from the pool.

        @param empty: store the block even when it includes none of the
            candidates; C{False} (automining) stores nothing then: a block
            that arrived meanwhile already brought them.
        @return: a Deferred firing with the new block (L{None} when an
            empty one was not wanted), or failing with
            L{SealNotFoundError} when the difficulty is beyond the built-in solver.
        """
        wait = self.block_clock.wait_before(self._writer.head.header.timestamp)
        if wait > 0 or self._due_call is not None:
            return self._mine_when_due(wait, empty)
        return self._produce(self._request(empty)).addErrback(self._not_due, empty)

    def _request(self, empty: bool) -> TransactionsBlock:
        """
        The request of a block of the pool's pending transactions now.
        """
        return TransactionsBlock(
            self.coinbase,
            self.block_clock.time(),
            tuple(order_candidates(self.pool.pending())),
            self._extra_data,
            self._uncle_candidates(),
            empty,
        )

    def _uncle_candidates(self) -> tuple[Header, ...]:
        """
        The side blocks a new block may name.
        """
        return () if self._side_blocks is None else self._side_blocks.candidates()

    def _mine_when_due(self, wait: float, empty: bool) -> Deferred[Block | None]:
        """
        Mine once the next block can be stamped within the drift limit; the
        calls made until then share that block.
        """
        waiter: Deferred[Block | None] = Deferred()
        self._due_waiters.append(waiter)
        self._due_empty = self._due_empty or empty
        if self._due_call is None:
            self.log.info(
                "the head is {limit} s ahead of the clock: the next block waits {wait:.1f} s",
                limit=self.block_clock.limit, wait=wait,
            )
            self._due_call = self._clock.callLater(wait, self._due)
        return waiter

    def _due(self) -> None:
        """
        The next block is due: mine it for every call that waited.
        """
        self._due_call = None
        waiters, self._due_waiters = self._due_waiters, []
        empty, self._due_empty = self._due_empty, False

        def deliver(result: object) -> None:
            for waiter in waiters:
                if isinstance(result, Failure):
                    waiter.errback(result)
                else:
                    waiter.callback(result)

        self.mine(empty).addBoth(deliver)

    def _not_due(self, failure: Failure, empty: bool) -> Deferred[Block | None]:
        """
        Another block took the tip meanwhile and the next is not due yet: wait.
        """
        failure.trap(NotDueError)
        return self._mine_when_due(max(0.0, failure.value.due - self._clock.seconds()), empty)

    def mine_alone(self, transaction: Transaction, admission: LoneAdmission) -> Deferred[tuple[int, int] | None]:
        """
        Admit C{transaction} with the pool's rules for a sender with nothing
        pooled and mine it in a block of its own, in one writer job: the
        path of a transaction sent to an idle pool in C{auto} mode.

        @return: a Deferred firing with L{None} once the block holding it
            is stored, or with its sender's nonce and balance when it is not
            executable yet (its nonce is ahead: the pool queues it), or
            failing with L{TransactionRejectedError} (an admission rule).
        """
        request = TransactionsBlock(
            self.coinbase, self.block_clock.time(), (transaction,), self._extra_data, self._uncle_candidates(),
            admit=admission,
        )

        def not_due(failure: Failure) -> Deferred[tuple[int, int] | None]:
            # Another block took the tip since the automining checked the
            # time: try again once the next block is due.
            failure.trap(NotDueError)
            wait = max(0.0, failure.value.due - self._clock.seconds())
            return deferLater(self._clock, wait, self.mine_alone, transaction, admission)

        # not_due() goes in _produce's own pair of callbacks: each callback
        # added to the fired Deferred of a block made at once runs the
        # callback loop again (~1.5 us an automined send).
        return self._produce(request, small=transaction.gas <= SMALL_BLOCK_GAS, lone=True, not_due=not_due)

    @property
    def due_now(self) -> bool:
        """
        Whether a block can be stamped on the head now (within the drift limit).
        """
        return self.block_clock.wait_before(self._writer.head.header.timestamp) <= 0

    def _produce(
        self,
        request: TransactionsBlock,
        small: bool = False,
        lone: bool = False,
        not_due: Callable[[Failure], Any] | None = None,
    ) -> Deferred:
        """
        Have the writer build, seal and store the requested block.

        A seal at most L{CHEAP_SEAL_DIFFICULTY} is searched in the job that
        builds the block; a dearer one on the miner's seal thread, one
        block at a time (L{_produce_sealed}).

        @param small: the block is small enough to be built at once on the
            reactor thread when the writer is idle (L{SMALL_BLOCK_GAS}),
            which only a cheap seal allows.
        @param lone: the request admits one transaction: a Deferred firing
            with L{None} once its block is stored, or with the sender's
            account (a tuple) when none was mined.
        @param not_due: with C{lone}, what a failure of the block becomes
            (after L{_no_seal}): L{mine_alone}'s wait for the drift limit.
        @return: a Deferred firing with the block stored, L{None} when the
            request made none (for C{lone}, see above).
        """
        if self._writer.head.header.difficulty > CHEAP_SEAL_DIFFICULTY:
            sealed = self._sealing.run(lambda: Deferred.fromCoroutine(self._produce_sealed(request, lone)))
            return sealed if not_due is None else sealed.addErrback(not_due)

        def made(step: Any) -> Any:
            if step.block is None:
                return step.built.account if lone and step.built is not None else None
            self.block_clock.consume()
            block = self._mined(step.block, step.built.skipped)
            return None if lone else block

        def failed(failure: Failure) -> Any:
            assert not_due is not None
            return not_due(self._no_seal(failure))

        # One pair (made() raises no SealSearchError for _no_seal to turn).
        # A lone transaction's block is made for the answer to its sender:
        # its observers may be told after that answer (IChainWriter.make).
        making = self._writer.make(request, small=small, after_answer=lone)
        if making.called and type(making.result) is Imported:
            # Made at once (a small block on an idle writer): the step is
            # read as ChainService.make reads its job's, one run of the
            # Deferred's callback loop fewer (~5 thousand instructions an
            # automined send); an error of made() fails the result, as in
            # the callback (whose errback of the pair would not see it).
            # Deferred.result is Twisted's attribute, read and never written.
            try:
                return succeed(made(making.result))
            except Exception:
                return fail()
        return making.addCallbacks(made, self._no_seal if not_due is None else failed)

    async def _produce_sealed(self, request: TransactionsBlock, lone: bool) -> Any:
        """
        Build on the writer, search the seal on the seal thread, store the
        sealed block through the importer; build again when the head moved
        during the search.
        """
        while True:
            built, state = await self._writer.build(request)
            if not isinstance(built, BuiltBlock):
                return built.account if lone else None
            try:
                seal = await self._search_seal(built.block.header)
            except _TipMoved:
                continue
            block = seal_block(built.block, seal)
            outcome = await self._writer.store_built(block, built.outcome, state)
            if outcome.result is ImportResult.INVALID_BLOCK:
                raise InvalidBlockError(f"the miner's block {block.number} 0x{block.hash.hex()} was refused")
            if outcome.result is not ImportResult.IMPORTED_BEST:
                self.log.info(
                    "mined block {number} 0x{hash} lost to another block at its height",
                    number=block.number,
                    hash=block.hash.hex(),
                )
            self.block_clock.consume()
            mined = self._mined(block, built.skipped)
            return None if lone else mined

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
            if self._writer.head.header.hash != header.parent_hash:
                raise _TipMoved()
            nonces = range(start, min(start + SEAL_BATCH_NONCES, self._max_nonces))
            seal = await self._run_seal_search(solve, header.hash_for_merged_mining, header.difficulty, nonces)
            if seal is not None:
                return seal
            start = nonces.stop
        raise SealNotFoundError(
            f"no seal for block {header.number} at difficulty {header.difficulty}"
            f" in {self._max_nonces} nonces: this network needs a merged miner"
        )

    @staticmethod
    def _no_seal(failure: Failure) -> Failure:
        """
        The importer's solver found no seal: the miner's error for it.
        """
        if failure.check(SealSearchError):
            raise SealNotFoundError(failure.getErrorMessage())
        return failure

    def _mined(self, block: Block, skipped: Sequence[SkippedTransaction]) -> Block:
        """
        After a block is stored: drop the transactions the builder found
        invalid from the pool, and log the block.
        """
        invalid = [entry for entry in skipped if entry.invalid]
        for entry in invalid:
            self.log.info(
                "dropping transaction 0x{hash}: {reason}",
                hash=entry.transaction.hash.hex(),
                reason=entry.reason,
            )
        if invalid:
            self.pool.remove([entry.transaction.hash for entry in invalid])
        self.blocks_mined += 1
        self._log_mined(block)
        return block

    def _log_mined(self, block: Block) -> None:
        """
        Log a mined block, unless the last such line is less than
        L{MINED_LOG_INTERVAL} old: then only count it for the next line.
        """
        unlogged = self._mined_lines.due(self._clock.seconds())
        if unlogged is None:
            return
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
