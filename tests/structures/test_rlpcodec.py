"""
Tests for L{nodex.structures.rlpcodec}, including every vector of the shared
ethereum/tests C{RLPTests}.
"""

from pathlib import Path
from typing import Any

from twisted.trial.unittest import SynchronousTestCase

from nodex.rlpcore import encode_bytes
from nodex.structures.errors import RLPError
from nodex.structures.rlpcodec import (
    RLPItem,
    decode_bytes,
    decode_fixed,
    decode_list,
    decode_rlp,
    decode_uint,
    encode_list_of_encoded,
    encode_rlp,
    encode_uint,
    encode_uint_item,
)
from tests.conformance import fixture_path, load_fixture


def _hex(text: str) -> bytes:
    """
    Bytes of a hex string with or without its C{0x} prefix.
    """
    return bytes.fromhex(text[2:] if text.startswith("0x") else text)


def _expected_item(value: Any) -> RLPItem:
    """
    The RLP item an C{RLPTests} input stands for: strings as their bytes,
    C{#digits} and integers as minimal big-endian bytes, lists recursively.
    """
    if isinstance(value, list):
        return [_expected_item(element) for element in value]
    if isinstance(value, int):
        return encode_uint(value)
    if value.startswith("#"):
        return encode_uint(int(value[1:]))
    return value.encode("latin-1")


class RLPConformanceTests(SynchronousTestCase):
    """
    The shared C{RLPTests} vectors: valid ones encode to and decode from their
    bytes, invalid ones are refused with L{RLPError}.
    """

    def _files(self) -> list[Path]:
        """
        Every JSON file of C{RLPTests}, the random ones included.
        """
        return sorted(fixture_path("RLPTests").rglob("*.json"))

    def test_valid_vectors_round_trip(self) -> None:
        """
        Each valid vector decodes to its input and its input encodes to its
        bytes; vectors whose input is C{VALID} decode and re-encode unchanged.
        """
        checked = 0
        for path in self._files():
            for name, vector in load_fixture(*path.relative_to(fixture_path()).parts).items():
                if vector["in"] == "INVALID":
                    continue
                raw = _hex(vector["out"])
                decoded = decode_rlp(raw)
                if vector["in"] != "VALID":
                    self.assertEqual(decoded, _expected_item(vector["in"]), name)
                    self.assertEqual(encode_rlp(_expected_item(vector["in"])), raw, name)
                self.assertEqual(encode_rlp(decoded), raw, name)
                checked += 1
        self.assertEqual(checked, 29)

    def test_invalid_vectors_refused(self) -> None:
        """
        Each invalid vector raises L{RLPError} when decoded.
        """
        checked = 0
        for path in self._files():
            for name, vector in load_fixture(*path.relative_to(fixture_path()).parts).items():
                if vector["in"] != "INVALID":
                    continue
                with self.assertRaises(RLPError, msg=name):
                    decode_rlp(_hex(vector["out"]))
                checked += 1
        self.assertEqual(checked, 26)


class DecodeRLPTests(SynchronousTestCase):
    """
    Tests for L{decode_rlp} and L{encode_rlp}.
    """

    def test_trailing_bytes_refused(self) -> None:
        """
        Bytes after the first item are refused.
        """
        with self.assertRaises(RLPError) as caught:
            decode_rlp(b"\x83dog\x00")
        self.assertIn("trailing", str(caught.exception))

    def test_truncated_refused(self) -> None:
        """
        An item shorter than its prefix announces is refused.
        """
        self.assertRaises(RLPError, decode_rlp, b"\x83do")

    def test_single_byte_as_string_refused(self) -> None:
        """
        A byte below 0x80 wrapped in a one-byte string prefix is not canonical.
        """
        self.assertRaises(RLPError, decode_rlp, b"\x81\x05")

    def test_empty_and_non_bytes_refused(self) -> None:
        """
        Empty input and non-bytes input are refused with clear messages.
        """
        self.assertRaises(RLPError, decode_rlp, b"")
        self.assertRaises(RLPError, decode_rlp, "c0")

    def test_deep_nesting_refused(self) -> None:
        """
        Lists nested deeper than the interpreter can follow are refused, not
        crashed on.
        """
        depth = 5000
        payload = b""
        for _ in range(depth):
            payload = encode_list_of_encoded([payload])
        self.assertRaises(RLPError, decode_rlp, payload)

    def test_encode_refuses_other_objects(self) -> None:
        """
        Only bytes and sequences can be encoded.
        """
        self.assertRaises(RLPError, encode_rlp, [object()])

    def test_encode_list_of_encoded(self) -> None:
        """
        Already encoded items are wrapped into a list without re-encoding.
        """
        items = [encode_rlp(b"dog"), encode_rlp([b"cat"])]
        self.assertEqual(encode_list_of_encoded(items), encode_rlp([b"dog", [b"cat"]]))


