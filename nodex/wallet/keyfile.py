"""
The Web3 Secret Storage keyfile, version 3: the JSON format in which geth,
ethers, web3.py and eth-account store a private key under a passphrase.

A key derivation function (scrypt, or PBKDF2 with HMAC-SHA-256) turns the
UTF-8 passphrase into 32 bytes; the first 16 are the AES-128-CTR key that
encrypts the private key, and Keccak-256 of the last 16 followed by the
ciphertext is the MAC that tells a wrong passphrase from a right one.

Pure functions over plain values: the derivation is slow on purpose (about
a second with the standard scrypt parameters), so callers run them off the
reactor thread.
"""

import hmac
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from nodex.crypto import (
    SECP256K1_N,
    aes128_ctr,
    keccak256,
    pbkdf2_hmac_sha256,
    private_key_to_address,
    random_bytes,
    scrypt,
)
from nodex.primitives import Address
from nodex.wallet.errors import InvalidPrivateKeyError, KeyfileError, UnsupportedKeyfileError, WrongPassphraseError

VERSION = 3
"""The one keyfile version this module reads and writes."""

CIPHER = "aes-128-ctr"
"""The one cipher of version 3 files."""


@dataclass(frozen=True)
class ScryptParams:
    """
    The cost parameters of scrypt for new keyfiles.
    """

    n: int
    r: int
    p: int
    dklen: int = 32


STANDARD_SCRYPT = ScryptParams(n=1 << 18, r=8, p=1)
"""The default, geth's standard parameters: 256 MiB and about a second a derivation."""

LIGHT_SCRYPT = ScryptParams(n=1 << 12, r=6, p=1)
"""geth's light parameters (C{--lightkdf}): 3 MiB, a few milliseconds; for development chains and tests."""


@dataclass(frozen=True)
class Keyfile:
    """
    A parsed, checked version 3 keyfile.

    @ivar address: the address the file says it holds (L{None} when it
        names none, as some tools' files do).
    @ivar kdf: C{"scrypt"} or C{"pbkdf2"}.
    @ivar kdf_params: the derivation's parameters: C{n}, C{r}, C{p} or
        C{c}; C{dklen}; C{salt} as bytes.
    @ivar iv: the 16-byte initial counter block.
    @ivar ciphertext: the encrypted 32-byte key.
    @ivar mac: Keccak-256 of the derived key's second half and the ciphertext.
    @ivar key_id: the file's UUID.
    """

    address: Address | None
    kdf: str
    kdf_params: Mapping[str, Any]
    iv: bytes
    ciphertext: bytes
    mac: bytes
    key_id: str

    def __repr__(self) -> str:
        named = "unknown" if self.address is None else "0x" + self.address.hex()
        return f"<Keyfile of {named}, {self.kdf}>"

    def to_json(self) -> dict[str, Any]:
        """
        The file's JSON object, members as geth writes them.
        """
        params = {key: (value.hex() if isinstance(value, bytes) else value) for key, value in self.kdf_params.items()}
        obj: dict[str, Any] = {}
        if self.address is not None:
            obj["address"] = self.address.hex()
        obj["crypto"] = {
            "cipher": CIPHER,
            "ciphertext": self.ciphertext.hex(),
            "cipherparams": {"iv": self.iv.hex()},
            "kdf": self.kdf,
            "kdfparams": params,
            "mac": self.mac.hex(),
        }
        obj["id"] = self.key_id
        obj["version"] = VERSION
        return obj

    def dumps(self) -> bytes:
        """
        The file's bytes: compact JSON, UTF-8.
        """
        return json.dumps(self.to_json(), separators=(",", ":")).encode("utf-8")


def check_private_key(key: bytes) -> None:
    """
    Check that C{key} is a usable secp256k1 private key.

    @raise InvalidPrivateKeyError: it is not 32 bytes, or not in [1, n-1].
    """
    if len(key) != 32:
        raise InvalidPrivateKeyError(f"private key must be 32 bytes, got {len(key)}")
    if not 0 < int.from_bytes(key, "big") < SECP256K1_N:
        raise InvalidPrivateKeyError("private key must be in [1, n-1] of the secp256k1 curve order")


