"""
POINT_EVALUATION (address 0x0a): verify a KZG proof that a blob's polynomial
takes the value y at the point z, EIP-4844.

The input is exactly 192 bytes: the blob's versioned hash (32), z (32), y
(32), the KZG commitment (48) and the proof (48).  The versioned hash must be
C{0x01} followed by the last 31 bytes of the commitment's SHA-256, z and y
must be canonical field elements (below L{BLS_MODULUS}), and the proof must
verify; the output is then L{FIELD_ELEMENTS_PER_BLOB} and L{BLS_MODULUS} as
two 32-byte words.  Anything else is an error.  The price is 50000 gas
whatever the input.

The pairing check is C{ckzg}'s (the Python binding of c-kzg-4844, maintained
by the Ethereum Foundation), against the Ethereum KZG ceremony's trusted
setup that this package ships as C{kzg_trusted_setup.txt}, because the
library's wheel does not.  Loading the setup takes one to two seconds, so it
happens once, on the first call that gets as far as verifying a proof.
"""

import threading
from importlib.resources import as_file, files

# A C extension outside nodex.crypto: point evaluation is its only user.
import ckzg

from nodex.crypto import sha256
from nodex.evm.precompiles.errors import PrecompileError

GAS_POINT_EVALUATION = 50000

POINT_EVALUATION_INPUT_LENGTH = 192
VERSIONED_HASH_VERSION_KZG = b"\x01"
FIELD_ELEMENTS_PER_BLOB = 4096
BLS_MODULUS = 0x73EDA753299D7D483339D80809A1D80553BDA402FFFE5BFEFFFFFFFF00000001

TRUSTED_SETUP_NAME = "kzg_trusted_setup.txt"

POINT_EVALUATION_OUTPUT = FIELD_ELEMENTS_PER_BLOB.to_bytes(32, "big") + BLS_MODULUS.to_bytes(32, "big")

_settings: object | None = None
_settings_lock = threading.Lock()


def trusted_setup() -> object:
    """
    The ceremony's trusted setup as C{ckzg} holds it, loaded on first use.

    Block execution runs in a thread pool, so the first load is guarded: two
    threads never both spend the seconds it takes.

    @return: the opaque settings object C{ckzg}'s functions take.
    """
    global _settings
    with _settings_lock:
        if _settings is None:
            with as_file(files("nodex.evm.precompiles") / TRUSTED_SETUP_NAME) as path:
                # 0: no precomputation; it only speeds up computing cell
                # proofs (PeerDAS), which nodex never does.
                _settings = ckzg.load_trusted_setup(str(path), 0)
        return _settings


def kzg_commitment_to_versioned_hash(commitment: bytes) -> bytes:
    """
    The versioned hash of a blob with KZG commitment C{commitment}: the
    version byte 0x01 then the last 31 bytes of the commitment's SHA-256.
    """
    return VERSIONED_HASH_VERSION_KZG + sha256(commitment)[1:]


def point_evaluation_gas(data: bytes) -> int:
    """
    50000 gas, whatever the input.
    """
    return GAS_POINT_EVALUATION


def point_evaluation(data: bytes) -> bytes:
    """
    Verify that the blob committed to evaluates to y at z.

    @param data: versioned hash, z, y, commitment and proof, 192 bytes.
    @return: L{FIELD_ELEMENTS_PER_BLOB} and L{BLS_MODULUS}, two 32-byte words.
    @raise PrecompileError: the input is not 192 bytes, the versioned hash
        does not match the commitment, z or y is not below L{BLS_MODULUS},
        a point is not a valid compressed G1 point, or the proof fails.
    """
    if len(data) != POINT_EVALUATION_INPUT_LENGTH:
        raise PrecompileError(f"point evaluation input is {len(data)} bytes, not 192")
    versioned_hash = data[:32]
    z = data[32:64]
    y = data[64:96]
    commitment = data[96:144]
    proof = data[144:192]
    if kzg_commitment_to_versioned_hash(commitment) != versioned_hash:
        raise PrecompileError("versioned hash does not match the commitment")
    if int.from_bytes(z, "big") >= BLS_MODULUS or int.from_bytes(y, "big") >= BLS_MODULUS:
        raise PrecompileError("z or y is not a field element")
    try:
        valid = ckzg.verify_kzg_proof(commitment, z, y, proof, trusted_setup())
    except RuntimeError as error:
        # c-kzg-4844 refuses a commitment or proof that is not a point of G1.
        raise PrecompileError(f"invalid commitment or proof: {error}") from error
    if not valid:
        raise PrecompileError("the KZG proof does not verify")
    return POINT_EVALUATION_OUTPUT


__all__ = [
    "BLS_MODULUS",
    "FIELD_ELEMENTS_PER_BLOB",
    "GAS_POINT_EVALUATION",
    "POINT_EVALUATION_INPUT_LENGTH",
    "kzg_commitment_to_versioned_hash",
    "point_evaluation",
    "point_evaluation_gas",
    "trusted_setup",
]
