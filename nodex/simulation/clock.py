"""
Simulated time: one queue of timed calls for the whole simulated network,
and each node's view of it (its reactor's clock, skewed by the node's own
clock error, and dead once the node crashed).

Nothing here reads the wall clock.  Calls due at the same simulated time
run in the order they were scheduled, so a run is a pure function of its
inputs (C{docs/simulation.md}, "Determinism").
"""

#: A call due this many seconds or more after it is scheduled waits in the
#: far heap (timeouts, keep-alives, redials), nearer ones in the near heap
#: (segments in flight, short waits): C{docs/simulation.md}, "Cost".
FAR = 1.0

from collections import deque
from collections.abc import Callable
from heapq import heappop, heappush
from typing import Any

from twisted.internet.error import AlreadyCalled, AlreadyCancelled
from twisted.internet.interfaces import IDelayedCall, IReactorFromThreads, IReactorTime
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

log = Logger()


@implementer(IDelayedCall)
class SimulatedCall:
    """
    A call scheduled on a L{NodeClock}: Twisted's L{IDelayedCall} (the
    services cancel, reset and delay their timers).

    @ivar time: when it runs, in the node's (skewed) time.
    """

    __slots__ = ("time", "func", "args", "kw", "clock", "generation", "sequence", "cancelled", "called")

    def __init__(self, time: float, func: Callable[..., Any], args: tuple[Any, ...], kw: dict[str, Any],
                 clock: "NodeClock") -> None:
        self.time = time
        self.func = func
        self.args = args
        self.kw = kw
        self.clock = clock
        self.generation = clock.generation
        self.sequence = 0
        self.cancelled = False
        self.called = False

    def getTime(self) -> float:
        """
        When the call runs, in its node's time.
        """
        return self.time

    def cancel(self) -> None:
        """
        Do not run it.

        @raise AlreadyCancelled: it was cancelled.
        @raise AlreadyCalled: it ran.
        """
        self._check()
        self.cancelled = True

    def delay(self, secondsLater: float) -> None:
        """
        Run it C{secondsLater} later than planned.
        """
        self._check()
        self.time += secondsLater
        self.clock.schedule(self)

    def reset(self, secondsFromNow: float) -> None:
        """
        Run it C{secondsFromNow} from now instead.
        """
        self._check()
        self.time = self.clock.seconds() + secondsFromNow
        self.clock.schedule(self)

    def active(self) -> bool:
        """
        Whether it will still run.
        """
        return not (self.cancelled or self.called) and self.generation == self.clock.generation

    def _check(self) -> None:
        if self.cancelled:
            raise AlreadyCancelled()
        if self.called:
            raise AlreadyCalled()

    def __repr__(self) -> str:
        return f"<SimulatedCall {getattr(self.func, '__qualname__', self.func)} at {self.time:.6f}>"


