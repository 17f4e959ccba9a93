"""
The local wallet (reference §3.6): the keys the node signs with.

Three kinds of account, listed in this order by C{eth_accounts}:

 - seed accounts, held in memory and never locked: on regtest the public
   development keys of reference §13.4 (Keccak-256 of C{cow}, C{cow1} ...
   C{cow9}), and those of C{personal_newAccountWithSeed} (gone at restart);
 - held keys: on regtest the miner's coinbase key;
 - keystore accounts: one Web3 Secret Storage file each under
   C{<datadir>/keystore/}, usable while unlocked; an unlock expires on the
   injected clock.

Key derivation (scrypt, about a second with the standard parameters) runs
on the service's own small thread pool, started in L{Wallet.startService},
so that the reactor thread keeps answering meanwhile.

Keys and passphrases never reach a log line, an error message or a
C{repr}: the keys are kept in L{Secret} boxes.  The regtest keys are the
exception by design: they are public, and the banner prints them with a
warning.
"""

import math
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from twisted.application.service import Service
from twisted.internet.defer import Deferred, fail, succeed
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.internet.threads import deferToThreadPool
from twisted.logger import Logger
from twisted.python.failure import Failure
from twisted.python.threadpool import ThreadPool
from zope.interface import implementer

from nodex.crypto import SignatureError, keccak256, new_private_key, private_key_to_address, recover_address, sign
from nodex.api.accounts import IAccounts
from nodex.primitives import Address
from nodex.api.errors import (
    AccountExistsError,
    AccountLockedError,
    KeyExportRefusedError,
    LocalWalletOffError,
    ServerBusyError,
    ServiceError,
    UnknownAccountError,
    UnlockRefusedError,
    UnlockThrottledError,
)
from nodex.services.threads import worker_pool
from nodex.structures.transactions import LegacyTransaction, Transaction, sign_transaction
from nodex.wallet.keyfile import STANDARD_SCRYPT, ScryptParams, check_private_key, decrypt_keyfile, encrypt_key, keyfile_name
from nodex.wallet.errors import WrongPassphraseError
from nodex.wallet.keystore import KeyStoreDirectory, SkippedFile, StoredKey
from nodex.wallet.messages import DEFAULT_NETWORK_NAME, signature_bytes, signed_message_hash
from nodex.wallet.typed_data import typed_data_hash

COW_SEEDS = ("cow",) + tuple(f"cow{index}" for index in range(1, 10))
"""The seeds of the ten funded regtest accounts, in C{eth_accounts} order."""

MINER_SEED = "regtest_miner_secret_please_change"
"""The seed of the regtest miner's coinbase key."""

DEFAULT_UNLOCK_SECONDS = 1800.0
"""How long a new, imported or unlocked account stays unlocked unless told (30 minutes, reference §3.6)."""

KEYSTORE_DIRECTORY = "keystore"
"""The keystore's folder under the data directory."""

MAX_WAITING_DERIVATIONS = 2
"""
Key derivations (scrypt: about a second and 256 MiB each) that may wait for
the wallet's threads besides those running; beyond, a request that needs
one is refused at once with L{ServerBusyError}.
"""

FIRST_FAILURE_DELAY = 1.0
MAX_FAILURE_DELAY = 60.0
"""
After a wrong passphrase for an account, the next attempt for it is refused
for L{FIRST_FAILURE_DELAY} seconds, doubled after each further failure in a
row up to L{MAX_FAILURE_DELAY}: about 1,440 guesses a day at most, while a
user who mistypes waits a second.
"""

RunInThread = Callable[..., "Deferred[Any]"]


def key_from_seed(seed: str) -> bytes:
    """
    The private key derived from a seed as the reference does: Keccak-256 of its UTF-8 bytes.
    """
    return keccak256(seed.encode("utf-8"))


def regtest_keys() -> list[bytes]:
    """
    The regtest development keys: the ten cow keys, then the miner coinbase key.
    """
    return [key_from_seed(seed) for seed in COW_SEEDS] + [key_from_seed(MINER_SEED)]


