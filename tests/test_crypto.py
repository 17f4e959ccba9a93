"""
Tests for L{nodex.crypto}.
"""

from twisted.trial.unittest import SynchronousTestCase

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
