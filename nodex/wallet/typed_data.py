"""
EIP-712 typed structured data hashing, as C{eth_signTypedData_v4} signs
it: Keccak-256 of C{0x19 0x01 ‖ domainSeparator ‖ hashStruct(message)}.

The input is the JSON object wallets send: C{types} (struct name to a list
of C{{"name", "type"}} members), C{primaryType}, C{domain} and C{message}.
Version 4 semantics: arrays (C{T[]} and C{T[k]}) of any member type,
structs that refer to other structs (not to themselves through a cycle of
values, which JSON cannot hold anyway), and every atomic type of EIP-712.
When C{types} has no C{EIP712Domain} entry, the domain type is made of
the standard domain members present in C{domain}, in the standard order,
as ethers does.
"""

import re
from collections.abc import Mapping
from typing import Any

from nodex.crypto import keccak256
from nodex.primitives import Hash32
from nodex.wallet.errors import TypedDataError

DOMAIN_TYPE = "EIP712Domain"
"""The name of the domain's struct type."""

DOMAIN_MEMBERS = (
    ("name", "string"),
    ("version", "string"),
    ("chainId", "uint256"),
    ("verifyingContract", "address"),
    ("salt", "bytes32"),
)
"""The standard members of the domain, in EIP-712's order."""

MAX_DEPTH = 32
"""The deepest nesting of structs and arrays accepted (hostile input cannot exhaust the stack)."""

_ARRAY = re.compile(r"^(.+)\[(\d*)\]$")
_INTEGER = re.compile(r"^(u?)int(\d*)$")
_FIXED_BYTES = re.compile(r"^bytes(\d+)$")
_IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")

Types = Mapping[str, list[tuple[str, str]]]


def _fail(where: str, problem: str) -> TypedDataError:
    """
    An error naming the path of the offending value.
    """
    return TypedDataError(f"{where}: {problem}" if where else problem)


def parse_types(raw: Any, domain: Mapping[str, Any]) -> dict[str, list[tuple[str, str]]]:
    """
    Check C{types} and return it as name to C{(member, type)} pairs, with
    the domain type added when it is absent.

    @raise TypedDataError: not an object of arrays of C{{name, type}} objects.
    """
    if not isinstance(raw, dict):
        raise TypedDataError("types must be an object")
    types: dict[str, list[tuple[str, str]]] = {}
    for name, members in raw.items():
        if not _IDENTIFIER.match(name):
            raise TypedDataError(f"invalid type name {name[:64]!r}")
        if not isinstance(members, list):
            raise TypedDataError(f"types.{name} must be an array")
        parsed: list[tuple[str, str]] = []
        for index, member in enumerate(members):
            if not (isinstance(member, dict) and isinstance(member.get("name"), str) and isinstance(member.get("type"), str)):
                raise TypedDataError(f"types.{name}[{index}] must be an object with string name and type")
            if member["name"] in (existing for existing, _ in parsed):
                raise TypedDataError(f"types.{name} has two members named {member['name'][:64]!r}")
            parsed.append((member["name"], member["type"]))
        types[name] = parsed
    if DOMAIN_TYPE not in types:
        types[DOMAIN_TYPE] = [(name, kind) for name, kind in DOMAIN_MEMBERS if name in domain]
    for name, members in types.items():
        for member, kind in members:
            _check_type(types, _element_type(kind), f"types.{name}.{member}")
    return types


def _element_type(kind: str) -> str:
    """
    The innermost element type of a possibly multi-dimensional array type.
    """
    while (match := _ARRAY.match(kind)) is not None:
        kind = match.group(1)
    return kind


def _check_type(types: Types, kind: str, where: str) -> None:
    """
    Check that C{kind} is a struct of C{types} or an atomic or dynamic type.

    @raise TypedDataError: it is neither.
    """
    if kind in types or kind in ("address", "bool", "string", "bytes"):
        return
    integer = _INTEGER.match(kind)
    if integer is not None:
        bits = int(integer.group(2) or 256)
        if integer.group(2) != "0" and 8 <= bits <= 256 and bits % 8 == 0 and not integer.group(2).startswith("0"):
            return
    fixed = _FIXED_BYTES.match(kind)
    if fixed is not None and 1 <= int(fixed.group(1)) <= 32 and not fixed.group(1).startswith("0"):
        return
    raise _fail(where, f"unknown type {kind[:64]!r}")


def _dependencies(types: Types, primary: str) -> list[str]:
    """
    The struct types C{primary} refers to, directly or not, C{primary} excluded.
    """
    found: set[str] = set()
    pending = [primary]
    while pending:
        for _, kind in types[pending.pop()]:
            element = _element_type(kind)
            if element in types and element not in found and element != primary:
                found.add(element)
                pending.append(element)
    return sorted(found)


def encode_type(types: Types, primary: str) -> str:
    """
    C{encodeType}: the primary type's signature, then its dependencies' in
    alphabetical order, e.g. C{Mail(Person from,Person to,string contents)Person(string name,address wallet)}.
    """
    return "".join(
        f"{name}({','.join(f'{kind} {member}' for member, kind in types[name])})"
        for name in [primary, *_dependencies(types, primary)]
    )


def type_hash(types: Types, primary: str) -> Hash32:
    """
    C{typeHash}: Keccak-256 of L{encode_type}.
    """
    return keccak256(encode_type(types, primary).encode("utf-8"))


