"""
The table the interpreter consults on a call: which addresses hold a
precompiled contract, what each charges and what it computes.
"""

from collections.abc import Callable
from typing import NamedTuple

from nodex.evm.precompiles.alt_bn128 import (
    ecadd,
    ecadd_gas,
    ecmul,
    ecmul_gas,
    ecpairing,
    ecpairing_gas,
)
from nodex.evm.precompiles.blake2f import blake2f, blake2f_gas
from nodex.evm.precompiles.ecrecover import ecrecover, ecrecover_gas
from nodex.evm.precompiles.hashes import (
    identity,
    identity_gas,
    ripemd160,
    ripemd160_gas,
    sha256,
    sha256_gas,
)
from nodex.evm.precompiles.modexp import modexp, modexp_gas
from nodex.evm.precompiles.point_evaluation import point_evaluation, point_evaluation_gas


class Precompile(NamedTuple):
    """
    One precompiled contract.

    The caller charges C{gas(data)} first (out of gas if the frame has less),
    then calls C{run(data)}; a L{nodex.evm.precompiles.errors.PrecompileError}
    from C{run} is an exceptional halt that consumes all the frame's gas.

    @ivar gas: the price of a call with this input.
    @ivar run: the output of a call with this input.
    """

    gas: Callable[[bytes], int]
    run: Callable[[bytes], bytes]


def precompile_address(number: int) -> bytes:
    """
    The 20-byte address 0x00...0N of precompile number C{number}.
    """
    return number.to_bytes(20, "big")


ECRECOVER_ADDRESS = precompile_address(0x01)
SHA256_ADDRESS = precompile_address(0x02)
RIPEMD160_ADDRESS = precompile_address(0x03)
IDENTITY_ADDRESS = precompile_address(0x04)
MODEXP_ADDRESS = precompile_address(0x05)
ECADD_ADDRESS = precompile_address(0x06)
ECMUL_ADDRESS = precompile_address(0x07)
ECPAIRING_ADDRESS = precompile_address(0x08)
BLAKE2F_ADDRESS = precompile_address(0x09)
POINT_EVALUATION_ADDRESS = precompile_address(0x0A)

PRECOMPILES: dict[bytes, Precompile] = {
    ECRECOVER_ADDRESS: Precompile(ecrecover_gas, ecrecover),
    SHA256_ADDRESS: Precompile(sha256_gas, sha256),
    RIPEMD160_ADDRESS: Precompile(ripemd160_gas, ripemd160),
    IDENTITY_ADDRESS: Precompile(identity_gas, identity),
    MODEXP_ADDRESS: Precompile(modexp_gas, modexp),
    ECADD_ADDRESS: Precompile(ecadd_gas, ecadd),
    ECMUL_ADDRESS: Precompile(ecmul_gas, ecmul),
    ECPAIRING_ADDRESS: Precompile(ecpairing_gas, ecpairing),
    BLAKE2F_ADDRESS: Precompile(blake2f_gas, blake2f),
    POINT_EVALUATION_ADDRESS: Precompile(point_evaluation_gas, point_evaluation),
}


__all__ = [
    "BLAKE2F_ADDRESS",
    "ECADD_ADDRESS",
    "ECMUL_ADDRESS",
    "ECPAIRING_ADDRESS",
    "ECRECOVER_ADDRESS",
    "IDENTITY_ADDRESS",
    "MODEXP_ADDRESS",
    "POINT_EVALUATION_ADDRESS",
    "PRECOMPILES",
    "RIPEMD160_ADDRESS",
    "SHA256_ADDRESS",
    "Precompile",
    "precompile_address",
]
