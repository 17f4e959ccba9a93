"""
Tests for L{nodex.rpc.wallet_methods}: the C{personal} module and the
signing methods, through the dispatcher, over a fake chain and a wallet
whose keystore is a temporary folder (light scrypt, no threads).
"""

import json
from pathlib import Path
from typing import Any

from twisted.internet.defer import maybeDeferred
from twisted.internet.task import Clock
from twisted.trial.unittest import SkipTest, SynchronousTestCase

from nodex.crypto import SECP256K1_N, keccak256, private_key_to_address
from nodex.rpc.chain_methods import ChainMethods
from nodex.rpc.decoders import DecodeError
from nodex.rpc.dispatch import Dispatcher
from nodex.rpc.registry import MODULES, MethodRegistry, ModuleSettings
from nodex.rpc.transaction_methods import TransactionMethods
from nodex.rpc.wallet_methods import PersonalMethods, SigningMethods, typed_data, unlock_duration
from nodex.services.accounts import Wallet
from nodex.structures.transactions import decode_transaction
from nodex.wallet.keyfile import LIGHT_SCRYPT
from tests.rpc.test_chain_methods import FakeMiner, RPCFixture, hexed
from tests.services.test_pool import KEYS, RECIPIENT
from tests.wallet.test_typed_data import MAIL

try:
    from eth_account import Account as EthAccount
    from eth_account.messages import encode_defunct, encode_typed_data
except ImportError:  # pragma: no cover - the test extra is missing
    EthAccount = None

FUNDED_KEY = KEYS[0]
FUNDED = hexed(private_key_to_address(FUNDED_KEY))
NOBODY = "0x" + "01" * 20
PERSONAL = (
    "personal_newAccount",
    "personal_importRawKey",
    "personal_newAccountWithSeed",
    "personal_listAccounts",
    "personal_unlockAccount",
    "personal_lockAccount",
    "personal_dumpRawKey",
    "personal_sendTransaction",
    "personal_sign",
    "personal_ecRecover",
)


class WalletFixture(RPCFixture):
    """
    A dispatcher with the transaction, personal and signing methods over a
    keystore wallet (no development keys).
    """

    def make_wallet_node(self, enabled: bool = True, allow_unlock: bool = True) -> None:
        """
        Build C{self.clock}, C{self.wallet}, C{self.dispatcher} (and the pool of L{RPCFixture}).
        """
        self.pool = self.make_pool()
        self.miner = FakeMiner(self, True)
        self.pool.add_observer(self.miner.on_pending)
        self.clock = Clock()
        self.wallet = Wallet(
            33, self.clock, enabled=enabled, keystore=Path(self.mktemp()), kdf=LIGHT_SCRYPT,
            allow_unlock=allow_unlock, run_in_thread=maybeDeferred,
        )
        self.wallet.startService()
        self.addCleanup(self.wallet.stopService)
        registry = MethodRegistry({name: ModuleSettings(True) for name in MODULES})
        registry.add(ChainMethods(self.chain, self.pool))
        registry.add(TransactionMethods(self.chain, self.pool, self.wallet, self.miner))
        registry.add(PersonalMethods(self.wallet, self.pool, 33))
        registry.add(SigningMethods(self.wallet, self.pool, 33))
        self.dispatcher = Dispatcher(registry, Clock())

    def import_funded(self, passphrase: str = "pw") -> str:
        """
        Import the funded test key; its address.
        """
        return self.call("personal_importRawKey", FUNDED_KEY.hex(), passphrase)


