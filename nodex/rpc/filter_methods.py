"""
The log methods of the C{eth} module: C{eth_getLogs} and the polled filters
(C{eth_newFilter}, C{eth_newBlockFilter}, C{eth_newPendingTransactionFilter},
C{eth_getFilterChanges}, C{eth_getFilterLogs}, C{eth_uninstallFilter}).

A filter object's C{fromBlock} and C{toBlock} default to C{latest}; a tag
C{latest} or C{pending} stays open, so that a live filter follows the head,
and C{earliest} is block 0.  C{blockHash} (EIP-234) excludes both bounds and
is refused by C{eth_newFilter}.  Filter ids are QUANTITYs.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from nodex.api.chain import IChainService
from nodex.api.filters import IFilterService, LogEntry, LogFilter
from nodex.primitives import Hash32
from nodex.rpc import decoders, encoders
from nodex.rpc.blockref import tag_number
from nodex.rpc.client import current_client
from nodex.rpc.decoders import BlockParameter, BlockTag, DecodeError, Field
from nodex.rpc.registry import Method, Param
from nodex.structures.logs import MAX_TOPICS


def _topic_position(value: Any) -> tuple[Hash32, ...] | None:
    """
    One position of C{topics}: C{null} (anything), a topic, or an array of
    alternatives (an empty array also matches anything).
    """
    if value is None:
        return None
    if isinstance(value, list):
        return tuple(decoders.array_of(decoders.hash32)(value))
    return (decoders.hash32(value),)


def _topics(value: Any) -> tuple[tuple[Hash32, ...] | None, ...]:
    """
    The C{topics} member: up to four positions.
    """
    if not isinstance(value, list):
        raise DecodeError("want an array of topics")
    if len(value) > MAX_TOPICS:
        raise DecodeError(f"a filter has at most {MAX_TOPICS} topic positions, got {len(value)}")
    positions = []
    for index, position in enumerate(value):
        try:
            positions.append(_topic_position(position))
        except DecodeError as exc:
            raise DecodeError(f"topic position {index}: {exc}") from None
    return tuple(positions)


filter_object = decoders.record(
    {
        "fromBlock": Field(decoders.block_parameter),
        "toBlock": Field(decoders.block_parameter),
        "address": Field(decoders.one_or_many(decoders.address)),
        "topics": Field(_topics),
        "blockHash": Field(decoders.hash32),
        # The specification's field list spells it so (its prose, EIP-234 and
        # every client write blockHash): both are taken.
        "blockhash": Field(decoders.hash32),
    },
    allow_unknown=False,
)
"""The filter options object (unknown members refused, so that a misspelt C{fromblock} is not silently ignored)."""


@dataclass(frozen=True)
class FilterQuery:
    """
    A decoded filter options object.

    @ivar from_block: a number, L{None} for the head (C{latest}, C{pending}),
        or C{safe}/C{finalized} (resolved by the method).
    @ivar to_block: likewise.
    @ivar block_hash: the EIP-234 block, or L{None}.
    """

    log_filter: LogFilter
    from_block: int | BlockTag | None = None
    to_block: int | BlockTag | None = None
    block_hash: Hash32 | None = None


def _bound(value: BlockParameter | None) -> int | BlockTag | None:
    """
    A block bound: a number, C{earliest} = 0, C{latest} and C{pending} (and
    absence) open; C{safe} and C{finalized} stay tags until the method
    resolves them against the head (L{FilterMethods}).
    """
    if value is None or value is BlockTag.LATEST or value is BlockTag.PENDING:
        return None
    if value is BlockTag.EARLIEST:
        return 0
    return value


def filter_query(value: Any) -> FilterQuery:
    """
    Decode a filter options object.

    @raise DecodeError: a malformed member, or C{blockHash} with a bound.
    """
    fields = filter_object(value)
    if "blockhash" in fields:
        if "blockHash" in fields and fields["blockHash"] != fields["blockhash"]:
            raise DecodeError("blockHash and blockhash name different blocks")
        fields["blockHash"] = fields.pop("blockhash")
    if "blockHash" in fields and ("fromBlock" in fields or "toBlock" in fields):
        raise DecodeError("Cannot specify both blockHash and fromBlock/toBlock")
    log_filter = LogFilter(tuple(fields.get("address", ())), fields.get("topics", ()))
    return FilterQuery(log_filter, _bound(fields.get("fromBlock")), _bound(fields.get("toBlock")), fields.get("blockHash"))


def new_filter_query(value: Any) -> FilterQuery:
    """
    The filter options of C{eth_newFilter}, where C{blockHash} is not allowed.
    """
    query = filter_query(value)
    if query.block_hash is not None:
        raise DecodeError("blockHash is only allowed in eth_getLogs")
    return query


def log_entry_object(entry: LogEntry) -> dict[str, Any]:
    """
    A log object: C{removed}, then the members of reference §4.4's order as
    L{nodex.rpc.objects.log_object} writes them.
    """
    log = entry.log
    return {
        "removed": entry.removed,
        "logIndex": hex(entry.log_index),
        "transactionIndex": hex(entry.transaction_index),
        "transactionHash": "0x" + entry.transaction_hash.hex(),
        "blockHash": "0x" + entry.block_hash.hex(),
        "blockNumber": hex(entry.block_number),
        "address": "0x" + log.address.hex(),
        "data": "0x" + log.data.hex(),
        "topics": ["0x" + topic.hex() for topic in log.topics],
    }


def change_object(change: LogEntry | bytes) -> Any:
    """
    One element of a filter's changes: a log object, or a block or transaction hash.
    """
    if isinstance(change, LogEntry):
        return log_entry_object(change)
    return "0x" + change.hex()


filter_id = decoders.quantity
"""A filter id: a QUANTITY (random 128-bit numbers, so they are never small)."""


class FilterMethods:
    """
    C{eth_getLogs} and the filter methods.
    """

    def __init__(self, filters: IFilterService, chain: IChainService | None = None) -> None:
        """
        @param filters: the filter service.
        @param chain: resolves C{safe} and C{finalized} bounds (without it
            they are the head, as on regtest).
        """
        self._filters = filters
        self._chain = chain

    def _number(self, bound: int | BlockTag | None) -> int | None:
        """
        A bound as the filter service takes it: C{safe} and C{finalized} resolved now.
        """
        if not isinstance(bound, BlockTag):
            return bound
        if self._chain is None:
            return None
        return tag_number(self._chain, bound)

    def rpc_methods(self) -> Iterable[Method]:
        """
        The log and filter methods of the C{eth} module.
        """
        logs = encoders.array_of(log_entry_object)
        changes = encoders.array_of(change_object)
        identifier = Param("filterId", filter_id)
        return [
            Method("eth_getLogs", self.get_logs, (Param("filter", filter_query),), logs),
            Method("eth_newFilter", self.new_filter, (Param("filter", new_filter_query),), encoders.quantity),
            Method("eth_newBlockFilter", self.new_block_filter, (), encoders.quantity),
            Method("eth_newPendingTransactionFilter", self.new_pending_transaction_filter, (), encoders.quantity),
            Method("eth_getFilterChanges", self._filters.get_filter_changes, (identifier,), changes),
            Method("eth_getFilterLogs", self._filters.get_filter_logs, (identifier,), changes),
            Method("eth_uninstallFilter", self._filters.uninstall_filter, (identifier,)),
        ]

    async def get_logs(self, query: FilterQuery) -> list[LogEntry]:
        """
        C{eth_getLogs}: the selected logs of a range or of one block.
        """
        if query.block_hash is not None:
            return await self._filters.get_block_logs(query.block_hash, query.log_filter)
        return await self._filters.get_logs(
            self._number(query.from_block), self._number(query.to_block), query.log_filter
        )

    def new_filter(self, query: FilterQuery) -> int:
        """
        C{eth_newFilter}: install a log filter, for the client that asks
        (C{safe} and C{finalized} bounds are the blocks they name at install).
        """
        return self._filters.new_log_filter(
            self._number(query.from_block), self._number(query.to_block), query.log_filter, current_client()
        )

    def new_block_filter(self) -> int:
        """
        C{eth_newBlockFilter}, for the client that asks.
        """
        return self._filters.new_block_filter(current_client())

    def new_pending_transaction_filter(self) -> int:
        """
        C{eth_newPendingTransactionFilter}, for the client that asks.
        """
        return self._filters.new_pending_transaction_filter(current_client())


__all__ = ["FilterMethods", "FilterQuery", "filter_query", "log_entry_object", "new_filter_query"]
