"""
The byte work of RLP: byte strings and nested lists of them, nothing else.

Every encoding the node hashes or stores goes through here (trie nodes,
headers, transactions, receipts, accounts), so it is written for speed:
exact type checks instead of abstract ones, prefixes of short payloads
from tables, and a decoder that reads short strings inside lists without a
call.  The decoder accepts only canonical RLP, because hashes depend on
there being exactly one encoding of each value: single bytes below 0x80
written bare, the short form for payloads under 56 bytes, long-form lengths
without leading zeros, nothing after the item, and lists nested at most
C{max_depth} deep (the recursion is bounded by that, not by the
interpreter's limit, which the EVM raises).

The trie and the structures wrap L{RLPFormatError} in their own errors.
"""

from typing import Union

from nodex.errors import NodexError

RLPItem = Union[bytes, list["RLPItem"]]
"""A decoded RLP item: a byte string or a (nested) list of items."""

EMPTY_STRING = b"\x80"
"""The encoding of the empty byte string."""

EMPTY_LIST = b"\xc0"
"""The encoding of the empty list."""

DEFAULT_MAX_DEPTH = 16
"""No structure of the chain nests lists deeper than a block's access-list keys (5)."""


class RLPFormatError(NodexError):
    """
    Bytes that are not one canonical RLP item, or a value RLP cannot encode.
    """


