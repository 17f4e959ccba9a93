"""
Stack instructions: POP, PUSH0 to PUSH32, DUP1 to DUP16, SWAP1 to SWAP16.

PUSH, DUP and SWAP are built by factories, one function per width or depth,
so that the table holds plain functions without arguments.
"""

from collections.abc import Callable

from nodex.evm.errors import StackOverflowError, StackUnderflowError
from nodex.evm.frame import Evm
from nodex.evm.gas import GAS_BASE, GAS_VERY_LOW, STACK_LIMIT


def pop(evm: Evm) -> None:
    """
    POP: discard the top item.
    """
    evm.stack.pop()
    evm.gas_left -= GAS_BASE
    evm.pc += 1


def push0(evm: Evm) -> None:
    """
    PUSH0 (EIP-3855): push zero.
    """
    stack = evm.stack
    if len(stack) >= STACK_LIMIT:
        raise StackOverflowError
    evm.gas_left -= GAS_BASE
    stack.append(0)
    evm.pc += 1


def make_push(num_bytes: int) -> Callable[[Evm], None]:
    """
    The PUSHn instruction reading C{num_bytes} immediate bytes.

    The code is padded with zeros past its end, so a truncated immediate
    reads as zero-filled on the right, as the Yellow Paper says.
    """

    def push_n(evm: Evm) -> None:
        stack = evm.stack
        if len(stack) >= STACK_LIMIT:
            raise StackOverflowError
        evm.gas_left -= GAS_VERY_LOW
        pc = evm.pc + 1
        stack.append(int.from_bytes(evm.code[pc : pc + num_bytes], "big"))
        evm.pc = pc + num_bytes

    push_n.__name__ = f"push{num_bytes}"
    push_n.__doc__ = f"PUSH{num_bytes}: push the next {num_bytes} bytes of code as a word."
    return push_n


def make_dup(depth: int) -> Callable[[Evm], None]:
    """
    The DUPn instruction copying the C{depth}-th item onto the top.
    """
    index = -depth

    def dup_n(evm: Evm) -> None:
        stack = evm.stack
        if len(stack) >= STACK_LIMIT:
            raise StackOverflowError
        evm.gas_left -= GAS_VERY_LOW
        stack.append(stack[index])
        evm.pc += 1

    dup_n.__name__ = f"dup{depth}"
    dup_n.__doc__ = f"DUP{depth}: copy the item {depth} deep onto the top."
    return dup_n


def make_swap(depth: int) -> Callable[[Evm], None]:
    """
    The SWAPn instruction exchanging the top with the item C{depth} below it.
    """
    index = -1 - depth

    def swap_n(evm: Evm) -> None:
        stack = evm.stack
        if len(stack) <= depth:
            raise StackUnderflowError
        evm.gas_left -= GAS_VERY_LOW
        stack[-1], stack[index] = stack[index], stack[-1]
        evm.pc += 1

    swap_n.__name__ = f"swap{depth}"
    swap_n.__doc__ = f"SWAP{depth}: exchange the top item with the one {depth} below it."
    return swap_n
