"""
Tests for L{nodex.chain.logs.stored}.
"""

import random

from twisted.trial.unittest import SynchronousTestCase

from nodex.chain.logs.index import bloom_matches, bloom_passes, bloom_tests, value_mask
from nodex.chain.logs.stored import BlockLogCache, StoredBlockLogs
from nodex.db.memory import MemoryStore
from nodex.db.schema import write_receipts_rlp
from nodex.primitives import Address, Hash32
from nodex.structures.bloom import logs_bloom
from nodex.structures.logs import Log
from nodex.structures.receipts import Receipt, encode_receipts

TOKEN = Address(b"\x70" * 20)
TOPICS = [Hash32(bytes([value]) * 32) for value in range(8)]


class BloomTestsTests(SynchronousTestCase):
    """
    Tests for L{bloom_tests} and L{bloom_passes}.
    """

    def test_agree_with_bloom_matches(self) -> None:
        """
        The byte tests of groups of masks pass exactly the blooms that
        L{bloom_matches} accepts, at any offset in the data.
        """
        generator = random.Random(3)
        for _ in range(200):
            bloom = logs_bloom([Log(TOKEN, tuple(generator.sample(TOPICS, 2)), b"")])
            groups = [
                [value_mask(topic) for topic in generator.sample(TOPICS, generator.randint(1, 3))]
                for _ in range(generator.randint(0, 2))
            ]
            expected = bloom_matches(bloom, groups)
            self.assertEqual(bloom_passes(bloom, 0, bloom_tests(groups)), expected)
            self.assertEqual(bloom_passes(b"\x00\x01" + bloom, 2, bloom_tests(groups)), expected)


class StoredBlockLogsTests(SynchronousTestCase):
    """
    Tests for L{StoredBlockLogs}.
    """

    def test_builds_only_the_receipts_whose_bloom_may_match(self) -> None:
        """
        A selection walks the logs of the receipts whose bloom passes, and
        numbers every log by its position among all the block's logs.
        """
        store = MemoryStore()
        receipts = [Receipt.from_logs(0, 1, 21000 * (index + 1), [Log(TOKEN, (TOPICS[index],), b"")] * 2) for index in range(4)]
        batch = store.batch()
        write_receipts_rlp(batch, b"\x01" * 32, encode_receipts(receipts))
        store.write(batch)
        block_logs = StoredBlockLogs.read(store, b"\x01" * 32)
        assert block_logs is not None
        seen: list[Log] = []

        def matches(log: Log) -> bool:
            """
            Remember the logs offered; accept those of topic 2.
            """
            seen.append(log)
            return log.topics == (TOPICS[2],)

        selected = block_logs.select(bloom_tests([[value_mask(TOPICS[2])]]), matches)
        self.assertEqual(selected, [(2, 4, receipts[2].logs[0]), (2, 5, receipts[2].logs[1])])
        self.assertEqual(seen, list(receipts[2].logs))
        self.assertIsNone(StoredBlockLogs.read(store, b"\x02" * 32))


class BlockLogCacheTests(SynchronousTestCase):
    """
    Tests for L{BlockLogCache}.
    """

    def test_bounded_by_bytes(self) -> None:
        """
        The cache drops its least recently used blocks once their receipts
        exceed its byte bound, keeping at least the newest.
        """
        store = MemoryStore()
        batch = store.batch()
        for number in range(4):
            write_receipts_rlp(batch, bytes([number]) * 32, encode_receipts([Receipt.from_logs(0, 1, 21000, [])]))
        store.write(batch)
        blocks = [StoredBlockLogs.read(store, bytes([number]) * 32) for number in range(4)]
        size = blocks[0].size  # type: ignore[union-attr]
        cache = BlockLogCache(size=10, max_bytes=2 * size)
        for number, block_logs in enumerate(blocks):
            assert block_logs is not None
            cache.put(bytes([number]) * 32, block_logs)
        self.assertEqual(len(cache), 2)
        self.assertIsNone(cache.get(b"\x01" * 32))
        self.assertIs(cache.get(b"\x03" * 32), blocks[3])
        tiny = BlockLogCache(size=10, max_bytes=1)
        tiny.put(b"\x03" * 32, blocks[3])  # type: ignore[arg-type]
        self.assertEqual(len(tiny), 1)
