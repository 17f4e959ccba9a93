"""
The BN254 (alt_bn128) curve and its optimal ate pairing, for the precompiles
of EIP-196 and EIP-197, in plain Python integers.

Fields: Fp (the base field), Fp2 = Fp[i]/(i^2 + 1), Fp6 = Fp2[v]/(v^3 - xi)
with xi = 9 + i, and Fp12 = Fp6[w]/(w^2 - v).  Elements are tuples: an Fp2
element C{(a, b)} is a + b·i, an Fp6 element three Fp2 coefficients of
1, v, v^2, an Fp12 element two Fp6 coefficients of 1, w.

G1 is y^2 = x^3 + 3 over Fp; G2 is the order-n subgroup of the sextic twist
y^2 = x^3 + 3/xi over Fp2, embedded in the curve over Fp12 by
(x, y) -> (x·w^2, y·w^3).  Points are affine tuples and L{None} is the point
at infinity: in CPython one modular inversion costs less than the extra
multiplications of projective formulas.

The pairing is the optimal ate pairing with loop count 6u + 2 (u the BN
parameter), the Miller loop run on the twist with sparse line values, and one
final exponentiation for a whole product of Miller loops.
"""

P = 21888242871839275222246405745257275088696311157297823662689037894645226208583
N = 21888242871839275222246405745257275088548364400416034343698204186575808495617
BN_U = 4965661367192848881
ATE_LOOP_COUNT = 6 * BN_U + 2

Fp2 = tuple[int, int]
Fp6 = tuple[Fp2, Fp2, Fp2]
Fp12 = tuple[Fp6, Fp6]
G1Point = tuple[int, int] | None
G2Point = tuple[Fp2, Fp2] | None

FP2_ZERO: Fp2 = (0, 0)
FP2_ONE: Fp2 = (1, 0)
FP6_ZERO: Fp6 = (FP2_ZERO, FP2_ZERO, FP2_ZERO)
FP6_ONE: Fp6 = (FP2_ONE, FP2_ZERO, FP2_ZERO)
FP12_ONE: Fp12 = (FP6_ONE, FP6_ZERO)

# -- Fp2 ---------------------------------------------------------------------


def fp2_add(a: Fp2, b: Fp2) -> Fp2:
    """
    a + b in Fp2.
    """
    return ((a[0] + b[0]) % P, (a[1] + b[1]) % P)


def fp2_sub(a: Fp2, b: Fp2) -> Fp2:
    """
    a - b in Fp2.
    """
    return ((a[0] - b[0]) % P, (a[1] - b[1]) % P)


def fp2_neg(a: Fp2) -> Fp2:
    """
    -a in Fp2.
    """
    return (-a[0] % P, -a[1] % P)


def fp2_mul(a: Fp2, b: Fp2) -> Fp2:
    """
    a·b in Fp2 (three base-field multiplications, Karatsuba).
    """
    a0, a1 = a
    b0, b1 = b
    t0 = a0 * b0
    t1 = a1 * b1
    return ((t0 - t1) % P, ((a0 + a1) * (b0 + b1) - t0 - t1) % P)


def fp2_square(a: Fp2) -> Fp2:
    """
    a^2 in Fp2.
    """
    a0, a1 = a
    return ((a0 + a1) * (a0 - a1) % P, 2 * a0 * a1 % P)


def fp2_scale(a: Fp2, k: int) -> Fp2:
    """
    a·k for k in the base field.
    """
    return (a[0] * k % P, a[1] * k % P)


def fp2_mul_by_xi(a: Fp2) -> Fp2:
    """
    a·(9 + i), the non-residue that defines Fp6.
    """
    a0, a1 = a
    return ((9 * a0 - a1) % P, (a0 + 9 * a1) % P)


def fp2_conjugate(a: Fp2) -> Fp2:
    """
    The conjugate a0 - a1·i, which is also a^p.
    """
    return (a[0], -a[1] % P)


def fp2_inverse(a: Fp2) -> Fp2:
    """
    1/a in Fp2 (a nonzero).
    """
    a0, a1 = a
    norm_inverse = pow(a0 * a0 + a1 * a1, -1, P)
    return (a0 * norm_inverse % P, -a1 * norm_inverse % P)


def fp2_pow(a: Fp2, exponent: int) -> Fp2:
    """
    a^exponent in Fp2, by square-and-multiply.
    """
    result = FP2_ONE
    for bit in bin(exponent)[2:]:
        result = fp2_square(result)
        if bit == "1":
            result = fp2_mul(result, a)
    return result


# -- Fp6 and Fp12 ----------------------------------------------------------------


def fp6_add(a: Fp6, b: Fp6) -> Fp6:
    """
    a + b in Fp6.
    """
    return (fp2_add(a[0], b[0]), fp2_add(a[1], b[1]), fp2_add(a[2], b[2]))


def fp6_sub(a: Fp6, b: Fp6) -> Fp6:
    """
    a - b in Fp6.
    """
    return (fp2_sub(a[0], b[0]), fp2_sub(a[1], b[1]), fp2_sub(a[2], b[2]))


