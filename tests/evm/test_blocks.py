"""
Tests for L{nodex.evm.blocks}: code run through compiled blocks gives what
the instruction loop alone gives (gas, output, error, stack, memory,
storage, logs), on random and crafted programs, and stays bounded.
"""

import random

from twisted.trial.unittest import SynchronousTestCase

from nodex.evm import blocks, interpreter
from nodex.evm.cancellation import Cancellation, ExecutionCancelledError
from nodex.evm.environment import TransactionEnvironment
from nodex.evm.errors import InvalidJumpDestError, OutOfGasError, StackOverflowError, StackUnderflowError
from nodex.evm.forks import DEFAULT_FORK
from nodex.evm.frame import ExecutionContext, Message
from nodex.evm.interpreter import analyse_code, process_message
from tests.evm.test_cancellation import ENDLESS, ENDLESS_JUMPI, _Clock
from tests.evm.test_cancellation import run as run_cancellable
from tests.evm.test_instructions import BLOCK, CALLER, CONTRACT, OTHER, make_state, push

SELF = int.from_bytes(CONTRACT, "big")
OTHER_WORD = int.from_bytes(OTHER, "big")

# OTHER's code: store its calldata's first word, log it, return 32 bytes, or revert when the word is odd.
OTHER_CODE = (
    push(0) + b"\x35" + b"\x80" + push(1) + b"\x55" + b"\x80" + push(0) + b"\x52"
    + push(1) + b"\x16" + push(0x1D) + b"\x57" + push(32) + push(0) + b"\xf3"
    + b"\x5b" + push(32) + push(0) + b"\xfd"
)

Outcome = tuple[object, ...]


def outcome(code: bytes, gas: int, data: bytes = b"", mode: str = "off") -> Outcome:
    """
    Run C{code} as C{CONTRACT}'s with the block functions off, or eager
    (every block compiled the first time it is reached; the code run once
    before, so that the blocks that end in a halt are compiled too).

    @return: everything a caller could observe of the frame.
    """
    if mode == "off":
        thresholds = (0, 0)
    else:
        thresholds = (1, 0)
    saved = blocks.CODE_THRESHOLD, blocks.BLOCK_THRESHOLD
    blocks.CODE_THRESHOLD, blocks.BLOCK_THRESHOLD = thresholds
    try:
        blocks._clear()
        if mode == "warm":
            _run(code, gas, data)
        result = _run(code, gas, data)
    finally:
        blocks.CODE_THRESHOLD, blocks.BLOCK_THRESHOLD = saved
        blocks._clear()
    return result


def _run(code: bytes, gas: int, data: bytes) -> Outcome:
    state = make_state(code, {OTHER: OTHER_CODE})
    context = ExecutionContext(state, BLOCK, TransactionEnvironment(CALLER, 7))
    message = Message(CALLER, CONTRACT, CONTRACT, gas, 0, data, CONTRACT, code, 0)
    evm = process_message(message, context)
    storage = tuple(state.get_storage(address, key) for address in (CONTRACT, OTHER) for key in range(8))
    return (
        evm.gas_left,
        evm.output,
        type(evm.error),
        tuple(evm.stack),
        bytes(evm.memory),
        tuple(evm.logs),
        evm.refund_counter,
        evm.return_data,
        storage,
    )


def compiled_count(code: bytes, gas: int) -> int:
    """
    How many blocks of C{code} an eager run compiles.
    """
    saved = blocks.CODE_THRESHOLD, blocks.BLOCK_THRESHOLD
    blocks.CODE_THRESHOLD, blocks.BLOCK_THRESHOLD = 1, 0
    try:
        blocks._clear()
        _run(code, gas, b"")
        return sum(len(entry.compiled) for entry in blocks._CACHE.values())
    finally:
        blocks.CODE_THRESHOLD, blocks.BLOCK_THRESHOLD = saved
        blocks._clear()


# Opcodes a random program draws from, by kind.
_INLINE = [0x01, 0x02, 0x03, 0x04, 0x10, 0x11, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1B, 0x1C]
_TABLE = [0x05, 0x06, 0x07, 0x08, 0x0A, 0x0B, 0x12, 0x13, 0x1A, 0x1D, 0x1E, 0x20, 0x30, 0x33, 0x34, 0x35, 0x36,
          0x3D, 0x51, 0x52, 0x53, 0x54, 0x55, 0x58, 0x59, 0x5A, 0x5C, 0x5D, 0xA0, 0xA1]
