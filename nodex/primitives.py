"""
Names for the plain values that travel between layers.

Words, balances and nonces are plain Python C{int}; byte strings are
C{bytes}.  The C{NewType}s below document intent in signatures without any
cost at run time.
"""

from typing import NewType

Address = NewType("Address", bytes)
"""A 20-byte account address."""

Hash32 = NewType("Hash32", bytes)
"""A 32-byte Keccak-256 (or SHA-256) digest."""

UINT256_CEILING = 2**256
UINT256_MAX = UINT256_CEILING - 1
UINT64_CEILING = 2**64

ZERO_ADDRESS = Address(b"\x00" * 20)
ZERO_HASH32 = Hash32(b"\x00" * 32)

__all__ = [
    "Address",
    "Hash32",
    "UINT256_CEILING",
    "UINT256_MAX",
    "UINT64_CEILING",
    "ZERO_ADDRESS",
    "ZERO_HASH32",
]
