"""
The alt_bn128 (BN254) precompiles of EIP-196 and EIP-197, at the prices of
EIP-1108: point addition (0x06, 150 gas), scalar multiplication (0x07, 6000
gas) and the pairing check (0x08, 45000 + 34000 per pair).

Addition and multiplication run on Jacobian coordinates over the base field
(no inversion until the result is encoded); the pairing, G2 and the extension
fields are in L{nodex.evm.precompiles.bn254}.
"""

from nodex.evm.precompiles.bn254 import (
    N,
    P,
    G2Point,
    g2_in_subgroup,
    g2_is_on_curve,
    naf_digits,
    pairing_product_is_one,
)
from nodex.evm.precompiles.errors import PrecompileError
from nodex.evm.precompiles.words import read_uint

GAS_ECADD = 150
GAS_ECMUL = 6000
GAS_ECPAIRING_BASE = 45000
GAS_ECPAIRING_PER_POINT = 34000

PAIRING_INPUT_SIZE = 192

# The base field prime p and the prime order n of the group G1 (cofactor 1).
FIELD_MODULUS = P
CURVE_ORDER = N

# Jacobian coordinates (X, Y, Z) stand for the affine point (X/Z^2, Y/Z^3);
# Z == 0 is the point at infinity.
JacobianPoint = tuple[int, int, int]

INFINITY: JacobianPoint = (1, 1, 0)


def decode_g1(data: bytes, offset: int) -> JacobianPoint:
    """
    The G1 point encoded as two 32-byte coordinates at C{offset}; (0, 0)
    encodes the point at infinity.

    @raise PrecompileError: a coordinate is not below p, or the point is not
        on the curve y^2 = x^3 + 3.
    """
    p = FIELD_MODULUS
    x = read_uint(data, offset, 32)
    y = read_uint(data, offset + 32, 32)
    if x >= p or y >= p:
        raise PrecompileError("alt_bn128 G1 coordinate is not below the field modulus")
    if x == 0 and y == 0:
        return INFINITY
    if (y * y - x * x * x - 3) % p != 0:
        raise PrecompileError("alt_bn128 G1 point is not on the curve")
    return (x, y, 1)


def encode_g1(point: JacobianPoint) -> bytes:
    """
    The 64-byte affine encoding of C{point}, zeros for infinity.
    """
    affine = to_affine(point)
    if affine is None:
        return bytes(64)
    return affine[0].to_bytes(32, "big") + affine[1].to_bytes(32, "big")


def double(point: JacobianPoint) -> JacobianPoint:
    """
    2·C{point}, by the a = 0 doubling formulas (dbl-2009-l).
    """
    x, y, z = point
    if z == 0 or y == 0:
        return INFINITY
    p = FIELD_MODULUS
    a = x * x % p
    b = y * y % p
    c = b * b % p
    d = 2 * ((x + b) * (x + b) - a - c) % p
    e = 3 * a % p
    x3 = (e * e - 2 * d) % p
    y3 = (e * (d - x3) - 8 * c) % p
    z3 = 2 * y * z % p
    return (x3, y3, z3)


def add(first: JacobianPoint, second: JacobianPoint) -> JacobianPoint:
    """
    C{first} + C{second}, by the general Jacobian addition (add-2007-bl).
    """
    x1, y1, z1 = first
    x2, y2, z2 = second
    if z1 == 0:
        return second
    if z2 == 0:
        return first
    p = FIELD_MODULUS
    z1z1 = z1 * z1 % p
    z2z2 = z2 * z2 % p
    u1 = x1 * z2z2 % p
    u2 = x2 * z1z1 % p
    s1 = y1 * z2 * z2z2 % p
    s2 = y2 * z1 * z1z1 % p
    h = (u2 - u1) % p
    r = (s2 - s1) % p
    if h == 0:
        return double(first) if r == 0 else INFINITY
    hh = h * h % p
    hhh = h * hh % p
    v = u1 * hh % p
    x3 = (r * r - hhh - 2 * v) % p
    y3 = (r * (v - x3) - s1 * hhh) % p
    z3 = z1 * z2 * h % p
    return (x3, y3, z3)


