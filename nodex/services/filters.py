"""
The filter service (L5): C{eth_getLogs} and the polled filters of
C{eth_newFilter}, C{eth_newBlockFilter} and C{eth_newPendingTransactionFilter}.

Filters live in memory under random 128-bit ids (so that one client cannot
guess another's) and expire when nobody polls their changes for five
minutes, on the injected clock.  They observe the chain and the pool on the
reactor thread: a log filter gathers every matching log of each block that
becomes canonical, and the logs of blocks that leave the canonical chain
again with C{removed} set, until the next poll takes them; nothing is lost
between polls.  Searches over stored blocks run in the reader pool.

What keeps many filters cheap (issue 26): a block's logs are matched once
against an index of all the log filters (L{nodex.chain.logs.match}), each
log's entry is built once and shared, and the delivery runs in slices of
the reactor's time (L{nodex.services.slices}); the block and pending hashes
go to one feed per kind that every hash filter reads from its own position.
What keeps each filter bounded: at most L{MAX_PENDING_CHANGES} unread
changes (beyond, the filter is removed and its next poll says so), at most
L{MAX_FILTERS_PER_CLIENT} filters per client, L{MAX_FILTERS} in all.
"""

import secrets
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterator
from itertools import islice
from typing import Any

from twisted.application.service import Service
from twisted.internet.defer import Deferred, fail, succeed
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger
from zope.interface import implementer

from nodex.chain.logs.search import (
    BlockLogCache,
    BlockRangeTooLargeError,
    FilterNotFoundError,
    LogEntry,
    LogFilter,
    LogLimitError,
    LogQueryError,
    search_logs,
    stored_block_log_entries,
    warm_block_log_cache,
)
from nodex.chain.logs.match import LogFilterIndex
from nodex.db.kv import KeyValueStore
from nodex.db.schema import read_header_rlp
from nodex.api.chain import ChainEvent, IChainService
from nodex.api.errors import BlockNotFoundError
from nodex.api.filters import IFilterService
from nodex.api.pool import ITransactionPool
from nodex.primitives import Hash32
from nodex.services.slices import SliceRunner
from nodex.services.threads import RunInThread
from nodex.structures.blocks import Block
from nodex.structures.headers import Header
from nodex.structures.receipts import Receipt
from nodex.structures.transactions import Transaction

FILTER_EXPIRY = 300.0
"""Seconds without a poll after which a filter is forgotten (DESIGN §1)."""

MAX_FILTERS = 10_000
"""The most filters installed at once, by all clients."""

MAX_FILTERS_PER_CLIENT = 1_000
"""
The most filters one client (an HTTP client's address, a WebSocket
connection) keeps installed at once (C{rpc.max_filters_per_client}).
"""

MAX_PENDING_CHANGES = 10_000
"""
The most logs, or hashes, waiting in one filter for its next poll.  A
filter that would hold more is removed, and its next poll says why
(L{FilterOverflowError}): nothing is dropped silently, and the client
knows to read the missed blocks with C{eth_getLogs}.
"""

MAX_HISTORY = 10_000
"""The most hashes a block or pending-transaction filter keeps for C{eth_getFilterLogs}."""

SEARCH_TIME_LIMIT = 5.0
"""Seconds a log search may take (the reference's C{rpc.timeout})."""

CACHED_BLOCKS = 4096
"""
The most blocks whose walked logs the service keeps (also bounded by their
receipts' bytes), and how many of the newest it walks when it starts.
"""

_MEMBERS_PER_STEP = 256
"""Filters served between two looks at the slice's clock (L{SliceRunner})."""

_log = Logger()

LOGS, BLOCKS, PENDING = "logs", "blocks", "pending"


class FilterOverflowError(FilterNotFoundError):
    """
    A filter was removed because more changes waited in it than
    L{MAX_PENDING_CHANGES} (answered once, at its next poll; RPC code -32000).
    """

    def __init__(self, filter_id: int, limit: int) -> None:
        LogQueryError.__init__(
            self,
            f"filter 0x{filter_id:x} was removed: more than {limit} changes waited unread in it; "
            "install a new filter, and read the blocks since its last poll with eth_getLogs",
        )


