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


class TransactionRejectedError(ChainError):
    """
    A transaction refused admission to the pool (or to a block built for
    it alone); the message is the reference's (§5.3) and the RPC code -32010.
    """


class InvalidTransactionRejectedError(TransactionRejectedError):
    """
    A refused transaction that can never be valid on this chain: its size,
    nonce, signature, chain id or intrinsic gas break a rule that no state
    changes (a peer that sends one misbehaves; C{docs/reputation.md}).
    """


class FutureBlockError(InvalidBlockError):
    """
    A block stamped further ahead of the local clock than the network's
    drift limit allows: not invalid for ever, only not yet (the importer
    holds such blocks until they are due, C{docs/chain-service.md}).
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
