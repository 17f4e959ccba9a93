"""
Running messages: frames, the instruction loop, precompiles, creations.

L{process_message} and L{process_create_message} run one message in a new
frame against the state of an L{ExecutionContext}, undoing the frame's
changes if it fails; the CALL and CREATE instructions call them recursively.
"""

import sys

from nodex.evm.blocks import HOT_JUMPS, code_blocks
from nodex.evm.cancellation import CHECK_GAS, Cancellation
from nodex.evm.errors import (
    ExceptionalHalt,
    Halt,
    InvalidContractPrefixError,
    InvalidJumpDestError,
    OutOfGasError,
    PrecompileFailedError,
    Revert,
    StackOverflowError,
    StackUnderflowError,
    Stop,
)
from nodex.evm.frame import Evm, ExecutionContext, Message
from nodex.evm.gas import (
    GAS_BASE,
    GAS_HIGH,
    GAS_JUMPDEST,
    GAS_MID,
    GAS_VERY_LOW,
    STACK_LIMIT,
)
from nodex.evm.precompiles import Precompile, PrecompileError
from nodex.evm.tracing import Tracer

PUSH0 = 0x5F
PUSH1 = 0x60
PUSH32 = 0x7F
JUMPDEST = 0x5B
POP = 0x50
JUMP = 0x56
JUMPI = 0x57
ADD = 0x01
SUB = 0x03
LT = 0x10
GT = 0x11
EQ = 0x14
ISZERO = 0x15
AND = 0x16
SHL = 0x1B
SHR = 0x1C
WORD_MASK = 2**256 - 1
# Which opcodes up to SHR the loop runs itself (True) rather than through the
# table (False): one index, so that MUL, MOD, MULMOD, XOR... pay no walk
# through the inline ones' comparisons on their way to the table.
INLINE_WORDS = tuple(op in (ADD, SUB, LT, GT, EQ, ISZERO, AND, SHL, SHR) for op in range(SHR + 1))

# Enough zero bytes after the code that a truncated PUSH32 reads zeros and
# the program counter running off the end finds a STOP.
_CODE_PADDING = b"\x00" * 33

_ANALYSIS_CACHE: dict[bytes, tuple[bytes, frozenset[int], list[int | None]]] = {}
# The analysis costs about 16 bytes of memory per byte of code; a few MiB of
# code covers a block's contracts many times over.
_ANALYSIS_CACHE_BYTES = 4 * 1024 * 1024
# What an entry costs beside its code's bytes (the key, the tuple, the
# destinations' set, the list: some 450 bytes), charged too: otherwise
# codes of a byte or two (a hostile caller's CREATEs of distinct tiny
# initcodes) would make millions of entries before the cache clears;
# charged, at most 8,192.
_ANALYSIS_ENTRY_BYTES = 512
_analysis_cache_size = 0

# A frame uses about eight Python frames; 1024 nested EVM frames need room.
_RECURSION_LIMIT = 12000

_CALL_FAMILY = frozenset((0xF0, 0xF1, 0xF2, 0xF4, 0xF5, 0xFA))

# A traced run calls its tracer at every step: it looks at its cancellation
# by steps, which costs nothing beside the tracer.
_TRACED_CHECK_STEPS = 1024


def analyse_code(code: bytes) -> tuple[bytes, frozenset[int], list[int | None]]:
    """
    The padded code, its valid jump destinations and its PUSH immediates,
    cached per code.

    A JUMPDEST byte is a destination unless it sits inside a PUSH's
    immediate data; C{push_values[pc]} is the word the PUSH at C{pc} pushes
    (L{None} where no PUSH starts), so the loop never decodes an immediate twice.
    """
    cached = _ANALYSIS_CACHE.get(code)
    if cached is not None:
        return cached
    padded = code + _CODE_PADDING
    destinations = []
    push_values: list[int | None] = [None] * len(code)
    position = 0
    length = len(code)
    while position < length:
        op = code[position]
        if op == JUMPDEST:
            destinations.append(position)
        elif PUSH1 <= op <= PUSH32:
            size = op - PUSH1 + 1
            push_values[position] = int.from_bytes(padded[position + 1 : position + 1 + size], "big")
            position += size
        position += 1
    result = (padded, frozenset(destinations), push_values)
    global _analysis_cache_size
    if _analysis_cache_size + length + _ANALYSIS_ENTRY_BYTES > _ANALYSIS_CACHE_BYTES:
        _ANALYSIS_CACHE.clear()
        _analysis_cache_size = 0
    _ANALYSIS_CACHE[code] = result
    _analysis_cache_size += length + _ANALYSIS_ENTRY_BYTES
    return result


