"""
Tests for L{nodex.services.readerpool}.
"""

import threading
from typing import Any

from twisted.internet import reactor
from twisted.internet.defer import inlineCallbacks
from twisted.trial.unittest import SynchronousTestCase, TestCase

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
