"""
Tests for L{nodex.rpc.decoders}.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.rpc import decoders
from nodex.rpc.decoders import BlockHashSelector, BlockTag, DecodeError, Field


class QuantityTests(SynchronousTestCase):
    """
    Tests for L{decoders.quantity} and L{decoders.uint64}.
    """

    def test_decodes_hex(self) -> None:
        """
        A 0x-prefixed hex string decodes to its integer, upper case and leading zeros included.
        """
        self.assertEqual(decoders.quantity("0x0"), 0)
        self.assertEqual(decoders.quantity("0x1F"), 31)
        self.assertEqual(decoders.quantity("0x0021"), 33)
        self.assertEqual(decoders.quantity("0x" + "f" * 64), 2**256 - 1)

    def test_refusals(self) -> None:
        """
        Numbers, missing prefixes, empty digits, bad digits and oversized values are refused
        with a message that says which.
        """
        cases = {
            5: "must be a 0x-prefixed hex string, got a number",
            "21": "hex string without 0x prefix",
            "0x": "empty hex string",
            "0xg1": "invalid hex string",
            "0x1_0": "invalid hex string",
            "0x 1": "invalid hex string",
            "0x1 ": "invalid hex string",
            "0x\u0661": "invalid hex string",
            "0x\uff11": "invalid hex string",
            "0x1" + "0" * 64: "hex number > 256 bits",
        }
        for value, message in cases.items():
            with self.assertRaises(DecodeError) as caught:
                decoders.quantity(value)
            self.assertIn(message, str(caught.exception))

    def test_uint64_limit(self) -> None:
        """
        L{decoders.uint64} refuses values of 2**64 and more.
        """
        self.assertEqual(decoders.uint64("0xffffffffffffffff"), 2**64 - 1)
        self.assertRaises(DecodeError, decoders.uint64, "0x10000000000000000")


class DataTests(SynchronousTestCase):
    """
    Tests for the DATA decoders.
    """

    def test_free_length(self) -> None:
        """
        DATA decodes any even number of digits, "0x" being empty.
        """
        self.assertEqual(decoders.data("0x"), b"")
        self.assertEqual(decoders.data("0xABcd"), b"\xab\xcd")

    def test_free_length_refusals(self) -> None:
        """
        Odd length, bad digits (whitespace included) and a missing prefix are refused.
        """
        for value, message in {
            "0x1": "odd length",
            "0xzz": "invalid hex",
            "0x1 2 ": "invalid hex",
            "0xab  cd": "invalid hex",
            "0xab\n\ncd": "invalid hex",
            "0x ab ": "invalid hex",
            "0xa_bc": "invalid hex",
            "0x\u0661\u0662": "invalid hex",
            "0xa\u00e9": "invalid hex",
            "abcd": "without 0x prefix",
            None: "got null",
        }.items():
            with self.assertRaises(DecodeError) as caught:
                decoders.data(value)
            self.assertIn(message, str(caught.exception))

    def test_address_length_message(self) -> None:
        """
        A short address is refused with the length it has and the length it needs.
        """
        with self.assertRaises(DecodeError) as caught:
            decoders.address("0x" + "ab" * 19)
        self.assertEqual(str(caught.exception), "hex string has length 38, want 40 for address")

    def test_address_and_hash(self) -> None:
        """
        Addresses (any case) and hashes decode to their bytes.
        """
        self.assertEqual(decoders.address("0x" + "AB" * 20), b"\xab" * 20)
        self.assertEqual(decoders.hash32("0x" + "01" * 32), b"\x01" * 32)
        self.assertRaises(DecodeError, decoders.hash32, "0x" + "01" * 31)
        self.assertRaises(DecodeError, decoders.address, "0x" + "zz" * 20)

    def test_fixed_data(self) -> None:
        """
        L{decoders.fixed_data} names its argument in the message.
        """
        nonce = decoders.fixed_data(8, "nonce")
        self.assertEqual(nonce("0x0000000000000001"), b"\x00" * 7 + b"\x01")
        with self.assertRaises(DecodeError) as caught:
            nonce("0x01")
        self.assertEqual(str(caught.exception), "hex string has length 2, want 16 for nonce")


class BlockParameterTests(SynchronousTestCase):
    """
    Tests for the TAG and block-parameter decoders.
    """

    def test_tags_and_numbers(self) -> None:
        """
        The three tags decode to L{BlockTag}s, hex strings to numbers.
        """
        self.assertIs(decoders.block_parameter("latest"), BlockTag.LATEST)
        self.assertIs(decoders.block_parameter("earliest"), BlockTag.EARLIEST)
        self.assertIs(decoders.block_parameter("pending"), BlockTag.PENDING)
        self.assertEqual(decoders.block_parameter("0x10"), 16)
        self.assertIs(decoders.block_tag("pending"), BlockTag.PENDING)

    def test_refusals(self) -> None:
        """
        Decimal strings, other words, numbers and objects are refused, naming what is wanted.
        """
        for value in ("16", "Latest", "Safe", 16, {"blockNumber": "0x1"}):
            with self.assertRaises(DecodeError) as caught:
                decoders.block_parameter(value)
            self.assertIn('"latest", "earliest", "pending", "safe" or "finalized"', str(caught.exception))
        self.assertIs(decoders.block_parameter("safe"), decoders.BlockTag.SAFE)
        self.assertIs(decoders.block_parameter("finalized"), decoders.BlockTag.FINALIZED)
        self.assertRaises(DecodeError, decoders.block_tag, "0x1")

    def test_selector_map(self) -> None:
        """
        The EIP-1898 MAP decodes both forms; requireCanonical may be a boolean or a string.
        """
        block_hash = "0x" + "11" * 32
        self.assertEqual(decoders.block_selector({"blockNumber": "0x5"}), 5)
        self.assertEqual(
            decoders.block_selector({"blockHash": block_hash}),
            BlockHashSelector(b"\x11" * 32, False),
        )
        for flag in (True, "true"):
            self.assertEqual(
                decoders.block_selector({"blockHash": block_hash, "requireCanonical": flag}),
                BlockHashSelector(b"\x11" * 32, True),
            )
        self.assertIs(decoders.block_selector("latest"), BlockTag.LATEST)

    def test_selector_refusals(self) -> None:
        """
        A MAP with both keys, neither, unknown keys or a bad member is refused with the member named.
        """
        block_hash = "0x" + "11" * 32
        cases = {
            "both": ({"blockHash": block_hash, "blockNumber": "0x1"}, "both"),
            "neither": ({}, 'needs "blockHash" or "blockNumber"'),
            "unknown": ({"blockHash": block_hash, "x": 1}, 'unknown block selector member "x"'),
            "bad hash": ({"blockHash": "0x11"}, 'field "blockHash": hex string has length 2'),
            "bad flag": ({"blockHash": block_hash, "requireCanonical": "yes"}, 'field "requireCanonical"'),
            "flag alone": ({"blockNumber": "0x1", "requireCanonical": True}, "only with"),
        }
        for name, (value, message) in cases.items():
            with self.assertRaises(DecodeError, msg=name) as caught:
                decoders.block_selector(value)
            self.assertIn(message, str(caught.exception), name)


class CombinatorTests(SynchronousTestCase):
    """
    Tests for the scalar decoders and the combinators that build objects.
    """

    def test_scalars(self) -> None:
        """
        Booleans and strings must be JSON booleans and strings.
        """
        self.assertIs(decoders.boolean(True), True)
        self.assertRaises(DecodeError, decoders.boolean, "true")
        self.assertRaises(DecodeError, decoders.boolean, 1)
        self.assertEqual(decoders.string("x"), "x")
        self.assertRaises(DecodeError, decoders.string, 1)
        self.assertEqual(decoders.any_json([1]), [1])

    def test_array_and_one_or_many(self) -> None:
        """
        Arrays decode element by element, naming a bad element; one-or-many always gives a list.
        """
        many = decoders.array_of(decoders.quantity, max_items=2)
        self.assertEqual(many(["0x1", "0x2"]), [1, 2])
        with self.assertRaises(DecodeError) as caught:
            many(["0x1", "1"])
        self.assertIn("element 1: hex string without 0x prefix", str(caught.exception))
        self.assertRaises(DecodeError, many, ["0x1"] * 3)
        self.assertRaises(DecodeError, many, "0x1")
        either = decoders.one_or_many(decoders.quantity)
        self.assertEqual(either("0x1"), [1])
        self.assertEqual(either(["0x1", "0x2"]), [1, 2])
        self.assertIsNone(decoders.nullable(decoders.quantity)(None))

    def test_record(self) -> None:
        """
        A record keeps the members present (null counts as absent), requires its required ones,
        names a bad member, and ignores or refuses unknown members as asked.
        """
        call = decoders.record({"to": Field(decoders.address, required=True), "value": Field(decoders.quantity)})
        to = "0x" + "22" * 20
        self.assertEqual(call({"to": to, "value": None, "other": 1}), {"to": b"\x22" * 20})
        with self.assertRaises(DecodeError) as caught:
            call({"value": "0x1"})
        self.assertIn('missing required field "to"', str(caught.exception))
        with self.assertRaises(DecodeError) as caught:
            call({"to": to, "value": "1"})
        self.assertIn('field "value": hex string without 0x prefix', str(caught.exception))
        strict = decoders.record({"a": Field(decoders.boolean)}, allow_unknown=False)
        self.assertRaises(DecodeError, strict, {"b": True})
        self.assertRaises(DecodeError, strict, [])


class FixedDataWhitespaceTests(SynchronousTestCase):
    """
    Fixed-size DATA of the right length with whitespace or other characters
    among its digits is refused (C{bytes.fromhex} would skip the whitespace).
    """

    def test_refused(self) -> None:
        for value in ("0x" + "ab" * 19 + "a ", "0x " + "ab" * 19 + "a", "0x" + "ab" * 19 + "\u0661\u0662"):
            with self.assertRaises(DecodeError) as caught:
                decoders.address(value)
            self.assertIn("invalid hex string for address", str(caught.exception))
        self.assertEqual(decoders.address("0x" + "Ab" * 20), b"\xab" * 20)
