"""
Log lines of frequent events, at most one a given interval: a sync imports
thousands of blocks a second, a dev chain mines a block per transaction, a
test suite rewinds before every test, and a log line costs about a tenth of
a millisecond.
"""


class LineThrottle:
    """
    Says whether an event's line is due: at most one every C{interval}
    seconds, the next due line counting the events that went unlogged.
    """

    def __init__(self, interval: float) -> None:
        """
        @param interval: the fewest seconds between two lines.
        """
        self.interval = interval
        self._logged_at: float | None = None
        self._unlogged = 0

    def due(self, now: float) -> int | None:
        """
        An event at C{now}: L{None} when its line is not due (it is then
        counted), else how many events went unlogged since the last line.
        """
        if self._logged_at is not None and now - self._logged_at < self.interval:
            self._unlogged += 1
            return None
        self._logged_at = now
        unlogged, self._unlogged = self._unlogged, 0
        return unlogged


__all__ = ["LineThrottle"]