class SimulatedTime:
    """
    The one queue of timed calls of a simulation, and its current time.

    @ivar now: the true simulated time, in unix seconds.
    @ivar calls_run: how many calls have run.
    @ivar times_queued: how many distinct future times were pushed on
        the heaps (each one push and one pop, whatever the calls at it).
    @ivar errors: how many calls raised (each is logged).
    @ivar current: the clock of the node whose call runs now (L{None}:
        the simulated world's own), for the log.

    The order is the one of C{(time, sequence)}: by time, then by when the
    call was queued.  Calls due now (C{callLater(0)}, C{callFromThread},
    an event at once) wait in a FIFO; a later call waits in the list of
    its exact time (a dictionary by time), in the order queued, and each
    such time is once in one of two heaps of plain floats, near (due
    within L{FAR}) and far.  When the FIFO is empty the earliest time
    comes up: the time moves to it and its whole list joins the FIFO.
    Every call queued for that time before it came is in that list, in
    order, and every call queued since is due now and so appended behind
    it: the FIFO is the order of C{(time, sequence)}.  The heaps compare
    floats only (a pop walks one cache-cold object per level instead of
    a tuple and its items), and a time many calls share is one entry.
    (C{docs/simulation.md}, "Cost".)

    Entries are flat pairs in the FIFO and the lists: C{func, args} for an
    event of the simulated world, C{call, sequence} for a node's
    L{SimulatedCall} (the call runs only if it was not queued again
    since, under a later sequence).
    """

    def __init__(self, start: float) -> None:
        """
        @param start: the simulated time at the start, in unix seconds.
        """
        self.now = float(start)
        self.calls_run = 0
        self.times_queued = 0
        self.errors = 0
        self._due: deque[Any] = deque()
        self._slots: dict[float, list[Any]] = {}
        self._near: list[float] = []
        self._far: list[float] = []
        self._sequence = 0
        self._stopped = False
        self.current: NodeClock | None = None

    def at(self, when: float, func: Callable[..., Any], *args: Any) -> None:
        """
        Run C{func(*args)} at the true time C{when} (at least now): an event
        of the simulated world itself (a segment arriving, a scenario
        event), not of any node.
        """
        self.queue(when, func, args)

    def later(self, delay: float, func: Callable[..., Any], *args: Any) -> None:
        """
        Run C{func(*args)} C{delay} seconds from now (see L{at}).
        """
        self.queue(self.now + delay, func, args)

    def push(self, when: float, call: SimulatedCall) -> None:
        """
        Queue a node's call at the true time C{when}.
        """
        self._sequence += 1
        call.sequence = self._sequence
        self.queue(when, call, self._sequence)

    def queue(self, when: float, first: Any, second: Any) -> None:
        """
        L{at} with the arguments as a tuple (C{first} the function,
        C{second} its arguments), for the callers on the hot path (a
        segment in flight: no packing, one frame less); L{push} queues a
        node's call as C{call, sequence}.
        """
        now = self.now
        if when <= now:
            due = self._due
            due.append(first)
            due.append(second)
            return
        slot = self._slots.get(when)
        if slot is not None:
            slot.append(first)
            slot.append(second)
            return
        self._slots[when] = [first, second]
        self.times_queued += 1
        heappush(self._near if when - now < FAR else self._far, when)

    def stop(self) -> None:
        """
        End L{run} after the call that runs now.
        """
        self._stopped = True

    @property
    def pending(self) -> int:
        """
        Entries in the queue (cancelled and dead calls included until they come up).
        """
        return (len(self._due) + sum(map(len, self._slots.values()))) // 2

    def entries(self) -> list[tuple[float, int | None, Any]]:
        """
        Every queued entry, in no order: C{(time, sequence, call)} for a
        node's call, C{(time, None, (func, args))} for a world's event.
        """
        found: list[tuple[float, int | None, Any]] = []
        for when, flat in [(self.now, list(self._due)), *self._slots.items()]:
            for index in range(0, len(flat), 2):
                first, second = flat[index], flat[index + 1]
                if type(second) is int:
                    found.append((when, second, first))
                else:
                    found.append((when, None, (first, second)))
        return found

    def run(self, until: float | None = None) -> None:
        """
        Run the calls in time order until the queue is empty, L{stop} is
        called, or the next call is later than C{until} (then the time
        moves to C{until}).
        """
        due = self._due
        near = self._near
        far = self._far
        slots = self._slots
        popleft = due.popleft
        self._stopped = False
        while not self._stopped:
            if not due:
                # The earliest time comes up: its calls, in order, are due now.
                if near:
                    when = near[0]
                    if far and far[0] < when:
                        when = heappop(far) if until is None or far[0] <= until else None
                    elif until is None or when <= until:
                        heappop(near)
                    else:
                        when = None
                elif far:
                    when = heappop(far) if until is None or far[0] <= until else None
                else:
                    break
                if when is None:
                    break
                self.now = when
                due.extend(slots.pop(when))
            first = popleft()
            second = popleft()
            if type(second) is not int:
                self.calls_run += 1
                self.current = None
                try:
                    first(*second)
                except Exception:
                    self._failed(first)
                continue
            if first.sequence != second or first.cancelled or first.generation != first.clock.generation:
                continue
            self.calls_run += 1
            self.current = first.clock
            first.called = True
            try:
                first.func(*first.args, **first.kw)
            except Exception:
                self._failed(first.func)
        if until is not None and not self._stopped and self.now < until:
            self.now = until

    def _failed(self, func: Any) -> None:
        self.errors += 1
        log.failure("a simulated call failed: {call}", Failure(), call=getattr(func, "__qualname__", repr(func)))


@implementer(IReactorTime, IReactorFromThreads)
class NodeClock:
    """
    One node's reactor as far as its services see it: its time (the
    simulated time plus the node's clock error), its timed calls, and
    C{callFromThread} (the simulated threads deliver results with it).

    @ivar skew: the node's clock error in seconds (positive: its clock is ahead).
    @ivar generation: bumped when the node crashes: the calls it had
        scheduled never run.
    @ivar label: the node's name in the log.
    """

    def __init__(self, time: SimulatedTime, skew: float = 0.0, label: str = "") -> None:
        """
        @param label: names the node in the log.
        """
        self._time = time
        self.skew = skew
        self.generation = 0
        self.label = label

    @property
    def simulated_time(self) -> SimulatedTime:
        """
        The simulation's time.
        """
        return self._time

    def seconds(self) -> float:
        """
        The node's time: the simulated time plus its clock error.
        """
        return self._time.now + self.skew

    def callLater(self, delay: float, callable: Callable[..., Any], *args: Any, **kw: Any) -> SimulatedCall:
        """
        Run C{callable} C{delay} seconds from now (at once when C{delay} is 0:
        after the calls already due).
        """
        time = self._time
        now = time.now
        call = SimulatedCall(now + self.skew + delay, callable, args, kw, self)
        time.push(now + delay, call)
        return call

    def schedule(self, call: SimulatedCall) -> None:
        """
        Queue C{call} again at its (changed) time.
        """
        self._time.push(call.time - self.skew, call)

    def getDelayedCalls(self) -> list[SimulatedCall]:
        """
        This node's calls still to run.
        """
        calls = [
            entry for _, sequence, entry in self._time.entries()
            if sequence is not None and entry.clock is self and entry.sequence == sequence and entry.active()
        ]
        return sorted(calls, key=lambda call: (call.time, call.sequence))

    def callFromThread(self, callable: Callable[..., Any], *args: Any, **kw: Any) -> None:
        """
        Run C{callable} on this node's reactor, after what is due now.
        """
        self.callLater(0, callable, *args, **kw)

    def callWhenRunning(self, callable: Callable[..., Any], *args: Any, **kw: Any) -> None:
        """
        The simulated reactor always runs: call at once.
        """
        callable(*args, **kw)

    def kill(self) -> None:
        """
        The node crashed: none of the calls it scheduled will run.
        """
        self.generation += 1


__all__ = ["NodeClock", "SimulatedCall", "SimulatedTime"]
