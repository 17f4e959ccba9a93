"""
BLAKE2F (address 0x09): the BLAKE2b compression function F, EIP-152.

The input is exactly 213 bytes: rounds (4 bytes, big-endian), the state h
(8 words), the message block m (16 words), the offset counter t (2 words),
all words 8 bytes little-endian, and the final-block flag (one byte, 0 or 1).
The price is one gas per round.

One gas a round is priced for native code: this module's pure-Python
L{compress} runs about 7 µs a round (0.15 Mgas/s), so a block that buys
millions of rounds would take minutes to check.  When C{blake2b-py} (a
maintained Rust implementation, about 20 ns a round) is installed,
L{blake2f} uses it; L{compress} remains the reference it is tested against
and the fallback without it.
"""

import struct
from collections.abc import Callable

from nodex.evm.precompiles.errors import PrecompileError

NativeCompress = Callable[[int, list[int], list[int], list[int], bool], bytes]

native_compress: NativeCompress | None
try:
    # A C extension outside nodex.crypto: BLAKE2F is its only user, and
    # hashlib's BLAKE2b does not expose F with a chosen number of rounds.
    from blake2b import compress as native_compress
except ImportError:  # pragma: no cover - depends on the environment
    native_compress = None

BLAKE2F_INPUT_LENGTH = 213
GAS_BLAKE2_PER_ROUND = 1

_MASK = 0xFFFFFFFFFFFFFFFF

# The BLAKE2b initialisation vector (RFC 7693, section 2.6).
_IV = (
    0x6A09E667F3BCC908,
    0xBB67AE8584CAA73B,
    0x3C6EF372FE94F82B,
    0xA54FF53A5F1D36F1,
    0x510E527FADE682D1,
    0x9B05688C2B3E6C1F,
    0x1F83D9ABFB41BD6B,
    0x5BE0CD19137E2179,
)

# The message schedule (RFC 7693, section 2.7); round i uses row i mod 10.
_SIGMA = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
    (14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3),
    (11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4),
    (7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8),
    (9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13),
    (2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9),
    (12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11),
    (13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10),
    (6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5),
    (10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0),
)

# The four columns then the four diagonals of the 4x4 working state.
_MIXES = (
    (0, 4, 8, 12),
    (1, 5, 9, 13),
    (2, 6, 10, 14),
    (3, 7, 11, 15),
    (0, 5, 10, 15),
    (1, 6, 11, 12),
    (2, 7, 8, 13),
    (3, 4, 9, 14),
)


def compress(
    rounds: int,
    h: tuple[int, ...],
    m: tuple[int, ...],
    t: tuple[int, int],
    final: bool,
) -> tuple[int, ...]:
    """
    The BLAKE2b compression function F (RFC 7693, section 3.2) with a
    caller-chosen number of rounds.

    The mixing function G (section 3.1) is written out inside the loop: a
    function call per mix would double the cost of a round in CPython.

    @return: the new 8-word state.
    """
    v = list(h) + list(_IV)
    v[12] ^= t[0]
    v[13] ^= t[1]
    if final:
        v[14] ^= _MASK
    mask = _MASK
    for round_number in range(rounds):
        s = _SIGMA[round_number % 10]
        for i, (a, b, c, d) in enumerate(_MIXES):
            va = (v[a] + v[b] + m[s[2 * i]]) & mask
            vd = v[d] ^ va
            vd = ((vd >> 32) | (vd << 32)) & mask
            vc = (v[c] + vd) & mask
            vb = v[b] ^ vc
            vb = ((vb >> 24) | (vb << 40)) & mask
            va = (va + vb + m[s[2 * i + 1]]) & mask
            vd ^= va
            vd = ((vd >> 16) | (vd << 48)) & mask
            vc = (vc + vd) & mask
            vb ^= vc
            v[a] = va
            v[b] = ((vb >> 63) | (vb << 1)) & mask
            v[c] = vc
            v[d] = vd
    return tuple(h[i] ^ v[i] ^ v[i + 8] for i in range(8))


def blake2f_gas(data: bytes) -> int:
    """
    One gas per round; zero for input of the wrong length, which
    L{blake2f} rejects.
    """
    if len(data) != BLAKE2F_INPUT_LENGTH:
        return 0
    return GAS_BLAKE2_PER_ROUND * int.from_bytes(data[:4], "big")


def blake2f(data: bytes) -> bytes:
    """
    Run F on the 213-byte input and return the new state, 64 bytes.

    @raise PrecompileError: the input is not exactly 213 bytes, or the final
        flag is neither 0 nor 1.
    """
    if len(data) != BLAKE2F_INPUT_LENGTH:
        raise PrecompileError(
            f"blake2f input must be {BLAKE2F_INPUT_LENGTH} bytes, got {len(data)}"
        )
    flag = data[212]
    if flag not in (0, 1):
        raise PrecompileError(f"blake2f final-block flag must be 0 or 1, got {flag}")
    rounds = int.from_bytes(data[:4], "big")
    h = struct.unpack_from("<8Q", data, 4)
    m = struct.unpack_from("<16Q", data, 68)
    t = struct.unpack_from("<2Q", data, 196)
    if native_compress is not None:
        return bytes(native_compress(rounds, list(h), list(m), list(t), flag == 1))
    return struct.pack("<8Q", *compress(rounds, h, m, (t[0], t[1]), flag == 1))


__all__ = [
    "BLAKE2F_INPUT_LENGTH",
    "GAS_BLAKE2_PER_ROUND",
    "blake2f",
    "blake2f_gas",
    "compress",
    "native_compress",
]
