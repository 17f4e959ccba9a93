"""
The local wallet's methods: the C{personal} module (reference §3.6, with
geth's C{personal_sign} and C{personal_ecRecover}, which ethers' signer
calls) and the C{eth} methods that sign with the node's keys: C{eth_sign}
(DESIGN §1), and, because ethers' C{JsonRpcSigner}, web3.py and wallets
call them, C{eth_signTypedData_v4} (EIP-712; also as geth's
C{eth_signTypedData}) and C{eth_signTransaction}.

With the wallet off every C{personal_*} method answers -32604 C{The local
wallet feature is disabled} once its parameters decode, and the signing
methods answer -32602 C{Local wallet is disabled in this node}
(reference §6).

Passphrases and keys travel only as parameters: no message here repeats one.
"""

import json
from collections.abc import Iterable
from typing import Any

from nodex.crypto import SignatureError
from nodex.api.accounts import IAccounts
from nodex.api.pool import ITransactionPool
from nodex.primitives import Address, Hash32
from nodex.rpc import decoders, encoders
from nodex.rpc.decoders import DecodeError
from nodex.rpc.errors import InvalidParamsError, WalletDisabledError
from nodex.rpc.objects import transaction_object
from nodex.rpc.registry import Method, Param
from nodex.rpc.transaction_methods import TransactionSending, transaction_request
from nodex.structures.transactions import Transaction

DEFAULT_UNLOCK_MILLISECONDS = 1_800_000
"""The duration of C{personal_unlockAccount} when it is C{null} or C{""}: 30 minutes (reference §3.6)."""

MAX_TYPED_DATA_TEXT = 1 << 20
"""The longest typed-data JSON text accepted (1 MiB)."""

_HEX = frozenset("0123456789abcdefABCDEF")


def passphrase(value: Any) -> str:
    """
    A passphrase: any JSON string (empty too: a keyfile written elsewhere
    may use one).
    """
    if not isinstance(value, str):
        raise DecodeError("passphrase must be a string")
    return value


def new_passphrase(value: Any) -> str:
    """
    The passphrase of a new keyfile: a non-empty string.
    """
    text = passphrase(value)
    if not text:
        raise DecodeError("passphrase must not be empty")
    return text


def unlock_duration(value: Any) -> int:
    """
    The duration of C{personal_unlockAccount} in milliseconds: a
    C{0x}-prefixed hex string, or C{""} for the default (reference §3.6; a
    JSON number is refused).
    """
    if value == "":
        return DEFAULT_UNLOCK_MILLISECONDS
    if not isinstance(value, str):
        raise DecodeError(f'"{str(value)[:40]}": param should be a hex value string')
    return decoders.uint64(value)


def private_key(value: Any) -> bytes:
    """
    A private key: 64 hex digits, with or without C{0x}.  The message of a
    refusal never repeats the value.
    """
    if not isinstance(value, str):
        raise DecodeError("private key must be a hex string")
    digits = value[2:] if value[:2] in ("0x", "0X") else value
    if not _HEX.issuperset(digits):
        raise DecodeError("private key must be hex")
    if len(digits) != 64:
        raise DecodeError(f"private key has {len(digits)} hex digits, want 64")
    return bytes.fromhex(digits)


def seed(value: Any) -> str:
    """
    The seed of C{personal_newAccountWithSeed}: a string.
    """
    if not isinstance(value, str):
        raise DecodeError("seed must be a string")
    return value


message_signature = decoders.fixed_data(65, "signature")
"""A 65-byte message signature r ‖ s ‖ v."""


def typed_data(value: Any) -> Any:
    """
    EIP-712 typed data: a JSON object, or a string holding one (what
    MetaMask and ethers send).  Its contents are checked when hashed.
    """
    if isinstance(value, str):
        if len(value) > MAX_TYPED_DATA_TEXT:
            raise DecodeError(f"typed data longer than {MAX_TYPED_DATA_TEXT} characters")
        try:
            value = json.loads(value)
        except ValueError:
            raise DecodeError("typed data string is not JSON") from None
    if not isinstance(value, dict):
        raise DecodeError("typed data must be an object or a JSON string of one")
    return value


