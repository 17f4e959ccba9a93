"""
The threads of the chain (DESIGN §4): one writer thread for block import,
mining and rewinds, so that there is one writer at a time in arrival order,
and a small pool of reader threads for reads and EVM calls against an
immutable state root.  The reactor thread only routes, with one exception:
a writer job known to be small (L{SerialThread.run_small}: the block of one
automined transaction of bounded gas) runs at once on the calling thread
when the writer is idle, since handing it to the writer thread and back
cost more than the job (docs/chain-service.md, "Small writes").

Services take the two I{run} functions rather than the pools, so that unit
tests pass L{twisted.internet.defer.maybeDeferred} and run synchronously.

Every worker thread of the node (L{WorkerThread}) runs at a lower
scheduling priority than the reactor thread, so that the reactor, waking
for a request, gets the core at once rather than after the worker's time
slice (L{lower_worker_priority}).
"""

import os
import sys
import threading
import time
from collections.abc import Callable
from queue import SimpleQueue
from typing import Any, TypeVar

from twisted.internet.defer import Deferred, maybeDeferred
from twisted.internet.threads import deferToThreadPool
from twisted.python.failure import Failure
from twisted.python.threadpool import ThreadPool

T = TypeVar("T")

RunInThread = Callable[..., "Deferred[Any]"]
"""Calls C{function(*args, **kwargs)} somewhere and returns a Deferred of its result."""


WORKER_NICENESS = 10
"""
How much nicer than the process's main (reactor) thread a worker thread
runs.  On one core shared by the reactor and a busy worker (a long
C{eth_call}, a seal search), Linux's scheduler let the reactor, woken by a
request, wait for the worker's time slice to end: C{eth_blockNumber}'s 99th
percentile was 5.0-6.1 ms, and 0.8-1.3 ms with the workers at niceness 10
(C{benchmarks/RESULTS.md}, "Session 5").  With autogroup scheduling (the
default of Linux desktops and servers) niceness only weighs a process's
threads against each other, so the node as a whole gets no less of the
machine; without it, busy workers also yield more to other processes.
"""


_worker_niceness = WORKER_NICENESS


def set_worker_niceness(niceness: int) -> None:
    """
    Choose how much nicer than the main thread the worker threads started
    from now on run (C{worker_niceness}, set by the node when it starts,
    before its threads): 0 keeps them at the reactor's priority.

    @raise ValueError: not from 0 to 19.
    """
    global _worker_niceness
    if not 0 <= niceness <= 19:
        raise ValueError(f"worker niceness must be from 0 to 19, not {niceness}")
    _worker_niceness = niceness


def chosen_worker_niceness() -> int:
    """
    The niceness L{set_worker_niceness} chose (L{WORKER_NICENESS} unless told).
    """
    return _worker_niceness


def lower_worker_priority() -> None:
    """
    Make the calling thread the chosen niceness (L{WORKER_NICENESS} unless
    L{set_worker_niceness} said otherwise) nicer than the process's main
    thread (at most 19), on Linux, where each thread has its own niceness;
    elsewhere, or where the system refuses, the thread keeps its priority
    (the node then answers as before, only with a longer tail).
    """
    if not sys.platform.startswith("linux") or not _worker_niceness:
        return
    try:
        wanted = min(os.getpriority(os.PRIO_PROCESS, os.getpid()) + _worker_niceness, 19)
        thread_id = threading.get_native_id()
        if os.getpriority(os.PRIO_PROCESS, thread_id) < wanted:
            os.setpriority(os.PRIO_PROCESS, thread_id, wanted)
    except OSError:
        return


class WorkerThread(threading.Thread):
    """
    A thread of the node's heavy work: it lowers its own priority
    (L{lower_worker_priority}) before it runs its target.  The writer, the
    reader pools, the seal and CPU-miner threads and the pool's store thread
    are such threads; the reactor thread is the process's main thread.
    """

    def run(self) -> None:
        """
        Lower this thread's priority, then run the target.
        """
        lower_worker_priority()
        super().run()


def worker_pool(minimum: int, maximum: int, name: str) -> ThreadPool:
    """
    A L{ThreadPool} whose threads are L{WorkerThread}s.

    @param minimum: the fewest threads kept.
    @param maximum: the most threads.
    @param name: the prefix of the threads' names.
    """
    pool = ThreadPool(minimum, maximum, name=name)
    pool.threadFactory = WorkerThread  # type: ignore[misc]
    return pool


def yield_interpreter() -> None:
    """
    Hand the interpreter lock to a thread waiting for it (the reactor's)
    now, rather than when the switch interval forces it: C{sleep(0)}
    releases the lock and takes it back.  The writer calls it after each
    empty block of a run it imports (a fraction of a millisecond each), so
    that the reactor, which needs the lock several times per request, gets
    it between two of them.  During a sync of 10,000 empty blocks it took
    the 99th percentile of C{eth_blockNumber} from 3.9-4.2 ms to 1.2-2.7 ms
    (with the 0.2 ms switch interval and the workers' lower priority;
    C{benchmarks/RESULTS.md}, "Session 5: P2P follow-ups").  After blocks
    with transactions it is not called: there it cost the sync of
    10-transfer blocks a tenth of its rate or more (214-297 against
    319-331 blocks/s) for no better tail.
    """
    time.sleep(0)


