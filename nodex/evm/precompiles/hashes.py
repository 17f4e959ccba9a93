"""
The hashing precompiles: SHA-256 (0x02), RIPEMD-160 (0x03) and the identity
copy (0x04), each priced at a base plus a charge per 32-byte word of input.
"""

from nodex.crypto import ripemd160 as ripemd160_digest
from nodex.crypto import sha256 as sha256_digest
from nodex.evm.precompiles.words import ceil32_words

GAS_SHA256 = 60
GAS_SHA256_WORD = 12
GAS_RIPEMD160 = 600
GAS_RIPEMD160_WORD = 120
GAS_IDENTITY = 15
GAS_IDENTITY_WORD = 3


def sha256_gas(data: bytes) -> int:
    """
    60 gas plus 12 per word of input.
    """
    return GAS_SHA256 + GAS_SHA256_WORD * ceil32_words(len(data))


def sha256(data: bytes) -> bytes:
    """
    The 32-byte SHA-256 digest of the whole input.
    """
    return sha256_digest(data)


def ripemd160_gas(data: bytes) -> int:
    """
    600 gas plus 120 per word of input.
    """
    return GAS_RIPEMD160 + GAS_RIPEMD160_WORD * ceil32_words(len(data))


def ripemd160(data: bytes) -> bytes:
    """
    The 20-byte RIPEMD-160 digest of the input, left-padded to 32 bytes.
    """
    return bytes(12) + ripemd160_digest(data)


def identity_gas(data: bytes) -> int:
    """
    15 gas plus 3 per word of input.
    """
    return GAS_IDENTITY + GAS_IDENTITY_WORD * ceil32_words(len(data))


def identity(data: bytes) -> bytes:
    """
    The input, unchanged.
    """
    return bytes(data)


__all__ = [
    "GAS_IDENTITY",
    "GAS_IDENTITY_WORD",
    "GAS_RIPEMD160",
    "GAS_RIPEMD160_WORD",
    "GAS_SHA256",
    "GAS_SHA256_WORD",
    "identity",
    "identity_gas",
    "ripemd160",
    "ripemd160_gas",
    "sha256",
    "sha256_gas",
]