def signed_transaction_object(signed: Transaction) -> dict[str, Any]:
    """
    The C{SignTransactionResult} of the execution APIs: C{raw} (the
    encoding C{eth_sendRawTransaction} takes) and C{tx} (the transaction
    object).
    """
    tx = transaction_object(signed, None, None, None)
    for member in ("blockHash", "blockNumber", "transactionIndex"):
        del tx[member]
    return {"raw": encoders.data(signed.encode()), "tx": tx}


class _Sending:
    """
    What signing a transaction request needs: the request defaults and the
    senders' locks (L{TransactionSending}, shared with C{eth_sendTransaction}).
    """

    def __init__(
        self, accounts: IAccounts, pool: ITransactionPool, chain_id: int, sending: TransactionSending | None = None
    ) -> None:
        """
        @param accounts: the wallet.
        @param pool: gives the next nonce of a sender and takes transactions.
        @param chain_id: the chain transactions are signed for.
        @param sending: the request defaults and the senders' locks (a new
            one when L{None}).
        """
        self._accounts = accounts
        self._pool = pool
        self._chain_id = chain_id
        self._sending = sending if sending is not None else TransactionSending(pool, chain_id)


class PersonalMethods(_Sending):
    """
    The C{personal} module.
    """

    def rpc_methods(self) -> Iterable[Method]:
        """
        Every C{personal_*} method of the specification.
        """
        address = Param("address", decoders.address)
        return [
            Method("personal_newAccount", self.new_account, (Param("passphrase", new_passphrase),), encoders.address),
            Method(
                "personal_importRawKey",
                self.import_raw_key,
                (Param("key", private_key), Param("passphrase", new_passphrase)),
                encoders.address,
            ),
            Method("personal_newAccountWithSeed", self.new_account_with_seed, (Param("seed", seed),), encoders.address),
            Method("personal_listAccounts", self.list_accounts, (), encoders.array_of(encoders.address)),
            Method(
                "personal_unlockAccount",
                self.unlock_account,
                (address, Param("passphrase", passphrase), Param("duration", unlock_duration, DEFAULT_UNLOCK_MILLISECONDS)),
            ),
            Method("personal_lockAccount", self.lock_account, (address,)),
            Method("personal_dumpRawKey", self.dump_raw_key, (address,), encoders.data),
            Method(
                "personal_sendTransaction",
                self.send_transaction,
                (Param("transaction", transaction_request), Param("passphrase", passphrase)),
                encoders.hash32,
            ),
            # Beyond the specification's list: ethers' JsonRpcSigner.signMessage
            # and web3.py's geth.personal call these (geth, Hardhat, Anvil).
            Method(
                "personal_sign",
                self.sign,
                (Param("message", decoders.data), address, Param("passphrase", passphrase, None)),
                encoders.data,
            ),
            Method(
                "personal_ecRecover",
                self.ec_recover,
                (Param("message", decoders.data), Param("signature", message_signature)),
                encoders.address,
            ),
        ]

    def _check_enabled(self) -> None:
        """
        @raise WalletDisabledError: the local wallet is off (-32604).
        """
        if not self._accounts.enabled:
            raise WalletDisabledError("The local wallet feature is disabled")

    async def new_account(self, passphrase: str) -> Address:
        """
        C{personal_newAccount}: a new random key in the keystore, unlocked for 30 minutes.
        """
        self._check_enabled()
        return await self._accounts.new_account(passphrase)

    async def import_raw_key(self, key: bytes, passphrase: str) -> Address:
        """
        C{personal_importRawKey}: store a key in the keystore, unlocked for 30 minutes.
        """
        self._check_enabled()
        return await self._accounts.import_raw_key(key, passphrase)

    async def new_account_with_seed(self, seed: str) -> Address:
        """
        C{personal_newAccountWithSeed}: hold Keccak-256(seed) in memory, unlocked.
        """
        self._check_enabled()
        return await self._accounts.new_account_with_seed(seed)

    def list_accounts(self) -> list[Address]:
        """
        C{personal_listAccounts}: the same list as C{eth_accounts}.
        """
        self._check_enabled()
        return self._accounts.addresses()

    async def unlock_account(self, address: Address, passphrase: str, milliseconds: int) -> bool:
        """
        C{personal_unlockAccount}: false for an address without a keystore
        entry; true once unlocked for C{milliseconds} (0: expires at once).
        """
        self._check_enabled()
        return await self._accounts.unlock(address, passphrase, milliseconds / 1000)

    def lock_account(self, address: Address) -> bool:
        """
        C{personal_lockAccount}: whether a key was held (it is dropped).
        """
        self._check_enabled()
        return self._accounts.lock(address)

    async def dump_raw_key(self, address: Address) -> bytes:
        """
        C{personal_dumpRawKey}: the private key of an account held unlocked.
        """
        self._check_enabled()
        return await self._accounts.dump_raw_key(address)

    async def send_transaction(self, request: dict[str, Any], passphrase: str) -> Hash32:
        """
        C{personal_sendTransaction}: sign with the keystore key opened by
        C{passphrase} for this transaction only, and send.
        """
        self._check_enabled()
        sender = request["from"]
        return await self._sending.send(
            request, lambda unsigned: self._accounts.sign_transaction_with_passphrase(unsigned, sender, passphrase)
        )


    async def sign(self, message: bytes, address: Address, passphrase: str | None) -> bytes:
        """
        C{personal_sign}: C{eth_sign}'s signature with the parameters the
        other way round; with a passphrase, by the keystore key it opens for
        this signature only (geth), without one by the unlocked key
        (Hardhat, Anvil, ethers).
        """
        self._check_enabled()
        if passphrase is None:
            return await self._accounts.sign_message(address, message)
        return await self._accounts.sign_message_with_passphrase(address, message, passphrase)

    def ec_recover(self, message: bytes, signature: bytes) -> Address:
        """
        C{personal_ecRecover}: the address that made C{personal_sign}'s
        C{signature} of C{message}.

        @raise InvalidParamsError: the signature recovers no address.
        """
        self._check_enabled()
        try:
            return self._accounts.recover_message_signer(message, signature)
        except SignatureError as exc:
            raise InvalidParamsError(f"invalid argument 1: {exc}") from None


