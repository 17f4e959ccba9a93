"""
Hashes and secp256k1 signatures: the one module that touches the C libraries.

Keccak-256 comes from C{sha3} (safe-pysha3), which costs well under a
microsecond a call; SHA-256 from C{hashlib}; RIPEMD-160 from pycryptodome
(OpenSSL 3 no longer ships it by default); signatures from coincurve.
The keystore's primitives are here too: scrypt and PBKDF2 from C{hashlib}
(OpenSSL, which releases the interpreter lock while it derives, so that a
derivation on a worker thread leaves the reactor thread free; pycryptodome's
scrypt for the parameters OpenSSL refuses) and AES-128 in counter mode from
pycryptodome.  The peer transport's primitives too: ECDH on secp256k1
(coincurve), HKDF-SHA256 (pycryptodome) and ChaCha20-Poly1305 (OpenSSL,
through C{cryptography}, an order of magnitude faster than pycryptodome's
on small frames).
"""

import hashlib
import secrets
from hmac import digest as _hmac_digest

from coincurve import PrivateKey, PublicKey
from coincurve._libsecp256k1 import ffi as _secp256k1_ffi
from coincurve._libsecp256k1 import lib as _secp256k1
from coincurve.context import GLOBAL_CONTEXT as _SECP256K1_CONTEXT
from coincurve.ecdsa import serialize_recoverable as _serialize_recoverable
from coincurve.flags import EC_UNCOMPRESSED as _EC_UNCOMPRESSED
from coincurve.utils import validate_secret as _validate_secret
from Crypto.Cipher import AES
from Crypto.Hash import RIPEMD160
from Crypto.Protocol.KDF import scrypt as _pycryptodome_scrypt
from cryptography.exceptions import InvalidTag as AeadTagError
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from sha3 import keccak_256 as _keccak_256

from nodex.errors import NodexError
from nodex.primitives import Address, Hash32

SECP256K1_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
SECP256K1_HALF_N = SECP256K1_N // 2

EMPTY_KECCAK = bytes.fromhex("c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470")


class SignatureError(NodexError):
    """
    A signature or key is malformed, or no public key can be recovered from it.
    """


def keccak256(data: bytes) -> Hash32:
    """
    Keccak-256 (the pre-standard SHA-3 that Ethereum uses) of C{data}.
    """
    # Hash32 is the identity at run time: not called, on the commonest call of a block (its trie nodes, its
    # transactions, the EVM's KECCAK256).
    return _keccak_256(data).digest()  # type: ignore[no-any-return]


def sha256(data: bytes) -> Hash32:
    """
    SHA-256 of C{data}.
    """
    return Hash32(hashlib.sha256(data).digest())


def double_sha256(data: bytes) -> Hash32:
    """
    SHA-256 applied twice, as Bitcoin hashes headers and transactions.
    """
    return Hash32(hashlib.sha256(hashlib.sha256(data).digest()).digest())


def ripemd160(data: bytes) -> bytes:
    """
    RIPEMD-160 of C{data} (20 bytes).
    """
    return RIPEMD160.new(data).digest()


def public_key_to_address(public_key: bytes) -> Address:
    """
    The address of a 64-byte uncompressed public key (without the 0x04 prefix).
    """
    return Address(keccak256(public_key)[12:])


def private_key_to_public_key(private_key: bytes) -> bytes:
    """
    The 64-byte uncompressed public key (no 0x04 prefix) of a 32-byte private key.

    @raise SignatureError: the key is not a valid secp256k1 scalar.
    """
    try:
        # PublicKey.from_secret: one point multiplication (a PrivateKey
        # computes two, the x-only key's as well).
        return PublicKey.from_secret(private_key).format(compressed=False)[1:]
    except (ValueError, TypeError) as exc:
        raise SignatureError(f"invalid private key: {exc}") from exc


def private_key_to_address(private_key: bytes) -> Address:
    """
    The address controlled by a 32-byte private key.
    """
    return public_key_to_address(private_key_to_public_key(private_key))


