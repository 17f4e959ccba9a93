"""
Hot basic blocks of contract code compiled into straight-line Python functions.

The instruction loop (L{nodex.evm.interpreter._run}) pays, for every EVM
instruction, the fetch of its opcode, a walk down a chain of comparisons,
the program counter's step and the gas subtraction.  For code that runs
often (a token contract called by every transaction of a block), this
module turns a run of instructions from one start to the next jump into
the source of a Python function, compiles it once, and calls it instead:
PUSH, DUP, SWAP and POP become moves between local names, inline
arithmetic is computed on them (or at compile time when its operands are
constants), the message's words (CALLER, CALLDATALOAD...) are read from
the frame and MLOAD/MSTORE done on its memory when it needs no growth, the
block's gas is subtracted once per segment, and the jump that ends the
block is checked against a destination known in advance.

A block function is exact: it changes the stack, memory, gas and program
counter as the loop would have.  It runs only when the stack height at its
entry is such that none of its inline instructions can underflow or
overflow the stack (otherwise it hands the block back to the loop, before
doing anything); between its inline instructions nothing observable
happens, so the gas is only written where an instruction of the table
(SLOAD, CALL..., or a growth of memory) or the jump at the end could look
at it, with the value the loop would have had there.  docs/evm.md, "Compiled basic blocks",
gives the design and its bounds.
"""

import os
from collections.abc import Callable
from typing import Any

from nodex.evm.cancellation import CHECK_GAS, Cancellation
from nodex.evm.errors import InvalidJumpDestError, OutOfGasError
from nodex.evm.gas import GAS_BASE, GAS_HIGH, GAS_JUMPDEST, GAS_LOW, GAS_MID, GAS_VERY_LOW, STACK_LIMIT
from nodex.evm.instructions import environment, memory
from nodex.evm.memory import expand_memory

WORD_MASK = 2**256 - 1

# A block's function returns the next program counter; a block that could
# not run (its stack precondition failed) returns its start plus FALLBACK,
# so that the loop runs it instead, and one that looked at its cancellation
# returns the complement (~pc) of the next, so that the loop moves its floor.
FALLBACK = 1 << 40

MAX_BLOCK_INSTRUCTIONS = 200
"""The most instructions one block function holds: a longer run is cut into blocks that follow each other."""

MAX_COMPILED_INSTRUCTIONS = 200_000
"""
The most instructions compiled into block functions before every compiled
block is dropped (with the counts): block functions took 30 to 185 bytes of
memory per instruction they hold (measured on the test token, random code,
runs of random PUSH32s and MSTOREs under L{MAX_WRITE_BACK} words), so some
37 MiB at most.
"""


def _thresholds() -> tuple[int, int, int]:
    """
    The code, jump and block thresholds from C{NODEX_EVM_BLOCKS}: unset or
    C{on}, the defaults; C{eager}, every block compiled the first time it is
    reached (for the tests); C{off}, never; three numbers C{code,jumps,block}
    (for measurements), those.
    """
    setting = os.environ.get("NODEX_EVM_BLOCKS", "on")
    if setting == "off":
        return 0, 0, 0
    if setting == "eager":
        return 1, 1, 0
    if setting.count(",") == 2:
        code, jumps, block = (int(part) for part in setting.split(","))
        return code, jumps, block
    return 16, 1024, 64


CODE_THRESHOLD, HOT_JUMPS, BLOCK_THRESHOLD = _thresholds()
"""
A code's blocks are counted from its C{CODE_THRESHOLD}-th frame on (0:
never), or from the C{HOT_JUMPS}-th jump of a frame (a loop); a block is
compiled once the loop has run it to its end C{BLOCK_THRESHOLD} times (0:
the first time it is reached, for the tests): a contract deployed for a
test and called a few times pays nothing, and compiling a block (some 20 µs
a line of its source, a few hundred µs for a block of a Solidity contract)
costs about what those runs cost.
"""

