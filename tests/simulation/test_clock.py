"""
Tests of the simulated time and each node's clock.
"""

import random

from twisted.internet.error import AlreadyCalled, AlreadyCancelled
from twisted.internet.interfaces import IReactorTime
from twisted.trial.unittest import SynchronousTestCase

from nodex.simulation.clock import NodeClock, SimulatedTime


class SimulatedTimeTests(SynchronousTestCase):
    """
    L{SimulatedTime} runs calls in time order, those due together in the order they were made.
    """

    def test_order(self) -> None:
        """
        Calls run by time, then in the order they were scheduled; the time moves to each.
        """
        time = SimulatedTime(1000)
        seen: list[tuple[str, float]] = []
        time.at(1002, lambda: seen.append(("b", time.now)))
        time.at(1001, lambda: seen.append(("a", time.now)))
        time.at(1002, lambda: seen.append(("c", time.now)))
        time.later(0, lambda: seen.append(("now", time.now)))
        time.run()
        self.assertEqual(seen, [("now", 1000), ("a", 1001), ("b", 1002), ("c", 1002)])

    def test_due_now_after_queued_for_now(self) -> None:
        """
        Calls queued earlier for the time that has come (far and near) run
        before calls made at that time for at once, each group in the order
        it was made.
        """
        time = SimulatedTime(0)
        seen: list[str] = []

        def first() -> None:
            seen.append("first")
            time.later(0, seen.append, "now 1")
            time.at(-5, seen.append, "past")
            time.later(0, seen.append, "now 2")

        time.at(10, first)
        time.at(10, seen.append, "far")
        time.at(9.5, lambda: time.at(10, seen.append, "near"))
        time.run()
        self.assertEqual(seen, ["first", "far", "near", "now 1", "past", "now 2"])
        self.assertEqual(time.pending, 0)

    def test_order_as_one_heap(self) -> None:
        """
        Many calls at random delays (at once, near, far, some equal), some
        made by running calls, run in the order of one queue by time and
        then by when they were made.
        """
        rng = random.Random(7)
        delays = [0.0, 0.0, 0.25, 0.5, 0.999, 1.0, 3.0, 120.0]
        time = SimulatedTime(100)
        order: list[tuple[float, int]] = []
        made = [0]

        def call(key: tuple[float, int], spawn: int) -> None:
            order.append(key)
            for _ in range(spawn):
                schedule(rng.randrange(3) if len(order) < 400 else 0)

        def schedule(spawn: int) -> None:
            delay = rng.choice(delays) if rng.random() < 0.5 else rng.random() * 3
            made[0] += 1
            when = time.now + delay
            time.at(when, call, (when, made[0]), spawn)

        for _ in range(50):
            schedule(2)
        time.run()
        self.assertGreater(len(order), 400)
        self.assertEqual(order, sorted(order))

    def test_order_with_node_calls_as_one_queue(self) -> None:
        """
        World events and nodes' calls at shared exact times (the lists of
        one time), some reset, delayed or cancelled by running calls, and
        runs cut by C{until}, run in the order of one queue sorted by time
        and then by when each was last queued.
        """
        rng = random.Random(11)
        times = [0.0, 0.125, 0.5, 0.75, 1.0, 2.5]
        time = SimulatedTime(100)
        clock = NodeClock(time)
        order: list[tuple[float, int]] = []
        made = [0]
        live: list = []

        def ran(key: tuple[float, int], spawn: int) -> None:
            order.append(key)
            self.assertEqual(time.now, key[0])
            for _ in range(spawn):
                schedule(rng.randrange(3) if len(order) < 600 else 0)
            if live and rng.random() < 0.3:
                call, holder = live.pop(rng.randrange(len(live)))
                if call.active():
                    action = rng.randrange(3)
                    if action == 0:
                        call.cancel()
                        return
                    made[0] += 1
                    if action == 1:
                        call.reset(rng.choice(times))
                    else:
                        call.delay(rng.choice(times))
                    holder[0] = (call.getTime(), made[0])
                    live.append((call, holder))

        def schedule(spawn: int) -> None:
            delay = rng.choice(times) if rng.random() < 0.7 else rng.random() * 3
            made[0] += 1
            key = (time.now + delay, made[0])
            if rng.random() < 0.5:
                time.at(key[0], ran, key, spawn)
            else:
                holder = [key]
                call = clock.callLater(delay, lambda: ran(holder[0], spawn))
                live.append((call, holder))

        for _ in range(60):
            schedule(2)
        end = 100.0
        while time.pending:
            end += 0.3
            time.run(until=end)
            self.assertLessEqual(time.now, end)
        self.assertGreater(len(order), 600)
        self.assertEqual(order, sorted(order))

    def test_shared_time_one_entry(self) -> None:
        """
        Calls due at one exact time (L{SimulatedTime.at}, L{SimulatedTime.queue}
        with the arguments as a tuple, nodes' calls) are one heap entry, run
        in the order made.
        """
        time = SimulatedTime(0)
        clock = NodeClock(time)
        seen: list[int] = []
        for number in range(50):
            if number % 4 == 1:
                time.at(0.5, seen.append, number)
            elif number % 4 == 3:
                time.queue(0.5, seen.append, (number,))
            else:
                clock.callLater(0.5, seen.append, number)
        time.at(0.25, seen.append, -1)
        self.assertEqual((time.times_queued, time.pending), (2, 51))
        time.run()
        self.assertEqual(seen, [-1, *range(50)])

    def test_until(self) -> None:
        """
        C{run(until)} stops before later calls and moves the time to C{until}.
        """
        time = SimulatedTime(0)
        seen: list[int] = []
        time.at(5, seen.append, 5)
        time.at(15, seen.append, 15)
        time.run(until=10)
        self.assertEqual((seen, time.now), ([5], 10))
        time.run()
        self.assertEqual((seen, time.now), ([5, 15], 15))

    def test_stop(self) -> None:
        """
        C{stop} ends the run after the call that made it.
        """
        time = SimulatedTime(0)
        seen: list[int] = []
        time.at(1, lambda: (seen.append(1), time.stop()))
        time.at(2, seen.append, 2)
        time.run()
        self.assertEqual(seen, [1])

    def test_failure_logged(self) -> None:
        """
        A call that raises is logged and counted; the next still runs.
        """
        time = SimulatedTime(0)
        seen: list[int] = []
        time.at(1, lambda: 1 / 0)
        time.at(2, seen.append, 2)
        time.run()
        self.assertEqual((seen, time.errors), ([2], 1))
        self.assertEqual(len(self.flushLoggedErrors(ZeroDivisionError)), 1)