def ensure_recursion_limit() -> None:
    """
    Raise Python's recursion limit so that 1024 nested calls fit.
    """
    if sys.getrecursionlimit() < _RECURSION_LIMIT:
        sys.setrecursionlimit(_RECURSION_LIMIT)


def process_message(message: Message, context: ExecutionContext) -> Evm:
    """
    Run a call message in a new frame: move the value, run the code (or the
    precompile), and undo everything if the frame fails.

    @return: the finished frame; C{error} is L{None} on success.
    """
    state = context.state
    snapshot = state.snapshot()
    state.touch(message.current_target)
    if message.should_transfer_value and message.value:
        state.transfer(message.caller, message.current_target, message.value)
    evm = execute_code(message, context)
    if evm.error is not None:
        state.revert(snapshot)
    return evm


def process_create_message(message: Message, context: ExecutionContext) -> Evm:
    """
    Run a creation message: set up the new account, run the initcode and
    deposit the code it returns (EIP-3541 prefix rule; the size limit and
    the price per byte of the fork's gas schedule: 24,576 bytes, 200 gas).

    @return: the finished frame; C{error} is L{None} on success.
    """
    state = context.state
    snapshot = state.snapshot()
    target = message.current_target
    state.destroy_storage(target)
    state.mark_created(target)
    state.increment_nonce(target)
    evm = process_message(message, context)
    if evm.error is None:
        code = evm.output
        try:
            if code[:1] == b"\xef":
                raise InvalidContractPrefixError
            schedule = context.fork.gas
            evm.gas_left -= len(code) * schedule.code_deposit
            if evm.gas_left < 0 or len(code) > schedule.max_code_size:
                raise OutOfGasError
        except ExceptionalHalt as error:
            state.revert(snapshot)
            evm.gas_left = 0
            evm.output = b""
            evm.error = error
            context.limit_dependent = True
        else:
            state.set_code(target, code)
    else:
        state.revert(snapshot)
    tracer = context.tracer
    if tracer is not None:
        # Reported here rather than in execute_code, so that the deposit's
        # cost and failure belong to the creation's frame.
        tracer.capture_exit(evm)
    return evm


def execute_code(message: Message, context: ExecutionContext) -> Evm:
    """
    Run the message's code (or its precompile) in a new frame.
    """
    code_address = message.code_address
    if code_address is not None:
        precompile = context.fork.precompiles.get(code_address)
        if precompile is not None:
            return _run_precompile(message, context, precompile)
    cancellation = context.cancellation
    if cancellation is not None:
        cancellation.check()
    code, destinations, push_values = analyse_code(message.code)
    evm = Evm(message, context, code, destinations)
    evm.push_values = push_values
    tracer = context.tracer
    if tracer is not None:
        _flush_pending_step(context, tracer)
        tracer.capture_enter(evm)
    if message.code:
        try:
            if tracer is None or not tracer.wants_steps:
                _run(evm)
            else:
                _run_traced(evm, tracer)
        except Stop:
            pass
        except Revert as error:
            evm.error = error
        except ExceptionalHalt as error:
            _fail(evm, error)
        except IndexError:
            _fail(evm, StackUnderflowError())
    if tracer is not None and not message.is_create:
        tracer.capture_exit(evm)
    return evm


def _fail(evm: Evm, error: ExceptionalHalt) -> None:
    """
    End a frame with an exceptional halt: all gas consumed, no output.
    """
    evm.gas_left = 0
    evm.output = b""
    evm.error = error
    evm.context.limit_dependent = True


