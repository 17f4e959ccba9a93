"""
Tests for L{nodex.trie.nibbles}.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.trie.errors import MalformedNodeError
from nodex.trie.nibbles import (
    common_prefix_length,
    decode_path,
    encode_path,
    key_to_nibbles,
    nibbles_to_key,
)


class NibblesTests(SynchronousTestCase):
    """
    Tests for nibble paths and the hex-prefix encoding.
    """

    def test_key_round_trip(self) -> None:
        """
        A key becomes two nibbles per byte, high first, and back.
        """
        self.assertEqual(key_to_nibbles(b"\x12\xab"), bytes([1, 2, 10, 11]))
        self.assertEqual(nibbles_to_key(bytes([1, 2, 10, 11])), b"\x12\xab")

    def test_hex_prefix_examples(self) -> None:
        """
        The four flag cases of the Yellow Paper's hex-prefix encoding.
        """
        self.assertEqual(encode_path(bytes([1, 2, 3, 4, 5]), False), b"\x11\x23\x45")
        self.assertEqual(encode_path(bytes([0, 1, 2, 3, 4, 5]), False), b"\x00\x01\x23\x45")
        self.assertEqual(encode_path(bytes([0, 15, 1, 12, 11, 8]), True), b"\x20\x0f\x1c\xb8")
        self.assertEqual(encode_path(bytes([15, 1, 12, 11, 8]), True), b"\x3f\x1c\xb8")

    def test_hex_prefix_by_pairs(self) -> None:
        """
        For paths of every length up to 70 nibbles, and empty: the flag nibble (with a zero pad nibble for an even
        length) then the nibbles two a byte.
        """
        for length in range(71):
            path = bytes((index * 7) % 16 for index in range(length))
            for is_leaf in (True, False):
                flag = (2 if is_leaf else 0) + (length & 1)
                nibbles = bytes([flag]) + path if length & 1 else bytes([flag, 0]) + path
                expected = bytes(nibbles[index] * 16 + nibbles[index + 1] for index in range(0, len(nibbles), 2))
                self.assertEqual(encode_path(path, is_leaf), expected, (length, is_leaf))

    def test_odd_key_refused(self) -> None:
        """
        A path of an odd length is no key.
        """
        self.assertRaises(ValueError, nibbles_to_key, bytes([1, 2, 3]))

    def test_decode_round_trip(self) -> None:
        """
        Decoding an encoded path gives back the path and its kind.
        """
        for path in [b"", bytes([1]), bytes([1, 2]), bytes([15] * 7)]:
            for is_leaf in (True, False):
                self.assertEqual(decode_path(encode_path(path, is_leaf)), (path, is_leaf))

    def test_decode_rejects_bad_flags(self) -> None:
        """
        An empty encoding, a flag above 3 or a non-zero pad nibble is refused.
        """
        for encoded in [b"", b"\x40", b"\x05\x12"]:
            self.assertRaises(MalformedNodeError, decode_path, encoded)

    def test_common_prefix_length(self) -> None:
        """
        The length of the shared start of two paths.
        """
        self.assertEqual(common_prefix_length(b"\x01\x02\x03", b"\x01\x02\x04"), 2)
        self.assertEqual(common_prefix_length(b"\x01", b"\x01\x02"), 1)
        self.assertEqual(common_prefix_length(b"", b"\x01"), 0)
