"""
What a trace request asks for (L{TraceConfig}) and what it may cost
(L{TraceBudget}): steps, output bytes and time, each ending the trace with
a L{TraceLimitError} that names the limit.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

from nodex.chain.errors import ChainError
from nodex.state.overrides import StateOverrides

STRUCT_LOGGER = "nodexTracer"
GETH_STRUCT_LOGGER = "structLogger"
CALL_TRACER = "callTracer"
PRESTATE_TRACER = "prestateTracer"
FOUR_BYTE_TRACER = "4byteTracer"
FLAT_CALL_TRACER = "flatCallTracer"

TRACER_NAMES = (STRUCT_LOGGER, GETH_STRUCT_LOGGER, CALL_TRACER, PRESTATE_TRACER, FOUR_BYTE_TRACER, FLAT_CALL_TRACER)
"""
The tracers nodex offers.  The default (no name, or an empty one) is the
reference's struct logger, or geth's under the Ethereum conventions.
"""

STRUCT_LOGGERS = (STRUCT_LOGGER, GETH_STRUCT_LOGGER)
"""The two struct loggers, which take the same options."""

DEFAULT_MAX_STEPS = 1_000_000
"""The most struct-log entries (or call frames) one request may produce."""

DEFAULT_MAX_BYTES = 10 * 1024 * 1024
"""The most bytes of JSON a trace may come to (an estimate kept as it grows)."""

DEFAULT_TIME_LIMIT = 4.5
"""Seconds a trace may run before it stops with an error."""

_TIME_CHECK_INTERVAL = 4096
"""Steps between two readings of the clock."""


class TraceError(ChainError):
    """
    A trace that cannot be given: an unknown transaction or block, the
    genesis block (RPC code -32000).
    """


class TraceQueryError(TraceError):
    """
    A trace query the node refuses as asked: C{trace_filter}'s range,
    C{after} or C{count} beyond the limits (RPC code -32602).
    """


class TraceLimitError(TraceError):
    """
    A trace stopped because it reached one of its limits; the message names it.
    """


@dataclass(frozen=True)
class TraceConfig:
    """
    The options of a trace (C{debug_trace*}'s second parameter).

    @ivar tracer: one of L{TRACER_NAMES}.
    @ivar disable_stack: the struct logger leaves out C{stack}.
    @ivar disable_memory: the reference's struct logger leaves out C{memory}.
    @ivar enable_memory: geth's struct logger adds C{memory}.
    @ivar disable_storage: the struct logger leaves out C{storage}.
    @ivar enable_return_data: the struct logger adds C{returnData}.
    @ivar limit: the most struct-log entries kept (0: no limit of its own);
        execution goes on past it.
    @ivar only_top_call: the call tracer leaves out the inner calls.
    @ivar with_log: the call tracer adds each frame's logs.
    @ivar diff_mode: the prestate tracer gives C{pre} and C{post} of what changed.
    @ivar timeout: seconds the client allows (L{None}: the node's limit);
        the lesser of the two applies.
    @ivar state_overrides: accounts replaced before a traced call (C{debug_traceCall}).
    """

    tracer: str = STRUCT_LOGGER
    disable_stack: bool = False
    disable_memory: bool = False
    enable_memory: bool = False
    disable_storage: bool = False
    enable_return_data: bool = False
    limit: int = 0
    only_top_call: bool = False
    with_log: bool = False
    diff_mode: bool = False
    timeout: float | None = None
    state_overrides: StateOverrides = field(default_factory=StateOverrides)


@dataclass(frozen=True)
class TraceLimits:
    """
    The node's limits on one trace request.

    @ivar max_steps: the most struct-log entries or call frames.
    @ivar max_bytes: the most bytes of JSON.
    @ivar time_limit: seconds of execution.
    """

    max_steps: int = DEFAULT_MAX_STEPS
    max_bytes: int = DEFAULT_MAX_BYTES
    time_limit: float = DEFAULT_TIME_LIMIT


class TraceBudget:
    """
    The steps, bytes and time left to one trace request, shared by the
    tracers of all its transactions.

    @ivar steps: the entries produced so far.
    @ivar size: the estimated bytes produced so far.
    @ivar deadline: when the time is up, on the clock.
    """

    def __init__(self, limits: TraceLimits, now: Callable[[], float], timeout: float | None = None) -> None:
        """
        @param now: the clock (seconds), read every few thousand steps.
        @param timeout: the client's own time limit, if shorter.
        """
        self.limits = limits
        self._now = now
        self.time_limit = limits.time_limit if timeout is None else min(timeout, limits.time_limit)
        self.deadline = now() + self.time_limit
        self.steps = 0
        self.size = 0
        self._next_check = _TIME_CHECK_INTERVAL

    def charge(self, size: int) -> None:
        """
        Count one more entry of about C{size} bytes.

        @raise TraceLimitError: a limit is passed.
        """
        self.steps += 1
        self.size += size
        if self.steps > self.limits.max_steps:
            raise TraceLimitError(f"trace exceeded the limit of {self.limits.max_steps} steps")
        if self.size > self.limits.max_bytes:
            raise TraceLimitError(f"trace exceeded the output limit of {self.limits.max_bytes} bytes")
        if self.steps >= self._next_check:
            self._next_check = self.steps + _TIME_CHECK_INTERVAL
            self.check_time()

    def check_time(self) -> None:
        """
        @raise TraceLimitError: the time is up.
        """
        if self._now() > self.deadline:
            raise self.time_error()

    def time_error(self) -> "TraceLimitError":
        """
        The error of a trace whose time is up.
        """
        return TraceLimitError(f"trace exceeded the time limit of {self.time_limit:g} seconds")


__all__ = [
    "CALL_TRACER",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_STEPS",
    "DEFAULT_TIME_LIMIT",
    "FLAT_CALL_TRACER",
    "FOUR_BYTE_TRACER",
    "PRESTATE_TRACER",
    "GETH_STRUCT_LOGGER",
    "STRUCT_LOGGER",
    "STRUCT_LOGGERS",
    "TRACER_NAMES",
    "TraceBudget",
    "TraceConfig",
    "TraceError",
    "TraceLimitError",
    "TraceLimits",
    "TraceQueryError",
]
