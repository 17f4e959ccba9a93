"""
The BN254 (alt_bn128) curve's group G2 and its optimal ate pairing, for the
precompiles of EIP-196 and EIP-197, over the fields of
L{nodex.evm.precompiles.bn254_fields}.

G1 is y^2 = x^3 + 3 over Fp; G2 is the order-n subgroup of the sextic twist
y^2 = x^3 + 3/xi over Fp2, embedded in the curve over Fp12 by
(x, y) -> (x·w^2, y·w^3).  Points are affine tuples and L{None} is the point
at infinity: in CPython one modular inversion costs less than the extra
multiplications of projective formulas.

The pairing is the optimal ate pairing with loop count 6u + 2 (u the BN
parameter), the Miller loop run on the twist with sparse line values, and one
final exponentiation for a whole product of Miller loops.
"""

from nodex.evm.precompiles.bn254_fields import (
    FP12_ONE,
    FP2_ZERO,
    FROBENIUS_FACTORS,
    Fp12,
    Fp2,
    P,
    XI,
    fp12_conjugate,
    fp12_cyclotomic_pow,
    fp12_cyclotomic_square,
    fp12_frobenius,
    fp12_inverse,
    fp12_mul,
    fp12_mul_by_line,
    fp12_square,
    fp2_add,
    fp2_conjugate,
    fp2_inverse,
    fp2_mul,
    fp2_neg,
    fp2_scale,
    fp2_square,
    fp2_sub,
)

N = 21888242871839275222246405745257275088548364400416034343698204186575808495617
BN_U = 4965661367192848881
ATE_LOOP_COUNT = 6 * BN_U + 2

G1Point = tuple[int, int] | None
G2Point = tuple[Fp2, Fp2] | None

# -- G2 --------------------------------------------------------------------------

B2: Fp2 = fp2_mul((3, 0), fp2_inverse(XI))


def g2_is_on_curve(point: G2Point) -> bool:
    """
    Whether C{point} lies on the twist y^2 = x^3 + 3/xi (infinity does).
    """
    if point is None:
        return True
    x, y = point
    return fp2_square(y) == fp2_add(fp2_mul(fp2_square(x), x), B2)


def g2_add(first: G2Point, second: G2Point) -> G2Point:
    """
    first + second on the twist.
    """
    if first is None:
        return second
    if second is None:
        return first
    (x1, y1), (x2, y2) = first, second
    if x1 == x2:
        if y1 != y2 or y1 == FP2_ZERO:
            return None
        slope = fp2_mul(fp2_scale(fp2_square(x1), 3), fp2_inverse(fp2_scale(y1, 2)))
    else:
        slope = fp2_mul(fp2_sub(y2, y1), fp2_inverse(fp2_sub(x2, x1)))
    x3 = fp2_sub(fp2_sub(fp2_square(slope), x1), x2)
    y3 = fp2_sub(fp2_mul(slope, fp2_sub(x1, x3)), y1)
    return (x3, y3)


def naf_digits(scalar: int, window: int = 5) -> list[int]:
    """
    The width-C{window} non-adjacent form of a positive C{scalar}, most
    significant digit first: odd digits below 2^(window-1) in absolute
    value, each followed by at least C{window - 1} zeros.
    """
    digits = []
    modulus = 1 << window
    while scalar:
        if scalar & 1:
            digit = scalar % modulus
            if digit >= modulus >> 1:
                digit -= modulus
            scalar -= digit
        else:
            digit = 0
        digits.append(digit)
        scalar >>= 1
    digits.reverse()
    return digits


def g2_negate(point: G2Point) -> G2Point:
    """
    The opposite of C{point} on the twist.
    """
    return None if point is None else (point[0], fp2_neg(point[1]))