def fp6_neg(a: Fp6) -> Fp6:
    """
    -a in Fp6.
    """
    return (fp2_neg(a[0]), fp2_neg(a[1]), fp2_neg(a[2]))


def fp6_mul(a: Fp6, b: Fp6) -> Fp6:
    """
    a·b in Fp6 (six Fp2 multiplications).
    """
    a0, a1, a2 = a
    b0, b1, b2 = b
    v0 = fp2_mul(a0, b0)
    v1 = fp2_mul(a1, b1)
    v2 = fp2_mul(a2, b2)
    t = fp2_sub(fp2_mul(fp2_add(a1, a2), fp2_add(b1, b2)), fp2_add(v1, v2))
    c0 = fp2_add(v0, fp2_mul_by_xi(t))
    t = fp2_sub(fp2_mul(fp2_add(a0, a1), fp2_add(b0, b1)), fp2_add(v0, v1))
    c1 = fp2_add(t, fp2_mul_by_xi(v2))
    t = fp2_sub(fp2_mul(fp2_add(a0, a2), fp2_add(b0, b2)), fp2_add(v0, v2))
    c2 = fp2_add(t, v1)
    return (c0, c1, c2)


def fp6_mul_by_v(a: Fp6) -> Fp6:
    """
    a·v in Fp6 (v^3 = xi).
    """
    return (fp2_mul_by_xi(a[2]), a[0], a[1])


def fp6_mul_by_01(a: Fp6, b0: Fp2, b1: Fp2) -> Fp6:
    """
    a·(b0 + b1·v) in Fp6, for the sparse factors of line values.
    """
    a0, a1, a2 = a
    return (
        fp2_add(fp2_mul(a0, b0), fp2_mul_by_xi(fp2_mul(a2, b1))),
        fp2_add(fp2_mul(a0, b1), fp2_mul(a1, b0)),
        fp2_add(fp2_mul(a1, b1), fp2_mul(a2, b0)),
    )


def fp6_scale(a: Fp6, k: int) -> Fp6:
    """
    a·k for k in the base field.
    """
    return (fp2_scale(a[0], k), fp2_scale(a[1], k), fp2_scale(a[2], k))


def fp6_inverse(a: Fp6) -> Fp6:
    """
    1/a in Fp6 (a nonzero).
    """
    a0, a1, a2 = a
    t0 = fp2_sub(fp2_square(a0), fp2_mul_by_xi(fp2_mul(a1, a2)))
    t1 = fp2_sub(fp2_mul_by_xi(fp2_square(a2)), fp2_mul(a0, a1))
    t2 = fp2_sub(fp2_square(a1), fp2_mul(a0, a2))
    norm = fp2_add(fp2_mul(a0, t0), fp2_mul_by_xi(fp2_add(fp2_mul(a2, t1), fp2_mul(a1, t2))))
    norm_inverse = fp2_inverse(norm)
    return (fp2_mul(t0, norm_inverse), fp2_mul(t1, norm_inverse), fp2_mul(t2, norm_inverse))


def fp12_mul(a: Fp12, b: Fp12) -> Fp12:
    """
    a·b in Fp12 (three Fp6 multiplications).
    """
    a0, a1 = a
    b0, b1 = b
    t0 = fp6_mul(a0, b0)
    t1 = fp6_mul(a1, b1)
    middle = fp6_sub(fp6_mul(fp6_add(a0, a1), fp6_add(b0, b1)), fp6_add(t0, t1))
    return (fp6_add(t0, fp6_mul_by_v(t1)), middle)


def fp12_square(a: Fp12) -> Fp12:
    """
    a^2 in Fp12 (two Fp6 multiplications, complex squaring).
    """
    a0, a1 = a
    t = fp6_mul(a0, a1)
    c0 = fp6_mul(fp6_add(a0, a1), fp6_add(a0, fp6_mul_by_v(a1)))
    c0 = fp6_sub(c0, fp6_add(t, fp6_mul_by_v(t)))
    return (c0, fp6_add(t, t))


def fp12_conjugate(a: Fp12) -> Fp12:
    """
    a0 - a1·w, which is a^(p^6).
    """
    return (a[0], fp6_neg(a[1]))


def fp12_inverse(a: Fp12) -> Fp12:
    """
    1/a in Fp12 (a nonzero).
    """
    a0, a1 = a
    norm = fp6_sub(fp6_mul(a0, a0), fp6_mul_by_v(fp6_mul(a1, a1)))
    norm_inverse = fp6_inverse(norm)
    return (fp6_mul(a0, norm_inverse), fp6_neg(fp6_mul(a1, norm_inverse)))


def fp12_mul_by_line(f: Fp12, y_p: int, c1: Fp2, c3: Fp2) -> Fp12:
    """
    f·l for a line value l = y_p + c1·w + c3·w^3 (y_p in the base field),
    the shape every line of the Miller loop has.
    """
    f0, f1 = f
    # l = L0 + L1·w with L0 = (y_p, 0, 0) and L1 = (c1, c3, 0).
    f1_l1 = fp6_mul_by_01(f1, c1, c3)
    f0_l1 = fp6_mul_by_01(f0, c1, c3)
    return (
        fp6_add(fp6_scale(f0, y_p), fp6_mul_by_v(f1_l1)),
        fp6_add(f0_l1, fp6_scale(f1, y_p)),
    )


