"""
The exceptions of the RLP structures.

Two families: L{RLPError} for bytes that are not well-formed canonical RLP of
the expected shape, and L{InvalidTransactionError} for transactions that are
well formed but break a rule (a value out of range, a bad signature, a chain
id that is not ours, too little gas, a type this chain does not accept).
"""

from nodex.errors import NodexError


class RLPError(NodexError):
    """
    Bytes that are not canonical RLP, or RLP of the wrong shape: a list
    where a string is expected, wrong field counts or lengths, integers with
    leading zeros, trailing bytes.
    """


class InvalidTransactionError(NodexError):
    """
    A transaction breaks a rule of this chain.
    """


class UnsupportedTransactionTypeError(InvalidTransactionError):
    """
    The transaction's type byte names a type this chain refuses (3, blob;
    4, set-code) or does not know at all.
    """


class InvalidSignatureError(InvalidTransactionError):
    """
    The signature values are out of range (zero, not below the curve order,
    a high s), the recovery id is invalid, or no signer can be recovered.
    """


class WrongChainIdError(InvalidTransactionError):
    """
    The transaction was signed for another chain.
    """


class IntrinsicGasTooLowError(InvalidTransactionError):
    """
    The transaction's gas does not even cover its intrinsic cost.
    """


class InsufficientBalanceError(InvalidTransactionError):
    """
    The sender's balance does not cover what the transaction may cost (its
    value, or its gas at its price plus its value).
    """


__all__ = [
    "InsufficientBalanceError",
    "IntrinsicGasTooLowError",
    "InvalidSignatureError",
    "InvalidTransactionError",
    "RLPError",
    "UnsupportedTransactionTypeError",
    "WrongChainIdError",
]