def g2_multiply(point: G2Point, scalar: int) -> G2Point:
    """
    scalar·point on the twist (no reduction of the scalar: the point may lie
    outside the order-n subgroup), with a width-4 NAF of the scalar and the
    precomputed odd multiples P, 3P, 5P, 7P.
    """
    if point is None or scalar == 0:
        return None
    twice = g2_add(point, point)
    odd_multiples = [point]
    for _ in range(3):
        odd_multiples.append(g2_add(odd_multiples[-1], twice))
    result: G2Point = None
    for digit in naf_digits(scalar, 4):
        result = g2_add(result, result)
        if digit > 0:
            result = g2_add(result, odd_multiples[digit >> 1])
        elif digit < 0:
            result = g2_add(result, g2_negate(odd_multiples[(-digit) >> 1]))
    return result


def g2_in_subgroup(point: G2Point) -> bool:
    """
    Whether C{point} (on the twist) has order dividing n; the twist's group
    is larger.

    Rather than n·Q = infinity (a 254-bit multiplication), the test of
    Dai, Lin, Zhao and Zhou (eprint 2022/348) for BN curves whose u is not
    4 mod 13 nor 92 mod 97, as BN254's is not: Q is in the subgroup exactly
    when [u+1]Q + psi([u]Q) + psi^2([u]Q) = psi^3([2u]Q), psi being
    L{g2_frobenius}.  That costs one 63-bit multiplication.
    """
    if point is None:
        return True
    u_point = g2_multiply(point, BN_U)
    psi_u = g2_psi(u_point)
    psi2_u = g2_psi(psi_u)
    left = g2_add(g2_add(g2_add(u_point, point), psi_u), psi2_u)
    right = g2_psi(g2_psi(g2_psi(g2_add(u_point, u_point))))
    return left == right


def g2_psi(point: G2Point) -> G2Point:
    """
    L{g2_frobenius} extended to the point at infinity.
    """
    return None if point is None else g2_frobenius(point)


def g2_frobenius(point: tuple[Fp2, Fp2]) -> tuple[Fp2, Fp2]:
    """
    The image on the twist of the p-power Frobenius of the untwisted point.
    """
    x, y = point
    factors = FROBENIUS_FACTORS[1]
    return (fp2_mul(fp2_conjugate(x), factors[2]), fp2_mul(fp2_conjugate(y), factors[3]))


# -- the pairing -----------------------------------------------------------------------


def _line_step(
    f: Fp12, t: tuple[Fp2, Fp2], q: tuple[Fp2, Fp2] | None, p: tuple[int, int]
) -> tuple[Fp12, tuple[Fp2, Fp2]]:
    """
    Multiply C{f} by the line through T and Q (the tangent at T when C{q} is
    L{None}) evaluated at P, and return it with T + Q (or 2T).

    The untwisted line is y_P - lambda·x_P·w + (lambda·x_T - y_T)·w^3.
    """
    x_t, y_t = t
    if q is None:
        slope = fp2_mul(fp2_scale(fp2_square(x_t), 3), fp2_inverse(fp2_scale(y_t, 2)))
        x_other = x_t
    else:
        slope = fp2_mul(fp2_sub(q[1], y_t), fp2_inverse(fp2_sub(q[0], x_t)))
        x_other = q[0]
    x_p, y_p = p
    c1 = fp2_scale(fp2_neg(slope), x_p)
    c3 = fp2_sub(fp2_mul(slope, x_t), y_t)
    x_new = fp2_sub(fp2_sub(fp2_square(slope), x_t), x_other)
    y_new = fp2_sub(fp2_mul(slope, fp2_sub(x_t, x_new)), y_t)
    return fp12_mul_by_line(f, y_p, c1, c3), (x_new, y_new)


def miller_loop(q: tuple[Fp2, Fp2], p: tuple[int, int]) -> Fp12:
    """
    The Miller loop of the optimal ate pairing for G2 point C{q} and G1 point
    C{p}, both finite, without the final exponentiation.
    """
    return multi_miller_loop([(p, q)])


