"""
System instructions: the CALL and CREATE families, RETURN, REVERT, INVALID
and SELFDESTRUCT (EIP-6780).
"""

from nodex.crypto import keccak256
from nodex.evm.errors import InvalidOpcodeError, OutOfGasError, Revert, Stop, WriteInStaticContextError
from nodex.evm.frame import UNBOUNDED_MARGIN, Evm, Message
from nodex.evm.gas import (
    GAS_CALL_STIPEND,
    GAS_CALL_VALUE,
    GAS_COLD_ACCOUNT_ACCESS,
    GAS_CREATE,
    GAS_KECCAK256_WORD,
    GAS_NEW_ACCOUNT,
    GAS_SELF_DESTRUCT,
    GAS_SELF_DESTRUCT_NEW_ACCOUNT,
    STACK_DEPTH_LIMIT,
    init_code_cost,
    max_message_call_gas,
)
from nodex.evm.instructions.environment import access_cost, to_address
from nodex.evm.memory import charge_gas, expand_memory, expand_memory_for, read_memory
from nodex.primitives import Address

UINT64_MAX = 2**64 - 1


def compute_contract_address(sender: Address, nonce: int) -> Address:
    """
    The address of the contract C{sender} creates with CREATE at C{nonce}:
    the last 20 bytes of Keccak-256 of C{rlp([sender, nonce])}.
    """
    if nonce == 0:
        encoded_nonce = b"\x80"
    elif nonce < 0x80:
        encoded_nonce = bytes([nonce])
    else:
        raw = nonce.to_bytes((nonce.bit_length() + 7) // 8, "big")
        encoded_nonce = bytes([0x80 + len(raw)]) + raw
    payload = b"\x94" + sender + encoded_nonce
    return Address(keccak256(bytes([0xC0 + len(payload)]) + payload)[12:])


def compute_create2_contract_address(sender: Address, salt: int, call_data: bytes) -> Address:
    """
    The address of a CREATE2 contract (EIP-1014).
    """
    preimage = b"\xff" + sender + salt.to_bytes(32, "big") + keccak256(call_data)
    return Address(keccak256(preimage)[12:])


def generic_create(evm: Evm, endowment: int, contract_address: Address, start: int, size: int) -> None:
    """
    The body shared by CREATE and CREATE2 once their gas is paid: run the
    initcode in a child frame with all but a 64th of the gas left.
    """
    from nodex.evm.interpreter import process_create_message

    call_data = read_memory(evm, start, size)
    state = evm.state
    state.mark_warm_address(contract_address)
    available = evm.gas_left
    if available < evm.margin:
        evm.margin = available
    create_message_gas = max_message_call_gas(available)
    evm.gas_left -= create_message_gas
    if evm.message.is_static:
        raise WriteInStaticContextError
    evm.return_data = b""
    sender = evm.message.current_target
    if (
        state.get_balance(sender) < endowment
        or state.get_nonce(sender) == UINT64_MAX
        or evm.message.depth + 1 > STACK_DEPTH_LIMIT
    ):
        evm.gas_left += create_message_gas
        evm.stack.append(0)
        return
    state.increment_nonce(sender)
    if state.has_code_or_nonce(contract_address) or state.has_storage(contract_address):
        # The creation's gas is burnt: with less gas left, less would be,
        # and the frame would go on with more than its shift implies, so no
        # run with less gas is proven to take this one's path.
        evm.context.call_margin = -1
        evm.stack.append(0)
        return
    child_message = Message(
        caller=sender,
        target=None,
        current_target=contract_address,
        gas=create_message_gas,
        value=endowment,
        data=b"",
        code_address=None,
        code=call_data,
        depth=evm.message.depth + 1,
    )
    child = process_create_message(child_message, evm.context)
    record_subframe(evm, subframe_tolerance(available, create_message_gas, child))
    evm.gas_left += child.gas_left
    if child.error is not None:
        evm.return_data = child.output
        evm.stack.append(0)
    else:
        incorporate_child_on_success(evm, child)
        evm.stack.append(int.from_bytes(contract_address, "big"))


def create(evm: Evm) -> None:
    """
    CREATE: create a contract at the address given by the sender and its nonce.
    """
    # STACK
    stack = evm.stack
    endowment = stack.pop()
    start = stack.pop()
    size = stack.pop()
    # GAS
    if size > evm.context.fork.gas.max_init_code_size:
        raise OutOfGasError
    charge_gas(evm, GAS_CREATE + init_code_cost(size))
    expand_memory(evm, start, size)
    # OPERATION
    sender = evm.message.current_target
    contract_address = compute_contract_address(sender, evm.state.get_nonce(sender))
    generic_create(evm, endowment, contract_address, start, size)
    # PROGRAM COUNTER
    evm.pc += 1


def create2(evm: Evm) -> None:
    """
    CREATE2: create a contract at an address given by the sender, a salt and
    the initcode (EIP-1014).
    """
    stack = evm.stack
    endowment = stack.pop()
    start = stack.pop()
    size = stack.pop()
    salt = stack.pop()
    if size > evm.context.fork.gas.max_init_code_size:
        raise OutOfGasError
    words = (size + 31) // 32
    charge_gas(evm, GAS_CREATE + GAS_KECCAK256_WORD * words + init_code_cost(size))
    expand_memory(evm, start, size)
    contract_address = compute_create2_contract_address(
        evm.message.current_target, salt, read_memory(evm, start, size)
    )
    generic_create(evm, endowment, contract_address, start, size)
    evm.pc += 1


def incorporate_child_on_success(evm: Evm, child: Evm) -> None:
    """
    Take over what a successful child frame hands back: logs, refunds and
    accounts to delete (its gas is returned by the caller).
    """
    if child.logs:
        evm.logs.extend(child.logs)
    evm.refund_counter += child.refund_counter
    if child.accounts_to_delete:
        evm.accounts_to_delete.update(child.accounts_to_delete)


def message_call_gas(evm: Evm, value: int, gas: int, extra_gas: int) -> tuple[int, int]:
    """
    The EIP-150 split of a call: C{(cost to charge, gas the child receives)}.

    The child gets at most all but a 64th of what is left after the extra
    costs, plus the 2300 stipend when value moves.
    """
    stipend = GAS_CALL_STIPEND if value else 0
    if evm.gas_left >= extra_gas:
        gas = min(gas, max_message_call_gas(evm.gas_left - extra_gas))
    return gas + extra_gas, gas + stipend


def charge_call(evm: Evm, value: int, gas: int, extra_gas: int) -> tuple[int, int]:
    """
    Charge a call's cost (L{message_call_gas}) and count, in the frame's
    margin, the gas left after its own costs, before the child's share.

    @return: the gas the child receives, and that gas left (C{available}
        of L{generic_call}).
    """
    available = evm.gas_left - extra_gas
    cost, child_gas = message_call_gas(evm, value, gas, extra_gas)
    charge_gas(evm, cost)
    if available < evm.margin:
        evm.margin = available
    return child_gas, available


def subframe_tolerance(available: int, forwarded: int, child: Evm) -> int:
    """
    How much less gas its caller could have had and still hand C{child}
    enough to run as it did: the largest C{s} for which the child's share
    shrinks by no more than the child tolerates (its L{Evm.margin} and the
    gas it had left at its end).

    The caller had C{available} after the call's own costs and forwarded
    C{forwarded} of it (the stipend aside): the least of the gas asked for
    and all but a 64th of C{available} (EIP-150).  With C{s} less, it
    forwards the least of the same request and all but a 64th of
    C{available - s}: the request caps the share in both runs, or the
    share shrinks by about 63/64 of C{s} (a GAS read as the request,
    C{GAS CALL}, shrinks by C{s} itself and still caps nothing).  Past
    C{available} the caller's own charge fails, which its own margin
    counts, so a child that tolerates losing its whole share tolerates
    any C{s}: L{UNBOUNDED_MARGIN}.

    @return: that largest C{s}, or -1 when the child tolerates nothing.
    """
    tolerance = child.margin
    if child.gas_left < tolerance:
        tolerance = child.gas_left
    if tolerance < 0:
        return -1
    needed = forwarded - tolerance
    if needed <= 0:
        return UNBOUNDED_MARGIN
    # The least x whose all but a 64th, x - x // 64, is at least what the
    # child needs: x = 64q + r gives 63q + r (r < 64).
    quotient, remainder = divmod(needed, 63)
    least = 64 * quotient + remainder if remainder else 64 * quotient - 1
    return available - least


def record_subframe(evm: Evm, tolerance: int) -> None:
    """
    Count a finished subframe's tolerance in its caller's margin, or, for
    the transaction's own frame, in the context's C{call_margin}.
    """
    if evm.message.depth:
        if tolerance < evm.margin:
            evm.margin = tolerance
    else:
        context = evm.context
        if tolerance < context.call_margin:
            context.call_margin = tolerance


def generic_call(
    evm: Evm,
    gas: int,
    value: int,
    caller: Address,
    to: Address,
    code_address: Address,
    should_transfer_value: bool,
    is_staticcall: bool,
    memory_in: tuple[int, int],
    memory_out: tuple[int, int],
    available: int,
) -> None:
    """
    Run a child frame for the CALL family and push 1 on success, 0 on failure.

    @param available: the caller's gas left after the call's own costs,
        before the child's share was taken (L{charge_call}).
    """
    from nodex.evm.interpreter import process_message

    evm.return_data = b""
    if evm.message.depth + 1 > STACK_DEPTH_LIMIT:
        evm.gas_left += gas
        evm.stack.append(0)
        return
    call_data = read_memory(evm, *memory_in)
    child_message = Message(
        caller=caller,
        target=to,
        current_target=to,
        gas=gas,
        value=value,
        data=call_data,
        code_address=code_address,
        code=evm.state.get_code(code_address),
        depth=evm.message.depth + 1,
        should_transfer_value=should_transfer_value,
        is_static=True if is_staticcall else evm.message.is_static,
    )
    child = process_message(child_message, evm.context)
    record_subframe(evm, subframe_tolerance(available, available - evm.gas_left, child))
    evm.gas_left += child.gas_left
    evm.return_data = child.output
    if child.error is not None:
        evm.stack.append(0)
    else:
        incorporate_child_on_success(evm, child)
        evm.stack.append(1)
    out_start, out_size = memory_out
    output = child.output[:out_size]
    if output:
        evm.memory[out_start : out_start + len(output)] = output


def _call_value_transfer(
    evm: Evm,
    gas: int,
    value: int,
    to: Address,
    code_address: Address,
    extra_gas: int,
    memory_in: tuple[int, int],
    memory_out: tuple[int, int],
    forbid_value_if_static: bool,
) -> None:
    """
    The shared end of CALL and CALLCODE: charge, check the balance, call.

    @param forbid_value_if_static: whether sending value inside a static
        frame is an exceptional halt (CALL; CALLCODE only pays itself).
    """
    expand_memory_for(evm, (memory_in, memory_out))
    child_gas, available = charge_call(evm, value, gas, extra_gas)
    if forbid_value_if_static and value and evm.message.is_static:
        raise WriteInStaticContextError
    sender = evm.message.current_target
    if evm.state.get_balance(sender) < value:
        evm.stack.append(0)
        evm.return_data = b""
        evm.gas_left += child_gas
    else:
        generic_call(evm, child_gas, value, sender, to, code_address, True, False, memory_in, memory_out, available)


def call(evm: Evm) -> None:
    """
    CALL: run another account's code with its own storage, optionally sending value.
    """
    # STACK
    stack = evm.stack
    gas = stack.pop()
    to = to_address(stack.pop())
    value = stack.pop()
    memory_in = (stack.pop(), stack.pop())
    memory_out = (stack.pop(), stack.pop())
    # GAS
    extra_gas = access_cost(evm, to)
    if value:
        extra_gas += GAS_CALL_VALUE
        if not evm.state.is_alive(to):
            extra_gas += GAS_NEW_ACCOUNT
    # OPERATION
    _call_value_transfer(evm, gas, value, to, to, extra_gas, memory_in, memory_out, True)
    # PROGRAM COUNTER
    evm.pc += 1


def callcode(evm: Evm) -> None:
    """
    CALLCODE: run another account's code against the executing account.
    """
    stack = evm.stack
    gas = stack.pop()
    code_address = to_address(stack.pop())
    value = stack.pop()
    memory_in = (stack.pop(), stack.pop())
    memory_out = (stack.pop(), stack.pop())
    extra_gas = access_cost(evm, code_address)
    if value:
        extra_gas += GAS_CALL_VALUE
    target = evm.message.current_target
    _call_value_transfer(evm, gas, value, target, code_address, extra_gas, memory_in, memory_out, False)
    evm.pc += 1


def delegatecall(evm: Evm) -> None:
    """
    DELEGATECALL: run another account's code with this frame's caller and value (EIP-7).
    """
    stack = evm.stack
    gas = stack.pop()
    code_address = to_address(stack.pop())
    memory_in = (stack.pop(), stack.pop())
    memory_out = (stack.pop(), stack.pop())
    extra_gas = access_cost(evm, code_address)
    expand_memory_for(evm, (memory_in, memory_out))
    child_gas, available = charge_call(evm, 0, gas, extra_gas)
    message = evm.message
    generic_call(
        evm,
        child_gas,
        message.value,
        message.caller,
        message.current_target,
        code_address,
        False,
        False,
        memory_in,
        memory_out,
        available,
    )
    evm.pc += 1


def staticcall(evm: Evm) -> None:
    """
    STATICCALL: call another account, forbidding state changes below (EIP-214).
    """
    stack = evm.stack
    gas = stack.pop()
    to = to_address(stack.pop())
    memory_in = (stack.pop(), stack.pop())
    memory_out = (stack.pop(), stack.pop())
    extra_gas = access_cost(evm, to)
    expand_memory_for(evm, (memory_in, memory_out))
    child_gas, available = charge_call(evm, 0, gas, extra_gas)
    generic_call(
        evm, child_gas, 0, evm.message.current_target, to, to, True, True, memory_in, memory_out, available
    )
    evm.pc += 1


def return_(evm: Evm) -> None:
    """
    RETURN: end the frame successfully with a memory range as output.
    """
    stack = evm.stack
    start = stack.pop()
    size = stack.pop()
    charge_gas(evm, 0)
    expand_memory(evm, start, size)
    evm.output = read_memory(evm, start, size)
    raise Stop


def revert(evm: Evm) -> None:
    """
    REVERT: undo the frame's changes, keep its gas, output a memory range (EIP-140).
    """
    stack = evm.stack
    start = stack.pop()
    size = stack.pop()
    charge_gas(evm, 0)
    expand_memory(evm, start, size)
    evm.output = read_memory(evm, start, size)
    raise Revert


def invalid_opcode(evm: Evm) -> None:
    """
    INVALID (0xFE) and every undefined byte: an exceptional halt.
    """
    raise InvalidOpcodeError


def selfdestruct(evm: Evm) -> None:
    """
    SELFDESTRUCT: send the whole balance to a beneficiary; the account is
    deleted only if it was created in the same transaction (EIP-6780).
    """
    # STACK
    beneficiary = to_address(evm.stack.pop())
    # GAS
    state = evm.state
    originator = evm.message.current_target
    gas_cost = GAS_SELF_DESTRUCT
    if state.mark_warm_address(beneficiary):
        gas_cost += GAS_COLD_ACCOUNT_ACCESS
    originator_balance = state.get_balance(originator)
    if originator_balance and not state.is_alive(beneficiary):
        gas_cost += GAS_SELF_DESTRUCT_NEW_ACCOUNT
    charge_gas(evm, gas_cost)
    if evm.message.is_static:
        raise WriteInStaticContextError
    # OPERATION
    tracer = evm.context.tracer
    if tracer is not None:
        tracer.capture_selfdestruct(evm, beneficiary, originator_balance)
    state.transfer(originator, beneficiary, originator_balance)
    state.touch(beneficiary)
    if state.is_created(originator):
        state.set_balance(originator, 0)
        evm.accounts_to_delete.add(originator)
    raise Stop
