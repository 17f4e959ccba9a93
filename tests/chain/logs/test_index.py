"""
Tests for L{nodex.chain.logs.index}.
"""

from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from nodex.chain.logs import index as module
from nodex.chain.logs.index import (
    BITMAP_MARK,
    SECTION_SIZE,
    LogIndexer,
    bitmap_key,
    bloom_matches,
    candidate_blocks,
    index_block,
    indexed_through,
    read_bloom,
    set_bits,
    stale_key,
    stale_sections,
    unindex_block,
    value_bits,
    value_mask,
)
from nodex.db.errors import StoreError
from nodex.db.memory import MemoryStore
from nodex.db.schema import LOG_INDEX, delete_block_bloom, write_block_bloom
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


def write_chain(store: MemoryStore, count: int, rare_at: set[int], bitmaps: bool = True) -> list[Header]:
    """
    Index C{count} blocks from genesis, each with a token transfer log, and
    a log of the rare topic in the blocks of C{rare_at}.

    @param bitmaps: also write their bitmaps (L{LogIndexer}), as the chain does.
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
    if bitmaps:
        indexer = LogIndexer(store)
        while indexer.catch_up(count - 1):
            pass
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

    @given(st.sets(st.integers(0, 2047), max_size=300))
    @settings(max_examples=300)
    def test_set_bits_ascending(self, bits: set[int]) -> None:
        """
        L{set_bits} names every bit set, in ascending order, the lowest
        bit of the last byte being 0 (the highest bit included).
        """
        bloom = bytearray(256)
        for bit in bits:
            bloom[255 - bit // 8] |= 1 << (bit % 8)
        self.assertEqual(set_bits(bytes(bloom)), sorted(bits))
        self.assertEqual(set_bits(bytes(255) + b"\x01"), [0])
        self.assertEqual(set_bits(b"\x80" + bytes(255)), [2047])

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
    Tests for L{index_block}, L{unindex_block} and L{LogIndexer}.
    """

    def test_index_writes_the_bloom(self) -> None:
        """
        Indexing a block writes its bloom under its number, and nothing else.
        """
        store = MemoryStore()
        header = write_chain(store, 1, set(), bitmaps=False)[0]
        self.assertEqual(read_bloom(store, 0), header.logs_bloom)
        self.assertEqual(len(list(store.iterate(LOG_INDEX))), 1)
        self.assertEqual(indexed_through(store), -1)

    def test_indexer_writes_bitmaps(self) -> None:
        """
        The indexer writes one bitmap per bloom bit set in the section, each
        with the bits of the blocks that set it, and the number it indexed
        through.
        """
        store = MemoryStore()
        headers = write_chain(store, 3, {1}, bitmaps=False)
        self.assertEqual(LogIndexer(store).catch_up(2), 0)
        self.assertEqual(indexed_through(store), 2)
        bitmaps = {
            int.from_bytes(key[-2:], "big"): int.from_bytes(value, "big")
            for key, value in store.iterate(LOG_INDEX, BITMAP_MARK)
        }
        expected: dict[int, int] = {}
        for header in headers:
            for bit in set_bits(header.logs_bloom):
                expected[bit] = expected.get(bit, 0) | 1 << header.number
        self.assertEqual(bitmaps, expected)
        self.assertEqual(bitmaps[value_bits(RARE)[0]], 0b010)
        for key, value in store.iterate(LOG_INDEX, BITMAP_MARK):
            self.assertEqual(len(value), SECTION_SIZE // 8)

    def test_catch_up_in_steps(self) -> None:
        """
        A catch-up limited to some blocks says how many remain, and later
        ones go on from there (the indexer's kept section included).
        """
        store = MemoryStore()
        write_chain(store, 2 * SECTION_SIZE + 10, {5, SECTION_SIZE + 3, 2 * SECTION_SIZE + 9}, bitmaps=False)
        indexer = LogIndexer(store)
        head = 2 * SECTION_SIZE + 9
        self.assertEqual(indexer.catch_up(head, limit=500), head - 499)
        self.assertEqual(indexed_through(store), 499)
        while indexer.catch_up(head, limit=700):
            pass
        self.assertEqual(indexed_through(store), head)
        self.assertEqual(
            list(candidate_blocks(store, 0, head, [[value_mask(RARE)]])), [5, SECTION_SIZE + 3, 2 * SECTION_SIZE + 9]
        )
        # A new indexer (a restart) reads the section back from the store.
        batch = store.batch()
        index_block(batch, make_header(head + 1, [Log(OTHER, (RARE,), b"")]))
        store.write(batch)
        self.assertEqual(LogIndexer(store).catch_up(head + 1), 0)
        self.assertEqual(list(candidate_blocks(store, 2 * SECTION_SIZE, head + 1, [[value_mask(RARE)]])), [head, head + 1])
        self.assertEqual(list(candidate_blocks(store, 0, head + 1, [[value_mask(TOKEN)], [value_mask(TRANSFER)]])), list(range(head + 1)))

    @given(
        st.lists(st.sampled_from(range(6)), min_size=1, max_size=60),
        st.integers(SECTION_SIZE - 30, SECTION_SIZE + 10),
        st.lists(st.integers(1, 40), min_size=1, max_size=4),
    )
    @settings(max_examples=60, deadline=None)
    def test_bitmaps_of_repeated_blooms(self, choices: list[int], first: int, steps: list[int]) -> None:
        """
        Blocks that share a bloom (grouped to find its bits once) get the
        bitmaps a block-by-block transposition gives, across a section's
        edge and over catch-ups of any length, the kept section included;
        a rebuild of the section does too.
        """
        values = [Log(Address(bytes([n + 1]) * 20), (Hash32(bytes([n + 9]) * 32),), b"") for n in range(4)]
        kinds = [[], [values[0]], [values[1]], [values[0], values[1]], [values[2], values[3]], values]
        store = MemoryStore()
        batch = store.batch()
        headers = [make_header(number, []) for number in range(first)]
        headers += [make_header(first + index, kinds[kind]) for index, kind in enumerate(choices)]
        for header in headers:
            index_block(batch, header)
        store.write(batch)
        indexer = LogIndexer(store)
        head = len(headers) - 1
        for step in steps * (head // sum(steps) + 1):
            if not indexer.catch_up(head, limit=step):
                break

        def expected() -> dict[bytes, int]:
            bitmaps: dict[bytes, int] = {}
            for header in headers:
                bloom = int.from_bytes(header.logs_bloom, "big")
                for bit in range(2048):
                    if bloom >> bit & 1:
                        key = bitmap_key(header.number // SECTION_SIZE, bit)
                        bitmaps[key] = bitmaps.get(key, 0) | 1 << (header.number % SECTION_SIZE)
            return bitmaps

        def stored() -> dict[bytes, int]:
            return {key: int.from_bytes(value, "big") for key, value in store.iterate(LOG_INDEX, BITMAP_MARK)}

        self.assertEqual(indexed_through(store), head)
        self.assertEqual(stored(), expected())
        batch = store.batch()
        unindex_block(batch, headers[-1])
        headers[-1] = make_header(head, kinds[(choices[-1] + 1) % len(kinds)])
        index_block(batch, headers[-1])
        store.write(batch)
        indexer.catch_up(head)
        self.assertEqual(stored(), expected())

    def test_stops_before_a_missing_bloom(self) -> None:
        """
        The bitmaps stop before a height that has no bloom (not canonical yet).
        """
        store = MemoryStore()
        write_chain(store, 5, set(), bitmaps=False)
        self.assertEqual(LogIndexer(store).catch_up(8), 4)
        self.assertEqual(indexed_through(store), 4)

    def test_failed_write_changes_nothing(self) -> None:
        """
        When the indexer's write fails, neither the store nor what it keeps
        in memory moves: a later catch-up writes the same bitmaps.
        """
        store = MemoryStore()
        write_chain(store, 10, {3}, bitmaps=False)
        indexer = LogIndexer(store)
        indexer.catch_up(4)
        good = store.write

        def failing(batch: object) -> None:
            raise StoreError("disk full")

        store.write = failing  # type: ignore[method-assign]
        self.assertRaises(StoreError, indexer.catch_up, 9)
        store.write = good  # type: ignore[method-assign]
        self.assertEqual(indexed_through(store), 4)
        indexer.catch_up(9)
        self.assertEqual(list(candidate_blocks(store, 0, 9, [[value_mask(RARE)]])), [3])
        self.assertEqual(list(candidate_blocks(store, 0, 9, [[value_mask(TOKEN)]])), list(range(10)))

    def test_unindex_removes_the_block(self) -> None:
        """
        Unindexing a block removes its bloom and marks its section stale;
        the indexer's next catch-up rebuilds the section, dropping the
        bitmaps no block sets any more.
        """
        store = MemoryStore()
        header = write_chain(store, 1, {0})[0]
        batch = store.batch()
        unindex_block(batch, header)
        store.write(batch)
        self.assertIsNone(read_bloom(store, 0))
        self.assertEqual(stale_sections(store), {0})
        self.assertEqual(list(candidate_blocks(store, 0, 0, [[value_mask(RARE)]])), [])
        LogIndexer(store).catch_up(-1)
        self.assertEqual(stale_sections(store), set())
        self.assertEqual(list(store.iterate(LOG_INDEX)), [])

    def test_replacement_at_same_height(self) -> None:
        """
        Unindexing one block and indexing another at its height in one
        batch makes searches see the new block only, before and after the
        section is rebuilt.
        """
        store = MemoryStore()
        headers = write_chain(store, 40, set())
        indexer = LogIndexer(store)
        indexer.catch_up(39)
        batch = store.batch()
        unindex_block(batch, headers[39])
        index_block(batch, make_header(39, [Log(OTHER, (RARE,), b"")]))
        store.write(batch)
        for _ in range(2):
            self.assertEqual(list(candidate_blocks(store, 0, 39, [[value_mask(RARE)]])), [39])
            self.assertEqual(list(candidate_blocks(store, 0, 39, [[value_mask(TOKEN)]])), list(range(39)))
            indexer.catch_up(39)
        self.assertIsNone(store.get(LOG_INDEX, stale_key(0)))
        self.assertIsNotNone(store.get(LOG_INDEX, bitmap_key(0, value_bits(RARE)[0])))

    def test_rewind_below_the_indexed(self) -> None:
        """
        After the chain is rewound below the indexed number, the indexer
        comes back to the new head and drops the rewound blocks' bits.
        """
        store = MemoryStore()
        headers = write_chain(store, 30, {25})
        batch = store.batch()
        for header in headers[20:]:
            unindex_block(batch, header)
        store.write(batch)
        LogIndexer(store).catch_up(19)
        self.assertEqual(indexed_through(store), 19)
        self.assertEqual(list(candidate_blocks(store, 0, 29, [[value_mask(RARE)]])), [])
        self.assertEqual(list(candidate_blocks(store, 0, 29, [[value_mask(TOKEN)]])), list(range(20)))

    def test_rewind_above_the_indexed_marks_nothing(self) -> None:
        """
        Blocks above the indexed number are in no bitmap: unindexing them
        (told how far the bitmaps reach) marks no section stale, and the
        blocks that replace them are searched right, by their blooms and
        then by the bitmaps once the indexer reaches them.  Told less, the
        block is marked as before.
        """
        store = MemoryStore()
        headers = write_chain(store, 30, {25}, bitmaps=False)
        indexer = LogIndexer(store)
        indexer.catch_up(19)
        batch = store.batch()
        for header in headers[20:]:
            unindex_block(batch, header, indexed_through(store))
        for number in range(20, 30):
            index_block(batch, make_header(number, [Log(OTHER, (RARE,), b"")] if number == 22 else []))
        store.write(batch)
        self.assertEqual(stale_sections(store), set())
        self.assertEqual(indexed_through(store), 19)
        for _ in range(2):
            self.assertEqual(list(candidate_blocks(store, 0, 29, [[value_mask(RARE)]])), [22])
            self.assertEqual(list(candidate_blocks(store, 0, 29, [[value_mask(TOKEN)]])), list(range(20)))
            indexer.catch_up(29)
        self.assertEqual(indexed_through(store), 29)
        batch = store.batch()
        unindex_block(batch, headers[19], 18)
        unindex_block(batch, headers[18], 18)
        store.write(batch)
        self.assertEqual(stale_sections(store), {0})

    def test_rewind_reads_no_bloom(self) -> None:
        """
        A rewind of the last blocks is undone from the bitmaps alone (the
        rewound blocks' bits cleared), whatever the section's length: no
        block's bloom is read again.
        """
        store = MemoryStore()
        headers = write_chain(store, 900, {5, 895}, bitmaps=False)
        indexer = LogIndexer(store)
        indexer.catch_up(899)
        batch = store.batch()
        for header in headers[890:]:
            unindex_block(batch, header)
        store.write(batch)
        read = []
        self.patch(module, "read_block_bloom", lambda store, number: read.append(number))
        indexer.catch_up(889)
        self.assertEqual(read, [])
        self.assertEqual(stale_sections(store), set())
        self.assertEqual(list(candidate_blocks(store, 0, 899, [[value_mask(RARE)]])), [5])
        self.assertEqual(list(candidate_blocks(store, 0, 899, [[value_mask(TOKEN)]])), list(range(890)))

    def test_reorganisation_rebuilds_from_the_lowest_block(self) -> None:
        """
        Blocks replaced at several heights in one batch (a reorganisation)
        are rebuilt from the lowest of them: the blooms of the blocks below
        it are not read, the bits of the new blocks are set and the old
        ones' cleared.
        """
        store = MemoryStore()
        headers = write_chain(store, 50, {45})
        batch = store.batch()
        for number in (47, 44, 49):  # in no particular order
            unindex_block(batch, headers[number])
            index_block(batch, make_header(number, [Log(OTHER, (RARE,), b"")]))
        store.write(batch)
        read = []
        real = module.read_block_bloom
        self.patch(module, "read_block_bloom", lambda store, number: read.append(number) or real(store, number))
        LogIndexer(store).catch_up(49)
        self.assertEqual(read, list(range(44, 50)))
        self.assertEqual(list(candidate_blocks(store, 0, 49, [[value_mask(RARE)]])), [44, 45, 47, 49])
        self.assertEqual(
            list(candidate_blocks(store, 0, 49, [[value_mask(TOKEN)]])), [n for n in range(50) if n not in (44, 47, 49)]
        )

    def test_whole_section_mark(self) -> None:
        """
        A section marked stale as a whole (the mark stores written before
        the per-block marks hold) is rebuilt from all its blooms.
        """
        store = MemoryStore()
        headers = write_chain(store, 30, {25})
        batch = store.batch()
        delete_block_bloom(batch, headers[25].number)
        batch.put(LOG_INDEX, stale_key(0), b"")
        write_block_bloom(batch, 25, make_header(25, [Log(TOKEN, (TRANSFER,), b"")]).logs_bloom)
        store.write(batch)
        self.assertEqual(stale_sections(store), {0})
        LogIndexer(store).catch_up(29)
        self.assertEqual(stale_sections(store), set())
        self.assertEqual(list(candidate_blocks(store, 0, 29, [[value_mask(RARE)]])), [])


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

    def test_blooms_without_bitmaps(self) -> None:
        """
        Blocks beyond the bitmaps (the indexer not run yet) are searched
        bloom by bloom.
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

    @settings(max_examples=80, deadline=None)
    @given(
        chain=st.lists(st.lists(st.tuples(st.integers(0, 5), st.lists(st.integers(0, 7), max_size=3)), max_size=3), min_size=1, max_size=90),
        groups=st.lists(st.lists(st.integers(0, 13), min_size=1, max_size=3), max_size=3),
        bounds=st.tuples(st.integers(0, 95), st.integers(0, 95)),
        indexed=st.integers(-1, 95),
        reindexed=st.sets(st.integers(0, 89), max_size=5),
        rewound=st.one_of(st.none(), st.integers(0, 89)),
        catch_up_after=st.booleans(),
    )
    def test_matches_brute_force(
        self, chain: list[list[tuple[int, list[int]]]], groups: list[list[int]], bounds: tuple[int, int],
        indexed: int, reindexed: set[int], rewound: int | None, catch_up_after: bool,
    ) -> None:
        """
        With small sections, the search yields exactly the blocks whose
        bloom passes, in order: with the bitmaps written through any
        height, after blocks are replaced at their height and after a
        rewind, before and after the indexer catches up.
        """

        addresses = [Address(bytes([index + 1]) * 20) for index in range(6)]
        topics = [Hash32(bytes([index + 100]) * 32) for index in range(8)]
        values = addresses + topics
        self.patch(module, "SECTION_SIZE", 16)
        store = MemoryStore()
        batch = store.batch()
        headers = {}
        for number, logs in enumerate(chain):
            header = make_header(number, [Log(addresses[a], tuple(topics[t] for t in ts), b"") for a, ts in logs])
            index_block(batch, header)
            headers[number] = header
        store.write(batch)
        indexer = LogIndexer(store)
        head = len(chain) - 1
        indexer.catch_up(head, limit=indexed + 1)
        batch = store.batch()
        for number in sorted(reindexed & set(headers)):
            unindex_block(batch, headers[number])
            headers[number] = make_header(number, [Log(addresses[number % 6], (topics[number % 8],), b"")])
            index_block(batch, headers[number])
        if rewound is not None and rewound < head:
            for number in range(rewound + 1, head + 1):
                unindex_block(batch, headers.pop(number))
            head = rewound
        store.write(batch)
        if catch_up_after:
            while indexer.catch_up(head, limit=7):
                pass
        masks = [[value_mask(values[v]) for v in group] for group in groups]
        first, last = min(bounds), max(bounds)
        expected = [
            number for number in range(first, last + 1)
            if number in headers and headers[number].logs_bloom != EMPTY_BLOOM
            and bloom_matches(headers[number].logs_bloom, masks)
        ]
        self.assertEqual(list(candidate_blocks(store, first, last, masks)), expected)
