"""
The C{debug} and C{trace} methods (reference §3.8, §3.9): C{debug_traceTransaction},
C{debug_traceBlockByHash}, C{debug_traceBlockByNumber}, C{debug_traceCall},
C{trace_transaction}, C{trace_block} and C{trace_filter}.

The trace options are decoded strictly: an unknown tracer, an unknown
option, an option of another tracer, or a C{tracerConfig} member the
tracer does not have is -32602 naming it, never ignored.  The tracers'
answers are JSON values already (each tracer's own format), passed through.
"""

import re
from collections.abc import Iterable
from dataclasses import replace
from functools import partial
from typing import Any

from nodex.api.chain import IChainService
from nodex.api.conventions import REFERENCE_CONVENTIONS, Conventions
from nodex.api.errors import BlockNotFoundError
from nodex.api.mining import IPendingBlock
from nodex.api.tracing import (
    CALL_TRACER,
    GETH_STRUCT_LOGGER,
    PRESTATE_TRACER,
    STRUCT_LOGGER,
    STRUCT_LOGGERS,
    TRACER_NAMES,
    ITracingService,
    TraceConfig,
    TraceFilter,
)
from nodex.rpc import decoders
from nodex.rpc.blockref import header_at, require_block, resolve_block, tag_number
from nodex.rpc.decoders import BlockParameter, BlockSelector, BlockTag, DecodeError, Field
from nodex.rpc.registry import Method, Param
from nodex.rpc.state_methods import call_request, state_overrides
from nodex.structures.blocks import Block

_TRACERS = {name.lower(): name for name in TRACER_NAMES}

_STRUCT_LOG_OPTIONS = {
    "disableStack": "disable_stack",
    "disableMemory": "disable_memory",
    "disableStorage": "disable_storage",
    "enableReturnData": "enable_return_data",
}
"""The default tracer's boolean options and the L{TraceConfig} members they set."""

_TRACER_CONFIG = {
    CALL_TRACER: {"onlyTopCall": "only_top_call", "withLog": "with_log"},
    PRESTATE_TRACER: {"diffMode": "diff_mode"},
}
"""The C{tracerConfig} members each named tracer has."""

