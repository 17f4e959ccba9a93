"""
The bookkeeping of what one connection receives: the hashes a peer is
known to have (and which of them it sent), and the lane that handles its
work messages one after the other (C{docs/p2p.md}, "Backpressure").
"""

from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Hashable
from typing import Any

from twisted.internet.defer import Deferred, ensureDeferred
from twisted.python.failure import Failure


class KnownSet(OrderedDict[Hashable, bool]):
    """
    A bounded set of hashes, forgetting the oldest first, that also
    remembers which entries the peer itself sent (to tell a repeat from an
    echo of what this node sent it): a mapping of each entry to whether
    the peer sent it.

    An ordered dictionary itself, not a wrapper of one: the relay asks
    C{hash in known} for every peer and every hash it sends, and the
    dictionary's own membership test and length cost no Python call.
    """

    def __init__(self, limit: int) -> None:
        """
        @param limit: how many entries to keep.
        """
        super().__init__()
        self._limit = limit

    def add(self, entry: Hashable, received: bool = False) -> None:
        """
        Remember C{entry}; C{received} when the peer sent it.
        """
        if entry in self:
            if received:
                self[entry] = True
            self.move_to_end(entry)
            return
        self[entry] = received
        if len(self) > self._limit:
            self.popitem(last=False)

    def note_received(self, entry: Hashable) -> bool:
        """
        Remember that the peer sent C{entry}.

        @return: whether it had sent it before (a repeat).
        """
        before = self.get(entry)
        self[entry] = True
        if before is None:
            if len(self) > self._limit:
                self.popitem(last=False)
            return False
        self.move_to_end(entry)
        return before


class WorkLane:
    """
    Runs one connection's work (a block to import, transactions for the
    pool) one item after the other, in arrival order, so that a peer's
    messages cost at most one piece of work at a time; the rest waits in
    the connection's bounded inbound queue.

    Work must never wait for a later message of the same peer (an answer to
    a request, say): that message may sit behind it in the paused stream.
    """

    def __init__(self) -> None:
        self._waiting: deque[tuple[Callable[[], Awaitable[Any]], Deferred[Any]]] = deque()
        self._busy = False
        self._looping = False
        self.closed = False

    def __len__(self) -> int:
        return len(self._waiting) + int(self._busy)

    def submit(self, work: Callable[[], Awaitable[Any]]) -> Deferred[Any]:
        """
        Run C{work} after the work submitted before it.

        @return: a Deferred firing with its result or failure when it is
            done (with L{None} at once when the lane is closed).
        """
        done: Deferred[Any] = Deferred()
        if self.closed:
            done.callback(None)
            return done
        self._waiting.append((work, done))
        self._run()
        return done

    def close(self) -> None:
        """
        Run nothing more: the work still waiting is dropped (its Deferreds fire with L{None}).
        """
        self.closed = True
        waiting, self._waiting = self._waiting, deque()
        for _, done in waiting:
            done.callback(None)

    def _run(self) -> None:
        """
        Start the next work unless some runs (a loop, not recursion, when
        work finishes at once).
        """
        if self._looping:
            return
        self._looping = True
        try:
            while self._waiting and not self._busy:
                work, done = self._waiting.popleft()
                self._busy = True
                ensureDeferred(work()).addBoth(self._finished, done)
        finally:
            self._looping = False

    def _finished(self, result: Any, done: Deferred[Any]) -> None:
        self._busy = False
        if isinstance(result, Failure):
            done.errback(result)
        else:
            done.callback(result)
        if not self.closed:
            self._run()


__all__ = ["KnownSet", "WorkLane"]
