"""
Reading fixed-width fields out of call data the way every precompile does.

The EVM treats call data as if it were followed by an endless run of zero
bytes, so a field that starts or ends past the end of the input reads as
zeros.  These functions never allocate more than the field they return, even
when an offset comes from a declared length as large as 2**256.
"""


def ceil32_words(length: int) -> int:
    """
    The number of 32-byte words needed to hold C{length} bytes.
    """
    return (length + 31) // 32


def read_padded(data: bytes, start: int, length: int) -> bytes:
    """
    C{length} bytes of C{data} from C{start}, zero-filled past its end.

    @param start: an offset, possibly far beyond the end of C{data}.
    @param length: the width of the field; the caller bounds it (it is
        allocated whole).
    """
    chunk = data[start : start + length] if start < len(data) else b""
    return chunk + bytes(length - len(chunk))


def read_uint(data: bytes, start: int, length: int) -> int:
    """
    The big-endian unsigned integer in C{length} bytes of C{data} from
    C{start}, zero-filled past its end, without allocating the padding.
    """
    if start >= len(data) or length == 0:
        return 0
    chunk = data[start : start + length]
    return int.from_bytes(chunk, "big") << (8 * (length - len(chunk)))


__all__ = ["ceil32_words", "read_padded", "read_uint"]