class PersonalTests(WalletFixture, SynchronousTestCase):
    """
    The personal module with the wallet on.
    """

    def setUp(self) -> None:
        self.make_wallet_node()

    def test_new_account_listed_unlocked(self) -> None:
        """
        personal_newAccount answers an address that both lists show and that can sign at once.
        """
        address = self.call("personal_newAccount", "a passphrase")
        self.assertEqual(len(address), 42)
        self.assertEqual(self.call("personal_listAccounts"), [address])
        self.assertEqual(self.call("eth_accounts"), [address])
        self.assertEqual(len(self.call("eth_sign", address, "0x00")), 132)

    def test_import_with_and_without_prefix(self) -> None:
        """
        The key is accepted with or without 0x; importing it twice is refused with -32000.
        """
        self.assertEqual(self.import_funded(), FUNDED)
        self.assertEqual(
            self.error("personal_importRawKey", "0x" + FUNDED_KEY.hex(), "pw"),
            (-32000, f"account {FUNDED} already exists in the keystore"),
        )

    def test_import_bad_keys(self) -> None:
        """
        Bad hex, short keys, zero and keys at or above the curve order are -32602, and the message never shows the key.
        """
        bad = {
            "zz" * 32: "private key must be hex",
            "ab" * 31: "has 62 hex digits, want 64",
            "00" * 32: "[1, n-1]",
            SECP256K1_N.to_bytes(32, "big").hex(): "[1, n-1]",
            "ff" * 32: "[1, n-1]",
        }
        for key, expected in bad.items():
            code, message = self.error("personal_importRawKey", key, "pw")
            self.assertEqual(code, -32602, key)
            self.assertIn(expected, message)
            self.assertNotIn(key, message)
        self.assertEqual(self.error("personal_importRawKey", 5, "pw")[0], -32602)
        self.assertEqual(self.error("personal_importRawKey", FUNDED_KEY.hex())[0], -32602)

    def test_empty_passphrase_refused_for_new_keys(self) -> None:
        """
        A new keyfile needs a passphrase; non-strings are refused too.
        """
        self.assertEqual(self.error("personal_newAccount", ""), (-32602, "invalid argument 0: passphrase must not be empty"))
        self.assertEqual(self.error("personal_importRawKey", FUNDED_KEY.hex(), "")[0], -32602)
        self.assertEqual(self.error("personal_newAccount", 42)[0], -32602)
        self.assertEqual(self.error("personal_newAccount")[0], -32602)

    def test_unlock_lock_and_durations(self) -> None:
        """
        Unlock for a hex duration in milliseconds; lock; null and "" mean 30 minutes.
        """
        address = self.import_funded()
        self.assertIs(self.call("personal_lockAccount", address), True)
        self.assertIs(self.call("personal_lockAccount", address), False)
        self.assertEqual(self.error("eth_sign", address, "0x00")[0], -32602)
        self.assertIs(self.call("personal_unlockAccount", address, "pw", "0x2710"), True)
        self.clock.advance(9.999)
        self.call("eth_sign", address, "0x00")
        self.clock.advance(0.001)
        code, message = self.error("eth_sign", address, "0x00")
        self.assertEqual((code, message), (-32602, f"account {address} is locked: unlock it with personal_unlockAccount"))
        for duration in (None, ""):
            self.assertIs(self.call("personal_unlockAccount", address, "pw", duration), True)
            self.clock.advance(1799)
            self.call("eth_sign", address, "0x00")
            self.clock.advance(1)
            self.assertEqual(self.error("eth_sign", address, "0x00")[0], -32602)
        self.assertIs(self.call("personal_unlockAccount", address, "pw"), True)

    def test_unlock_errors(self) -> None:
        """
        A wrong passphrase is -32000 and unlocks nothing; an unknown address is false;
        a number as duration, bad hex and a bad address are -32602.
        """
        address = self.import_funded()
        self.call("personal_lockAccount", address)
        self.assertEqual(
            self.error("personal_unlockAccount", address, "wrong", "0x10"),
            (-32000, "could not decrypt key with given password"),
        )
        self.assertEqual(self.error("eth_sign", address, "0x00")[0], -32602)
        self.assertIs(self.call("personal_unlockAccount", NOBODY, "pw", "0x10"), False)
        self.assertEqual(
            self.error("personal_unlockAccount", address, "pw", 300),
            (-32602, 'invalid argument 2: "300": param should be a hex value string'),
        )
        self.assertEqual(self.error("personal_unlockAccount", address, "pw", "0xzz")[0], -32602)
        self.assertEqual(self.error("personal_unlockAccount", "0x1234", "pw", "0x10")[0], -32602)
        self.assertEqual(self.error("personal_unlockAccount", address, None, "0x10")[0], -32602)

    def test_new_account_with_seed(self) -> None:
        """
        The address of Keccak-256(seed), listed first, unlocked, not written to the keystore.
        """
        self.import_funded()
        address = self.call("personal_newAccountWithSeed", "my seed")
        self.assertEqual(address, hexed(private_key_to_address(keccak256(b"my seed"))))
        self.assertEqual(self.call("eth_accounts"), [address, FUNDED])
        self.assertEqual(self.call("personal_dumpRawKey", address), hexed(keccak256(b"my seed")))
        self.assertEqual(self.error("personal_newAccountWithSeed", None)[0], -32602)
        self.assertEqual(self.error("personal_newAccountWithSeed", ["x"])[0], -32602)

    def test_dump_raw_key(self) -> None:
        """
        The key of an unlocked account; locked or unknown accounts are -32602.
        """
        address = self.import_funded()
        self.assertEqual(self.call("personal_dumpRawKey", address), hexed(FUNDED_KEY))
        self.call("personal_lockAccount", address)
        self.assertEqual(self.error("personal_dumpRawKey", address)[0], -32602)
        self.assertEqual(self.error("personal_dumpRawKey", NOBODY)[0], -32602)

    def test_personal_send_transaction(self) -> None:
        """
        A passphrase per call sends from a locked account and leaves it locked;
        a wrong passphrase sends nothing; a sender without keyfile is -32602.
        """
        address = self.import_funded()
        self.call("personal_lockAccount", address)
        request = {"from": address, "to": hexed(RECIPIENT), "value": "0x1"}
        tx_hash = self.call("personal_sendTransaction", request, "pw")
        self.assertEqual(self.call("eth_getTransactionByHash", tx_hash)["from"], address)
        self.assertEqual(self.error("eth_sign", address, "0x00")[0], -32602)
        self.assertEqual(
            self.error("personal_sendTransaction", request, "wrong"), (-32000, "could not decrypt key with given password")
        )
        self.assertEqual(len(self.miner.mined), 1)
        self.assertEqual(self.error("personal_sendTransaction", {"from": NOBODY}, "pw")[0], -32602)
        self.assertEqual(self.error("personal_sendTransaction", {"to": NOBODY}, "pw")[0], -32602)

    def test_send_transaction_with_unlocked_account(self) -> None:
        """
        eth_sendTransaction signs with any unlocked keystore account, and refuses it once locked.
        """
        address = self.import_funded()
        tx_hash = self.call("eth_sendTransaction", {"from": address, "to": hexed(RECIPIENT), "value": "0x1"})
        self.assertEqual(self.call("eth_getTransactionByHash", tx_hash)["from"], address)
        self.call("personal_lockAccount", address)
        code, message = self.error("eth_sendTransaction", {"from": address, "to": hexed(RECIPIENT)})
        self.assertEqual(code, -32602)
        self.assertIn("is locked", message)

    def test_sign_transaction(self) -> None:
        """
        eth_signTransaction answers {raw, tx} without sending; raw decodes to a
        transaction of the account, for this chain.
        """
        address = self.import_funded()
        result = self.call("eth_signTransaction", {"from": address, "to": hexed(RECIPIENT), "value": "0x5", "gas": "0x5208"})
        self.assertEqual(sorted(result), ["raw", "tx"])
        signed = decode_transaction(bytes.fromhex(result["raw"][2:]))
        self.assertEqual((hexed(signed.sender), signed.chain_id, signed.value, signed.gas), (address, 33, 5, 21000))
        self.assertEqual(result["tx"]["hash"], hexed(signed.hash))
        self.assertNotIn("blockHash", result["tx"])
        self.assertEqual(len(self.miner.mined), 0)
        self.assertEqual(self.error("eth_signTransaction", {"from": NOBODY})[0], -32602)

    def test_eth_sign_errors(self) -> None:
        """
        Unknown account, bad address, bad data are -32602.
        """
        self.assertEqual(self.error("eth_sign", NOBODY, "0x00"), (-32602, f"Could not find account for address: {NOBODY}"))
        self.assertEqual(self.error("eth_sign", "0x12", "0x00")[0], -32602)
        self.assertEqual(self.error("eth_sign", NOBODY, "0xz")[0], -32602)
        self.assertEqual(self.error("eth_sign", NOBODY)[0], -32602)

    def test_signatures_recover(self) -> None:
        """
        eth_sign and eth_signTypedData_v4 (object or JSON string) recover with eth-account.
        """
        if EthAccount is None:
            raise SkipTest("eth-account (the test extra) is not installed")
        address = self.import_funded()
        signature = self.call("eth_sign", address, "0x68656c6c6f")
        recovered = EthAccount.recover_message(encode_defunct(primitive=b"hello"), signature=signature)
        self.assertEqual(recovered.lower(), address)
        for form in (MAIL, json.dumps(MAIL)):
            signature = self.call("eth_signTypedData_v4", address, form)
            recovered = EthAccount.recover_message(encode_typed_data(full_message=MAIL), signature=signature)
            self.assertEqual(recovered.lower(), address)

    def test_personal_sign(self) -> None:
        """
        personal_sign is eth_sign with the parameters the other way round,
        by the unlocked key or by the passphrase's; personal_ecRecover
        gives the signer back.
        """
        address = self.import_funded("pw")
        message = "0x68656c6c6f"
        signature = self.call("personal_sign", message, address)
        self.assertEqual(signature, self.call("eth_sign", address, message))
        self.assertEqual(self.call("personal_ecRecover", message, signature), address)
        if EthAccount is not None:
            recovered = EthAccount.recover_message(encode_defunct(primitive=b"hello"), signature=signature)
            self.assertEqual(recovered.lower(), address)
        self.assertTrue(self.call("personal_lockAccount", address))
        self.assertEqual(self.error("personal_sign", message, address)[0], -32602)
        self.assertEqual(self.call("personal_sign", message, address, "pw"), signature)
        self.assertNotEqual(self.error("personal_sign", message, address, "wrong")[1], "")
        self.assertIn("no keystore entry", self.error("personal_sign", message, NOBODY, "pw")[1])
        other = self.call("personal_ecRecover", "0x00", signature)
        self.assertNotEqual(other, address)

    def test_personal_ec_recover_errors(self) -> None:
        """
        A signature of other than 65 bytes, or with a v other than 27 or 28
        (or 0 or 1), is -32602.
        """
        code, message = self.error("personal_ecRecover", "0x00", "0x" + "11" * 64)
        self.assertEqual(code, -32602)
        self.assertIn("signature", message)
        code, message = self.error("personal_ecRecover", "0x00", "0x" + "11" * 64 + "1e")
        self.assertEqual(code, -32602)
        self.assertIn("recovery id", message)
        self.assertEqual(self.error("personal_ecRecover", "0x00")[0], -32602)

    def test_typed_data_errors(self) -> None:
        """
        Malformed typed data is -32602 with the reason.
        """
        address = self.import_funded()
        code, message = self.error("eth_signTypedData_v4", address, {**MAIL, "primaryType": "Nobody"})
        self.assertEqual((code, message), (-32602, "primaryType must name one of types"))
        self.assertEqual(self.error("eth_signTypedData_v4", address, "{not json")[0], -32602)
        self.assertEqual(self.error("eth_signTypedData_v4", address, 5)[0], -32602)

    def test_rpc_modules_lists_personal(self) -> None:
        """
        Every personal method is registered.
        """
        for name in PERSONAL:
            self.dispatcher._registry.lookup(name)  # type: ignore[attr-defined]