def hash_struct(types: Types, primary: str, value: Any, where: str = "message", depth: int = 0) -> Hash32:
    """
    C{hashStruct}: Keccak-256 of the type hash and the encoded members.

    @raise TypedDataError: C{value} is not an object with every member, or
        a member does not fit its type.
    """
    if depth > MAX_DEPTH:
        raise _fail(where, f"nested deeper than {MAX_DEPTH}")
    if not isinstance(value, dict):
        raise _fail(where, f"must be an object of type {primary}")
    encoded = [type_hash(types, primary)]
    for member, kind in types[primary]:
        if member not in value or value[member] is None:
            raise _fail(f"{where}.{member}", "missing")
        encoded.append(_encode_value(types, kind, value[member], f"{where}.{member}", depth + 1))
    return keccak256(b"".join(encoded))


def _encode_value(types: Types, kind: str, value: Any, where: str, depth: int) -> bytes:
    """
    C{encodeData} of one member: 32 bytes.
    """
    array = _ARRAY.match(kind)
    if array is not None:
        if not isinstance(value, list):
            raise _fail(where, f"must be an array for {kind}")
        if array.group(2) and len(value) != int(array.group(2)):
            raise _fail(where, f"must have {int(array.group(2))} elements, got {len(value)}")
        if depth > MAX_DEPTH:
            raise _fail(where, f"nested deeper than {MAX_DEPTH}")
        element = array.group(1)
        return keccak256(
            b"".join(_encode_value(types, element, item, f"{where}[{index}]", depth + 1) for index, item in enumerate(value))
        )
    if kind in types:
        return hash_struct(types, kind, value, where, depth)
    if kind == "string":
        if not isinstance(value, str):
            raise _fail(where, "must be a string")
        return keccak256(value.encode("utf-8"))
    if kind == "bytes":
        return keccak256(_hex_bytes(value, where))
    return encode_atomic(kind, value, where)


def _hex_bytes(value: Any, where: str) -> bytes:
    """
    A 0x-prefixed hex string as bytes.
    """
    if not isinstance(value, str) or value[:2] not in ("0x", "0X"):
        raise _fail(where, "must be a 0x-prefixed hex string")
    digits = value[2:]
    if len(digits) % 2:
        digits = "0" + digits
    try:
        return bytes.fromhex(digits)
    except ValueError:
        raise _fail(where, "must be a 0x-prefixed hex string") from None


def _integer(value: Any, where: str) -> int:
    """
    An integer given as a JSON number, a decimal string, or a 0x hex string.
    """
    if isinstance(value, bool):
        raise _fail(where, "must be a number, not a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and len(value) <= 80:
        text = value.strip()
        negative = text.startswith("-")
        digits = text[1:] if negative else text
        try:
            if digits[:2] in ("0x", "0X") and len(digits) > 2:
                number = int(digits[2:], 16)
            elif digits.isdigit():
                number = int(digits, 10)
            else:
                raise ValueError(digits)
        except ValueError:
            pass
        else:
            return -number if negative else number
    raise _fail(where, "must be an integer (a number, a decimal string or a 0x hex string)")


def encode_atomic(kind: str, value: Any, where: str) -> bytes:
    """
    The 32-byte encoding of a value of an atomic type.

    @raise TypedDataError: the value does not fit the type.
    """
    if kind == "address":
        raw = _hex_bytes(value, where)
        if len(raw) != 20:
            raise _fail(where, f"an address must be 20 bytes, got {len(raw)}")
        return raw.rjust(32, b"\0")
    if kind == "bool":
        if not isinstance(value, bool):
            raise _fail(where, "must be true or false")
        return int(value).to_bytes(32, "big")
    fixed = _FIXED_BYTES.match(kind)
    if fixed is not None:
        raw = _hex_bytes(value, where)
        size = int(fixed.group(1))
        if len(raw) > size:
            raise _fail(where, f"longer than {size} bytes for {kind}")
        return raw.ljust(32, b"\0")
    integer = _INTEGER.match(kind)
    assert integer is not None, kind
    bits = int(integer.group(2) or 256)
    number = _integer(value, where)
    if integer.group(1):
        if not 0 <= number < 1 << bits:
            raise _fail(where, f"out of range for {kind}")
        return number.to_bytes(32, "big")
    if not -(1 << (bits - 1)) <= number < 1 << (bits - 1):
        raise _fail(where, f"out of range for {kind}")
    return (number % (1 << 256)).to_bytes(32, "big")


def typed_data_hash(typed_data: Any) -> Hash32:
    """
    The digest C{eth_signTypedData_v4} signs.

    @param typed_data: the decoded JSON object (C{types}, C{primaryType},
        C{domain}, C{message}).
    @raise TypedDataError: the object is malformed in any way.
    """
    if not isinstance(typed_data, dict):
        raise TypedDataError("typed data must be an object")
    domain = typed_data.get("domain")
    if not isinstance(domain, dict):
        raise TypedDataError("domain must be an object")
    types = parse_types(typed_data.get("types"), domain)
    primary = typed_data.get("primaryType")
    if not isinstance(primary, str) or primary not in types:
        raise TypedDataError("primaryType must name one of types")
    separator = hash_struct(types, DOMAIN_TYPE, domain, "domain")
    if primary == DOMAIN_TYPE:
        return keccak256(b"\x19\x01" + separator)
    message = hash_struct(types, primary, typed_data.get("message"), "message")
    return keccak256(b"\x19\x01" + separator + message)


__all__ = [
    "DOMAIN_MEMBERS",
    "DOMAIN_TYPE",
    "MAX_DEPTH",
    "encode_atomic",
    "encode_type",
    "hash_struct",
    "parse_types",
    "type_hash",
    "typed_data_hash",
]
