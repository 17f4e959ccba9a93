"""
Tests for L{nodex.services.readerpool}.
"""

import threading
from typing import Any

from twisted.internet import reactor
from twisted.internet.defer import inlineCallbacks
from twisted.trial.unittest import SynchronousTestCase, TestCase

from nodex.api.errors import ServerBusyError
from nodex.services.readerpool import ReaderPool


class ReaderPoolTests(TestCase):
    """
    Tests for L{ReaderPool} with the real reactor and threads.
    """

    @inlineCallbacks
    def test_results_and_failures(self) -> Any:
        """
        Jobs queued before the start run in the pool's threads; their results
        and exceptions reach the reactor thread through their Deferreds.
        """
        pool = ReaderPool(reactor, 2, "test-readers")
        names: list[str] = []

        def name() -> str:
            """
            The running thread's name.
            """
            names.append(threading.current_thread().name)
            return names[-1]

        first = pool.run(name)
        failing = pool.run(lambda: 1 // 0)
        pool.start()
        self.addCleanup(pool.stop)
        self.assertTrue((yield first).startswith("test-readers-"))
        yield self.assertFailure(failing, ZeroDivisionError)
        self.assertEqual((yield pool.run(sum, [1, 2])), 3)

    def test_stop_drains(self) -> None:
        """
        Stopping runs the jobs already queued, then ends every thread.
        """
        pool = ReaderPool(reactor, 3, "test-readers")
        done: list[int] = []
        for number in range(5):
            pool.run(done.append, number)
        pool.start()
        pool.stop()
        self.assertEqual(sorted(done), list(range(5)))
        self.assertFalse([thread for thread in threading.enumerate() if thread.name.startswith("test-readers-")])


class ReaderPoolSizeTests(SynchronousTestCase):
    """
    Tests for L{ReaderPool}'s arguments.
    """

    def test_needs_a_thread(self) -> None:
        """
        A pool of no threads is refused.
        """
        self.assertRaises(ValueError, ReaderPool, reactor, 0, "none")

    def test_queue_bounded(self) -> None:
        """
        At most C{max_queued} jobs wait (not started, they all wait); the
        next is refused at once with L{ServerBusyError}, and once the queue
        drains a job is accepted again.
        """
        pool = ReaderPool(reactor, 2, "bounded", max_queued=3)
        accepted = [pool.run(int, "1") for _ in range(3)]
        self.assertEqual(pool.queued(), 3)
        failure = self.failureResultOf(pool.run(int, "1"), ServerBusyError)
        self.assertEqual(
            str(failure.value), "the node is busy: 3 requests wait for its 2 reader threads; try again shortly"
        )
        self.assertEqual(pool.queued(), 3)
        pool.start()
        pool.stop()
        self.assertEqual(pool.queued(), 0)
        self.assertNoResult(pool.run(int, "1"))
        for deferred in accepted:
            deferred.addErrback(lambda failure: None)