# Opcodes that the table runs inside a block, and how many words each takes
# from the stack and puts back; the table's function leaves the program
# counter at the next instruction.  Any other opcode that is not inline
# (below) nor a PUSH, DUP, SWAP, POP, PC or JUMPDEST ends its block.
_TABLE_EFFECTS: dict[int, tuple[int, int]] = {}
for _op in (0x05, 0x06, 0x07, 0x0A, 0x0B, 0x12, 0x13, 0x1A, 0x1D, 0x20):
    _TABLE_EFFECTS[_op] = (2, 1)
for _op in (0x08, 0x09):
    _TABLE_EFFECTS[_op] = (3, 1)
for _op in (0x1E, 0x31, 0x35, 0x3B, 0x3F, 0x40, 0x49, 0x51, 0x54, 0x5C):
    _TABLE_EFFECTS[_op] = (1, 1)
for _op in (0x30, 0x32, 0x33, 0x34, 0x36, 0x38, 0x3A, 0x3D, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x4A):
    _TABLE_EFFECTS[_op] = (0, 1)
for _op in (0x58, 0x59, 0x5A):
    _TABLE_EFFECTS[_op] = (0, 1)
for _op in (0x37, 0x39, 0x3E, 0x5E):
    _TABLE_EFFECTS[_op] = (3, 0)
for _op in (0x52, 0x53, 0x55, 0x5D):
    _TABLE_EFFECTS[_op] = (2, 0)
_TABLE_EFFECTS[0x3C] = (4, 0)
for _n in range(5):
    _TABLE_EFFECTS[0xA0 + _n] = (2 + _n, 0)
_TABLE_EFFECTS.update({0xF0: (3, 1), 0xF1: (7, 1), 0xF2: (7, 1), 0xF4: (6, 1), 0xF5: (4, 1), 0xFA: (6, 1)})

# The inline words: operands taken, gas, and the expression (a the top, b the second).
_INLINE: dict[int, tuple[int, int, str]] = {
    0x01: (2, GAS_VERY_LOW, "({a} + {b}) & {M}"),
    0x02: (2, GAS_LOW, "({a} * {b}) & {M}"),
    0x03: (2, GAS_VERY_LOW, "({a} - {b}) & {M}"),
    0x04: (2, GAS_LOW, "({a} // {b} if {b} else 0)"),
    0x10: (2, GAS_VERY_LOW, "(1 if {a} < {b} else 0)"),
    0x11: (2, GAS_VERY_LOW, "(1 if {a} > {b} else 0)"),
    0x14: (2, GAS_VERY_LOW, "(1 if {a} == {b} else 0)"),
    0x15: (1, GAS_VERY_LOW, "(1 if {a} == 0 else 0)"),
    0x16: (2, GAS_VERY_LOW, "({a} & {b})"),
    0x17: (2, GAS_VERY_LOW, "({a} | {b})"),
    0x18: (2, GAS_VERY_LOW, "({a} ^ {b})"),
    0x19: (1, GAS_VERY_LOW, "({M} ^ {a})"),
    0x1B: (2, GAS_VERY_LOW, "(({b} << {a}) & {M} if {a} < 256 else 0)"),
    0x1C: (2, GAS_VERY_LOW, "({b} >> {a} if {a} < 256 else 0)"),
}

