"""
Tests for L{nodex.services.accounts}: the local wallet, with an injected
clock, key derivation run synchronously and a keystore under a temporary
folder.
"""

import json
from dataclasses import replace
import os
import stat
from pathlib import Path
from typing import Any

from twisted.internet.defer import Deferred, maybeDeferred
from twisted.internet.task import Clock
from twisted.logger import globalLogPublisher
from twisted.trial.unittest import SkipTest, SynchronousTestCase
from zope.interface.verify import verifyObject

from nodex.crypto import SECP256K1_N, keccak256, private_key_to_address, recover_address
from nodex.api.accounts import IAccounts
from nodex.services.accounts import (
    DEFAULT_UNLOCK_SECONDS,
    FIRST_FAILURE_DELAY,
    MAX_FAILURE_DELAY,
    Wallet,
    key_from_seed,
    regtest_keys,
)
from nodex.api.errors import (
    AccountExistsError,
    AccountLockedError,
    KeyExportRefusedError,
    LocalWalletOffError,
    ServerBusyError,
    UnknownAccountError,
    UnlockRefusedError,
    UnlockThrottledError,
)
from nodex.structures.errors import InvalidSignatureError
from nodex.structures.transactions import FeeMarketTransaction, LegacyTransaction, decode_transaction
from nodex.wallet.errors import InvalidPrivateKeyError, TypedDataError, WrongPassphraseError
from nodex.wallet.keyfile import LIGHT_SCRYPT
from tests.wallet.test_typed_data import MAIL

try:
    from eth_account import Account as EthAccount
    from eth_account.messages import encode_defunct, encode_typed_data
except ImportError:  # pragma: no cover - the test extra is missing
    EthAccount = None

COW = bytes.fromhex("cd2a3d9f938e13cd947ec05abc7fe734df8dd826")
COW9 = bytes.fromhex("09a1eda29f664ac8f68106f6567276df0c65d859")
MINER = bytes.fromhex("ec4ddeb4380ad69b3e509baad9f158cdf4e4681d")
KEY = keccak256(b"a keystore key")
ADDRESS = private_key_to_address(KEY)
TRANSFER = LegacyTransaction(0, 0, 21000, MINER, 1, b"")


def needs_eth_account() -> None:
    """
    Skip without the test extra.
    """
    if EthAccount is None:
        raise SkipTest("eth-account (the test extra) is not installed")


