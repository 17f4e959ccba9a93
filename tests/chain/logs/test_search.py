"""
Tests for L{nodex.chain.logs.search}.
"""

from collections.abc import Sequence

from twisted.trial.unittest import SynchronousTestCase

from nodex.chain.logs.index import index_block
from nodex.chain.calls import CallTimeoutError
from nodex.chain.logs.search import (
    BlockLogCache,
    LogFilter,
    LogQueryError,
    TooManyLogsError,
    block_log_entries,
    read_block_log_entries,
    search_logs,
    stored_block_log_entries,
    warm_block_log_cache,
)
from nodex.db.memory import MemoryStore
from nodex.db.schema import write_body_rlp, write_canonical_hash, write_header_rlp, write_receipts_rlp
from nodex.primitives import Address, Hash32
from nodex.structures.blocks import Block
from nodex.structures.bloom import merge_blooms
from nodex.structures.headers import EMPTY_UNCLES_HASH, Header
from nodex.structures.logs import Log
from nodex.structures.receipts import Receipt, encode_receipts
from nodex.structures.errors import RLPError
from nodex.structures.transactions import AccessListTransaction, FeeMarketTransaction, LegacyTransaction

A = Hash32(b"\x0a" * 32)
B = Hash32(b"\x0b" * 32)
C = Hash32(b"\x0c" * 32)
ONE = Address(b"\x01" * 20)
TWO = Address(b"\x02" * 20)


def make_block(number: int, logs_per_tx: Sequence[Sequence[Log]], parent: bytes = bytes(32), salt: int = 0) -> tuple[Block, tuple[Receipt, ...]]:
    """
    A block at C{number} with one transaction per entry of C{logs_per_tx},
    each with a receipt holding those logs.
    """
    transactions = tuple(
        LegacyTransaction(nonce=index, gas_price=salt, gas=21000, to=b"\x03" * 20, value=number, data=b"", v=27, r=1, s=1)
        for index in range(len(logs_per_tx))
    )
    receipts = tuple(Receipt.from_logs(0, 1, 21000 * (i + 1), logs) for i, logs in enumerate(logs_per_tx))
    zero = Hash32(bytes(32))
    header = Header(
        parent_hash=Hash32(parent), uncles_hash=EMPTY_UNCLES_HASH, coinbase=Address(bytes(20)), state_root=zero,
        transactions_root=zero, receipts_root=zero,
        logs_bloom=merge_blooms(receipt.bloom for receipt in receipts) if receipts else bytes(256),
        difficulty=1, number=number, gas_limit=30_000_000, gas_used=0, timestamp=number, extra_data=bytes([salt]),
        paid_fees=0, minimum_gas_price=0, uncle_count=0,
    )
    return Block(header, transactions), receipts


def store_block(store: MemoryStore, block: Block, receipts: Sequence[Receipt], canonical: bool = True) -> None:
    """
    Write a block and its receipts, and make it canonical (indexed) if asked.
    """
    batch = store.batch()
    write_header_rlp(batch, block.hash, block.header.encode())
    write_body_rlp(batch, block.hash, block.encode_body())
    write_receipts_rlp(batch, block.hash, encode_receipts(receipts))
    if canonical:
        write_canonical_hash(batch, block.number, block.hash)
        index_block(batch, block.header)
    store.write(batch)


