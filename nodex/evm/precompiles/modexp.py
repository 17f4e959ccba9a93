"""
MODEXP (address 0x05): arbitrary-precision modular exponentiation, EIP-198,
priced by EIP-2565.

The input starts with three 32-byte lengths (base, exponent, modulus) followed
by the three numbers, big-endian, zero-filled past the end of the data.  The
declared lengths may be enormous; the price is computed from the header and
the first 32 bytes of the exponent only, so that nothing is allocated before
the caller has been charged for it.
"""

from nodex.evm.precompiles.words import read_uint

GAS_MODEXP_MINIMUM = 200
GAS_MODEXP_DIVISOR = 3


def _lengths(data: bytes) -> tuple[int, int, int]:
    """
    The declared base, exponent and modulus lengths.
    """
    return read_uint(data, 0, 32), read_uint(data, 32, 32), read_uint(data, 64, 32)


def multiplication_complexity(base_length: int, modulus_length: int) -> int:
    """
    EIP-2565's cost of one multiplication: the square of the number of 8-byte
    words in the larger of base and modulus.
    """
    words = (max(base_length, modulus_length) + 7) // 8
    return words * words


def iteration_count(exponent_length: int, exponent_head: int) -> int:
    """
    EIP-2565's estimate of the squarings needed, at least 1.

    @param exponent_length: the declared exponent length in bytes.
    @param exponent_head: the first C{min(32, exponent_length)} bytes of the
        exponent as an integer.
    """
    if exponent_length <= 32:
        count = max(exponent_head.bit_length() - 1, 0)
    else:
        count = 8 * (exponent_length - 32) + max(exponent_head.bit_length() - 1, 0)
    return max(count, 1)


def modexp_gas(data: bytes) -> int:
    """
    The EIP-2565 price: complexity times iterations over 3, at least 200.
    """
    base_length, exponent_length, modulus_length = _lengths(data)
    exponent_head = read_uint(data, 96 + base_length, min(32, exponent_length))
    complexity = multiplication_complexity(base_length, modulus_length)
    return max(
        GAS_MODEXP_MINIMUM,
        complexity * iteration_count(exponent_length, exponent_head) // GAS_MODEXP_DIVISOR,
    )


def modexp(data: bytes) -> bytes:
    """
    C{base ** exponent % modulus}, as many bytes as the modulus length.

    A zero modulus gives zeros; an empty modulus gives empty output without
    reading the other two numbers.
    """
    base_length, exponent_length, modulus_length = _lengths(data)
    if modulus_length == 0:
        return b""
    modulus = read_uint(data, 96 + base_length + exponent_length, modulus_length)
    if modulus == 0:
        return bytes(modulus_length)
    base = read_uint(data, 96, base_length)
    exponent = read_uint(data, 96 + base_length, exponent_length)
    return pow(base, exponent, modulus).to_bytes(modulus_length, "big")


__all__ = [
    "GAS_MODEXP_DIVISOR",
    "GAS_MODEXP_MINIMUM",
    "iteration_count",
    "modexp",
    "modexp_gas",
    "multiplication_complexity",
]