def _run(evm: Evm) -> None:
    """
    The instruction loop without a tracer; it ends by raising a L{Halt}.

    PUSH0 to PUSH32, DUP, SWAP, POP, JUMPDEST, JUMP and JUMPI, nine in ten of the
    instructions compiled code executes, and the cheap ADD, SUB, LT, GT, EQ,
    ISZERO, AND, SHL and SHR, most of the rest, are done here rather than
    through the table, with the program counter and gas in local variables:
    the same steps as L{nodex.evm.instructions.stack},
    L{nodex.evm.instructions.control_flow}, L{nodex.evm.instructions.arithmetic}
    and L{nodex.evm.instructions.bitwise}, without a function call.  The
    locals are written back before any other instruction runs; an
    exceptional halt raised here needs no write-back, since it consumes all
    the gas anyway.

    A run that may be cancelled looks at its cancellation at the first JUMP
    or JUMPI after each L{CHECK_GAS} gas: the comparison of the gas with
    C{floor} there is the one every jump makes anyway (with a floor of 0
    for runs that cannot be cancelled), so the look costs nothing between
    two (L{nodex.evm.cancellation}).
    """
    code = evm.code
    table = evm.context.fork.instructions
    stack = evm.stack
    push_values = evm.push_values
    destinations = evm.valid_jump_destinations
    pc = evm.pc
    gas = evm.gas_left
    cancellation = evm.context.cancellation
    floor = 0 if cancellation is None else max(gas - CHECK_GAS, 0)
    blocks = code_blocks(code, push_values, destinations, table)
    entry = -1
    countdown = HOT_JUMPS
    if blocks is not None:
        pc, floor = blocks.run(evm, pc, floor, entry)
        entry = pc
        gas = evm.gas_left
    while True:
        op = code[pc]
        if op < 0x80:
            if op >= PUSH1:
                if len(stack) >= STACK_LIMIT:
                    raise StackOverflowError
                stack.append(push_values[pc])
                gas -= GAS_VERY_LOW
                pc += op - 0x5E
                continue
            if op <= SHR:
                # The cheap words of compiled code's arithmetic, comparisons
                # and masks: a third of the instructions the table would run
                # in an ERC-20 transfer.  The same steps as
                # nodex.evm.instructions.arithmetic and .bitwise (every fork
                # has them), without the call; other opcodes of this range
                # go to the table at once.
                if not INLINE_WORDS[op]:
                    evm.pc = pc
                    evm.gas_left = gas
                    table[op](evm)
                    pc = evm.pc
                    gas = evm.gas_left
                    continue
                if op == ISZERO:
                    stack.append(1 if stack.pop() == 0 else 0)
                elif op == AND:
                    stack.append(stack.pop() & stack.pop())
                elif op == EQ:
                    stack.append(1 if stack.pop() == stack.pop() else 0)
                elif op == SUB:
                    stack.append((stack.pop() - stack.pop()) & WORD_MASK)
                elif op == ADD:
                    stack.append((stack.pop() + stack.pop()) & WORD_MASK)
                elif op == SHL:
                    shift = stack.pop()
                    value = stack.pop()
                    stack.append((value << shift) & WORD_MASK if shift < 256 else 0)
                elif op == LT:
                    stack.append(1 if stack.pop() < stack.pop() else 0)
                elif op == GT:
                    stack.append(1 if stack.pop() > stack.pop() else 0)
                else:
                    # SHR, the last inline word
                    shift = stack.pop()
                    value = stack.pop()
                    stack.append(value >> shift if shift < 256 else 0)
                gas -= GAS_VERY_LOW
                pc += 1
                continue
            if op == PUSH0:
                if len(stack) >= STACK_LIMIT:
                    raise StackOverflowError
                stack.append(0)
                gas -= GAS_BASE
                pc += 1
                continue
            if op == JUMPDEST:
                gas -= GAS_JUMPDEST
                pc += 1
                continue
            if op == POP:
                stack.pop()
                gas -= GAS_BASE
                pc += 1
                continue
            if op == JUMP:
                destination = stack.pop()
                gas -= GAS_MID
                if gas < floor:
                    floor = _checkpoint(gas, cancellation)
                if destination not in destinations:
                    raise InvalidJumpDestError
                pc = destination
                if blocks is None:
                    countdown -= 1
                    if countdown:
                        continue
                    blocks = code_blocks(code, push_values, destinations, table, True)
                    if blocks is None:
                        continue
                evm.gas_left = gas
                pc, floor = blocks.run(evm, pc, floor, entry)
                entry = pc
                gas = evm.gas_left
                continue
            if op == JUMPI:
                destination = stack.pop()
                condition = stack.pop()
                gas -= GAS_HIGH
                if gas < floor:
                    floor = _checkpoint(gas, cancellation)
                if not condition:
                    pc += 1
                elif destination in destinations:
                    pc = destination
                else:
                    raise InvalidJumpDestError
                # The same hand-over as JUMP's above, written out again: one
                # branch for both jumps would cost every jump a comparison.
                if blocks is None:
                    countdown -= 1
                    if countdown:
                        continue
                    blocks = code_blocks(code, push_values, destinations, table, True)
                    if blocks is None:
                        continue
                evm.gas_left = gas
                pc, floor = blocks.run(evm, pc, floor, entry)
                entry = pc
                gas = evm.gas_left
                continue
        elif op < 0x90:
            # DUP1 to DUP16
            if len(stack) >= STACK_LIMIT:
                raise StackOverflowError
            stack.append(stack[0x7F - op])
            gas -= GAS_VERY_LOW
            pc += 1
            continue
        elif op < 0xA0:
            # SWAP1 to SWAP16
            if len(stack) < op - 0x8E:
                raise StackUnderflowError
            index = 0x8E - op
            stack[-1], stack[index] = stack[index], stack[-1]
            gas -= GAS_VERY_LOW
            pc += 1
            continue
        evm.pc = pc
        evm.gas_left = gas
        table[op](evm)
        pc = evm.pc
        gas = evm.gas_left


