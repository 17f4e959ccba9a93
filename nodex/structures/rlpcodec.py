"""
Canonical RLP for the structures, with their own errors.

L{nodex.rlpcore} does the byte work (strict decoding refuses trailing
bytes, long forms used for short items, length prefixes with leading zeros,
single bytes wrapped as strings, lists nested too deeply); this module adds
what a consensus codec needs on top: integers are minimal big-endian,
fields have the expected shape, and every failure is an L{RLPError} whose
message names the field.  (The core replaced pyrlp here for speed: pyrlp's
abstract type checks cost a third of a block's production; the conformance
vectors and a differential test against pyrlp keep the two in agreement.)
"""

from collections.abc import Iterable

from nodex.rlpcore import DEFAULT_MAX_DEPTH, RLPFormatError, RLPItem, decode_item, encode, encode_bytes, encode_list_payload
from nodex.rlpcore import item_bounds as _item_bounds
from nodex.rlpcore import decode as _decode
from nodex.structures.errors import RLPError


def encode_rlp(item: RLPItem | tuple) -> bytes:
    """
    Encode a nested structure of byte strings, lists and tuples.

    @raise RLPError: the structure holds something other than bytes and
        sequences.
    """
    try:
        return encode(item)
    except RLPFormatError as exc:
        raise RLPError(f"cannot encode as RLP: {exc}") from exc


def decode_rlp(data: bytes) -> RLPItem:
    """
    Decode one canonical RLP item that spans all of C{data}.

    @raise RLPError: C{data} is not bytes, is truncated, is followed by
        superfluous bytes, or uses a non-canonical length encoding.
    """
    if type(data) is not bytes:
        raise RLPError(f"RLP input must be bytes, not {type(data).__name__}")
    if not data:
        raise RLPError("RLP input is empty")
    try:
        return _decode(data, MAX_NESTING)
    except RLPFormatError as exc:
        raise RLPError(f"malformed RLP: {exc}") from exc


def item_bounds(data: bytes, position: int, end: int) -> tuple[int, int, bool]:
    """
    Where the item at C{position} has its payload and where it stops, and
    whether it is a list, without decoding what it holds (only its prefix
    is checked).

    @raise RLPError: the prefix is not canonical or the item runs past C{end}.
    """
    try:
        return _item_bounds(data, position, end)
    except RLPFormatError as exc:
        raise RLPError(f"malformed RLP: {exc}") from exc


def decode_rlp_at(data: bytes, position: int, end: int, depth: int) -> RLPItem:
    """
    Decode the one item that spans C{data[position:end]}, with at most
    C{depth} levels of lists.

    @raise RLPError: as L{decode_rlp}.
    """
    try:
        item, stop = decode_item(data, position, end, depth)
    except RLPFormatError as exc:
        raise RLPError(f"malformed RLP: {exc}") from exc
    if stop != end:
        raise RLPError("malformed RLP: trailing bytes after the item")
    return item


MAX_NESTING = DEFAULT_MAX_DEPTH
"""
No structure of the chain nests deeper than a block's access-list keys (5);
the EVM raises the interpreter's recursion limit, so the decoder's own
recursion could not bound the depth: this limit does.
"""


def encode_list_of_encoded(encoded_items: Iterable[bytes]) -> bytes:
    """
    The RLP list whose items are the already encoded C{encoded_items}.

    This lets a block embed transactions and headers whose encodings are
    cached, without decoding and encoding them again.
    """
    return encode_list_payload(b"".join(encoded_items))


_BYTE_INTEGERS = [b""] + [bytes((value,)) for value in range(1, 256)]
"""The minimal bytes of 0 to 255: most of the integers of a block (types, nonces, statuses, counts) are."""


def encode_uint(value: int) -> bytes:
    """
    The minimal big-endian bytes of a non-negative integer (empty for zero).

    @raise RLPError: C{value} is negative.
    """
    if value < 0:
        raise RLPError(f"cannot encode the negative integer {value}")
    if value < 256:
        return _BYTE_INTEGERS[value]
    return value.to_bytes((value.bit_length() + 7) // 8, "big")


UINT_ITEMS = tuple(encode_bytes(encode_uint(value)) for value in range(0x80))
"""The RLP strings of the integers 0 to 127: the empty string's 0x80 for zero, each its own byte for the others."""


def encode_uint_item(value: int) -> bytes:
    """
    The RLP string of a non-negative integer, C{encode_bytes(encode_uint(value))}
    in one call: for the encoders written out field by field (accounts,
    headers, receipts), where most integers are below 128.

    @raise RLPError: C{value} is negative.
    """
    if value < 0x80:
        if value < 0:
            raise RLPError(f"cannot encode the negative integer {value}")
        return UINT_ITEMS[value]
    return encode_bytes(value.to_bytes((value.bit_length() + 7) // 8, "big"))


def decode_uint(item: RLPItem, what: str) -> int:
    """
    Read a canonical integer: a byte string without leading zero bytes.

    @param what: the field's name, for the error message.
    @raise RLPError: the item is a list or has a leading zero byte.
    """
    if not isinstance(item, bytes):
        raise RLPError(f"{what} must be an RLP string, not a list")
    if item[:1] == b"\x00":
        raise RLPError(f"{what} is not a canonical integer (leading zero bytes)")
    return int.from_bytes(item, "big")


def decode_bytes(item: RLPItem, what: str) -> bytes:
    """
    Read a byte string of any length.

    @raise RLPError: the item is a list.
    """
    if not isinstance(item, bytes):
        raise RLPError(f"{what} must be an RLP string, not a list")
    return item


def decode_fixed(item: RLPItem, what: str, length: int) -> bytes:
    """
    Read a byte string of exactly C{length} bytes.

    @raise RLPError: the item is a list or has another length.
    """
    value = decode_bytes(item, what)
    if len(value) != length:
        raise RLPError(f"{what} must be {length} bytes long, got {len(value)}")
    return value


def decode_list(item: RLPItem, what: str, length: int | None = None) -> list[RLPItem]:
    """
    Read a list, of exactly C{length} items when C{length} is given.

    @raise RLPError: the item is a string or has the wrong number of items.
    """
    if not isinstance(item, list):
        raise RLPError(f"{what} must be an RLP list, not a string")
    if length is not None and len(item) != length:
        raise RLPError(f"{what} must have {length} items, got {len(item)}")
    return item


__all__ = [
    "UINT_ITEMS",
    "RLPItem",
    "decode_bytes",
    "decode_fixed",
    "decode_list",
    "decode_rlp",
    "decode_rlp_at",
    "decode_uint",
    "encode_list_of_encoded",
    "item_bounds",
    "encode_rlp",
    "encode_uint",
    "encode_uint_item",
]