class DevAccountsTests(SynchronousTestCase):
    """
    The regtest development accounts (reference §13.4).
    """

    def test_interface(self) -> None:
        """
        L{Wallet} provides L{IAccounts}.
        """
        self.assertTrue(verifyObject(IAccounts, Wallet.regtest(33, Clock())))

    def test_regtest_keys(self) -> None:
        """
        The keys are Keccak-256 of the seeds (reference §13.4).
        """
        self.assertEqual(
            key_from_seed("cow").hex(), "c85ef7d79691fe79573b1a7064c19c1a9819ebdbd1faaab1a8ec92344438aaf4"
        )
        self.assertEqual(
            regtest_keys()[-1].hex(), "bcf6db3716f6a1100ac34bc8e102be662e04b1f7f297094a35e9859ab20c4130"
        )

    def test_addresses_cows_then_coinbase(self) -> None:
        """
        Eleven addresses: the cows in order, then the miner coinbase.
        """
        addresses = Wallet.regtest(33, Clock()).addresses()
        self.assertEqual(len(addresses), 11)
        self.assertEqual((addresses[0], addresses[9], addresses[10]), (COW, COW9, MINER))

    def test_duplicate_keys_listed_once(self) -> None:
        """
        A key given twice gives one account.
        """
        key = key_from_seed("cow")
        self.assertEqual(Wallet(33, Clock(), seed_keys=[key, key]).addresses(), [COW])

    def test_sign_legacy_with_eip155(self) -> None:
        """
        A legacy transaction is signed for the node's chain (v = 35 + 2 * 33
        + parity); the sender the signed transaction carries (the wallet's
        address of the key, not derived again) is the one its signature
        recovers to.
        """
        signed = self.successResultOf(Wallet.regtest(33, Clock()).sign_transaction(TRANSFER, COW))
        self.assertIn(signed.v, (101, 102))
        again = decode_transaction(signed.encode())
        self.assertEqual((again.sender, again.chain_id), (COW, 33))
        self.assertEqual(signed.sender, again.sender)

    def test_signed_sender_without_recovery(self) -> None:
        """
        The transaction C{eth_sendTransaction} hands to the pool names its
        sender (the signing account) without a signature recovery (one
        libsecp256k1 recovery, ~0.5 million instructions, would otherwise run
        at admission); the same bytes sent raw recover it, and a signature
        changed in transit is refused or names another sender.
        """
        import nodex.structures.transactions as transactions

        def no_recovery(*args: object) -> bytes:
            raise AssertionError("the sender was recovered")

        self.patch(transactions, "recover_address", no_recovery)
        signed = self.successResultOf(Wallet.regtest(33, Clock()).sign_transaction(TRANSFER, COW))
        self.assertEqual(signed.sender, COW)
        self.assertRaises(AssertionError, lambda: decode_transaction(signed.encode()).sender)
        self.patch(transactions, "recover_address", recover_address)
        self.assertEqual(decode_transaction(signed.encode()).sender, COW)
        tampered = replace(signed, s=signed.s + 1)
        tampered_sender = decode_transaction(tampered.encode()).sender
        self.assertNotEqual(tampered_sender, COW)
        high_s = replace(signed, s=SECP256K1_N - signed.s)
        self.assertRaises(InvalidSignatureError, lambda: decode_transaction(high_s.encode()).sender)

    def test_sign_typed(self) -> None:
        """
        A typed transaction is signed with its own chain id.
        """
        unsigned = FeeMarketTransaction(33, 0, 1, 2, 21000, MINER, 0, b"")
        signed = self.successResultOf(Wallet.regtest(33, Clock()).sign_transaction(unsigned, COW9))
        self.assertEqual(decode_transaction(signed.encode()).sender, COW9)
        self.assertEqual(signed.sender, COW9)

    def test_unknown_account(self) -> None:
        """
        An address without a key fails with L{UnknownAccountError} naming it.
        """
        failure = self.failureResultOf(
            Wallet.regtest(33, Clock()).sign_transaction(TRANSFER, b"\x01" * 20), UnknownAccountError
        )
        self.assertEqual(failure.getErrorMessage(), "Could not find account for address: 0x" + "01" * 20)

    def test_banner(self) -> None:
        """
        The banner lists every account with its key and warns that the keys are public.
        """
        banner = Wallet.regtest(33, Clock()).banner()
        self.assertIn("(0) 0x" + COW.hex(), banner)
        self.assertIn("0x" + key_from_seed("cow9").hex(), banner)
        self.assertIn("(10) 0x" + MINER.hex(), banner)
        self.assertIn("WARNING: these private keys are public", banner)

    def test_start_announces(self) -> None:
        """
        Starting an announcing service logs the banner; a silent one logs nothing.
        """
        events: list[dict[str, Any]] = []
        globalLogPublisher.addObserver(events.append)
        self.addCleanup(globalLogPublisher.removeObserver, events.append)
        Wallet(33, Clock(), seed_keys=[key_from_seed("cow")], run_in_thread=maybeDeferred).startService()
        self.assertEqual(events, [])
        Wallet.regtest(33, Clock(), run_in_thread=maybeDeferred).startService()
        self.assertEqual(len(events), 1)
        self.assertIn("0x" + COW.hex(), events[0]["banner"])

    def test_lock_forgets_dev_account(self) -> None:
        """
        Locking a development account drops its key for good: true once, then false;
        it is no longer listed and cannot sign; unlocking it answers false.
        """
        wallet = Wallet.regtest(33, Clock())
        self.assertTrue(wallet.lock(COW))
        self.assertFalse(wallet.lock(COW))
        self.assertNotIn(COW, wallet.addresses())
        self.failureResultOf(wallet.sign_transaction(TRANSFER, COW), UnknownAccountError)
        self.assertFalse(self.successResultOf(wallet.unlock(COW, "anything", 60)))

    def test_repr_hides_keys(self) -> None:
        """
        No view of the wallet's state an operator shell prints shows a key.
        """
        wallet = Wallet.regtest(33, Clock())
        shown = repr(vars(wallet))
        self.assertNotIn(key_from_seed("cow").hex(), shown)
        self.assertNotIn(repr(key_from_seed("cow"))[2:20], shown)


