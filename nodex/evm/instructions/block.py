"""
Block instructions: BLOCKHASH, COINBASE, TIMESTAMP, NUMBER, PREVRANDAO,
GASLIMIT and CHAINID.
"""

from nodex.evm.frame import Evm
from nodex.evm.gas import GAS_BASE, GAS_BLOCK_HASH
from nodex.evm.instructions.environment import push_value


def block_hash(evm: Evm) -> None:
    """
    BLOCKHASH: push the hash of one of the 256 most recent blocks, else 0.
    """
    # STACK
    stack = evm.stack
    number = stack.pop()
    # GAS
    evm.gas_left -= GAS_BLOCK_HASH
    # OPERATION
    block = evm.context.block
    result = 0
    if block.number - 256 <= number < block.number:
        found = block.block_hashes(number)
        if found is not None:
            result = int.from_bytes(found, "big")
    stack.append(result)
    # PROGRAM COUNTER
    evm.pc += 1


def coinbase(evm: Evm) -> None:
    """
    COINBASE: push the block's beneficiary.
    """
    push_value(evm, int.from_bytes(evm.context.block.coinbase, "big"), GAS_BASE)


def timestamp(evm: Evm) -> None:
    """
    TIMESTAMP: push the block's timestamp.
    """
    push_value(evm, evm.context.block.timestamp, GAS_BASE)


def number(evm: Evm) -> None:
    """
    NUMBER: push the block's number.
    """
    push_value(evm, evm.context.block.number, GAS_BASE)


def prev_randao(evm: Evm) -> None:
    """
    PREVRANDAO (formerly DIFFICULTY): push the block's randomness value.
    """
    push_value(evm, int.from_bytes(evm.context.block.prev_randao, "big"), GAS_BASE)


def gas_limit(evm: Evm) -> None:
    """
    GASLIMIT: push the block's gas limit.
    """
    push_value(evm, evm.context.block.gas_limit, GAS_BASE)


def chain_id(evm: Evm) -> None:
    """
    CHAINID: push the chain id (EIP-1344).
    """
    push_value(evm, evm.context.block.chain_id, GAS_BASE)
