"""
Tests for L{nodex.evm.precompiles.words}.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.evm.precompiles.words import ceil32_words, read_padded, read_uint


class WordsTests(SynchronousTestCase):
    """
    Tests for reading zero-filled fields out of call data.
    """

    def test_ceil32_words(self) -> None:
        """
        Lengths round up to whole 32-byte words.
        """
        self.assertEqual([ceil32_words(n) for n in (0, 1, 32, 33, 64)], [0, 1, 1, 2, 2])

    def test_read_padded_past_end(self) -> None:
        """
        A field that runs past the end of the data is zero-filled.
        """
        self.assertEqual(read_padded(b"\x01\x02\x03", 1, 4), b"\x02\x03\x00\x00")

    def test_read_padded_beyond_data(self) -> None:
        """
        A field that starts beyond the end of the data is all zeros, even at
        an offset larger than any real input.
        """
        self.assertEqual(read_padded(b"\x01", 2**256, 2), b"\x00\x00")

    def test_read_uint_zero_filled(self) -> None:
        """
        A short integer field reads as if its missing low bytes were zeros.
        """
        self.assertEqual(read_uint(b"\x01\x02", 0, 4), 0x01020000)

    def test_read_uint_huge_offset(self) -> None:
        """
        An integer field beyond the data is zero and allocates nothing.
        """
        self.assertEqual(read_uint(b"\xff" * 8, 2**255, 32), 0)

    def test_read_uint_empty_field(self) -> None:
        """
        A zero-length field reads as zero.
        """
        self.assertEqual(read_uint(b"\xff", 0, 0), 0)
