"""
Memory instructions: MLOAD, MSTORE, MSTORE8, MSIZE and MCOPY (EIP-5656).
"""

from nodex.evm.errors import StackOverflowError
from nodex.evm.frame import Evm
from nodex.evm.gas import GAS_BASE, GAS_VERY_LOW, STACK_LIMIT
from nodex.evm.memory import copy_cost, expand_memory


def mload(evm: Evm) -> None:
    """
    MLOAD: push the word at memory offset C{start}.
    """
    # STACK
    stack = evm.stack
    start = stack.pop()
    # GAS
    evm.gas_left -= GAS_VERY_LOW
    if start + 32 > len(evm.memory):
        expand_memory(evm, start, 32)
    # OPERATION
    stack.append(int.from_bytes(evm.memory[start : start + 32], "big"))
    # PROGRAM COUNTER
    evm.pc += 1


def mstore(evm: Evm) -> None:
    """
    MSTORE: write a word at memory offset C{start}.
    """
    stack = evm.stack
    start = stack.pop()
    value = stack.pop()
    evm.gas_left -= GAS_VERY_LOW
    if start + 32 > len(evm.memory):
        expand_memory(evm, start, 32)
    evm.memory[start : start + 32] = value.to_bytes(32, "big")
    evm.pc += 1


def mstore8(evm: Evm) -> None:
    """
    MSTORE8: write the low byte of a word at memory offset C{start}.
    """
    stack = evm.stack
    start = stack.pop()
    value = stack.pop()
    evm.gas_left -= GAS_VERY_LOW
    if start >= len(evm.memory):
        expand_memory(evm, start, 1)
    evm.memory[start] = value & 0xFF
    evm.pc += 1


def msize(evm: Evm) -> None:
    """
    MSIZE: push the size of memory in bytes.
    """
    stack = evm.stack
    if len(stack) >= STACK_LIMIT:
        raise StackOverflowError
    evm.gas_left -= GAS_BASE
    stack.append(len(evm.memory))
    evm.pc += 1


def mcopy(evm: Evm) -> None:
    """
    MCOPY: copy C{size} bytes of memory from C{source} to C{destination}.
    """
    stack = evm.stack
    destination = stack.pop()
    source = stack.pop()
    size = stack.pop()
    evm.gas_left -= GAS_VERY_LOW + copy_cost(size)
    if size:
        expand_memory(evm, max(destination, source), size)
        memory = evm.memory
        memory[destination : destination + size] = memory[source : source + size]
    evm.pc += 1
