"""
Tests for L{nodex.wallet.keyfile}: the Web3 Secret Storage v3 format,
against the KeyStoreTests vectors of ethereum/tests and eth-account.
"""

import json
from datetime import datetime, timezone
from typing import Any

from twisted.trial.unittest import SkipTest, SynchronousTestCase

from nodex.crypto import SECP256K1_N, private_key_to_address
from nodex.wallet.errors import InvalidPrivateKeyError, KeyfileError, UnsupportedKeyfileError, WrongPassphraseError
from nodex.wallet.keyfile import (
    LIGHT_SCRYPT,
    ScryptParams,
    check_private_key,
    decrypt_keyfile,
    encrypt_key,
    keyfile_name,
    loads_keyfile,
    parse_keyfile,
)
from tests.conformance import load_fixture

try:
    from eth_account import Account as EthAccount
except ImportError:  # pragma: no cover - the test extra is missing
    EthAccount = None

KEY = bytes.fromhex("7a28b5ba57c53603b0b07b56bba752f7784bf506fa95edc395f5cf6c7514fe9d")


def vectors() -> dict[str, Any]:
    """
    The KeyStoreTests vectors, or skip when the fixtures are not beside the checkout.
    """
    return load_fixture("KeyStoreTests", "basic_tests.json")


def light_file(key: bytes = KEY, passphrase: str = "secret") -> dict[str, Any]:
    """
    A keyfile JSON object with the light scrypt parameters.
    """
    return encrypt_key(key, passphrase, LIGHT_SCRYPT).to_json()


class KeyStoreVectorTests(SynchronousTestCase):
    """
    The KeyStoreTests vectors: scrypt and pbkdf2, an iv that overflows the counter.
    """

    def test_every_vector_decrypts(self) -> None:
        """
        Every vector's file opens with its password to its private key.
        """
        for name, vector in vectors().items():
            keyfile = parse_keyfile(vector["json"])
            self.assertEqual(decrypt_keyfile(keyfile, vector["password"]).hex(), vector["priv"], name)

    def test_vector_wrong_password(self) -> None:
        """
        A vector's file refuses another password.
        """
        vector = vectors()["mycrypto"]
        self.assertRaises(WrongPassphraseError, decrypt_keyfile, parse_keyfile(vector["json"]), "wrong")


class RoundTripTests(SynchronousTestCase):
    """
    Writing and reading nodex's own files.
    """

    def test_round_trip(self) -> None:
        """
        A file written for a key opens with its passphrase, names its address
        and survives serialisation.
        """
        keyfile = encrypt_key(KEY, "pässphrase", LIGHT_SCRYPT)
        self.assertEqual(keyfile.address, private_key_to_address(KEY))
        again = loads_keyfile(keyfile.dumps())
        self.assertEqual(decrypt_keyfile(again, "pässphrase"), KEY)
        obj = json.loads(keyfile.dumps())
        self.assertEqual(obj["version"], 3)
        self.assertEqual(obj["crypto"]["kdf"], "scrypt")
        self.assertEqual(obj["crypto"]["kdfparams"]["n"], 4096)
        self.assertEqual(obj["address"], private_key_to_address(KEY).hex())

    def test_default_is_standard_scrypt(self) -> None:
        """
        Without parameters the file uses geth's standard scrypt (n = 2**18, r = 8, p = 1).
        """
        params = encrypt_key.__defaults__[0]  # type: ignore[index]
        self.assertEqual(params, ScryptParams(262144, 8, 1))

    def test_fresh_salt_and_iv(self) -> None:
        """
        Two files of the same key differ (random salt, iv and id).
        """
        first, second = light_file(), light_file()
        self.assertNotEqual(first["crypto"]["ciphertext"], second["crypto"]["ciphertext"])
        self.assertNotEqual(first["id"], second["id"])

    def test_wrong_passphrase(self) -> None:
        """
        Another passphrase fails the MAC check, and the message does not repeat it.
        """
        keyfile = parse_keyfile(light_file(passphrase="right one"))
        exc = self.assertRaises(WrongPassphraseError, decrypt_keyfile, keyfile, "wrong one")
        self.assertEqual(str(exc), "could not decrypt key with given password")

    def test_address_mismatch(self) -> None:
        """
        A file whose address is not its key's is refused after decryption.
        """
        obj = light_file()
        obj["address"] = "11" * 20
        self.assertRaises(KeyfileError, decrypt_keyfile, parse_keyfile(obj), "secret")

    def test_repr_hides_contents(self) -> None:
        """
        The repr names the address and the KDF only.
        """
        keyfile = parse_keyfile(light_file())
        self.assertEqual(repr(keyfile), f"<Keyfile of 0x{private_key_to_address(KEY).hex()}, scrypt>")

    def test_file_name(self) -> None:
        """
        geth's file name: UTC--<time with nanoseconds>--<address>.
        """
        when = datetime(2026, 11, 24, 14, 5, 6, 123456, tzinfo=timezone.utc)
        self.assertEqual(keyfile_name(b"\xab" * 20, when), "UTC--2026-11-24T14-05-06.123456000Z--" + "ab" * 20)


