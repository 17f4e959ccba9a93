"""
The node's worker threads, on simulated time.

A simulated node runs the services a node runs, whose heavy work goes to a
writer thread, reader pools and a few single threads.  Real threads would
make a run depend on the operating system's scheduling; these stand-ins
keep the threads' contracts (jobs run off the caller's turn, a serial
thread runs one job at a time in arrival order, results arrive on the
reactor later, C{run_small} runs at once only when the writer is idle)
while running every job on the simulation's one thread, at a simulated
time.

A serial thread's job takes C{job_seconds} of simulated time (the model of
a block import's cost, C{docs/simulation.md}); the jobs queued behind it
wait.  Reader pools' jobs take no time.
"""

from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

from twisted.internet.defer import Deferred, maybeDeferred
from twisted.python.failure import Failure

from nodex.simulation.clock import NodeClock

T = TypeVar("T")


class SimulatedSerialThread:
    """
    L{nodex.services.threads.SerialThread}'s contract on simulated time.
    """

    def __init__(self, clock: NodeClock, name: str, job_seconds: float = 0.0) -> None:
        """
        @param clock: the node's reactor, which delivers the results.
        @param name: the thread's name.
        @param job_seconds: the simulated time each job takes.
        """
        self._clock = clock
        self.name = name
        self._job_seconds = job_seconds
        self._queue: deque[tuple[Deferred[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = deque()
        self._started = False
        self._busy = False
        self._outstanding = 0
        self.jobs_run = 0

    def start(self) -> None:
        """
        Start running jobs (those queued before run now).
        """
        if not self._started:
            self._started = True
            self._wake()

    def stop(self) -> None:
        """
        Run the jobs still queued (a thread's stop lets them run and waits
        for it), then run no more until started again.
        """
        if not self._started:
            return
        self._started = False
        while self._queue:
            self._run_one()

    def run(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> "Deferred[T]":
        """
        Queue C{function(*args, **kwargs)}.

        @return: a Deferred that fires on a later turn with its result or exception.
        """
        deferred: Deferred[T] = Deferred()
        self._outstanding += 1
        self._queue.append((deferred, function, args, kwargs))
        self._wake()
        return deferred

    def run_small(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> "Deferred[T]":
        """
        At once when the thread runs and no job is queued, running or
        undelivered; otherwise queued (L{run}).
        """
        if self._outstanding or not self._started:
            return self.run(function, *args, **kwargs)
        return maybeDeferred(function, *args, **kwargs)

    def yield_interpreter(self) -> None:
        """
        Nothing: the simulation runs on one thread, so there is no reactor
        thread waiting for the interpreter lock (the real writer's
        C{time.sleep(0)} after each empty block of a run cost a system call
        per node per empty block: C{docs/simulation.md}, "Cost").
        """

    def _wake(self) -> None:
        if self._started and not self._busy and self._queue:
            self._busy = True
            self._clock.callLater(0, self._next)

    def _next(self) -> None:
        self._busy = False
        if self._started and self._queue:
            self._run_one()
            if self._queue:
                self._busy = True
                self._clock.callLater(self._job_seconds, self._next)

    def _run_one(self) -> None:
        deferred, function, args, kwargs = self._queue.popleft()
        self.jobs_run += 1
        try:
            result = function(*args, **kwargs)
        except BaseException:
            result = Failure()
        self._clock.callLater(self._job_seconds, self._deliver, deferred, result)

    def _deliver(self, deferred: Deferred[Any], result: Any) -> None:
        self._outstanding -= 1
        if isinstance(result, Failure):
            deferred.errback(result)
        else:
            deferred.callback(result)


class SimulatedThreadPool:
    """
    The part of Twisted's C{ThreadPool} that C{deferToThreadPool} and the
    services use: each job runs when it is given, its result reaches the
    reactor on a later turn (through the caller's C{callFromThread}).
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.started = False
        self.jobs_run = 0

    def start(self) -> None:
        """
        Accept jobs.
        """
        self.started = True

    def stop(self) -> None:
        """
        Nothing waits: every job ran when it was given.
        """
        self.started = False

    def callInThreadWithCallback(
        self, onResult: Callable[[bool, Any], None] | None, func: Callable[..., Any], *args: Any, **kw: Any
    ) -> None:
        """
        Run C{func} and hand its outcome to C{onResult}.
        """
        self.jobs_run += 1
        try:
            result = func(*args, **kw)
        except BaseException:
            if onResult is not None:
                onResult(False, Failure())
            return
        if onResult is not None:
            onResult(True, result)

    def callInThread(self, func: Callable[..., Any], *args: Any, **kw: Any) -> None:
        """
        Run C{func}, ignoring its outcome.
        """
        self.callInThreadWithCallback(None, func, *args, **kw)


__all__ = ["SimulatedSerialThread", "SimulatedThreadPool"]