def _hex_member(container: Mapping[str, Any], name: str, size: int | None = None) -> bytes:
    """
    A member holding hex digits (with or without C{0x}), as bytes.

    @raise KeyfileError: missing, not hex, or not C{size} bytes long.
    """
    value = container.get(name)
    if not isinstance(value, str):
        raise KeyfileError(f'member "{name}" is missing or not a string')
    digits = value[2:] if value[:2] in ("0x", "0X") else value
    try:
        decoded = bytes.fromhex(digits)
    except ValueError:
        raise KeyfileError(f'member "{name}" is not hex') from None
    if size is not None and len(decoded) != size:
        raise KeyfileError(f'member "{name}" must be {size} bytes, got {len(decoded)}')
    return decoded


def _int_member(container: Mapping[str, Any], name: str, low: int, high: int) -> int:
    """
    An integer member within [low, high].

    @raise KeyfileError: missing, not an integer, or out of range.
    """
    value = container.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise KeyfileError(f'member "{name}" must be an integer in [{low}, {high}]')
    return value


def _table(container: Mapping[str, Any], *names: str) -> Mapping[str, Any]:
    """
    The first of C{names} that is a JSON object in C{container}.

    @raise KeyfileError: none is.
    """
    for name in names:
        value = container.get(name)
        if isinstance(value, dict):
            return value
    raise KeyfileError(f'member "{names[0]}" is missing or not an object')


def _kdf_params(kdf: Any, params: Mapping[str, Any]) -> dict[str, Any]:
    """
    The checked parameters of a key derivation function.

    @raise UnsupportedKeyfileError: an unknown function or PRF.
    @raise KeyfileError: parameters out of range.
    """
    salt = _hex_member(params, "salt")
    dklen = _int_member(params, "dklen", 32, 1024)
    if kdf == "scrypt":
        n = _int_member(params, "n", 2, 1 << 30)
        if n & (n - 1):
            raise KeyfileError('member "n" must be a power of two')
        r = _int_member(params, "r", 1, 1 << 16)
        p = _int_member(params, "p", 1, 1 << 16)
        return {"dklen": dklen, "n": n, "p": p, "r": r, "salt": salt}
    if kdf == "pbkdf2":
        if params.get("prf") != "hmac-sha256":
            raise UnsupportedKeyfileError(f"unsupported pbkdf2 prf {str(params.get('prf'))[:40]!r}")
        c = _int_member(params, "c", 1, 1 << 31)
        return {"c": c, "dklen": dklen, "prf": "hmac-sha256", "salt": salt}
    raise UnsupportedKeyfileError(f"unsupported key derivation function {str(kdf)[:40]!r}")


def parse_keyfile(obj: Any) -> Keyfile:
    """
    Check a decoded keyfile JSON value and return its contents.

    Accepts what geth accepts: C{crypto} or C{Crypto}, hex with or without
    C{0x}, a missing C{address}.

    @raise UnsupportedKeyfileError: another version, cipher, KDF or PRF.
    @raise KeyfileError: anything else wrong with it.
    """
    if not isinstance(obj, dict):
        raise KeyfileError("not a JSON object")
    version = obj.get("version")
    if version != VERSION or isinstance(version, bool):
        raise UnsupportedKeyfileError(f"unsupported keyfile version {str(version)[:20]}, want {VERSION}")
    crypto = _table(obj, "crypto", "Crypto")
    if crypto.get("cipher") != CIPHER:
        raise UnsupportedKeyfileError(f"unsupported cipher {str(crypto.get('cipher'))[:40]!r}, want {CIPHER}")
    kdf = crypto.get("kdf")
    params = _kdf_params(kdf, _table(crypto, "kdfparams"))
    address = None
    if obj.get("address") is not None:
        address = Address(_hex_member(obj, "address", 20))
    key_id = obj.get("id", "")
    if not isinstance(key_id, str):
        raise KeyfileError('member "id" is not a string')
    return Keyfile(
        address=address,
        kdf=str(kdf),
        kdf_params=params,
        iv=_hex_member(_table(crypto, "cipherparams"), "iv", 16),
        ciphertext=_hex_member(crypto, "ciphertext", 32),
        mac=_hex_member(crypto, "mac", 32),
        key_id=key_id,
    )


