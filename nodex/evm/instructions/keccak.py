"""
KECCAK256: the hash of a memory range.
"""

from nodex.crypto import keccak256
from nodex.evm.frame import Evm
from nodex.evm.gas import GAS_KECCAK256, GAS_KECCAK256_WORD
from nodex.evm.memory import expand_memory


def keccak(evm: Evm) -> None:
    """
    KECCAK256: push the Keccak-256 of C{size} bytes of memory from C{offset}.
    """
    # STACK
    stack = evm.stack
    offset = stack.pop()
    size = stack.pop()
    # GAS
    evm.gas_left -= GAS_KECCAK256 + GAS_KECCAK256_WORD * ((size + 31) // 32)
    expand_memory(evm, offset, size)
    # OPERATION
    stack.append(int.from_bytes(keccak256(evm.memory[offset : offset + size]), "big"))
    # PROGRAM COUNTER
    evm.pc += 1
