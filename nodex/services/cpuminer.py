"""
The built-in CPU miner (L5) for networks with real difficulty.

It takes work from the L{WorkService} like any external miner, searches the
canonical template's nonces (L{nodex.chain.seal.pow.search}) on a thread of its
own in batches of L{BATCH_NONCES}, and hands a seal it finds back to the
work service, which imports the block.  A batch stops early when the head
moves (the work is stale) or the service stops; between batches the reactor
gets its turn, so a new head is noticed within one batch and shutdown waits
for at most one.  The measured rate (hashes per second, an exponential
average over batches) is what C{eth_hashrate} reports for this node.
"""

import threading
from collections.abc import Callable

from twisted.application.service import Service
from twisted.internet.defer import Deferred, maybeDeferred
from twisted.internet.interfaces import IReactorTime
from twisted.internet.task import deferLater
from twisted.logger import Logger

from nodex.chain.seal.pow import search
from nodex.api.chain import IChainService
from nodex.services.threads import RunInThread
from nodex.services.work import WorkService, random_nonce_start

BATCH_NONCES = 1 << 16
"""Nonces per thread job: about a tenth of a second of hashing in CPython."""

RETRY_SECONDS = 1.0
"""How long the miner waits after a failure (no template could be built) before trying again."""

RATE_WEIGHT = 0.3
"""The weight of the newest batch in the measured rate."""


class CPUMiner(Service):
    """
    Searches seals for the work service's templates until stopped.

    @ivar hashrate: the measured hashes per second (0 while stopped).
    """

    log = Logger()

    def __init__(
        self,
        work: WorkService,
        chain: IChainService,
        clock: IReactorTime,
        run_in_thread: RunInThread | None = None,
        start_thread: Callable[[], None] = lambda: None,
        stop_thread: Callable[[], None] = lambda: None,
        batch: int = BATCH_NONCES,
        nonce_start: Callable[[], int] = random_nonce_start,
        pause: float = 0.0,
    ) -> None:
        """
        @param run_in_thread: runs one batch (the miner's own thread; by
            default at once, for tests).
        @param start_thread: starts that thread (in L{startService}).
        @param stop_thread: waits for it to end (in L{stopService}).
        @param nonce_start: where the search of a new template begins.
        @param pause: seconds between batches (the reactor's turn; tests on a
            L{twisted.internet.task.Clock} use a positive one to step batches).
        """
        self._work = work
        self._chain = chain
        self._clock = clock
        self._run_in_thread = run_in_thread or maybeDeferred
        self._start_thread = start_thread
        self._stop_thread = stop_thread
        self._batch = batch
        self._nonce_start = nonce_start
        self._pause = pause
        self._stop = threading.Event()
        self._rate = 0.0
        self._loop: Deferred[None] | None = None
        self.blocks_found = 0
        work.local_hashrate = lambda: int(self._rate) if self.running else 0
        work.cpu_mining = lambda: bool(self.running)

    @property
    def hashrate(self) -> int:
        """
        The measured hashes per second, 0 while stopped.
        """
        return int(self._rate) if self.running else 0

    def startService(self) -> None:
        """
        Start the thread and the search loop.
        """
        super().startService()
        self._stop.clear()
        self._start_thread()
        self._loop = Deferred.fromCoroutine(self._mine())
        self._loop.addErrback(lambda failure: self.log.failure("the CPU miner stopped", failure))

    def stopService(self) -> None:
        """
        Stop the search: the batch in flight ends at its next check, then the thread.
        """
        super().stopService()
        self._stop.set()
        self._stop_thread()

    async def _mine(self) -> None:
        """
        Take work, search a batch, submit what is found; until stopped.
        """
        cursor: dict[bytes, int] = {}
        while self.running:
            try:
                work = await self._work.work()
            except Exception:
                self.log.failure("the CPU miner got no work")
                await deferLater(self._clock, RETRY_SECONDS, lambda: None)
                continue
            pow_hash = bytes(work.hash_for_merged_mining)
            start = cursor.get(pow_hash)
            if start is None:
                cursor.clear()
                start = self._nonce_start()
            parent = work.parent_hash
            stopped = self._stopped_for(parent)
            began = self._clock.seconds()
            seal, tried = await self._run_in_thread(search, pow_hash, work.difficulty, start, self._batch, stopped)
            self._measure(tried, self._clock.seconds() - began)
            cursor[pow_hash] = (start + tried) % 2**64
            if seal is not None and self.running:
                self.blocks_found += 1
                try:
                    await self._work.submit_template_seal(pow_hash, seal)
                except Exception:
                    self.log.failure("the CPU miner's block was refused")
            # Let the reactor run (a new head, a stop) before the next batch.
            await deferLater(self._clock, self._pause, lambda: None)

    def _stopped_for(self, parent: bytes) -> Callable[[], bool]:
        """
        The early-stop check of a batch on C{parent}'s work (called from the thread).
        """
        stop = self._stop
        chain = self._chain

        def stopped() -> bool:
            return stop.is_set() or chain.head.header.hash != parent

        return stopped

    def _measure(self, tried: int, seconds: float) -> None:
        """
        Fold a batch into the measured rate.
        """
        if seconds <= 0 or tried <= 0:
            return
        rate = tried / seconds
        self._rate = rate if self._rate == 0 else (1 - RATE_WEIGHT) * self._rate + RATE_WEIGHT * rate


__all__ = ["BATCH_NONCES", "CPUMiner", "RETRY_SECONDS"]
