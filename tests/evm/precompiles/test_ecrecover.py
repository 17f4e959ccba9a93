"""
Tests for L{nodex.evm.precompiles.ecrecover}.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.crypto import SECP256K1_N, keccak256, private_key_to_address, sign
from nodex.evm.precompiles.ecrecover import ecrecover, ecrecover_gas

# A widely published example: this digest and signature recover to the
# address 0x7156526fbd7a3c72969b54f64e42c10fbb768c8a.
KNOWN_HASH = bytes.fromhex("456e9aea5e197a1f1af7a3e85a3212fa4049a3ba34c2289b4c860fc0b0c64ef3")
KNOWN_R = 0x9242685BF161793CC25603C231BC2F568EB630EA16AA137D2664AC8038825608
KNOWN_S = 0x4F8AE3BD7535248D0BD448298CC2E2071E56992D0774DC340C368AE950852ADA
KNOWN_ADDRESS = bytes.fromhex("7156526fbd7a3c72969b54f64e42c10fbb768c8a")


def encode(message_hash: bytes, v: int, r: int, s: int) -> bytes:
    """
    The 128-byte input C{hash || v || r || s}.
    """
    return message_hash + v.to_bytes(32, "big") + r.to_bytes(32, "big") + s.to_bytes(32, "big")


class ECRecoverTests(SynchronousTestCase):
    """
    Tests for the ECRECOVER precompile (0x01).
    """

    def test_known_vector(self) -> None:
        """
        The published example recovers its address, left-padded to 32 bytes.
        """
        output = ecrecover(encode(KNOWN_HASH, 28, KNOWN_R, KNOWN_S))
        self.assertEqual(output, bytes(12) + KNOWN_ADDRESS)

    def test_own_signature(self) -> None:
        """
        A signature made with a known key recovers that key's address, for
        both recovery ids.
        """
        for text in (b"cow", b"cow1", b"cow2", b"cow3"):
            key = keccak256(text)
            digest = keccak256(b"message " + text)
            y_parity, r, s = sign(digest, key)
            output = ecrecover(encode(digest, 27 + y_parity, r, s))
            self.assertEqual(output, bytes(12) + private_key_to_address(key))

    def test_wrong_v_recovers_other(self) -> None:
        """
        The other recovery id gives a different address (or none), never the
        signer's.
        """
        output = ecrecover(encode(KNOWN_HASH, 27, KNOWN_R, KNOWN_S))
        self.assertNotEqual(output, bytes(12) + KNOWN_ADDRESS)

    def test_v_out_of_range(self) -> None:
        """
        v other than exactly 27 or 28 gives empty output, including 0, 1 and
        27 with a high bit set in its 32-byte word.
        """
        for v in (0, 1, 26, 29, 27 + 2**255, 28 + 2**8):
            self.assertEqual(ecrecover(encode(KNOWN_HASH, v, KNOWN_R, KNOWN_S)), b"", v)

    def test_r_s_out_of_range(self) -> None:
        """
        r or s equal to zero or at least the curve order gives empty output.
        """
        for r, s in ((0, KNOWN_S), (KNOWN_R, 0), (SECP256K1_N, KNOWN_S), (KNOWN_R, SECP256K1_N)):
            self.assertEqual(ecrecover(encode(KNOWN_HASH, 28, r, s)), b"")

    def test_high_s_accepted(self) -> None:
        """
        Unlike transaction signatures, the precompile accepts s in the upper
        half of the order (the flipped signature recovers the same address).
        """
        output = ecrecover(encode(KNOWN_HASH, 27, KNOWN_R, SECP256K1_N - KNOWN_S))
        self.assertEqual(output, bytes(12) + KNOWN_ADDRESS)

    def test_unrecoverable(self) -> None:
        """
        An r that is not the x coordinate of any curve point gives empty output.
        """
        # x = 5 has no point on secp256k1 (5^3 + 7 = 132 is not a square mod p).
        self.assertEqual(ecrecover(encode(KNOWN_HASH, 27, 5, KNOWN_S)), b"")

    def test_short_input(self) -> None:
        """
        Short input is zero-filled, so a missing v reads as 0: empty output.
        """
        self.assertEqual(ecrecover(KNOWN_HASH), b"")
        self.assertEqual(ecrecover(b""), b"")

    def test_long_input(self) -> None:
        """
        Bytes after the first 128 are ignored.
        """
        data = encode(KNOWN_HASH, 28, KNOWN_R, KNOWN_S) + b"\xff" * 40
        self.assertEqual(ecrecover(data), bytes(12) + KNOWN_ADDRESS)

    def test_gas(self) -> None:
        """
        The price is 3000 whatever the input.
        """
        self.assertEqual(ecrecover_gas(b""), 3000)
        self.assertEqual(ecrecover_gas(bytes(1000)), 3000)
