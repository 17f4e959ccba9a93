"""
Tests for L{nodex.rpc.encoders}.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.rpc import encoders
from nodex.rpc.encoders import EncodeError


class EncoderTests(SynchronousTestCase):
    """
    Tests for the result encoders.
    """

    def test_quantity_is_minimal_lowercase(self) -> None:
        """
        QUANTITY is 0x and minimal lowercase hex; zero is 0x0.
        """
        self.assertEqual(encoders.quantity(0), "0x0")
        self.assertEqual(encoders.quantity(33), "0x21")
        self.assertEqual(encoders.quantity(0xABCDEF), "0xabcdef")
        self.assertEqual(encoders.quantity(2**256 - 1), "0x" + "f" * 64)

    def test_quantity_refuses_bad_values(self) -> None:
        """
        Negative numbers, booleans and non-integers cannot be QUANTITY.
        """
        for value in (-1, True, 1.0, "1"):
            self.assertRaises(EncodeError, encoders.quantity, value)

    def test_data(self) -> None:
        """
        DATA is 0x and two lowercase digits per byte; empty is 0x.
        """
        self.assertEqual(encoders.data(b""), "0x")
        self.assertEqual(encoders.data(b"\x00\xab"), "0x00ab")
        self.assertEqual(encoders.data(bytearray(b"\x01")), "0x01")

    def test_fixed_lengths(self) -> None:
        """
        Addresses, hashes, nonces and blooms must have their length.
        """
        self.assertEqual(encoders.address(b"\xab" * 20), "0x" + "ab" * 20)
        self.assertEqual(encoders.hash32(b"\x00" * 32), "0x" + "00" * 32)
        self.assertEqual(encoders.bytes8(b"\x00" * 8), "0x" + "00" * 8)
        self.assertEqual(len(encoders.bloom(b"\x00" * 256)), 514)
        self.assertRaises(EncodeError, encoders.address, b"\x00" * 19)
        self.assertRaises(EncodeError, encoders.hash32, b"\x00" * 33)

    def test_combinators(self) -> None:
        """
        decimal, nullable, array_of and identity encode as their names say.
        """
        self.assertEqual(encoders.decimal(33), "33")
        self.assertIsNone(encoders.nullable(encoders.quantity)(None))
        self.assertEqual(encoders.nullable(encoders.quantity)(1), "0x1")
        self.assertEqual(encoders.array_of(encoders.quantity)([1, 2]), ["0x1", "0x2"])
        self.assertEqual(encoders.identity({"a": True}), {"a": True})
