"""
Result encoders: the one place where Python values become the wire types of
the interface specification.

QUANTITY is minimal lowercase hex with the C{0x} prefix (zero is C{0x0});
DATA is C{0x} followed by two lowercase digits per byte (empty is C{0x});
addresses are lowercase, never checksummed (reference, hex conventions).
Methods name one of these as their result encoder, and later issues build the
block, transaction, receipt and log objects from them.
"""

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from nodex.errors import NodexError

T = TypeVar("T")

Encoder = Callable[[T], Any]
"""A function from a Python value to a JSON value."""


class EncodeError(NodexError):
    """
    A value handed to an encoder cannot be that wire type: a bug in the
    method that produced it, answered as an internal error.
    """


def quantity(value: int) -> str:
    """
    QUANTITY: C{0x} and minimal lowercase hex.

    @raise EncodeError: C{value} is negative or not an integer.
    """
    if type(value) is not int or value < 0:
        raise EncodeError(f"a QUANTITY must be a non-negative int, not {value!r}")
    return hex(value)


def data(value: bytes) -> str:
    """
    DATA: C{0x} and two lowercase hex digits per byte.
    """
    return "0x" + bytes(value).hex()


def fixed_data(size: int) -> Encoder[bytes]:
    """
    An encoder of DATA of exactly C{size} bytes.

    @raise EncodeError: (from the encoder) the value has another length.
    """

    def encode(value: bytes) -> str:
        if len(value) != size:
            raise EncodeError(f"want {size} bytes, got {len(value)}")
        return "0x" + value.hex()

    return encode


address: Encoder[bytes] = fixed_data(20)
"""DATA of 20 bytes, lowercase."""

hash32: Encoder[bytes] = fixed_data(32)
"""DATA of 32 bytes."""

bytes8: Encoder[bytes] = fixed_data(8)
"""DATA of 8 bytes (a block's nonce)."""

bloom: Encoder[bytes] = fixed_data(256)
"""DATA of 256 bytes (a logs bloom)."""


def decimal(value: int) -> str:
    """
    A decimal string, as C{net_version} answers.
    """
    return str(int(value))


def identity(value: T) -> T:
    """
    A value that is already JSON (booleans, strings, plain objects).
    """
    return value


def nullable(encoder: Encoder[T]) -> Encoder[T | None]:
    """
    L{None} as JSON C{null}, anything else through C{encoder}.
    """

    def encode(value: T | None) -> Any:
        return None if value is None else encoder(value)

    return encode


def array_of(encoder: Encoder[T]) -> Encoder[Iterable[T]]:
    """
    A JSON array whose elements C{encoder} encodes.
    """

    def encode(values: Iterable[T]) -> list[Any]:
        return [encoder(value) for value in values]

    return encode


__all__ = [
    "EncodeError",
    "Encoder",
    "address",
    "array_of",
    "bloom",
    "bytes8",
    "data",
    "decimal",
    "fixed_data",
    "hash32",
    "identity",
    "nullable",
    "quantity",
]
