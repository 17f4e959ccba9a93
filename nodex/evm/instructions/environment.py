"""
Environment instructions: what the frame knows of its message, its code and
other accounts (ADDRESS to EXTCODEHASH, SELFBALANCE, BASEFEE, BLOBHASH,
BLOBBASEFEE).
"""

from nodex.evm.errors import OutOfBoundsReadError, StackOverflowError
from nodex.evm.frame import Evm
from nodex.evm.gas import (
    GAS_BASE,
    GAS_BLOBHASH_OPCODE,
    GAS_COLD_ACCOUNT_ACCESS,
    GAS_FAST_STEP,
    GAS_VERY_LOW,
    GAS_WARM_ACCESS,
    STACK_LIMIT,
)
from nodex.evm.memory import copy_cost, expand_memory
from nodex.primitives import Address

ADDRESS_MASK = 2**160 - 1


def to_address(word: int) -> Address:
    """
    The address held in the low 160 bits of a word.
    """
    return Address((word & ADDRESS_MASK).to_bytes(20, "big"))


def push_value(evm: Evm, value: int, gas: int) -> None:
    """
    Push C{value} for an instruction that only reads, charging C{gas}.

    @raise StackOverflowError: the stack is full.
    """
    stack = evm.stack
    if len(stack) >= STACK_LIMIT:
        raise StackOverflowError
    evm.gas_left -= gas
    stack.append(value)
    evm.pc += 1


def access_cost(evm: Evm, address: Address) -> int:
    """
    The EIP-2929 access cost of C{address}, warming it.
    """
    if evm.state.mark_warm_address(address):
        return GAS_COLD_ACCOUNT_ACCESS
    return GAS_WARM_ACCESS


def address(evm: Evm) -> None:
    """
    ADDRESS: push the address of the executing account.
    """
    push_value(evm, int.from_bytes(evm.message.current_target, "big"), GAS_BASE)


def balance(evm: Evm) -> None:
    """
    BALANCE: push the balance of an account (cold 2600, warm 100).
    """
    # STACK
    target = to_address(evm.stack.pop())
    # GAS
    evm.gas_left -= access_cost(evm, target)
    # OPERATION
    evm.stack.append(evm.state.get_balance(target))
    # PROGRAM COUNTER
    evm.pc += 1


def origin(evm: Evm) -> None:
    """
    ORIGIN: push the sender of the transaction.
    """
    push_value(evm, int.from_bytes(evm.context.tx.origin, "big"), GAS_BASE)


def caller(evm: Evm) -> None:
    """
    CALLER: push the address that sent this message.
    """
    push_value(evm, int.from_bytes(evm.message.caller, "big"), GAS_BASE)


def callvalue(evm: Evm) -> None:
    """
    CALLVALUE: push the wei sent with this message.
    """
    push_value(evm, evm.message.value, GAS_BASE)


def calldataload(evm: Evm) -> None:
    """
    CALLDATALOAD: push 32 bytes of calldata from C{start}, zero-padded.
    """
    stack = evm.stack
    start = stack.pop()
    evm.gas_left -= GAS_VERY_LOW
    data = evm.message.data[start : start + 32]
    stack.append(int.from_bytes(data.ljust(32, b"\x00"), "big"))
    evm.pc += 1


def calldatasize(evm: Evm) -> None:
    """
    CALLDATASIZE: push the length of the calldata.
    """
    push_value(evm, len(evm.message.data), GAS_BASE)


def copy_to_memory(evm: Evm, source: bytes, base_gas: int = GAS_VERY_LOW) -> None:
    """
    The shared body of CALLDATACOPY, CODECOPY and EXTCODECOPY's copy: pop
    memory offset, source offset and size; write the source range,
    zero-padded, charging C{base_gas} plus 3 a word plus the expansion.
    """
    stack = evm.stack
    memory_start = stack.pop()
    data_start = stack.pop()
    size = stack.pop()
    evm.gas_left -= base_gas + copy_cost(size)
    if size:
        expand_memory(evm, memory_start, size)
        chunk = source[data_start : data_start + size] if data_start < len(source) else b""
        evm.memory[memory_start : memory_start + size] = chunk.ljust(size, b"\x00")
    evm.pc += 1


