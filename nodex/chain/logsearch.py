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

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from threading import Lock

from nodex.chain.calls import CallTimeoutError
from nodex.chain.errors import ChainError
from nodex.chain.logindex import bloom_matches, candidate_blocks, value_mask
from nodex.crypto import keccak256
from nodex.db.kv import KeyValueStore
from nodex.db.schema import read_body_rlp, read_canonical_hash, read_receipts_rlp
from nodex.primitives import Address, Hash32
from nodex.structures.blocks import decode_body
from nodex.structures.logs import MAX_TOPICS, Log
from nodex.structures.receipts import Receipt, decode_receipts


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

    def bloom_groups(self) -> list[list[int]]:
        """
        The criteria as bloom masks, for L{nodex.chain.logindex.candidate_blocks}.
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


BlockLogs = tuple[list[tuple[Log | None, ...]], list[Hash32] | None]
"""A block's logs per receipt and its transaction hashes (L{None} if not read)."""


class BlockLogCache:
    """
    The logs and transaction hashes of recently searched blocks, by block
    hash (what a stored block holds never changes), shared by the reader
    threads.
    """

    def __init__(self, size: int = 1024) -> None:
        """
        @param size: the most blocks kept; the least recently used go first.
        """
        self._size = size
        self._entries: OrderedDict[bytes, BlockLogs] = OrderedDict()
        self._lock = Lock()

    def get(self, block_hash: bytes) -> BlockLogs | None:
        """
        The cached logs and hashes of a block, or L{None}.
        """
        with self._lock:
            value = self._entries.get(block_hash)
            if value is not None:
                self._entries.move_to_end(block_hash)
            return value

    def put(self, block_hash: bytes, value: BlockLogs) -> None:
        """
        Keep a block's logs and hashes.
        """
        with self._lock:
            self._entries[block_hash] = value
            if len(self._entries) > self._size:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        """
        The number of blocks kept.
        """
        return len(self._entries)


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


def _read_block_logs(store: KeyValueStore, block_hash: Hash32, groups: list[list[int]], with_hashes: bool) -> BlockLogs | None:
    """
    Walk a stored block's receipts (and, if asked, its body); L{None} if they are not stored.
    """
    receipts_rlp = read_receipts_rlp(store, block_hash)
    if receipts_rlp is None:
        return None
    try:
        receipt_logs = _walk_receipt_logs(receipts_rlp, groups)
    except (IndexError, ValueError):
        receipt_logs = [receipt.logs for receipt in decode_receipts(receipts_rlp)]
    return receipt_logs, _read_hashes(store, block_hash) if with_hashes else None


def _read_hashes(store: KeyValueStore, block_hash: Hash32) -> list[Hash32] | None:
    """
    The transaction hashes of a stored block, or L{None} without a body.
    """
    body_rlp = read_body_rlp(store, block_hash)
    if body_rlp is None:
        return None
    try:
        return _walk_transaction_hashes(body_rlp)
    except (IndexError, ValueError):
        return [transaction.hash for transaction in decode_body(body_rlp)[0]]


def stored_block_log_entries(
    store: KeyValueStore,
    block_hash: Hash32,
    number: int,
    log_filter: LogFilter,
    removed: bool = False,
    cache: BlockLogCache | None = None,
) -> list[LogEntry]:
    """
    The selected logs of a stored block, canonical or not.

    The stored RLP is walked rather than decoded: only the logs are built,
    and a transaction's hash is the Keccak-256 of its bytes as the body
    holds them, computed only for the transactions that have a selected
    log.  Stored data that does not walk as expected is decoded the strict
    way, which raises L{nodex.structures.errors.RLPError} for what is
    really malformed.

    @param cache: where the walked logs and hashes of whole blocks are kept
        for later searches; without one, only the receipts whose blooms may
        match are walked.
    """
    block_logs = cache.get(block_hash) if cache is not None else None
    if block_logs is None:
        block_logs = _read_block_logs(store, block_hash, [] if cache is not None else log_filter.groups, cache is not None)
        if block_logs is None:
            return []
        if cache is not None and block_logs[1] is not None:
            cache.put(block_hash, block_logs)
    receipt_logs, hashes = block_logs
    selected = []
    log_index = 0
    for index, logs in enumerate(receipt_logs):
        for log in logs:
            if log is not None and log_filter.matches(log):
                selected.append((index, log_index, log))
            log_index += 1
    if not selected:
        return []
    if hashes is None:
        hashes = _read_hashes(store, block_hash)
        if hashes is None:
            return []
    return [
        LogEntry(log, block_hash, number, hashes[index], index, log_index, removed)
        for index, log_index, log in selected
    ]


