"""
The 2048-bit logs bloom of headers and receipts.

Each value added (a log's address, each of its topics) sets three bits,
chosen by the first three pairs of bytes of its Keccak-256 hash, modulo 2048.
Bit 0 is the lowest bit of the last of the 256 bytes.
"""

from collections.abc import Iterable
from typing import TYPE_CHECKING

from nodex.crypto import keccak256

if TYPE_CHECKING:
    from nodex.structures.logs import Log

BLOOM_BYTES = 256
EMPTY_BLOOM = bytes(BLOOM_BYTES)
"""A bloom with no bit set."""


BITS_KEPT = 4_096
"""The most values whose bloom bits L{_bits} keeps (a few hundred KiB; all
are dropped when it is full): a token's address and its event's topic
recur in every transfer's log, and each costs a Keccak-256."""

_kept_bits: dict[bytes, tuple[tuple[int, int], ...]] = {}


def _bits(value: bytes) -> tuple[tuple[int, int], ...]:
    """
    The three (byte index, mask) pairs that C{value} sets.
    """
    found = _kept_bits.get(value)
    if found is not None:
        return found
    digest = keccak256(value)
    pairs = []
    for offset in (0, 2, 4):
        bit = ((digest[offset] << 8) | digest[offset + 1]) & 2047
        pairs.append((BLOOM_BYTES - 1 - bit // 8, 1 << (bit % 8)))
    found = tuple(pairs)
    if len(_kept_bits) >= BITS_KEPT:
        _kept_bits.clear()
    _kept_bits[bytes(value)] = found
    return found


def bloom_add(bloom: bytearray, value: bytes) -> None:
    """
    Set the three bits of C{value} in C{bloom}, in place.

    @param bloom: 256 bytes.
    """
    for index, mask in _bits(value):
        bloom[index] |= mask


def bloom_may_contain(bloom: bytes, value: bytes) -> bool:
    """
    Whether C{value} may have been added to C{bloom}: C{False} means surely
    not, C{True} means perhaps.
    """
    return all(bloom[index] & mask for index, mask in _bits(value))


def logs_bloom(logs: "Iterable[Log]") -> bytes:
    """
    The bloom of a sequence of logs: each log's address and topics.
    """
    bloom = bytearray(BLOOM_BYTES)
    # bloom_add and _bits inline: a receipt's bloom is made for every
    # transaction, and an ERC-20 transfer's log has four values whose bits
    # are nearly always kept (eight calls fewer: Receipt.from_logs of a
    # transfer 22 thousand machine instructions instead of 24.5).
    kept = _kept_bits
    for log in logs:
        for value in (log.address, *log.topics):
            for index, mask in kept.get(value) or _bits(value):
                bloom[index] |= mask
    return bytes(bloom)


def merge_blooms(blooms: Iterable[bytes]) -> bytes:
    """
    The union of several blooms, as a block's bloom is the union of its
    receipts' blooms.
    """
    merged = 0
    for bloom in blooms:
        merged |= int.from_bytes(bloom, "big")
    return merged.to_bytes(BLOOM_BYTES, "big")


__all__ = ["BLOOM_BYTES", "EMPTY_BLOOM", "bloom_add", "bloom_may_contain", "logs_bloom", "merge_blooms"]