def sign(message_hash: bytes, private_key: bytes) -> tuple[int, int, int]:
    """
    Sign a 32-byte digest.

    @return: C{(y_parity, r, s)} with y_parity 0 or 1 and s in the lower half
        of the curve order (coincurve always produces low-s signatures).
    @raise SignatureError: the key is invalid.
    """
    # What coincurve's PrivateKey.sign_recoverable does, without building a
    # PrivateKey: its constructor derives the public key and the x-only
    # public key (two point multiplications, ~60 µs, more than the
    # signature itself), which signing does not use; an
    # eth_sendTransaction signs once (docs/accounts.md).  The C functions
    # come from coincurve's private module _libsecp256k1: the test
    # SignatureTests.test_sign_as_coincurve breaks if it changes.
    if len(message_hash) != 32:
        raise SignatureError(f"cannot sign: a digest has 32 bytes, not {len(message_hash)}")
    try:
        secret = _validate_secret(private_key)
    except (ValueError, TypeError) as exc:
        raise SignatureError(f"cannot sign: {exc}") from exc
    recoverable = _secp256k1_ffi.new("secp256k1_ecdsa_recoverable_signature *")
    if not _secp256k1.secp256k1_ecdsa_sign_recoverable(
        _SECP256K1_CONTEXT.ctx, recoverable, message_hash, secret, _secp256k1_ffi.NULL, _secp256k1_ffi.NULL
    ):
        raise SignatureError("cannot sign: libsecp256k1 refused the key")
    signature = _serialize_recoverable(recoverable, _SECP256K1_CONTEXT)
    r = int.from_bytes(signature[0:32], "big")
    s = int.from_bytes(signature[32:64], "big")
    return signature[64], r, s


def recover_public_key(message_hash: bytes, y_parity: int, r: int, s: int) -> bytes:
    """
    Recover the 64-byte public key that signed C{message_hash}.

    @raise SignatureError: r or s is out of range, y_parity is not 0 or 1,
        the digest is not 32 bytes, or no point can be recovered.
    """
    # What coincurve's PublicKey.from_signature_and_message and
    # format(compressed=False) do, called directly: every raw transaction's
    # sender is recovered, and the wrapper's objects, checks and cffi
    # allocations cost about a tenth of the recovery itself.  Like sign()
    # above, through coincurve's private module _libsecp256k1:
    # SignatureTests.test_recover_as_coincurve breaks if it changes.
    if y_parity not in (0, 1):
        raise SignatureError(f"invalid signature recovery id {y_parity}")
    if not (0 < r < SECP256K1_N and 0 < s < SECP256K1_N):
        raise SignatureError("invalid signature: r or s out of range")
    if len(message_hash) != 32:
        raise SignatureError(f"cannot recover the signer: a digest has 32 bytes, not {len(message_hash)}")
    context = _SECP256K1_CONTEXT.ctx
    recoverable = _secp256k1_ffi.new("secp256k1_ecdsa_recoverable_signature *")
    if not _secp256k1.secp256k1_ecdsa_recoverable_signature_parse_compact(
        context, recoverable, r.to_bytes(32, "big") + s.to_bytes(32, "big"), y_parity
    ):
        raise SignatureError("cannot recover the signer: libsecp256k1 refused the signature")
    public_key = _secp256k1_ffi.new("secp256k1_pubkey *")
    if not _secp256k1.secp256k1_ecdsa_recover(context, public_key, recoverable, message_hash):
        raise SignatureError("cannot recover the signer: no public key has this signature")
    serialized = _secp256k1_ffi.new("unsigned char[65]")
    length = _secp256k1_ffi.new("size_t *", 65)
    _secp256k1.secp256k1_ec_pubkey_serialize(context, serialized, length, public_key, _EC_UNCOMPRESSED)
    return _secp256k1_ffi.buffer(serialized)[1:]


def recover_address(message_hash: bytes, y_parity: int, r: int, s: int) -> Address:
    """
    Recover the address that signed C{message_hash}.

    @raise SignatureError: as L{recover_public_key}.
    """
    return public_key_to_address(recover_public_key(message_hash, y_parity, r, s))


SCRYPT_MAX_MEMORY = 1 << 30
"""The most memory one scrypt derivation may use (1 GiB); keyfiles that ask for more are refused."""


def scrypt(passphrase: bytes, salt: bytes, n: int, r: int, p: int, dklen: int) -> bytes:
    """
    The scrypt key derivation function (RFC 7914).

    @param n: the CPU/memory cost, a power of two above 1.
    @param r: the block size.
    @param p: the parallelisation.
    @raise ValueError: parameters out of range, or a derivation that would
        need more than L{SCRYPT_MAX_MEMORY}.
    """
    if n < 2 or n & (n - 1) or r < 1 or p < 1 or not 1 <= dklen <= 1024:
        raise ValueError("invalid scrypt parameters")
    needed = 128 * r * (n + p + 2)
    if needed > SCRYPT_MAX_MEMORY:
        raise ValueError(f"scrypt parameters need {needed} bytes of memory, more than {SCRYPT_MAX_MEMORY}")
    if 16 * r < 64 and n >= 1 << (16 * r):
        # OpenSSL refuses n >= 2**(16 r) (some keyfiles use r = 1 with a
        # large n); pycryptodome computes the same function, a little slower.
        return _pycryptodome_scrypt(passphrase, salt, dklen, N=n, r=r, p=p)
    return hashlib.scrypt(passphrase, salt=salt, n=n, r=r, p=p, dklen=dklen, maxmem=needed + (1 << 20))