class FieldTests(SynchronousTestCase):
    """
    Tests for the field readers.
    """

    def test_uint_round_trip(self) -> None:
        """
        Integers encode minimally and decode back; zero is the empty string.
        """
        for value in (0, 1, 127, 128, 255, 256, 2**64 - 1, 2**256 - 1):
            self.assertEqual(decode_uint(encode_uint(value), "x"), value)
        self.assertEqual(encode_uint(0), b"")
        self.assertEqual(encode_uint(256), b"\x01\x00")

    def test_uint_minimal_bytes(self) -> None:
        """
        Every integer below 300 and around each power of two up to 2**260 is
        its big-endian bytes without leading zeros (those below 256 come from
        a table).
        """
        values = list(range(300)) + [2**bits + delta for bits in range(8, 261) for delta in (-1, 0, 1)]
        for value in values:
            expected = value.to_bytes(32 + 2, "big").lstrip(b"\x00")
            self.assertEqual(encode_uint(value), expected, value)
            self.assertIs(type(encode_uint(value)), bytes)

    def test_uint_item(self) -> None:
        """
        L{encode_uint_item} is the RLP string of L{encode_uint}'s bytes, for
        the integers below 300 and around each power of two up to 2**260,
        and refuses a negative integer as L{encode_uint} does.
        """
        values = list(range(300)) + [2**bits + delta for bits in range(8, 261) for delta in (-1, 0, 1)]
        for value in values:
            self.assertEqual(encode_uint_item(value), encode_bytes(encode_uint(value)), value)
        for negative in (-1, -128, -(2**256)):
            with self.assertRaises(RLPError) as caught:
                encode_uint_item(negative)
            self.assertEqual(str(caught.exception), f"cannot encode the negative integer {negative}")

    def test_uint_leading_zero_refused(self) -> None:
        """
        An integer with a leading zero byte is not canonical.
        """
        with self.assertRaises(RLPError) as caught:
            decode_uint(b"\x00\x01", "nonce")
        self.assertIn("nonce", str(caught.exception))
        self.assertIn("leading zero", str(caught.exception))

    def test_negative_uint_refused(self) -> None:
        """
        A negative integer cannot be encoded.
        """
        self.assertRaises(RLPError, encode_uint, -1)

    def test_list_where_string_expected(self) -> None:
        """
        Strings are refused where lists are expected and the other way round.
        """
        self.assertRaises(RLPError, decode_uint, [], "nonce")
        self.assertRaises(RLPError, decode_bytes, [b""], "data")
        self.assertRaises(RLPError, decode_list, b"", "body")

    def test_lengths(self) -> None:
        """
        Fixed-length fields and fixed-size lists refuse other lengths.
        """
        self.assertEqual(decode_fixed(b"\x01" * 20, "address", 20), b"\x01" * 20)
        with self.assertRaises(RLPError) as caught:
            decode_fixed(b"\x01" * 19, "address", 20)
        self.assertIn("must be 20 bytes long, got 19", str(caught.exception))
        with self.assertRaises(RLPError) as caught:
            decode_list([b"", b""], "account", 4)
        self.assertIn("must have 4 items, got 2", str(caught.exception))
