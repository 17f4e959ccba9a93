"""
Tests for L{nodex.busypoll}: the reactor keeps looking for input for a
window after a turn that woke for input, and only then.
"""

from __future__ import annotations

import socket

from twisted.internet.epollreactor import EPollReactor
from twisted.internet.pollreactor import PollReactor
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from nodex.busypoll import BusyPoll, BusyPollService
from nodex.config import ConfigError, load_config


class FakeClock:
    """
    A clock that moves only when told (or by C{step} at each reading).
    """

    def __init__(self, step: float = 0.0) -> None:
        self.now = 100.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


class FakePoller:
    """
    A C{select.epoll} stand-in: C{poll(0)} answers from C{ready}, counted.
    """

    def __init__(self) -> None:
        self.ready: list[list[tuple[int, int]]] = []
        self.calls: list[float] = []

    def poll(self, timeout: float) -> list[tuple[int, int]]:
        self.calls.append(timeout)
        return self.ready.pop(0) if self.ready else []


class FakeReactor:
    """
    A reactor with a C{_poller} and a C{doIteration} that records its
    timeouts and lets the clock pass as a wait would.
    """

    def __init__(self, clock: FakeClock) -> None:
        self._poller = FakePoller()
        self.clock = clock
        self.timeouts: list[float | None] = []
        self.waited: list[float] = []

    def doIteration(self, timeout: float | None) -> None:
        self.timeouts.append(timeout)
        waited = self.waited.pop(0) if self.waited else (timeout or 0.0)
        self.clock.now += waited


class BusyPollTests(SynchronousTestCase):
    """
    L{BusyPoll.doIteration} polls only after a turn that woke for input,
    for at most its window.
    """

    def setUp(self) -> None:
        self.clock = FakeClock()
        self.reactor = FakeReactor(self.clock)
        self.poller = BusyPoll(self.reactor, 0.001, self.clock)
        self.reactor.doIteration = self.poller.doIteration

    def test_first_turn_waits(self) -> None:
        """
        Before any input, a turn is the reactor's own wait.
        """
        self.reactor.doIteration(5.0)
        self.assertEqual(self.reactor.timeouts, [5.0])
        self.assertEqual(self.reactor._poller.calls, [])
        self.assertEqual(self.poller.polls, 0)

    def test_after_input_polls_then_waits_the_rest(self) -> None:
        """
        After a wait that ended early (input), the next turn polls without
        waiting until the window ends, then waits for what is left of its
        timeout.
        """
        self.reactor.waited = [0.5]
        self.reactor.doIteration(5.0)
        # The clock moves 0.1 ms at each reading while polling.
        self.clock.step = 0.0001
        self.reactor.doIteration(2.0)
        self.assertEqual(self.poller.polls, 1)
        self.assertEqual(self.poller.caught, 0)
        calls = self.reactor._poller.calls
        self.assertTrue(8 <= len(calls) <= 11, len(calls))
        self.assertEqual(set(calls), {0})
        last = self.reactor.timeouts[-1]
        self.assertTrue(1.998 < last < 2.0, last)

    def test_input_during_window(self) -> None:
        """
        Input found while polling makes the turn a non-waiting one, and the
        turn after it polls again.
        """
        self.reactor.waited = [0.5]
        self.reactor.doIteration(5.0)
        self.reactor._poller.ready = [[], [], [(7, 1)]]
        self.reactor.doIteration(2.0)
        self.assertEqual(self.reactor.timeouts[-1], 0)
        self.assertEqual((self.poller.polls, self.poller.caught), (1, 1))
        self.reactor._poller.ready = [[(7, 1)]]
        self.reactor.doIteration(2.0)
        self.assertEqual((self.poller.polls, self.poller.caught), (2, 2))

    def test_spent_window_then_timeout(self) -> None:
        """
        A window that found nothing is not followed by another until input
        wakes a wait; a wait that ran to its timeout (a timer) is not
        followed by one either.
        """
        self.reactor.waited = [0.5]
        self.reactor.doIteration(5.0)
        self.clock.step = 0.0001
        self.reactor.waited = [2.0]
        self.reactor.doIteration(2.0)
        self.assertEqual(self.poller.polls, 1)
        self.reactor.doIteration(2.0)
        self.assertEqual(self.poller.polls, 1)

    def test_window_longer_than_timeout(self) -> None:
        """
        A timer due within the window: the poll ends there and the turn
        does not wait; no second window follows.
        """
        self.reactor.waited = [0.5]
        self.reactor.doIteration(5.0)
        self.clock.step = 0.0001
        self.reactor.doIteration(0.0003)
        self.assertEqual(self.reactor.timeouts[-1], 0.0)
        self.reactor.doIteration(1.0)
        self.assertEqual(self.poller.polls, 1)

    def test_no_timeout(self) -> None:
        """
        A wait without a timeout can only end for input: a window follows.
        """
        self.reactor.waited = [3.0]
        self.reactor.doIteration(None)
        self.reactor._poller.ready = [[(3, 1)]]
        self.reactor.doIteration(None)
        self.assertEqual(self.reactor.timeouts, [None, 0])
        self.assertEqual(self.poller.caught, 1)

    def test_zero_timeout_keeps_state(self) -> None:
        """
        A turn that does not wait (calls are due) neither polls nor changes
        whether the next turn does.
        """
        self.reactor.waited = [0.5]
        self.reactor.doIteration(5.0)
        self.reactor.doIteration(0)
        self.assertEqual(self.poller.polls, 0)
        self.reactor._poller.ready = [[(3, 1)]]
        self.reactor.doIteration(1.0)
        self.assertEqual(self.poller.polls, 1)

    def test_window_must_be_positive(self) -> None:
        """
        A window of 0 or less is refused by the constructor; L{install}
        takes it as "off".
        """
        self.assertRaises(ValueError, BusyPoll, FakeReactor(FakeClock()), 0)
        self.assertIsNone(BusyPoll.install(FakeReactor(FakeClock()), 0))


