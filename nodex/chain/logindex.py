"""
The log index: what lets C{eth_getLogs} skip the blocks that cannot match.

Two kinds of entries share the C{log_index} column:

  - the block bloom, keyed by the 8-byte block number (the layout of
    L{nodex.db.schema.write_block_bloom}), one per canonical block;
  - the bit index, an inverted form of the same blooms: for every bit set in
    a canonical block's bloom, one empty-valued key
    C{0xff | bit (2 bytes) | section (6 bytes) | offset (2 bytes)}, where
    C{section} is the block number divided by L{SECTION_SIZE} and C{offset}
    the remainder.

A query for a value (an address or a topic) over a section reads the three
bit lists of the value under their C{(bit, section)} prefixes; the shortest
list holds every block that may contain the value, so a value that occurs
in few blocks costs a few keys per section, however long the range.  The bit
index needs no read-modify-write, so L{index_block} and L{unindex_block}
only add to the caller's batch: the chain writes them inside the batch that
moves the head (import, reorganisation, rewind).
"""

from collections.abc import Iterable, Iterator, Sequence

from nodex.crypto import keccak256
from nodex.db.kv import KeyValueStore, WriteBatch
from nodex.db.schema import LOG_INDEX, delete_block_bloom, read_block_bloom, write_block_bloom
from nodex.structures.bloom import BLOOM_BYTES, EMPTY_BLOOM
from nodex.structures.headers import Header

SECTION_SIZE = 1024
"""Blocks per section of the bit index."""

SECTION_MARK = b"\xfe"
"""The first byte of the key that says a section's blocks are in the bit index."""

BIT_INDEX_MARK = b"\xff"
"""The first byte of every bit-index key; block-bloom keys are 8 bytes and start lower."""

SHORT_STRETCH = 32
"""Below this many blocks a section's stretch is read bloom by bloom, not through the bit index."""

_BLOOM_BITS = BLOOM_BYTES * 8

BloomTests = list[list[tuple[tuple[int, int], ...]]]
"""
Bloom criteria as byte tests: per group, the alternatives, each the
C{(byte index, bit)} pairs that must all be set in a 256-byte bloom.
"""


def set_bits(bloom: bytes) -> list[int]:
    """
    The positions of the bits set in a bloom, numbered as the bloom's
    construction numbers them (bit 0 is the lowest bit of the last byte).

    @param bloom: 256 bytes.
    """
    value = int.from_bytes(bloom, "big")
    bits = []
    while value:
        low = value & -value
        bits.append(low.bit_length() - 1)
        value ^= low
    return bits


def bit_prefix(bit: int, section: int) -> bytes:
    """
    The key prefix of one bit's list within one section.

    @param bit: a bloom bit position, 0 .. 2047.
    @param section: a section number (block number // L{SECTION_SIZE}).
    """
    return BIT_INDEX_MARK + bit.to_bytes(2, "big") + section.to_bytes(6, "big")


def section_key(section: int) -> bytes:
    """
    The key whose presence says that the blocks of C{section} were indexed
    by L{index_block} (not only by their block bloom), so that the bit index
    may be trusted there.
    """
    return SECTION_MARK + section.to_bytes(6, "big")


def _bit_keys(header: Header) -> list[bytes]:
    """
    The bit-index keys of a block: one per bit set in its bloom.
    """
    section, offset = divmod(header.number, SECTION_SIZE)
    suffix = offset.to_bytes(2, "big")
    return [bit_prefix(bit, section) + suffix for bit in set_bits(header.logs_bloom)]


