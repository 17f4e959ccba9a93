"""
Tests for L{nodex.chain.logindex}.
"""

from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from nodex.chain.logindex import (
    SECTION_SIZE,
    bloom_matches,
    candidate_blocks,
    index_block,
    read_bloom,
    section_key,
    set_bits,
    unindex_block,
    value_bits,
    value_mask,
)
from nodex.db.memory import MemoryStore
from nodex.db.schema import LOG_INDEX, write_block_bloom
from nodex.primitives import Address, Hash32
from nodex.structures.bloom import EMPTY_BLOOM, bloom_may_contain, logs_bloom
from nodex.structures.headers import EMPTY_UNCLES_HASH, Header
from nodex.structures.logs import Log

TOKEN = Address(b"\x11" * 20)
OTHER = Address(b"\x22" * 20)
TRANSFER = Hash32(b"\xdd" * 32)
RARE = Hash32(b"\x77" * 32)


def make_header(number: int, logs: list[Log]) -> Header:
    """
    A header at height C{number} whose bloom holds C{logs}.
    """
    zero = Hash32(bytes(32))
    return Header(
        parent_hash=zero,
        uncles_hash=EMPTY_UNCLES_HASH,
        coinbase=Address(bytes(20)),
        state_root=zero,
        transactions_root=zero,
        receipts_root=zero,
        logs_bloom=logs_bloom(logs),
        difficulty=1,
        number=number,
        gas_limit=30_000_000,
        gas_used=0,
        timestamp=number,
        extra_data=b"",
        paid_fees=0,
        minimum_gas_price=0,
        uncle_count=0,
    )


def write_chain(store: MemoryStore, count: int, rare_at: set[int]) -> list[Header]:
    """
    Index C{count} blocks from genesis, each with a token transfer log, and
    a log of the rare topic in the blocks of C{rare_at}.
    """
    headers = []
    batch = store.batch()
    for number in range(count):
        logs = [Log(TOKEN, (TRANSFER,), b"")]
        if number in rare_at:
            logs.append(Log(OTHER, (RARE,), b""))
        header = make_header(number, logs)
        index_block(batch, header)
        headers.append(header)
    store.write(batch)
    return headers


class BitTests(SynchronousTestCase):
    """
    Tests for the bloom bit arithmetic.
    """

    def test_value_bits_agree_with_bloom(self) -> None:
        """
        The bits L{value_bits} names are those a bloom of the value sets.
        """
        bloom = logs_bloom([Log(TOKEN, (), b"")])
        self.assertEqual(sorted(set_bits(bloom)), sorted(set(value_bits(TOKEN))))

    def test_set_bits_of_empty_bloom(self) -> None:
        """
        An empty bloom sets no bit.
        """
        self.assertEqual(set_bits(EMPTY_BLOOM), [])

    def test_bloom_matches_groups(self) -> None:
        """
        A bloom matches when every group has one alternative in it.
        """
        bloom = logs_bloom([Log(TOKEN, (TRANSFER,), b"")])
        self.assertTrue(bloom_matches(bloom, [[value_mask(TOKEN)], [value_mask(RARE), value_mask(TRANSFER)]]))
        self.assertFalse(bloom_matches(bloom, [[value_mask(TOKEN)], [value_mask(RARE)]]))
        self.assertTrue(bloom_matches(bloom, []))
        self.assertEqual(
            bloom_matches(bloom, [[value_mask(OTHER)]]), bloom_may_contain(bloom, OTHER)
        )


class IndexTests(SynchronousTestCase):
    """
    Tests for L{index_block} and L{unindex_block}.
    """

    def test_index_writes_bloom_and_bits(self) -> None:
        """
        Indexing writes the block bloom under the number and one key per set bit.
        """
        store = MemoryStore()
        header = write_chain(store, 1, set())[0]
        self.assertEqual(read_bloom(store, 0), header.logs_bloom)
        keys = [key for key, _ in store.iterate(LOG_INDEX)]
        self.assertEqual(len(keys), 2 + len(set_bits(header.logs_bloom)))

    def test_unindex_removes_the_block(self) -> None:
        """
        Unindexing a block leaves nothing of it in the column (the section mark stays).
        """
        store = MemoryStore()
        header = write_chain(store, 1, set())[0]
        batch = store.batch()
        unindex_block(batch, header)
        store.write(batch)
        self.assertEqual([key for key, _ in store.iterate(LOG_INDEX)], [section_key(0)])
        self.assertIsNone(read_bloom(store, 0))

    def test_replacement_at_same_height(self) -> None:
        """
        Unindexing one block and indexing another at its height in one
        batch makes searches see the new block only.
        """
        store = MemoryStore()
        headers = write_chain(store, 40, set())
        batch = store.batch()
        unindex_block(batch, headers[39])
        index_block(batch, make_header(39, [Log(OTHER, (RARE,), b"")]))
        store.write(batch)
        self.assertEqual(list(candidate_blocks(store, 0, 39, [[value_mask(RARE)]])), [39])
        self.assertEqual(list(candidate_blocks(store, 0, 39, [[value_mask(TOKEN)]])), list(range(39)))