class LogFilterTests(SynchronousTestCase):
    """
    Tests for L{LogFilter.matches}: the specification's topic table.
    """

    def assertTable(self, topics: tuple[tuple[Hash32, ...] | None, ...], log_topics: tuple[Hash32, ...], expected: bool) -> None:
        """
        A filter with C{topics} does or does not match a log with C{log_topics}.
        """
        self.assertEqual(LogFilter(topics=topics).matches(Log(ONE, log_topics, b"")), expected)

    def test_empty_matches_anything(self) -> None:
        """
        C{[]} matches any log, also one without topics.
        """
        self.assertTable((), (), True)
        self.assertTable((), (A, B), True)

    def test_first_position(self) -> None:
        """
        C{[A]} matches A first, anything after; not B first, not a log without topics.
        """
        self.assertTable(((A,),), (A,), True)
        self.assertTable(((A,),), (A, C), True)
        self.assertTable(((A,),), (B, A), False)
        self.assertTable(((A,),), (), False)

    def test_wildcard_then_topic(self) -> None:
        """
        C{[null, B]} matches anything first and B second; a one-topic log fails.
        """
        self.assertTable((None, (B,)), (C, B), True)
        self.assertTable((None, (B,)), (B,), False)
        self.assertTable(((), (B,)), (A, B), True)

    def test_two_positions(self) -> None:
        """
        C{[A, B]} needs both in order.
        """
        self.assertTable(((A,), (B,)), (A, B), True)
        self.assertTable(((A,), (B,)), (B, A), False)

    def test_alternatives(self) -> None:
        """
        C{[[A, B], [A, B]]} matches A or B in each of the first two positions.
        """
        both = (A, B)
        self.assertTable((both, both), (B, A), True)
        self.assertTable((both, both), (A, A), True)
        self.assertTable((both, both), (A, C), False)

    def test_addresses(self) -> None:
        """
        Addresses are alternatives; none means any.
        """
        log = Log(TWO, (), b"")
        self.assertTrue(LogFilter(addresses=(ONE, TWO)).matches(log))
        self.assertFalse(LogFilter(addresses=(ONE,)).matches(log))
        self.assertTrue(LogFilter().matches(log))

    def test_too_many_positions(self) -> None:
        """
        Five topic positions are refused.
        """
        self.assertRaises(LogQueryError, LogFilter, topics=((A,),) * 5)


class SearchTests(SynchronousTestCase):
    """
    Tests for L{search_logs} over a stored chain.
    """

    def setUp(self) -> None:
        """
        Store 1,100 blocks: each has a log of ONE with topic A; block 7 also
        has, in a second transaction, ONE/B and TWO/C.
        """
        self.store = MemoryStore()
        self.blocks = []
        for number in range(1100):
            logs: list[list[Log]] = [[Log(ONE, (A,), b"")]]
            if number == 7:
                logs.append([Log(ONE, (B,), b"x"), Log(TWO, (C,), b"y")])
            block, receipts = make_block(number, logs)
            store_block(self.store, block, receipts)
            self.blocks.append(block)

    def test_locations(self) -> None:
        """
        Entries carry the block, the transaction and the block-wide log index.
        """
        entries = search_logs(self.store, 0, 1099, LogFilter(topics=((C,),)))
        self.assertEqual(len(entries), 1)
        entry = entries[0]
        self.assertEqual(entry.log, Log(TWO, (C,), b"y"))
        self.assertEqual((entry.block_number, entry.block_hash), (7, self.blocks[7].hash))
        self.assertEqual((entry.transaction_index, entry.log_index), (1, 2))
        self.assertEqual(entry.transaction_hash, self.blocks[7].transactions[1].hash)
        self.assertFalse(entry.removed)

    def test_range(self) -> None:
        """
        Only blocks inside the range give logs, in chain order.
        """
        entries = search_logs(self.store, 5, 1050, LogFilter(addresses=(ONE,), topics=((A,),)))
        self.assertEqual([entry.block_number for entry in entries], list(range(5, 1051)))

    def test_address_and_topic_together(self) -> None:
        """
        Address and topics must hold for the same log.
        """
        self.assertEqual(search_logs(self.store, 0, 1099, LogFilter(addresses=(TWO,), topics=((B,),))), [])
        entries = search_logs(self.store, 0, 1099, LogFilter(addresses=(ONE, TWO), topics=((B, C),)))
        self.assertEqual([entry.log.data for entry in entries], [b"x", b"y"])

    def test_limit(self) -> None:
        """
        More matches than the limit raise L{TooManyLogsError} with the reference message.
        """
        error = self.assertRaises(TooManyLogsError, search_logs, self.store, 0, 1099, LogFilter(), 100)
        self.assertEqual(str(error), "Filter returned more than 100 logs.")
        self.assertEqual(len(search_logs(self.store, 0, 97, LogFilter(), 100)), 100)

    def test_cache(self) -> None:
        """
        A search with a cache keeps the blocks it walked and answers the same the next time.
        """
        cache = BlockLogCache(size=50)
        log_filter = LogFilter(topics=((A,),))
        first = search_logs(self.store, 0, 99, log_filter, cache=cache)
        self.assertEqual(len(cache), 50)
        self.assertEqual(search_logs(self.store, 0, 99, log_filter, cache=cache), first)
        self.assertEqual(first, search_logs(self.store, 0, 99, log_filter))

    def test_expiry(self) -> None:
        """
        A search whose time is up stops with L{CallTimeoutError}, looking
        at the clock once per L{EXPIRY_CHECK_BLOCKS} candidates.
        """
        looks = []

        def expired() -> bool:
            """
            Count the looks; the time is up at the third.
            """
            looks.append(1)
            return len(looks) > 2

        self.assertRaises(CallTimeoutError, search_logs, self.store, 0, 1099, LogFilter(), None, None, expired)
        self.assertEqual(len(looks), 3)
        self.assertEqual(len(search_logs(self.store, 0, 99, LogFilter(), expired=lambda: False)), 102)

    def test_unknown_heights(self) -> None:
        """
        Heights above the chain give nothing.
        """
        self.assertEqual(search_logs(self.store, 3000, 9000, LogFilter()), [])
        self.assertEqual(read_block_log_entries(self.store, 5000, LogFilter()), [])


