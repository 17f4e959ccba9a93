"""
Tests for L{nodex.evm.precompiles.point_evaluation}, the KZG point
evaluation precompile of EIP-4844 (address 0x0a).
"""

import hashlib
from importlib.resources import files

import ckzg
from twisted.trial.unittest import SynchronousTestCase

from nodex.evm.precompiles import PRECOMPILES, PrecompileError
from nodex.evm.precompiles.point_evaluation import (
    BLS_MODULUS,
    FIELD_ELEMENTS_PER_BLOB,
    kzg_commitment_to_versioned_hash,
    point_evaluation,
    point_evaluation_gas,
    trusted_setup,
)
from nodex.evm.precompiles.table import POINT_EVALUATION_ADDRESS, precompile_address

# A blob of the field elements 7i + 3, its commitment, and the proof that
# its polynomial takes the value y at z = 12345, made with ckzg's
# blob_to_kzg_commitment and compute_kzg_proof against the shipped setup.
VALID_INPUT = bytes.fromhex(
    "013587b782a808f18a3c68092fe20b5be30b56a1888b90eee8624e1d286d91db"
    "0000000000000000000000000000000000000000000000000000000000003039"
    "16aa0b5794168bcd486bd6ba6e64dc5d65d0b6f7386adcbc4a6a1b634b348dc5"
    "a7a7a893507182c9fa77009ce53c93a46655fb0c47317531270e93f0d68fa578"
    "3d235150b25ece77aa95520b84115571b62455c80ad074ba5b6a535b6a6f7a2147"
    "d9fca41aaff9467c37415e79e1265feb589059910c1f4c5aa0f2da27e6964b"
)

# A known-answer vector of c-kzg-4844's test suite, made against the
# mainnet ceremony's setup (tests/verify_kzg_proof/kzg-mainnet/
# verify_kzg_proof_case_correct_proof_31ebd010e6098750): z is the largest
# field element.
MAINNET_COMMITMENT = bytes.fromhex(
    "8f59a8d2a1a625a17f3fea0fe5eb8c896db3764f3185481bc22f91b4aaffcca25f26936857bc3a7c2539ea8ec3a952b7"
)
MAINNET_Z = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000000
MAINNET_Y = 0x1522A4A7F34E1EA350AE07C29C96C7E79655AA926122E95FE69FCBD932CA49E9
MAINNET_PROOF = bytes.fromhex(
    "a62ad71d14c5719385c0686f1871430475bf3a00f0aa3f7b8dd99a9abc2160744faf0070725e00b60ad9a026a15b1a8c"
)

EXPECTED_OUTPUT = bytes.fromhex(
    "0000000000000000000000000000000000000000000000000000000000001000"
    "73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001"
)

# The compressed point at infinity of G1: the commitment to the zero
# polynomial, and the proof of any of its values (which are all zero).
INFINITY = b"\xc0" + bytes(47)


def encode(z: int, y: int, commitment: bytes, proof: bytes, versioned_hash: bytes | None = None) -> bytes:
    """
    The 192-byte input for the given fields, with the commitment's own
    versioned hash unless C{versioned_hash} is given.
    """
    if versioned_hash is None:
        versioned_hash = kzg_commitment_to_versioned_hash(commitment)
    return versioned_hash + z.to_bytes(32, "big") + y.to_bytes(32, "big") + commitment + proof