def _coefficients(a: Fp12) -> list[Fp2]:
    """
    The six Fp2 coefficients g_0..g_5 of a = sum g_k·w^k.
    """
    (g0, g2, g4), (g1, g3, g5) = a
    return [g0, g1, g2, g3, g4, g5]


def _from_coefficients(g: list[Fp2]) -> Fp12:
    """
    The Fp12 element sum g_k·w^k.
    """
    return ((g[0], g[2], g[4]), (g[1], g[3], g[5]))


XI: Fp2 = (9, 1)

# w^(k·(p^j - 1)) = xi^(k·(p^j - 1)/6): the factors by which the Frobenius
# map x -> x^(p^j) multiplies the coefficient of w^k.
_FROBENIUS_FACTORS: dict[int, list[Fp2]] = {
    j: [fp2_pow(XI, k * (P**j - 1) // 6) for k in range(6)] for j in (1, 2, 3)
}


def fp12_frobenius(a: Fp12, power: int) -> Fp12:
    """
    a^(p^power) for power 1, 2 or 3.
    """
    factors = _FROBENIUS_FACTORS[power]
    coefficients = _coefficients(a)
    if power % 2 == 1:
        coefficients = [fp2_conjugate(g) for g in coefficients]
    return _from_coefficients([fp2_mul(g, f) for g, f in zip(coefficients, factors)])


def fp12_pow(a: Fp12, exponent: int) -> Fp12:
    """
    a^exponent in Fp12, by square-and-multiply.
    """
    result = FP12_ONE
    for bit in bin(exponent)[2:]:
        result = fp12_square(result)
        if bit == "1":
            result = fp12_mul(result, a)
    return result


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
    factors = _FROBENIUS_FACTORS[1]
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


def _fp4_square(x: Fp2, y: Fp2) -> tuple[Fp2, Fp2]:
    """
    (x + y·s)^2 in Fp4 = Fp2[s]/(s^2 - xi), s being w^3.
    """
    xx = fp2_square(x)
    yy = fp2_square(y)
    return fp2_add(xx, fp2_mul_by_xi(yy)), fp2_sub(fp2_square(fp2_add(x, y)), fp2_add(xx, yy))


def fp12_cyclotomic_square(f: Fp12) -> Fp12:
    """
    f^2 for f in the cyclotomic subgroup (f^(p^6 + 1) = 1, as after the easy
    part of the final exponentiation), by Granger and Scott's formula.

    Seen over Fp4 = Fp2[s] with s = w^3, f = A + B·w + C·w^2 and
    f^2 = (3A^2 - 2·conj(A)) + (3s·C^2 + 2·conj(B))·w + (3B^2 - 2·conj(C))·w^2,
    where conj(x + y·s) = x - y·s is the p^6-power map: three Fp4 squarings
    instead of two Fp6 multiplications.
    """
    (g0, g2, g4), (g1, g3, g5) = f
    a0, a1 = _fp4_square(g0, g3)
    b0, b1 = _fp4_square(g1, g4)
    c0, c1 = _fp4_square(g2, g5)
    h0 = fp2_sub(fp2_scale(a0, 3), fp2_scale(g0, 2))
    h3 = fp2_add(fp2_scale(a1, 3), fp2_scale(g3, 2))
    h1 = fp2_add(fp2_scale(fp2_mul_by_xi(c1), 3), fp2_scale(g1, 2))
    h4 = fp2_sub(fp2_scale(c0, 3), fp2_scale(g4, 2))
    h2 = fp2_sub(fp2_scale(b0, 3), fp2_scale(g2, 2))
    h5 = fp2_add(fp2_scale(b1, 3), fp2_scale(g5, 2))
    return ((h0, h2, h4), (h1, h3, h5))


def fp12_cyclotomic_pow(f: Fp12, exponent: int) -> Fp12:
    """
    f^exponent for f in the cyclotomic subgroup, squaring with
    L{fp12_cyclotomic_square}.
    """
    result = FP12_ONE
    for bit in bin(exponent)[2:]:
        result = fp12_cyclotomic_square(result)
        if bit == "1":
            result = fp12_mul(result, f)
    return result


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
    "FP12_ONE",
    "HARD_EXPONENT",
    "N",
    "P",
    "final_exponentiation",
    "fp12_frobenius",
    "fp12_conjugate",
    "fp12_cyclotomic_pow",
    "fp12_cyclotomic_square",
    "fp12_inverse",
    "fp12_mul",
    "fp12_pow",
    "fp12_square",
    "fp2_inverse",
    "fp2_mul",
    "g2_add",
    "g2_in_subgroup",
    "g2_is_on_curve",
    "g2_multiply",
    "g2_negate",
    "g2_psi",
    "miller_loop",
    "naf_digits",
    "multi_miller_loop",
    "pairing_product_is_one",
]