# Instructions of the table done inline when the table holds these very
# functions: the frame's message (its fields never change during the frame)
# and memory words that need no growth.  What each pushes: an expression
# of the message's fields (m the message, D its data) and of the operand a.
_MESSAGE_WORDS: dict[int, tuple[Callable[..., None], int, str]] = {
    0x30: (environment.address, 0, 'B(m.current_target, "big")'),
    0x33: (environment.caller, 0, 'B(m.caller, "big")'),
    0x34: (environment.callvalue, 0, "m.value"),
    0x35: (environment.calldataload, 1, 'B(D[{a}:{a} + 32].ljust(32, Z), "big")'),
    0x36: (environment.calldatasize, 0, "len(D)"),
}
_MESSAGE_GAS = {0x30: GAS_BASE, 0x33: GAS_BASE, 0x34: GAS_BASE, 0x35: GAS_VERY_LOW, 0x36: GAS_BASE}
MLOAD = 0x51
MSTORE = 0x52
_MEMORY_WORDS = {MLOAD: memory.mload, MSTORE: memory.mstore}
MAX_WRITE_BACK = 16
"""
The most words of a block above the stack's list at an inline MLOAD or
MSTORE (its growth, if it runs out of gas, writes them back first): with
more, the instruction goes through the table, which writes them back once,
so that a block's source stays linear in its instructions.
"""

PUSH0 = 0x5F
PUSH1 = 0x60
PUSH32 = 0x7F
POP = 0x50
JUMP = 0x56
JUMPI = 0x57
PC = 0x58
JUMPDEST = 0x5B

BlockFunction = Callable[[Any, list[int], int], int]


def checkpoint(evm: Any, gas: int, destination: int, condition: int, following: int) -> int:
    """
    A block's jump found the gas below its floor: out of gas, or time to look
    at the cancellation; then the jump, as the loop makes it.

    @return: the complement of the next program counter (the loop moves its floor).
    @raise OutOfGasError: the gas is negative.
    @raise ExecutionCancelledError: the run is cancelled.
    @raise InvalidJumpDestError: the jump is taken to a byte that is no JUMPDEST.
    """
    if gas < 0:
        raise OutOfGasError
    cancellation: Cancellation | None = evm.context.cancellation
    assert cancellation is not None
    cancellation.check()
    if not condition:
        return ~following
    if destination in evm.valid_jump_destinations:
        return ~destination
    raise InvalidJumpDestError


def grow_in_evm(evm: Any, start: int, pending: int, pc: int) -> None:
    """
    An inline MLOAD or MSTORE needs memory beyond the frame's: grow it as the
    table's function would, the gas being C{evm.gas_left - pending} there
    (C{pending}, the block's gas not yet subtracted, MLOAD's or MSTORE's
    own included, is left to subtract, as the block had it).

    @raise OutOfGasError: the growth costs more than the gas left.
    """
    evm.pc = pc
    evm.gas_left -= pending
    expand_memory(evm, start, 32)
    evm.gas_left += pending


