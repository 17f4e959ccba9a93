"""
Errors of the chain rules (L4).
"""

from nodex.errors import NodexError


class ChainError(NodexError):
    """
    Base class of the errors raised by the chain rules.
    """


class InvalidBlockError(ChainError):
    """
    A block breaks a consensus rule.
    """


class InvalidSealError(InvalidBlockError):
    """
    A block's merged-mining proof of work is malformed or insufficient.
    """


class MalformedBitcoinDataError(InvalidSealError):
    """
    A Bitcoin block, header or transaction given to the merged-mining code cannot be parsed.
    """


class GenesisError(ChainError):
    """
    A genesis specification is malformed.
    """


class GenesisMismatchError(GenesisError):
    """
    A data directory holds a chain of the right network that starts from
    another genesis block (the network's genesis specification changed).
    """
