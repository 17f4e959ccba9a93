"""
Tests for L{nodex.evm.precompiles.modexp}: EIP-198 results, EIP-2565 prices.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.evm.precompiles.modexp import (
    iteration_count,
    modexp,
    modexp_gas,
    multiplication_complexity,
)

# secp256k1's field prime, used by EIP-198's own examples.
SECP256K1_P = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEFFFFFC2F


def header(base_length: int, exponent_length: int, modulus_length: int) -> bytes:
    """
    The 96-byte length header of a MODEXP call.
    """
    return b"".join(n.to_bytes(32, "big") for n in (base_length, exponent_length, modulus_length))


def call_data(base: bytes, exponent: bytes, modulus: bytes) -> bytes:
    """
    A complete MODEXP input for the three big-endian numbers.
    """
    return header(len(base), len(exponent), len(modulus)) + base + exponent + modulus


class ModexpResultTests(SynchronousTestCase):
    """
    Tests for the results of MODEXP (0x05).
    """

    def test_fermat(self) -> None:
        """
        EIP-198's first example: 3^(p-1) mod p is 1 for the prime p.
        """
        data = call_data(b"\x03", (SECP256K1_P - 1).to_bytes(32, "big"), SECP256K1_P.to_bytes(32, "big"))
        self.assertEqual(modexp(data), (1).to_bytes(32, "big"))

    def test_empty_base(self) -> None:
        """
        EIP-198's second example: a zero-length base reads as 0, and 0^(p-1)
        mod p is 0.
        """
        data = call_data(b"", (SECP256K1_P - 1).to_bytes(32, "big"), SECP256K1_P.to_bytes(32, "big"))
        self.assertEqual(modexp(data), bytes(32))

    def test_output_length_is_modulus_length(self) -> None:
        """
        The result is left-padded to the declared modulus length.
        """
        data = call_data(b"\x02", b"\x03", bytes(7) + b"\x64")
        self.assertEqual(modexp(data), bytes(7) + b"\x08")

    def test_zero_modulus(self) -> None:
        """
        A zero modulus gives as many zero bytes as its declared length.
        """
        self.assertEqual(modexp(call_data(b"\x05", b"\x02", bytes(4))), bytes(4))

    def test_zero_exponent(self) -> None:
        """
        x^0 mod m is 1 for m > 1, including 0^0, and 0 for m = 1.
        """
        self.assertEqual(modexp(call_data(b"\x00", b"", b"\x07")), b"\x01")
        self.assertEqual(modexp(call_data(b"\x05", b"\x00", b"\x01")), b"\x00")

    def test_empty_modulus(self) -> None:
        """
        A zero-length modulus gives empty output.
        """
        self.assertEqual(modexp(call_data(b"\x05", b"\x02", b"")), b"")

    def test_truncated_input_zero_filled(self) -> None:
        """
        Numbers that run past the end of the input are zero-filled on the
        right: a modulus declared as 2 bytes with only its first byte present
        reads as 0x0100.
        """
        data = header(1, 1, 2) + b"\x03" + b"\x02" + b"\x01"
        self.assertEqual(modexp(data), (9).to_bytes(2, "big"))

    def test_short_header(self) -> None:
        """
        A header shorter than 96 bytes is zero-filled: empty input declares
        three empty numbers, which give empty output.
        """
        self.assertEqual(modexp(b""), b"")

    def test_huge_lengths_empty_modulus(self) -> None:
        """
        Declared base and exponent lengths near 2^256 with an empty modulus
        give empty output without allocating anything.
        """
        data = header(2**256 - 1, 2**256 - 1, 0)
        self.assertEqual(modexp(data), b"")


class ModexpGasTests(SynchronousTestCase):
    """
    Tests for the EIP-2565 price of MODEXP.
    """

    def test_fermat_example(self) -> None:
        """
        EIP-198's first example costs 1360 under EIP-2565: complexity 16
        (4 words squared) times 255 iterations, over 3.
        """
        data = call_data(b"\x03", (SECP256K1_P - 1).to_bytes(32, "big"), SECP256K1_P.to_bytes(32, "big"))
        self.assertEqual(modexp_gas(data), 1360)

    def test_minimum(self) -> None:
        """
        Cheap calls cost at least 200 gas, even with empty input.
        """
        self.assertEqual(modexp_gas(b""), 200)
        self.assertEqual(modexp_gas(call_data(b"\x02", b"\x03", b"\x05")), 200)

    def test_rsa_exponent(self) -> None:
        """
        A 2048-bit modulus with exponent 65537: 32^2 x 16 / 3 = 5461.
        """
        data = header(256, 3, 256) + bytes(256) + b"\x01\x00\x01"
        self.assertEqual(modexp_gas(data), 5461)

    def test_complexity_rounds_up_to_words(self) -> None:
        """
        The complexity is the square of the 8-byte words in the longer of
        base and modulus, rounded up.
        """
        self.assertEqual(multiplication_complexity(0, 0), 0)
        self.assertEqual(multiplication_complexity(1, 0), 1)
        self.assertEqual(multiplication_complexity(8, 9), 4)
        self.assertEqual(multiplication_complexity(64, 32), 64)

    def test_iterations_short_exponent(self) -> None:
        """
        For exponents of at most 32 bytes the count is the index of the
        highest set bit, at least 1.
        """
        self.assertEqual(iteration_count(32, 0), 1)
        self.assertEqual(iteration_count(1, 1), 1)
        self.assertEqual(iteration_count(1, 2), 1)
        self.assertEqual(iteration_count(1, 0xFF), 7)
        self.assertEqual(iteration_count(32, 2**255), 255)

    def test_iterations_long_exponent(self) -> None:
        """
        Past 32 bytes each further byte counts 8, plus the highest bit of the
        first 32 bytes.
        """
        self.assertEqual(iteration_count(33, 0), 8)
        self.assertEqual(iteration_count(40, 1), 64)
        self.assertEqual(iteration_count(40, 2**255), 64 + 255)

    def test_long_exponent_head_only(self) -> None:
        """
        Only the first 32 bytes of a long exponent matter to the price: a
        40-byte exponent whose head is zero costs 8 x 8 iterations.
        """
        exponent = bytes(32) + b"\xff" * 8
        data = call_data(bytes(64), exponent, bytes(63) + b"\x07")
        self.assertEqual(modexp_gas(data), max(200, 64 * 64 // 3))

    def test_exponent_head_after_missing_base(self) -> None:
        """
        The exponent is read after the declared base length even when the
        base runs past the end of the input, so its head reads as zero.
        """
        data = header(64, 32, 64) + b"\xff" * 32
        self.assertEqual(modexp_gas(data), 200)

    def test_huge_lengths_price_from_header(self) -> None:
        """
        Lengths near 2^256 are priced from the header alone, far beyond any
        gas limit, without allocating the declared numbers.
        """
        data = header(2**256 - 1, 2**256 - 1, 2**256 - 1)
        self.assertGreater(modexp_gas(data), 2**64)

    def test_huge_exponent_small_numbers(self) -> None:
        """
        A huge exponent length with one-byte base and modulus costs eight
        iterations per byte, so it is never cheap.
        """
        data = header(1, 2**32, 1) + b"\x02"
        self.assertEqual(modexp_gas(data), 1 * 8 * (2**32 - 32) // 3)

    def test_zero_lengths_huge_exponent(self) -> None:
        """
        With empty base and modulus the complexity is zero and the price is
        the minimum, however long the exponent (the result is empty).
        """
        data = header(0, 2**255, 0)
        self.assertEqual(modexp_gas(data), 200)
        self.assertEqual(modexp(data), b"")