_HALTS = [0x00, 0xF3, 0xFD, 0xFE, 0x0C, 0xEF, 0xFF]


class _Program:
    """
    A random program being written: its bytes, its JUMPDESTs, and the
    places of the PUSH2s whose destinations are chosen once all is laid out.
    """

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.code = bytearray()
        self.jumpdests: list[int] = []
        self.holes: list[int] = []

    def small(self) -> None:
        self.code += push(self.rng.choice([0, 1, 2, 3, 4, 5, 31, 32, 64, 255, 256]))

    def piece(self) -> None:
        rng = self.rng
        kind = rng.random()
        code = self.code
        if kind < 0.25:
            self.small()
        elif kind < 0.3:
            code += push(rng.getrandbits(rng.choice([8, 64, 255, 256])) or 1)
        elif kind < 0.4:
            code.append(0x80 + rng.randrange(rng.choice([3, 16])))
        elif kind < 0.5:
            code.append(0x90 + rng.randrange(rng.choice([3, 16])))
        elif kind < 0.55:
            code.append(0x50)
        elif kind < 0.7:
            code.append(rng.choice(_INLINE))
        elif kind < 0.78:
            self.small()
            self.small()
            code.append(rng.choice(_TABLE))
        elif kind < 0.84:
            self.jumpdests.append(len(code))
            code.append(0x5B)
        elif kind < 0.93:
            self.holes.append(len(code))
            code += b"\x61\x00\x00"
            code.append(rng.choice([0x56, 0x57, 0x57]))
        elif kind < 0.95:
            # CALL OTHER or itself, with a little gas
            code += push(0) * 2 + push(0) + push(32) + push(rng.choice([1, 2]))
            code += push(0) + push(rng.choice([OTHER_WORD, SELF])) + push(rng.choice([0, 500, 5000])) + b"\xf1"
        elif kind < 0.96:
            # a JUMPDEST inside PUSH data
            self.jumpdests.append(-len(code) - 1)
            code += b"\x61\x5b\x5b"
        elif kind < 0.975:
            code.append(rng.choice(_HALTS))
        else:
            code += push(32) + push(0) + bytes([rng.choice([0xF3, 0xFD])])

    def finish(self) -> bytes:
        rng = self.rng
        code = self.code
        targets = [place for place in self.jumpdests if place >= 0] or [0]
        for hole in self.holes:
            choice = rng.random()
            if choice < 0.8:
                target = rng.choice(targets)
            elif choice < 0.9 and any(place < 0 for place in self.jumpdests):
                target = -rng.choice([place for place in self.jumpdests if place < 0])
            else:
                target = rng.randrange(len(code) + 4)
            code[hole + 1 : hole + 3] = target.to_bytes(2, "big")
        if rng.random() < 0.2:
            # a truncated PUSH at the end
            code += bytes([rng.choice([0x61, 0x7F])]) + b"\x5b"
        return bytes(code)


def random_program(seed: int) -> bytes:
    """
    A random program of pushes, DUPs and SWAPs, arithmetic, table
    instructions, JUMPDESTs and jumps (mostly to them), calls and halts.
    """
    rng = random.Random(seed)
    program = _Program(rng)
    for _ in range(rng.randrange(5, 120)):
        program.piece()
    return program.finish()