class InteropTests(SynchronousTestCase):
    """
    Files move both ways between nodex and eth-account (web3.py's signer).
    """

    def setUp(self) -> None:
        if EthAccount is None:
            raise SkipTest("eth-account (the test extra) is not installed")

    def test_eth_account_reads_nodex(self) -> None:
        """
        eth-account decrypts a file nodex wrote.
        """
        self.assertEqual(bytes(EthAccount.decrypt(light_file(), "secret")), KEY)

    def test_nodex_reads_eth_account(self) -> None:
        """
        nodex decrypts eth-account's scrypt and pbkdf2 files.
        """
        for kdf, extra in (("scrypt", {"iterations": 1024}), ("pbkdf2", {"iterations": 1000})):
            obj = EthAccount.encrypt(KEY, "their secret", kdf=kdf, **extra)
            self.assertEqual(decrypt_keyfile(parse_keyfile(obj), "their secret"), KEY, kdf)


class MalformedTests(SynchronousTestCase):
    """
    Files that are not usable keyfiles are refused with a reason.
    """

    def refused(self, change: Any, error: type[Exception] = KeyfileError) -> str:
        """
        Apply C{change} to a good file's object and return the refusal's message.
        """
        obj = light_file()
        change(obj)
        return str(self.assertRaises(error, parse_keyfile, obj))

    def test_not_json(self) -> None:
        """
        Bytes that are not JSON, or JSON that is not an object.
        """
        self.assertRaises(KeyfileError, loads_keyfile, b"\xff\xfe not json")
        self.assertRaises(KeyfileError, loads_keyfile, b"[1, 2]")

    def test_unknown_version(self) -> None:
        """
        Versions other than 3 (and booleans) are unsupported.
        """
        self.assertIn("version 1", self.refused(lambda obj: obj.update(version=1), UnsupportedKeyfileError))
        self.refused(lambda obj: obj.pop("version"), UnsupportedKeyfileError)

    def test_unknown_cipher_kdf_prf(self) -> None:
        """
        Another cipher, KDF or PRF is unsupported.
        """
        self.refused(lambda obj: obj["crypto"].update(cipher="aes-128-cbc"), UnsupportedKeyfileError)
        self.refused(lambda obj: obj["crypto"].update(kdf="argon2"), UnsupportedKeyfileError)
        pbkdf2 = EthAccount.encrypt(KEY, "x", kdf="pbkdf2", iterations=1) if EthAccount else None
        if pbkdf2 is not None:
            pbkdf2["crypto"]["kdfparams"]["prf"] = "hmac-sha512"
            self.assertRaises(UnsupportedKeyfileError, parse_keyfile, pbkdf2)

    def test_bad_members(self) -> None:
        """
        Missing, non-hex or wrongly sized members, a short MAC, bad parameters.
        """
        self.refused(lambda obj: obj["crypto"].pop("mac"))
        self.refused(lambda obj: obj["crypto"].update(mac="00" * 31))
        self.refused(lambda obj: obj["crypto"].update(ciphertext="zz"))
        self.refused(lambda obj: obj["crypto"]["cipherparams"].update(iv="00" * 8))
        self.refused(lambda obj: obj["crypto"]["kdfparams"].update(n=1000))
        self.refused(lambda obj: obj["crypto"]["kdfparams"].update(n="4096"))
        self.refused(lambda obj: obj["crypto"]["kdfparams"].update(dklen=16))
        self.refused(lambda obj: obj.update(address="0x1234"))
        self.refused(lambda obj: obj.update(crypto=[]))

    def test_crypto_capitalised_and_0x(self) -> None:
        """
        geth also reads C{Crypto} and hex with C{0x}; so does nodex.
        """
        obj = light_file()
        obj["Crypto"] = obj.pop("crypto")
        obj["Crypto"]["mac"] = "0x" + obj["Crypto"]["mac"]
        self.assertEqual(decrypt_keyfile(parse_keyfile(obj), "secret"), KEY)

    def test_memory_hungry_scrypt_refused(self) -> None:
        """
        scrypt parameters that would need more than 1 GiB are refused, not run.
        """
        obj = light_file()
        obj["crypto"]["kdfparams"].update(n=1 << 24, r=8)
        self.assertRaises(KeyfileError, decrypt_keyfile, parse_keyfile(obj), "secret")


class PrivateKeyTests(SynchronousTestCase):
    """
    L{check_private_key}.
    """

    def test_ranges(self) -> None:
        """
        32 bytes in [1, n-1] pass; zero, n, above n and other lengths fail.
        """
        check_private_key(KEY)
        check_private_key((SECP256K1_N - 1).to_bytes(32, "big"))
        for bad in (b"\0" * 32, SECP256K1_N.to_bytes(32, "big"), b"\xff" * 32, KEY[:31], KEY + b"\0"):
            self.assertRaises(InvalidPrivateKeyError, check_private_key, bad)
        self.assertRaises(InvalidPrivateKeyError, encrypt_key, b"\0" * 32, "x", LIGHT_SCRYPT)