def multi_miller_loop(pairs: list[tuple[tuple[int, int], tuple[Fp2, Fp2]]]) -> Fp12:
    """
    The product of the Miller loops of the (finite) pairs (P_i, Q_i), run
    side by side so that the accumulator is squared once per step for all
    of them.

    After the loop over 6u + 2 come the two lines of the optimal ate
    pairing: through T = [6u+2]Q and pi(Q), then through T + pi(Q) and
    -pi^2(Q), where pi is the p-power Frobenius.
    """
    f = FP12_ONE
    points = [q for _, q in pairs]
    for bit in bin(ATE_LOOP_COUNT)[3:]:
        f = fp12_square(f)
        for index, (p, q) in enumerate(pairs):
            f, t = _line_step(f, points[index], None, p)
            if bit == "1":
                f, t = _line_step(f, t, q, p)
            points[index] = t
    for index, (p, q) in enumerate(pairs):
        q1 = g2_frobenius(q)
        f, t = _line_step(f, points[index], q1, p)
        q2 = g2_frobenius(q1)
        f, _ = _line_step(f, t, (q2[0], fp2_neg(q2[1])), p)
    return f


# (p^4 - p^2 + 1) / n, the hard part of the final exponent.
HARD_EXPONENT = (P**4 - P**2 + 1) // N


def final_exponentiation(f: Fp12) -> Fp12:
    """
    f^((p^12 - 1) / n).

    The easy part, (p^6 - 1)(p^2 + 1), costs a conjugation, an inversion and
    a Frobenius map.  Its result lies in the cyclotomic subgroup, where the
    conjugate is the inverse; there the hard part, written in base p as
    l0 + l1·p + l2·p^2 + l3·p^3 with l3 = 1, l2 = 6u^2 + 1,
    l1 = -(36u^3 + 18u^2 + 12u) + 1 and l0 = -(36u^3 + 30u^2 + 18u + 2),
    costs three exponentiations by the 63-bit u, a few small powers and three
    Frobenius maps instead of one exponentiation by a 762-bit number, all
    with the cheaper squaring of the cyclotomic subgroup.
    """
    f = fp12_mul(fp12_conjugate(f), fp12_inverse(f))
    f = fp12_mul(fp12_frobenius(f, 2), f)
    f_u = fp12_cyclotomic_pow(f, BN_U)
    f_u2 = fp12_cyclotomic_pow(f_u, BN_U)
    f_u3 = fp12_cyclotomic_pow(f_u2, BN_U)
    f_36u3 = fp12_cyclotomic_pow(f_u3, 36)
    l0 = fp12_conjugate(
        fp12_mul(
            fp12_mul(f_36u3, fp12_cyclotomic_pow(f_u2, 30)),
            fp12_mul(fp12_cyclotomic_pow(f_u, 18), fp12_cyclotomic_square(f)),
        )
    )
    l1 = fp12_mul(
        fp12_conjugate(
            fp12_mul(fp12_mul(f_36u3, fp12_cyclotomic_pow(f_u2, 18)), fp12_cyclotomic_pow(f_u, 12))
        ),
        f,
    )
    l2 = fp12_mul(fp12_cyclotomic_pow(f_u2, 6), f)
    result = fp12_mul(l0, fp12_frobenius(l1, 1))
    result = fp12_mul(result, fp12_frobenius(l2, 2))
    return fp12_mul(result, fp12_frobenius(f, 3))


def pairing_product_is_one(pairs: list[tuple[tuple[int, int], tuple[Fp2, Fp2]]]) -> bool:
    """
    Whether the product of e(P_i, Q_i) over the (finite, validated) pairs is
    one; the empty product is.
    """
    return final_exponentiation(multi_miller_loop(pairs)) == FP12_ONE


__all__ = [
    "ATE_LOOP_COUNT",
    "B2",
    "BN_U",
    "G1Point",
    "G2Point",
    "HARD_EXPONENT",
    "N",
    "P",
    "final_exponentiation",
    "g2_add",
    "g2_frobenius",
    "g2_in_subgroup",
    "g2_is_on_curve",
    "g2_multiply",
    "g2_negate",
    "g2_psi",
    "miller_loop",
    "multi_miller_loop",
    "naf_digits",
    "pairing_product_is_one",
]
