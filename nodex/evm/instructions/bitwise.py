"""
Comparison and bitwise instructions: LT to SAR, and Osaka's CLZ.
"""

from nodex.evm.frame import Evm
from nodex.evm.gas import GAS_LOW, GAS_VERY_LOW
from nodex.evm.instructions.arithmetic import MASK, to_signed


def less_than(evm: Evm) -> None:
    """
    LT: 1 if the top item is below the second (unsigned), else 0.
    """
    stack = evm.stack
    evm.gas_left -= GAS_VERY_LOW
    stack.append(1 if stack.pop() < stack.pop() else 0)
    evm.pc += 1


def greater_than(evm: Evm) -> None:
    """
    GT: 1 if the top item is above the second (unsigned), else 0.
    """
    stack = evm.stack
    evm.gas_left -= GAS_VERY_LOW
    stack.append(1 if stack.pop() > stack.pop() else 0)
    evm.pc += 1


def signed_less_than(evm: Evm) -> None:
    """
    SLT: 1 if the top item is below the second (signed), else 0.
    """
    stack = evm.stack
    evm.gas_left -= GAS_VERY_LOW
    stack.append(1 if to_signed(stack.pop()) < to_signed(stack.pop()) else 0)
    evm.pc += 1


def signed_greater_than(evm: Evm) -> None:
    """
    SGT: 1 if the top item is above the second (signed), else 0.
    """
    stack = evm.stack
    evm.gas_left -= GAS_VERY_LOW
    stack.append(1 if to_signed(stack.pop()) > to_signed(stack.pop()) else 0)
    evm.pc += 1


def equal(evm: Evm) -> None:
    """
    EQ: 1 if the top two items are equal, else 0.
    """
    stack = evm.stack
    evm.gas_left -= GAS_VERY_LOW
    stack.append(1 if stack.pop() == stack.pop() else 0)
    evm.pc += 1


def is_zero(evm: Evm) -> None:
    """
    ISZERO: replace the top stack item with 1 if it is zero, else with 0.
    """
    stack = evm.stack
    evm.gas_left -= GAS_VERY_LOW
    stack.append(1 if stack.pop() == 0 else 0)
    evm.pc += 1


def bitwise_and(evm: Evm) -> None:
    """
    AND of the top two items.
    """
    stack = evm.stack
    evm.gas_left -= GAS_VERY_LOW
    stack.append(stack.pop() & stack.pop())
    evm.pc += 1


def bitwise_or(evm: Evm) -> None:
    """
    OR of the top two items.
    """
    stack = evm.stack
    evm.gas_left -= GAS_VERY_LOW
    stack.append(stack.pop() | stack.pop())
    evm.pc += 1


def bitwise_xor(evm: Evm) -> None:
    """
    XOR of the top two items.
    """
    stack = evm.stack
    evm.gas_left -= GAS_VERY_LOW
    stack.append(stack.pop() ^ stack.pop())
    evm.pc += 1


def bitwise_not(evm: Evm) -> None:
    """
    NOT: the complement of the top item.
    """
    stack = evm.stack
    evm.gas_left -= GAS_VERY_LOW
    stack.append(MASK ^ stack.pop())
    evm.pc += 1


def get_byte(evm: Evm) -> None:
    """
    BYTE: the i-th byte (0 the most significant) of the word, or 0 past 31.
    """
    stack = evm.stack
    index = stack.pop()
    word = stack.pop()
    evm.gas_left -= GAS_VERY_LOW
    stack.append((word >> (248 - 8 * index)) & 0xFF if index < 32 else 0)
    evm.pc += 1


def bitwise_shl(evm: Evm) -> None:
    """
    SHL: the second item shifted left by the top item (EIP-145).
    """
    stack = evm.stack
    shift = stack.pop()
    value = stack.pop()
    evm.gas_left -= GAS_VERY_LOW
    stack.append((value << shift) & MASK if shift < 256 else 0)
    evm.pc += 1


def bitwise_shr(evm: Evm) -> None:
    """
    SHR: the second item shifted right, logically, by the top item.
    """
    stack = evm.stack
    shift = stack.pop()
    value = stack.pop()
    evm.gas_left -= GAS_VERY_LOW
    stack.append(value >> shift if shift < 256 else 0)
    evm.pc += 1


def bitwise_sar(evm: Evm) -> None:
    """
    SAR: the second item shifted right, arithmetically, by the top item.
    """
    stack = evm.stack
    shift = stack.pop()
    value = to_signed(stack.pop())
    evm.gas_left -= GAS_VERY_LOW
    if shift >= 256:
        shift = 256
    stack.append((value >> shift) & MASK)
    evm.pc += 1


def count_leading_zeros(evm: Evm) -> None:
    """
    CLZ (Osaka, EIP-7939): the number of leading zero bits of the top item, 256 for zero.
    """
    stack = evm.stack
    evm.gas_left -= GAS_LOW
    stack.append(256 - stack.pop().bit_length())
    evm.pc += 1