class DifferentialTests(SynchronousTestCase):
    """
    Programs run with the block functions off and eager give the same outcome.
    """

    def assert_same(self, code: bytes, gas: int, data: bytes = b"") -> Outcome:
        expected = outcome(code, gas, data, "off")
        self.assertEqual(outcome(code, gas, data, "eager"), expected, (code.hex(), gas))
        self.assertEqual(outcome(code, gas, data, "warm"), expected, (code.hex(), gas))
        return expected

    def assert_same_at_every_gas(self, code: bytes, gas: int = 100_000) -> None:
        """
        The same outcome with enough gas, and with the gas that runs out at
        each point near the end and in the middle.
        """
        used = gas - outcome(code, gas)[0]
        for amount in {used + 1, used, used - 1, used - 2, used - 3, used // 2, used // 3, 1, 0}:
            if amount >= 0:
                self.assert_same(code, amount)

    def test_random_programs(self) -> None:
        """
        1,000 random programs, each with its gas to spare and short of it at
        several points, and with calldata.
        """
        compiled = 0
        for seed in range(1000):
            code = random_program(seed)
            self.assert_same(code, 30_000, (seed * 7919).to_bytes(40, "big"))
            used = 30_000 - outcome(code, 30_000)[0]
            for amount in (used - 1, used // 2, used // 5):
                if amount > 0:
                    self.assert_same(code, amount)
            compiled += compiled_count(code, 30_000)
        self.assertGreater(compiled, 1000)

    def test_straight_code(self) -> None:
        """
        Pushes, DUPs, SWAPs and arithmetic folded at compile time or not, then returned.
        """
        word = 2**256 - 1
        for code in [
            push(3) + push(5) + b"\x01\x03" + push(word) + b"\x02\x04\x19" + push(200) + b"\x1b" + push(7) + b"\x1c",
            push(1) + push(2) + push(3) + b"\x82\x91\x90\x50\x81\x92" + push(0) + b"\x35\x01\x15\x15",
            push(0) + b"\x35" + push(1) + b"\x1b" + push(300) + b"\x1c\x80\x80\x01\x90\x03",
        ]:
            returned = code + push(0) + b"\x52" + push(32) + push(0) + b"\xf3"
            body = push(len(returned) + 4) + b"\x56" + returned + b"\x5b" + push(4) + b"\x56"
            self.assert_same_at_every_gas(returned)
            self.assert_same_at_every_gas(body)

    def test_stack_limits_at_block_edges(self) -> None:
        """
        A block entered with a stack too full or too empty for it is left to
        the loop, which fails as it always has.
        """
        full = push(1) * 1020
        grows = b"\x5b" + push(1) * 5 + push(0) + b"\x56"
        code = full + push(len(full) + 4) + b"\x56" + grows
        self.assertIs(outcome(code, 100_000)[2], StackOverflowError)
        self.assert_same(code, 100_000)
        shallow = push(4) + b"\x56\x00\x5b\x01\x50\x00"
        self.assertIs(outcome(shallow, 100_000)[2], StackUnderflowError)
        self.assert_same(shallow, 100_000)
        swap_deep = push(1) + push(6) + b"\x56\x00\x00\x00\x5b\x9f\x00"
        self.assert_same(swap_deep, 100_000)
        just_fits = push(1) * 1019 + push(2042) + b"\x56" + b"\x5b" + push(1) * 5 + b"\x00"
        self.assertIs(outcome(just_fits, 100_000)[2], type(None))
        self.assertEqual(len(outcome(just_fits, 100_000, mode="warm")[3]), 1024)
        self.assert_same(just_fits, 100_000)

    def test_jumps(self) -> None:
        """
        Jumps to JUMPDESTs, to a JUMPDEST byte inside PUSH data, past the
        end, computed, and a JUMPI not taken.
        """
        cases = [
            push(5) + b"\x56\x00\x00\x5b" + push(1) + push(12) + b"\x57\x00\x00\x5b\x00",
            push(3) + b"\x56\x61\x5b\x5b\x00",
            push(2) + b"\x56\x5b\x00",
            push(100) + b"\x56",
            push(0) + b"\x35" + b"\x56\x5b\x00\x5b\x00",
            push(0) + push(7) + b"\x57" + push(1) + b"\x00\x5b\x00",
            push(1) + push(9) + b"\x57" + b"\x00\x00\x00\x00\x5b\x00",
        ]
        for code in cases:
            for data in (b"", (4).to_bytes(32, "big"), (6).to_bytes(32, "big")):
                self.assert_same(code, 1000, data)
        self.assertIs(outcome(cases[1], 1000)[2], InvalidJumpDestError)

    def test_out_of_gas_at_and_inside_blocks(self) -> None:
        """
        A loop whose gas runs out at each possible step, with and without table instructions.
        """
        loop = b"\x5b" + push(1) + b"\x01\x80" + push(0) + b"\x52" + push(0) + b"\x56"
        self.assert_same_at_every_gas(push(0) + loop.replace(push(0) + b"\x56", push(1) + b"\x56"), 5_000)
        pure = push(0) + b"\x5b" + push(1) + b"\x01\x80\x50" + push(1) + b"\x56"
        self.assert_same_at_every_gas(pure, 3_000)
        self.assertIs(outcome(pure, 3_000)[2], OutOfGasError)

    def test_table_instructions_in_blocks(self) -> None:
        """
        Memory, storage, transient storage, logs, KECCAK256, GAS, PC, MSIZE
        and calls inside blocks, then RETURN or REVERT.
        """
        body = (
            push(0x42) + push(0) + b"\x52" + push(0) + b"\x51" + push(3) + b"\x55" + push(3) + b"\x54"
            + push(9) + b"\x5d" + push(9) + b"\x5c" + push(32) + push(0) + b"\x20" + b"\x5a\x58\x59"
            + push(0xAB) + push(32) + push(0) + b"\xa1"
            + push(0) * 2 + push(32) + push(0) + push(0) + push(OTHER_WORD) + b"\x5a\xf1"
            + push(0) * 2 + push(32) + push(0) + push(0) + push(OTHER_WORD) + push(30_000) + b"\xf1"
            + b"\x3d" + push(0) + push(0) + b"\x55"
        )
        for end in (push(64) + push(0) + b"\xf3", push(64) + push(0) + b"\xfd", b"\x00", b"\xfe"):
            code = push(4) + b"\x56\x00\x5b" + body + end
            for data in (b"", (3).to_bytes(32, "big")):
                self.assert_same(code, 200_000, data)
            self.assert_same_at_every_gas(code, 200_000)

    def test_message_words_inline(self) -> None:
        """
        ADDRESS, CALLER, CALLVALUE, CALLDATASIZE and CALLDATALOAD (at
        constant and computed offsets: inside, across and past the end of
        calldata of several lengths, and near 2**256) done inline give what
        the table gives, at every gas near the end.
        """
        word = 2**256 - 1
        offsets = [0, 1, 4, 31, 32, 33, 35, 36, 67, 68, 100, 2**64, 2**255, word - 31, word]
        for offset in offsets:
            constant = push(offset) + b"\x35"
            computed = push(offset) + b"\x80\x50" + push(0) + b"\x01\x35"
            for load in (constant, computed):
                body = b"\x30\x33\x34\x36" + load + b"\x18\x18\x18\x18" + push(0) + b"\x52"
                code = push(4) + b"\x56\x00\x5b" + body + push(32) + push(0) + b"\xf3"
                for length in (0, 1, 4, 31, 32, 33, 36, 68):
                    data = bytes(range(1, length + 1))
                    self.assert_same(code, 10_000, data)
                self.assert_same_at_every_gas(code, 10_000)

    def test_memory_words_inline(self) -> None:
        """
        MLOAD and MSTORE at offsets around the end of memory of several
        sizes (no growth, growth by a word, growth past the gas, offsets near
        2**64 and 2**256), constant and computed, with words of the block
        not yet written back to the stack when the growth runs out of gas.
        """
        word = 2**256 - 1
        for size in (0, 32, 64, 96):
            grow = push(0xEE) + push(size - 32) + b"\x52" if size else b""
            for offset in (0, 1, size - 33, size - 32, size - 31, size, size + 1, 1000, 2**64, word - 31, word):
                if offset < 0:
                    continue
                for computed in (False, True):
                    where = push(offset) + (b"\x80\x50" + push(0) + b"\x01" if computed else b"")
                    store = push(7) + push(0x1234) + where + b"\x52"
                    load = push(9) + where + b"\x51"
                    for body in (store + load, load + store, push(3) + b"\x80" + where + b"\x51\x01" + where + b"\x52"):
                        code = push(4) + b"\x56\x00\x5b" + grow + body + b"\x59" + push(0) + b"\xf3"
                        self.assert_same(code, 100_000)
                        self.assert_same_at_every_gas(code, 100_000)
        # OutOfGasError in a growth, with words of the block above the stack's
        huge = push(1) + push(2) + b"\x80\x91" + push(5) + push(2**64) + b"\x52\x00"
        self.assertIs(outcome(push(4) + b"\x56\x00\x5b" + huge, 100_000)[2], OutOfGasError)
        self.assert_same(push(4) + b"\x56\x00\x5b" + huge, 100_000)
        lifted = push(1) + push(2) + push(3) + push(4) + b"\x56\x00\x5b" + b"\x90\x50" + push(2**40) + b"\x51\x00"
        self.assert_same(lifted, 100_000)

    def test_inline_only_for_the_table_functions(self) -> None:
        """
        The memory and message words are inline under the table that holds
        their usual functions, and called through a table that holds others.
        """
        code, destinations, push_values = analyse_code(
            b"\x30\x33\x34\x36" + push(0) + b"\x35" + push(64) + b"\x51" + push(0) + b"\x52\x00"
        )
        table = DEFAULT_FORK.instructions
        source = blocks._translate(code, push_values, destinations, 0, table)
        self.assertEqual(sorted(source.tables), [0x00])
        other = list(table)
        for op in (0x30, 0x33, 0x34, 0x35, 0x36, 0x51, 0x52):
            other[op] = lambda evm: None
        source = blocks._translate(code, push_values, destinations, 0, other)
        self.assertEqual(sorted(source.tables), [0x00, 0x30, 0x33, 0x34, 0x35, 0x36, 0x51, 0x52])
        # Past MAX_WRITE_BACK words above the list, MSTORE goes through the table (which writes them back once).
        for count, ops in ((blocks.MAX_WRITE_BACK - 2, [0x00]), (blocks.MAX_WRITE_BACK - 1, [0x00, 0x52])):
            code, destinations, push_values = analyse_code(push(1) * count + push(2) + push(0) + b"\x52\x00")
            source = blocks._translate(code, push_values, destinations, 0, table)
            self.assertEqual(sorted(source.tables), ops)

    def test_random_memory_and_message_programs(self) -> None:
        """
        300 random programs of memory and calldata words at offsets near the
        end of memory and calldata and near 2**256, among arithmetic, jumps
        and table instructions, with calldata of several lengths.
        """
        word = 2**256 - 1
        for seed in range(300):
            rng = random.Random(-seed - 1)
            program = _Program(rng)
            for _ in range(rng.randrange(5, 60)):
                if rng.random() < 0.4:
                    offset = rng.choice([0, 1, 31, 32, 33, 63, 64, 65, 95, 96, 128, 200, 2**64, word - 31, word])
                    program.code += push(rng.getrandbits(256)) + push(offset)
                    if rng.random() < 0.3:
                        program.code += b"\x80\x50"
                    program.code.append(rng.choice([0x51, 0x52, 0x52, 0x35, 0x30, 0x33, 0x34, 0x36]))
                else:
                    program.piece()
            code = program.finish()
            data = bytes(rng.getrandbits(8) for _ in range(rng.choice([0, 1, 4, 32, 36, 68])))
            self.assert_same(code, 30_000, data)
            used = 30_000 - outcome(code, 30_000, data)[0]
            for amount in (used - 1, used // 2, used // 5):
                if amount > 0:
                    self.assert_same(code, amount, data)

    def test_recursion(self) -> None:
        """
        A contract that calls itself while its gas lasts runs the same blocks in nested frames.
        """
        code = (
            b"\x5a" + push(20_000) + b"\x10" + push(31) + b"\x57"
            + push(0) * 4 + push(0) + push(SELF) + b"\x5a" + push(64) + b"\x90\x04\xf1"
            + push(1) + b"\x01" + push(0) + b"\x55\x00" + b"\x5b\x00"
        )
        self.assert_same(code, 1_000_000)

    def test_long_blocks_are_cut(self) -> None:
        """
        A run of instructions longer than L{blocks.MAX_BLOCK_INSTRUCTIONS} is
        cut into blocks that follow each other, and no block function holds more.
        """
        long = push(1) * 700 + b"\x01" * 699 + b"\x80\x50" * 300 + push(0) + b"\x52" + push(32) + push(0) + b"\xf3"
        code = push(4) + b"\x56\x00\x5b" + long
        self.assert_same(code, 1_000_000)
        padded, destinations, push_values = analyse_code(code)
        table = DEFAULT_FORK.instructions
        _, lines = blocks.compile_block(padded, push_values, destinations, 4, table)
        self.assertLess(lines, 3 * blocks.MAX_BLOCK_INSTRUCTIONS)
        self.assertGreater(compiled_count(code, 1_000_000), 2100 // blocks.MAX_BLOCK_INSTRUCTIONS)


class BoundsTests(SynchronousTestCase):
    """
    Compiling stays bounded: hostile code, and the memory of compiled blocks.
    """

    def test_hostile_code(self) -> None:
        """
        24 KiB of every byte at random compiles from each of its JUMPDESTs
        into functions no longer than the cap.
        """
        rng = random.Random(5)
        code = bytes(rng.randrange(256) for _ in range(24 * 1024))
        padded, destinations, push_values = analyse_code(code)
        table = DEFAULT_FORK.instructions
        for start in sorted(destinations)[:200]:
            _, lines = blocks.compile_block(padded, push_values, destinations, start, table)
            self.assertLess(lines, 3 * blocks.MAX_BLOCK_INSTRUCTIONS)

    def test_bound_drops_everything(self) -> None:
        """
        Past L{blocks.MAX_COMPILED_INSTRUCTIONS} compiled lines, every compiled block is dropped.
        """
        self.patch(blocks, "MAX_COMPILED_INSTRUCTIONS", 30)
        code = push(4) + b"\x56\x00\x5b" + push(1) * 20 + push(0) + b"\x56"
        compiled_count(code, 10_000)
        blocks.CODE_THRESHOLD, saved = 1, blocks.CODE_THRESHOLD
        try:
            _run(code, 10_000, b"")
            self.assertLessEqual(blocks._compiled_instructions, 30)
        finally:
            blocks.CODE_THRESHOLD = saved
            blocks._clear()

    def test_many_tiny_codes(self) -> None:
        """
        Codes of a byte each are counted by more than their bytes: the cache
        holds at most L{blocks._CACHE_BYTES} over 512 of them.
        """
        self.addCleanup(blocks._clear)
        blocks._clear()
        table = DEFAULT_FORK.instructions
        limit = blocks._CACHE_BYTES // blocks._ENTRY_BYTES
        for value in range(limit + 100):
            code = value.to_bytes(3, "big")
            blocks.code_blocks(code, [None] * 3, frozenset(), table)
            self.assertLessEqual(len(blocks._CACHE), limit)

    def test_thresholds(self) -> None:
        """
        With the default thresholds, a block is compiled only after the
        code has run L{blocks.CODE_THRESHOLD} frames and the block has been
        run to its end L{blocks.BLOCK_THRESHOLD} times.
        """
        self.patch(blocks, "CODE_THRESHOLD", 3)
        self.patch(blocks, "BLOCK_THRESHOLD", 2)
        self.patch(interpreter, "HOT_JUMPS", 1024)
        self.addCleanup(blocks._clear)
        blocks._clear()
        code = push(4) + b"\x56\x00\x5b" + push(9) + b"\x56\x00\x00\x5b\x00"
        counts = []
        for _ in range(6):
            _run(code, 10_000, b"")
            counts.append(sum(len(entry.compiled) for entry in blocks._CACHE.values()))
        self.assertEqual(counts, [0, 0, 0, 1, 1, 1])

    def test_loop_of_one_frame(self) -> None:
        """
        One frame's loop is compiled after L{interpreter.HOT_JUMPS} jumps,
        and then L{blocks.BLOCK_THRESHOLD} runs of its block, whatever the code's frames.
        """
        self.patch(blocks, "CODE_THRESHOLD", 16)
        self.patch(blocks, "BLOCK_THRESHOLD", 64)
        self.patch(interpreter, "HOT_JUMPS", 1024)
        self.addCleanup(blocks._clear)
        blocks._clear()
        loop = push(3000) + b"\x5b" + push(1) + b"\x90\x03\x80" + push(3) + b"\x57\x00"
        shorter = push(1000) + loop[3:]
        _run(shorter, 10**6, b"")
        self.assertEqual(sum(len(entry.compiled) for entry in blocks._CACHE.values()), 0)
        blocks._clear()
        _run(loop, 10**6, b"")
        self.assertEqual(sum(len(entry.compiled) for entry in blocks._CACHE.values()), 1)


class CompiledCancellationTests(SynchronousTestCase):
    """
    Loops of compiled blocks still look at their cancellation.
    """

    def test_endless_compiled_loops_stop(self) -> None:
        """
        An endless loop through compiled blocks stops at the first look
        after its deadline, as the loop alone does.
        """
        self.patch(blocks, "CODE_THRESHOLD", 1)
        self.patch(blocks, "BLOCK_THRESHOLD", 0)
        self.addCleanup(blocks._clear)
        for code, reads in ((ENDLESS, 5), (ENDLESS_JUMPI, 3)):
            blocks._clear()
            clock = _Clock()
            cancellation = Cancellation(reads - 0.5, clock)
            with self.assertRaises(ExecutionCancelledError):
                run_cancellable(code, 10**15, cancellation)
            self.assertEqual(clock.reads, reads)
            self.assertTrue(any(entry.compiled for entry in blocks._CACHE.values()))

    def test_gas_counted_as_before(self) -> None:
        """
        A cancellable run that ends out of gas uses all its gas, compiled or not.
        """
        self.patch(blocks, "CODE_THRESHOLD", 1)
        self.patch(blocks, "BLOCK_THRESHOLD", 0)
        self.addCleanup(blocks._clear)
        clock = _Clock()
        used = run_cancellable(ENDLESS, 300_000, Cancellation(10.0**9, clock))
        self.assertEqual(used, 300_000)
        self.assertIn(clock.reads, range(3, 6))