def index_block(batch: WriteBatch, header: Header) -> None:
    """
    Add a block that becomes canonical at its height to the log index.

    Call it inside the batch that makes the block canonical; a block that
    replaces another at the same height needs the other's L{unindex_block}
    first, in the same batch.

    @param batch: the import batch.
    @param header: the block's header; its number and logs bloom are used.
    """
    write_block_bloom(batch, header.number, header.logs_bloom)
    batch.put(LOG_INDEX, section_key(header.number // SECTION_SIZE), b"")
    for key in _bit_keys(header):
        batch.put(LOG_INDEX, key, b"")


def unindex_block(batch: WriteBatch, header: Header) -> None:
    """
    Remove a block that leaves the canonical chain from the log index.

    @param batch: the batch of the reorganisation or rewind.
    @param header: the header of the block that L{index_block} indexed.
    """
    delete_block_bloom(batch, header.number)
    for key in _bit_keys(header):
        batch.delete(LOG_INDEX, key)


def read_bloom(store: KeyValueStore, number: int) -> bytes | None:
    """
    The indexed bloom of the canonical block at C{number}, or L{None} if
    that height is not indexed.
    """
    return read_block_bloom(store, number)


class BitList:
    """
    A lazy iterator over the block numbers of one section whose bloom sets one bit.
    """

    __slots__ = ("_base", "_pairs")

    def __init__(self, store: KeyValueStore, bit: int, section: int) -> None:
        """
        Start walking the list of C{bit} in C{section}.
        """
        self._base = section * SECTION_SIZE
        self._pairs = store.iterate(LOG_INDEX, bit_prefix(bit, section))

    def __iter__(self) -> "BitList":
        """
        This object is its own iterator.
        """
        return self

    def __next__(self) -> int:
        """
        The next block number.

        @raise StopIteration: the list is exhausted.
        """
        key, _ = next(self._pairs)
        return self._base + int.from_bytes(key[-2:], "big")


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
    The byte tests of bloom masks (L{nodex.chain.logindex.value_mask}s,
    grouped as for L{nodex.chain.logindex.bloom_matches}).
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


class _BudgetExceededError(Exception):
    """
    A group's bit lists are longer than the current budget (internal to the search).
    """


def _value_candidates(store: KeyValueStore, section: int, mask: int, budget: list[int]) -> set[int]:
    """
    The blocks of C{section} that have every bit of C{mask}: the shortest of
    the value's bit lists, read in turns so that its cost is three times
    its length.

    This is the inner loop of a search over many blocks, so it walks the
    store's key iterators itself rather than through L{BitList}s.

    @param budget: a one-element list holding the keys still allowed; spent in place.
    @raise _BudgetExceededError: the budget ran out first.
    """
    lists = [(store.iterate(LOG_INDEX, bit_prefix(bit, section)), []) for bit in _mask_bits(mask)]
    remaining = budget[0]
    try:
        while True:
            for pairs, keys in lists:
                pair = next(pairs, None)
                if pair is None:
                    base = section * SECTION_SIZE
                    return {base + int.from_bytes(key[-2:], "big") for key in keys}
                keys.append(pair[0])
            remaining -= len(lists)
            if remaining < 0:
                raise _BudgetExceededError()
    finally:
        budget[0] = remaining


def _mask_bits(mask: int) -> list[int]:
    """
    The bit positions of an integer mask.
    """
    return set_bits(mask.to_bytes(BLOOM_BYTES, "big"))


def _section_candidates(store: KeyValueStore, section: int, groups: Sequence[Sequence[int]]) -> set[int]:
    """
    A superset of the blocks of C{section} that pass L{bloom_matches}: the
    candidates of the cheapest group, found by raising a budget until one
    group fits in it.
    """
    allowance = 64
    while True:
        for group in groups:
            budget = [allowance]
            try:
                result: set[int] = set()
                for mask in group:
                    result |= _value_candidates(store, section, mask, budget)
                return result
            except _BudgetExceededError:
                continue
        allowance *= 8


def candidate_blocks(
    store: KeyValueStore, first: int, last: int, groups: Sequence[Sequence[int]]
) -> Iterator[int]:
    """
    The canonical blocks from C{first} to C{last} (inclusive) whose bloom
    passes L{bloom_matches}, in ascending order.

    Short stretches are read bloom by bloom; longer ones go through the bit
    index section by section, and each candidate it yields is confirmed
    against its bloom.  Without any group every indexed block with a log is
    a candidate.  A section without the mark of L{section_key} (its blocks
    had only their block bloom written) is read bloom by bloom.

    @param groups: as for L{bloom_matches}; each group has at least one mask.
    """
    tests = bloom_tests(groups)
    number = first
    while number <= last:
        section = number // SECTION_SIZE
        section_last = min(last, section * SECTION_SIZE + SECTION_SIZE - 1)
        if not groups or section_last - number < SHORT_STRETCH or store.get(LOG_INDEX, section_key(section)) is None:
            numbers: Iterable[int] = range(number, section_last + 1)
        else:
            numbers = sorted(n for n in _section_candidates(store, section, groups) if number <= n <= section_last)
        for candidate in numbers:
            bloom = read_block_bloom(store, candidate)
            if bloom is not None and bloom != EMPTY_BLOOM and bloom_passes(bloom, 0, tests):
                yield candidate
        number = section_last + 1


__all__ = [
    "BIT_INDEX_MARK",
    "SECTION_MARK",
    "SECTION_SIZE",
    "SHORT_STRETCH",
    "BitList",
    "BloomTests",
    "bit_prefix",
    "bloom_matches",
    "bloom_passes",
    "bloom_tests",
    "candidate_blocks",
    "index_block",
    "read_bloom",
    "section_key",
    "set_bits",
    "unindex_block",
    "value_bits",
    "value_mask",
]
