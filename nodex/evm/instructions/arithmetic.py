"""
Arithmetic instructions: ADD to SIGNEXTEND.

Words are plain C{int} in [0, 2**256); signed instructions convert with
L{to_signed}.  The cheap instructions take their gas without checking it: the
frame checks the deficit before anything observable (see L{nodex.evm.memory.charge_gas}).
"""

from nodex.evm.frame import Evm
from nodex.evm.gas import GAS_EXPONENTIATION, GAS_EXPONENTIATION_PER_BYTE, GAS_LOW, GAS_MID, GAS_VERY_LOW

MASK = 2**256 - 1
SIGN_BIT = 2**255
CEILING = 2**256


def to_signed(value: int) -> int:
    """
    Read a word as a two's-complement signed integer.
    """
    return value - CEILING if value & SIGN_BIT else value


def add(evm: Evm) -> None:
    """
    ADD: the sum of the top two items, modulo 2**256.
    """
    # STACK
    stack = evm.stack
    # GAS
    evm.gas_left -= GAS_VERY_LOW
    # OPERATION
    stack.append((stack.pop() + stack.pop()) & MASK)
    # PROGRAM COUNTER
    evm.pc += 1


def sub(evm: Evm) -> None:
    """
    SUB: the top item minus the second, modulo 2**256.
    """
    stack = evm.stack
    evm.gas_left -= GAS_VERY_LOW
    stack.append((stack.pop() - stack.pop()) & MASK)
    evm.pc += 1


def mul(evm: Evm) -> None:
    """
    MUL: the product of the top two items, modulo 2**256.
    """
    stack = evm.stack
    evm.gas_left -= GAS_LOW
    stack.append((stack.pop() * stack.pop()) & MASK)
    evm.pc += 1


def div(evm: Evm) -> None:
    """
    DIV: unsigned integer division; division by zero gives zero.
    """
    stack = evm.stack
    dividend = stack.pop()
    divisor = stack.pop()
    evm.gas_left -= GAS_LOW
    stack.append(dividend // divisor if divisor else 0)
    evm.pc += 1


def sdiv(evm: Evm) -> None:
    """
    SDIV: signed division truncating towards zero; by zero gives zero.
    """
    stack = evm.stack
    dividend = to_signed(stack.pop())
    divisor = to_signed(stack.pop())
    evm.gas_left -= GAS_LOW
    if divisor == 0:
        quotient = 0
    else:
        quotient = abs(dividend) // abs(divisor)
        if (dividend < 0) != (divisor < 0):
            quotient = -quotient
    stack.append(quotient & MASK)
    evm.pc += 1


def mod(evm: Evm) -> None:
    """
    MOD: unsigned remainder; modulo zero gives zero.
    """
    stack = evm.stack
    value = stack.pop()
    modulus = stack.pop()
    evm.gas_left -= GAS_LOW
    stack.append(value % modulus if modulus else 0)
    evm.pc += 1


def smod(evm: Evm) -> None:
    """
    SMOD: signed remainder, taking the sign of the dividend; modulo zero gives zero.
    """
    stack = evm.stack
    value = to_signed(stack.pop())
    modulus = to_signed(stack.pop())
    evm.gas_left -= GAS_LOW
    if modulus == 0:
        remainder = 0
    else:
        remainder = abs(value) % abs(modulus)
        if value < 0:
            remainder = -remainder
    stack.append(remainder & MASK)
    evm.pc += 1


def addmod(evm: Evm) -> None:
    """
    ADDMOD: (a + b) mod N without intermediate overflow; N = 0 gives zero.
    """
    stack = evm.stack
    a = stack.pop()
    b = stack.pop()
    modulus = stack.pop()
    evm.gas_left -= GAS_MID
    stack.append((a + b) % modulus if modulus else 0)
    evm.pc += 1


def mulmod(evm: Evm) -> None:
    """
    MULMOD: (a * b) mod N without intermediate overflow; N = 0 gives zero.
    """
    stack = evm.stack
    a = stack.pop()
    b = stack.pop()
    modulus = stack.pop()
    evm.gas_left -= GAS_MID
    stack.append((a * b) % modulus if modulus else 0)
    evm.pc += 1


def exp(evm: Evm) -> None:
    """
    EXP: base ** exponent modulo 2**256, 50 gas per byte of the exponent.
    """
    stack = evm.stack
    base = stack.pop()
    exponent = stack.pop()
    evm.gas_left -= GAS_EXPONENTIATION + GAS_EXPONENTIATION_PER_BYTE * ((exponent.bit_length() + 7) // 8)
    stack.append(pow(base, exponent, CEILING))
    evm.pc += 1


def signextend(evm: Evm) -> None:
    """
    SIGNEXTEND: extend the sign of the (byte_num + 1)-byte number in value.
    """
    stack = evm.stack
    byte_num = stack.pop()
    value = stack.pop()
    evm.gas_left -= GAS_LOW
    if byte_num < 31:
        bits = 8 * (byte_num + 1)
        value &= (1 << bits) - 1
        if value >> (bits - 1):
            value |= MASK ^ ((1 << bits) - 1)
    stack.append(value)
    evm.pc += 1