class _Source:
    """
    The source of one block function as it is written, and the stack as the
    source leaves it: the list's top C{lifted} words are shadowed by
    C{words}, the expressions (constants and local names, the top last) of
    the words above the rest of the list.  The list itself changes only
    where the words are written back (L{flush}).
    """

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.words: list[str] = []
        self.lifted = 0
        self.names = 0
        self.height = 0
        self.need = 0
        self.growth = 0
        self.gas = 0
        self.instructions = 0
        # Where the gas is: in evm.gas_left (at the entry, and after an
        # instruction of the table), or in the local name gas, and whether
        # evm.gas_left has been given it; where evm.pc stands, if known.
        self.gas_in_evm = True
        self.gas_written = False
        self.evm_pc = -1
        self.tables: dict[int, str] = {}
        # Whether the message (m, and its data D) and the memory (mem) have been read into local names.
        self.message = False
        self.data = False
        self.memory = False

    def emit(self, line: str) -> None:
        self.lines.append("    " + line)

    def name(self) -> str:
        self.names += 1
        return f"v{self.names}"

    def reads(self, count: int) -> None:
        """
        An instruction reads C{count} words: the entry's stack must hold what the block's own do not.
        """
        self.need = max(self.need, count - self.height)

    def grows(self, delta: int) -> None:
        self.height += delta
        self.growth = max(self.growth, self.height)

    def lift(self) -> None:
        """
        Shadow one more word of the list: read it into a local name.
        """
        self.lifted += 1
        value = self.name()
        self.emit(f"{value} = stack[-{self.lifted}]")
        self.words.insert(0, value)

    def peek(self, depth: int) -> str:
        """
        The expression of the word C{depth} from the top (1: the top), left in place.
        """
        words = self.words
        if depth <= len(words):
            return words[-depth]
        value = self.name()
        self.emit(f"{value} = stack[-{self.lifted + depth - len(words)}]")
        return value

    def take(self) -> str:
        """
        The expression of the top word, taken off the stack.
        """
        if not self.words:
            self.lift()
        return self.words.pop()

    def swap(self, depth: int) -> None:
        """
        Exchange the top word with the word C{depth} below it.
        """
        if not self.words:
            self.lift()
        words = self.words
        if depth < len(words):
            words[-1], words[-1 - depth] = words[-1 - depth], words[-1]
            return
        index = -(self.lifted + depth + 1 - len(words))
        value = self.name()
        self.emit(f"{value} = stack[{index}]")
        self.emit(f"stack[{index}] = {words[-1]}")
        words[-1] = value

    def write_back(self) -> str:
        """
        The statement that writes the words back to the list (empty: none needed).
        """
        words = self.words
        if self.lifted:
            if words:
                return f"stack[-{self.lifted}:] = ({', '.join(words)},)"
            return f"del stack[-{self.lifted}:]"
        if len(words) == 1:
            return f"stack.append({words[0]})"
        if words:
            return f"stack += ({', '.join(words)},)"
        return ""

    def flush(self) -> None:
        """
        Write the words back to the list.
        """
        line = self.write_back()
        if line:
            self.emit(line)
        self.words = []
        self.lifted = 0

    def spend(self) -> None:
        """
        Subtract the gas of the instructions since the last subtraction.
        """
        if self.gas:
            if self.gas_in_evm:
                self.emit(f"gas = evm.gas_left - {self.gas}")
            else:
                self.emit(f"gas -= {self.gas}")
            self.gas = 0
            self.gas_in_evm = False
            self.gas_written = False

    def write_gas(self) -> None:
        """
        Make C{evm.gas_left} hold the gas as the loop would have it here.
        """
        if self.gas and self.gas_in_evm:
            self.emit(f"evm.gas_left -= {self.gas}")
            self.gas = 0
            return
        self.spend()
        if not self.gas_in_evm and not self.gas_written:
            self.emit("evm.gas_left = gas")
            self.gas_written = True

    def table_call(self, op: int, pc: int) -> None:
        """
        Run one instruction through the table, with the stack, gas and program counter written back first.
        """
        self.flush()
        self.write_gas()
        function = self.tables.setdefault(op, f"t{op:02x}")
        if self.evm_pc != pc:
            self.emit(f"evm.pc = {pc}")
        self.emit(f"{function}(evm)")
        # The table's function leaves the gas in the frame and the program counter at the next instruction.
        self.gas_in_evm = True
        self.evm_pc = pc + 1

    def message_word(self, op: int) -> None:
        """
        ADDRESS, CALLER, CALLVALUE, CALLDATALOAD or CALLDATASIZE, from the frame's message.
        """
        _, operands, template = _MESSAGE_WORDS[op]
        if not self.message:
            self.emit("m = evm.message")
            self.message = True
        if "D" in template and not self.data:
            self.emit("D = m.data")
            self.data = True
        a = self.take() if operands else ""
        value = self.name()
        self.emit(f"{value} = " + template.format(a=a))
        self.words.append(value)
        self.gas += _MESSAGE_GAS[op]

    def memory_word(self, op: int, pc: int) -> None:
        """
        MLOAD or MSTORE on the memory as it is; one that reaches beyond it
        first grows it, as the table's function would (with the gas it would
        see, and the stack written back if the growth runs out of gas).
        """
        if not self.memory:
            # One read a block: a frame's memory is one bytearray for its
            # whole life (expand_memory extends it in place), so the name
            # stays right across the table's calls.
            self.emit("mem = evm.memory")
            self.memory = True
        start = self.take()
        value = self.take() if op == MSTORE else ""
        self.gas += GAS_VERY_LOW
        end = str(int(start) + 32) if _is_constant(start) else f"{start} + 32"
        self.emit(f"if {end} > len(mem):")
        # Inside a block the gas is always in evm.gas_left (only the jump at its end spends into a local name).
        assert self.gas_in_evm
        call = f"grow_in_evm(evm, {start}, {self.gas}, {pc})"
        self.evm_pc = -1
        write_back = self.write_back()
        if write_back:
            self.emit(f"    try: {call}")
            self.emit(f"    except OutOfGasError: {write_back}; raise")
        else:
            self.emit(f"    {call}")
        if op == MLOAD:
            word = self.name()
            self.emit(f'{word} = B(mem[{start}:{end}], "big")')
            self.words.append(word)
        else:
            data = repr(int(value).to_bytes(32, "big")) if _is_constant(value) else f'{value}.to_bytes(32, "big")'
            self.emit(f"mem[{start}:{end}] = {data}")