_DURATION = re.compile(r"(\d+(?:\.\d*)?)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def duration(value: Any) -> float:
    """
    A Go duration string (C{"5s"}, C{"300ms"}, C{"1m30s"}) in seconds.
    """
    text = decoders.string(value)
    position = 0
    seconds = 0.0
    for match in _DURATION.finditer(text):
        if match.start() != position:
            break
        seconds += float(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    if not text or position != len(text):
        raise DecodeError(f'invalid duration "{text[:40]}": want a number and a unit, as in "5s" or "300ms"')
    return seconds


def _limit(value: Any) -> int:
    """
    The struct logger's C{limit}: a non-negative JSON integer.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise DecodeError(f"limit: want a non-negative integer, got {str(value)[:40]}")
    return value


def trace_options(value: Any, call: bool = False, default: str = STRUCT_LOGGER) -> TraceConfig:
    """
    Decode the trace options object of C{debug_trace*} (geth's
    C{TraceConfig}; with C{call}, C{debug_traceCall}'s, which adds
    C{stateOverrides}).

    @param default: the tracer when none is named: the reference's struct
        logger, or geth's under the Ethereum conventions.
    @raise DecodeError: an unknown tracer, option or C{tracerConfig} member,
        or one that does not belong to the chosen tracer.
    """
    if not isinstance(value, dict):
        raise DecodeError("want an object of trace options")
    name = value.get("tracer")
    if name is None or name == "":
        tracer = default
    else:
        tracer = _TRACERS.get(decoders.string(name).lower(), "")
        if not tracer:
            raise DecodeError(f'unknown tracer "{str(name)[:60]}"; the tracers are {", ".join(TRACER_NAMES)}')
    fields: dict[str, Any] = {"tracer": tracer}
    raw_config = value.get("tracerConfig")
    if raw_config is not None and not isinstance(raw_config, dict):
        raise DecodeError('"tracerConfig": want an object')
    tracer_config = dict(raw_config or {})
    for key, item in value.items():
        if key in ("tracer", "tracerConfig") or item is None:
            continue
        if key in _STRUCT_LOG_OPTIONS or key in ("enableMemory", "limit"):
            if tracer not in STRUCT_LOGGERS:
                raise DecodeError(f'option "{key}" applies only to the struct loggers, not {tracer}')
            if key == "limit":
                fields["limit"] = _limit(item)
            elif key == "enableMemory":
                fields["enable_memory"] = decoders.boolean(item)
                fields["disable_memory"] = not fields["enable_memory"]
            else:
                fields[_STRUCT_LOG_OPTIONS[key]] = decoders.boolean(item)
        elif key == "timeout":
            fields["timeout"] = duration(item)
        elif key == "stateOverrides" and call:
            fields["state_overrides"] = state_overrides(item)
        elif tracer == CALL_TRACER and key in _TRACER_CONFIG[CALL_TRACER]:
            # The reference also takes the call tracer's options at the top level.
            tracer_config.setdefault(key, item)
        else:
            raise DecodeError(f'unknown trace option "{str(key)[:60]}"')
    allowed = _TRACER_CONFIG.get(tracer, {})
    for key, item in tracer_config.items():
        if key not in allowed:
            raise DecodeError(f'unknown tracerConfig member "{str(key)[:60]}" for {tracer}')
        if item is not None:
            fields[allowed[key]] = decoders.boolean(item)
    return TraceConfig(**fields)


def call_trace_options(value: Any, default: str = STRUCT_LOGGER) -> TraceConfig:
    """
    C{debug_traceCall}'s options: L{trace_options} with C{stateOverrides}.
    """
    return trace_options(value, call=True, default=default)


def _count(value: Any) -> int:
    """
    C{trace_filter}'s C{after} and C{count}: a JSON integer, as Parity and
    Erigon take them, or a QUANTITY.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise DecodeError(f"want a non-negative integer, got {value}")
        return value
    return decoders.uint64(value)


def _block_or_hash(value: Any) -> BlockParameter | bytes:
    """
    C{trace_block}'s parameter: a block hash, a number or a tag.
    """
    if isinstance(value, str) and len(value) == 66:
        return decoders.hash32(value)
    return decoders.block_parameter(value)


def _bound(value: Any) -> int | BlockTag | None:
    """
    A C{trace_filter} block bound: a number, C{earliest} (0),
    C{latest}/C{pending} (the head, L{None}), or C{safe}/C{finalized}
    (resolved by L{TraceMethods.trace_filter}).
    """
    decoded = decoders.block_parameter(value)
    if decoded is BlockTag.EARLIEST:
        return 0
    if decoded is BlockTag.SAFE or decoded is BlockTag.FINALIZED:
        return decoded
    if isinstance(decoded, BlockTag):
        return None
    return decoded


trace_filter_object = decoders.record(
    {
        "fromBlock": Field(_bound),
        "toBlock": Field(_bound),
        "fromAddress": Field(decoders.array_of(decoders.address, 1000)),
        "toAddress": Field(decoders.array_of(decoders.address, 1000)),
        "after": Field(_count),
        "count": Field(_count),
    },
    allow_unknown=False,
)


def trace_filter(value: Any) -> TraceFilter:
    """
    Decode C{trace_filter}'s query object (unknown members refused).
    """
    fields = trace_filter_object(value)
    return TraceFilter(
        from_block=fields.get("fromBlock", 0),
        to_block=fields.get("toBlock"),
        from_addresses=frozenset(fields.get("fromAddress", ())),
        to_addresses=frozenset(fields.get("toAddress", ())),
        after=fields.get("after", 0),
        count=fields.get("count"),
    )


class TraceMethods:
    """
    The C{debug_trace*} and C{trace_*} methods over a tracing service.
    """

    def __init__(
        self,
        chain: IChainService,
        tracing: ITracingService,
        pending: IPendingBlock | None = None,
        conventions: Conventions = REFERENCE_CONVENTIONS,
    ) -> None:
        """
        @param chain: resolves block parameters.
        @param tracing: runs the traces.
        @param pending: the block C{debug_traceCall} at C{pending} runs in.
        @param conventions: whose struct logger is the default tracer (the
            reference's, or geth's under the Ethereum conventions).
        """
        self._chain = chain
        self._tracing = tracing
        self._pending = pending
        self._default_tracer = GETH_STRUCT_LOGGER if conventions.ethereum else STRUCT_LOGGER

    def rpc_methods(self) -> Iterable[Method]:
        """
        The methods of the C{debug} and C{trace} modules.
        """
        default = self._default_tracer
        options = Param("options", partial(trace_options, default=default), TraceConfig(tracer=default))
        return [
            Method("debug_traceTransaction", self.debug_trace_transaction, (Param("hash", decoders.hash32), options)),
            Method("debug_traceBlockByHash", self.debug_trace_block_by_hash, (Param("hash", decoders.hash32), options)),
            Method(
                "debug_traceBlockByNumber",
                self.debug_trace_block_by_number,
                (Param("block", decoders.block_parameter), options),
            ),
            Method(
                "debug_traceCall",
                self.debug_trace_call,
                (
                    Param("call", call_request),
                    Param("block", decoders.block_selector, BlockTag.LATEST),
                    Param("options", partial(call_trace_options, default=default), TraceConfig(tracer=default)),
                ),
            ),
            Method("trace_transaction", self.trace_transaction, (Param("hash", decoders.hash32),)),
            Method("trace_block", self.trace_block, (Param("block", _block_or_hash),)),
            Method("trace_filter", self.trace_filter, (Param("filter", trace_filter),)),
        ]

    async def debug_trace_transaction(self, tx_hash: bytes, config: TraceConfig) -> Any:
        """
        C{debug_traceTransaction}.
        """
        return await self._tracing.trace_transaction(tx_hash, config)

    async def debug_trace_block_by_hash(self, block_hash: bytes, config: TraceConfig) -> Any:
        """
        C{debug_traceBlockByHash}: any stored block, canonical or not.

        @raise BlockNotFoundError: an unknown block (-32600, as every method
            that runs at a block answers).
        """
        if await self._chain.get_header_by_hash(block_hash) is None:
            raise BlockNotFoundError(f"Block with hash 0x{block_hash.hex()} not found")
        return await self._tracing.trace_block(block_hash, config)

    async def debug_trace_block_by_number(self, block: BlockParameter, config: TraceConfig) -> Any:
        """
        C{debug_traceBlockByNumber}: a canonical block by number or tag.
        """
        found = await require_block(self._chain, block)
        return await self._tracing.trace_block(found.hash, config)

    async def debug_trace_call(self, request: Any, block: BlockSelector, config: TraceConfig) -> Any:
        """
        C{debug_traceCall}: a call on the state after C{block}.
        """
        header = await header_at(self._chain, block, self._pending)
        return await self._tracing.trace_call(header, request, config)

    async def trace_transaction(self, tx_hash: bytes) -> Any:
        """
        C{trace_transaction}: the flat traces, or C{null} for an unknown hash.
        """
        return await self._tracing.parity_transaction(tx_hash)

    async def trace_block(self, block: BlockParameter | bytes) -> Any:
        """
        C{trace_block}: the flat traces of a block by hash, number or tag,
        or C{null} for an unknown block.
        """
        found: Block | None
        if isinstance(block, bytes):
            found = await self._chain.get_block_by_hash(block)
        else:
            found = await resolve_block(self._chain, block)
        if found is None:
            return None
        return await self._tracing.parity_block(found)

    async def trace_filter(self, query: TraceFilter) -> Any:
        """
        C{trace_filter}.
        """
        bounds = {}
        for name in ("from_block", "to_block"):
            bound = getattr(query, name)
            if isinstance(bound, BlockTag):
                bounds[name] = tag_number(self._chain, bound)
        return await self._tracing.parity_filter(replace(query, **bounds) if bounds else query)


__all__ = ["TraceMethods", "call_trace_options", "duration", "trace_filter", "trace_options"]
