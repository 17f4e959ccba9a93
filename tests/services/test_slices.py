"""
Tests for L{nodex.services.slices}.
"""

from collections.abc import Iterator

from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from nodex.services.slices import SLICE_SECONDS, SliceRunner
from tests.services.test_filters import SteppingClock


class SliceRunnerTests(SynchronousTestCase):
    """
    Tests for L{SliceRunner}.
    """

    def work(self, name: str, steps: int, done: list[str]) -> Iterator[None]:
        """
        C{steps} steps, each noted in C{done}.
        """
        for step in range(steps):
            done.append(f"{name}{step}")
            yield None

    def test_small_work_at_once(self) -> None:
        """
        Work that fits in a slice is done before L{SliceRunner.run} returns.
        """
        clock = Clock()
        runner = SliceRunner(clock)
        done: list[str] = []
        runner.run(self.work("a", 100, done))
        self.assertEqual(len(done), 100)
        self.assertEqual((runner.pending, clock.getDelayedCalls()), (0, []))

    def test_slices_in_order(self) -> None:
        """
        Work that outlasts a slice goes on at the next turns of the reactor,
        and later work comes after it, in order; each slice ends once the
        slice's time has passed.
        """
        clock = Clock()
        runner = SliceRunner(clock)
        done: list[str] = []
        slices: list[int] = []
        drain = runner._drain

        def counted() -> None:
            before = len(done)
            drain()
            slices.append(len(done) - before)

        runner._drain = counted  # type: ignore[method-assign]

        def timed(name: str, steps: int) -> Iterator[None]:
            for step in self.work(name, steps, done):
                clock.rightNow += SLICE_SECONDS * 0.2525
                yield step

        runner.run(timed("a", 10))
        runner.run(timed("b", 3))
        while runner.pending:
            clock.advance(0)
        self.assertEqual(done, [f"a{n}" for n in range(10)] + ["b0", "b1", "b2"])
        self.assertEqual(slices, [4, 4, 4, 1])

    def test_failure_logged_and_skipped(self) -> None:
        """
        Work that raises is logged and dropped; the next work runs.
        """
        runner = SliceRunner(Clock())
        done: list[str] = []

        def broken() -> Iterator[None]:
            yield None
            raise RuntimeError("broken delivery")

        runner.run(broken())
        runner.run(self.work("c", 2, done))
        self.assertEqual(done, ["c0", "c1"])
        self.assertEqual(len(self.flushLoggedErrors(RuntimeError)), 1)

    def test_stop_drops_waiting_work(self) -> None:
        """
        Stopping forgets the waiting work and its next slice.
        """
        clock = SteppingClock(SLICE_SECONDS)
        runner = SliceRunner(clock)
        done: list[str] = []
        runner.run(self.work("d", 10, done))
        self.assertTrue(runner.pending)
        runner.stop()
        self.assertEqual((runner.pending, clock.getDelayedCalls()), (0, []))