class StoredWalkTests(SynchronousTestCase):
    """
    Tests for the walk of stored receipts and bodies in L{stored_block_log_entries}.
    """

    def test_typed_transactions_and_receipts(self) -> None:
        """
        Typed receipts and transactions give the same entries as decoding the structures.
        """
        store = MemoryStore()
        transactions = (
            LegacyTransaction(nonce=0, gas_price=1, gas=21000, to=b"\x03" * 20, value=0, data=b"", v=27, r=1, s=1),
            FeeMarketTransaction(33, 1, 1, 2, 50000, b"\x04" * 20, 0, b"\x01\x02", (), 1, 5, 6),
            AccessListTransaction(33, 2, 1, 50000, b"", 0, b"\x60\x00", (), 0, 7, 8),
        )
        receipts = (
            Receipt.from_logs(0, 1, 21000, [Log(ONE, (A,), b"a")]),
            Receipt.from_logs(2, 1, 40000, [Log(TWO, (), b""), Log(ONE, (A, B, C), b"b" * 100)]),
            Receipt.from_logs(1, 0, 60000, []),
        )
        block, _ = make_block(3, [[], [], []])
        block = Block(block.header, transactions)
        store_block(store, block, receipts)
        cache = BlockLogCache()
        for log_filter in (LogFilter(), LogFilter(addresses=(ONE,)), LogFilter(topics=(None, (B,)))):
            walked = stored_block_log_entries(store, block.hash, 3, log_filter)
            expected = block_log_entries(block.hash, 3, [tx.hash for tx in transactions], receipts, log_filter)
            self.assertEqual(walked, expected)
            self.assertTrue(walked)
            self.assertEqual(stored_block_log_entries(store, block.hash, 3, log_filter, cache=cache), expected)
        self.assertEqual(len(cache), 1)

    def test_malformed_receipts(self) -> None:
        """
        Stored receipts that do not walk are decoded strictly, which refuses them.
        """
        store = MemoryStore()
        block, receipts = make_block(1, [[Log(ONE, (A,), b"")]])
        store_block(store, block, receipts)
        batch = store.batch()
        write_receipts_rlp(batch, block.hash, b"\xc3\x01\x02")
        store.write(batch)
        self.assertRaises(RLPError, stored_block_log_entries, store, block.hash, 1, LogFilter())


class WarmCacheTests(SynchronousTestCase):
    """
    Tests for L{warm_block_log_cache}.
    """

    def test_newest_blocks_with_logs(self) -> None:
        """
        Warming walks the newest canonical blocks that have logs into the
        cache, and searches then answer as without it.
        """
        store = MemoryStore()
        for number in range(30):
            block, receipts = make_block(number, [[Log(ONE, (A,), bytes([number]))]] if number % 2 else [[]])
            store_block(store, block, receipts)
        cache = BlockLogCache()
        self.assertEqual(warm_block_log_cache(store, 29, cache, 10), 5)
        self.assertEqual(len(cache), 5)
        self.assertEqual(warm_block_log_cache(store, 29, cache, 10), 0)
        log_filter = LogFilter(topics=((A,),))
        self.assertEqual(search_logs(store, 0, 29, log_filter, cache=cache), search_logs(store, 0, 29, log_filter))