def pbkdf2_hmac_sha256(passphrase: bytes, salt: bytes, iterations: int, dklen: int) -> bytes:
    """
    PBKDF2 (RFC 8018) with HMAC-SHA-256.

    @raise ValueError: parameters out of range.
    """
    if iterations < 1 or not 1 <= dklen <= 1024:
        raise ValueError("invalid pbkdf2 parameters")
    return hashlib.pbkdf2_hmac("sha256", passphrase, salt, iterations, dklen)


def aes128_ctr(key: bytes, iv: bytes, data: bytes) -> bytes:
    """
    Encrypt or decrypt C{data} with AES-128 in counter mode, the whole
    16-byte C{iv} being the initial counter block (incremented as one
    128-bit big-endian number, wrapping at 2**128).

    @raise ValueError: the key or the iv is not 16 bytes long.
    """
    if len(key) != 16 or len(iv) != 16:
        raise ValueError("AES-128-CTR needs a 16-byte key and a 16-byte iv")
    return AES.new(key, AES.MODE_CTR, nonce=b"", initial_value=iv).encrypt(data)


def ecdh(private_key: bytes, public_key: bytes) -> bytes:
    """
    SHA-256 of the compressed encoding (C{0x02 | parity(y)}, x) of the point
    C{private_key} times C{public_key} (libsecp256k1's ECDH).

    @param public_key: 64 bytes, x and y (no C{0x04} prefix).
    @raise SignatureError: C{public_key} is not a point of secp256k1.
    """
    try:
        point = PublicKey(b"\x04" + public_key)
    except ValueError as exc:
        raise SignatureError(f"not a point of secp256k1: {exc}") from None
    return PrivateKey(private_key).ecdh(point.format())


def hkdf_sha256(secret: bytes, salt: bytes, info: bytes, count: int, size: int = 32) -> list[bytes]:
    """
    C{count} keys of C{size} bytes from HKDF-SHA256 (RFC 5869) of C{secret}.
    """
    # RFC 5869 over the standard library's HMAC (C): pycryptodome's HKDF
    # builds its HMACs in Python, about 0.3 ms a call, once per side of
    # every peer connection's key exchange.
    key = _hmac_digest(salt, secret, "sha256")  # (an empty salt is HashLen zeros: HMAC pads its key)
    okm, block = b"", b""
    for index in range(1, -(-count * size // 32) + 1):
        block = _hmac_digest(key, block + info + bytes((index,)), "sha256")
        okm += block
    return [okm[position : position + size] for position in range(0, count * size, size)]


def chacha20_poly1305(key: bytes) -> ChaCha20Poly1305:
    """
    The ChaCha20-Poly1305 AEAD (RFC 8439) under a 32-byte C{key}: its
    C{encrypt(nonce, data, associated)} and C{decrypt(nonce, sealed,
    associated)}, the latter raising L{AeadTagError} on a bad tag.
    """
    return ChaCha20Poly1305(key)


def random_bytes(size: int) -> bytes:
    """
    C{size} bytes from the operating system's random source.
    """
    return secrets.token_bytes(size)


def new_private_key() -> bytes:
    """
    A fresh random secp256k1 private key (a scalar in [1, n-1]).
    """
    while True:
        key = random_bytes(32)
        if 0 < int.from_bytes(key, "big") < SECP256K1_N:
            return key


__all__ = [
    "EMPTY_KECCAK",
    "AeadTagError",
    "SCRYPT_MAX_MEMORY",
    "SECP256K1_HALF_N",
    "SECP256K1_N",
    "SignatureError",
    "aes128_ctr",
    "chacha20_poly1305",
    "double_sha256",
    "ecdh",
    "hkdf_sha256",
    "keccak256",
    "new_private_key",
    "pbkdf2_hmac_sha256",
    "private_key_to_address",
    "private_key_to_public_key",
    "public_key_to_address",
    "recover_address",
    "random_bytes",
    "recover_public_key",
    "ripemd160",
    "scrypt",
    "sha256",
    "sign",
]
