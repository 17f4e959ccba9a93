"""
Tests for L{nodex.structures.bloom} and L{nodex.structures.logs}.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.crypto import keccak256
from nodex.primitives import Address, Hash32
from nodex.structures import bloom
from nodex.structures.bloom import EMPTY_BLOOM, bloom_add, bloom_may_contain, logs_bloom, merge_blooms
from nodex.structures.errors import RLPError
from nodex.structures.logs import Log
from nodex.structures.rlpcodec import decode_rlp, encode_rlp

ADDRESS = Address(b"\x11" * 20)
TOPIC = Hash32(keccak256(b"Transfer(address,address,uint256)"))


def reference_bloom(values: list[bytes]) -> bytes:
    """
    The bloom of C{values} computed as the Yellow Paper states it: bits
    numbered from the low end of one 2048-bit integer.
    """
    bits = 0
    for value in values:
        digest = keccak256(value)
        for offset in (0, 2, 4):
            bits |= 1 << (int.from_bytes(digest[offset:offset + 2], "big") % 2048)
    return bits.to_bytes(256, "big")


class BloomTests(SynchronousTestCase):
    """
    Tests for the bloom helpers.
    """

    def test_matches_reference(self) -> None:
        """
        The bloom of a log sets the bits of its address and of each topic.
        """
        log = Log(ADDRESS, (TOPIC, Hash32(b"\x00" * 32)), b"data")
        self.assertEqual(logs_bloom([log]), reference_bloom([ADDRESS, TOPIC, b"\x00" * 32]))

    def test_several_logs(self) -> None:
        """
        The bloom of several logs, values repeated among them and seen
        before or not, sets the bits of every address and topic.
        """
        other = Address(b"\x33" * 20)
        logs = [
            Log(ADDRESS, (TOPIC, Hash32(b"\x01" * 32)), b""),
            Log(other, (), b"x"),
            Log(ADDRESS, (TOPIC, TOPIC, Hash32(b"\x02" * 32), Hash32(b"\x03" * 32)), b""),
        ]
        expected = reference_bloom([ADDRESS, TOPIC, b"\x01" * 32, other, b"\x02" * 32, b"\x03" * 32])
        bloom._kept_bits.clear()
        self.assertEqual(logs_bloom(logs), expected)
        self.assertEqual(logs_bloom(logs), expected)

    def test_at_most_three_bits_per_value(self) -> None:
        """
        One value sets between one and three bits.
        """
        bloom = bytearray(256)
        bloom_add(bloom, b"value")
        self.assertIn(bin(int.from_bytes(bloom, "big")).count("1"), (1, 2, 3))

    def test_may_contain(self) -> None:
        """
        Added values are reported as possibly present; the empty bloom
        contains nothing.
        """
        bloom = logs_bloom([Log(ADDRESS, (TOPIC,), b"")])
        self.assertTrue(bloom_may_contain(bloom, ADDRESS))
        self.assertTrue(bloom_may_contain(bloom, TOPIC))
        self.assertFalse(bloom_may_contain(EMPTY_BLOOM, ADDRESS))
        self.assertFalse(bloom_may_contain(bloom, b"\x22" * 20))

    def test_kept_bits_bounded(self) -> None:
        """
        The bits of values seen before are kept for the next bloom, at most
        L{BITS_KEPT} values (all dropped when full), and blooms made from
        them are the reference's.
        """
        bloom.BITS_KEPT, kept = 8, bloom.BITS_KEPT
        self.addCleanup(setattr, bloom, "BITS_KEPT", kept)
        bloom._kept_bits.clear()
        values = [bytes([index]) * 20 for index in range(20)]
        for value in values:
            self.assertEqual(logs_bloom([Log(Address(value), (), b"")]), reference_bloom([value]))
            self.assertLessEqual(len(bloom._kept_bits), 8)
        self.assertEqual(logs_bloom([Log(Address(values[-1]), (), b"")]), reference_bloom([values[-1]]))
        self.assertIn(values[-1], bloom._kept_bits)

    def test_no_logs(self) -> None:
        """
        No logs give the empty bloom.
        """
        self.assertEqual(logs_bloom([]), EMPTY_BLOOM)

    def test_merge(self) -> None:
        """
        Merging blooms is the bloom of all their logs together.
        """
        first = Log(ADDRESS, (TOPIC,), b"")
        second = Log(Address(b"\x22" * 20), (), b"")
        merged = merge_blooms([logs_bloom([first]), logs_bloom([second])])
        self.assertEqual(merged, logs_bloom([first, second]))
        self.assertEqual(merge_blooms([]), EMPTY_BLOOM)


class LogTests(SynchronousTestCase):
    """
    Tests for L{Log}.
    """

    def test_round_trip(self) -> None:
        """
        A log reads back from its RLP item.
        """
        log = Log(ADDRESS, (TOPIC,) * 4, b"\x01\x02")
        self.assertEqual(Log.from_rlp_item(decode_rlp(encode_rlp(log.to_rlp_item()))), log)

    def test_malformed_refused(self) -> None:
        """
        Short addresses, short topics, five topics and wrong shapes are refused.
        """
        for item in (
            [b"\x11" * 19, [], b""],
            [ADDRESS, [b"\x01" * 31], b""],
            [ADDRESS, [TOPIC] * 5, b""],
            [ADDRESS, TOPIC, b""],
            [ADDRESS, []],
            b"",
        ):
            self.assertRaises(RLPError, Log.from_rlp_item, item)