class Secret:
    """
    A private key in a box whose C{repr} does not show it, so that the
    operator shell, a debugger's default view or a formatted log event
    never prints it by accident.

    @ivar value: the 32-byte key.
    """

    __slots__ = ("value",)

    def __init__(self, value: bytes) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "<secret key>"


class _Unlocked:
    """
    A keystore key held in memory until C{deadline}; C{timer} drops it then.
    """

    __slots__ = ("secret", "deadline", "timer")

    def __init__(self, secret: Secret, deadline: float, timer: IDelayedCall) -> None:
        self.secret = secret
        self.deadline = deadline
        self.timer = timer

    def __repr__(self) -> str:
        return f"<unlocked until {self.deadline}>"


class _Failures:
    """
    The wrong passphrases given in a row for one account, and until when
    the next attempt is refused.
    """

    __slots__ = ("count", "not_before")

    def __init__(self) -> None:
        self.count = 0
        self.not_before = 0.0


def _hex(address: bytes) -> str:
    """
    C{0x} and the lowercase hex of an address.
    """
    return "0x" + bytes(address).hex()


@implementer(IAccounts)
class Wallet(Service):
    """
    The node's local wallet: seed accounts, held keys and the keystore.

    When the wallet is off (C{wallet.enabled = false}) it holds nothing,
    opens no keystore, lists no account, and every signing method fails
    with L{LocalWalletOffError}.
    """

    log = Logger()

    def __init__(
        self,
        chain_id: int,
        clock: IReactorTime,
        *,
        enabled: bool = True,
        seed_keys: Iterable[bytes] = (),
        held_keys: Iterable[bytes] = (),
        keystore: Path | None = None,
        network_name: str = DEFAULT_NETWORK_NAME,
        kdf: ScryptParams = STANDARD_SCRYPT,
        allow_unlock: bool = True,
        announce: bool = False,
        run_in_thread: RunInThread | None = None,
        threads: int = 2,
        allow_key_export: bool = True,
        unlock_new_accounts: bool = True,
    ) -> None:
        """
        @param chain_id: the chain that legacy transactions are signed for (EIP-155).
        @param clock: measures unlock durations; with the default thread
            pool, also the reactor that results come back on
            (C{callFromThread}).
        @param enabled: whether the local wallet is on.
        @param seed_keys: keys held unlocked for good, listed first.
        @param held_keys: keys held unlocked, listed after the seed accounts.
        @param keystore: the keystore folder (created at start), or L{None}
            for a wallet without one.
        @param network_name: the word of the C{eth_sign} prefix (DESIGN §1).
        @param kdf: the scrypt parameters of new keyfiles.
        @param allow_unlock: whether keystore keys may be held unlocked
            (off when the RPC server listens beyond loopback and the
            configuration does not allow it).
        @param announce: log the seed and held accounts with their keys at start.
        @param run_in_thread: runs key derivation and file writes; by
            default the service's own pool of C{threads} threads.
        @param allow_key_export: whether L{dump_raw_key} gives keys out
            (C{wallet.allow_key_export}: regtest and devnet only by default).
        @param unlock_new_accounts: whether new and imported keys are held
            unlocked for 30 minutes (C{wallet.unlock_new_accounts}: regtest
            and devnet only by default); else they are stored locked.
        """
        super().__init__()
        self.enabled = enabled
        self._chain_id = chain_id
        self._clock = clock
        self._seeds: dict[Address, Secret] = {}
        self._held: dict[Address, Secret] = {}
        if enabled:
            for key in seed_keys:
                self._seeds.setdefault(private_key_to_address(key), Secret(key))
            for key in held_keys:
                self._held.setdefault(private_key_to_address(key), Secret(key))
        self._directory = KeyStoreDirectory(keystore) if enabled and keystore is not None else None
        self._stored: dict[Address, StoredKey] = {}
        self._importing: set[Address] = set()
        self._reported: set[str] = set()
        self._unlocked: dict[Address, _Unlocked] = {}
        self._network_name = network_name
        self._kdf = kdf
        self._allow_unlock = allow_unlock
        self._announce = announce
        self._run_in_thread = run_in_thread
        self._threads = threads
        self._pool: ThreadPool | None = None
        self._allow_key_export = allow_key_export
        self._unlock_new_accounts = unlock_new_accounts
        self._derivations = 0
        self._max_derivations = threads + MAX_WAITING_DERIVATIONS
        self._opening: set[Address] = set()
        self._scan_waiters: list[Deferred[None]] | None = None
        self._failures: dict[Address, _Failures] = {}

    @classmethod
    def regtest(cls, chain_id: int, clock: IReactorTime, **options: Any) -> "Wallet":
        """
        The regtest wallet of reference §13.4: the cow accounts and the
        miner key held unlocked, announced at start.

        @param options: further keyword arguments of L{Wallet}.
        """
        keys = regtest_keys()
        options.setdefault("announce", True)
        return cls(chain_id, clock, seed_keys=keys[:-1], held_keys=keys[-1:], **options)

    # Service

    def startService(self) -> None:
        """
        Open the keystore (creating its folder, mode 0700), report every
        file that cannot be used by name, start the thread pool, and log
        the development accounts if this node announces them.
        """
        super().startService()
        if self._run_in_thread is None:
            self._pool = worker_pool(0, self._threads, "accounts")
            self._pool.start()
        if self._directory is not None:
            self._directory.ensure()
            self._adopt(*self._directory.scan())
            self.log.info(
                "keystore {path}: {count} account(s)", path=str(self._directory.path), count=len(self._stored)
            )
        if self._announce and (self._seeds or self._held):
            self.log.warn("{banner}", banner=self.banner())

    def _adopt(self, found: list[StoredKey], skipped: list[SkippedFile]) -> list[Address]:
        """
        Know the keyfiles of a scan that are new, and report each unusable
        file by name once.

        @return: the addresses that were new.
        """
        for entry in skipped:
            if entry.name not in self._reported:
                self._reported.add(entry.name)
                self.log.warn("keystore: skipping {name}: {reason}", name=entry.name, reason=entry.reason)
        new = [stored for stored in found if stored.address not in self._stored]
        for stored in new:
            self._stored[stored.address] = stored
        return [stored.address for stored in new]

    def stopService(self) -> None:
        """
        Drop every unlocked key and stop the thread pool.
        """
        for address in list(self._unlocked):
            self._forget(address)
        if self._pool is not None:
            self._pool.stop()
            self._pool = None
        return super().stopService()

    def _run(self, function: Callable[..., Any], *args: Any) -> "Deferred[Any]":
        """
        Run C{function(*args)} off the reactor thread.
        """
        if self._run_in_thread is not None:
            return self._run_in_thread(function, *args)
        if self._pool is None:
            return fail(ServiceError("the wallet is not running"))
        return deferToThreadPool(self._clock, self._pool, function, *args)

    # Listing

    def addresses(self) -> list[Address]:
        """
        The seed accounts in insertion order, then the held keys, then the
        keystore's accounts in file-name (creation) order.
        """
        listed = list(self._seeds)
        listed += [address for address in self._held if address not in self._seeds]
        listed += [address for address in self._stored if address not in self._seeds and address not in self._held]
        return listed

    def holds(self, address: bytes) -> bool:
        """
        Whether the node holds an unlocked key for C{address} now.
        """
        return self._key_or_none(Address(address)) is not None

    def banner(self) -> str:
        """
        The text shown at start: every development account with its private
        key, and the warning.
        """
        lines = ["Development accounts (unlocked, funded on regtest):", ""]
        for index, (address, secret) in enumerate([*self._seeds.items(), *self._held.items()]):
            lines.append(f"({index}) {_hex(address)}")
            lines.append(f"    private key: 0x{secret.value.hex()}")
        lines += [
            "",
            "WARNING: these private keys are public. Never send real funds to these accounts,"
            " on any network: anyone can take them.",
        ]
        return "\n".join(lines)

    # Keys in memory

    def _key_or_none(self, address: Address) -> bytes | None:
        """
        The key of C{address} if it is held unlocked now (an expired unlock
        is dropped here at the latest).
        """
        secret = self._seeds.get(address) or self._held.get(address)
        if secret is not None:
            return secret.value
        unlocked = self._unlocked.get(address)
        if unlocked is None:
            return None
        if self._clock.seconds() >= unlocked.deadline:
            self._forget(address)
            return None
        return unlocked.secret.value

    def _signing_key(self, address: bytes) -> bytes:
        """
        The key to sign with for C{address}.

        @raise LocalWalletOffError: the wallet is off.
        @raise AccountLockedError: a keystore account that is not unlocked.
        @raise UnknownAccountError: an address the wallet does not know.
        """
        if not self.enabled:
            raise LocalWalletOffError()
        key = self._key_or_none(Address(address))
        if key is not None:
            return key
        if address in self._stored:
            raise AccountLockedError(f"account {_hex(address)} is locked: unlock it with personal_unlockAccount")
        raise UnknownAccountError(f"Could not find account for address: {_hex(address)}")

    def _hold(self, address: Address, key: bytes, duration: float) -> None:
        """
        Hold a keystore key unlocked for C{duration} seconds (replacing an
        earlier unlock); a duration of zero or less holds nothing.
        """
        self._forget(address)
        if duration <= 0:
            return
        timer = self._clock.callLater(duration, self._expire, address)
        self._unlocked[address] = _Unlocked(Secret(key), self._clock.seconds() + duration, timer)

    def _expire(self, address: Address) -> None:
        """
        The unlock of C{address} has run out: drop the key.
        """
        unlocked = self._unlocked.pop(address, None)
        if unlocked is not None:
            unlocked.secret.value = b""
            self.log.info("account {address} locked: its unlock expired", address=_hex(address))

    def _forget(self, address: Address) -> bool:
        """
        Drop the unlocked keystore key of C{address}; whether one was held.
        """
        unlocked = self._unlocked.pop(address, None)
        if unlocked is None:
            return False
        if unlocked.timer.active():
            unlocked.timer.cancel()
        unlocked.secret.value = b""
        return True

    def _check_enabled(self) -> None:
        """
        @raise LocalWalletOffError: the wallet is off.
        """
        if not self.enabled:
            raise LocalWalletOffError()

    # Signing

    def sign_transaction(self, unsigned: Transaction, address: bytes) -> "Deferred[Transaction]":
        """
        Sign C{unsigned} with the unlocked key of C{address}: a legacy
        transaction with EIP-155 for this chain, a typed one with its own
        chain id.

        @return: a Deferred firing with the signed transaction, or failing
            with L{UnknownAccountError} (or L{AccountLockedError}) or
            L{LocalWalletOffError}.
        """
        try:
            key = self._signing_key(address)
        except ServiceError as exc:
            return fail(exc)
        return succeed(self._sign_transaction(unsigned, key, Address(address)))

    def _sign_transaction(self, unsigned: Transaction, key: bytes, address: Address | None = None) -> Transaction:
        """
        Sign with C{key} (whose address is C{address}, when known: the
        wallet keeps each key under the address derived from it), EIP-155
        for legacy transactions.
        """
        chain_id = self._chain_id if isinstance(unsigned, LegacyTransaction) else None
        return sign_transaction(unsigned, key, chain_id, address)

    def sign_transaction_with_passphrase(
        self, unsigned: Transaction, address: bytes, passphrase: str
    ) -> "Deferred[Transaction]":
        """
        Sign with the keystore key of C{address} opened by C{passphrase}
        for this signature only (C{personal_sendTransaction}); the unlocked
        state of the account stays as it was.

        @return: a Deferred firing with the signed transaction, failing
            with L{UnknownAccountError} (no keystore entry),
            L{nodex.wallet.errors.WrongPassphraseError} or
            L{LocalWalletOffError}.
        """
        return self._with_passphrase(address, passphrase, self._sign_transaction, unsigned)

    def sign_message_with_passphrase(self, address: bytes, message: bytes, passphrase: str) -> "Deferred[bytes]":
        """
        Sign C{message} as L{sign_message} does, with the keystore key of
        C{address} opened by C{passphrase} for this signature only (geth's
        C{personal_sign} with its third parameter).

        @return: a Deferred failing as L{sign_transaction_with_passphrase}'s.
        """
        return self._with_passphrase(address, passphrase, self._sign_message, message)

    def _with_passphrase(
        self, address: bytes, passphrase: str, use: Callable[[Any, bytes], Any], subject: Any
    ) -> "Deferred[Any]":
        """
        C{use(subject, key)} with the keystore key of C{address} decrypted
        by C{passphrase} in a thread; the account's unlocked state is not touched.
        """
        try:
            self._check_enabled()
        except ServiceError as exc:
            return fail(exc)
        stored = self._stored.get(Address(address))
        if stored is None:
            return fail(UnknownAccountError(f"no keystore entry for address {_hex(address)}"))

        async def opened() -> Any:
            return use(subject, await self._open_key(stored, passphrase))

        return Deferred.fromCoroutine(opened())

    def sign_message(self, address: bytes, message: bytes) -> "Deferred[bytes]":
        """
        Sign C{message} the way C{eth_sign} does: the digest of
        L{signed_message_hash} with this node's network name.

        @return: a Deferred firing with the 65-byte signature (v 27 or 28).
        """
        try:
            key = self._signing_key(address)
        except ServiceError as exc:
            return fail(exc)
        return succeed(self._sign_message(message, key))

    def _sign_message(self, message: bytes, key: bytes) -> bytes:
        """
        The 65-byte signature of C{message} under this node's message prefix.
        """
        return signature_bytes(*sign(signed_message_hash(message, self._network_name), key))

    def recover_message_signer(self, message: bytes, signature: bytes) -> Address:
        """
        The address whose key made C{signature} (r ‖ s ‖ v, v 27 or 28, or
        0 or 1) of C{message} under this node's message prefix
        (C{personal_ecRecover}).

        @raise SignatureError: the signature is not 65 bytes, or recovers no key.
        """
        if len(signature) != 65:
            raise SignatureError(f"a signature has 65 bytes, got {len(signature)}")
        v = signature[64]
        y_parity = v - 27 if v >= 27 else v
        if y_parity not in (0, 1):
            raise SignatureError(f"invalid recovery id v = {v}: want 27 or 28")
        r, s = int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:64], "big")
        return recover_address(signed_message_hash(message, self._network_name), y_parity, r, s)

    def sign_typed_data(self, address: bytes, typed_data: Any) -> "Deferred[bytes]":
        """
        Sign EIP-712 typed data (C{eth_signTypedData_v4}).

        @return: a Deferred firing with the 65-byte signature, or failing
            with L{nodex.wallet.errors.TypedDataError} for malformed data.
        """
        try:
            key = self._signing_key(address)
            digest = typed_data_hash(typed_data)
        except Exception as exc:
            return fail(exc)
        return succeed(signature_bytes(*sign(digest, key)))

    def dump_raw_key(self, address: bytes) -> "Deferred[bytes]":
        """
        The private key of C{address}, if it is held unlocked now.

        @return: a Deferred firing with the 32-byte key, or failing with
            L{UnknownAccountError}, or L{KeyExportRefusedError} where the
            configuration does not allow it (main and testnet by default).
        """
        if self.enabled and not self._allow_key_export:
            return fail(KeyExportRefusedError(
                "personal_dumpRawKey is refused: this node gives out no private key"
                " (set wallet.allow_key_export to allow it)"
            ))
        try:
            return succeed(self._signing_key(address))
        except ServiceError as exc:
            return fail(exc)

    # Creating and unlocking

    def new_account_with_seed(self, seed: str) -> "Deferred[Address]":
        """
        Hold Keccak-256 of the UTF-8 C{seed} as a seed account, in memory
        only (it is gone after a restart).
        """
        try:
            self._check_enabled()
        except ServiceError as exc:
            return fail(exc)
        key = key_from_seed(seed)
        address = private_key_to_address(key)
        self._seeds.setdefault(address, Secret(key))
        return succeed(address)

    def new_account(self, passphrase: str) -> "Deferred[Address]":
        """
        Create a random key, store it under C{passphrase} and hold it
        unlocked for 30 minutes (when unlocking is allowed).

        @return: a Deferred firing with the new address.
        """
        return self.import_raw_key(new_private_key(), passphrase)

    def import_raw_key(self, private_key: bytes, passphrase: str) -> "Deferred[Address]":
        """
        Store C{private_key} under C{passphrase} (a new keyfile, written
        atomically) and hold it unlocked for 30 minutes (when unlocking is
        allowed).

        @return: a Deferred firing with the address, or failing with
            L{nodex.wallet.errors.InvalidPrivateKeyError},
            L{AccountExistsError} or L{LocalWalletOffError}.
        """
        try:
            self._check_enabled()
            check_private_key(private_key)
        except Exception as exc:
            return fail(exc)
        return Deferred.fromCoroutine(self._store_key(private_key, passphrase))

    async def _store_key(self, private_key: bytes, passphrase: str) -> Address:
        """
        Encrypt and write a keyfile in a thread, then know and unlock it.
        """
        if self._directory is None:
            raise ServiceError("this wallet has no keystore")
        address = private_key_to_address(private_key)
        if address in self._stored or address in self._importing:
            raise AccountExistsError(f"account {_hex(address)} already exists in the keystore")
        when = datetime.fromtimestamp(self._clock.seconds(), timezone.utc)
        self._importing.add(address)
        try:
            stored = await self._derive(self._thd_write_key, private_key, passphrase, when)
        finally:
            self._importing.discard(address)
        self._stored[address] = stored
        self.log.info("keystore: stored account {address} in {name}", address=_hex(address), name=stored.path.name)
        if self._allow_unlock and self._unlock_new_accounts:
            self._hold(address, private_key, DEFAULT_UNLOCK_SECONDS)
        return address

    def _thd_write_key(self, private_key: bytes, passphrase: str, when: datetime) -> StoredKey:
        """
        Encrypt a key and write its keyfile (in a thread).
        """
        assert self._directory is not None
        keyfile = encrypt_key(private_key, passphrase, self._kdf)
        return self._directory.write(keyfile, keyfile_name(private_key_to_address(private_key), when))

    def unlock(self, address: bytes, passphrase: str, duration: float = DEFAULT_UNLOCK_SECONDS) -> "Deferred[bool]":
        """
        Open the keystore key of C{address} with C{passphrase} and hold it
        for C{duration} seconds (zero: it expires at once, reference §3.6).
        An address the wallet does not know makes it scan the keystore
        folder again, so that a keyfile copied in while the node runs is
        found.

        @return: a Deferred firing with C{False} for an address without a
            keystore entry (seed accounts and held keys included), C{True}
            once unlocked; failing with
            L{nodex.wallet.errors.WrongPassphraseError} (the account stays
            as it was), L{UnlockRefusedError} or L{LocalWalletOffError}.
        """
        try:
            self._check_enabled()
        except ServiceError as exc:
            return fail(exc)
        return Deferred.fromCoroutine(self._unlock(Address(address), passphrase, duration))

    async def _unlock(self, address: Address, passphrase: str, duration: float) -> bool:
        """
        Find the keyfile (scanning the folder again for a file copied in
        since the start), decrypt it in a thread, then hold the key.
        """
        stored = self._stored.get(address)
        if stored is None and self._directory is not None:
            await self._rescan()
            stored = self._stored.get(address)
        if stored is None:
            return False
        if not self._allow_unlock:
            raise UnlockRefusedError(
                "account unlock is refused: the RPC server listens beyond the loopback interface"
                " (set wallet.allow_insecure_unlock to allow it)"
            )
        key = await self._open_key(stored, passphrase)
        if self._stored.get(stored.address) is not stored:
            return False
        self._hold(stored.address, key, duration)
        self.log.info("account {address} unlocked for {duration} s", address=_hex(stored.address), duration=duration)
        return True

    def _rescan(self) -> "Deferred[None]":
        """
        Scan the keystore folder again for files copied in, in a thread; a
        scan asked for while one runs waits for that one (unlocks of many
        unknown addresses cost one scan at a time).

        @return: a Deferred firing once the scan's files are known.
        """
        assert self._directory is not None
        waiter: Deferred[None] = Deferred()
        if self._scan_waiters is not None:
            self._scan_waiters.append(waiter)
            return waiter
        self._scan_waiters = [waiter]
        self._run(self._directory.scan).addBoth(self._scanned)
        return waiter

    def _scanned(self, result: Any) -> None:
        """
        A scan ended: know its files and release its waiters; the next request starts another.
        """
        waiters, self._scan_waiters = self._scan_waiters or [], None
        if not isinstance(result, Failure):
            self._adopt(*result)
        for waiter in waiters:
            if isinstance(result, Failure):
                waiter.errback(result)
            else:
                waiter.callback(None)

    # Key derivations

    async def _derive(self, function: Callable[..., Any], *args: Any) -> Any:
        """
        Run a key derivation (scrypt) in the wallet's threads, unless
        L{MAX_WAITING_DERIVATIONS} already wait beside the running ones.

        @raise ServerBusyError: too many derivations run or wait.
        """
        if self._derivations >= self._max_derivations:
            raise ServerBusyError(
                f"the node is busy: {self._derivations} key derivations run or wait; try again shortly"
            )
        self._derivations += 1
        try:
            return await self._run(function, *args)
        finally:
            self._derivations -= 1

    async def _open_key(self, stored: StoredKey, passphrase: str) -> bytes:
        """
        Decrypt a keystore key with C{passphrase}: one attempt at a time per
        account, and after a wrong passphrase none for a while (see
        L{FIRST_FAILURE_DELAY}); each wrong passphrase is logged.

        @raise WrongPassphraseError: the passphrase does not open it.
        @raise UnlockThrottledError: wrong passphrases came just before, or
            another attempt for the account runs.
        @raise ServerBusyError: too many derivations run or wait.
        """
        address = stored.address
        failures = self._failures.get(address)
        now = self._clock.seconds()
        if failures is not None and now < failures.not_before:
            raise UnlockThrottledError(
                f"too many wrong passphrases for account {_hex(address)}: "
                f"try again in {max(1, math.ceil(failures.not_before - now))} s"
            )
        if address in self._opening:
            raise UnlockThrottledError(
                f"another attempt to open account {_hex(address)} is running: try again when it ends"
            )
        self._opening.add(address)
        try:
            key: bytes = await self._derive(decrypt_keyfile, stored.keyfile, passphrase)
        except WrongPassphraseError:
            self._failed(address)
            raise
        finally:
            self._opening.discard(address)
        self._failures.pop(address, None)
        return key

    def _failed(self, address: Address) -> None:
        """
        Count a wrong passphrase for C{address}, refuse attempts for a while, and log it.
        """
        failures = self._failures.setdefault(address, _Failures())
        failures.count += 1
        delay = min(FIRST_FAILURE_DELAY * 2 ** (failures.count - 1), MAX_FAILURE_DELAY)
        failures.not_before = self._clock.seconds() + delay
        self.log.warn(
            "keystore: wrong passphrase for account {address} ({count} in a row); "
            "attempts refused for {delay:g} s",
            address=_hex(address),
            count=failures.count,
            delay=delay,
        )

    def lock(self, address: bytes) -> bool:
        """
        Drop the key of C{address} from memory.  A seed account or held key
        is forgotten with it (nothing can unlock it again); a keystore
        account stays listed, locked.

        @return: whether a key was held.
        """
        address = Address(address)
        if not self.enabled:
            return False
        for kind in (self._seeds, self._held):
            secret = kind.pop(address, None)
            if secret is not None:
                self._forget(address)
                return True
        return self._forget(address)


__all__ = [
    "COW_SEEDS",
    "DEFAULT_UNLOCK_SECONDS",
    "FIRST_FAILURE_DELAY",
    "MAX_FAILURE_DELAY",
    "MAX_WAITING_DERIVATIONS",
    "KEYSTORE_DIRECTORY",
    "MINER_SEED",
    "Secret",
    "Wallet",
    "key_from_seed",
    "regtest_keys",
]
