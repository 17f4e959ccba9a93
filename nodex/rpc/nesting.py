"""
A bound on how deeply a request body nests, checked before it is parsed.

The EVM raises Python's recursion limit (1024 nested calls must fit), and
that limit is process-wide: the C JSON parser, which stops at the recursion
limit, would then run the C stack out on a body of a hundred thousand
brackets and kill the process. So bodies are measured first, without
recursion, and anything deeper than any real request is refused.
"""

from itertools import accumulate

MAX_NESTING = 128
"""Deeper than any real request (a state override set nests five levels)."""

_NOT_STRUCTURE = bytes(set(range(256)) - {0x22, 0x5B, 0x5D, 0x7B, 0x7D})
_OPENERS_AND_CLOSERS = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")


def nesting_depth(body: bytes) -> int:
    """
    The deepest nesting of arrays and objects in a JSON body (strings ignored).
    """
    if body.count(b"[") + body.count(b"{") <= MAX_NESTING:
        # Too few brackets to nest too deeply: the common case, decided in C.
        return 0
    # Escaped backslashes, then escaped quotes, cannot end a string: drop
    # them and keep only quotes and brackets (C-speed passes). Every quote
    # left opens or closes a string, so the brackets outside strings are the
    # pieces between the second and third quote, the fourth and fifth, ...
    structure = body.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _NOT_STRUCTURE)
    brackets = b"".join(structure.split(b'"')[::2]).translate(_OPENERS_AND_CLOSERS)
    return max(accumulate(step - 1 for step in brackets), default=0)


def too_deep(body: bytes) -> bool:
    """
    Whether a body nests deeper than L{MAX_NESTING}.
    """
    return nesting_depth(body) > MAX_NESTING
