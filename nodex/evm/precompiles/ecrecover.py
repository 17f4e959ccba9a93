"""
ECRECOVER (address 0x01): the address that signed a digest.

Input is four 32-byte words, hash, v, r and s, zero-filled when short.  Bad
signatures are not errors: the contract then returns empty output, and the
caller is charged the fixed price either way (Yellow Paper, appendix E).
"""

from nodex.crypto import SECP256K1_N, SignatureError, recover_address
from nodex.evm.precompiles.words import read_padded, read_uint

GAS_ECRECOVER = 3000


def ecrecover_gas(data: bytes) -> int:
    """
    The fixed price of a recovery, whatever the input.
    """
    return GAS_ECRECOVER


def ecrecover(data: bytes) -> bytes:
    """
    Recover the signer of C{hash} from C{(v, r, s)}.

    @param data: C{hash || v || r || s}, each a 32-byte big-endian word.
    @return: the signer's address left-padded to 32 bytes, or empty output
        when v is not exactly 27 or 28, r or s is outside [1, n-1], or no key
        can be recovered.
    """
    message_hash = read_padded(data, 0, 32)
    v = read_uint(data, 32, 32)
    r = read_uint(data, 64, 32)
    s = read_uint(data, 96, 32)
    if v not in (27, 28):
        return b""
    if not (0 < r < SECP256K1_N and 0 < s < SECP256K1_N):
        return b""
    try:
        address = recover_address(message_hash, v - 27, r, s)
    except SignatureError:
        return b""
    return bytes(12) + address


__all__ = ["GAS_ECRECOVER", "ecrecover", "ecrecover_gas"]