def _checkpoint(gas: int, cancellation: Cancellation | None) -> int:
    """
    A jump found the gas below its floor: out of gas, or time to look at
    the cancellation.

    @return: the next floor.
    @raise OutOfGasError: the gas is negative.
    @raise ExecutionCancelledError: the run is cancelled.
    """
    if gas < 0:
        raise OutOfGasError
    assert cancellation is not None
    cancellation.check()
    return max(gas - CHECK_GAS, 0)


def _run_traced(evm: Evm, tracer: Tracer) -> None:
    """
    The instruction loop with a tracer: gas and stack limits are checked
    after every instruction so that each step reports its exact outcome.

    A CALL or CREATE step is reported when its cost is known: as its child
    frame starts (the gas handed over included), or after it if no child runs.
    """
    code = evm.code
    context = evm.context
    table = context.fork.instructions
    wants_stack = tracer.wants_stack
    wants_memory = tracer.wants_memory
    stack_ops = getattr(tracer, "stack_ops", ())
    stack: list[int] = []
    memory = b""
    cancellation = context.cancellation
    steps = 0
    while True:
        if cancellation is not None:
            steps += 1
            if not steps % _TRACED_CHECK_STEPS:
                cancellation.check()
        pc = evm.pc
        op = code[pc]
        gas = evm.gas_left
        if wants_stack or op in stack_ops:
            stack = list(evm.stack)
        elif stack:
            stack = []
        if wants_memory:
            memory = bytes(evm.memory)
        if op in _CALL_FAMILY:
            context.pending_step = (evm, pc, op, gas, stack, memory)
        try:
            table[op](evm)
            if evm.gas_left < 0:
                raise OutOfGasError
            if len(evm.stack) > STACK_LIMIT:
                raise StackOverflowError
        except Halt as halt:
            error = halt if isinstance(halt, ExceptionalHalt) else None
            cost = gas - max(evm.gas_left, 0) if error is None else 0
            context.pending_step = None
            tracer.capture_step(evm, pc, op, gas, cost, stack, memory, error)
            raise
        except IndexError:
            context.pending_step = None
            tracer.capture_step(evm, pc, op, gas, 0, stack, memory, StackUnderflowError())
            raise
        if op not in _CALL_FAMILY:
            tracer.capture_step(evm, pc, op, gas, gas - evm.gas_left, stack, memory, None)
        else:
            _flush_pending_step(context, tracer)


def _flush_pending_step(context: ExecutionContext, tracer: Tracer) -> None:
    """
    Report a waiting CALL or CREATE step, its cost being what its frame has paid so far.
    """
    pending = context.pending_step
    if pending is not None:
        context.pending_step = None
        evm, pc, op, gas, stack, memory = pending
        tracer.capture_step(evm, pc, op, gas, gas - evm.gas_left, stack, memory, None)


def _run_precompile(message: Message, context: ExecutionContext, precompile: Precompile) -> Evm:
    """
    Run a precompiled contract: charge its gas, then compute its output; a
    refused input is an exceptional halt.
    """
    evm = Evm(message, context, b"", frozenset())
    tracer = context.tracer
    if tracer is not None:
        _flush_pending_step(context, tracer)
        tracer.capture_enter(evm)
    try:
        evm.gas_left -= precompile.gas(message.data)
        if evm.gas_left < 0:
            raise OutOfGasError
        evm.output = precompile.run(message.data)
    except ExceptionalHalt as error:
        _fail(evm, error)
    except PrecompileError as error:
        _fail(evm, PrecompileFailedError(str(error)))
    if tracer is not None and not message.is_create:
        tracer.capture_exit(evm)
    return evm


__all__ = [
    "analyse_code",
    "ensure_recursion_limit",
    "execute_code",
    "process_create_message",
    "process_message",
]