def add_affine(first: JacobianPoint, x2: int, y2: int) -> JacobianPoint:
    """
    C{first} + (x2, y2) for a finite affine second point: the mixed
    addition, four multiplications cheaper than L{add}.
    """
    x1, y1, z1 = first
    if z1 == 0:
        return (x2, y2, 1)
    p = FIELD_MODULUS
    z1z1 = z1 * z1 % p
    h = (x2 * z1z1 - x1) % p
    r = (y2 * z1 * z1z1 - y1) % p
    if h == 0:
        return double(first) if r == 0 else INFINITY
    hh = h * h % p
    hhh = h * hh % p
    v = x1 * hh % p
    x3 = (r * r - hhh - 2 * v) % p
    y3 = (r * (v - x3) - y1 * hhh) % p
    return (x3, y3, z1 * h % p)


def to_affine(point: JacobianPoint) -> tuple[int, int] | None:
    """
    The affine coordinates of C{point}, or L{None} for infinity.
    """
    x, y, z = point
    if z == 0:
        return None
    p = FIELD_MODULUS
    z_inverse = pow(z, -1, p)
    z_inverse_squared = z_inverse * z_inverse % p
    return x * z_inverse_squared % p, y * z_inverse_squared * z_inverse % p


_WINDOW = 5


# The GLV endomorphism of G1: (x, y) -> (beta·x, y) is multiplication by
# lambda, beta and lambda being matching cube roots of unity mod p and mod n.
GLV_BETA = 0x59E26BCEA0D48BACD4F263F1ACDB5C4F5763473177FFFFFE
GLV_LAMBDA = 0xB3C4D79D41A917585BFC41088D8DAAA78B17EA66B99C90DD


def _glv_basis() -> tuple[tuple[int, int], tuple[int, int]]:
    """
    Two short vectors (a, b) with a + b·lambda = 0 mod n, from the extended
    Euclidean algorithm on n and lambda (Hankerson, Menezes and Vanstone,
    Guide to Elliptic Curve Cryptography, algorithm 3.74).
    """
    remainders, coefficients = [CURVE_ORDER, GLV_LAMBDA], [0, 1]
    while remainders[-1] * remainders[-1] >= CURVE_ORDER:
        quotient = remainders[-2] // remainders[-1]
        remainders.append(remainders[-2] - quotient * remainders[-1])
        coefficients.append(coefficients[-2] - quotient * coefficients[-1])
    # remainders[-2] is the last remainder at least sqrt(n).
    quotient = remainders[-2] // remainders[-1]
    after = (remainders[-2] - quotient * remainders[-1], coefficients[-2] - quotient * coefficients[-1])
    first = (remainders[-1], -coefficients[-1])
    before, after_vector = (remainders[-2], -coefficients[-2]), (after[0], -after[1])
    second = min(before, after_vector, key=lambda v: v[0] * v[0] + v[1] * v[1])
    return first, second


GLV_BASIS = _glv_basis()