def loads_keyfile(text: bytes | str) -> Keyfile:
    """
    Parse the bytes of a keyfile.

    @raise KeyfileError: not JSON (or not UTF-8), or as L{parse_keyfile}.
    """
    try:
        obj = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise KeyfileError(f"not JSON: {exc}") from None
    return parse_keyfile(obj)


def derive_key(kdf: str, params: Mapping[str, Any], passphrase: str) -> bytes:
    """
    Run the keyfile's key derivation function over the UTF-8 passphrase.

    @raise KeyfileError: parameters the primitives refuse (too much memory).
    """
    secret = passphrase.encode("utf-8")
    try:
        if kdf == "scrypt":
            return scrypt(secret, params["salt"], params["n"], params["r"], params["p"], params["dklen"])
        return pbkdf2_hmac_sha256(secret, params["salt"], params["c"], params["dklen"])
    except ValueError as exc:
        raise KeyfileError(str(exc)) from None


def _mac(derived: bytes, ciphertext: bytes) -> bytes:
    """
    The keyfile MAC: Keccak-256 of the derived key's bytes 16-31 and the ciphertext.
    """
    return keccak256(derived[16:32] + ciphertext)


def decrypt_keyfile(keyfile: Keyfile, passphrase: str) -> bytes:
    """
    Open a keyfile with a passphrase.

    @return: the 32-byte private key.
    @raise WrongPassphraseError: the MAC does not match.
    @raise KeyfileError: the decrypted key is invalid, or not the key of the
        file's address.
    """
    derived = derive_key(keyfile.kdf, keyfile.kdf_params, passphrase)
    if not hmac.compare_digest(_mac(derived, keyfile.ciphertext), keyfile.mac):
        raise WrongPassphraseError()
    key = aes128_ctr(derived[:16], keyfile.iv, keyfile.ciphertext)
    try:
        check_private_key(key)
    except InvalidPrivateKeyError as exc:
        raise KeyfileError(f"the decrypted key is unusable: {exc}") from None
    if keyfile.address is not None and private_key_to_address(key) != keyfile.address:
        raise KeyfileError("the decrypted key does not belong to the file's address")
    return key


def encrypt_key(
    private_key: bytes,
    passphrase: str,
    params: ScryptParams = STANDARD_SCRYPT,
    salt: bytes | None = None,
    iv: bytes | None = None,
    key_id: str | None = None,
) -> Keyfile:
    """
    Encrypt a private key under a passphrase with scrypt.

    @param salt: 32 bytes; random when not given.
    @param iv: 16 bytes; random when not given.
    @param key_id: the file's UUID; random (version 4) when not given.
    @raise InvalidPrivateKeyError: the key is not a usable secp256k1 key.
    """
    check_private_key(private_key)
    kdf_params: dict[str, Any] = {
        "dklen": params.dklen,
        "n": params.n,
        "p": params.p,
        "r": params.r,
        "salt": random_bytes(32) if salt is None else salt,
    }
    derived = derive_key("scrypt", kdf_params, passphrase)
    iv = random_bytes(16) if iv is None else iv
    ciphertext = aes128_ctr(derived[:16], iv, private_key)
    return Keyfile(
        address=private_key_to_address(private_key),
        kdf="scrypt",
        kdf_params=kdf_params,
        iv=iv,
        ciphertext=ciphertext,
        mac=_mac(derived, ciphertext),
        key_id=str(uuid.uuid4()) if key_id is None else key_id,
    )


def keyfile_name(address: bytes, when: datetime) -> str:
    """
    geth's file name for a new keyfile: C{UTC--<ISO 8601 time>--<address>},
    which sorts by creation time.

    @param when: the creation time (converted to UTC).
    """
    utc = when.astimezone(timezone.utc)
    return f"UTC--{utc.strftime('%Y-%m-%dT%H-%M-%S')}.{utc.microsecond:06d}000Z--{bytes(address).hex()}"


__all__ = [
    "CIPHER",
    "LIGHT_SCRYPT",
    "STANDARD_SCRYPT",
    "VERSION",
    "Keyfile",
    "ScryptParams",
    "check_private_key",
    "decrypt_keyfile",
    "derive_key",
    "encrypt_key",
    "keyfile_name",
    "loads_keyfile",
    "parse_keyfile",
]
