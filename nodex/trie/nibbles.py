"""
Nibble paths and their hex-prefix encoding (Yellow Paper, appendix C).

A path is held as C{bytes} with one nibble (0 to 15) per byte, so that
indexing gives the nibble, slicing and comparison run in C, and conversion
to and from keys is a C{hex()} and a C{translate}.
"""

from binascii import unhexlify

from nodex.trie.errors import MalformedNodeError

_HEX_TO_NIBBLE = bytes.maketrans(b"0123456789abcdef", bytes(range(16)))

NIBBLE_TO_HEX = bytes.maketrans(bytes(range(16)), b"0123456789abcdef")
"""The C{translate} table from nibbles to hexadecimal digits, for encoders that pack a path inline (the nibbles
are 0 to 15: others pass unchanged, and C{unhexlify} refuses them)."""


def key_to_nibbles(key: bytes) -> bytes:
    """
    The nibble path of a byte key: two nibbles per byte, high nibble first.
    """
    return key.hex().encode("ascii").translate(_HEX_TO_NIBBLE)


def nibbles_to_key(nibbles: bytes) -> bytes:
    """
    The byte key of an even-length nibble path.

    @raise ValueError: the path has an odd length.
    """
    return unhexlify(nibbles.translate(NIBBLE_TO_HEX))


def encode_path(nibbles: bytes, is_leaf: bool) -> bytes:
    """
    The hex-prefix encoding of a leaf's or an extension's path: a flag nibble
    (2 for a leaf, plus 1 for an odd length), a zero pad nibble for an even
    length, then the path packed two nibbles a byte.
    """
    # The flag (and pad) nibbles written as hexadecimal digits before the path's: one translation, one unhexlify.
    if len(nibbles) & 1:
        return unhexlify((b"3" if is_leaf else b"1") + nibbles.translate(NIBBLE_TO_HEX))
    return unhexlify((b"20" if is_leaf else b"00") + nibbles.translate(NIBBLE_TO_HEX))


def decode_path(encoded: bytes) -> tuple[bytes, bool]:
    """
    Decode a hex-prefix encoded path.

    @return: the nibble path and whether it is a leaf's.
    @raise MalformedNodeError: the encoding is empty or its flag nibble is invalid.
    """
    if not encoded:
        raise MalformedNodeError("empty hex-prefix path")
    flag = encoded[0] >> 4
    if flag > 3:
        raise MalformedNodeError(f"invalid hex-prefix flag nibble {flag}")
    nibbles = key_to_nibbles(encoded)
    if flag & 1:
        return nibbles[1:], flag >= 2
    if nibbles[1] != 0:
        raise MalformedNodeError("hex-prefix pad nibble of an even path is not zero")
    return nibbles[2:], flag >= 2


def common_prefix_length(left: bytes, right: bytes) -> int:
    """
    The number of leading nibbles that C{left} and C{right} share.
    """
    length = min(len(left), len(right))
    for index in range(length):
        if left[index] != right[index]:
            return index
    return length


__all__ = ["NIBBLE_TO_HEX", "common_prefix_length", "decode_path", "encode_path", "key_to_nibbles", "nibbles_to_key"]
