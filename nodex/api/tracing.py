"""
Traces by re-execution, as the edges see them.
"""

from dataclasses import dataclass
from typing import Any

from twisted.internet.defer import Deferred
from zope.interface import Interface

from nodex.chain.calls import CallRequest
from nodex.chain.tracing.limits import (
    CALL_TRACER,
    GETH_STRUCT_LOGGER,
    PRESTATE_TRACER,
    STRUCT_LOGGER,
    STRUCT_LOGGERS,
    TRACER_NAMES,
    TraceConfig,
)
from nodex.structures.blocks import Block
from nodex.structures.headers import Header

__all__ = [
    "CALL_TRACER",
    "GETH_STRUCT_LOGGER",
    "ITracingService",
    "PRESTATE_TRACER",
    "STRUCT_LOGGER",
    "STRUCT_LOGGERS",
    "TraceConfig",
    "TraceFilter",
    "TRACER_NAMES",
]


@dataclass(frozen=True)
class TraceFilter:
    """
    The query of C{trace_filter}.

    @ivar from_block: the first block, or L{None} for the genesis block.
    @ivar to_block: the last block, or L{None} for the head.
    @ivar from_addresses: the accounts a trace must come from (empty: any).
    @ivar to_addresses: the accounts a trace must go to (empty: any).
    @ivar after: how many matching traces to skip.
    @ivar count: the most traces to answer, or L{None} for the node's limit.
    """

    from_block: int | None = None
    to_block: int | None = None
    from_addresses: frozenset[bytes] = frozenset()
    to_addresses: frozenset[bytes] = frozenset()
    after: int = 0
    count: int | None = None


class ITracingService(Interface):
    """
    Traces made by re-executing stored transactions and calls with a tracer
    attached, in reader threads, bounded in steps, bytes and time.
    """

    def trace_transaction(tx_hash: bytes, config: TraceConfig) -> "Deferred[Any]":
        """
        The trace of a canonical transaction (C{debug_traceTransaction}).

        @return: a Deferred firing with the tracer's JSON value, or failing
            with L{TraceError} (-32000) for an unknown transaction, or
            L{TraceLimitError} (-32000) naming the limit reached.
        """

    def trace_block(block_hash: bytes, config: TraceConfig) -> "Deferred[list[dict[str, Any]]]":
        """
        The traces of a stored block's transactions, each C{{txHash, result}}.

        @return: a Deferred failing with L{TraceError} for an unknown or
            the genesis block, or with L{TraceLimitError}.
        """

    def trace_call(header: Header, request: CallRequest, config: TraceConfig) -> "Deferred[Any]":
        """
        The trace of a call on the state after block C{header} (C{debug_traceCall}).
        """

    def parity_transaction(tx_hash: bytes) -> "Deferred[list[dict[str, Any]] | None]":
        """
        The Parity-style flat traces of a canonical transaction, or L{None}.
        """

    def parity_block(block: Block) -> "Deferred[list[dict[str, Any]]]":
        """
        The flat traces of a block's transactions, in order.
        """

    def parity_filter(query: TraceFilter) -> "Deferred[list[dict[str, Any]]]":
        """
        The flat traces of a range of canonical blocks that match C{query}.

        @return: a Deferred failing with L{TraceQueryError} (-32602) for a
            range, C{after} or C{count} beyond the limits.
        """
