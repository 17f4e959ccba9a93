"""
Errors of the wallet's pure parts; the RPC edge maps each class to a code.
"""

from nodex.errors import NodexError


class WalletError(NodexError):
    """
    Base class of the wallet's errors.
    """


class KeyfileError(WalletError):
    """
    A keyfile is not a usable Web3 Secret Storage file: malformed JSON,
    missing or ill-typed members, or parameters out of range.
    """


class UnsupportedKeyfileError(KeyfileError):
    """
    A keyfile of another version, cipher, key derivation function or PRF.
    """


class WrongPassphraseError(WalletError):
    """
    The passphrase does not open the keyfile: its MAC does not match.

    The message never repeats the passphrase.
    """

    def __init__(self) -> None:
        super().__init__("could not decrypt key with given password")


class InvalidPrivateKeyError(WalletError):
    """
    A private key that is not 32 bytes or not a scalar in [1, n-1] of secp256k1.
    """


class TypedDataError(WalletError):
    """
    EIP-712 typed data that is malformed: unknown or recursive types,
    missing members, values that do not fit their types.
    """


__all__ = [
    "InvalidPrivateKeyError",
    "KeyfileError",
    "TypedDataError",
    "UnsupportedKeyfileError",
    "WalletError",
    "WrongPassphraseError",
]
