"""
The logs of a stored block, read from its receipts' RLP without decoding
the receipts, and the cache of such blocks that log searches share.

A search over a range usually selects a few logs of each candidate block,
so the receipts are walked only as far as it needs: the receipt list once,
to find each receipt's bloom and logs and count the logs (the log index of
a log is its position among all the block's logs); then the logs of only
the receipts whose bloom may match, built once and kept; and the hashes of
only the transactions that have a selected log, from the stored body.
Stored data that does not walk as expected is decoded the strict way,
which raises L{nodex.structures.errors.RLPError} for what is really
malformed.
"""

from collections import OrderedDict
from collections.abc import Callable, Sequence
from threading import Lock

from nodex.chain.logs.index import BloomTests, bloom_passes
from nodex.crypto import keccak256
from nodex.db.kv import KeyValueStore
from nodex.db.schema import read_body_rlp, read_receipts_rlp
from nodex.primitives import Address, Hash32
from nodex.structures.blocks import decode_body
from nodex.structures.bloom import BLOOM_BYTES
from nodex.structures.logs import MAX_TOPICS, Log
from nodex.structures.receipts import decode_receipts

ReceiptSpan = tuple[bytes, int, int, int, int, int]
"""
Where one receipt's parts are: C{(bloom data, bloom offset, logs start,
logs end, log index of its first log, number of logs)}.
"""

Selection = list[tuple[int, int, Log]]
"""Selected logs as C{(transaction index, log index, log)}."""

_BLOOM_PREFIX = b"\xb9\x01\x00"
"""The RLP prefix of a 256-byte bloom."""

_TOPIC_PREFIXES = b"\xa0" * MAX_TOPICS
"""The RLP prefixes of up to four 32-byte topics."""


class StoredBlockLogs:
    """
    The logs of one stored block, walked as far as searches needed; what a
    stored block holds never changes, so one may be shared by the reader
    threads (each lazily filled part is filled with the same value by
    whichever thread gets there first).
    """

    __slots__ = ("_hashes", "_logs", "_raw", "_spans", "size")

    def __init__(self, raw: bytes, spans: list[ReceiptSpan], logs: list[tuple[Log, ...] | None]) -> None:
        """
        @param raw: the receipts' RLP, which C{spans} point into.
        @param spans: per receipt, where its parts are.
        @param logs: per receipt, its logs if already built, else L{None}.
        """
        self._raw = raw
        self._spans = spans
        self._logs = logs
        self._hashes: dict[int, Hash32] = {}
        self.size = len(raw)

    @classmethod
    def read(cls, store: KeyValueStore, block_hash: bytes) -> "StoredBlockLogs | None":
        """
        Walk the receipt list of a stored block; L{None} if its receipts are not stored.

        @raise nodex.structures.errors.RLPError: the receipts are malformed.
        """
        raw = read_receipts_rlp(store, block_hash)
        if raw is None:
            return None
        try:
            spans = _walk_receipts(raw)
        except (IndexError, ValueError):
            spans, logs = [], []
            first_log = 0
            for receipt in decode_receipts(raw):
                spans.append((receipt.bloom, 0, 0, 0, first_log, len(receipt.logs)))
                logs.append(receipt.logs)
                first_log += len(receipt.logs)
            return cls(raw, spans, logs)
        return cls(raw, spans, [None] * len(spans))

    def select(self, tests: BloomTests, matches: Callable[[Log], bool]) -> Selection:
        """
        The logs that C{matches} accepts, among the receipts whose bloom
        passes C{tests}, in block order.
        """
        selected = []
        logs_of = self._logs
        for index, (bloom_data, bloom_offset, start, end, first_log, count) in enumerate(self._spans):
            if not count or (tests and not bloom_passes(bloom_data, bloom_offset, tests)):
                continue
            logs = logs_of[index]
            if logs is None:
                logs = logs_of[index] = _walk_logs(self._raw, start, end)
            for offset, log in enumerate(logs):
                if matches(log):
                    selected.append((index, first_log + offset, log))
        return selected

    def walk_all(self, store: KeyValueStore, block_hash: bytes) -> None:
        """
        Build every log and transaction hash now, so that no later
        selection has to (what warming a cache does).

        @raise nodex.structures.errors.RLPError: the body is malformed.
        """
        for index, (_, _, start, end, _, count) in enumerate(self._spans):
            if count and self._logs[index] is None:
                self._logs[index] = _walk_logs(self._raw, start, end)
        self.transaction_hashes(store, block_hash, range(len(self._spans)))

    def transaction_hashes(self, store: KeyValueStore, block_hash: bytes, indexes: Sequence[int]) -> list[Hash32] | None:
        """
        The hashes of the transactions at C{indexes}, from the stored body
        the first time each is asked; L{None} if the body is not stored.

        @raise nodex.structures.errors.RLPError: the body is malformed.
        """
        known = self._hashes
        missing = [index for index in indexes if index not in known]
        if missing:
            body = read_body_rlp(store, block_hash)
            if body is None:
                return None
            try:
                bounds = _walk_transactions(body)
                for index in missing:
                    item_start, payload_start, payload_end, is_list = bounds[index]
                    # A legacy transaction hashes as its list, a typed one as its bytes.
                    known[index] = Hash32(keccak256(body[item_start if is_list else payload_start:payload_end]))
            except (IndexError, ValueError):
                transactions = decode_body(body)[0]
                for index in missing:
                    known[index] = transactions[index].hash
        return [known[index] for index in indexes]