def _is_constant(expression: str) -> bool:
    return expression[0].isdigit()


def _translate(
    code: bytes, push_values: list[int | None], destinations: frozenset[int], start: int, table: list[Any]
) -> _Source:
    """
    The source of the block at C{start}: up to its jump, its halt or L{MAX_BLOCK_INSTRUCTIONS}.

    A JUMPDEST inside the block only costs its gas: a jump to it starts a block of its own.
    """
    source = _Source()
    pc = start
    count = 0
    while True:
        op = code[pc]
        if count >= MAX_BLOCK_INSTRUCTIONS:
            source.flush()
            source.write_gas()
            source.emit(f"return {pc}")
            return source
        count += 1
        source.instructions = count
        if PUSH1 <= op <= PUSH32 or op == PUSH0 or op == PC:
            value = 0 if op == PUSH0 else pc if op == PC else push_values[pc]
            source.words.append(str(value))
            source.grows(1)
            source.gas += GAS_VERY_LOW if op >= PUSH1 else GAS_BASE
            pc += op - 0x5E if op >= PUSH1 else 1
        elif 0x80 <= op < 0x90:
            depth = op - 0x7F
            source.reads(depth)
            source.words.append(source.peek(depth))
            source.grows(1)
            source.gas += GAS_VERY_LOW
            pc += 1
        elif 0x90 <= op < 0xA0:
            depth = op - 0x8F
            source.reads(depth + 1)
            source.swap(depth)
            source.gas += GAS_VERY_LOW
            pc += 1
        elif op == POP:
            source.reads(1)
            source.take()
            source.grows(-1)
            source.gas += GAS_BASE
            pc += 1
        elif op == JUMPDEST:
            source.gas += GAS_JUMPDEST
            pc += 1
        elif op in _INLINE:
            operands, gas, template = _INLINE[op]
            source.reads(operands)
            a = source.take()
            b = source.take() if operands == 2 else ""
            expression = template.format(a=a, b=b, M="M")
            if _is_constant(a) and (operands == 1 or _is_constant(b)):
                # constants only: folded as the block is compiled
                source.words.append(str(eval(expression, {"M": WORD_MASK})))
            else:
                value = source.name()
                source.emit(f"{value} = {expression}")
                source.words.append(value)
            source.grows(1 - operands)
            source.gas += gas
            pc += 1
        elif op == JUMP or op == JUMPI:
            _translate_jump(source, op, pc, destinations)
            return source
        elif op in _MESSAGE_WORDS and table[op] is _MESSAGE_WORDS[op][0]:
            operands = _MESSAGE_WORDS[op][1]
            source.reads(operands)
            source.message_word(op)
            source.grows(1 - operands)
            pc += 1
        elif op in _MEMORY_WORDS and table[op] is _MEMORY_WORDS[op] and len(source.words) <= MAX_WRITE_BACK:
            operands = 1 if op == MLOAD else 2
            source.reads(operands)
            source.memory_word(op, pc)
            source.grows(0 if op == MLOAD else -2)
            pc += 1
        elif op in _TABLE_EFFECTS:
            pops, pushes = _TABLE_EFFECTS[op]
            source.reads(pops)
            source.table_call(op, pc)
            source.grows(pushes - pops)
            pc += 1
        else:
            # A halt (STOP, RETURN, REVERT, INVALID, SELFDESTRUCT, an
            # undefined byte): the table runs it, and the loop goes on
            # wherever it leaves the program counter, if it returns.
            source.table_call(op, pc)
            source.emit("return evm.pc")
            return source