class _HashFeed:
    """
    The latest L{MAX_HISTORY} hashes of one kind (new blocks, new pending
    transactions), numbered in arrival order: every filter of the kind
    reads the same feed from its own position, so a hash costs the same
    however many filters wait for it.
    """

    def __init__(self, size: int) -> None:
        self._hashes: deque[Hash32] = deque(maxlen=size)
        self.next = 0

    @property
    def first(self) -> int:
        """
        The number of the oldest hash still kept.
        """
        return self.next - len(self._hashes)

    def append(self, value: Hash32) -> None:
        """
        Add the next hash (the oldest goes beyond the size).
        """
        self._hashes.append(value)
        self.next += 1

    def since(self, position: int) -> list[Hash32]:
        """
        The hashes from number C{position} on (those still kept).
        """
        skip = max(position - self.first, 0)
        return list(islice(self._hashes, skip, None))


class _Filter:
    """
    One installed filter.

    @ivar kind: L{LOGS}, L{BLOCKS} or L{PENDING}.
    @ivar last_poll: when it was installed or last polled, on the clock.
    @ivar owner: the client that installed it (its quota), or L{None}.
    @ivar chunks: for a log filter, the entries gathered since the last
        poll, a list per block (shared with the other filters that got the
        same entries).
    @ivar pending: how many entries the chunks hold.
    @ivar position: for a hash filter, the feed number of its next change.
    @ivar installed: for a hash filter, the feed number at install.
    """

    __slots__ = (
        "kind", "last_poll", "owner", "log_filter", "from_block", "to_block", "chunks", "pending", "position",
        "installed",
    )

    def __init__(
        self,
        kind: str,
        last_poll: float,
        owner: Hashable | None,
        log_filter: LogFilter | None = None,
        from_block: int | None = None,
        to_block: int | None = None,
        position: int = 0,
    ) -> None:
        self.kind = kind
        self.last_poll = last_poll
        self.owner = owner
        self.log_filter = log_filter
        self.from_block = from_block
        self.to_block = to_block
        self.chunks: list[list[LogEntry]] = []
        self.pending = 0
        self.position = position
        self.installed = position

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
        max_filters_per_client: int = MAX_FILTERS_PER_CLIENT,
        runner: SliceRunner | None = None,
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
        @param max_filters_per_client: the most filters one client (the
            C{owner} of L{new_log_filter} and the others) keeps installed.
        @param runner: runs the deliveries in slices of the reactor's time
            (the node shares one with the subscriptions, so that a block's
            deliveries take one slice at a time in all); by default its own.
        """
        self._store = store
        self._chain = chain
        self._run_in_thread = run_in_thread
        self._clock = clock
        self._max_block_range = max_block_range
        self._max_logs = max_logs
        self._random_bits = random_bits
        self._time_limit = time_limit
        self._max_per_client = max_filters_per_client
        # By last poll, oldest first: expiry looks only at the front.
        self._filters: OrderedDict[int, _Filter] = OrderedDict()
        self._owners: dict[Hashable, int] = {}
        self._overflowed: OrderedDict[int, float] = OrderedDict()
        self._index = LogFilterIndex()
        self._feeds = {BLOCKS: _HashFeed(MAX_HISTORY), PENDING: _HashFeed(MAX_HISTORY)}
        self._runner = SliceRunner(clock) if runner is None else runner
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
            L{nodex.chain.logs.search.TooManyLogsError}.
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

    def stopService(self) -> None:
        """
        Drop the deliveries still waiting for the reactor.
        """
        self._runner.stop()
        super().stopService()

    # Installing and polling

    def _install(self, new: _Filter) -> int:
        """
        Keep C{new} under a fresh random id and return the id.

        @raise LogLimitError: L{MAX_FILTERS} filters are installed, or the
            client's quota is full.
        """
        self._sweep()
        if len(self._filters) >= MAX_FILTERS:
            raise LogLimitError(f"too many filters installed (at most {MAX_FILTERS}); uninstall some or let them expire")
        owner = new.owner
        if owner is not None and self._owners.get(owner, 0) >= self._max_per_client:
            raise LogLimitError(
                f"this client has installed its limit of {self._max_per_client} filters;"
                " uninstall some or let them expire"
            )
        while True:
            filter_id = self._random_bits(128)
            if filter_id and filter_id not in self._filters and filter_id not in self._overflowed:
                break
        self._filters[filter_id] = new
        if owner is not None:
            self._owners[owner] = self._owners.get(owner, 0) + 1
        if new.kind == LOGS:
            assert new.log_filter is not None
            self._index.add(filter_id, new.log_filter)
        return filter_id

    def new_log_filter(
        self, from_block: int | None, to_block: int | None, log_filter: LogFilter, owner: Hashable | None = None
    ) -> int:
        """
        Install a log filter over C{from_block} .. C{to_block} (L{None}: follow the head).

        @param owner: the client that asks (its quota), if known.
        @raise LogQueryError: fixed bounds in the wrong order.
        @raise LogLimitError: too many filters (see L{_install}).
        @return: the filter id.
        """
        if from_block is not None and to_block is not None and from_block > to_block:
            raise LogQueryError(f"invalid block range: fromBlock {from_block} is greater than toBlock {to_block}")
        return self._install(_Filter(LOGS, self._clock.seconds(), owner, log_filter, from_block, to_block))

    def new_block_filter(self, owner: Hashable | None = None) -> int:
        """
        Install a filter of the hashes of blocks that become canonical.
        """
        return self._install(_Filter(BLOCKS, self._clock.seconds(), owner, position=self._feeds[BLOCKS].next))

    def new_pending_transaction_filter(self, owner: Hashable | None = None) -> int:
        """
        Install a filter of the hashes of transactions that become pending.
        """
        return self._install(_Filter(PENDING, self._clock.seconds(), owner, position=self._feeds[PENDING].next))

    def _lookup(self, filter_id: int, renew: bool) -> _Filter:
        """
        The live filter C{filter_id}, its expiry restarted if C{renew}.

        @raise FilterOverflowError: it was removed for its unread changes
            (said once).
        @raise FilterNotFoundError: unknown, uninstalled or expired.
        """
        self._sweep()
        installed = self._filters.get(filter_id)
        if installed is None:
            if self._overflowed.pop(filter_id, None) is not None:
                raise FilterOverflowError(filter_id, MAX_PENDING_CHANGES)
            raise FilterNotFoundError()
        if renew:
            installed.last_poll = self._clock.seconds()
            self._filters.move_to_end(filter_id)
        return installed

    def get_filter_changes(self, filter_id: int) -> list[Any]:
        """
        Everything the filter gathered since the previous poll: L{LogEntry}s
        for a log filter, hashes for the others.  It restarts the filter's
        expiry.

        @raise FilterNotFoundError: unknown, uninstalled or expired.
        @raise FilterOverflowError: more than L{MAX_PENDING_CHANGES} waited.
        """
        installed = self._lookup(filter_id, renew=True)
        if installed.kind == LOGS:
            chunks, installed.chunks, installed.pending = installed.chunks, [], 0
            return [entry for chunk in chunks for entry in chunk]
        feed = self._feeds[installed.kind]
        if installed.position < feed.first:
            self._remove(filter_id)
            raise FilterOverflowError(filter_id, MAX_PENDING_CHANGES)
        changes = feed.since(installed.position)
        installed.position = feed.next
        return changes

    def get_filter_logs(self, filter_id: int) -> Deferred[list[Any]]:
        """
        For a log filter, every log it selects in its range now; for the
        others, every hash seen since install (the latest L{MAX_HISTORY};
        reference §8).  Unlike a poll of its changes, this does not restart
        the filter's expiry (as geth), so a filter only ever read this way
        is forgotten five minutes after its install.

        @return: a Deferred firing with the list, or failing with L{FilterNotFoundError}.
        """
        try:
            installed = self._lookup(filter_id, renew=False)
        except FilterNotFoundError as exc:
            return fail(exc)
        if installed.kind != LOGS:
            return succeed(self._feeds[installed.kind].since(installed.installed))
        assert installed.log_filter is not None
        return self.get_logs(installed.from_block, installed.to_block, installed.log_filter)

    def uninstall_filter(self, filter_id: int) -> bool:
        """
        Remove a filter.

        @return: whether it was installed (and not expired).
        """
        self._sweep()
        self._overflowed.pop(filter_id, None)
        return self._remove(filter_id)

    def _remove(self, filter_id: int) -> bool:
        """
        Forget a filter: its entry, its index entry, its count in its client's quota.
        """
        installed = self._filters.pop(filter_id, None)
        if installed is None:
            return False
        owner = installed.owner
        if owner is not None:
            left = self._owners[owner] - 1
            if left:
                self._owners[owner] = left
            else:
                del self._owners[owner]
        if installed.kind == LOGS:
            self._index.remove(filter_id)
        return True

    def _sweep(self) -> None:
        """
        Forget the filters nobody polled for L{FILTER_EXPIRY} seconds (the
        oldest polls come first), and the notes of removed ones.
        """
        deadline = self._clock.seconds() - FILTER_EXPIRY
        filters = self._filters
        while filters:
            filter_id, oldest = next(iter(filters.items()))
            if oldest.last_poll > deadline:
                break
            self._remove(filter_id)
        overflowed = self._overflowed
        while overflowed and next(iter(overflowed.values())) <= deadline:
            overflowed.popitem(last=False)

    def _overflow(self, filter_id: int) -> None:
        """
        Remove a filter whose unread changes passed the limit, and note it
        for its next poll.
        """
        self._remove(filter_id)
        self._overflowed[filter_id] = self._clock.seconds()
        while len(self._overflowed) > MAX_FILTERS:
            self._overflowed.popitem(last=False)

    def count(self) -> int:
        """
        How many filters are installed.
        """
        return len(self._filters)

    # Observing

    def _chain_changed(self, event: ChainEvent) -> None:
        """
        A change of the canonical chain: the adopted blocks' hashes go to
        the block feed at once; the removed logs of abandoned blocks, then
        the logs of adopted ones, are delivered to the log filters in
        slices of the reactor's time (L{SliceRunner}), in this order.
        """
        self._sweep()
        for block in event.adopted:
            self._feeds[BLOCKS].append(block.hash)
        if len(self._index) and (event.abandoned or event.adopted):
            self._runner.run(self._deliver_event(event))

    def _deliver_event(self, event: ChainEvent) -> Iterator[None]:
        """
        Deliver one chain change's logs (a generator: it yields where the
        runner may pause).
        """
        for index, block in enumerate(event.abandoned):
            yield from self._deliver_logs(block, event.receipts_of_abandoned(index), removed=True)
        for index, block in enumerate(event.adopted):
            yield from self._deliver_logs(block, event.receipts_of_adopted(index), removed=False)

    def _deliver_logs(self, block: Block, receipts: tuple[Receipt, ...], removed: bool) -> Iterator[None]:
        """
        Add one block's matching logs to every log filter whose range covers it.
        """
        if not any(receipt.logs for receipt in receipts):
            return
        hashes = [transaction.hash for transaction in block.transactions]
        filters = self._filters
        number = block.number
        served = 0
        for found in self._index.match_logs(block.hash, number, hashes, receipts, removed):
            if found is None:
                yield None
                continue
            selection, entries = found
            for filter_id in list(selection.members):
                installed = filters.get(filter_id)
                if installed is None or not installed.covers(number):
                    continue
                installed.chunks.append(entries)
                installed.pending += len(entries)
                if installed.pending > MAX_PENDING_CHANGES:
                    self._overflow(filter_id)
                served += 1
                if not served % _MEMBERS_PER_STEP:
                    yield None

    def _transaction_pending(self, transaction: Transaction) -> None:
        """
        A transaction became pending: its hash goes to the pending feed.
        """
        self._feeds[PENDING].append(transaction.hash)


__all__ = [
    "FILTER_EXPIRY",
    "MAX_FILTERS",
    "MAX_FILTERS_PER_CLIENT",
    "MAX_HISTORY",
    "MAX_PENDING_CHANGES",
    "SEARCH_TIME_LIMIT",
    "FilterOverflowError",
    "FilterService",
]
