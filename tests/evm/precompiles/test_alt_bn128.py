"""
Tests for L{nodex.evm.precompiles.alt_bn128} (EIP-196, EIP-197, EIP-1108).
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.evm.precompiles.alt_bn128 import (
    CURVE_ORDER,
    FIELD_MODULUS,
    GLV_BETA,
    GLV_LAMBDA,
    INFINITY,
    add,
    add_affine,
    decompose_scalar,
    double,
    ecadd,
    ecadd_gas,
    ecmul,
    ecmul_gas,
    ecpairing,
    ecpairing_gas,
    encode_g1,
    multiply,
    naf_digits,
    to_affine,
)
from nodex.evm.precompiles.errors import PrecompileError


def word(value: int) -> bytes:
    """
    C{value} as a 32-byte big-endian word.
    """
    return value.to_bytes(32, "big")


G1 = word(1) + word(2)
G1_DOUBLE = bytes.fromhex(
    "030644e72e131a029b85045b68181585d97816a916871ca8d3c208c16d87cfd3"
    "15ed738c0e0a7c92e7845f96b2ae9c0a68a6a449e3538fc7ff3ebf7a5a18a2c4"
)
G1_NEGATED = word(1) + word(FIELD_MODULUS - 2)
INFINITY_G1 = bytes(64)

# The generator of G2 in EIP-197's order: x imaginary, x real, y imaginary, y real.
G2 = bytes.fromhex(
    "198e9393920d483a7260bfb731fb5d25f1aa493335a9e71297e485b7aef312c2"
    "1800deef121f1e76426a00665e5c4479674322d4f75edadd46debd5cd992f6ed"
    "090689d0585ff075ec9e99ad690c3395bc4b313370b38ef355acdadcd122975b"
    "12c85ea5db8c6deb4aab71808dcb408fe3d1e7690c43d37b4ce6cc0166fa7daa"
)
INFINITY_G2 = bytes(128)

# x = 2 + i lies on the twisted curve, but the point is not in the subgroup
# of prime order n (the twist's cofactor is large).
G2_OUTSIDE_SUBGROUP = bytes.fromhex(
    "0000000000000000000000000000000000000000000000000000000000000001"
    "0000000000000000000000000000000000000000000000000000000000000002"
    "2b76c179599bb92a963dac85546a005a777f7c13f6a7b75d5918b6b5808f5fde"
    "101f7278419308b95099eca02dcee0c5381f4d26d1d62313f057167f064101ce"
)

# A published pairing check ("jeff1" among the EIP-197 vectors of the
# clients' test suites): two pairs whose product is one.
JEFF1 = bytes.fromhex(
    "1c76476f4def4bb94541d57ebba1193381ffa7aa76ada664dd31c16024c43f59"
    "3034dd2920f673e204fee2811c678745fc819b55d3e9d294e45c9b03a76aef41"
    "209dd15ebff5d46c4bd888e51a93cf99a7329636c63514396b4a452003a35bf7"
    "04bf11ca01483bfa8b34b43561848d28905960114c8ac04049af4b6315a41678"
    "2bb8324af6cfc93537a2ad1a445cfd0ca2a71acd7ac41fadbf933c2a51be344d"
    "120a2a4cf30c1bf9845f20c6fe39e07ea2cce61f0c9bb048165fe5e4de877550"
    "111e129f1cf1097710d41c4ac70fcdfa5ba2023c6ff1cbeac322de49d1b6df7c"
    "2032c61a830e3c17286de9462bf242fca2883585b93870a73853face6a6bf411"
) + G2
# The same with another valid G1 point in the second pair: the check fails.
JEFF6 = JEFF1[:192] + bytes.fromhex(
    "111e129f1cf1097710d41c4ac70fcdfa5ba2023c6ff1cbeac322de49d1b6df7c"
    "103188585e2364128fe25c70558f1560f4f9350baf3959e603cc91486e110936"
) + G2

TRUE = word(1)
FALSE = word(0)


class CurveArithmeticTests(SynchronousTestCase):
    """
    Tests for the Jacobian arithmetic on G1.
    """

    def test_double_matches_add(self) -> None:
        """
        Doubling a point equals adding it to itself.
        """
        point = (1, 2, 1)
        self.assertEqual(encode_g1(double(point)), encode_g1(add(point, point)))
        self.assertEqual(encode_g1(double(point)), G1_DOUBLE)

    def test_multiply_matches_repeated_addition(self) -> None:
        """
        Multiplying by k equals adding the point k times.
        """
        point = (1, 2, 1)
        total = point
        for k in range(2, 12):
            total = add(total, point)
            self.assertEqual(encode_g1(multiply(point, k)), encode_g1(total), k)

    def test_group_order(self) -> None:
        """
        The generator times the group order is the point at infinity, and
        (n - 1)·G is -G.
        """
        point = (1, 2, 1)
        self.assertEqual(encode_g1(multiply(point, CURVE_ORDER)), INFINITY_G1)
        self.assertEqual(encode_g1(multiply(point, CURVE_ORDER - 1)), G1_NEGATED)

    def test_distributive(self) -> None:
        """
        a·G + b·G = (a + b)·G for large scalars.
        """
        point = (1, 2, 1)
        a, b = 2**200 + 12345, CURVE_ORDER - 7
        left = add(multiply(point, a), multiply(point, b))
        self.assertEqual(encode_g1(left), encode_g1(multiply(point, a + b)))


    def test_add_affine_matches_add(self) -> None:
        """
        The mixed addition agrees with the general one, including doubling
        and adding an opposite.
        """
        jacobian = double(double((1, 2, 1)))
        for k in (1, 2, 5):
            affine = to_affine(multiply((1, 2, 1), k))
            assert affine is not None
            expected = add(jacobian, (affine[0], affine[1], 1))
            self.assertEqual(encode_g1(add_affine(jacobian, *affine)), encode_g1(expected))
        four = to_affine(jacobian)
        assert four is not None
        self.assertEqual(encode_g1(add_affine(jacobian, *four)), encode_g1(double(jacobian)))
        self.assertEqual(add_affine(jacobian, four[0], FIELD_MODULUS - four[1])[2], 0)
        self.assertEqual(add_affine(INFINITY, 1, 2), (1, 2, 1))

    def test_naf_digits(self) -> None:
        """
        The width-5 NAF digits are odd and below 16 in absolute value, every
        nonzero digit is followed by at least four zeros, and they add up to
        the scalar.
        """
        for scalar in (1, 15, 16, 31, 2**255 + 12345, CURVE_ORDER - 1):
            digits = naf_digits(scalar)
            self.assertEqual(sum(d << (len(digits) - 1 - i) for i, d in enumerate(digits)), scalar)
            nonzero = [i for i, d in enumerate(digits) if d]
            self.assertTrue(all(digits[i] % 2 == 1 and abs(digits[i]) < 16 for i in nonzero))
            self.assertTrue(all(b - a >= 5 for a, b in zip(nonzero, nonzero[1:])))

    def test_multiply_other_points(self) -> None:
        """
        k·(7G) = 7k·G: the precomputed tables work for any point.
        """
        seven = multiply((1, 2, 1), 7)
        for k in (3, 2**127 + 1, CURVE_ORDER - 2, 0xDEADBEEF * 2**180):
            self.assertEqual(encode_g1(multiply(seven, k)), encode_g1(multiply((1, 2, 1), 7 * k)))

    def test_glv_endomorphism(self) -> None:
        """
        (beta·x, y) is lambda times the point, by plain double-and-add.
        """
        expected = INFINITY
        for bit in bin(GLV_LAMBDA)[2:]:
            expected = double(expected)
            if bit == "1":
                expected = add(expected, (1, 2, 1))
        self.assertEqual(to_affine(expected), (GLV_BETA, 2))

    def test_decompose_scalar(self) -> None:
        """
        The two halves recombine to the scalar modulo n and fit in 128 bits
        each, for small, large and structured scalars.
        """
        scalars = [0, 1, GLV_LAMBDA, CURVE_ORDER - 1, 2**253 + 7, 0x5555 * (2**200 // 0x5555)]
        scalars += [(k * 0x9E3779B97F4A7C15F39CC0605CEDC834) % CURVE_ORDER for k in range(1, 50)]
        for scalar in scalars:
            first, second = decompose_scalar(scalar)
            self.assertEqual((first + second * GLV_LAMBDA - scalar) % CURVE_ORDER, 0)
            self.assertLess(max(abs(first), abs(second)), 2**128, hex(scalar))

    def test_multiply_matches_double_and_add(self) -> None:
        """
        The windowed multiplication agrees with plain double-and-add on
        scalars with long runs of ones and zeros.
        """
        point = (1, 2, 1)
        scalars = [2**64 - 1, 0xF0F0F0F0F0F0F0F0F0F0F0F0F, 2**200 + 2**100 + 1, CURVE_ORDER // 3]
        scalars += [(k * 0x9E3779B97F4A7C15F39CC0605CEDC834) % CURVE_ORDER for k in range(1, 6)]
        for scalar in scalars:
            expected = INFINITY
            for bit in bin(scalar)[2:]:
                expected = double(expected)
                if bit == "1":
                    expected = add(expected, point)
            self.assertEqual(encode_g1(multiply(point, scalar)), encode_g1(expected), hex(scalar))


class ECAddTests(SynchronousTestCase):
    """
    Tests for the point-addition precompile (0x06).
    """

    def test_generator_plus_itself(self) -> None:
        """
        G + G is 2G.
        """
        self.assertEqual(ecadd(G1 + G1), G1_DOUBLE)

    def test_infinity_is_identity(self) -> None:
        """
        The all-zero point is the identity on either side.
        """
        self.assertEqual(ecadd(G1 + INFINITY_G1), G1)
        self.assertEqual(ecadd(INFINITY_G1 + G1), G1)

    def test_inverse(self) -> None:
        """
        G + (-G) is the point at infinity, encoded as 64 zero bytes.
        """
        self.assertEqual(ecadd(G1 + G1_NEGATED), INFINITY_G1)

    def test_empty_and_short_input(self) -> None:
        """
        Missing bytes are zeros: empty input adds two points at infinity,
        and a lone point is added to infinity.
        """
        self.assertEqual(ecadd(b""), INFINITY_G1)
        self.assertEqual(ecadd(G1), G1)

    def test_extra_input_ignored(self) -> None:
        """
        Bytes after the first 128 are ignored.
        """
        self.assertEqual(ecadd(G1 + G1 + b"\xff" * 10), G1_DOUBLE)

    def test_point_not_on_curve(self) -> None:
        """
        (1, 3) is not on the curve: an error.
        """
        exc = self.assertRaises(PrecompileError, ecadd, G1 + word(1) + word(3))
        self.assertIn("not on the curve", str(exc))

    def test_coordinate_not_reduced(self) -> None:
        """
        A coordinate at least p is an error even if it is congruent to a
        valid one.
        """
        exc = self.assertRaises(PrecompileError, ecadd, word(1 + FIELD_MODULUS) + word(2) + G1)
        self.assertIn("field modulus", str(exc))

    def test_gas(self) -> None:
        """
        The price is 150 (EIP-1108).
        """
        self.assertEqual(ecadd_gas(b""), 150)


class ECMulTests(SynchronousTestCase):
    """
    Tests for the scalar-multiplication precompile (0x07).
    """

    def test_double(self) -> None:
        """
        2·G is 2G.
        """
        self.assertEqual(ecmul(G1 + word(2)), G1_DOUBLE)

    def test_zero_scalar(self) -> None:
        """
        0·G is the point at infinity; a missing scalar reads as zero.
        """
        self.assertEqual(ecmul(G1 + word(0)), INFINITY_G1)
        self.assertEqual(ecmul(G1), INFINITY_G1)

    def test_scalar_beyond_order(self) -> None:
        """
        Scalars are taken modulo the group order: (n + 2)·G is 2G, and the
        largest 256-bit scalar gives the same as its residue.
        """
        self.assertEqual(ecmul(G1 + word(CURVE_ORDER + 2)), G1_DOUBLE)
        largest = 2**256 - 1
        self.assertEqual(ecmul(G1 + word(largest)), ecmul(G1 + word(largest % CURVE_ORDER)))

    def test_infinity(self) -> None:
        """
        Any multiple of the point at infinity is the point at infinity.
        """
        self.assertEqual(ecmul(INFINITY_G1 + word(5)), INFINITY_G1)

    def test_consistent_with_add(self) -> None:
        """
        3·G equals 2G + G through the two precompiles.
        """
        self.assertEqual(ecmul(G1 + word(3)), ecadd(G1_DOUBLE + G1))

    def test_point_not_on_curve(self) -> None:
        """
        A point off the curve is an error whatever the scalar.
        """
        self.assertRaises(PrecompileError, ecmul, word(1) + word(3) + word(0))

    def test_gas(self) -> None:
        """
        The price is 6000 (EIP-1108).
        """
        self.assertEqual(ecmul_gas(G1 + word(2)), 6000)


class ECPairingTests(SynchronousTestCase):
    """
    Tests for the pairing-check precompile (0x08).
    """

    def test_empty_is_true(self) -> None:
        """
        The empty product is one.
        """
        self.assertEqual(ecpairing(b""), TRUE)

    def test_published_true(self) -> None:
        """
        A published two-pair check succeeds.
        """
        self.assertEqual(ecpairing(JEFF1), TRUE)

    def test_published_false(self) -> None:
        """
        Changing one G1 point of it to another valid point makes it fail.
        """
        self.assertEqual(ecpairing(JEFF6), FALSE)

    def test_single_pair_false(self) -> None:
        """
        e(G1, G2) alone is not one (the pairing is non-degenerate).
        """
        self.assertEqual(ecpairing(G1 + G2), FALSE)

    def test_bilinear_cancellation(self) -> None:
        """
        e(2G, G2)·e(-G, G2)·e(-G, G2) is one.
        """
        data = G1_DOUBLE + G2 + G1_NEGATED + G2 + G1_NEGATED + G2
        self.assertEqual(ecpairing(data), TRUE)

    def test_infinity_pairs_skipped(self) -> None:
        """
        Pairs with a point at infinity contribute one.
        """
        self.assertEqual(ecpairing(INFINITY_G1 + G2 + G1 + INFINITY_G2), TRUE)

    def test_length_not_multiple(self) -> None:
        """
        Input that is not a whole number of 192-byte pairs is an error.
        """
        exc = self.assertRaises(PrecompileError, ecpairing, JEFF1[:-1])
        self.assertIn("multiple of 192", str(exc))

    def test_g1_not_on_curve(self) -> None:
        """
        An invalid G1 point is an error, even paired with infinity.
        """
        self.assertRaises(PrecompileError, ecpairing, word(1) + word(3) + INFINITY_G2)

    def test_g2_not_on_twist(self) -> None:
        """
        A G2 point off the twisted curve is an error, even paired with
        infinity.
        """
        bad = G2[:127] + bytes([G2[127] ^ 1])
        exc = self.assertRaises(PrecompileError, ecpairing, INFINITY_G1 + bad)
        self.assertIn("twisted curve", str(exc))

    def test_g2_outside_subgroup(self) -> None:
        """
        A G2 point on the twist but outside the order-n subgroup is an error.
        """
        exc = self.assertRaises(PrecompileError, ecpairing, G1 + G2_OUTSIDE_SUBGROUP)
        self.assertIn("subgroup", str(exc))

    def test_g2_coordinate_not_reduced(self) -> None:
        """
        A G2 coordinate at least p is an error.
        """
        bad = word(FIELD_MODULUS) + G2[32:]
        exc = self.assertRaises(PrecompileError, ecpairing, G1 + bad)
        self.assertIn("field modulus", str(exc))

    def test_gas(self) -> None:
        """
        The price is 45000 plus 34000 per pair (EIP-1108).
        """
        self.assertEqual(ecpairing_gas(b""), 45000)
        self.assertEqual(ecpairing_gas(JEFF1), 113000)
        self.assertEqual(ecpairing_gas(bytes(192 * 10)), 385000)
