"""
Tests for L{nodex.services.loglines}.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.services.loglines import LineThrottle


class LineThrottleTests(SynchronousTestCase):
    """
    Tests for L{LineThrottle}.
    """

    def test_one_line_an_interval(self) -> None:
        """
        The first event's line is due; the events within the interval
        after the last line are not, and the next due line counts them.
        """
        lines = LineThrottle(1.0)
        self.assertEqual([lines.due(now) for now in (10.0, 10.2, 10.9, 11.0, 11.5, 13.0)], [0, None, None, 2, None, 1])