def _translate_jump(source: _Source, op: int, pc: int, destinations: frozenset[int]) -> None:
    """
    End the block with its JUMP or JUMPI: the gas, the floor check (as the loop makes it), the destination.
    """
    operands = 1 if op == JUMP else 2
    source.reads(operands)
    destination = source.take()
    condition = source.take() if op == JUMPI else "1"
    source.grows(-operands)
    source.gas += GAS_MID if op == JUMP else GAS_HIGH
    source.flush()
    source.spend()
    source.write_gas()
    source.emit(f"if gas < floor: return checkpoint(evm, gas, {destination}, {condition}, {pc + 1})")
    if not _is_constant(condition):
        source.emit(f"if not {condition}: return {pc + 1}")
    elif not int(condition):
        source.emit(f"return {pc + 1}")
        return
    if not _is_constant(destination):
        source.emit(f"if {destination} in destinations: return {destination}")
        source.emit("raise InvalidJumpDestError")
    elif int(destination) in destinations:
        source.emit(f"return {destination}")
    else:
        source.emit("raise InvalidJumpDestError")


def compile_block(
    code: bytes, push_values: list[int | None], destinations: frozenset[int], start: int, table: list[Any]
) -> tuple[BlockFunction, int]:
    """
    Compile the block of C{code} that starts at C{start}.

    @param code: the padded code of L{nodex.evm.interpreter.analyse_code}.
    @param table: the rule set's instruction table, whose functions the block calls.
    @return: the block's function (C{function(evm, stack, floor)} gives the
        next program counter) and how many instructions it holds.
    """
    source = _translate(code, push_values, destinations, start, table)
    low = source.need
    high = STACK_LIMIT - source.growth
    head = [
        "def block(evm, stack, floor, M=M):",
        f"    if not {low} <= len(stack) <= {high}: return {start + FALLBACK}",
    ]
    text = "\n".join(head + source.lines) + "\n"
    namespace: dict[str, Any] = {
        "checkpoint": checkpoint,
        "InvalidJumpDestError": InvalidJumpDestError,
        "OutOfGasError": OutOfGasError,
        "grow_in_evm": grow_in_evm,
        "B": int.from_bytes,
        "Z": b"\x00",
        "destinations": destinations,
        "M": WORD_MASK,
    }
    for op, name in source.tables.items():
        namespace[name] = table[op]
    # The text is this module's fixed templates filled with integers (words,
    # offsets, gas, program counters) and names it made: no byte of the
    # contract's code reaches it as text, so compiling it runs nothing the
    # code chose.
    exec(compile(text, f"<evm block {start}>", "exec"), namespace)
    return namespace["block"], source.instructions