class UnlockRefusedTests(WalletFixture, SynchronousTestCase):
    """
    An RPC server beyond loopback without C{wallet.allow_insecure_unlock}.
    """

    def test_refused(self) -> None:
        """
        personal_unlockAccount answers -32000 naming the key to set; new keys stay locked.
        """
        self.make_wallet_node(allow_unlock=False)
        address = self.import_funded()
        self.assertEqual(self.error("eth_sign", address, "0x00")[0], -32602)
        code, message = self.error("personal_unlockAccount", address, "pw", "0x10")
        self.assertEqual(code, -32000)
        self.assertIn("wallet.allow_insecure_unlock", message)


class WalletOffTests(WalletFixture, SynchronousTestCase):
    """
    Every wallet method with the wallet off (reference §6).
    """

    def setUp(self) -> None:
        self.make_wallet_node(enabled=False)

    def test_personal_answers_32604(self) -> None:
        """
        Every personal method answers -32604 once its parameters decode.
        """
        calls: dict[str, list[Any]] = {
            "personal_newAccount": ["pw"],
            "personal_importRawKey": [FUNDED_KEY.hex(), "pw"],
            "personal_newAccountWithSeed": ["seed"],
            "personal_listAccounts": [],
            "personal_unlockAccount": [FUNDED, "pw", "0x10"],
            "personal_lockAccount": [FUNDED],
            "personal_dumpRawKey": [FUNDED],
            "personal_sendTransaction": [{"from": FUNDED}, "pw"],
            "personal_sign": ["0x00", FUNDED],
            "personal_ecRecover": ["0x00", "0x" + "11" * 65],
        }
        self.assertEqual(sorted(calls), sorted(PERSONAL))
        for name, params in calls.items():
            self.assertEqual(self.error(name, *params), (-32604, "The local wallet feature is disabled"), name)
        self.assertEqual(self.error("personal_newAccount")[0], -32602)

    def test_eth_methods(self) -> None:
        """
        eth_accounts is empty; eth_sign, eth_signTypedData_v4, eth_signTransaction
        and eth_sendTransaction answer -32602 "Local wallet is disabled in this node".
        """
        self.assertEqual(self.call("eth_accounts"), [])
        expected = (-32602, "Local wallet is disabled in this node")
        self.assertEqual(self.error("eth_sign", FUNDED, "0x00"), expected)
        self.assertEqual(self.error("eth_signTypedData_v4", FUNDED, MAIL), expected)
        self.assertEqual(self.error("eth_signTransaction", {"from": FUNDED}), expected)
        self.assertEqual(self.error("eth_sendTransaction", {"from": FUNDED}), expected)


class DecoderTests(SynchronousTestCase):
    """
    The decoders of the wallet's parameters.
    """

    def test_unlock_duration(self) -> None:
        """
        Hex milliseconds; "" is 30 minutes; numbers and bad hex are refused.
        """
        self.assertEqual(unlock_duration("0x3e8"), 1000)
        self.assertEqual(unlock_duration(""), 1_800_000)
        for bad in (300, "300", "0x", True, [], "0x" + "f" * 17):
            self.assertRaises(DecodeError, unlock_duration, bad)

    def test_typed_data(self) -> None:
        """
        An object, or a string of one; anything else is refused.
        """
        self.assertEqual(typed_data(MAIL), MAIL)
        self.assertEqual(typed_data(json.dumps(MAIL)), MAIL)
        for bad in ("[]", "nope", 1, None, "x" * (2 << 20)):
            self.assertRaises(DecodeError, typed_data, bad)
