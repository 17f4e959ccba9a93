"""
Work on the reactor thread in slices: long deliveries without long holds.

A block's changes reach thousands of installed filters and subscriptions
on the reactor thread (they must: a client's poll and a WebSocket write
happen there).  Done in one go, a block of many logs held every answer of
the node for as long as that took.  A L{SliceRunner} runs such work as
generators, in the order they were given, each step up to the next
C{yield}: after each step it reads the clock, and once L{SLICE_SECONDS}
have passed it lets the reactor run (C{callLater(0)}) and goes on at the
next turn.  Work that fits in one slice, as a dev chain's blocks do, is
done at once, before the observer that gave it returns.
"""

from collections import deque
from collections.abc import Iterator

from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.logger import Logger

SLICE_SECONDS = 0.003
"""
How long one slice of work may hold the reactor thread (plus one step).  A
turn of the reactor also writes what the slice gave the WebSocket
connections; with 3 ms slices a turn took at most about 7 ms of the
reactor thread's CPU time in C{benchmarks/hostile_clients.py}, with 5 ms
about 10.
"""

_log = Logger()


class SliceRunner:
    """
    Runs generators one after another, in order, in slices of at most
    L{SLICE_SECONDS} of the reactor thread (see the module's docstring).
    """

    def __init__(self, clock: IReactorTime, slice_seconds: float = SLICE_SECONDS) -> None:
        """
        @param clock: reads the time and schedules the next slice.
        @param slice_seconds: the length of a slice.
        """
        self._clock = clock
        self._slice = slice_seconds
        self._queue: deque[Iterator[object]] = deque()
        self._next: IDelayedCall | None = None
        self._running = False

    @property
    def pending(self) -> int:
        """
        How many pieces of work are not finished.
        """
        return len(self._queue)

    def run(self, work: Iterator[object]) -> None:
        """
        Do C{work} after the work given before it: at once if nothing
        waits, for as long as the slice lasts.
        """
        self._queue.append(work)
        if not self._running and self._next is None:
            self._drain()

    def stop(self) -> None:
        """
        Forget the waiting work (the service stops).
        """
        self._queue.clear()
        if self._next is not None and self._next.active():
            self._next.cancel()
        self._next = None

    def _drain(self) -> None:
        """
        Run the waiting work until it is done or the slice is over.
        """
        self._next = None
        self._running = True
        clock = self._clock
        deadline = clock.seconds() + self._slice
        queue = self._queue
        try:
            while queue:
                work = queue[0]
                try:
                    for _ in work:
                        if clock.seconds() >= deadline:
                            self._next = clock.callLater(0, self._drain)
                            return
                except Exception:
                    _log.failure("delivering a chain change failed")
                if queue and queue[0] is work:
                    queue.popleft()
                if queue and clock.seconds() >= deadline:
                    self._next = clock.callLater(0, self._drain)
                    return
        finally:
            self._running = False


__all__ = ["SLICE_SECONDS", "SliceRunner"]