class BlockLogCache:
    """
    The L{StoredBlockLogs} of recently searched blocks, by block hash,
    shared by the reader threads.
    """

    def __init__(self, size: int = 1024, max_bytes: int = 64 * 1024 * 1024) -> None:
        """
        @param size: the most blocks kept; the least recently used go first.
        @param max_bytes: the most bytes of receipts kept, likewise.
        """
        self._size = size
        self._max_bytes = max_bytes
        self._bytes = 0
        self._entries: OrderedDict[bytes, StoredBlockLogs] = OrderedDict()
        self._lock = Lock()

    def get(self, block_hash: bytes) -> StoredBlockLogs | None:
        """
        The cached logs of a block, or L{None}.
        """
        with self._lock:
            value = self._entries.get(block_hash)
            if value is not None:
                self._entries.move_to_end(block_hash)
            return value

    def put(self, block_hash: bytes, value: StoredBlockLogs) -> None:
        """
        Keep a block's logs.
        """
        with self._lock:
            previous = self._entries.pop(block_hash, None)
            if previous is not None:
                self._bytes -= previous.size
            self._entries[block_hash] = value
            self._bytes += value.size
            while len(self._entries) > self._size or (self._bytes > self._max_bytes and len(self._entries) > 1):
                self._bytes -= self._entries.popitem(last=False)[1].size

    def __len__(self) -> int:
        """
        The number of blocks kept.
        """
        return len(self._entries)


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


def _skip_short_string(data: bytes, position: int) -> int:
    """
    The position after the string of at most 55 bytes at C{position}.

    @raise ValueError: the item there is not such a string.
    """
    prefix = data[position]
    if prefix < 0x80:
        return position + 1
    if prefix < 0xB8:
        return position + 1 + prefix - 0x80
    raise ValueError("a short string was expected")


def _count_items(data: bytes, start: int, end: int) -> int:
    """
    How many items the list payload from C{start} to C{end} holds.
    """
    count = 0
    while start < end:
        start = _rlp_item(data, start)[1]
        count += 1
    if start != end:
        raise ValueError("an RLP list's items overrun it")
    return count


def _walk_receipts(raw: bytes) -> list[ReceiptSpan]:
    """
    Where each receipt's bloom and logs are in a stored receipt list; the
    bloom, a fixed 256 bytes, is found by its prefix.
    """
    start, end, is_list = _rlp_item(raw, 0)
    if not is_list or end != len(raw):
        raise ValueError("receipts are not a list")
    spans = []
    first_log = 0
    position = start
    while position < end:
        payload_start, payload_end, is_list = _rlp_item(raw, position)
        position = payload_end
        if not is_list:
            # A typed receipt: the type byte, then the receipt's list.
            payload_start, payload_end, is_list = _rlp_item(raw, payload_start + 1)
            if not is_list or payload_end != position:
                raise ValueError("a typed receipt is not a type and a list")
        # Status and cumulative gas are short strings; then the bloom and the logs.
        bloom = _skip_short_string(raw, _skip_short_string(raw, payload_start))
        if raw[bloom:bloom + 3] != _BLOOM_PREFIX:
            raise ValueError("a receipt is not [status, gas, bloom, logs]")
        bloom += 3
        logs_start, logs_end, is_list = _rlp_item(raw, bloom + BLOOM_BYTES)
        if not is_list or logs_end != payload_end:
            raise ValueError("a receipt is not [status, gas, bloom, logs]")
        count = _count_items(raw, logs_start, logs_end)
        spans.append((raw, bloom, logs_start, logs_end, first_log, count))
        first_log += count
    if position != end:
        raise ValueError("a receipt overruns the list")
    return spans


def _walk_logs(raw: bytes, start: int, end: int) -> tuple[Log, ...]:
    """
    The logs of the list payload from C{start} to C{end}: each
    C{[address (20 bytes), [topic (32 bytes), ...], data]}.
    """
    logs = []
    position = start
    while position < end:
        log_start, log_end, is_list = _rlp_item(raw, position)
        if not is_list or raw[log_start] != 0x94:
            raise ValueError("a log is not [address, topics, data]")
        topics_start, topics_end, is_list = _rlp_item(raw, log_start + 21)
        size = topics_end - topics_start
        if not is_list or size % 33 or size > 33 * MAX_TOPICS or raw[topics_start:topics_end:33] != _TOPIC_PREFIXES[: size // 33]:
            raise ValueError("log topics are not a list of 32-byte strings")
        data_start, data_end, is_list = _rlp_item(raw, topics_end)
        if is_list or data_end != log_end:
            raise ValueError("a log is not [address, topics, data]")
        topics = tuple([Hash32(raw[offset + 1:offset + 33]) for offset in range(topics_start, topics_end, 33)])
        logs.append(Log(Address(raw[log_start + 1:log_start + 21]), topics, raw[data_start:data_end]))
        position = log_end
    return tuple(logs)


def _walk_transactions(raw: bytes) -> list[tuple[int, int, int, bool]]:
    """
    Where each transaction of a stored body is: C{(item start, payload
    start, payload end, is list)}.
    """
    start, end, is_list = _rlp_item(raw, 0)
    if not is_list:
        raise ValueError("a body is not a list")
    start, end, is_list = _rlp_item(raw, start)
    if not is_list:
        raise ValueError("a body's transactions are not a list")
    bounds = []
    position = start
    while position < end:
        payload_start, payload_end, is_list = _rlp_item(raw, position)
        bounds.append((position, payload_start, payload_end, is_list))
        position = payload_end
    if position != end:
        raise ValueError("a transaction overruns the list")
    return bounds


__all__ = ["BlockLogCache", "ReceiptSpan", "Selection", "StoredBlockLogs"]