def calldatacopy(evm: Evm) -> None:
    """
    CALLDATACOPY: copy calldata into memory.
    """
    copy_to_memory(evm, evm.message.data)


def codesize(evm: Evm) -> None:
    """
    CODESIZE: push the length of the executing code.
    """
    push_value(evm, len(evm.message.code), GAS_BASE)


def codecopy(evm: Evm) -> None:
    """
    CODECOPY: copy the executing code into memory.
    """
    copy_to_memory(evm, evm.message.code)


def gasprice(evm: Evm) -> None:
    """
    GASPRICE: push the transaction's effective gas price.
    """
    push_value(evm, evm.context.tx.gas_price, GAS_BASE)


def extcodesize(evm: Evm) -> None:
    """
    EXTCODESIZE: push the length of an account's code.
    """
    target = to_address(evm.stack.pop())
    evm.gas_left -= access_cost(evm, target)
    evm.stack.append(len(evm.state.get_code(target)))
    evm.pc += 1


def extcodecopy(evm: Evm) -> None:
    """
    EXTCODECOPY: copy an account's code into memory.
    """
    target = to_address(evm.stack.pop())
    copy_to_memory(evm, evm.state.get_code(target), access_cost(evm, target))


def returndatasize(evm: Evm) -> None:
    """
    RETURNDATASIZE: push the length of the last child frame's output.
    """
    push_value(evm, len(evm.return_data), GAS_BASE)


def returndatacopy(evm: Evm) -> None:
    """
    RETURNDATACOPY: copy the last child's output into memory; reading past
    its end is an exceptional halt (EIP-211).
    """
    stack = evm.stack
    memory_start = stack.pop()
    data_start = stack.pop()
    size = stack.pop()
    evm.gas_left -= GAS_VERY_LOW + copy_cost(size)
    if data_start + size > len(evm.return_data):
        raise OutOfBoundsReadError
    if size:
        expand_memory(evm, memory_start, size)
        evm.memory[memory_start : memory_start + size] = evm.return_data[data_start : data_start + size]
    evm.pc += 1


def extcodehash(evm: Evm) -> None:
    """
    EXTCODEHASH: push the hash of an account's code, or 0 for a dead account (EIP-1052).
    """
    target = to_address(evm.stack.pop())
    evm.gas_left -= access_cost(evm, target)
    state = evm.state
    if state.is_alive(target):
        evm.stack.append(int.from_bytes(state.get_code_hash(target), "big"))
    else:
        evm.stack.append(0)
    evm.pc += 1


def self_balance(evm: Evm) -> None:
    """
    SELFBALANCE: push the executing account's balance (EIP-1884).
    """
    push_value(evm, evm.state.get_balance(evm.message.current_target), GAS_FAST_STEP)


def base_fee(evm: Evm) -> None:
    """
    BASEFEE: push the block's base fee (0 on our chain).
    """
    push_value(evm, evm.context.block.base_fee, GAS_BASE)


def blob_hash(evm: Evm) -> None:
    """
    BLOBHASH: push the transaction's versioned blob hash at C{index}, or 0.
    """
    stack = evm.stack
    index = stack.pop()
    evm.gas_left -= GAS_BLOBHASH_OPCODE
    hashes = evm.context.tx.blob_hashes
    stack.append(int.from_bytes(hashes[index], "big") if index < len(hashes) else 0)
    evm.pc += 1


def blob_base_fee(evm: Evm) -> None:
    """
    BLOBBASEFEE: push the block's blob base fee (1 on our chain).
    """
    push_value(evm, evm.context.block.blob_base_fee, GAS_BASE)
