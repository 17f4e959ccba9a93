"""
The exception a precompiled contract raises on input it cannot accept.
"""

from nodex.errors import NodexError


class PrecompileError(NodexError):
    """
    A precompiled contract rejected its input: an exceptional halt that
    consumes all the gas of the calling frame.
    """


__all__ = ["PrecompileError"]
