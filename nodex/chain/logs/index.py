"""
The log index: what lets C{eth_getLogs} skip the blocks that cannot match.

Entries of the C{log_index} column:

  - the block bloom, keyed by the 8-byte block number (the layout of
    L{nodex.db.schema.write_block_bloom}), one per canonical block, written
    in the batch that makes the block canonical (L{index_block});
  - the bloom bitmaps, an inverted form of the same blooms: for every bloom
    bit and section of L{SECTION_SIZE} blocks, under
    C{BITMAP_MARK | section (6 bytes) | bit (2 bytes)}, a bitmap of
    C{SECTION_SIZE} bits (big-endian) in which bit C{offset} is set when the
    canonical block C{section * SECTION_SIZE + offset} sets that bloom bit;
  - C{INDEXED_KEY}: the 8-byte number through which the bitmaps are
    written (absent: none are);
  - C{STALE_MARK | section | number (8 bytes)}: the block C{number} of
    that section left the canonical chain, so the section's bitmaps may be
    wrong from that block on until they are rebuilt (the rebuild keeps the
    bits of the blocks below the lowest such number and reads the blooms
    of the blocks from it on only); C{STALE_MARK | section} alone, which
    stores written before that refinement hold, asks for the whole section.

The bitmaps are derived from the blooms after the fact by L{LogIndexer},
which the chain runs in its writer (every L{INDEX_LAG} blocks and at start):
a block's import writes one bloom, not one key per set bit, and the writer
keeps the bitmaps of the newest section in memory so that extending them
reads nothing. A query over a section reads the three bitmaps of each value
it asks for and combines them, which yields exactly the blocks whose bloom
passes; blocks beyond C{INDEXED_KEY} and stale sections are read bloom by
bloom. (This replaced, in schema version 2, an index of one empty key per
set bit and block, whose searches walked as many keys as a value had
blocks; see docs/state-and-logs.md.)
"""

from collections.abc import Iterator, Sequence

from nodex.crypto import keccak256
from nodex.db.kv import KeyValueStore, WriteBatch
from nodex.db.schema import LOG_INDEX, delete_block_bloom, number_key, read_block_bloom, write_block_bloom
from nodex.structures.bloom import BLOOM_BYTES, EMPTY_BLOOM
from nodex.structures.headers import Header

SECTION_SIZE = 1024
"""Blocks per section: the length of a bitmap in bits."""

BITMAP_MARK = b"\xfd"
"""The first byte of a bitmap's key; block-bloom keys are 8 bytes and start lower."""

STALE_MARK = b"\xfc"
"""The first byte of the key that says a section's bitmaps must be rebuilt."""

INDEXED_KEY = b"\xfb"
"""The key of the number through which the bitmaps are written."""

INDEX_LAG = 64
"""How many blocks the bitmaps may trail the head by before the chain extends them."""

CATCH_UP_BLOCKS = 4096
"""The most blocks one L{LogIndexer.catch_up} adds (so that a long catch-up at start is many short writer jobs)."""

_BLOOM_BITS = BLOOM_BYTES * 8

BloomTests = list[list[tuple[tuple[int, int], ...]]]
"""
Bloom criteria as byte tests: per group, the alternatives, each the
C{(byte index, bit)} pairs that must all be set in a 256-byte bloom.
"""


def set_bits(bloom: bytes) -> list[int]:
    """
    The positions of the bits set in a bloom, numbered as the bloom's
    construction numbers them (bit 0 is the lowest bit of the last byte),
    in ascending order.

    @param bloom: 256 bytes.
    """
    # From the highest bit down, each found with bit_length and cleared with
    # one XOR: two operations on the 2,048-bit integer a bit, against three
    # (and a negation) for taking the lowest bit; reversed at the end.
    value = int.from_bytes(bloom, "big")
    bits = []
    while value:
        top = value.bit_length() - 1
        bits.append(top)
        value ^= 1 << top
    bits.reverse()
    return bits


def bitmap_key(section: int, bit: int) -> bytes:
    """
    The key of one bloom bit's bitmap within one section.

    @param section: a section number (block number // L{SECTION_SIZE}).
    @param bit: a bloom bit position, 0 .. 2047.
    """
    return BITMAP_MARK + section.to_bytes(6, "big") + bit.to_bytes(2, "big")


def stale_key(section: int) -> bytes:
    """
    The key whose presence says that the bitmaps of C{section} may be wrong
    anywhere (a whole-section rebuild).
    """
    return STALE_MARK + section.to_bytes(6, "big")


