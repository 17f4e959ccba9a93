"""
Tests for L{nodex.evm.precompiles.blake2f}, with EIP-152's test vectors.
"""

import struct

from twisted.trial.unittest import SkipTest, SynchronousTestCase

from nodex.evm.precompiles.blake2f import blake2f, blake2f_gas, compress, native_compress
from nodex.evm.precompiles.errors import PrecompileError

# EIP-152's vectors share h, m and t (the state after hashing "abc") and
# differ in the rounds prefix and the final flag suffix.
_BODY = bytes.fromhex(
    "48c9bdf267e6096a3ba7ca8485ae67bb2bf894fe72f36e3cf1361d5f3af54fa5"
    "d182e6ad7f520e511f6c3e2b8c68059b6bbd41fbabd9831f79217e1319cde05b"
    "6162630000000000000000000000000000000000000000000000000000000000"
    + "00" * 96
    + "0300000000000000"
    + "0000000000000000"
)


def vector(rounds: int, final: int) -> bytes:
    """
    EIP-152's input with C{rounds} rounds and final flag C{final}.
    """
    return rounds.to_bytes(4, "big") + _BODY + bytes([final])


class Blake2FTests(SynchronousTestCase):
    """
    Tests for the BLAKE2F precompile (0x09).
    """

    def test_input_length(self) -> None:
        """
        The vectors are 213 bytes long.
        """
        self.assertEqual(len(vector(12, 1)), 213)

    def test_twelve_rounds_final(self) -> None:
        """
        EIP-152 vector 5: 12 rounds, final block; this is BLAKE2b-512("abc").
        """
        self.assertEqual(
            blake2f(vector(12, 1)).hex(),
            "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1"
            "7d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923",
        )

    def test_twelve_rounds_not_final(self) -> None:
        """
        EIP-152 vector 6: 12 rounds, not the final block.
        """
        self.assertEqual(
            blake2f(vector(12, 0)).hex(),
            "75ab69d3190a562c51aef8d88f1c2775876944407270c42c9844252c26d28752"
            "98743e7f6d5ea2f2d3e8d226039cd31b4e426ac4f2d3d666a610c2116fde4735",
        )

    def test_zero_rounds(self) -> None:
        """
        EIP-152 vector 4: zero rounds still mixes in the counter and flag.
        """
        self.assertEqual(
            blake2f(vector(0, 1)).hex(),
            "08c9bcf367e6096a3ba7ca8485ae67bb2bf894fe72f36e3cf1361d5f3af54fa5"
            "d282e6ad7f520e511f6c3e2b8c68059b9442be0454267ce079217e1319cde05b",
        )

    def test_one_round(self) -> None:
        """
        EIP-152 vector 7: a single round.
        """
        self.assertEqual(
            blake2f(vector(1, 1)).hex(),
            "b63a380cb2897d521994a85234ee2c181b5f844d2c624c002677e9703449d2fb"
            "a551b3a8333bcdf5f2f7e08993d53923de3d64fcc68c034e717b9293fed7a421",
        )

    def test_gas_is_rounds(self) -> None:
        """
        The price is one gas per round, read as a big-endian 32-bit number.
        """
        self.assertEqual(blake2f_gas(vector(12, 1)), 12)
        self.assertEqual(blake2f_gas(vector(0, 1)), 0)
        self.assertEqual(blake2f_gas(vector(0xFFFFFFFF, 1)), 0xFFFFFFFF)

    def test_gas_wrong_length(self) -> None:
        """
        Input of the wrong length is priced at zero (the call then fails).
        """
        self.assertEqual(blake2f_gas(vector(12, 1)[:-1]), 0)
        self.assertEqual(blake2f_gas(b""), 0)

    def test_short_input(self) -> None:
        """
        212 bytes (EIP-152 vector 1) is an error.
        """
        exc = self.assertRaises(PrecompileError, blake2f, vector(12, 1)[:-1])
        self.assertIn("213", str(exc))

    def test_long_input(self) -> None:
        """
        214 bytes (EIP-152 vector 2) is an error.
        """
        self.assertRaises(PrecompileError, blake2f, vector(12, 1) + b"\x00")

    def test_empty_input(self) -> None:
        """
        Empty input (EIP-152 vector 0) is an error.
        """
        self.assertRaises(PrecompileError, blake2f, b"")

    def test_bad_final_flag(self) -> None:
        """
        A final flag other than 0 or 1 (EIP-152 vector 3) is an error.
        """
        exc = self.assertRaises(PrecompileError, blake2f, vector(12, 2))
        self.assertIn("flag", str(exc))


class CompressTests(SynchronousTestCase):
    """
    Tests for the pure-Python L{compress} and its agreement with the native
    implementation that L{blake2f} prefers.
    """

    def test_reference_vector(self) -> None:
        """
        The pure-Python function alone gives EIP-152 vector 5.
        """
        data = vector(12, 1)
        h = struct.unpack_from("<8Q", data, 4)
        m = struct.unpack_from("<16Q", data, 68)
        t = struct.unpack_from("<2Q", data, 196)
        output = struct.pack("<8Q", *compress(12, h, m, (t[0], t[1]), True))
        self.assertEqual(output, blake2f(data))
        self.assertEqual(output[:4].hex(), "ba80a53f")

    def test_native_agrees(self) -> None:
        """
        Where C{blake2b-py} is installed, it agrees with the pure-Python
        function on inputs with varied rounds, counters and flags.
        """
        if native_compress is None:
            raise SkipTest("blake2b-py is not installed: blake2f runs the pure-Python function")
        for rounds in (0, 1, 11, 24, 100):
            for final in (False, True):
                h = tuple((k * 0x9E3779B97F4A7C15 + rounds) & 0xFFFFFFFFFFFFFFFF for k in range(8))
                m = tuple((k * 0xC2B2AE3D27D4EB4F) & 0xFFFFFFFFFFFFFFFF for k in range(16))
                t = (rounds * 128, 0xFFFFFFFFFFFFFFFF)
                expected = struct.pack("<8Q", *compress(rounds, h, m, t, final))
                native = bytes(native_compress(rounds, list(h), list(m), list(t), final))
                self.assertEqual(native, expected, (rounds, final))

    def test_eight_million_rounds(self) -> None:
        """
        EIP-152 vector 8: 8,000,000 rounds, affordable only natively (the
        pure-Python function would take about a minute).
        """
        if native_compress is None:
            raise SkipTest("blake2b-py is not installed: 8,000,000 rounds would take a minute")
        self.assertEqual(
            blake2f(vector(8_000_000, 1)).hex(),
            "6d2ce9e534d50e18ff866ae92d70cceba79bbcd14c63819fe48752c8aca87a4b"
            "b7dcc230d22a4047f0486cfcfb50a17b24b2899eb8fca370f22240adb5170189",
        )
