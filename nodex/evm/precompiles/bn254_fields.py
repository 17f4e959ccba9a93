"""
The extension fields of the BN254 (alt_bn128) pairing, in plain Python
integers: Fp (the base field), Fp2 = Fp[i]/(i^2 + 1), Fp6 = Fp2[v]/(v^3 - xi)
with xi = 9 + i, and Fp12 = Fp6[w]/(w^2 - v).

Elements are tuples: an Fp2 element C{(a, b)} is a + b·i, an Fp6 element
three Fp2 coefficients of 1, v, v^2, an Fp12 element two Fp6 coefficients of
1, w.  Functions return reduced coordinates.
"""

P = 21888242871839275222246405745257275088696311157297823662689037894645226208583

Fp2 = tuple[int, int]
Fp6 = tuple[Fp2, Fp2, Fp2]
Fp12 = tuple[Fp6, Fp6]

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
FROBENIUS_FACTORS: dict[int, list[Fp2]] = {
    j: [fp2_pow(XI, k * (P**j - 1) // 6) for k in range(6)] for j in (1, 2, 3)
}


def fp12_frobenius(a: Fp12, power: int) -> Fp12:
    """
    a^(p^power) for power 1, 2 or 3.
    """
    factors = FROBENIUS_FACTORS[power]
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


__all__ = [
    "FROBENIUS_FACTORS",
    "FP12_ONE",
    "FP2_ONE",
    "FP2_ZERO",
    "FP6_ONE",
    "FP6_ZERO",
    "Fp12",
    "Fp2",
    "Fp6",
    "P",
    "XI",
    "fp12_conjugate",
    "fp12_cyclotomic_pow",
    "fp12_cyclotomic_square",
    "fp12_frobenius",
    "fp12_inverse",
    "fp12_mul",
    "fp12_mul_by_line",
    "fp12_pow",
    "fp12_square",
    "fp2_add",
    "fp2_conjugate",
    "fp2_inverse",
    "fp2_mul",
    "fp2_mul_by_xi",
    "fp2_neg",
    "fp2_pow",
    "fp2_scale",
    "fp2_square",
    "fp2_sub",
    "fp6_add",
    "fp6_inverse",
    "fp6_mul",
    "fp6_mul_by_01",
    "fp6_mul_by_v",
    "fp6_neg",
    "fp6_scale",
    "fp6_sub",
]
