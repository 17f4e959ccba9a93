"""
A small, exact RLP codec for trie nodes: nested lists of byte strings.

The general C{rlp} package handles typed objects (sedes) and costs tens of
microseconds for a 17-item branch node; the trie only ever encodes byte
strings and lists of them, so this module does that much, by concatenation.
The decoder is strict: it accepts only the canonical encoding (shortest
length prefixes, single bytes below 0x80 written bare), as the trie's hashes
depend on there being exactly one encoding of each node.
"""

from typing import Union

from nodex.trie.errors import MalformedNodeError

RLPItem = Union[bytes, list["RLPItem"]]
"""A byte string or a (nested) list of them."""

EMPTY_STRING = b"\x80"
"""The encoding of the empty byte string."""


def _length_prefix(length: int, offset: int) -> bytes:
    """
    The prefix of a payload of C{length} bytes: C{offset} is 0x80 for a
    string, 0xC0 for a list.
    """
    if length < 56:
        return bytes([offset + length])
    length_bytes = length.to_bytes((length.bit_length() + 7) // 8, "big")
    return bytes([offset + 55 + len(length_bytes)]) + length_bytes


# Trie nodes are at most a few hundred bytes: their prefixes come from tables.
_TABLE_SIZE = 1024
_STRING_PREFIXES = [_length_prefix(length, 0x80) for length in range(_TABLE_SIZE)]
_LIST_PREFIXES = [_length_prefix(length, 0xC0) for length in range(_TABLE_SIZE)]


def encode_bytes(value: bytes) -> bytes:
    """
    The RLP encoding of one byte string.
    """
    length = len(value)
    if length == 1 and value[0] < 0x80:
        return value
    if length < _TABLE_SIZE:
        return _STRING_PREFIXES[length] + value
    return _length_prefix(length, 0x80) + value


def encode_list_payload(payload: bytes) -> bytes:
    """
    The RLP encoding of a list whose items, already encoded, concatenate to
    C{payload}.
    """
    length = len(payload)
    if length < _TABLE_SIZE:
        return _LIST_PREFIXES[length] + payload
    return _length_prefix(length, 0xC0) + payload


def encode(item: RLPItem) -> bytes:
    """
    The RLP encoding of a byte string or a nested list of them.

    @raise MalformedNodeError: C{item} holds something other than bytes and lists.
    """
    if isinstance(item, (bytes, bytearray)):
        return encode_bytes(bytes(item))
    if isinstance(item, list):
        return encode_list_payload(b"".join([encode(child) for child in item]))
    raise MalformedNodeError(f"cannot RLP-encode a {type(item).__name__}")


def _read_length(data: bytes, position: int, size: int, end: int) -> int:
    """
    Read a long-form length of C{size} big-endian bytes at C{position}.

    @raise MalformedNodeError: the length is truncated, has leading zeros or
        would fit the short form.
    """
    if position + size > end:
        raise MalformedNodeError("RLP length prefix runs past the end of the data")
    if data[position] == 0:
        raise MalformedNodeError("RLP length has leading zero bytes")
    length = int.from_bytes(data[position : position + size], "big")
    if length < 56:
        raise MalformedNodeError("RLP long-form length used for fewer than 56 bytes")
    return length


def _decode_at(data: bytes, position: int, end: int) -> tuple[RLPItem, int]:
    """
    Decode the item starting at C{position}, which must end by C{end}.

    @return: the item and the position just after it.
    @raise MalformedNodeError: the encoding is truncated or not canonical.
    """
    if position >= end:
        raise MalformedNodeError("RLP item expected but the data ended")
    first = data[position]
    if first < 0x80:
        return data[position : position + 1], position + 1
    if first < 0xB8:
        start, length = position + 1, first - 0x80
        if length == 1 and start < end and data[start] < 0x80:
            raise MalformedNodeError("single byte below 0x80 must not have a prefix")
    elif first < 0xC0:
        size = first - 0xB7
        length, start = _read_length(data, position + 1, size, end), position + 1 + size
    else:
        if first < 0xF8:
            start, length = position + 1, first - 0xC0
        else:
            size = first - 0xF7
            length, start = _read_length(data, position + 1, size, end), position + 1 + size
        stop = start + length
        if stop > end:
            raise MalformedNodeError("RLP list runs past the end of the data")
        items: list[RLPItem] = []
        while start < stop:
            # Short strings (hashes, paths, small values) inline: most items are.
            first = data[start]
            if 0x80 < first < 0xB8:
                end = start + first - 0x7F
                if end > stop:
                    raise MalformedNodeError("RLP string runs past the end of its list")
                if first == 0x81 and data[start + 1] < 0x80:
                    raise MalformedNodeError("single byte below 0x80 must not have a prefix")
                items.append(data[start + 1 : end])
                start = end
            else:
                item, start = _decode_at(data, start, stop)
                items.append(item)
        return items, stop
    stop = start + length
    if stop > end:
        raise MalformedNodeError("RLP string runs past the end of the data")
    return data[start:stop], stop


def decode_item(data: bytes, position: int, end: int) -> tuple[RLPItem, int]:
    """
    Decode the one item that starts at C{position} and ends by C{end}.

    @return: the item and the position just after it.
    @raise MalformedNodeError: the encoding is truncated or not canonical.
    """
    return _decode_at(data, position, end)


def list_payload_bounds(data: bytes) -> tuple[int, int]:
    """
    Where the payload of the list that spans all of C{data} starts and stops.

    @raise MalformedNodeError: C{data} is not one canonical RLP list.
    """
    if not data or data[0] < 0xC0:
        raise MalformedNodeError("an RLP list was expected")
    first = data[0]
    if first < 0xF8:
        start, length = 1, first - 0xC0
    else:
        size = first - 0xF7
        length, start = _read_length(data, 1, size, len(data)), 1 + size
    if start + length != len(data):
        raise MalformedNodeError("the RLP list does not span the data exactly")
    return start, start + length


def decode(data: bytes) -> RLPItem:
    """
    Decode one canonical RLP item that spans all of C{data}.

    @raise MalformedNodeError: the data is empty, truncated, not canonical or
        followed by trailing bytes.
    """
    data = bytes(data)
    item, stop = _decode_at(data, 0, len(data))
    if stop != len(data):
        raise MalformedNodeError(f"{len(data) - stop} trailing bytes after the RLP item")
    return item


__all__ = [
    "EMPTY_STRING",
    "RLPItem",
    "decode",
    "decode_item",
    "encode",
    "encode_bytes",
    "encode_list_payload",
    "list_payload_bounds",
]
