"""
Tests for L{nodex.crypto}.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex import crypto
from nodex.crypto import (
    EMPTY_KECCAK,
    SECP256K1_HALF_N,
    SignatureError,
    keccak256,
    private_key_to_address,
    recover_address,
    ripemd160,
    sha256,
    sign,
)


class HashTests(SynchronousTestCase):
    """
    Known answers for the hash functions.
    """

    def test_keccak_of_empty(self) -> None:
        """
        Keccak-256 of the empty string is the well-known empty-code hash.
        """
        self.assertEqual(keccak256(b""), EMPTY_KECCAK)

    def test_sha256_and_ripemd160(self) -> None:
        """
        SHA-256 and RIPEMD-160 give the standard digests of "abc".
        """
        self.assertEqual(
            sha256(b"abc").hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        )
        self.assertEqual(ripemd160(b"abc").hex(), "8eb208f7e05d987a9b044a8e98c6b087f15a0bfc")


class SignatureTests(SynchronousTestCase):
    """
    Signing and recovery round-trips on secp256k1.
    """

    def test_cow_address(self) -> None:
        """
        The regtest key Keccak-256("cow") controls the reference's first dev account.
        """
        self.assertEqual(
            private_key_to_address(keccak256(b"cow")).hex(),
            "cd2a3d9f938e13cd947ec05abc7fe734df8dd826",
        )

    def test_sign_then_recover(self) -> None:
        """
        A signature recovers to the signer's address and has a low s.
        """
        key = keccak256(b"cow1")
        digest = keccak256(b"message")
        y_parity, r, s = sign(digest, key)
        self.assertLessEqual(s, SECP256K1_HALF_N)
        self.assertEqual(recover_address(digest, y_parity, r, s), private_key_to_address(key))

    def test_sign_as_coincurve(self) -> None:
        """
        L{sign}, which calls libsecp256k1 through coincurve's private
        module, gives the signature coincurve's public
        C{PrivateKey.sign_recoverable} gives (RFC 6979 nonces: the same
        bytes), for many keys and digests; and L{private_key_to_address}
        the address of C{PrivateKey}'s public key.  A coincurve that moves
        or changes those functions breaks this test.
        """
        from coincurve import PrivateKey

        for index in range(32):
            key = keccak256(b"key %d" % index)
            digest = keccak256(b"digest %d" % index)
            expected = PrivateKey(key).sign_recoverable(digest, hasher=None)
            y_parity, r, s = sign(digest, key)
            self.assertEqual(r.to_bytes(32, "big") + s.to_bytes(32, "big") + bytes([y_parity]), expected)
            public_key = PrivateKey(key).public_key.format(compressed=False)[1:]
            self.assertEqual(private_key_to_address(key), keccak256(public_key)[12:])

    def test_recover_as_coincurve(self) -> None:
        """
        L{crypto.recover_public_key}, which calls libsecp256k1 through
        coincurve's private module, recovers the key coincurve's public
        C{PublicKey.from_signature_and_message} recovers, for signatures of
        both parities and for made-up ones; where coincurve finds no key
        (an r that is no point's x), it raises L{SignatureError}.  A
        coincurve that moves or changes those functions breaks this test.
        """
        from coincurve import PublicKey

        parities = set()
        refused = 0
        for index in range(64):
            digest = keccak256(b"digest %d" % index)
            if index < 32:
                y_parity, r, s = sign(digest, keccak256(b"key %d" % index))
                parities.add(y_parity)
            else:
                y_parity = index % 2
                r = int.from_bytes(keccak256(b"r %d" % index), "big") % crypto.SECP256K1_N or 1
                s = int.from_bytes(keccak256(b"s %d" % index), "big") % crypto.SECP256K1_N or 1
            signature = r.to_bytes(32, "big") + s.to_bytes(32, "big") + bytes([y_parity])
            try:
                recovered = PublicKey.from_signature_and_message(signature, digest, hasher=None)
            except Exception:
                refused += 1
                self.assertRaises(SignatureError, crypto.recover_public_key, digest, y_parity, r, s)
                continue
            expected = recovered.format(compressed=False)[1:]
            self.assertEqual(crypto.recover_public_key(digest, y_parity, r, s), expected)
        self.assertEqual(parities, {0, 1})
        self.assertGreater(refused, 0)
        self.assertRaises(SignatureError, crypto.recover_public_key, b"\x00" * 31, 0, 1, 1)

    def test_sign_refuses(self) -> None:
        """
        A key that is not a scalar in [1, n-1], or a digest that is not 32
        bytes, is refused with L{SignatureError}.
        """
        digest = keccak256(b"message")
        for key in (b"\x00" * 32, crypto.SECP256K1_N.to_bytes(32, "big"), b"\xff" * 32):
            self.assertRaises(SignatureError, sign, digest, key)
        self.assertRaises(SignatureError, sign, digest[:31], keccak256(b"cow"))
        self.assertRaises(SignatureError, sign, digest + b"\x00", keccak256(b"cow"))

    def test_bad_recovery_inputs(self) -> None:
        """
        Out-of-range r, s or recovery id raise L{SignatureError}.
        """
        digest = keccak256(b"message")
        self.assertRaises(SignatureError, recover_address, digest, 2, 1, 1)
        self.assertRaises(SignatureError, recover_address, digest, 0, 0, 1)
        self.assertRaises(SignatureError, recover_address, digest, 0, 1, 2**256)

    def test_bad_private_key(self) -> None:
        """
        A zero private key is refused.
        """
        self.assertRaises(SignatureError, private_key_to_address, b"\x00" * 32)


class KeystorePrimitiveTests(SynchronousTestCase):
    """
    The keystore's primitives: scrypt, PBKDF2, AES-128-CTR, fresh keys.
    """

    def test_scrypt_rfc7914(self) -> None:
        """
        scrypt gives RFC 7914's vector (password, NaCl, N 1024, r 8, p 16).  The
        path for parameters OpenSSL refuses (r 1 with a large N) is checked by
        the KeyStoreTests vector "test2" (tests/wallet/test_keyfile.py).
        """
        expected = "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b3731622eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640"
        self.assertEqual(crypto.scrypt(b"password", b"NaCl", 1024, 8, 16, 64).hex(), expected)
        self.assertEqual(len(crypto.scrypt(b"pw", b"salt", 1 << 16, 1, 2, 32)), 32)

    def test_scrypt_refuses(self) -> None:
        """
        Parameters out of range, or needing more than 1 GiB, are refused before any work.
        """
        for n, r, p in ((1000, 8, 1), (1, 8, 1), (1 << 20, 0, 1), (1 << 24, 8, 1)):
            self.assertRaises(ValueError, crypto.scrypt, b"pw", b"salt", n, r, p, 32)

    def test_pbkdf2(self) -> None:
        """
        PBKDF2-HMAC-SHA256 of RFC 7914 section 11's vector (passwd, salt, 1 iteration).
        """
        self.assertEqual(
            crypto.pbkdf2_hmac_sha256(b"passwd", b"salt", 1, 64).hex()[:32], "55ac046e56e3089fec1691c22544b605"
        )

    def test_aes_ctr_wraps(self) -> None:
        """
        The counter is the whole 128-bit block and wraps from all ones to zero.
        """
        key = bytes(range(16))
        wrapped = crypto.aes128_ctr(key, b"\xff" * 16, bytes(32))
        self.assertEqual(wrapped[16:], crypto.aes128_ctr(key, b"\x00" * 16, bytes(16)))
        self.assertEqual(crypto.aes128_ctr(key, b"\xff" * 16, wrapped), bytes(32))
        self.assertRaises(ValueError, crypto.aes128_ctr, key[:15], b"\x00" * 16, b"")

    def test_new_private_key(self) -> None:
        """
        Fresh keys are 32-byte scalars in [1, n-1], different each time.
        """
        keys = {crypto.new_private_key() for _ in range(8)}
        self.assertEqual(len(keys), 8)
        for key in keys:
            self.assertTrue(0 < int.from_bytes(key, "big") < crypto.SECP256K1_N)


class HKDFTests(SynchronousTestCase):
    """
    L{crypto.hkdf_sha256}: RFC 5869's HKDF with SHA-256.
    """

    def test_rfc_5869_vectors(self) -> None:
        """
        Test cases 1 and 3 of RFC 5869 (A.1, A.3), the second as two keys.
        """
        okm = crypto.hkdf_sha256(bytes([0x0B]) * 22, bytes(range(13)), bytes(range(0xF0, 0xFA)), 1, 42)
        self.assertEqual(
            okm[0].hex(), "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"
        )
        first, second = crypto.hkdf_sha256(bytes([0x0B]) * 22, b"", b"", 2, 21)
        self.assertEqual(
            (first + second).hex(),
            "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8",
        )
