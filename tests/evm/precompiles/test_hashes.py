"""
Tests for L{nodex.evm.precompiles.hashes}.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.evm.precompiles.hashes import (
    identity,
    identity_gas,
    ripemd160,
    ripemd160_gas,
    sha256,
    sha256_gas,
)


class SHA256Tests(SynchronousTestCase):
    """
    Tests for the SHA-256 precompile (0x02).
    """

    def test_empty(self) -> None:
        """
        The digest of empty input is SHA-256's well-known empty digest.
        """
        self.assertEqual(
            sha256(b"").hex(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        )

    def test_abc(self) -> None:
        """
        The digest of C{abc} matches FIPS 180-2's first example.
        """
        self.assertEqual(
            sha256(b"abc").hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        )

    def test_gas(self) -> None:
        """
        The price is 60 plus 12 per started 32-byte word.
        """
        self.assertEqual([sha256_gas(bytes(n)) for n in (0, 1, 32, 33)], [60, 72, 72, 84])


class RIPEMD160Tests(SynchronousTestCase):
    """
    Tests for the RIPEMD-160 precompile (0x03).
    """

    def test_empty_left_padded(self) -> None:
        """
        The 20-byte digest of empty input is returned left-padded to 32 bytes.
        """
        self.assertEqual(
            ripemd160(b"").hex(),
            "000000000000000000000000" "9c1185a5c5e9fc54612808977ee8f548b2258d31",
        )

    def test_abc(self) -> None:
        """
        The digest of C{abc} matches the RIPEMD-160 authors' example.
        """
        self.assertEqual(ripemd160(b"abc")[12:].hex(), "8eb208f7e05d987a9b044a8e98c6b087f15a0bfc")

    def test_gas(self) -> None:
        """
        The price is 600 plus 120 per started 32-byte word.
        """
        self.assertEqual([ripemd160_gas(bytes(n)) for n in (0, 1, 32, 65)], [600, 720, 720, 960])


class IdentityTests(SynchronousTestCase):
    """
    Tests for the identity precompile (0x04).
    """

    def test_copies(self) -> None:
        """
        The output is the input.
        """
        self.assertEqual(identity(b"\x00\x01nodex"), b"\x00\x01nodex")

    def test_returns_bytes(self) -> None:
        """
        A mutable input is returned as an independent immutable copy.
        """
        data = bytearray(b"abc")
        output = identity(data)  # type: ignore[arg-type]
        data[0] = 0
        self.assertEqual(output, b"abc")
        self.assertIsInstance(output, bytes)

    def test_gas(self) -> None:
        """
        The price is 15 plus 3 per started 32-byte word.
        """
        self.assertEqual([identity_gas(bytes(n)) for n in (0, 1, 32, 33, 64)], [15, 18, 18, 21, 21])
