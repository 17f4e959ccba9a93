"""
Work that follows an answer (L5): bookkeeping put off until the answer of
the request that caused it has been handed to the transport
(C{docs/chain-service.md}, "Answer first").

An automined transaction's answer comes after its block is written; the
chain's observers of that block (the pool's nonces, the filters' and
subscriptions' queues, the work template, the metrics, the peers' relay)
change nothing in the answer.  The RPC edge holds a L{FollowUps} while it
computes an answer and sends it on the reactor thread, and releases it
right after: the observers put off meanwhile run then, while the client
reads its answer and writes its next request, and before the reactor
reads anything else, so no request can see the chain without them.
"""

from collections.abc import Callable

from twisted.logger import Logger
from zope.interface import implementer

from nodex.api.chain import IFollowUps


@implementer(IFollowUps)
class FollowUps:
    """
    A queue of calls put off while an answer is held (L{IFollowUps}).

    @ivar holding: whether calls are being put off now.
    """

    log = Logger()

    def __init__(self) -> None:
        self._holds = 0
        self._queue: list[tuple[Callable[..., object], tuple[object, ...]]] = []
        self.holding = False

    def hold(self) -> None:
        """
        Put off the calls given to L{later} until the matching L{release}.
        """
        self._holds += 1
        self.holding = True

    def release(self) -> None:
        """
        End a hold: when no other is open, run the calls put off, in order.
        """
        self._holds -= 1
        if self._holds:
            return
        self.holding = False
        if self._queue:
            self.run_now()

    def later(self, function: Callable[..., object], *args: object) -> None:
        """
        Call C{function(*args)} when the hold ends, or now when none is open
        (its exception then goes to the caller, as a direct call's would).
        """
        if self.holding:
            self._queue.append((function, args))
        else:
            function(*args)

    def run_now(self) -> None:
        """
        Run the calls put off so far, in order, and those they put off in
        turn; a call that raises is logged, and the others still run (the
        answer that put them off is sent, or about to be: nothing may stop
        it or the requests after it).
        """
        while self._queue:
            queue, self._queue = self._queue, []
            for function, args in queue:
                try:
                    function(*args)
                except Exception:
                    self.log.failure("work put off until an answer was sent failed: {function!r}", function=function)


__all__ = ["FollowUps"]
