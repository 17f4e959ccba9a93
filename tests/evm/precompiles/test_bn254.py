"""
Tests for L{nodex.evm.precompiles.bn254} and
L{nodex.evm.precompiles.bn254_fields}: the extension fields, G2 and the
optimal ate pairing.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.evm.precompiles.alt_bn128 import encode_g1, multiply
from nodex.evm.precompiles.bn254 import (
    B2,
    HARD_EXPONENT,
    N,
    P,
    final_exponentiation,
    g2_add,
    g2_in_subgroup,
    g2_is_on_curve,
    g2_multiply,
    g2_negate,
    miller_loop,
    multi_miller_loop,
    pairing_product_is_one,
)
from nodex.evm.precompiles.bn254_fields import (
    FP12_ONE,
    fp2_inverse,
    fp2_mul,
    fp12_conjugate,
    fp12_cyclotomic_square,
    fp12_frobenius,
    fp12_inverse,
    fp12_mul,
    fp12_pow,
    fp12_square,
)

G1 = (1, 2)
G2 = (
    (
        0x1800DEEF121F1E76426A00665E5C4479674322D4F75EDADD46DEBD5CD992F6ED,
        0x198E9393920D483A7260BFB731FB5D25F1AA493335A9E71297E485B7AEF312C2,
    ),
    (
        0x12C85EA5DB8C6DEB4AAB71808DCB408FE3D1E7690C43D37B4CE6CC0166FA7DAA,
        0x090689D0585FF075EC9E99AD690C3395BC4B313370B38EF355ACDADCD122975B,
    ),
)

# A point of the twist whose order divides the cofactor: n times a random
# point of the twist.
COFACTOR_POINT = (
    (
        6230321631403698381273083164343419216207060932257776675249347898481080083521,
        5828488823846831049007235644268926824535803673978074223247553468177994195024,
    ),
    (
        16922943170682134725151686194801725627679948432040250902084504319113094375,
        16348326616007469799139812167036677432183614833159290476526000410940968638611,
    ),
)

# A point of the twist (x = 2 + i) outside the subgroup of order n.
OUTSIDE_SUBGROUP = (
    (2, 1),
    (
        0x101F7278419308B95099ECA02DCEE0C5381F4D26D1D62313F057167F064101CE,
        0x2B76C179599BB92A963DAC85546A005A777F7C13F6A7B75D5918B6B5808F5FDE,
    ),
)

# An arbitrary Fp12 element with every coefficient nonzero.
SAMPLE = (
    ((3, 5), (7, 11), (13, 17)),
    ((19, 23), (29, 31), (37, 41)),
)


def g1_multiple(k: int) -> tuple[int, int]:
    """
    k·G1 in affine coordinates.
    """
    encoded = encode_g1(multiply((1, 2, 1), k))
    return int.from_bytes(encoded[:32], "big"), int.from_bytes(encoded[32:], "big")


def g1_negate(point: tuple[int, int]) -> tuple[int, int]:
    """
    The opposite of a finite G1 point.
    """
    return point[0], -point[1] % P


class FieldTests(SynchronousTestCase):
    """
    Tests for the arithmetic of Fp2 and Fp12.
    """

    def test_fp2_inverse(self) -> None:
        """
        An Fp2 element times its inverse is one.
        """
        a = (123456789, 987654321)
        self.assertEqual(fp2_mul(a, fp2_inverse(a)), (1, 0))

    def test_fp12_inverse(self) -> None:
        """
        An Fp12 element times its inverse is one.
        """
        self.assertEqual(fp12_mul(SAMPLE, fp12_inverse(SAMPLE)), FP12_ONE)

    def test_fp12_square(self) -> None:
        """
        Squaring agrees with multiplying an element by itself.
        """
        self.assertEqual(fp12_square(SAMPLE), fp12_mul(SAMPLE, SAMPLE))

    def test_cyclotomic_square(self) -> None:
        """
        On the cyclotomic subgroup (the image of the easy part of the final
        exponentiation) the Granger-Scott squaring equals the general one.
        """
        element = fp12_mul(fp12_conjugate(SAMPLE), fp12_inverse(SAMPLE))
        element = fp12_mul(fp12_frobenius(element, 2), element)
        self.assertEqual(fp12_cyclotomic_square(element), fp12_square(element))
        squared = fp12_cyclotomic_square(element)
        self.assertEqual(fp12_cyclotomic_square(squared), fp12_square(squared))

    def test_frobenius(self) -> None:
        """
        The Frobenius maps agree with raising to the powers p, p^2 and p^3.
        """
        self.assertEqual(fp12_frobenius(SAMPLE, 1), fp12_pow(SAMPLE, P))
        self.assertEqual(fp12_frobenius(SAMPLE, 2), fp12_pow(SAMPLE, P**2))
        self.assertEqual(fp12_frobenius(SAMPLE, 3), fp12_frobenius(fp12_frobenius(SAMPLE, 2), 1))


class G2Tests(SynchronousTestCase):
    """
    Tests for the arithmetic on the twist.
    """

    def test_generator_on_curve(self) -> None:
        """
        The generator lies on the twist y^2 = x^3 + 3/(9 + i) and in the
        subgroup.
        """
        self.assertTrue(g2_is_on_curve(G2))
        self.assertTrue(g2_in_subgroup(G2))
        self.assertEqual(fp2_mul(B2, (9, 1)), (3, 0))

    def test_subgroup_check_agrees_with_order(self) -> None:
        """
        The endomorphism test accepts exactly the points that n sends to
        infinity: multiples of the generator, but not a point outside the
        subgroup, a point of the cofactor's order, or their sums with G2.
        """
        points = [
            G2,
            g2_multiply(G2, 5),
            None,
            OUTSIDE_SUBGROUP,
            COFACTOR_POINT,
            g2_add(G2, COFACTOR_POINT),
            g2_add(OUTSIDE_SUBGROUP, G2),
        ]
        for point in points:
            self.assertTrue(g2_is_on_curve(point))
            self.assertEqual(g2_in_subgroup(point), g2_multiply(point, N) is None, point)
        self.assertEqual([g2_in_subgroup(point) for point in points], [True] * 3 + [False] * 4)

    def test_order(self) -> None:
        """
        n·G2 is infinity and (n + 1)·G2 is G2.
        """
        self.assertIsNone(g2_multiply(G2, N))
        self.assertEqual(g2_multiply(G2, N + 1), G2)

    def test_add_opposite(self) -> None:
        """
        A point plus its opposite is infinity; infinity is the identity.
        """
        opposite = (G2[0], ((-G2[1][0]) % P, (-G2[1][1]) % P))
        self.assertIsNone(g2_add(G2, opposite))
        self.assertEqual(g2_add(None, G2), G2)

    def test_multiply_matches_double_and_add(self) -> None:
        """
        The windowed multiplication agrees with plain double-and-add, and
        multiplying by n - 1 gives the opposite point.
        """
        for scalar in (3, 0x1F, 0xFEDCBA9876543210FEDCBA98765, 2**130 + 2**64 - 1):
            expected = None
            for bit in bin(scalar)[2:]:
                expected = g2_add(expected, expected)
                if bit == "1":
                    expected = g2_add(expected, G2)
            self.assertEqual(g2_multiply(G2, scalar), expected, hex(scalar))
        self.assertEqual(g2_multiply(G2, N - 1), g2_negate(G2))
        self.assertIsNone(g2_multiply(G2, 0))
        self.assertIsNone(g2_multiply(None, 5))

    def test_double_is_add(self) -> None:
        """
        2·G2 by multiplication equals G2 + G2, and stays on the curve.
        """
        double = g2_add(G2, G2)
        self.assertEqual(g2_multiply(G2, 2), double)
        self.assertTrue(g2_is_on_curve(double))


class PairingTests(SynchronousTestCase):
    """
    Tests for the optimal ate pairing.
    """

    def test_bilinear(self) -> None:
        """
        e(a·P, b·Q) = e(ab·P, Q): the product with e(-ab·P, Q) is one.
        """
        a, b = 0x1234567, 0xABCDEF0123
        pairs = [
            (g1_multiple(a), g2_multiply(G2, b)),
            (g1_negate(g1_multiple(a * b)), G2),
        ]
        self.assertTrue(pairing_product_is_one(pairs))  # type: ignore[arg-type]

    def test_not_bilinear_when_off_by_one(self) -> None:
        """
        e(a·P, b·Q)·e(-(ab + 1)·P, Q) is not one.
        """
        a, b = 0x1234567, 0xABCDEF0123
        pairs = [
            (g1_multiple(a), g2_multiply(G2, b)),
            (g1_negate(g1_multiple(a * b + 1)), G2),
        ]
        self.assertFalse(pairing_product_is_one(pairs))  # type: ignore[arg-type]

    def test_value_has_order_n(self) -> None:
        """
        e(G1, G2) is not one, and its n-th power is.
        """
        value = final_exponentiation(miller_loop(G2, G1))
        self.assertNotEqual(value, FP12_ONE)
        self.assertEqual(fp12_pow(value, N), FP12_ONE)

    def test_final_exponentiation_by_definition(self) -> None:
        """
        The final exponentiation, computed through u, equals raising the easy
        part's result to (p^4 - p^2 + 1)/n by square-and-multiply.
        """
        easy = fp12_mul(fp12_conjugate(SAMPLE), fp12_inverse(SAMPLE))
        easy = fp12_mul(fp12_frobenius(easy, 2), easy)
        self.assertEqual(final_exponentiation(SAMPLE), fp12_pow(easy, HARD_EXPONENT))

    def test_multi_miller_loop_is_product(self) -> None:
        """
        Running the Miller loops side by side gives exactly the product of
        the separate loops.
        """
        first = (g1_multiple(5), G2)
        second = (G1, g2_multiply(G2, 7))
        expected = fp12_mul(miller_loop(first[1], first[0]), miller_loop(second[1], second[0]))
        self.assertEqual(multi_miller_loop([first, second]), expected)  # type: ignore[list-item]

    def test_empty_product(self) -> None:
        """
        The empty product is one.
        """
        self.assertTrue(pairing_product_is_one([]))
