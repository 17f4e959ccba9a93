"""
The node's accounts and keys as the edges see them (signing, the keystore).
"""

from typing import Any

from twisted.internet.defer import Deferred
from zope.interface import Attribute, Interface

from nodex.primitives import Address
from nodex.structures.transactions import Transaction

__all__ = [
    "IAccounts",
]


class IAccounts(Interface):
    """
    The keys the node holds and signs with: the local wallet (development
    keys held in memory, and the keystore's accounts, usable while
    unlocked).

    Every signing method fails with L{LocalWalletOffError} when the wallet
    is off, and with L{UnknownAccountError} for an address whose key the
    node does not hold unlocked.
    """

    enabled = Attribute("Whether the local wallet is on (C{wallet.enabled}).")

    def addresses() -> "list[Address]":
        """
        The wallet's accounts, locked or not, in a stable order
        (C{eth_accounts}): development and seed accounts, then the keystore's.
        """

    def holds(address: bytes) -> bool:
        """
        Whether the node holds an unlocked key for C{address} now.
        """

    def sign_transaction(unsigned: Any, address: bytes) -> "Deferred[Transaction]":
        """
        Sign an unsigned transaction with the key of C{address}.

        @return: a Deferred firing with the signed transaction, or failing
            with L{nodex.api.errors.UnknownAccountError} for an address
            the node holds no unlocked key for.
        """

    def sign_transaction_with_passphrase(unsigned: Any, address: bytes, passphrase: str) -> "Deferred[Transaction]":
        """
        Sign with the keystore key of C{address}, opened with C{passphrase}
        for this one signature (the unlocked state stays as it was).

        @return: a Deferred firing with the signed transaction, or failing
            with L{UnknownAccountError} (no keystore entry) or
            L{WrongPassphraseError}.
        """

    def sign_message(address: bytes, message: bytes) -> "Deferred[bytes]":
        """
        Sign C{message} as C{eth_sign} does (DESIGN §1 prefix).

        @return: a Deferred firing with the 65-byte signature r ‖ s ‖ v.
        """

    def sign_message_with_passphrase(address: bytes, message: bytes, passphrase: str) -> "Deferred[bytes]":
        """
        Sign C{message} as L{sign_message} does, with the keystore key of
        C{address} opened by C{passphrase} for this signature only.
        """

    def recover_message_signer(message: bytes, signature: bytes) -> "Address":
        """
        The address whose key made the 65-byte C{signature} of C{message}
        (the L{sign_message} digest).

        @raise nodex.crypto.SignatureError: no key can be recovered.
        """

    def sign_typed_data(address: bytes, typed_data: Any) -> "Deferred[bytes]":
        """
        Sign EIP-712 typed data (C{eth_signTypedData_v4}).

        @return: a Deferred firing with the 65-byte signature, or failing
            with L{TypedDataError}.
        """

    def new_account(passphrase: str) -> "Deferred[Address]":
        """
        Create a random key, store it in the keystore under C{passphrase}
        and hold it unlocked for the default duration.
        """

    def import_raw_key(private_key: bytes, passphrase: str) -> "Deferred[Address]":
        """
        Store C{private_key} in the keystore under C{passphrase} and hold it
        unlocked for the default duration.

        @return: a Deferred failing with L{InvalidPrivateKeyError} or
            L{AccountExistsError}.
        """

    def new_account_with_seed(seed: str) -> "Deferred[Address]":
        """
        Hold the key Keccak-256(seed) unlocked, in memory only.
        """

    def unlock(address: bytes, passphrase: str, duration: float) -> "Deferred[bool]":
        """
        Open the keystore key of C{address} and hold it for C{duration} seconds.

        @return: a Deferred firing with C{False} when the address has no
            keystore entry, C{True} once unlocked; failing with
            L{WrongPassphraseError} or L{UnlockRefusedError}.
        """

    def lock(address: bytes) -> bool:
        """
        Drop the key of C{address} from memory; whether one was held.
        """

    def dump_raw_key(address: bytes) -> "Deferred[bytes]":
        """
        The private key of C{address}, when held unlocked.

        @return: a Deferred failing with L{UnknownAccountError} otherwise.
        """
