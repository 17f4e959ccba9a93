"""
The filter service (L5): C{eth_getLogs} and the polled filters of
C{eth_newFilter}, C{eth_newBlockFilter} and C{eth_newPendingTransactionFilter}.

Filters live in memory under random 128-bit ids (so that one client cannot
guess another's) and expire when nobody polls them for five minutes, on the
injected clock.  They observe the chain and the pool on the reactor thread:
a log filter gathers every matching log of each block that becomes
canonical, and the logs of blocks that leave the canonical chain again with
C{removed} set, until the next poll takes them; nothing is lost between
polls.  Searches over stored blocks run in the reader pool.
"""

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from twisted.application.service import Service
from twisted.internet.defer import Deferred, fail, succeed
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger
from zope.interface import implementer

from nodex.chain.logsearch import (
    BlockLogCache,
    BlockRangeTooLargeError,
    FilterNotFoundError,
    LogEntry,
    LogFilter,
    LogLimitError,
    LogQueryError,
    block_log_entries,
    search_logs,
    stored_block_log_entries,
    warm_block_log_cache,
)
from nodex.db.kv import KeyValueStore
from nodex.db.schema import read_header_rlp
from nodex.interfaces import BlockNotFoundError, ChainEvent, IChainService, IFilterService, ITransactionPool
from nodex.primitives import Hash32
from nodex.services.threads import RunInThread
from nodex.structures.blocks import Block
from nodex.structures.headers import Header
from nodex.structures.receipts import Receipt
from nodex.structures.transactions import Transaction

FILTER_EXPIRY = 300.0
"""Seconds without a poll after which a filter is forgotten (DESIGN §1)."""

MAX_FILTERS = 10_000
"""The most filters installed at once (each holds memory until it expires)."""

MAX_HISTORY = 10_000
"""The most hashes a block or pending-transaction filter keeps for C{eth_getFilterLogs}."""

SEARCH_TIME_LIMIT = 5.0
"""Seconds a log search may take (the reference's C{rpc.timeout})."""

CACHED_BLOCKS = 4096
"""
The most blocks whose walked logs the service keeps (also bounded by their
receipts' bytes), and how many of the newest it walks when it starts.
"""

_log = Logger()

LOGS, BLOCKS, PENDING = "logs", "blocks", "pending"


@dataclass
class _Filter:
    """
    One installed filter.

    @ivar kind: L{LOGS}, L{BLOCKS} or L{PENDING}.
    @ivar last_poll: when it was installed or last polled, on the clock.
    @ivar changes: what it gathered since the last poll.
    @ivar history: for hash filters, every hash since install (bounded).
    """

    kind: str
    last_poll: float
    log_filter: LogFilter = field(default_factory=LogFilter)
    from_block: int | None = None
    to_block: int | None = None
    changes: list[Any] = field(default_factory=list)
    history: list[Hash32] = field(default_factory=list)

    def covers(self, number: int) -> bool:
        """
        Whether block C{number} is inside the filter's range (an open end follows the head).
        """
        return (self.from_block is None or number >= self.from_block) and (
            self.to_block is None or number <= self.to_block
        )


