"""
Names for the plain values that travel between layers.

Words, balances and nonces are plain Python C{int}; byte strings are
C{bytes}.  The C{NewType}s below document intent in signatures without any
cost at run time.
"""

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any, Generic, NewType, TypeVar, overload

_Value = TypeVar("_Value")
_Class = TypeVar("_Class", bound=type)

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


def direct_init(cls: _Class) -> _Class:
    """
    Give a frozen dataclass an C{__init__} that sets the fields in the new
    instance's C{__dict__} directly: the same parameters, defaults and
    result as the one C{dataclass} wrote, which calls
    C{object.__setattr__} once per field to get past the class's own
    refusal (about 600 machine instructions a field against some 50; an
    automined transfer makes some 130 fields' worth of headers, receipts,
    accounts, outcomes and transactions).  Assigning to a field afterwards
    is refused as before.

    Only the plain shape is taken: every field an C{__init__} parameter
    (positional, with at most a plain default), no C{__post_init__}, no
    C{InitVar}, no C{__slots__}; any other raises L{TypeError} when the
    class is defined, so that the shortcut never skips a step.
    """
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or not params.init:
        raise TypeError(f"{cls.__name__}: direct_init takes a frozen dataclass that writes its __init__")
    if hasattr(cls, "__post_init__") or "__slots__" in cls.__dict__:
        raise TypeError(f"{cls.__name__}: direct_init cannot keep a __post_init__ or __slots__")
    names: list[str] = []
    defaults: dict[str, object] = {}
    for field in dataclasses.fields(cls):
        if not field.init or field.kw_only or field.default_factory is not dataclasses.MISSING:
            raise TypeError(f"{cls.__name__}.{field.name}: direct_init takes plain fields only")
        if field.default is not dataclasses.MISSING:
            defaults[field.name] = field.default
        names.append(field.name)
    written = inspect.signature(cls.__init__)
    expected = [(name, defaults.get(name, inspect.Parameter.empty)) for name in ["self", *names]]
    if [(parameter.name, parameter.default) for parameter in written.parameters.values()] != expected or any(
        parameter.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD for parameter in written.parameters.values()
    ):
        raise TypeError(f"{cls.__name__}: its __init__ takes more than its fields (an InitVar?)")
    arguments = ", ".join(f"{name}=_default_{name}" if name in defaults else name for name in names)
    lines = [f"def __init__(self, {arguments}):", "    values = self.__dict__"]
    lines += [f"    values[{name!r}] = {name}" for name in names]
    namespace: dict[str, Any] = {f"_default_{name}": value for name, value in defaults.items()}
    exec("\n".join(lines), namespace)  # noqa: S102 (the source is made of the class's own field names)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__annotations__ = dict(cls.__init__.__annotations__)
    cls.__init__ = init  # type: ignore[misc]
    return cls


__all__ = [
    "Address",
    "Hash32",
    "UINT256_CEILING",
    "UINT256_MAX",
    "UINT64_CEILING",
    "ZERO_ADDRESS",
    "ZERO_HASH32",
    "cached_property",
    "direct_init",
]
