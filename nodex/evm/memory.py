"""
The frame's memory: gas for expansion, and reads and writes that grow it.

Memory is a C{bytearray} grown in whole 32-byte words; growing it costs
C{3 * words + words ** 2 // 512} in total, charged as the difference.
"""

from nodex.evm.errors import OutOfGasError
from nodex.evm.frame import Evm
from nodex.evm.gas import memory_cost


def charge_gas(evm: Evm, amount: int) -> None:
    """
    Take C{amount} gas from the frame.

    The interpreter lets cheap, side-effect-free instructions drive the gas
    negative and checks before anything observable happens; this check also
    catches such a deficit.

    @raise OutOfGasError: the frame does not have that much gas left.
    """
    evm.gas_left -= amount
    if evm.gas_left < 0:
        raise OutOfGasError


def expand_memory(evm: Evm, start: int, size: int) -> None:
    """
    Grow memory, charging for it, so that C{[start, start + size)} is inside.

    A zero C{size} touches nothing, wherever C{start} points.

    @raise OutOfGasError: the expansion costs more than the gas left.
    """
    if size == 0:
        return
    end = start + size
    current = len(evm.memory)
    if end > current:
        new_words = (end + 31) // 32
        evm.gas_left -= memory_cost(new_words) - memory_cost(current // 32)
        if evm.gas_left < 0:
            raise OutOfGasError
        evm.memory.extend(bytes(new_words * 32 - current))


def expand_memory_for(evm: Evm, ranges: tuple[tuple[int, int], ...]) -> None:
    """
    Grow memory to cover every non-empty C{(start, size)} range at once.

    @raise OutOfGasError: the expansion costs more than the gas left.
    """
    end = 0
    for start, size in ranges:
        if size:
            end = max(end, start + size)
    if end:
        expand_memory(evm, 0, end)


def read_memory(evm: Evm, start: int, size: int) -> bytes:
    """
    C{size} bytes of memory from C{start}; memory must already cover them.
    """
    if size == 0:
        return b""
    return bytes(evm.memory[start : start + size])


def copy_cost(size: int) -> int:
    """
    The per-word charge of a copy of C{size} bytes.
    """
    return 3 * ((size + 31) // 32)
