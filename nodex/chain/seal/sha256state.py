"""
SHA-256 with its internal state exposed, for the compressed coinbase.

A merged-mining block stores the Bitcoin coinbase transaction in a
compressed form (reference §12.4): the SHA-256 state after the first
multiple of 64 bytes, then the remaining bytes. Checking the seal resumes
hashing from that state, which C{hashlib} cannot do, so the compression
function lives here. It only ever runs over a few 64-byte blocks per seal.
"""

import struct

from nodex.chain.errors import InvalidSealError

_K = (
    0x428A2F98, 0x71374491, 0xB5C0FBCF, 0xE9B5DBA5, 0x3956C25B, 0x59F111F1, 0x923F82A4, 0xAB1C5ED5,
    0xD807AA98, 0x12835B01, 0x243185BE, 0x550C7DC3, 0x72BE5D74, 0x80DEB1FE, 0x9BDC06A7, 0xC19BF174,
    0xE49B69C1, 0xEFBE4786, 0x0FC19DC6, 0x240CA1CC, 0x2DE92C6F, 0x4A7484AA, 0x5CB0A9DC, 0x76F988DA,
    0x983E5152, 0xA831C66D, 0xB00327C8, 0xBF597FC7, 0xC6E00BF3, 0xD5A79147, 0x06CA6351, 0x14292967,
    0x27B70A85, 0x2E1B2138, 0x4D2C6DFC, 0x53380D13, 0x650A7354, 0x766A0ABB, 0x81C2C92E, 0x92722C85,
    0xA2BFE8A1, 0xA81A664B, 0xC24B8B70, 0xC76C51A3, 0xD192E819, 0xD6990624, 0xF40E3585, 0x106AA070,
    0x19A4C116, 0x1E376C08, 0x2748774C, 0x34B0BCB5, 0x391C0CB3, 0x4ED8AA4A, 0x5B9CCA4F, 0x682E6FF3,
    0x748F82EE, 0x78A5636F, 0x84C87814, 0x8CC70208, 0x90BEFFFA, 0xA4506CEB, 0xBEF9A3F7, 0xC67178F2,
)

INITIAL_STATE = (
    0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19,
)

_MASK = 0xFFFFFFFF


def _rotr(x: int, n: int) -> int:
    return ((x >> n) | (x << (32 - n))) & _MASK


def compress(state: tuple[int, ...], block: bytes) -> tuple[int, ...]:
    """
    Run the SHA-256 compression function over one 64-byte block.

    @param state: the eight 32-bit words of the current state.
    @return: the eight words of the next state.
    """
    w = list(struct.unpack(">16I", block))
    for i in range(16, 64):
        s0 = _rotr(w[i - 15], 7) ^ _rotr(w[i - 15], 18) ^ (w[i - 15] >> 3)
        s1 = _rotr(w[i - 2], 17) ^ _rotr(w[i - 2], 19) ^ (w[i - 2] >> 10)
        w.append((w[i - 16] + s0 + w[i - 7] + s1) & _MASK)
    a, b, c, d, e, f, g, h = state
    for i in range(64):
        s1 = _rotr(e, 6) ^ _rotr(e, 11) ^ _rotr(e, 25)
        choice = (e & f) ^ (~e & g)
        t1 = (h + s1 + choice + _K[i] + w[i]) & _MASK
        s0 = _rotr(a, 2) ^ _rotr(a, 13) ^ _rotr(a, 22)
        majority = (a & b) ^ (a & c) ^ (b & c)
        t2 = (s0 + majority) & _MASK
        h, g, f, e, d, c, b, a = g, f, e, (d + t1) & _MASK, c, b, a, (t1 + t2) & _MASK
    return tuple((x + y) & _MASK for x, y in zip(state, (a, b, c, d, e, f, g, h)))


def midstate(data: bytes) -> tuple[int, ...]:
    """
    The SHA-256 state after absorbing C{data}, whose length is a multiple of 64.

    @raise InvalidSealError: the length is not a multiple of 64.
    """
    if len(data) % 64:
        raise InvalidSealError(f"midstate input of {len(data)} bytes is not a multiple of 64")
    state = INITIAL_STATE
    for offset in range(0, len(data), 64):
        state = compress(state, data[offset : offset + 64])
    return state


def finish(state: tuple[int, ...], absorbed: int, tail: bytes) -> bytes:
    """
    Complete a SHA-256 digest from a state that has absorbed C{absorbed} bytes.

    @param absorbed: how many bytes the state already covers (a multiple of 64).
    @param tail: the rest of the message.
    @return: the 32-byte digest of the whole message.
    """
    total_bits = (absorbed + len(tail)) * 8
    padded = tail + b"\x80" + b"\x00" * ((55 - len(tail)) % 64) + total_bits.to_bytes(8, "big")
    for offset in range(0, len(padded), 64):
        state = compress(state, padded[offset : offset + 64])
    return struct.pack(">8I", *state)


def state_to_bytes(state: tuple[int, ...]) -> bytes:
    """
    The 32-byte big-endian serialisation of a state (H0 to H7).
    """
    return struct.pack(">8I", *state)


def state_from_bytes(data: bytes) -> tuple[int, ...]:
    """
    Parse a 32-byte state serialised by L{state_to_bytes}.
    """
    return struct.unpack(">8I", data)
