"""
Control flow instructions: STOP, JUMP, JUMPI, PC, GAS and JUMPDEST.

JUMP and JUMPI are where the cheap instructions' lazily taken gas is
checked, so that no loop can run on a deficit.
"""

from nodex.evm.errors import InvalidJumpDestError, OutOfGasError, StackOverflowError, Stop
from nodex.evm.frame import Evm
from nodex.evm.gas import GAS_BASE, GAS_HIGH, GAS_JUMPDEST, GAS_MID, STACK_LIMIT


def stop(evm: Evm) -> None:
    """
    STOP: end the frame successfully with no output (also the end of code).
    """
    if evm.gas_left < 0:
        raise OutOfGasError
    raise Stop


def jump(evm: Evm) -> None:
    """
    JUMP: continue at C{destination}, which must be a JUMPDEST.
    """
    # STACK
    destination = evm.stack.pop()
    # GAS
    evm.gas_left -= GAS_MID
    if evm.gas_left < 0:
        raise OutOfGasError
    # OPERATION and PROGRAM COUNTER
    if destination not in evm.valid_jump_destinations:
        raise InvalidJumpDestError
    evm.pc = destination


def jumpi(evm: Evm) -> None:
    """
    JUMPI: continue at C{destination} if C{condition} is not zero.
    """
    stack = evm.stack
    destination = stack.pop()
    condition = stack.pop()
    evm.gas_left -= GAS_HIGH
    if evm.gas_left < 0:
        raise OutOfGasError
    if condition:
        if destination not in evm.valid_jump_destinations:
            raise InvalidJumpDestError
        evm.pc = destination
    else:
        evm.pc += 1


def get_pc(evm: Evm) -> None:
    """
    PC: push the position of this instruction.
    """
    stack = evm.stack
    if len(stack) >= STACK_LIMIT:
        raise StackOverflowError
    evm.gas_left -= GAS_BASE
    stack.append(evm.pc)
    evm.pc += 1


_CALLS_TAKING_GAS = frozenset((0xF1, 0xF2, 0xF4, 0xFA))
"""CALL, CALLCODE, DELEGATECALL, STATICCALL: their top argument is the gas to forward."""


def gas_left(evm: Evm) -> None:
    """
    GAS: push the gas left after paying for this instruction.

    Read as a call's gas argument (the next instruction is a call, as
    Solidity forwards all the gas: C{GAS CALL}), the value cannot change
    the run: the call then charges its memory and extra costs and forwards
    all but a 64th of what is left (EIP-150), which is less than the value
    read, whatever it was.  Only another use of the value makes the run
    depend on the gas it was given (L{nodex.evm.frame.ExecutionContext.limit_dependent}).
    """
    if evm.code[evm.pc + 1] not in _CALLS_TAKING_GAS:
        evm.context.limit_dependent = True
    stack = evm.stack
    if len(stack) >= STACK_LIMIT:
        raise StackOverflowError
    evm.gas_left -= GAS_BASE
    if evm.gas_left < 0:
        raise OutOfGasError
    stack.append(evm.gas_left)
    evm.pc += 1


def jumpdest(evm: Evm) -> None:
    """
    JUMPDEST: mark a valid jump destination; does nothing.
    """
    evm.gas_left -= GAS_JUMPDEST
    evm.pc += 1