class InstallTests(SynchronousTestCase):
    """
    L{BusyPoll.install}, L{BusyPoll.uninstall} and L{BusyPollService} on
    Twisted's real reactors.
    """

    def test_twisted_pollers(self) -> None:
        """
        Twisted's epoll and poll reactors keep the private C{_poller} this
        module polls (if Twisted renames it, this test breaks and the node
        would silently stop busy-polling); a L{Clock} cannot be polled.
        """
        for reactor_type in (EPollReactor, PollReactor):
            reactor = reactor_type()
            self.addCleanup(reactor._poller.close if hasattr(reactor._poller, "close") else (lambda: None))
            self.assertTrue(BusyPoll.supports(reactor), reactor_type)
            self.assertEqual(reactor._poller.poll(0), [])
        self.assertFalse(BusyPoll.supports(Clock()))
        self.assertIsNone(BusyPoll.install(Clock(), 0.001))

    def test_real_input_is_caught(self) -> None:
        """
        On a real epoll reactor, input that is already waiting is found by
        the window and the turn reads it without waiting.
        """
        reactor = EPollReactor()
        self.addCleanup(reactor._poller.close)
        seen: list[float | None] = []
        original = reactor.doIteration

        def iterate(timeout: float | None) -> None:
            seen.append(timeout)
            original(timeout)

        reactor.doIteration = iterate
        poller = BusyPoll.install(reactor, 0.05)
        assert poller is not None
        left, right = socket.socketpair()
        self.addCleanup(left.close)
        self.addCleanup(right.close)
        reactor._poller.register(left.fileno(), 1)  # EPOLLIN
        poller._woke_for_input = True
        right.send(b"x")
        reactor.doIteration(10.0)
        self.assertEqual((poller.polls, poller.caught), (1, 1))
        self.assertEqual(seen, [0])
        reactor._poller.unregister(left.fileno())

    def test_install_once_and_uninstall(self) -> None:
        """
        A second install on a polled reactor does nothing; uninstalling
        gives back the reactor's own method.
        """
        reactor = EPollReactor()
        self.addCleanup(reactor._poller.close)
        poller = BusyPoll.install(reactor, 0.001)
        assert poller is not None
        self.assertEqual(reactor.doIteration, poller.doIteration)
        self.assertIsNone(BusyPoll.install(reactor, 0.001))
        poller.uninstall(reactor)
        self.assertNotIn("doIteration", vars(reactor))
        self.assertEqual(reactor.doIteration, reactor.doPoll)

    def test_service(self) -> None:
        """
        L{BusyPollService} polls the reactor while it runs; a second one on
        the same reactor (two nodes in a process) leaves it alone; a window
        of 0 does nothing.
        """
        reactor = EPollReactor()
        self.addCleanup(reactor._poller.close)
        first = BusyPollService(reactor, 0.0002)
        second = BusyPollService(reactor, 0.0002)
        off = BusyPollService(reactor, 0)
        first.startService()
        second.startService()
        off.startService()
        self.assertIsNotNone(first.poller)
        self.assertIsNone(second.poller)
        self.assertIsNone(off.poller)
        self.assertEqual(reactor.doIteration, first.poller.doIteration)
        second.stopService()
        off.stopService()
        self.assertEqual(reactor.doIteration, first.poller.doIteration)
        first.stopService()
        self.assertIsNone(first.poller)
        self.assertEqual(reactor.doIteration, reactor.doPoll)


class ConfigTests(SynchronousTestCase):
    """
    C{rpc.busy_poll}: microseconds, 0 to 10,000; 0 (off) on every network.
    """

    def test_presets(self) -> None:
        for network, window in (("regtest", 0), ("devnet", 0), ("testnet", 0), ("main", 0)):
            self.assertEqual(load_config(None, {"network": network}).rpc.busy_poll, window, network)

    def test_bounds(self) -> None:
        self.assertEqual(load_config(None, {"rpc": {"busy_poll": 10_000}}).rpc.busy_poll, 10_000)
        self.assertEqual(load_config(None, {"rpc": {"busy_poll": 0}}).rpc.busy_poll, 0)
        for wrong in (-1, 10_001, 1.5, "200", True):
            self.assertRaises(ConfigError, load_config, None, {"rpc": {"busy_poll": wrong}})