class CodeBlocks:
    """
    The compiled blocks of one code under one instruction table, and how often its other blocks ran.
    """

    __slots__ = ("code", "push_values", "destinations", "table", "compiled", "counts", "frames")

    def __init__(
        self, code: bytes, push_values: list[int | None], destinations: frozenset[int], table: list[Any]
    ) -> None:
        self.code = code
        self.push_values = push_values
        self.destinations = destinations
        self.table = table
        self.compiled: dict[int, BlockFunction] = {}
        self.counts: dict[int, int] = {}
        self.frames = 0

    def run(self, evm: Any, pc: int, floor: int, entry: int) -> tuple[int, int]:
        """
        Run compiled blocks from C{pc} for as long as there are: the stack
        and the gas are C{evm}'s, the program counter and the floor of the
        cancellation checks are passed in and handed back.

        @param entry: where the loop started the run of instructions that
            ended in the jump to C{pc} (-1: none); that run reached its jump
            and paid its gas, and its block is compiled once it has done so
            L{BLOCK_THRESHOLD} times.
        @return: where the loop goes on (the C{entry} of the next call), and its floor.
        """
        compiled = self.compiled
        if entry >= 0 and entry not in compiled:
            counts = self.counts
            count = counts.get(entry, 0) + 1
            if count >= BLOCK_THRESHOLD:
                counts.pop(entry, None)
                compiled[entry] = _compile(self, entry)
            else:
                counts[entry] = count
        get = compiled.get
        stack = evm.stack
        while True:
            function = get(pc)
            if function is not None:
                pc = function(evm, stack, floor)
                continue
            if pc < 0:
                pc = ~pc
                floor = max(evm.gas_left - CHECK_GAS, 0)
                continue
            if pc >= FALLBACK:
                return pc - FALLBACK, floor
            if BLOCK_THRESHOLD:
                return pc, floor
            # Eager (a threshold of 0, for the tests): compiled the first time it is reached.
            compiled[pc] = _compile(self, pc)


_CACHE: dict[tuple[int, bytes], CodeBlocks] = {}
# The codes counted: their bytes are held (as the analysis cache holds them) up to this many bytes.
_CACHE_BYTES = 4 * 1024 * 1024
# What an entry costs beside its code's bytes (the key, the CodeBlocks and
# its two dicts, some 500 bytes): charged too, so that many tiny codes
# (a byte each) make at most some 8,000 entries, not four million.
_ENTRY_BYTES = 512
_cache_size = 0
_compiled_instructions = 0


def _compile(blocks: CodeBlocks, pc: int) -> BlockFunction:
    """
    Compile a block of C{blocks}, dropping every compiled block first if the bound is reached.
    """
    global _compiled_instructions
    function, size = compile_block(blocks.code, blocks.push_values, blocks.destinations, pc, blocks.table)
    if _compiled_instructions + size > MAX_COMPILED_INSTRUCTIONS:
        _clear()
    _compiled_instructions += size
    return function


def _clear() -> None:
    """
    Drop every compiled block and count (the frames running keep theirs until they end).
    """
    global _cache_size, _compiled_instructions
    _CACHE.clear()
    _cache_size = 0
    _compiled_instructions = 0


def code_blocks(
    code: bytes, push_values: list[int | None], destinations: frozenset[int], table: list[Any], hot: bool = False
) -> CodeBlocks | None:
    """
    The compiled blocks of C{code} if its frames are to count and run them, else L{None}.

    @param hot: the frame has made L{HOT_JUMPS} jumps: count its blocks from now on, whatever the code's frames.
    """
    if not CODE_THRESHOLD:
        return None
    key = (id(table), code)
    blocks = _CACHE.get(key)
    if blocks is None:
        global _cache_size
        if _cache_size + len(code) + _ENTRY_BYTES > _CACHE_BYTES:
            _clear()
        blocks = _CACHE[key] = CodeBlocks(code, push_values, destinations, table)
        _cache_size += len(code) + _ENTRY_BYTES
    if hot:
        blocks.frames = max(blocks.frames, CODE_THRESHOLD)
        return blocks
    blocks.frames += 1
    if blocks.frames < CODE_THRESHOLD:
        return None
    return blocks


__all__ = ["BLOCK_THRESHOLD", "CODE_THRESHOLD", "HOT_JUMPS", "CodeBlocks", "code_blocks", "compile_block"]
