"""
RLP for trie nodes: L{nodex.rlpcore} with the trie's own error.

Trie nodes are byte strings and lists of them, which is all the core codec
does; decoding failures become L{MalformedNodeError} here so that the trie's
callers see one kind of error for a bad node.
"""

from nodex.rlpcore import (
    EMPTY_STRING,
    RLPFormatError,
    RLPItem,
    encode_bytes,
    encode_list_payload,
)
from nodex.rlpcore import decode as _decode
from nodex.rlpcore import decode_item as _decode_item
from nodex.rlpcore import encode as _encode
from nodex.rlpcore import list_payload_bounds as _list_payload_bounds
from nodex.trie.errors import MalformedNodeError


def encode(item: RLPItem) -> bytes:
    """
    The RLP encoding of a byte string or a nested list of them.

    @raise MalformedNodeError: C{item} holds something other than bytes and lists.
    """
    try:
        return _encode(item)
    except RLPFormatError as exc:
        raise MalformedNodeError(str(exc)) from exc


def decode_item(data: bytes, position: int, end: int) -> tuple[RLPItem, int]:
    """
    Decode the one item that starts at C{position} and ends by C{end}.

    @return: the item and the position just after it.
    @raise MalformedNodeError: the encoding is truncated or not canonical.
    """
    try:
        return _decode_item(data, position, end)
    except RLPFormatError as exc:
        raise MalformedNodeError(f"RLP: {exc}") from exc


def list_payload_bounds(data: bytes) -> tuple[int, int]:
    """
    Where the payload of the list that spans all of C{data} starts and stops.

    @raise MalformedNodeError: C{data} is not one canonical RLP list.
    """
    try:
        return _list_payload_bounds(data)
    except RLPFormatError as exc:
        raise MalformedNodeError(f"RLP: {exc}") from exc


def decode(data: bytes) -> RLPItem:
    """
    Decode one canonical RLP item that spans all of C{data}.

    @raise MalformedNodeError: the data is empty, truncated, not canonical or
        followed by trailing bytes.
    """
    try:
        return _decode(data)
    except RLPFormatError as exc:
        raise MalformedNodeError(f"RLP: {exc}") from exc


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
