"""
Stopping an execution whose answer nobody waits for any more.

A call the node runs for a client (C{eth_call}, C{eth_estimateGas}, a
trace) runs in a reader thread, bounded by its gas; the client's answer is
bounded by a time limit.  When the time is up, the client gets its error,
and the run should stop too rather than burn a core for seconds more (and
hold a reader thread that other requests wait for).  The service that
started the run cancels its L{Cancellation}; the interpreter looks at it:

  - when a frame starts (every CALL and CREATE, and the first frame), and
  - inside the instruction loop, once every L{CHECK_GAS} gas, at a JUMP or
    JUMPI: every loop of EVM code passes one, and the loop already
    compares its gas there, so the look costs nothing in between
    (C{benchmarks/RESULTS.md}, "Session 7").

and raises L{ExecutionCancelledError}, which is not a halt: no frame
catches it, and it leaves the EVM as the run's outcome.

The cancellation reaches the interpreter through a context variable,
L{CURRENT_CANCELLATION}, which the service sets around the run in its
thread (L{cancellable}): the functions between them (L{nodex.chain.calls},
the tracing replays) need not pass it on.  Block import and mining set
none and are never cancelled.
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

CHECK_GAS = 100_000
"""
Gas a frame may spend between two looks at its cancellation: about 10 ms
at the EVM's usual rate, 25 ms at its slowest measured (alt_bn128 pairings).
"""


class ExecutionCancelledError(Exception):
    """
    The run was cancelled (its time limit passed): it stops where it is, and
    its state changes are thrown away with its state.
    """

    def __init__(self) -> None:
        super().__init__("execution cancelled")


class Cancellation:
    """
    When a run should stop: once L{cancel} is called (from any thread), or
    once its deadline has passed on its clock.

    @ivar cancelled: whether the run should stop (set by L{cancel}, or by
        L{check} once the deadline has passed).
    """

    __slots__ = ("cancelled", "deadline", "_now")

    def __init__(self, deadline: float | None = None, now: Callable[[], float] | None = None) -> None:
        """
        @param deadline: when the run should stop, on C{now}'s clock (L{None}: only when cancelled).
        @param now: the clock the deadline is read on (needed with a deadline).
        """
        self.cancelled = False
        self.deadline = deadline
        self._now = now

    def cancel(self) -> None:
        """
        Ask the run to stop at its next look.
        """
        self.cancelled = True

    def check(self) -> None:
        """
        @raise ExecutionCancelledError: the run is cancelled, or its deadline has passed.
        """
        if not self.cancelled and self.deadline is not None and self._now() > self.deadline:  # type: ignore[misc]
            self.cancelled = True
        if self.cancelled:
            raise ExecutionCancelledError()


CURRENT_CANCELLATION: ContextVar[Cancellation | None] = ContextVar("CURRENT_CANCELLATION", default=None)
"""The cancellation of the runs started in the current context (L{None}: never cancelled)."""


@contextmanager
def cancellable(cancellation: Cancellation | None) -> Iterator[None]:
    """
    Run the block with C{cancellation} as the cancellation of the EVM runs it starts.
    """
    token = CURRENT_CANCELLATION.set(cancellation)
    try:
        yield
    finally:
        CURRENT_CANCELLATION.reset(token)


__all__ = ["CHECK_GAS", "CURRENT_CANCELLATION", "Cancellation", "ExecutionCancelledError", "cancellable"]
