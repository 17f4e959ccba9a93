"""
Tests for L{nodex.structures.receipts}.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.primitives import Address, Hash32
from nodex.structures.bloom import EMPTY_BLOOM, logs_bloom
from nodex.structures.errors import RLPError
from nodex.structures.logs import Log
from nodex.structures.receipts import Receipt, decode_receipts, encode_receipts
from nodex.structures.rlpcodec import decode_rlp, encode_rlp

LOG = Log(Address(b"\x11" * 20), (Hash32(b"\x22" * 32),), b"payload")


class ReceiptTests(SynchronousTestCase):
    """
    Tests for L{Receipt}.
    """

    def test_legacy_encoding(self) -> None:
        """
        A legacy transaction's receipt is the plain RLP list.
        """
        receipt = Receipt.from_logs(0, 1, 21000, [LOG])
        expected = encode_rlp([b"\x01", b"\x52\x08", logs_bloom([LOG]), [LOG.to_rlp_item()]])
        self.assertEqual(receipt.encode(), expected)
        self.assertEqual(Receipt.decode(expected), receipt)

    def test_typed_encoding(self) -> None:
        """
        Receipts of types 1 and 2 are prefixed by their type byte; a failure
        has an empty status.
        """
        for tx_type in (1, 2):
            receipt = Receipt.from_logs(tx_type, 0, 50000, [])
            raw = receipt.encode()
            self.assertEqual(raw, bytes([tx_type]) + encode_rlp([b"", b"\xc3\x50", EMPTY_BLOOM, []]))
            decoded = Receipt.decode(raw)
            self.assertEqual(decoded, receipt)
            self.assertFalse(decoded.succeeded)

    def test_encoding_is_the_fields_rlp(self) -> None:
        """
        The consensus encoding is the RLP of C{[status, cumulativeGasUsed,
        bloom, [[address, [topic, ...], data], ...]]} after the type byte of
        a typed receipt, whatever the values: any status, no log or several,
        no topic or four, and (in receipts made by hand) lengths other than
        the fixed ones.
        """
        log = Log(Address(b"\x11" * 20), (Hash32(b"\x22" * 32), Hash32(b"\x33" * 32)), b"\x01" * 70)
        odd = Log(Address(b"\x7f"), (Hash32(b"\x01" * 31), Hash32(b"\x05"), Hash32(b"")), b"\x05")
        bare = Log(Address(b"\x44" * 20), (), b"")
        cases = [
            Receipt(0, 1, 21000, EMPTY_BLOOM, ()),
            Receipt(0, 0, 0, EMPTY_BLOOM, (log,)),
            Receipt(1, 1, 2**63, logs_bloom([log, bare]), (log, bare, log)),
            Receipt(2, 5, 127, b"\x05", (odd,)),
            Receipt(2, 200, 128, b"", (bare, Log(Address(b"\x01" * 20), (Hash32(b"\x02" * 32),) * 4, b"\x00"))),
        ]
        for receipt in cases:
            fields = [
                receipt.status.to_bytes((receipt.status.bit_length() + 7) // 8, "big"),
                receipt.cumulative_gas_used.to_bytes((receipt.cumulative_gas_used.bit_length() + 7) // 8, "big"),
                receipt.bloom,
                [[entry.address, list(entry.topics), entry.data] for entry in receipt.logs],
            ]
            typed = bytes([receipt.tx_type]) if receipt.tx_type else b""
            self.assertEqual(receipt.encode(), typed + encode_rlp(fields))

    def test_from_logs_computes_bloom(self) -> None:
        """
        L{Receipt.from_logs} fills the bloom from the logs.
        """
        receipt = Receipt.from_logs(2, 1, 1, [LOG])
        self.assertEqual(receipt.bloom, logs_bloom([LOG]))
        self.assertTrue(receipt.succeeded)

    def test_bad_status_refused(self) -> None:
        """
        A status other than empty or 0x01 (such as a pre-Byzantium state
        root, or a non-canonical zero) is refused.
        """
        for status in (b"\x00", b"\x02", b"\x01" * 32):
            raw = encode_rlp([status, b"\x01", EMPTY_BLOOM, []])
            self.assertRaises(RLPError, Receipt.decode, raw)

    def test_malformed_refused(self) -> None:
        """
        Unknown type bytes, short blooms, wrong field counts and empty input
        are refused.
        """
        self.assertRaises(RLPError, Receipt.decode, b"\x03" + encode_rlp([b"", b"", EMPTY_BLOOM, []]))
        self.assertRaises(RLPError, Receipt.decode, encode_rlp([b"", b"", b"\x00" * 255, []]))
        self.assertRaises(RLPError, Receipt.decode, encode_rlp([b"", b"", EMPTY_BLOOM]))
        self.assertRaises(RLPError, Receipt.decode, b"")
        self.assertRaises(RLPError, Receipt.decode, encode_rlp([b"", b"\x00\x01", EMPTY_BLOOM, []]))


class ReceiptListTests(SynchronousTestCase):
    """
    Tests for L{encode_receipts} and L{decode_receipts}.
    """

    def test_round_trip(self) -> None:
        """
        A block's receipts of every type read back from their list.
        """
        receipts = (
            Receipt.from_logs(0, 1, 21000, [LOG]),
            Receipt.from_logs(1, 0, 50000, []),
            Receipt.from_logs(2, 1, 90000, [LOG, LOG]),
        )
        raw = encode_receipts(receipts)
        self.assertEqual(decode_receipts(raw), receipts)
        self.assertEqual(decode_receipts(encode_receipts(())), ())

    def test_typed_receipts_are_strings(self) -> None:
        """
        In the list, a legacy receipt is a list and a typed one a string of
        its encoding.
        """
        legacy = Receipt.from_logs(0, 1, 21000, [])
        typed = Receipt.from_logs(2, 1, 42000, [])
        self.assertEqual(
            encode_receipts([legacy, typed]), encode_rlp([decode_rlp(legacy.encode()), typed.encode()])
        )

    def test_malformed_refused(self) -> None:
        """
        A legacy receipt wrapped in a string, an empty string and a non-list
        are refused.
        """
        legacy = Receipt.from_logs(0, 1, 21000, [])
        self.assertRaises(RLPError, decode_receipts, encode_rlp([legacy.encode()]))
        self.assertRaises(RLPError, decode_receipts, encode_rlp([b""]))
        self.assertRaises(RLPError, decode_receipts, encode_rlp(b"receipts"))