def _length_prefix(length: int, offset: int) -> bytes:
    """
    The prefix of a payload of C{length} bytes: C{offset} is 0x80 for a
    string, 0xC0 for a list.
    """
    if length < 56:
        return bytes((offset + length,))
    length_bytes = length.to_bytes((length.bit_length() + 7) // 8, "big")
    return bytes((offset + 55 + len(length_bytes),)) + length_bytes


# Most payloads are at most a few hundred bytes: their prefixes come from tables.
PREFIX_TABLE_SIZE = 1024
"""The payload lengths (0 to 1,023) whose prefixes L{STRING_PREFIXES} and L{LIST_PREFIXES} hold."""

STRING_PREFIXES = [_length_prefix(length, 0x80) for length in range(PREFIX_TABLE_SIZE)]
"""The prefix of a string by its length, below L{PREFIX_TABLE_SIZE}, for encoders that inline L{encode_bytes}
(a single byte below 0x80 has none: the caller checks).  Never changed."""

LIST_PREFIXES = [_length_prefix(length, 0xC0) for length in range(PREFIX_TABLE_SIZE)]
"""The prefix of a list by its payload's length, below L{PREFIX_TABLE_SIZE}.  Never changed."""


def encode_bytes(value: bytes) -> bytes:
    """
    The RLP encoding of one byte string.
    """
    length = len(value)
    if length == 1 and value[0] < 0x80:
        return value
    if length < PREFIX_TABLE_SIZE:
        return STRING_PREFIXES[length] + value
    return _length_prefix(length, 0x80) + value


def encode_list_payload(payload: bytes) -> bytes:
    """
    The RLP encoding of a list whose items, already encoded, concatenate to
    C{payload}.
    """
    length = len(payload)
    if length < PREFIX_TABLE_SIZE:
        return LIST_PREFIXES[length] + payload
    return _length_prefix(length, 0xC0) + payload


def encode(item: RLPItem | tuple) -> bytes:
    """
    The RLP encoding of a byte string or a nested list (or tuple) of them.

    @raise RLPFormatError: C{item} holds something other than byte strings,
        lists and tuples.
    """
    kind = type(item)
    if kind is bytes:
        length = len(item)  # type: ignore[arg-type]
        if length == 1 and item[0] < 0x80:  # type: ignore[index,operator]
            return item  # type: ignore[return-value]
        if length < PREFIX_TABLE_SIZE:
            return STRING_PREFIXES[length] + item  # type: ignore[operator]
        return _length_prefix(length, 0x80) + item  # type: ignore[operator]
    if kind is list or kind is tuple:
        parts = []
        for child in item:
            # Byte strings inline: they are most of the items.
            if type(child) is bytes:
                length = len(child)
                if length == 1 and child[0] < 0x80:
                    parts.append(child)
                elif length < PREFIX_TABLE_SIZE:
                    parts.append(STRING_PREFIXES[length])
                    parts.append(child)
                else:
                    parts.append(_length_prefix(length, 0x80))
                    parts.append(child)
            else:
                parts.append(encode(child))
        payload = b"".join(parts)
        length = len(payload)
        if length < PREFIX_TABLE_SIZE:
            return LIST_PREFIXES[length] + payload
        return _length_prefix(length, 0xC0) + payload
    if isinstance(item, (bytearray, memoryview)):
        return encode_bytes(bytes(item))
    raise RLPFormatError(f"cannot RLP-encode a {kind.__name__}")


def _read_length(data: bytes, position: int, size: int, end: int) -> int:
    """
    Read a long-form length of C{size} big-endian bytes at C{position}.

    @raise RLPFormatError: the length is truncated, has leading zeros or
        would fit the short form.
    """
    if position + size > end:
        raise RLPFormatError("length prefix runs past the end of the data")
    if data[position] == 0:
        raise RLPFormatError("length has leading zero bytes")
    length = int.from_bytes(data[position : position + size], "big")
    if length < 56:
        raise RLPFormatError("long-form length used for fewer than 56 bytes")
    return length


def _prefix(data: bytes, position: int, end: int) -> tuple[int, int]:
    """
    Read the prefix of the string or list at C{position} (not a single
    byte below 0x80, which is its own encoding).

    @return: where its payload starts, and its length.
    @raise RLPFormatError: a single byte below 0x80 with a prefix, or a
        long-form length that is truncated or not canonical.
    """
    first = data[position]
    if first < 0xB8:
        start, length = position + 1, first - 0x80
        if length == 1 and start < end and data[start] < 0x80:
            raise RLPFormatError("single byte below 0x80 must not have a prefix")
        return start, length
    if first < 0xC0:
        size = first - 0xB7
        return position + 1 + size, _read_length(data, position + 1, size, end)
    if first < 0xF8:
        return position + 1, first - 0xC0
    size = first - 0xF7
    return position + 1 + size, _read_length(data, position + 1, size, end)


def _decode_at(data: bytes, position: int, end: int, depth: int) -> tuple[RLPItem, int]:
    """
    Decode the item starting at C{position}, which must end by C{end}.

    @param depth: how many more levels of lists may open.
    @return: the item and the position just after it.
    @raise RLPFormatError: the encoding is truncated or not canonical, or
        nests too deeply.
    """
    if position >= end:
        raise RLPFormatError("an item was expected but the data ended")
    first = data[position]
    if first < 0x80:
        return data[position : position + 1], position + 1
    if first >= 0xC0 and depth <= 0:
        raise RLPFormatError("lists nested too deeply")
    start, length = _prefix(data, position, end)
    if first >= 0xC0:
        stop = start + length
        if stop > end:
            raise RLPFormatError("list runs past the end of the data")
        items: list[RLPItem] = []
        while start < stop:
            # Short strings (hashes, addresses, small integers) inline: most items are.
            first = data[start]
            if 0x80 < first < 0xB8:
                after = start + first - 0x7F
                if after > stop:
                    raise RLPFormatError("string runs past the end of its list")
                if first == 0x81 and data[start + 1] < 0x80:
                    raise RLPFormatError("single byte below 0x80 must not have a prefix")
                items.append(data[start + 1 : after])
                start = after
            else:
                item, start = _decode_at(data, start, stop, depth - 1)
                items.append(item)
        return items, stop
    stop = start + length
    if stop > end:
        raise RLPFormatError("string runs past the end of the data")
    return data[start:stop], stop


def decode_item(data: bytes, position: int, end: int, max_depth: int = DEFAULT_MAX_DEPTH) -> tuple[RLPItem, int]:
    """
    Decode the one item that starts at C{position} and ends by C{end}.

    @return: the item and the position just after it.
    @raise RLPFormatError: the encoding is truncated, not canonical or nests
        lists deeper than C{max_depth}.
    """
    return _decode_at(data, position, end, max_depth)


def item_bounds(data: bytes, position: int, end: int) -> tuple[int, int, bool]:
    """
    Where the item starting at C{position} (and ending by C{end}) has its
    payload, without decoding it: its prefix is checked as L{decode_item}
    checks it, what it holds is not looked at.

    @return: where its payload starts, where the item stops, and whether it is a list.
    @raise RLPFormatError: the prefix is not canonical or the item runs past C{end}.
    """
    if position >= end:
        raise RLPFormatError("an item was expected but the data ended")
    if data[position] < 0x80:
        return position, position + 1, False
    start, length = _prefix(data, position, end)
    stop = start + length
    if stop > end:
        raise RLPFormatError("item runs past the end of the data")
    return start, stop, data[position] >= 0xC0


def list_payload_bounds(data: bytes) -> tuple[int, int]:
    """
    Where the payload of the list that spans all of C{data} starts and stops.

    @raise RLPFormatError: C{data} is not one canonical RLP list.
    """
    if not data or data[0] < 0xC0:
        raise RLPFormatError("an RLP list was expected")
    first = data[0]
    if first < 0xF8:
        start, length = 1, first - 0xC0
    else:
        size = first - 0xF7
        length, start = _read_length(data, 1, size, len(data)), 1 + size
    if start + length != len(data):
        raise RLPFormatError("the list does not span the data exactly")
    return start, start + length


def decode(data: bytes, max_depth: int = DEFAULT_MAX_DEPTH) -> RLPItem:
    """
    Decode one canonical RLP item that spans all of C{data}.

    @raise RLPFormatError: the data is empty, truncated, not canonical,
        nests lists deeper than C{max_depth}, or is followed by trailing bytes.
    """
    if type(data) is not bytes:
        data = bytes(data)
    item, stop = _decode_at(data, 0, len(data), max_depth)
    if stop != len(data):
        raise RLPFormatError(f"{len(data) - stop} trailing bytes after the item")
    return item


__all__ = [
    "DEFAULT_MAX_DEPTH",
    "EMPTY_LIST",
    "EMPTY_STRING",
    "LIST_PREFIXES",
    "PREFIX_TABLE_SIZE",
    "RLPFormatError",
    "RLPItem",
    "STRING_PREFIXES",
    "decode",
    "decode_item",
    "encode",
    "encode_bytes",
    "encode_list_payload",
    "item_bounds",
    "list_payload_bounds",
]