class NodeClockTests(SynchronousTestCase):
    """
    A L{NodeClock} is a node's reactor time: skewed, cancellable, dead after a crash.
    """

    def test_interface(self) -> None:
        """
        It provides L{IReactorTime}.
        """
        self.assertTrue(IReactorTime.providedBy(NodeClock(SimulatedTime(0))))

    def test_skew(self) -> None:
        """
        The node's time is the simulated time plus its skew; delays are true seconds.
        """
        time = SimulatedTime(100)
        clock = NodeClock(time, skew=-20)
        seen: list[float] = []
        call = clock.callLater(5, lambda: seen.append(time.now))
        self.assertEqual((clock.seconds(), call.getTime()), (80, 85))
        time.run()
        self.assertEqual(seen, [105])

    def test_cancel_reset_delay(self) -> None:
        """
        Calls can be cancelled, reset and delayed like Twisted's.
        """
        time = SimulatedTime(0)
        clock = NodeClock(time)
        seen: list[tuple[str, float]] = []
        cancelled = clock.callLater(1, lambda: seen.append(("cancelled", time.now)))
        reset = clock.callLater(1, lambda: seen.append(("reset", time.now)))
        delayed = clock.callLater(1, lambda: seen.append(("delayed", time.now)))
        cancelled.cancel()
        reset.reset(3)
        delayed.delay(1)
        self.assertEqual([call.active() for call in (cancelled, reset, delayed)], [False, True, True])
        self.assertEqual(clock.getDelayedCalls(), [delayed, reset])
        time.run()
        self.assertEqual(seen, [("delayed", 2), ("reset", 3)])
        self.assertRaises(AlreadyCancelled, cancelled.cancel)
        self.assertRaises(AlreadyCalled, reset.cancel)

    def test_kill(self) -> None:
        """
        After C{kill}, the calls the node made never run; new ones do.
        """
        time = SimulatedTime(0)
        clock = NodeClock(time)
        seen: list[str] = []
        old = clock.callLater(1, seen.append, "old")
        clock.callFromThread(seen.append, "from thread")
        clock.kill()
        clock.callLater(1, seen.append, "new")
        time.run()
        self.assertEqual((seen, old.active()), (["new"], False))
