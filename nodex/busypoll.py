"""
Busy polling: after a turn of the reactor that woke for input, look for
the next input without sleeping for a short window before the reactor
blocks again.

Why: a test suite talks to a development node in lockstep: each request
waits for the previous answer, and the client's turn between the two is
some 100–700 µs.  The node's reactor blocks in C{epoll_wait} meanwhile,
and its CPU goes idle.  On a virtual machine (where CI runs, and where
this project's figures are measured) an idle CPU halts and leaves the
guest; waking it costs a wake-up latency and, worse, the caches and
branch predictors the interpreter had warmed: the same automined
transfer took up to 60 % more CPU time sent in lockstep than pipelined, for
1.5 % more instructions (C{benchmarks/RESULTS.md}, "Session 16").
Polling for the window instead keeps the CPU busy across the client's
turn, so that the next request is read at once, on a warm core.

The cost is bounded: the node polls only after a turn that woke for
input (a turn that ended on its timeout, such as a timer's, is followed
by an ordinary blocking wait), and at most for the window each time, so
an idle node does not poll at all, and a busy one spends at most
C{window} of CPU per input it handles.  It is off unless C{rpc.busy_poll}
asks for it (C{docs/rpc.md}, "Busy polling", has the measured trade-off:
lockstep clients gain, pipelined ones lost as much on this machine).

Only the epoll and poll reactors can be polled (their C{_poller}, a
private attribute: L{BusyPoll.supports} looks for it, and
C{tests.test_busypoll} breaks if Twisted renames it); on any other
reactor (select, a test's fake) nothing changes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from twisted.application.service import Service


class BusyPoll:
    """
    A reactor's C{doIteration} that polls without blocking for up to
    C{window} seconds after a turn that woke for input.

    @ivar polls: how many windows began (for tests and the manhole).
    @ivar caught: how many of them found input before they ended.
    """

    def __init__(self, reactor: Any, window: float, clock: Callable[[], float] = time.perf_counter) -> None:
        """
        @param reactor: an epoll or poll reactor (L{supports}).
        @param window: seconds to poll for, greater than 0.
        @param clock: a monotonic clock in seconds.
        """
        if window <= 0:
            raise ValueError(f"the busy-poll window must be positive, not {window!r}")
        self._iterate: Callable[[float | None], None] = reactor.doIteration
        # Private to Twisted's epoll and poll reactors: the select.epoll or
        # select.poll object they wait on.  Both take poll(timeout) and
        # return a list of (fd, events): epoll's timeout is in seconds,
        # poll's in milliseconds, and 0 means "do not wait" in both.
        self._ready: Callable[[int], list[Any]] = reactor._poller.poll
        self._window = window
        self._clock = clock
        self._woke_for_input = False
        self.polls = 0
        self.caught = 0

    @staticmethod
    def supports(reactor: Any) -> bool:
        """
        Whether C{reactor} can be busy-polled: it waits on a C{poll}
        object of its own (Twisted's epoll and poll reactors).
        """
        poller = getattr(reactor, "_poller", None)
        return callable(getattr(poller, "poll", None)) and callable(getattr(reactor, "doIteration", None))

    @classmethod
    def install(cls, reactor: Any, window: float) -> "BusyPoll | None":
        """
        Make C{reactor} busy-poll for C{window} seconds after each turn that
        woke for input, if it can (L{supports}) and C{window} is positive.

        @return: the installed poller, or L{None} when nothing changed.
        """
        if window <= 0 or not cls.supports(reactor) or isinstance(getattr(reactor.doIteration, "__self__", None), cls):
            return None
        poller = cls(reactor, window)
        reactor.doIteration = poller.doIteration
        return poller

    def uninstall(self, reactor: Any) -> None:
        """
        Give C{reactor} back the C{doIteration} it had before L{install}.
        """
        if vars(reactor).get("doIteration") != self.doIteration:
            return
        original = self._iterate
        if getattr(original, "__self__", None) is reactor and getattr(original, "__func__", None) is getattr(
            type(reactor), "doIteration", None
        ):
            del reactor.doIteration
        else:
            reactor.doIteration = original

    def doIteration(self, timeout: float | None) -> None:
        """
        One turn of the reactor: after a turn that woke for input, poll for
        up to the window before waiting as the reactor would (C{timeout}:
        seconds, or L{None} for no limit).
        """
        if self._woke_for_input and (timeout is None or timeout > 0):
            self.polls += 1
            clock = self._clock
            ready = self._ready
            began = clock()
            deadline = began + self._window
            while True:
                if ready(0):
                    self.caught += 1
                    timeout = 0
                    break
                now = clock()
                if now >= deadline:
                    # This input's window is spent: the next comes from the wait.
                    self._woke_for_input = False
                    if timeout is not None:
                        timeout = max(timeout - (now - began), 0.0)
                    break
        if timeout == 0:
            # A turn that does not wait says nothing of what woke the reactor.
            self._iterate(timeout)
            return
        started = self._clock()
        self._iterate(timeout)
        # A wait that ended before its timeout ended for input (or a
        # signal, which costs one window at most).
        self._woke_for_input = timeout is None or self._clock() - started < timeout


class BusyPollService(Service):
    """
    Busy-poll the reactor while the node runs (L{BusyPoll.install} when it
    starts, undone when it stops); nothing when the window is 0, the
    reactor cannot be polled, or another node of this process already
    polls it.

    @ivar poller: the installed poller while running, else L{None}.
    """

    def __init__(self, reactor: Any, window: float) -> None:
        """
        @param window: seconds; 0 turns busy polling off.
        """
        self._reactor = reactor
        self._window = window
        self.poller: BusyPoll | None = None

    def startService(self) -> None:
        super().startService()
        self.poller = BusyPoll.install(self._reactor, self._window)

    def stopService(self) -> None:
        super().stopService()
        if self.poller is not None:
            self.poller.uninstall(self._reactor)
            self.poller = None