class CandidateTests(SynchronousTestCase):
    """
    Tests for L{candidate_blocks}.
    """

    def setUp(self) -> None:
        """
        Index three sections' worth of blocks with a few rare logs.
        """
        self.store = MemoryStore()
        self.rare = {5, 1023, 1024, 2500, 3000}
        write_chain(self.store, 3 * SECTION_SIZE, self.rare)

    def test_rare_value_over_sections(self) -> None:
        """
        A rare topic's candidates over several sections are exactly its blocks.
        """
        found = list(candidate_blocks(self.store, 0, 3 * SECTION_SIZE - 1, [[value_mask(RARE)]]))
        self.assertEqual(found, sorted(self.rare))

    def test_range_bounds(self) -> None:
        """
        Candidates outside the range are left out, inside sections and at their edges.
        """
        found = list(candidate_blocks(self.store, 6, 2500, [[value_mask(RARE)]]))
        self.assertEqual(found, [1023, 1024, 2500])

    def test_common_and_rare_groups(self) -> None:
        """
        A common group combined with a rare one yields the rare blocks (a
        bloom cannot tell which log held which value).
        """
        groups = [[value_mask(TOKEN)], [value_mask(RARE)]]
        self.assertEqual(list(candidate_blocks(self.store, 0, 3071, groups)), sorted(self.rare))
        groups = [[value_mask(OTHER)], [value_mask(RARE)]]
        self.assertEqual(list(candidate_blocks(self.store, 0, 3071, groups)), sorted(self.rare))

    def test_alternatives_in_a_group(self) -> None:
        """
        A group of alternatives yields the union of their blocks.
        """
        groups = [[value_mask(RARE), value_mask(TRANSFER)]]
        self.assertEqual(list(candidate_blocks(self.store, 100, 200, groups)), list(range(100, 201)))

    def test_no_groups(self) -> None:
        """
        Without criteria every block with a log in the range is a candidate.
        """
        self.assertEqual(list(candidate_blocks(self.store, 10, 20, [])), list(range(10, 21)))

    def test_beyond_indexed_blocks(self) -> None:
        """
        Heights that were never indexed yield nothing.
        """
        self.assertEqual(list(candidate_blocks(self.store, 5000, 9000, [[value_mask(RARE)]])), [])
        self.assertEqual(list(candidate_blocks(self.store, 5000, 5010, [])), [])

    def test_blooms_without_bit_index(self) -> None:
        """
        Sections whose blocks have only their block bloom (no mark) are
        searched bloom by bloom.
        """
        store = MemoryStore()
        batch = store.batch()
        for number in range(2 * SECTION_SIZE):
            logs = [Log(OTHER, (RARE,), b"")] if number in (3, 1500) else [Log(TOKEN, (TRANSFER,), b"")]
            write_block_bloom(batch, number, make_header(number, logs).logs_bloom)
        store.write(batch)
        self.assertEqual(list(candidate_blocks(store, 0, 2 * SECTION_SIZE - 1, [[value_mask(RARE)]])), [3, 1500])


class CandidatePropertyTests(SynchronousTestCase):
    """
    L{candidate_blocks} agrees with checking every bloom, on random chains.
    """

    @settings(max_examples=60, deadline=None)
    @given(
        chain=st.lists(st.lists(st.tuples(st.integers(0, 5), st.lists(st.integers(0, 7), max_size=3)), max_size=3), min_size=1, max_size=90),
        groups=st.lists(st.lists(st.integers(0, 13), min_size=1, max_size=3), max_size=3),
        bounds=st.tuples(st.integers(0, 95), st.integers(0, 95)),
        reindexed=st.sets(st.integers(0, 89), max_size=5),
    )
    def test_matches_brute_force(
        self, chain: list[list[tuple[int, list[int]]]], groups: list[list[int]], bounds: tuple[int, int], reindexed: set[int]
    ) -> None:
        """
        With small sections, the bit index yields exactly the blocks whose
        bloom passes, in order, also after blocks are replaced at their height.
        """
        import nodex.chain.logindex as module

        addresses = [Address(bytes([index + 1]) * 20) for index in range(6)]
        topics = [Hash32(bytes([index + 100]) * 32) for index in range(8)]
        values = addresses + topics
        self.patch(module, "SECTION_SIZE", 16)
        self.patch(module, "SHORT_STRETCH", 4)
        store = MemoryStore()
        batch = store.batch()
        headers = {}
        for number, logs in enumerate(chain):
            header = make_header(number, [Log(addresses[a], tuple(topics[t] for t in ts), b"") for a, ts in logs])
            index_block(batch, header)
            headers[number] = header
        store.write(batch)
        batch = store.batch()
        for number in sorted(reindexed & set(headers)):
            unindex_block(batch, headers[number])
            headers[number] = make_header(number, [Log(addresses[number % 6], (topics[number % 8],), b"")])
            index_block(batch, headers[number])
        store.write(batch)
        masks = [[value_mask(values[v]) for v in group] for group in groups]
        first, last = min(bounds), max(bounds)
        expected = [
            number for number in range(first, last + 1)
            if number in headers and headers[number].logs_bloom != EMPTY_BLOOM
            and bloom_matches(headers[number].logs_bloom, masks)
        ]
        self.assertEqual(list(candidate_blocks(store, first, last, masks)), expected)
