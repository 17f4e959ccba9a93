"""
Tests for L{nodex.services.followups}.
"""

from twisted.trial.unittest import SynchronousTestCase
from zope.interface.verify import verifyObject

from nodex.api.chain import IFollowUps
from nodex.services.followups import FollowUps


class FollowUpsTests(SynchronousTestCase):
    """
    Tests for L{FollowUps}.
    """

    def test_interface(self) -> None:
        """
        L{FollowUps} provides L{IFollowUps}.
        """
        self.assertTrue(verifyObject(IFollowUps, FollowUps()))

    def test_at_once_unless_held(self) -> None:
        """
        Without a hold, a call runs at once, and its exception goes to the caller.
        """
        follow_ups = FollowUps()
        calls: list[int] = []
        follow_ups.later(calls.append, 1)
        self.assertEqual(calls, [1])
        self.assertRaises(ZeroDivisionError, follow_ups.later, lambda: 1 // 0)

    def test_held_until_the_last_release(self) -> None:
        """
        Calls put off under nested holds run, in order, when the outer hold ends.
        """
        follow_ups = FollowUps()
        calls: list[int] = []
        follow_ups.hold()
        follow_ups.later(calls.append, 1)
        follow_ups.hold()
        follow_ups.later(calls.append, 2)
        follow_ups.release()
        self.assertEqual((calls, follow_ups.holding), ([], True))
        follow_ups.release()
        self.assertEqual((calls, follow_ups.holding), ([1, 2], False))
        follow_ups.later(calls.append, 3)
        self.assertEqual(calls, [1, 2, 3])

    def test_run_now_while_held(self) -> None:
        """
        L{FollowUps.run_now} runs what was put off so far, and what that
        puts off in turn, while the hold stays.
        """
        follow_ups = FollowUps()
        calls: list[int] = []
        follow_ups.hold()
        follow_ups.later(lambda: calls.append(1) or follow_ups.later(calls.append, 2))
        follow_ups.run_now()
        self.assertEqual((calls, follow_ups.holding), ([1, 2], True))
        follow_ups.release()
        self.assertEqual(calls, [1, 2])

    def test_failure_logged_and_the_rest_run(self) -> None:
        """
        A call put off that raises is logged; the calls after it still run.
        """
        follow_ups = FollowUps()
        calls: list[int] = []
        follow_ups.hold()
        follow_ups.later(lambda: 1 // 0)
        follow_ups.later(calls.append, 1)
        follow_ups.release()
        self.assertEqual(calls, [1])
        self.assertEqual(len(self.flushLoggedErrors(ZeroDivisionError)), 1)