class SerialThread:
    """
    One thread that runs the functions given to it one after another, in
    arrival order, delivering each result on the reactor thread.

    It does the one job of a C{ThreadPool(1, 1)} with one queue and no
    coordinator, which saves some tens of microseconds per job: the writer
    runs a job for every automined transaction.
    """

    def __init__(self, reactor: Any, name: str) -> None:
        """
        @param reactor: delivers the results (C{callFromThread}).
        @param name: the thread's name.
        """
        self._reactor = reactor
        self._name = name
        self._queue: SimpleQueue[tuple[Deferred[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]] | None]
        self._queue = SimpleQueue()
        self._thread: threading.Thread | None = None
        self._outstanding = 0

    def start(self) -> None:
        """
        Start the thread; jobs queued before run now.
        """
        if self._thread is None:
            self._thread = WorkerThread(target=self._work, name=self._name, daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """
        Let the queued jobs run, then end the thread and wait for it.
        """
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None

    def run(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> "Deferred[T]":
        """
        Queue C{function(*args, **kwargs)}.

        @return: a Deferred that fires on the reactor thread with its result
            or its exception.
        """
        deferred: Deferred[T] = Deferred()
        self._outstanding += 1
        self._queue.put((deferred, function, args, kwargs))
        return deferred

    def run_small(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> "Deferred[T]":
        """
        Run a job the caller knows to be small (a few milliseconds at most):
        at once on the calling thread when the thread runs and no job is
        queued or running, else queued like any other (L{run}).

        Call it from the reactor thread, like L{run}: jobs are counted there
        until their results are delivered, so an idle writer cannot be
        running a job, and jobs still run one at a time in arrival order.

        @return: a Deferred with the job's result or exception (already
            fired when the job ran at once).
        """
        if self._outstanding or self._thread is None:
            return self.run(function, *args, **kwargs)
        return maybeDeferred(function, *args, **kwargs)

    @property
    def idle(self) -> bool:
        """
        Whether a small job would run at once (L{run_small}): the thread
        runs and no job is queued, running or undelivered.  A caller on the
        reactor thread that finds it idle may run a small job itself, at
        once, as L{run_small} would, without its Deferred.
        """
        return not self._outstanding and self._thread is not None

    def yield_interpreter(self) -> None:
        """
        From a job: hand the interpreter lock to the reactor thread now
        (L{yield_interpreter}, the module's function).
        """
        yield_interpreter()

    def _deliver(self, deferred: Deferred[Any], result: Any) -> None:
        """
        Fire a job's Deferred on the reactor thread; the job is done.
        """
        self._outstanding -= 1
        if isinstance(result, Failure):
            deferred.errback(result)
        else:
            deferred.callback(result)

    def _work(self) -> None:
        """
        The thread: run each job and hand its outcome to the reactor.
        """
        while True:
            job = self._queue.get()
            if job is None:
                return
            deferred, function, args, kwargs = job
            try:
                result = function(*args, **kwargs)
            except BaseException:
                result = Failure()
            self._reactor.callFromThread(self._deliver, deferred, result)


class ChainThreads:
    """
    The writer thread and the reader pool of the chain service.

    @ivar writer: the one thread that runs every write.
    @ivar readers: the pool that runs reads and calls.
    """

    def __init__(
        self,
        reactor: Any,
        readers: int = 4,
        name: str = "chain",
        writer: SerialThread | None = None,
        reader_pool: ThreadPool | None = None,
    ) -> None:
        """
        @param reactor: the reactor that results are delivered on.
        @param readers: the most reader threads.
        @param name: the prefix of the thread names.
        @param writer: the writer thread (by default a L{SerialThread}).
        @param reader_pool: the reader pool (by default a L{worker_pool} of
            C{readers} threads); the network simulator gives both, so that
            the chain's jobs run on its simulated time.
        """
        if readers < 1:
            raise ValueError(f"the reader pool needs at least one thread, not {readers}")
        self._reactor = reactor
        self.writer = writer if writer is not None else SerialThread(reactor, f"{name}-writer")
        self.readers = reader_pool if reader_pool is not None else worker_pool(1, readers, f"{name}-reader")

    def start(self) -> None:
        """
        Start both pools.
        """
        self.writer.start()
        self.readers.start()

    def stop(self) -> None:
        """
        Stop both pools, after the work already queued on them has run.
        """
        self.writer.stop()
        self.readers.stop()

    def yield_interpreter(self) -> None:
        """
        From a writer job: hand the interpreter lock over, the writer's way
        (L{SerialThread.yield_interpreter}; a simulated writer's does nothing).
        """
        self.writer.yield_interpreter()

    def run_writer(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> "Deferred[T]":
        """
        Run C{function} on the writer thread, after every write queued before it.
        """
        return self.writer.run(function, *args, **kwargs)

    def run_writer_small(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> "Deferred[T]":
        """
        Run a small writer job, at once when the writer is idle (L{SerialThread.run_small}).
        """
        return self.writer.run_small(function, *args, **kwargs)

    def run_reader(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> "Deferred[T]":
        """
        Run C{function} on a reader thread.
        """
        return deferToThreadPool(self._reactor, self.readers, function, *args, **kwargs)


__all__ = [
    "WORKER_NICENESS",
    "ChainThreads",
    "RunInThread",
    "SerialThread",
    "WorkerThread",
    "chosen_worker_niceness",
    "lower_worker_priority",
    "set_worker_niceness",
    "worker_pool",
    "yield_interpreter",
]