@implementer(IFilterService)
class FilterService(Service):
    """
    Log searches and installed filters over one chain.
    """

    def __init__(
        self,
        store: KeyValueStore,
        chain: IChainService,
        pool: ITransactionPool | None,
        run_in_thread: RunInThread,
        clock: IReactorTime,
        max_block_range: int | None = None,
        max_logs: int | None = None,
        random_bits: Callable[[int], int] = secrets.randbits,
        time_limit: float = SEARCH_TIME_LIMIT,
    ) -> None:
        """
        Start observing C{chain} and C{pool}.

        @param store: the chain's store, searched in the reader pool.
        @param run_in_thread: runs a function in the reader pool.
        @param clock: the time of polls and expiry.
        @param max_block_range: the most blocks (C{to - from}) a search
            spans, or L{None} for no limit (reference §8).
        @param max_logs: the most logs a search returns, or L{None}.
        @param random_bits: draws the random ids (tests fix it).
        @param time_limit: seconds a search may take before it gives up
            (the thread stops reading, the client gets -32011).
        """
        self._store = store
        self._chain = chain
        self._run_in_thread = run_in_thread
        self._clock = clock
        self._max_block_range = max_block_range
        self._max_logs = max_logs
        self._random_bits = random_bits
        self._time_limit = time_limit
        self._filters: dict[int, _Filter] = {}
        self._cache = BlockLogCache(size=CACHED_BLOCKS)
        chain.add_observer(self._chain_changed)
        if pool is not None:
            pool.add_observer(self._transaction_pending)

    def startService(self) -> None:
        """
        Walk the newest stored blocks with logs into the cache, in the
        reader pool: searches of recent blocks, what dapps ask for, find
        them walked from the start.  (Not before the node starts: the store
        opens then.)
        """
        super().startService()
        warming = self._run_in_thread(
            warm_block_log_cache, self._store, self._chain.head.header.number, self._cache, CACHED_BLOCKS
        )
        warming.addErrback(lambda failure: _log.failure("warming the cache of block logs failed", failure))

    # Searches

    def _bounds(self, from_block: int | None, to_block: int | None) -> tuple[int, int]:
        """
        The numeric range of a search, open ends at the head; empty (first
        above last) when C{from_block} is above the head and C{to_block} is
        open, as when a client polls from the block after the last it saw.

        @raise LogQueryError: a numeric C{from_block} above a numeric C{to_block}.
        @raise BlockRangeTooLargeError: a range beyond the limit.
        """
        head = self._chain.head.header.number
        if from_block is not None and to_block is not None and from_block > to_block:
            raise LogQueryError(f"invalid block range: fromBlock {from_block} is greater than toBlock {to_block}")
        first = head if from_block is None else from_block
        last = head if to_block is None else to_block
        if self._max_block_range is not None and min(last, head) - first > self._max_block_range:
            raise BlockRangeTooLargeError(self._max_block_range)
        return first, min(last, head)

    def get_logs(self, from_block: int | None, to_block: int | None, log_filter: LogFilter) -> Deferred[list[LogEntry]]:
        """
        The selected logs of the canonical blocks C{from_block} to C{to_block}.

        @param from_block: a number, or L{None} for the head.
        @param to_block: a number, or L{None} for the head.
        @return: a Deferred firing with the entries in chain order, or
            failing with L{LogQueryError}, L{BlockRangeTooLargeError} or
            L{nodex.chain.logsearch.TooManyLogsError}.
        """
        try:
            first, last = self._bounds(from_block, to_block)
        except LogQueryError as exc:
            return fail(exc)
        if first > last:
            return succeed([])
        deadline = self._clock.seconds() + self._time_limit
        clock = self._clock

        def expired() -> bool:
            """
            Whether the search's time is up (read from the reader thread).
            """
            return clock.seconds() > deadline

        return self._run_in_thread(
            search_logs, self._store, first, last, log_filter, self._max_logs, self._cache, expired
        )

    def get_block_logs(self, block_hash: bytes, log_filter: LogFilter) -> Deferred[list[LogEntry]]:
        """
        The selected logs of the stored block C{block_hash} (EIP-234).

        @return: a Deferred firing with the entries, or failing with
            L{BlockNotFoundError} for an unknown hash.
        """
        return self._run_in_thread(self._thd_block_logs, Hash32(block_hash), log_filter)

    def _thd_block_logs(self, block_hash: Hash32, log_filter: LogFilter) -> list[LogEntry]:
        """
        Read one block's logs in the reader pool.
        """
        header_rlp = read_header_rlp(self._store, block_hash)
        if header_rlp is None:
            raise BlockNotFoundError(f"Block with hash 0x{block_hash.hex()} not found")
        number = Header.decode(header_rlp).number
        return stored_block_log_entries(self._store, block_hash, number, log_filter, cache=self._cache)

    # Installing and polling

    def _install(self, new: _Filter) -> int:
        """
        Keep C{new} under a fresh random id and return the id.

        @raise LogLimitError: L{MAX_FILTERS} filters are installed.
        """
        self._sweep()
        if len(self._filters) >= MAX_FILTERS:
            raise LogLimitError(f"too many filters installed (at most {MAX_FILTERS}); uninstall some or let them expire")
        while True:
            filter_id = self._random_bits(128)
            if filter_id and filter_id not in self._filters:
                break
        self._filters[filter_id] = new
        return filter_id

    def new_log_filter(self, from_block: int | None, to_block: int | None, log_filter: LogFilter) -> int:
        """
        Install a log filter over C{from_block} .. C{to_block} (L{None}: follow the head).

        @raise LogQueryError: fixed bounds in the wrong order.
        @return: the filter id.
        """
        if from_block is not None and to_block is not None and from_block > to_block:
            raise LogQueryError(f"invalid block range: fromBlock {from_block} is greater than toBlock {to_block}")
        return self._install(_Filter(LOGS, self._clock.seconds(), log_filter, from_block, to_block))

    def new_block_filter(self) -> int:
        """
        Install a filter of the hashes of blocks that become canonical.
        """
        return self._install(_Filter(BLOCKS, self._clock.seconds()))

    def new_pending_transaction_filter(self) -> int:
        """
        Install a filter of the hashes of transactions that become pending.
        """
        return self._install(_Filter(PENDING, self._clock.seconds()))

    def _poll(self, filter_id: int) -> _Filter:
        """
        The live filter C{filter_id}, its expiry restarted.

        @raise FilterNotFoundError: unknown, uninstalled or expired.
        """
        self._sweep()
        installed = self._filters.get(filter_id)
        if installed is None:
            raise FilterNotFoundError()
        installed.last_poll = self._clock.seconds()
        return installed

    def get_filter_changes(self, filter_id: int) -> list[Any]:
        """
        Everything the filter gathered since the previous poll: L{LogEntry}s
        for a log filter, hashes for the others.

        @raise FilterNotFoundError: unknown, uninstalled or expired.
        """
        installed = self._poll(filter_id)
        changes, installed.changes = installed.changes, []
        return changes

    def get_filter_logs(self, filter_id: int) -> Deferred[list[Any]]:
        """
        For a log filter, every log it selects in its range now; for the
        others, every hash seen since install (reference §8).

        @return: a Deferred firing with the list, or failing with L{FilterNotFoundError}.
        """
        try:
            installed = self._poll(filter_id)
        except FilterNotFoundError as exc:
            return fail(exc)
        if installed.kind != LOGS:
            return succeed(list(installed.history))
        return self.get_logs(installed.from_block, installed.to_block, installed.log_filter)

    def uninstall_filter(self, filter_id: int) -> bool:
        """
        Remove a filter.

        @return: whether it was installed (and not expired).
        """
        self._sweep()
        return self._filters.pop(filter_id, None) is not None

    def _sweep(self) -> None:
        """
        Forget the filters nobody polled for L{FILTER_EXPIRY} seconds.
        """
        deadline = self._clock.seconds() - FILTER_EXPIRY
        for filter_id in [key for key, value in self._filters.items() if value.last_poll <= deadline]:
            del self._filters[filter_id]

    # Observing

    def _chain_changed(self, event: ChainEvent) -> None:
        """
        Deliver a change of the canonical chain: removed logs of abandoned
        blocks, then the logs and hashes of adopted ones.
        """
        self._sweep()
        for index, block in enumerate(event.abandoned):
            self._deliver_logs(block, _receipts(event.abandoned_receipts, index), removed=True)
        for index, block in enumerate(event.adopted):
            self._deliver_logs(block, _receipts(event.adopted_receipts, index), removed=False)
            self._deliver_hash(BLOCKS, block.hash)

    def _deliver_logs(self, block: Block, receipts: tuple[Receipt, ...], removed: bool) -> None:
        """
        Add one block's matching logs to every log filter whose range covers it.
        """
        hashes: list[Hash32] | None = None
        for installed in self._filters.values():
            if installed.kind != LOGS or not installed.covers(block.number):
                continue
            if hashes is None:
                hashes = [transaction.hash for transaction in block.transactions]
            installed.changes.extend(
                block_log_entries(block.hash, block.number, hashes, receipts, installed.log_filter, removed)
            )

    def _deliver_hash(self, kind: str, value: Hash32) -> None:
        """
        Add a hash to every filter of C{kind}.
        """
        for installed in self._filters.values():
            if installed.kind == kind:
                installed.changes.append(value)
                installed.history.append(value)
                if len(installed.history) > MAX_HISTORY:
                    del installed.history[0]

    def _transaction_pending(self, transaction: Transaction) -> None:
        """
        Deliver a newly pending transaction's hash.
        """
        self._sweep()
        self._deliver_hash(PENDING, transaction.hash)


def _receipts(receipts: tuple[tuple[Receipt, ...], ...], index: int) -> tuple[Receipt, ...]:
    """
    The receipts of the block at C{index} of an event, or none if the event lacks them.
    """
    return receipts[index] if index < len(receipts) else ()


__all__ = ["FILTER_EXPIRY", "MAX_FILTERS", "MAX_HISTORY", "SEARCH_TIME_LIMIT", "FilterService"]
