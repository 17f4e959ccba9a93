"""
The tracing service (L5): C{debug_trace*} and C{trace_*} answers, made by
re-executing blocks and calls with a tracer attached (L{nodex.chain.tracing}).

Every replay runs in the state service's reader threads on a fresh state
opened at the parent block's root (the node keeps every state), so it
never changes the chain and never holds up the reactor.  Each request has
one L{TraceBudget}: the steps or call frames it may produce, the bytes of
its answer and its time; reaching one ends the replay in its thread with a
L{TraceLimitError} that names it.
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from twisted.application.service import Service
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IReactorTime
from zope.interface import implementer

from nodex.chain.calls import CallRequest, call_environment
from nodex.chain.tracing.flat import FlatCallTracer
from nodex.chain.tracing.limits import (
    TraceBudget,
    TraceConfig,
    TraceError,
    TraceLimits,
    TraceQueryError,
)
from nodex.chain.tracing.replay import TracedTransaction, make_tracer, trace_block, trace_call
from nodex.evm.cancellation import Cancellation, ExecutionCancelledError, cancellable
from nodex.api.chain import IChainService
from nodex.api.errors import BlockNotFoundError
from nodex.api.tracing import ITracingService, TraceFilter
from nodex.services.state import StateService
from nodex.state.errors import StateError
from nodex.state.overrides import StateOverrideError
from nodex.structures.blocks import Block
from nodex.structures.headers import Header
from nodex.trie import TrieError

MAX_TRACES = 10_000
"""The most traces C{trace_filter} answers, and the largest C{after} (reference §3.9)."""

MAX_FILTER_BLOCKS = 5_000
"""The most blocks one C{trace_filter} may cover (the reference's log-query range)."""


@implementer(ITracingService)
class TracingService(Service):
    """
    Traces of stored transactions, blocks and calls.
    """

    def __init__(
        self,
        chain: IChainService,
        state: StateService,
        clock: IReactorTime,
        limits: TraceLimits | None = None,
        max_traces: int = MAX_TRACES,
        max_filter_blocks: int = MAX_FILTER_BLOCKS,
    ) -> None:
        """
        @param chain: where blocks and transactions are looked up.
        @param state: opens states and runs the replays in its reader threads.
        @param clock: measures each request's time limit (read in the threads).
        @param limits: the steps, bytes and seconds one request may take.
        @param max_traces: C{trace_filter}'s largest C{count} and C{after}.
        @param max_filter_blocks: the most blocks one C{trace_filter} covers.
        """
        self._chain = chain
        self._state = state
        self._clock = clock
        self.limits = TraceLimits() if limits is None else limits
        self.max_traces = max_traces
        self.max_filter_blocks = max_filter_blocks

    def _budget(self, timeout: float | None = None) -> TraceBudget:
        """
        The budget of a new request.
        """
        return TraceBudget(self.limits, self._clock.seconds, timeout)

    # debug_*

    def trace_transaction(self, tx_hash: bytes, config: TraceConfig) -> "Deferred[Any]":
        """
        The trace of a canonical transaction.

        @return: a Deferred firing with the tracer's JSON value, or failing
            with L{TraceError} (unknown transaction) or L{TraceLimitError}.
        """
        return Deferred.fromCoroutine(self._trace_transaction(tx_hash, config))

    async def _trace_transaction(self, tx_hash: bytes, config: TraceConfig) -> Any:
        location = await self._chain.get_transaction(tx_hash)
        if location is None:
            raise TraceError(f"transaction 0x{tx_hash.hex()} not found")
        block = await self._chain.get_block_by_hash(location.block_hash)
        if block is None:
            raise TraceError(f"transaction 0x{tx_hash.hex()} not found")
        traced = await self._replay(block, config, only=location.index)
        return traced[0].trace

    def trace_block(self, block_hash: bytes, config: TraceConfig) -> "Deferred[list[dict[str, Any]]]":
        """
        The traces of every transaction of a stored block (canonical or
        not), each as C{{"txHash": ..., "result": ...}}.

        @return: a Deferred failing with L{TraceError} for an unknown block or
            the genesis block (which has no parent state), or with L{TraceLimitError}.
        """
        return Deferred.fromCoroutine(self._trace_block(block_hash, config))

    async def _trace_block(self, block_hash: bytes, config: TraceConfig) -> list[dict[str, Any]]:
        block = await self._chain.get_block_by_hash(block_hash)
        if block is None:
            raise TraceError(f"block 0x{block_hash.hex()} not found")
        if block.header.number == 0:
            raise TraceError("the genesis block cannot be traced: it has no parent state")
        traced = await self._replay(block, config)
        return [{"txHash": "0x" + item.transaction.hash.hex(), "result": item.trace} for item in traced]

    def trace_call(self, header: Header, request: CallRequest, config: TraceConfig) -> "Deferred[Any]":
        """
        The trace of a call on the state after block C{header}, in its
        context, with the config's state overrides (C{debug_traceCall}).

        @return: a Deferred firing with the tracer's JSON value, or failing
            with L{nodex.api.errors.InsufficientFundsError},
            L{nodex.api.errors.StateOverrideError}, L{TraceError} or L{TraceLimitError}.
        """
        budget = self._budget(config.timeout)
        return self._state.run_in_thread(self._thd_trace_call, header, request, config, budget)

    def _thd_trace_call(self, header: Header, request: CallRequest, config: TraceConfig, budget: TraceBudget) -> Any:
        """
        Run the traced call in a reader thread.
        """
        environment = call_environment(
            header, self._chain.chain_id, self._state.ancestor_hashes(header), self._state.forks
        )
        with _missing_state(header), self._within_time(budget):
            state = self._state.open_state(header)
            return trace_call(state, environment, request, config, make_tracer(config, budget), self._state.call_gas_cap)

    @contextmanager
    def _within_time(self, budget: TraceBudget) -> Iterator[None]:
        """
        Run the block's EVM runs (in a reader thread) until the budget's
        deadline: the interpreter stops then (L{nodex.evm.cancellation}),
        however few steps or frames its tracer charges to the budget (a
        call tracer over an endless loop charges none), and a replay still
        queued then does not start.

        @raise TraceLimitError: the time is up.
        """
        cancellation = Cancellation(budget.deadline, self._clock.seconds)
        try:
            with cancellable(cancellation):
                cancellation.check()
                yield
        except ExecutionCancelledError:
            raise budget.time_error() from None

    # trace_*

    def parity_transaction(self, tx_hash: bytes) -> "Deferred[list[dict[str, Any]] | None]":
        """
        The flat traces of a canonical transaction, or L{None} if unknown.
        """
        return Deferred.fromCoroutine(self._parity_transaction(tx_hash))

    async def _parity_transaction(self, tx_hash: bytes) -> list[dict[str, Any]] | None:
        location = await self._chain.get_transaction(tx_hash)
        if location is None:
            return None
        block = await self._chain.get_block_by_hash(location.block_hash)
        if block is None:
            return None
        traced = await self._replay_flat(block, self._budget(), only=location.index)
        return traced[0].trace

    def parity_block(self, block: Block) -> "Deferred[list[dict[str, Any]]]":
        """
        The flat traces of every transaction of C{block}, in order (none for
        the genesis block).
        """
        return Deferred.fromCoroutine(self._parity_block(block))

    async def _parity_block(self, block: Block) -> list[dict[str, Any]]:
        if block.header.number == 0 or not block.transactions:
            return []
        traced = await self._replay_flat(block, self._budget())
        return [trace for item in traced for trace in item.trace]

    def parity_filter(self, query: TraceFilter) -> "Deferred[list[dict[str, Any]]]":
        """
        The flat traces of the canonical blocks in a range that match the
        query's addresses, after skipping C{after} of them, at most C{count}.

        @return: a Deferred failing with L{TraceQueryError} for a range,
            C{after} or C{count} beyond the limits, or with L{TraceLimitError}.
        """
        return Deferred.fromCoroutine(self._parity_filter(query))

    async def _parity_filter(self, query: TraceFilter) -> list[dict[str, Any]]:
        count = self.max_traces if query.count is None else query.count
        if count > self.max_traces:
            raise TraceQueryError(f"Count value too big. Maximum {self.max_traces} traces allowed.")
        if query.after > self.max_traces:
            raise TraceQueryError(f"After value too big. Maximum {self.max_traces} traces allowed.")
        head = self._chain.head.header.number
        first = 0 if query.from_block is None else query.from_block
        last = head if query.to_block is None else query.to_block
        if first > last:
            raise TraceQueryError("fromBlock cannot be greater than toBlock")
        last = min(last, head)
        if last - first + 1 > self.max_filter_blocks:
            raise TraceQueryError(
                f"trace_filter covers {last - first + 1} blocks, more than the limit of {self.max_filter_blocks}"
            )
        senders = frozenset("0x" + address.hex() for address in query.from_addresses)
        recipients = frozenset("0x" + address.hex() for address in query.to_addresses)
        budget = self._budget()
        found: list[dict[str, Any]] = []
        skip = query.after
        for number in range(max(first, 1), last + 1):
            if len(found) >= count:
                break
            block = await self._chain.get_block_by_number(number)
            if block is None or not block.transactions:
                continue
            for item in await self._replay_flat(block, budget):
                for trace in item.trace:
                    if not _matches(trace, senders, recipients):
                        continue
                    if skip:
                        skip -= 1
                    elif len(found) < count:
                        found.append(trace)
        return found

    # Replays

    async def _replay(self, block: Block, config: TraceConfig, only: int | None = None) -> list[TracedTransaction]:
        """
        Replay C{block} on its parent's state with C{config}'s tracer.
        """
        budget = self._budget(config.timeout)
        return await self._replay_with(block, lambda: make_tracer(config, budget), budget, only)

    async def _replay_flat(self, block: Block, budget: TraceBudget, only: int | None = None) -> list[TracedTransaction]:
        """
        Replay C{block} with the flat (Parity) call tracer.
        """
        return await self._replay_with(block, lambda: FlatCallTracer(budget), budget, only)

    async def _replay_with(
        self, block: Block, new_tracer: Callable[[], Any], budget: TraceBudget, only: int | None
    ) -> list[TracedTransaction]:
        """
        Look up the parent's header, then replay in a reader thread.
        """
        parent = await self._chain.get_header_by_hash(block.header.parent_hash)
        if parent is None:
            raise TraceError(f"the parent of block 0x{block.hash.hex()} is not stored")
        return await self._state.run_in_thread(self._thd_replay, block, parent, new_tracer, budget, only)

    def _thd_replay(
        self, block: Block, parent: Header, new_tracer: Callable[[], Any], budget: TraceBudget, only: int | None
    ) -> list[TracedTransaction]:
        """
        Replay in the reader thread.
        """
        with _missing_state(parent), self._within_time(budget):
            state = self._state.open_state(parent)
            hashes = self._state.ancestor_hashes(block.header)
            return trace_block(
                block, state, self._chain.chain_id, hashes, new_tracer, budget, only, self._state.forks
            )


def _matches(trace: dict[str, Any], senders: frozenset[str], recipients: frozenset[str]) -> bool:
    """
    Whether a flat trace's sender and recipient are among those asked for
    (an empty set matches any): the account that made the call (or the
    self-destructed one) and the one called (or created, or refunded).
    """
    action = trace["action"]
    if trace["type"] == "suicide":
        sender, recipient = action["address"], action["refundAddress"]
    else:
        sender = action["from"]
        recipient = action.get("to") or (trace["result"] or {}).get("address")
    if senders and sender not in senders:
        return False
    return not recipients or recipient in recipients


@contextmanager
def _missing_state(header: Header) -> Iterator[None]:
    """
    Turn a state the store lacks (a missing trie node) into L{BlockNotFoundError}.
    """
    try:
        yield
    except StateOverrideError:
        raise
    except (StateError, TrieError) as exc:
        raise BlockNotFoundError(f"State not found for block with hash 0x{header.hash.hex()}") from exc


__all__ = ["MAX_FILTER_BLOCKS", "MAX_TRACES", "TracingService"]
