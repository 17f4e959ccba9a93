"""
Log filters: which logs a filter object selects, and the search over a
range of canonical blocks through the log index.

Matching follows the specification's topic table: C{[]} matches anything;
C{[A]} A in the first position (and anything after); C{[null, B]} anything
first and B second; C{[A, B]} A first and B second; C{[[A, B], [A, B]]} A or
B first and A or B second.  A log with fewer topics than a non-empty
position asks for does not match.  The addresses are alternatives too, and
an empty list matches any address.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from nodex.chain.calls import CallTimeoutError
from nodex.chain.errors import ChainError
from nodex.chain.logs.index import BloomTests, bloom_tests, candidate_blocks, value_mask
from nodex.chain.logs.stored import BlockLogCache, StoredBlockLogs
from nodex.db.kv import KeyValueStore
from nodex.db.schema import read_block_bloom, read_canonical_hash
from nodex.primitives import Address, Hash32, cached_property
from nodex.structures.bloom import EMPTY_BLOOM
from nodex.structures.logs import MAX_TOPICS, Log
from nodex.structures.receipts import Receipt


EXPIRY_CHECK_BLOCKS = 64
"""How many candidate blocks a search reads between two looks at the clock."""



class LogQueryError(ChainError):
    """
    A log query or filter that is malformed (RPC code -32602).
    """


class LogLimitError(LogQueryError):
    """
    A log query beyond the node's limits (RPC code -32012).
    """


class FilterNotFoundError(LogQueryError):
    """
    A filter id that is unknown, uninstalled or expired (RPC code -32000).
    """

    def __init__(self) -> None:
        super().__init__("filter not found")


class TooManyLogsError(LogLimitError):
    """
    A query matched more logs than the node returns at once.
    """

    def __init__(self, limit: int) -> None:
        super().__init__(f"Filter returned more than {limit} logs.")


class BlockRangeTooLargeError(LogLimitError):
    """
    A query spans more blocks than the node searches at once.
    """

    def __init__(self, limit: int) -> None:
        super().__init__(f"Cannot query more than {limit} blocks at once")


@dataclass(frozen=True)
class LogFilter:
    """
    What a log must have to be selected.

    @ivar addresses: the emitting contracts accepted; empty accepts any.
    @ivar topics: per position, the topics accepted there; L{None} or an
        empty tuple accepts anything (but the position need not exist).
    """

    addresses: tuple[Address, ...] = ()
    topics: tuple[tuple[Hash32, ...] | None, ...] = ()

    def __post_init__(self) -> None:
        """
        Refuse more topic positions than a log can have.

        @raise LogQueryError: more than four positions.
        """
        if len(self.topics) > MAX_TOPICS:
            raise LogQueryError(f"a filter has at most {MAX_TOPICS} topic positions, got {len(self.topics)}")

    def matches(self, log: Log) -> bool:
        """
        Whether C{log} is selected.
        """
        if self.addresses and log.address not in self.addresses:
            return False
        topics = log.topics
        for position, wanted in enumerate(self.topics):
            if not wanted:
                continue
            if position >= len(topics) or topics[position] not in wanted:
                return False
        return True

    @cached_property
    def groups(self) -> list[list[int]]:
        """
        L{bloom_groups}, computed once.
        """
        return self.bloom_groups()

    @cached_property
    def tests(self) -> BloomTests:
        """
        The criteria as byte tests of a bloom, for L{StoredBlockLogs.select}.
        """
        return bloom_tests(self.groups)

    def bloom_groups(self) -> list[list[int]]:
        """
        The criteria as bloom masks, for L{nodex.chain.logs.index.candidate_blocks}.
        """
        groups = []
        if self.addresses:
            groups.append([value_mask(address) for address in self.addresses])
        for wanted in self.topics:
            if wanted:
                groups.append([value_mask(topic) for topic in wanted])
        return groups


@dataclass(frozen=True)
class LogEntry:
    """
    A log with its place in the chain, as the RPC log object shows it.

    @ivar log_index: the position among all logs of the block.
    @ivar removed: whether the block left the canonical chain.
    """

    log: Log
    block_hash: Hash32
    block_number: int
    transaction_hash: Hash32
    transaction_index: int
    log_index: int
    removed: bool = False


def block_log_entries(
    block_hash: Hash32,
    block_number: int,
    transaction_hashes: Sequence[Hash32],
    receipts: Sequence[Receipt],
    log_filter: LogFilter,
    removed: bool = False,
) -> list[LogEntry]:
    """
    The logs of one block that C{log_filter} selects, in block order.

    @param transaction_hashes: the block's transaction hashes, in order.
    @param receipts: the block's receipts, in the same order.
    """
    entries = []
    log_index = 0
    for index, receipt in enumerate(receipts):
        for log in receipt.logs:
            if log_filter.matches(log):
                entries.append(
                    LogEntry(log, block_hash, block_number, transaction_hashes[index], index, log_index, removed)
                )
            log_index += 1
    return entries


def read_block_log_entries(
    store: KeyValueStore, number: int, log_filter: LogFilter, cache: BlockLogCache | None = None
) -> list[LogEntry]:
    """
    The selected logs of the canonical block at C{number} (none if there is no such block).
    """
    block_hash = read_canonical_hash(store, number)
    if block_hash is None:
        return []
    return stored_block_log_entries(store, Hash32(block_hash), number, log_filter, cache=cache)


def stored_block_log_entries(
    store: KeyValueStore,
    block_hash: Hash32,
    number: int,
    log_filter: LogFilter,
    removed: bool = False,
    cache: BlockLogCache | None = None,
) -> list[LogEntry]:
    """
    The selected logs of a stored block, canonical or not, walked from its
    stored RLP by L{StoredBlockLogs}.

    @param cache: where the walked block is kept for later searches.
    @raise nodex.structures.errors.RLPError: the stored receipts or body
        are malformed.
    """
    block_logs = cache.get(block_hash) if cache is not None else None
    if block_logs is None:
        block_logs = StoredBlockLogs.read(store, block_hash)
        if block_logs is None:
            return []
        if cache is not None:
            cache.put(block_hash, block_logs)
    selected = block_logs.select(log_filter.tests, log_filter.matches)
    if not selected:
        return []
    hashes = block_logs.transaction_hashes(store, block_hash, [index for index, _, _ in selected])
    if hashes is None:
        return []
    return [
        LogEntry(log, block_hash, number, transaction_hash, index, log_index, removed)
        for (index, log_index, log), transaction_hash in zip(selected, hashes)
    ]


def warm_block_log_cache(store: KeyValueStore, last: int, cache: BlockLogCache, blocks: int) -> int:
    """
    Walk the logs and transaction hashes of the newest canonical blocks
    with logs, up to C{last}, into C{cache}, so that the first searches of
    recent blocks after a start find them walked, as later ones do.

    @param blocks: how many heights, ending at C{last}, to look at.
    @return: how many blocks were added.
    @raise nodex.structures.errors.RLPError: stored receipts are malformed.
    """
    added = 0
    for number in range(max(0, last - blocks + 1), last + 1):
        bloom = read_block_bloom(store, number)
        block_hash = read_canonical_hash(store, number)
        if bloom is None or bloom == EMPTY_BLOOM or block_hash is None or cache.get(block_hash) is not None:
            continue
        block_logs = StoredBlockLogs.read(store, block_hash)
        if block_logs is not None:
            block_logs.walk_all(store, block_hash)
            cache.put(block_hash, block_logs)
            added += 1
    return added


def search_logs(
    store: KeyValueStore,
    first: int,
    last: int,
    log_filter: LogFilter,
    max_logs: int | None = None,
    cache: BlockLogCache | None = None,
    expired: Callable[[], bool] | None = None,
) -> list[LogEntry]:
    """
    The selected logs of the canonical blocks C{first} to C{last}, in chain order.

    @param max_logs: the most logs returned, or L{None} for no limit.
    @param cache: keeps the walked blocks for later searches.
    @param expired: tells whether the request's time is up; asked every
        L{EXPIRY_CHECK_BLOCKS} candidate blocks.
    @raise TooManyLogsError: more logs than C{max_logs} matched.
    @raise CallTimeoutError: the time ran out (RPC code -32011, as the
        reference answers a log search past its time limit).
    """
    found: list[LogEntry] = []
    for checked, number in enumerate(candidate_blocks(store, first, last, log_filter.groups)):
        if expired is not None and checked % EXPIRY_CHECK_BLOCKS == 0 and expired():
            raise CallTimeoutError()
        found.extend(read_block_log_entries(store, number, log_filter, cache))
        if max_logs is not None and len(found) > max_logs:
            raise TooManyLogsError(max_logs)
    return found


__all__ = [
    "EXPIRY_CHECK_BLOCKS",
    "BlockLogCache",
    "BlockRangeTooLargeError",
    "FilterNotFoundError",
    "LogEntry",
    "LogFilter",
    "LogLimitError",
    "LogQueryError",
    "TooManyLogsError",
    "block_log_entries",
    "read_block_log_entries",
    "search_logs",
    "stored_block_log_entries",
    "warm_block_log_cache",
]