class SigningMethods(_Sending):
    """
    The C{eth} methods that sign with the wallet's unlocked keys.
    """

    def rpc_methods(self) -> Iterable[Method]:
        """
        C{eth_sign}, C{eth_signTypedData_v4} (also under geth's name
        C{eth_signTypedData}), C{eth_signTransaction}.
        """
        return [
            Method(
                "eth_sign",
                self.sign,
                (Param("address", decoders.address), Param("message", decoders.data)),
                encoders.data,
            ),
            Method(
                "eth_signTypedData_v4",
                self.sign_typed_data,
                (Param("address", decoders.address), Param("typedData", typed_data)),
                encoders.data,
            ),
            # geth's name for the same EIP-712 signature, which web3.py's
            # sign_typed_data calls.
            Method(
                "eth_signTypedData",
                self.sign_typed_data,
                (Param("address", decoders.address), Param("typedData", typed_data)),
                encoders.data,
            ),
            Method("eth_signTransaction", self.sign_transaction, (Param("transaction", transaction_request),)),
        ]

    def sign(self, address: Address, message: bytes) -> Any:
        """
        C{eth_sign}: the 65-byte signature of the prefixed message (DESIGN §1).
        """
        return self._accounts.sign_message(address, message)

    def sign_typed_data(self, address: Address, data: Any) -> Any:
        """
        C{eth_signTypedData_v4}: the 65-byte EIP-712 signature.
        """
        return self._accounts.sign_typed_data(address, data)

    async def sign_transaction(self, request: dict[str, Any]) -> dict[str, Any]:
        """
        C{eth_signTransaction}: sign without sending; C{{raw, tx}}.
        """
        unsigned = await self._sending.unsigned(request)
        signed = await self._accounts.sign_transaction(unsigned, request["from"])
        return signed_transaction_object(signed)


__all__ = [
    "DEFAULT_UNLOCK_MILLISECONDS",
    "PersonalMethods",
    "SigningMethods",
    "new_passphrase",
    "passphrase",
    "message_signature",
    "private_key",
    "seed",
    "signed_transaction_object",
    "typed_data",
    "unlock_duration",
]