def _rlp_item(data: bytes, position: int) -> tuple[int, int, bool]:
    """
    The payload bounds of the RLP item at C{position} and whether it is a list.

    @return: C{(payload start, payload end, is list)}.
    @raise ValueError: the item runs past the end of C{data}.
    """
    prefix = data[position]
    if prefix < 0x80:
        start, end, is_list = position, position + 1, False
    elif prefix < 0xB8:
        start, end, is_list = position + 1, position + 1 + prefix - 0x80, False
    elif prefix < 0xC0:
        size = prefix - 0xB7
        start = position + 1 + size
        end, is_list = start + int.from_bytes(data[position + 1:start], "big"), False
    elif prefix < 0xF8:
        start, end, is_list = position + 1, position + 1 + prefix - 0xC0, True
    else:
        size = prefix - 0xF7
        start = position + 1 + size
        end, is_list = start + int.from_bytes(data[position + 1:start], "big"), True
    if end > len(data):
        raise ValueError("an RLP item runs past the end of its data")
    return start, end, is_list


def _rlp_list(data: bytes, start: int, end: int) -> list[tuple[int, int, int, bool]]:
    """
    The items of a list payload: C{(item start, payload start, payload end, is list)} each.
    """
    items = []
    position = start
    while position < end:
        payload_start, payload_end, is_list = _rlp_item(data, position)
        items.append((position, payload_start, payload_end, is_list))
        position = payload_end
    if position != end:
        raise ValueError("an RLP list's items overrun it")
    return items


def _walk_receipt_logs(raw: bytes, groups: list[list[int]]) -> list[tuple[Log | None, ...]]:
    """
    The logs of each receipt of a stored receipts list; the logs of a
    receipt whose bloom cannot match C{groups} are counted but not built
    (L{None} stands for each).
    """
    start, end, is_list = _rlp_item(raw, 0)
    if not is_list:
        raise ValueError("receipts are not a list")
    all_logs = []
    for _, payload_start, payload_end, receipt_is_list in _rlp_list(raw, start, end):
        if not receipt_is_list:
            # A typed receipt: the type byte, then the receipt's list.
            payload_start, payload_end, receipt_is_list = _rlp_item(raw, payload_start + 1)
        fields = _rlp_list(raw, payload_start, payload_end)
        if len(fields) != 4 or not fields[3][3]:
            raise ValueError("a receipt is not [status, gas, bloom, logs]")
        log_items = _rlp_list(raw, fields[3][1], fields[3][2])
        if groups and not bloom_matches(raw[fields[2][1]:fields[2][2]], groups):
            all_logs.append((None,) * len(log_items))
            continue
        logs: list[Log | None] = []
        for _, log_start, log_end, _ in log_items:
            (_, a_start, a_end, _), (_, t_start, t_end, _), (_, d_start, d_end, _) = _rlp_list(raw, log_start, log_end)
            topics = tuple(Hash32(raw[s:e]) for _, s, e, _ in _rlp_list(raw, t_start, t_end))
            logs.append(Log(Address(raw[a_start:a_end]), topics, raw[d_start:d_end]))
        all_logs.append(tuple(logs))
    return all_logs


def _walk_transaction_hashes(raw: bytes) -> list[Hash32]:
    """
    The hashes of the transactions of a stored body: Keccak-256 of a legacy
    transaction's list, or of a typed transaction's bytes.
    """
    start, end, is_list = _rlp_item(raw, 0)
    if not is_list:
        raise ValueError("a body is not a list")
    transactions = _rlp_list(raw, start, end)[0]
    if not transactions[3]:
        raise ValueError("a body's transactions are not a list")
    hashes = []
    for item_start, payload_start, payload_end, is_list in _rlp_list(raw, transactions[1], transactions[2]):
        hashes.append(Hash32(keccak256(raw[item_start:payload_end] if is_list else raw[payload_start:payload_end])))
    return hashes


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
    "BlockLogs",
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
]