class KeystoreTests(SynchronousTestCase):
    """
    The keystore: creating, importing, unlocking, locking, expiry, restarts.
    """

    def setUp(self) -> None:
        self.clock = Clock()
        self.folder = Path(self.mktemp()) / "keystore"
        self.wallet = self.make_wallet()

    def make_wallet(self, **options: Any) -> Wallet:
        """
        A started wallet over C{self.folder} with light scrypt and no threads.
        """
        options.setdefault("kdf", LIGHT_SCRYPT)
        options.setdefault("run_in_thread", maybeDeferred)
        wallet = Wallet(33, self.clock, keystore=self.folder, **options)
        wallet.startService()
        self.addCleanup(wallet.stopService)
        return wallet

    def test_new_account_file(self) -> None:
        """
        A new account is a 0600 keyfile named after it in a 0700 folder,
        listed, unlocked, and readable by eth-account with its passphrase.
        """
        address = self.successResultOf(self.wallet.new_account("correct horse"))
        self.assertEqual(self.wallet.addresses(), [address])
        self.assertTrue(self.wallet.holds(address))
        self.assertEqual(stat.S_IMODE(self.folder.stat().st_mode), 0o700)
        [name] = os.listdir(self.folder)
        self.assertTrue(name.startswith("UTC--1970-01-01T00-00-00.000000000Z--"))
        self.assertTrue(name.endswith(address.hex()))
        self.assertEqual(stat.S_IMODE((self.folder / name).stat().st_mode), 0o600)
        needs_eth_account()
        key = bytes(EthAccount.decrypt(json.loads((self.folder / name).read_text()), "correct horse"))
        self.assertEqual(private_key_to_address(key), address)

    def test_import_and_duplicate(self) -> None:
        """
        An imported key gives its address; importing it again fails.
        """
        self.assertEqual(self.successResultOf(self.wallet.import_raw_key(KEY, "pw")), ADDRESS)
        self.failureResultOf(self.wallet.import_raw_key(KEY, "other"), AccountExistsError)
        self.assertEqual(len(os.listdir(self.folder)), 1)

    def test_import_invalid_keys(self) -> None:
        """
        Zero, the curve order and short keys are refused, and nothing is written.
        """
        order = bytes.fromhex("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141")
        for bad in (b"\0" * 32, order, b"\xff" * 32, KEY[:31]):
            self.failureResultOf(self.wallet.import_raw_key(bad, "pw"), InvalidPrivateKeyError)
        self.assertEqual(os.listdir(self.folder), [])

    def test_expiry(self) -> None:
        """
        An imported key stays unlocked 30 minutes on the clock, and no longer.
        """
        self.successResultOf(self.wallet.import_raw_key(KEY, "pw"))
        self.clock.advance(DEFAULT_UNLOCK_SECONDS - 1)
        self.successResultOf(self.wallet.sign_transaction(TRANSFER, ADDRESS))
        self.clock.advance(1)
        failure = self.failureResultOf(self.wallet.sign_transaction(TRANSFER, ADDRESS), AccountLockedError)
        self.assertIn("is locked", failure.getErrorMessage())
        self.assertEqual(self.clock.getDelayedCalls(), [])

    def test_lazy_expiry(self) -> None:
        """
        Even before the timer runs, a key past its deadline is not used.
        """
        self.successResultOf(self.wallet.import_raw_key(KEY, "pw"))
        self.clock.rightNow += DEFAULT_UNLOCK_SECONDS
        self.assertFalse(self.wallet.holds(ADDRESS))

    def test_unlock_lock(self) -> None:
        """
        Unlock with the right passphrase for a duration; lock drops it at once.
        """
        self.successResultOf(self.wallet.import_raw_key(KEY, "pw"))
        self.assertTrue(self.wallet.lock(ADDRESS))
        self.assertFalse(self.wallet.lock(ADDRESS))
        self.failureResultOf(self.wallet.sign_message(ADDRESS, b"x"), AccountLockedError)
        self.assertTrue(self.successResultOf(self.wallet.unlock(ADDRESS, "pw", 10)))
        self.clock.advance(9.5)
        self.successResultOf(self.wallet.sign_message(ADDRESS, b"x"))
        self.clock.advance(0.5)
        self.failureResultOf(self.wallet.sign_message(ADDRESS, b"x"), AccountLockedError)

    def test_unlock_zero_expires_at_once(self) -> None:
        """
        A duration of zero unlocks and expires at once (reference §3.6).
        """
        self.successResultOf(self.wallet.import_raw_key(KEY, "pw"))
        self.wallet.lock(ADDRESS)
        self.assertTrue(self.successResultOf(self.wallet.unlock(ADDRESS, "pw", 0)))
        self.assertFalse(self.wallet.holds(ADDRESS))

    def test_wrong_passphrase(self) -> None:
        """
        A wrong passphrase fails clearly and leaves the account as it was,
        locked or unlocked.
        """
        self.successResultOf(self.wallet.import_raw_key(KEY, "pw"))
        failure = self.failureResultOf(self.wallet.unlock(ADDRESS, "wrong", 60), WrongPassphraseError)
        self.assertNotIn("wrong", failure.getErrorMessage().replace("could not", ""))
        self.assertTrue(self.wallet.holds(ADDRESS))
        self.wallet.lock(ADDRESS)
        self.clock.advance(FIRST_FAILURE_DELAY)
        self.failureResultOf(self.wallet.unlock(ADDRESS, "", 60), WrongPassphraseError)
        self.assertFalse(self.wallet.holds(ADDRESS))

    def test_unlock_unknown(self) -> None:
        """
        An address without a keystore entry answers false.
        """
        self.assertFalse(self.successResultOf(self.wallet.unlock(b"\x01" * 20, "pw", 60)))

    def test_restart(self) -> None:
        """
        Keystore accounts survive a restart, locked; seed accounts do not.
        """
        self.successResultOf(self.wallet.import_raw_key(KEY, "pw"))
        seeded = self.successResultOf(self.wallet.new_account_with_seed("my seed"))
        self.assertEqual(seeded, private_key_to_address(keccak256(b"my seed")))
        self.assertEqual(self.wallet.addresses(), [seeded, ADDRESS])
        self.wallet.stopService()
        again = self.make_wallet()
        self.assertEqual(again.addresses(), [ADDRESS])
        self.assertFalse(again.holds(ADDRESS))
        self.assertTrue(self.successResultOf(again.unlock(ADDRESS, "pw", 60)))

    def test_order(self) -> None:
        """
        Seed accounts (cows, then new seeds) first, then the coinbase, then the keystore.
        """
        wallet = Wallet.regtest(33, self.clock, keystore=self.folder, kdf=LIGHT_SCRYPT, run_in_thread=maybeDeferred, announce=False)
        wallet.startService()
        self.addCleanup(wallet.stopService)
        self.successResultOf(wallet.import_raw_key(KEY, "pw"))
        seeded = self.successResultOf(wallet.new_account_with_seed("s"))
        addresses = wallet.addresses()
        self.assertEqual(addresses[9:], [COW9, seeded, MINER, ADDRESS])
        self.assertFalse(self.successResultOf(wallet.unlock(COW, "pw", 60)))

    def test_file_from_eth_account(self) -> None:
        """
        A keyfile that eth-account wrote, copied into the keystore, is listed and unlocks.
        """
        needs_eth_account()
        self.wallet.stopService()
        (self.folder / "from-web3").write_text(json.dumps(EthAccount.encrypt(KEY, "theirs", kdf="pbkdf2", iterations=1000)))
        wallet = self.make_wallet()
        self.assertEqual(wallet.addresses(), [ADDRESS])
        self.assertTrue(self.successResultOf(wallet.unlock(ADDRESS, "theirs", 60)))
        self.assertEqual(self.successResultOf(wallet.dump_raw_key(ADDRESS)), KEY)

    def test_file_copied_in_while_running(self) -> None:
        """
        A keyfile copied in after the start is found when unlocking names
        its address; a broken file is reported once, not at every scan.
        """
        needs_eth_account()
        (self.folder / "broken").write_text("{")
        (self.folder / "later.json").write_text(json.dumps(EthAccount.encrypt(KEY, "theirs", kdf="pbkdf2", iterations=1000)))
        events: list[dict[str, Any]] = []
        globalLogPublisher.addObserver(events.append)
        self.addCleanup(globalLogPublisher.removeObserver, events.append)
        self.assertEqual(self.wallet.addresses(), [])
        self.assertTrue(self.successResultOf(self.wallet.unlock(ADDRESS, "theirs", 60)))
        self.assertEqual(self.wallet.addresses(), [ADDRESS])
        self.assertFalse(self.successResultOf(self.wallet.unlock(b"\x01" * 20, "x", 60)))
        self.assertEqual([event.get("name") for event in events if "reason" in event], ["broken"])

    def test_bad_files_reported_and_skipped(self) -> None:
        """
        A corrupt file and one of another version are named in a warning at
        start, and the good one is still used.
        """
        self.successResultOf(self.wallet.import_raw_key(KEY, "pw"))
        self.wallet.stopService()
        (self.folder / "corrupt.json").write_text("{")
        (self.folder / "v1.json").write_text(json.dumps({"version": 1}))
        events: list[dict[str, Any]] = []
        globalLogPublisher.addObserver(events.append)
        self.addCleanup(globalLogPublisher.removeObserver, events.append)
        wallet = self.make_wallet()
        self.assertEqual(wallet.addresses(), [ADDRESS])
        skipped = {event["name"]: event["reason"] for event in events if "name" in event and "reason" in event}
        self.assertEqual(sorted(skipped), ["corrupt.json", "v1.json"])
        self.assertIn("version", skipped["v1.json"])

    def test_send_with_passphrase(self) -> None:
        """
        Signing with a passphrase works while locked and leaves it locked;
        a wrong one fails; a non-keystore sender is unknown.
        """
        self.successResultOf(self.wallet.import_raw_key(KEY, "pw"))
        self.wallet.lock(ADDRESS)
        signed = self.successResultOf(self.wallet.sign_transaction_with_passphrase(TRANSFER, ADDRESS, "pw"))
        self.assertEqual(decode_transaction(signed.encode()).sender, ADDRESS)
        self.assertFalse(self.wallet.holds(ADDRESS))
        self.failureResultOf(self.wallet.sign_transaction_with_passphrase(TRANSFER, ADDRESS, "no"), WrongPassphraseError)
        self.failureResultOf(self.wallet.sign_transaction_with_passphrase(TRANSFER, MINER, "pw"), UnknownAccountError)

    def test_dump_raw_key(self) -> None:
        """
        The key of an unlocked account; a locked one is refused.
        """
        self.successResultOf(self.wallet.import_raw_key(KEY, "pw"))
        self.assertEqual(self.successResultOf(self.wallet.dump_raw_key(ADDRESS)), KEY)
        self.wallet.lock(ADDRESS)
        self.failureResultOf(self.wallet.dump_raw_key(ADDRESS), AccountLockedError)

    def test_sign_message_recovers(self) -> None:
        """
        eth_sign's signature recovers to the account with eth-account's
        standard (EIP-191) recovery; another network name changes it.
        """
        needs_eth_account()
        self.successResultOf(self.wallet.import_raw_key(KEY, "pw"))
        signature = self.successResultOf(self.wallet.sign_message(ADDRESS, b"hello"))
        recovered = EthAccount.recover_message(encode_defunct(primitive=b"hello"), signature=signature)
        self.assertEqual(recovered.lower(), "0x" + ADDRESS.hex())
        other = self.make_wallet(network_name="Nodex")
        self.successResultOf(other.unlock(ADDRESS, "pw", 60))
        self.assertNotEqual(self.successResultOf(other.sign_message(ADDRESS, b"hello")), signature)

    def test_sign_typed_data_recovers(self) -> None:
        """
        The EIP-712 signature recovers to the account with eth-account; malformed data is refused.
        """
        needs_eth_account()
        self.successResultOf(self.wallet.import_raw_key(KEY, "pw"))
        signature = self.successResultOf(self.wallet.sign_typed_data(ADDRESS, MAIL))
        recovered = EthAccount.recover_message(encode_typed_data(full_message=MAIL), signature=signature)
        self.assertEqual(recovered.lower(), "0x" + ADDRESS.hex())
        self.failureResultOf(self.wallet.sign_typed_data(ADDRESS, {"types": {}}), TypedDataError)

    def test_unlock_refused(self) -> None:
        """
        Without permission to unlock (RPC beyond loopback), unlocking fails
        and new keys are stored locked.
        """
        wallet = self.make_wallet(allow_unlock=False)
        address = self.successResultOf(wallet.new_account("pw"))
        self.assertFalse(wallet.holds(address))
        failure = self.failureResultOf(wallet.unlock(address, "pw", 60), UnlockRefusedError)
        self.assertIn("wallet.allow_insecure_unlock", failure.getErrorMessage())
        self.successResultOf(wallet.sign_transaction_with_passphrase(TRANSFER, address, "pw"))

    def test_failed_unlocks_throttled_and_logged(self) -> None:
        """
        After a wrong passphrase, the account refuses attempts (with any
        passphrase) for a second, then two, four ... up to a minute, each
        refusal at once and saying how long; every wrong passphrase is
        logged with the account, never the passphrase.  The right one,
        after the wait, unlocks and ends the series.
        """
        self.successResultOf(self.wallet.import_raw_key(KEY, "pw"))
        self.wallet.lock(ADDRESS)
        events: list[dict[str, Any]] = []
        globalLogPublisher.addObserver(events.append)
        self.addCleanup(globalLogPublisher.removeObserver, events.append)
        delays = []
        for attempt in range(8):
            self.failureResultOf(self.wallet.unlock(ADDRESS, f"guess {attempt}", 60), WrongPassphraseError)
            refused = self.failureResultOf(self.wallet.unlock(ADDRESS, "pw", 60), UnlockThrottledError)
            delay = int(refused.getErrorMessage().rsplit("in ", 1)[1].split(" s")[0])
            self.assertEqual(
                refused.getErrorMessage(),
                f"too many wrong passphrases for account 0x{ADDRESS.hex()}: try again in {delay} s",
            )
            delays.append(delay)
            self.clock.advance(delay - 0.5)
            self.failureResultOf(self.wallet.unlock(ADDRESS, "pw", 60), UnlockThrottledError)
            self.clock.advance(0.5)
        self.assertEqual(delays, [1, 2, 4, 8, 16, 32, MAX_FAILURE_DELAY, MAX_FAILURE_DELAY])
        warnings = [event for event in events if "wrong passphrase" in event.get("log_format", "")]
        self.assertEqual([event["count"] for event in warnings], list(range(1, 9)))
        self.assertEqual(warnings[-1]["address"], "0x" + ADDRESS.hex())
        self.assertNotIn("guess", repr(warnings))
        self.assertTrue(self.successResultOf(self.wallet.unlock(ADDRESS, "pw", 60)))
        self.wallet.lock(ADDRESS)
        self.failureResultOf(self.wallet.unlock(ADDRESS, "wrong", 60), WrongPassphraseError)
        refused = self.failureResultOf(self.wallet.unlock(ADDRESS, "pw", 60), UnlockThrottledError)
        self.assertTrue(refused.getErrorMessage().endswith("try again in 1 s"))

    def test_sixteen_wrong_then_right(self) -> None:
        """
        Sixteen wrong-passphrase unlocks sent at once, then the right one
        (issue 26: every derivation was queued, the right unlock timed out
        and a core burned on for ~25 s after the answers): one derivation
        runs, the other fifteen are refused at once, and the right one is
        answered at once too (the account waits out the wrong one's second),
        then unlocks after it; nothing else runs.
        """
        started: list[Deferred[Any]] = []

        def thread(function: Any, *args: Any) -> Deferred[Any]:
            started.append(Deferred())
            started[-1].addCallback(lambda _: function(*args))
            return started[-1]

        self.successResultOf(self.wallet.import_raw_key(KEY, "pw"))
        wallet = self.make_wallet(run_in_thread=thread)
        wrong = [wallet.unlock(ADDRESS, f"guess {n}", 60) for n in range(16)]
        self.assertEqual(len(started), 1)
        for refused in wrong[1:]:
            failure = self.failureResultOf(refused, UnlockThrottledError)
            self.assertIn("is running: try again when it ends", failure.getErrorMessage())
        right = wallet.unlock(ADDRESS, "pw", 60)
        self.failureResultOf(right, UnlockThrottledError)
        started.pop(0).callback(None)
        self.failureResultOf(wrong[0], WrongPassphraseError)
        self.failureResultOf(wallet.unlock(ADDRESS, "pw", 60), UnlockThrottledError)
        self.assertEqual(started, [])
        self.clock.advance(FIRST_FAILURE_DELAY)
        right = wallet.unlock(ADDRESS, "pw", 60)
        started.pop(0).callback(None)
        self.assertTrue(self.successResultOf(right))
        self.assertEqual(started, [])

    def test_one_scan_at_a_time(self) -> None:
        """
        Unlocks of addresses the wallet does not know scan the keystore
        folder again (for files copied in), one scan at a time: those that
        come while one runs wait for it.
        """
        started: list[Deferred[Any]] = []

        def thread(function: Any, *args: Any) -> Deferred[Any]:
            started.append(Deferred())
            started[-1].addCallback(lambda _: function(*args))
            return started[-1]

        wallet = self.make_wallet(run_in_thread=thread)
        unknown = [wallet.unlock(bytes([n]) * 20, "pw", 60) for n in range(1, 11)]
        self.assertEqual(len(started), 1)
        started.pop(0).callback(None)
        self.assertEqual([self.successResultOf(result) for result in unknown], [False] * 10)
        self.assertEqual(started, [])

    def test_derivations_bounded(self) -> None:
        """
        At most the threads' number plus L{MAX_WAITING_DERIVATIONS} key
        derivations run or wait, across accounts and kinds (unlocks, new
        keys, passphrase signatures); the next is refused at once with
        L{ServerBusyError}, and accepted again once one ends.
        """
        started: list[Deferred[Any]] = []

        def thread(function: Any, *args: Any) -> Deferred[Any]:
            started.append(Deferred())
            started[-1].addCallback(lambda _: function(*args))
            return started[-1]

        wallet = self.make_wallet(run_in_thread=thread, threads=2)
        keys = [keccak256(b"key %d" % n) for n in range(5)]
        pending = [wallet.import_raw_key(key, "pw") for key in keys[:4]]
        self.assertEqual(len(started), 4)
        failure = self.failureResultOf(wallet.import_raw_key(keys[4], "pw"), ServerBusyError)
        self.assertEqual(failure.getErrorMessage(), "the node is busy: 4 key derivations run or wait; try again shortly")
        self.failureResultOf(wallet.sign_transaction_with_passphrase(TRANSFER, ADDRESS, "pw"), UnknownAccountError)
        started[0].callback(None)
        self.successResultOf(pending[0])
        later = wallet.import_raw_key(keys[4], "pw")
        self.assertEqual(len(started), 5)
        for waiting in started[1:]:
            waiting.callback(None)
        for result in [*pending[1:], later]:
            self.successResultOf(result)

    def test_no_key_export(self) -> None:
        """
        With C{allow_key_export} off (main and testnet by default),
        C{personal_dumpRawKey} gives no key, even of an unlocked account;
        with C{unlock_new_accounts} off, new and imported keys are stored locked.
        """
        wallet = self.make_wallet(allow_key_export=False, unlock_new_accounts=False)
        address = self.successResultOf(wallet.new_account("pw"))
        self.assertFalse(wallet.holds(address))
        self.assertTrue(self.successResultOf(wallet.unlock(address, "pw", 60)))
        failure = self.failureResultOf(wallet.dump_raw_key(address), KeyExportRefusedError)
        self.assertEqual(
            failure.getErrorMessage(),
            "personal_dumpRawKey is refused: this node gives out no private key (set wallet.allow_key_export to allow it)",
        )
        self.successResultOf(wallet.sign_message(address, b"still signs"))

    def test_stop_drops_keys(self) -> None:
        """
        Stopping the wallet drops every unlocked key and cancels the timers.
        """
        self.successResultOf(self.wallet.import_raw_key(KEY, "pw"))
        self.wallet.stopService()
        self.assertFalse(self.wallet.holds(ADDRESS))
        self.assertEqual(self.clock.getDelayedCalls(), [])