def decompose_scalar(scalar: int) -> tuple[int, int]:
    """
    Split C{scalar} into (k1, k2), each about 128 bits and possibly
    negative, with k1 + k2·lambda = scalar mod n.
    """
    (a1, b1), (a2, b2) = GLV_BASIS
    n = CURVE_ORDER
    c1 = (b2 * scalar + n // 2) // n
    c2 = (-b1 * scalar + n // 2) // n
    return scalar - c1 * a1 - c2 * a2, -c1 * b1 - c2 * b2


def _odd_multiples(point: JacobianPoint) -> list[tuple[int, int]]:
    """
    P, 3P, ..., (2^(w-1) - 1)P for the window w, in affine coordinates.
    """
    multiples = [to_affine(point)]
    twice = double(point)
    current = point
    for _ in range((1 << (_WINDOW - 2)) - 1):
        current = add(current, twice)
        multiples.append(to_affine(current))
    return multiples  # type: ignore[return-value]


def multiply(point: JacobianPoint, scalar: int) -> JacobianPoint:
    """
    C{scalar}·C{point}: the scalar is split by the GLV endomorphism into two
    halves of about 128 bits, k1·P + k2·phi(P), run together as width-5 NAFs
    over precomputed odd multiples with mixed additions, so that half as
    many doublings are needed.
    """
    scalar %= CURVE_ORDER
    if scalar == 0 or point[2] == 0:
        return INFINITY
    p = FIELD_MODULUS
    multiples = _odd_multiples(point)
    images = [(GLV_BETA * x % p, y) for x, y in multiples]
    tables = []
    for half, table in zip(decompose_scalar(scalar), (multiples, images)):
        if half < 0:
            half, table = -half, [(x, p - y) for x, y in table]
        tables.append((naf_digits(half, _WINDOW), table))
    length = max(len(digits) for digits, _ in tables)
    padded = [([0] * (length - len(digits)) + digits, table) for digits, table in tables]
    result = INFINITY
    for position in range(length):
        result = double(result)
        for digits, table in padded:
            digit = digits[position]
            if digit > 0:
                x, y = table[digit >> 1]
                result = add_affine(result, x, y)
            elif digit < 0:
                x, y = table[(-digit) >> 1]
                result = add_affine(result, x, p - y)
    return result


def ecadd_gas(data: bytes) -> int:
    """
    The fixed price of an addition (EIP-1108).
    """
    return GAS_ECADD


def ecadd(data: bytes) -> bytes:
    """
    The sum of the two G1 points in the first 128 bytes (zero-filled).

    @raise PrecompileError: either point is invalid (see L{decode_g1}).
    """
    return encode_g1(add(decode_g1(data, 0), decode_g1(data, 64)))


def ecmul_gas(data: bytes) -> int:
    """
    The fixed price of a scalar multiplication (EIP-1108).
    """
    return GAS_ECMUL


def ecmul(data: bytes) -> bytes:
    """
    The G1 point in the first 64 bytes times the 256-bit scalar after it.

    @raise PrecompileError: the point is invalid (see L{decode_g1}).
    """
    return encode_g1(multiply(decode_g1(data, 0), read_uint(data, 64, 32)))


def ecpairing_gas(data: bytes) -> int:
    """
    45000 gas plus 34000 per (G1, G2) pair (EIP-1108).
    """
    return GAS_ECPAIRING_BASE + GAS_ECPAIRING_PER_POINT * (len(data) // PAIRING_INPUT_SIZE)


def decode_g2(data: bytes, offset: int) -> G2Point:
    """
    The G2 point at C{offset}: x then y, each an element a·i + b of the
    quadratic extension encoded as a then b (EIP-197); all zeros encode
    infinity, returned as L{None}.

    @raise PrecompileError: a coordinate is not below p, or the point is not
        on the twisted curve, or not in the subgroup of order n.
    """
    x_imaginary, x_real, y_imaginary, y_real = (
        read_uint(data, offset + 32 * i, 32) for i in range(4)
    )
    if max(x_imaginary, x_real, y_imaginary, y_real) >= FIELD_MODULUS:
        raise PrecompileError("alt_bn128 G2 coordinate is not below the field modulus")
    if x_imaginary == x_real == y_imaginary == y_real == 0:
        return None
    point = ((x_real, x_imaginary), (y_real, y_imaginary))
    if not g2_is_on_curve(point):
        raise PrecompileError("alt_bn128 G2 point is not on the twisted curve")
    if not g2_in_subgroup(point):
        raise PrecompileError("alt_bn128 G2 point is not in the subgroup of order n")
    return point


def ecpairing(data: bytes) -> bytes:
    """
    Whether the product of the pairings e(P_i, Q_i) of the given pairs is one,
    as a 32-byte word 1 or 0; empty input counts as a true check.  Pairs with
    a point at infinity contribute one but are validated like the others.

    @raise PrecompileError: the input is not a whole number of 192-byte
        pairs, or a point is invalid (see L{decode_g1} and L{decode_g2}).
    """
    if len(data) % PAIRING_INPUT_SIZE != 0:
        raise PrecompileError(
            f"alt_bn128 pairing input must be a multiple of {PAIRING_INPUT_SIZE} bytes, "
            f"got {len(data)}"
        )
    pairs = []
    for offset in range(0, len(data), PAIRING_INPUT_SIZE):
        g1 = decode_g1(data, offset)
        g2 = decode_g2(data, offset + 64)
        if g1[2] != 0 and g2 is not None:
            pairs.append(((g1[0], g1[1]), g2))
    return (1 if pairing_product_is_one(pairs) else 0).to_bytes(32, "big")


__all__ = [
    "CURVE_ORDER",
    "FIELD_MODULUS",
    "GLV_BASIS",
    "GLV_BETA",
    "GLV_LAMBDA",
    "GAS_ECADD",
    "GAS_ECMUL",
    "GAS_ECPAIRING_BASE",
    "GAS_ECPAIRING_PER_POINT",
    "INFINITY",
    "JacobianPoint",
    "add",
    "add_affine",
    "decode_g1",
    "decode_g2",
    "decompose_scalar",
    "double",
    "ecadd",
    "ecadd_gas",
    "ecmul",
    "ecmul_gas",
    "ecpairing",
    "ecpairing_gas",
    "encode_g1",
    "multiply",
    "naf_digits",
    "to_affine",
]
