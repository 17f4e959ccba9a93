"""
Names for the plain values that travel between layers.

Words, balances and nonces are plain Python C{int}; byte strings are
C{bytes}.  The C{NewType}s below document intent in signatures without any
cost at run time.
"""

from collections.abc import Callable
from typing import Any, Generic, NewType, TypeVar, overload

_Value = TypeVar("_Value")

Address = NewType("Address", bytes)
"""A 20-byte account address."""

Hash32 = NewType("Hash32", bytes)
"""A 32-byte Keccak-256 (or SHA-256) digest."""

UINT256_CEILING = 2**256
UINT256_MAX = UINT256_CEILING - 1
UINT64_CEILING = 2**64

ZERO_ADDRESS = Address(b"\x00" * 20)
ZERO_HASH32 = Hash32(b"\x00" * 32)



class cached_property(Generic[_Value]):
    """
    A property computed on first use and then kept in the instance's
    C{__dict__}, where later look-ups find it without calling anything:
    C{functools.cached_property} without its lock.

    Python 3.11's C{functools.cached_property} takes an C{RLock} (one for
    all the instances of the class) on every first use: about 8 thousand
    machine instructions against 4 thousand here, and the hashes,
    encodings and senders of transactions, headers, blocks and receipts
    are each used once or twice per object, some dozen first uses per
    automined transfer.  Python 3.12 removed that lock for the same
    reason.  Without it, two threads may both compute a value on first
    use; every value kept here is a function of a frozen object's
    fields, so both compute the same one.  Works on frozen dataclasses
    (it writes the instance's C{__dict__}, not through C{__setattr__}).
    """

    def __init__(self, function: Callable[[Any], _Value]) -> None:
        self.function = function
        self.name = function.__name__
        self.__doc__ = function.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> "cached_property[_Value]": ...

    @overload
    def __get__(self, instance: object, owner: type | None = None) -> _Value: ...

    def __get__(self, instance: object, owner: type | None = None) -> "_Value | cached_property[_Value]":
        if instance is None:
            return self
        value = self.function(instance)
        instance.__dict__[self.name] = value
        return value


__all__ = [
    "Address",
    "Hash32",
    "UINT256_CEILING",
    "UINT256_MAX",
    "UINT64_CEILING",
    "ZERO_ADDRESS",
    "ZERO_HASH32",
    "cached_property",
]