class WalletOffTests(SynchronousTestCase):
    """
    A wallet that is off holds nothing and opens nothing.
    """

    def test_everything_refused(self) -> None:
        """
        No accounts, no keystore folder, every signing method fails with L{LocalWalletOffError}.
        """
        folder = Path(self.mktemp()) / "keystore"
        wallet = Wallet.regtest(33, Clock(), enabled=False, keystore=folder, run_in_thread=maybeDeferred)
        wallet.startService()
        self.addCleanup(wallet.stopService)
        self.assertFalse(wallet.enabled)
        self.assertEqual(wallet.addresses(), [])
        self.assertFalse(folder.exists())
        failure = self.failureResultOf(wallet.sign_transaction(TRANSFER, COW), LocalWalletOffError)
        self.assertEqual(failure.getErrorMessage(), "Local wallet is disabled in this node")
        for deferred in (
            wallet.sign_message(COW, b"x"),
            wallet.sign_typed_data(COW, MAIL),
            wallet.sign_transaction_with_passphrase(TRANSFER, COW, "pw"),
            wallet.new_account("pw"),
            wallet.import_raw_key(KEY, "pw"),
            wallet.new_account_with_seed("s"),
            wallet.unlock(COW, "pw", 1),
            wallet.dump_raw_key(COW),
        ):
            self.failureResultOf(deferred, LocalWalletOffError)
        self.assertFalse(wallet.lock(COW))
