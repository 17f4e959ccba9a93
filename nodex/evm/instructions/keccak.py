"""
KECCAK256: the hash of a memory range.
"""

from nodex.crypto import keccak256
from nodex.evm.frame import Evm
from nodex.evm.gas import GAS_KECCAK256, GAS_KECCAK256_WORD
from nodex.evm.memory import expand_memory

WORDS_KEPT = 4_096
"""The most 64-byte inputs whose hashes L{keccak} keeps, shared by every
frame of the process (about 1 MiB; all are dropped when it is full).  A
Solidity mapping's slot is the Keccak-256 of 64 bytes (the key, then the
mapping's slot), and the same ones recur call after call: an ERC-20
C{transfer} hashes its sender's and recipient's balance slots, the sender's
twice.  A hash depends on its input alone, so a kept one is never stale."""

_kept_words: dict[bytes, int] = {}


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
    if size == 64:
        data = bytes(evm.memory[offset : offset + 64])
        word = _kept_words.get(data)
        if word is None:
            word = int.from_bytes(keccak256(data), "big")
            if len(_kept_words) >= WORDS_KEPT:
                _kept_words.clear()
            _kept_words[data] = word
        stack.append(word)
    else:
        stack.append(int.from_bytes(keccak256(evm.memory[offset : offset + size]), "big"))
    # PROGRAM COUNTER
    evm.pc += 1
