"""
Storage instructions: SLOAD and SSTORE (EIP-2200, EIP-2929, EIP-3529), and
the transient TLOAD and TSTORE (EIP-1153).
"""

from nodex.evm.errors import OutOfGasError, WriteInStaticContextError
from nodex.evm.frame import Evm
from nodex.evm.gas import (
    GAS_CALL_STIPEND,
    GAS_COLD_SLOAD,
    GAS_STORAGE_CLEAR_REFUND,
    GAS_STORAGE_SET,
    GAS_STORAGE_UPDATE,
    GAS_WARM_ACCESS,
)
from nodex.evm.memory import charge_gas


def sload(evm: Evm) -> None:
    """
    SLOAD: push a word of the executing account's storage (cold 2100, warm 100).
    """
    # STACK
    stack = evm.stack
    key = stack.pop()
    # GAS
    target = evm.message.current_target
    state = evm.state
    if state.mark_warm_slot(target, key):
        evm.gas_left -= GAS_COLD_SLOAD
    else:
        evm.gas_left -= GAS_WARM_ACCESS
    # OPERATION
    stack.append(state.get_storage(target, key))
    # PROGRAM COUNTER
    evm.pc += 1


def sstore(evm: Evm) -> None:
    """
    SSTORE: write a word of the executing account's storage.

    The cost depends on the slot's value at the start of the transaction
    (original), now (current) and after (new); clearing slots earns refunds
    that the transaction caps at a fifth of its gas.
    """
    # STACK
    stack = evm.stack
    key = stack.pop()
    new_value = stack.pop()
    # GAS
    if evm.gas_left <= GAS_CALL_STIPEND:
        raise OutOfGasError
    spare = evm.gas_left - GAS_CALL_STIPEND - 1
    if spare < evm.margin:
        evm.margin = spare
    state = evm.state
    target = evm.message.current_target
    original_value = state.get_original_storage(target, key)
    current_value = state.get_storage(target, key)
    gas_cost = 0
    if state.mark_warm_slot(target, key):
        gas_cost += GAS_COLD_SLOAD
    if original_value == current_value and current_value != new_value:
        if original_value == 0:
            gas_cost += GAS_STORAGE_SET
        else:
            gas_cost += GAS_STORAGE_UPDATE - GAS_COLD_SLOAD
    else:
        gas_cost += GAS_WARM_ACCESS
    # REFUND COUNTER
    if current_value != new_value:
        if original_value != 0 and current_value != 0 and new_value == 0:
            evm.refund_counter += GAS_STORAGE_CLEAR_REFUND
        if original_value != 0 and current_value == 0:
            evm.refund_counter -= GAS_STORAGE_CLEAR_REFUND
        if original_value == new_value:
            if original_value == 0:
                evm.refund_counter += GAS_STORAGE_SET - GAS_WARM_ACCESS
            else:
                evm.refund_counter += GAS_STORAGE_UPDATE - GAS_COLD_SLOAD - GAS_WARM_ACCESS
    charge_gas(evm, gas_cost)
    if evm.message.is_static:
        raise WriteInStaticContextError
    # OPERATION
    if current_value != new_value:
        state.set_storage(target, key, new_value)
    # PROGRAM COUNTER
    evm.pc += 1


def tload(evm: Evm) -> None:
    """
    TLOAD: push a word of the executing account's transient storage.
    """
    stack = evm.stack
    key = stack.pop()
    evm.gas_left -= GAS_WARM_ACCESS
    stack.append(evm.state.get_transient_storage(evm.message.current_target, key))
    evm.pc += 1


def tstore(evm: Evm) -> None:
    """
    TSTORE: write a word of the executing account's transient storage.
    """
    stack = evm.stack
    key = stack.pop()
    value = stack.pop()
    charge_gas(evm, GAS_WARM_ACCESS)
    if evm.message.is_static:
        raise WriteInStaticContextError
    evm.state.set_transient_storage(evm.message.current_target, key, value)
    evm.pc += 1