def stale_block_key(number: int) -> bytes:
    """
    The key whose presence says that the bitmaps of the block C{number}'s
    section may be wrong from that block on.
    """
    return stale_key(number // SECTION_SIZE) + number.to_bytes(8, "big")


def index_block(batch: WriteBatch, header: Header) -> None:
    """
    Add a block that becomes canonical at its height to the log index: its
    bloom (the bitmaps follow, L{LogIndexer}).

    Call it inside the batch that makes the block canonical; a block that
    replaces another at the same height needs the other's L{unindex_block}
    first, in the same batch.

    @param batch: the import batch.
    @param header: the block's header; its number and logs bloom are used.
    """
    write_block_bloom(batch, header.number, header.logs_bloom)


def unindex_block(batch: WriteBatch, header: Header, through: int | None = None) -> None:
    """
    Remove a block that leaves the canonical chain from the log index: its
    bloom goes, and its section's bitmaps are marked for a rebuild, unless
    they cannot hold it.

    @param batch: the batch of the reorganisation or rewind.
    @param header: the header of the block that L{index_block} indexed.
    @param through: L{indexed_through} as the store has it before the
        batch (L{None}: not known): a block above it is in no bitmap yet,
        so that nothing needs a rebuild (a test suite's C{evm_revert}
        rewinds blocks the bitmaps, trailing the head by up to
        L{INDEX_LAG}, have not reached).
    """
    delete_block_bloom(batch, header.number)
    if through is None or header.number <= through:
        batch.put(LOG_INDEX, stale_block_key(header.number), b"")


def read_bloom(store: KeyValueStore, number: int) -> bytes | None:
    """
    The indexed bloom of the canonical block at C{number}, or L{None} if
    that height is not indexed.
    """
    return read_block_bloom(store, number)


def indexed_through(store: KeyValueStore) -> int:
    """
    The number through which the bitmaps are written (-1: none are).
    """
    value = store.get(LOG_INDEX, INDEXED_KEY)
    return -1 if value is None else int.from_bytes(value, "big")


def stale_sections(store: KeyValueStore) -> set[int]:
    """
    The sections whose bitmaps wait for a rebuild.
    """
    return {int.from_bytes(key[1:7], "big") for key, _ in store.iterate(LOG_INDEX, STALE_MARK)}


def stale_from(store: KeyValueStore) -> dict[int, tuple[int, list[bytes]]]:
    """
    The stale sections, each with the lowest block from which its bitmaps
    may be wrong (its first block for a whole-section mark) and its marks' keys.
    """
    stale: dict[int, tuple[int, list[bytes]]] = {}
    for key, _ in store.iterate(LOG_INDEX, STALE_MARK):
        section = int.from_bytes(key[1:7], "big")
        number = int.from_bytes(key[7:], "big") if len(key) > 7 else section * SECTION_SIZE
        lowest, keys = stale.get(section, (number, []))
        keys.append(key)
        stale[section] = (min(lowest, number), keys)
    return stale


def _add_blooms(bitmaps: dict[int, int], blocks: dict[bytes, int], changed: set[int] | None = None) -> None:
    """
    Set the blocks of each bloom in the bitmaps of the bloom's bits.

    The blocks come grouped by bloom: consecutive blocks often have the same
    one (a token's transfers between the same two accounts, a contract's
    same event; every block without a log), and a bloom's bits are found
    once for all its blocks rather than once a block, the most expensive
    part of indexing a block (some 35 thousand machine instructions for a
    transfer's twelve bits, against about one for grouping it).

    @param bitmaps: a section's bitmaps by bloom bit, changed in place.
    @param blocks: per distinct bloom, its blocks' bits in the section's
        bitmaps (bit C{offset} for the section's block C{offset}).
    @param changed: collects the bits whose bitmaps were set, if given.
    """
    for bloom, flags in blocks.items():
        for bit in set_bits(bloom):
            bitmaps[bit] = bitmaps.get(bit, 0) | flags
            if changed is not None:
                changed.add(bit)


class LogIndexer:
    """
    Writes the bloom bitmaps of the canonical blocks, from their blooms.

    One indexer per store, run only by the chain's writer (so never two at
    once). It keeps the bitmaps of the section it is extending in memory,
    as written: its batch is built from them, and they are updated only
    once the batch is written, so a failed write leaves them as the store has
    them.
    """

    def __init__(self, store: KeyValueStore) -> None:
        """
        @param store: the chain's store.
        """
        self._store = store
        self._section = -1
        self._bitmaps: dict[int, int] = {}

    def catch_up(self, head: int, limit: int = CATCH_UP_BLOCKS) -> int:
        """
        Rebuild the stale sections, then extend the bitmaps towards C{head},
        by at most C{limit} blocks; one write.

        @param head: the canonical head's number.
        @return: how many blocks are still to index after this call.
        """
        store = self._store
        batch = store.batch()
        through = indexed_through(store)
        rebuilt = {}
        for section, (lowest, keys) in sorted(stale_from(store).items()):
            rebuilt[section] = self._rebuild(batch, section, min(through, head), lowest)
            for key in keys:
                batch.delete(LOG_INDEX, key)
        through = min(through, head)
        last = min(head, through + limit)
        section = self._section
        if section in rebuilt:
            bitmaps = rebuilt[section]
        else:
            bitmaps = dict(self._bitmaps) if section >= 0 else {}
        changed: set[int] = set()
        blocks: dict[bytes, int] = {}
        for number in range(through + 1, last + 1):
            number_section, offset = divmod(number, SECTION_SIZE)
            if number_section != section:
                _add_blooms(bitmaps, blocks, changed)
                self._write_bitmaps(batch, section, bitmaps, changed)
                section = number_section
                bitmaps = rebuilt[section] if section in rebuilt else self._read_section(section)
                changed = set()
                blocks = {}
            bloom = read_block_bloom(store, number)
            if bloom is None:
                # Not canonical (yet): the bitmaps stop before it.
                last = number - 1
                break
            blocks[bloom] = blocks.get(bloom, 0) | 1 << offset
        _add_blooms(bitmaps, blocks, changed)
        self._write_bitmaps(batch, section, bitmaps, changed)
        if last >= 0:
            batch.put(LOG_INDEX, INDEXED_KEY, number_key(last))
        else:
            batch.delete(LOG_INDEX, INDEXED_KEY)
        store.write(batch)
        self._section = section
        self._bitmaps = bitmaps
        return max(0, head - last)

    def _read_section(self, section: int) -> dict[int, int]:
        """
        The stored bitmaps of a section.
        """
        return {
            int.from_bytes(key[-2:], "big"): int.from_bytes(value, "big")
            for key, value in self._store.iterate(LOG_INDEX, BITMAP_MARK + section.to_bytes(6, "big"))
        }

    @staticmethod
    def _write_bitmaps(batch: WriteBatch, section: int, bitmaps: dict[int, int], changed: set[int]) -> None:
        """
        Put the changed bitmaps of a section in the batch.
        """
        for bit in changed:
            batch.put(LOG_INDEX, bitmap_key(section, bit), bitmaps[bit].to_bytes(SECTION_SIZE // 8, "big"))

    def _rebuild(self, batch: WriteBatch, section: int, through: int, lowest: int) -> dict[int, int]:
        """
        Recompute a section's bitmaps from block C{lowest} up to C{through}:
        the bits of the blocks below C{lowest} stay as written, those of the
        blocks from it on come from their blooms; put the changed bitmaps in
        the batch, deleting the stored ones no block sets any more.  (A
        rewind of the dev chain's last few blocks reads no bloom at all:
        it was the cost of C{evm_revert} that grew with the chain, up to
        1,024 bloom reads.)

        @return: the section's bitmaps.
        """
        base = section * SECTION_SIZE
        written = dict(self._bitmaps) if section == self._section else self._read_section(section)
        kept = (1 << max(lowest - base, 0)) - 1
        bitmaps = {bit: bitmap & kept for bit, bitmap in written.items() if bitmap & kept}
        blocks: dict[bytes, int] = {}
        for number in range(max(lowest, base), min(through, base + SECTION_SIZE - 1) + 1):
            bloom = read_block_bloom(self._store, number)
            if bloom is not None:
                blocks[bloom] = blocks.get(bloom, 0) | 1 << (number - base)
        _add_blooms(bitmaps, blocks)
        for bit in written:
            if bit not in bitmaps:
                batch.delete(LOG_INDEX, bitmap_key(section, bit))
        self._write_bitmaps(batch, section, bitmaps, {bit for bit, bitmap in bitmaps.items() if written.get(bit) != bitmap})
        if section == self._section:
            self._section = -1
        return bitmaps


def value_bits(value: bytes) -> tuple[int, ...]:
    """
    The three bloom bits that an address or a topic sets, numbered as
    L{set_bits} numbers them (the bloom read as a big-endian integer).
    """
    digest = keccak256(value)
    return tuple(((digest[i] << 8) | digest[i + 1]) & (_BLOOM_BITS - 1) for i in (0, 2, 4))


def value_mask(value: bytes) -> int:
    """
    The bloom, as an integer, of the single value C{value}.
    """
    mask = 0
    for bit in value_bits(value):
        mask |= 1 << bit
    return mask


def bloom_matches(bloom: bytes, groups: Sequence[Sequence[int]]) -> bool:
    """
    Whether a bloom may hold a log that meets every group of criteria.

    @param groups: per criterion (the addresses, each topic position), the
        L{value_mask}s of its alternatives; a log meets a group if it has
        any of them.
    """
    value = int.from_bytes(bloom, "big")
    return all(any(value & mask == mask for mask in group) for group in groups)


def bloom_tests(groups: Sequence[Sequence[int]]) -> BloomTests:
    """
    The byte tests of bloom masks (L{nodex.chain.logs.index.value_mask}s,
    grouped as for L{nodex.chain.logs.index.bloom_matches}).
    """
    tests = []
    for group in groups:
        alternatives = []
        for mask in group:
            pairs = []
            while mask:
                low = mask & -mask
                bit = low.bit_length() - 1
                pairs.append((BLOOM_BYTES - 1 - bit // 8, 1 << (bit % 8)))
                mask ^= low
            alternatives.append(tuple(pairs))
        tests.append(alternatives)
    return tests


def bloom_passes(data: bytes, offset: int, tests: BloomTests) -> bool:
    """
    Whether the bloom at C{offset} in C{data} passes every group of C{tests}.
    """
    for group in tests:
        for pairs in group:
            for index, bit in pairs:
                if not data[offset + index] & bit:
                    break
            else:
                break
        else:
            return False
    return True


def _mask_bits(mask: int) -> list[int]:
    """
    The bit positions of an integer mask.
    """
    return set_bits(mask.to_bytes(BLOOM_BYTES, "big"))


def _section_matches(store: KeyValueStore, section: int, groups: Sequence[Sequence[Sequence[int]]]) -> int:
    """
    The blocks of C{section} whose bloom passes L{bloom_matches}, as a
    bitmap (bit C{offset} for block C{section * SECTION_SIZE + offset}).

    @param groups: as for L{bloom_matches}, each mask given as its bit positions.
    """
    read: dict[int, int] = {}

    def bitmap(bit: int) -> int:
        value = read.get(bit)
        if value is None:
            stored = store.get(LOG_INDEX, bitmap_key(section, bit))
            value = read[bit] = 0 if stored is None else int.from_bytes(stored, "big")
        return value

    result = -1
    for group in groups:
        union = 0
        for bits in group:
            blocks = -1
            for bit in bits:
                blocks &= bitmap(bit)
                if not blocks:
                    break
            union |= blocks
        result &= union
        if not result:
            return 0
    return result


def candidate_blocks(
    store: KeyValueStore, first: int, last: int, groups: Sequence[Sequence[int]]
) -> Iterator[int]:
    """
    The canonical blocks from C{first} to C{last} (inclusive) whose bloom
    passes L{bloom_matches}, in ascending order.

    Blocks covered by the bitmaps come from them; the others (beyond
    L{indexed_through}, in stale sections, or every block when there are
    no groups) are read bloom by bloom. Without any group every block with
    a log is a candidate.

    @param groups: as for L{bloom_matches}; each group has at least one mask.
    """
    tests = bloom_tests(groups)
    bit_groups = [[_mask_bits(mask) for mask in group] for group in groups]
    through = indexed_through(store) if groups else -1
    stale = stale_sections(store) if through >= first else set()
    number = first
    while number <= last:
        section = number // SECTION_SIZE
        base = section * SECTION_SIZE
        section_last = min(last, base + SECTION_SIZE - 1)
        if number <= through and section not in stale:
            covered_last = min(section_last, through)
            matches = _section_matches(store, section, bit_groups) >> (number - base)
            position = number
            while matches and position <= covered_last:
                low = matches & -matches
                skip = low.bit_length() - 1
                position += skip
                if position > covered_last:
                    break
                yield position
                matches >>= skip + 1
                position += 1
            number = covered_last + 1
            continue
        for candidate in range(number, section_last + 1):
            bloom = read_block_bloom(store, candidate)
            if bloom is not None and bloom != EMPTY_BLOOM and bloom_passes(bloom, 0, tests):
                yield candidate
        number = section_last + 1


__all__ = [
    "BITMAP_MARK",
    "CATCH_UP_BLOCKS",
    "INDEXED_KEY",
    "INDEX_LAG",
    "SECTION_SIZE",
    "STALE_MARK",
    "BloomTests",
    "LogIndexer",
    "bitmap_key",
    "bloom_matches",
    "bloom_passes",
    "bloom_tests",
    "candidate_blocks",
    "index_block",
    "indexed_through",
    "read_bloom",
    "set_bits",
    "stale_block_key",
    "stale_from",
    "stale_key",
    "stale_sections",
    "unindex_block",
    "value_bits",
    "value_mask",
]