class PointEvaluationTests(SynchronousTestCase):
    """
    Tests for L{point_evaluation} and L{point_evaluation_gas}.
    """

    def test_valid_proof(self) -> None:
        """
        A proof that verifies returns FIELD_ELEMENTS_PER_BLOB and BLS_MODULUS
        as two 32-byte words.
        """
        self.assertEqual(point_evaluation(VALID_INPUT), EXPECTED_OUTPUT)
        self.assertEqual(EXPECTED_OUTPUT[:32], FIELD_ELEMENTS_PER_BLOB.to_bytes(32, "big"))
        self.assertEqual(EXPECTED_OUTPUT[32:], BLS_MODULUS.to_bytes(32, "big"))

    def test_mainnet_vector(self) -> None:
        """
        c-kzg-4844's known-answer vector verifies: the shipped setup is the
        mainnet ceremony's, not one that only agrees with itself.
        """
        data = encode(MAINNET_Z, MAINNET_Y, MAINNET_COMMITMENT, MAINNET_PROOF)
        self.assertEqual(point_evaluation(data), EXPECTED_OUTPUT)

    def test_fresh_proof(self) -> None:
        """
        A proof ckzg computes now, for a different blob and point, verifies.
        """
        blob = b"".join((i * i % BLS_MODULUS).to_bytes(32, "big") for i in range(FIELD_ELEMENTS_PER_BLOB))
        commitment = ckzg.blob_to_kzg_commitment(blob, trusted_setup())
        z = BLS_MODULUS - 1
        proof, y = ckzg.compute_kzg_proof(blob, z.to_bytes(32, "big"), trusted_setup())
        data = encode(z, int.from_bytes(y, "big"), commitment, proof)
        self.assertEqual(point_evaluation(data), EXPECTED_OUTPUT)

    def test_zero_polynomial(self) -> None:
        """
        The zero polynomial, committed to by the point at infinity, is zero
        at any point, with the point at infinity as proof; any other value
        fails.
        """
        self.assertEqual(point_evaluation(encode(5, 0, INFINITY, INFINITY)), EXPECTED_OUTPUT)
        self.assertRaises(PrecompileError, point_evaluation, encode(5, 1, INFINITY, INFINITY))

    def test_gas(self) -> None:
        """
        The price is 50000 whatever the input, valid or not.
        """
        for data in (b"", VALID_INPUT, VALID_INPUT + b"\x00", b"\xff" * 1000):
            self.assertEqual(point_evaluation_gas(data), 50000)

    def test_wrong_length(self) -> None:
        """
        Input of any length but 192 bytes is an error, even a valid input
        with a byte added or removed.
        """
        for data in (b"", VALID_INPUT[:-1], VALID_INPUT + b"\x00", VALID_INPUT * 2):
            self.assertRaises(PrecompileError, point_evaluation, data)

    def test_versioned_hash_version(self) -> None:
        """
        A versioned hash whose version byte is not 0x01 is an error, even
        when the rest of it matches.
        """
        for version in (b"\x00", b"\x02"):
            data = version + VALID_INPUT[1:]
            self.assertRaises(PrecompileError, point_evaluation, data)

    def test_versioned_hash_of_other_commitment(self) -> None:
        """
        A versioned hash that is not the commitment's is an error.
        """
        other = kzg_commitment_to_versioned_hash(INFINITY)
        self.assertRaises(PrecompileError, point_evaluation, other + VALID_INPUT[32:])
        flipped = VALID_INPUT[:31] + bytes([VALID_INPUT[31] ^ 1]) + VALID_INPUT[32:]
        self.assertRaises(PrecompileError, point_evaluation, flipped)

    def test_versioned_hash(self) -> None:
        """
        The versioned hash is 0x01 then the last 31 bytes of the
        commitment's SHA-256.
        """
        commitment = VALID_INPUT[96:144]
        expected = b"\x01" + hashlib.sha256(commitment).digest()[1:]
        self.assertEqual(kzg_commitment_to_versioned_hash(commitment), expected)
        self.assertEqual(VALID_INPUT[:32], expected)

    def test_z_out_of_range(self) -> None:
        """
        z equal to or above the BLS modulus is an error.
        """
        for z in (BLS_MODULUS, BLS_MODULUS + 5, 2**256 - 1):
            self.assertRaises(PrecompileError, point_evaluation, encode(z, 0, INFINITY, INFINITY))

    def test_y_out_of_range(self) -> None:
        """
        y equal to or above the BLS modulus is an error, even where y minus
        the modulus would be the right value.
        """
        for y in (BLS_MODULUS, 2**256 - 1):
            self.assertRaises(PrecompileError, point_evaluation, encode(5, y, INFINITY, INFINITY))

    def test_wrong_value(self) -> None:
        """
        A valid proof checked against another value of y fails.
        """
        y = int.from_bytes(VALID_INPUT[64:96], "big")
        data = VALID_INPUT[:64] + ((y + 1) % BLS_MODULUS).to_bytes(32, "big") + VALID_INPUT[96:]
        self.assertRaises(PrecompileError, point_evaluation, data)

    def test_wrong_proof(self) -> None:
        """
        A proof of another statement, here the point at infinity, fails.
        """
        data = VALID_INPUT[:144] + INFINITY
        self.assertRaises(PrecompileError, point_evaluation, data)

    def test_proof_not_a_point(self) -> None:
        """
        A proof that is not the encoding of a point of G1 is an error, not
        an exception from the library.
        """
        for proof in (b"\xff" * 48, bytes(48), b"\x80" + b"\x01" * 47):
            self.assertRaises(PrecompileError, point_evaluation, VALID_INPUT[:144] + proof)

    def test_commitment_not_a_point(self) -> None:
        """
        A commitment that is not the encoding of a point of G1 is an error,
        even with its own versioned hash.
        """
        for commitment in (b"\xff" * 48, bytes(48)):
            self.assertRaises(PrecompileError, point_evaluation, encode(5, 0, commitment, INFINITY))

    def test_trusted_setup_file(self) -> None:
        """
        The shipped setup is package data, byte for byte the C{trusted_setup.txt}
        of ckzg 2.1.8's source distribution: 4096 G1 points, 65 G2 points.
        """
        text = (files("nodex.evm.precompiles") / "kzg_trusted_setup.txt").read_bytes()
        self.assertEqual(
            hashlib.sha256(text).hexdigest(), "d39b9f2d047cc9dca2de58f264b6a09448ccd34db967881a6713eacacf0f26b7"
        )
        self.assertEqual(text.split(b"\n")[:2], [b"4096", b"65"])

    def test_trusted_setup_loaded_once(self) -> None:
        """
        The trusted setup is loaded on first use and then reused.
        """
        self.assertIs(trusted_setup(), trusted_setup())

    def test_in_table(self) -> None:
        """
        The table maps address 0x0a to this contract.
        """
        self.assertEqual(POINT_EVALUATION_ADDRESS, precompile_address(0x0A))
        precompile = PRECOMPILES[POINT_EVALUATION_ADDRESS]
        self.assertEqual((precompile.gas(VALID_INPUT), precompile.run(VALID_INPUT)), (50000, EXPECTED_OUTPUT))
