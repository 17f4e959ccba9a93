"""
Tests for the instructions of L{nodex.evm.instructions}: results and gas.

Each test runs a short program as the code of one account, in a frame with
a known amount of gas, and looks at what it returned and what it used.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.crypto import keccak256
from nodex.evm.environment import BlockEnvironment, TransactionEnvironment
from nodex.evm.errors import (
    InvalidContractPrefixError,
    InvalidJumpDestError,
    InvalidOpcodeError,
    OutOfBoundsReadError,
    OutOfGasError,
    Revert,
    StackOverflowError,
    StackUnderflowError,
    WriteInStaticContextError,
)
from nodex.evm.forks import DEFAULT_FORK
from nodex.evm.frame import UNBOUNDED_MARGIN, Evm, ExecutionContext, Message
from nodex.evm.gas import max_message_call_gas
from nodex.evm.instructions import keccak as keccak_module
from nodex.evm.instructions.system import subframe_tolerance
from nodex.evm.interpreter import analyse_code, process_create_message, process_message
from nodex.primitives import Address
from nodex.state.state import State

CONTRACT = Address(b"\xcc" * 20)
CALLER = Address(b"\xaa" * 20)
OTHER = Address(b"\xbb" * 20)
GAS = 1_000_000
BLOCK = BlockEnvironment(coinbase=Address(b"\x01" * 20), number=5, timestamp=1000, gas_limit=30_000_000)


def push(value: int) -> bytes:
    """
    The shortest PUSH of C{value}.
    """
    if value == 0:
        return b"\x5f"
    raw = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return bytes([0x5F + len(raw)]) + raw


def return_top() -> bytes:
    """
    Code that stores the top item at memory 0 and returns that word.
    """
    return push(0) + b"\x52" + push(32) + push(0) + b"\xf3"


def make_state(code: bytes, accounts: dict[Address, bytes] | None = None) -> State:
    """
    A state where C{CONTRACT} holds C{code} and C{CALLER} a large balance.
    """
    state = State({}.get, {}.get)
    state.set_code(CONTRACT, code)
    state.set_balance(CALLER, 10**20)
    for address, other_code in (accounts or {}).items():
        state.set_code(address, other_code)
    state.begin_transaction()
    return state


def run(
    code: bytes, gas: int = GAS, data: bytes = b"", value: int = 0, is_static: bool = False, state: State | None = None
) -> Evm:
    """
    Run C{code} as C{CONTRACT}'s code, called by C{CALLER}.
    """
    state = state or make_state(code)
    context = ExecutionContext(state, BLOCK, TransactionEnvironment(CALLER, 7))
    message = Message(CALLER, CONTRACT, CONTRACT, gas, value, data, CONTRACT, state.get_code(CONTRACT), 0, True, is_static)
    return process_message(message, context)


def result_word(evm: Evm) -> int:
    """
    The word a L{return_top} program returned.
    """
    return int.from_bytes(evm.output, "big")


class ArithmeticTests(SynchronousTestCase):
    """
    Tests for arithmetic and bitwise results.
    """

    def compute(self, code: bytes) -> int:
        """
        Run C{code} followed by L{return_top} and return the word.
        """
        evm = run(code + return_top())
        self.assertIsNone(evm.error)
        return result_word(evm)

    def test_add_wraps(self) -> None:
        """
        ADD wraps modulo 2**256.
        """
        self.assertEqual(self.compute(push(2**256 - 1) + push(2) + b"\x01"), 1)

    def test_sub(self) -> None:
        """
        SUB takes the second item from the top one, wrapping below zero.
        """
        self.assertEqual(self.compute(push(3) + push(5) + b"\x03"), 2)
        self.assertEqual(self.compute(push(5) + push(3) + b"\x03"), 2**256 - 2)

    def test_signed_division(self) -> None:
        """
        SDIV truncates towards zero; SMOD takes the dividend's sign.
        """
        minus_seven = 2**256 - 7
        self.assertEqual(self.compute(push(2) + push(minus_seven) + b"\x05"), 2**256 - 3)
        self.assertEqual(self.compute(push(2) + push(minus_seven) + b"\x07"), 2**256 - 1)
        self.assertEqual(self.compute(push(0) + push(minus_seven) + b"\x05"), 0)

    def test_division_by_zero(self) -> None:
        """
        DIV, MOD, ADDMOD and MULMOD by zero give zero.
        """
        self.assertEqual(self.compute(push(0) + push(9) + b"\x04"), 0)
        self.assertEqual(self.compute(push(0) + push(9) + b"\x06"), 0)
        self.assertEqual(self.compute(push(0) + push(1) + push(2) + b"\x08"), 0)
        self.assertEqual(self.compute(push(0) + push(1) + push(2) + b"\x09"), 0)

    def test_mulmod_without_overflow(self) -> None:
        """
        MULMOD computes the product at full precision.
        """
        big = 2**256 - 1
        self.assertEqual(self.compute(push(12) + push(big) + push(big) + b"\x09"), (big * big) % 12)

    def test_signextend(self) -> None:
        """
        SIGNEXTEND copies the sign bit of the chosen byte upwards.
        """
        self.assertEqual(self.compute(push(0xFF) + push(0) + b"\x0b"), 2**256 - 1)
        self.assertEqual(self.compute(push(0x7F) + push(0) + b"\x0b"), 0x7F)

    def test_shifts(self) -> None:
        """
        SHL, SHR and SAR shift, giving 0 (or all ones for SAR of a negative) past 255.
        """
        self.assertEqual(self.compute(push(1) + push(255) + b"\x1b"), 2**255)
        self.assertEqual(self.compute(push(2**255) + push(255) + b"\x1c"), 1)
        self.assertEqual(self.compute(push(2**255) + push(300) + b"\x1d"), 2**256 - 1)
        self.assertEqual(self.compute(push(1) + push(256) + b"\x1b"), 0)

    def test_byte(self) -> None:
        """
        BYTE picks a byte counting from the most significant, 0 past 31.
        """
        self.assertEqual(self.compute(push(0xAB << 248) + push(0) + b"\x1a"), 0xAB)
        self.assertEqual(self.compute(push(0xAB) + push(32) + b"\x1a"), 0)

    def test_clz(self) -> None:
        """
        CLZ counts leading zero bits, 256 for zero.
        """
        self.assertEqual(self.compute(push(1) + b"\x1e"), 255)
        self.assertEqual(self.compute(push(0) + b"\x1e"), 256)
        self.assertEqual(self.compute(push(2**255) + b"\x1e"), 0)

    def test_comparisons(self) -> None:
        """
        SLT treats words as signed, LT as unsigned.
        """
        minus_one = 2**256 - 1
        self.assertEqual(self.compute(push(1) + push(minus_one) + b"\x12"), 1)
        self.assertEqual(self.compute(push(1) + push(minus_one) + b"\x10"), 0)

    def test_keccak(self) -> None:
        """
        KECCAK256 hashes a memory range.
        """
        code = push(0xAB) + push(0) + b"\x53" + push(1) + push(0) + b"\x20"
        self.assertEqual(self.compute(code), int.from_bytes(keccak256(b"\xab"), "big"))


    def test_keccak_of_two_words_kept(self) -> None:
        """
        KECCAK256 of 64 bytes (a mapping's slot) keeps the hashes it made,
        at most L{keccak_module.WORDS_KEPT}: an input seen before, one that
        differs in either word, and one seen before the kept hashes were
        dropped all hash to their own Keccak-256.
        """
        self.patch(keccak_module, "WORDS_KEPT", 3)
        self.patch(keccak_module, "_kept_words", {})

        def slot_of(key: int, slot: int) -> int:
            code = push(key) + push(0) + b"\x52" + push(slot) + push(32) + b"\x52" + push(64) + push(0) + b"\x20"
            return self.compute(code)

        pairs = [(1, 0), (1, 0), (2, 0), (1, 1), (2, 0), (2**160 - 1, 5), (1, 0), (3, 3), (1, 1)]
        for key, slot in pairs:
            expected = keccak256(key.to_bytes(32, "big") + slot.to_bytes(32, "big"))
            self.assertEqual(slot_of(key, slot), int.from_bytes(expected, "big"))
            self.assertLessEqual(len(keccak_module._kept_words), 3)
        self.assertIn((1).to_bytes(32, "big") + (1).to_bytes(32, "big"), keccak_module._kept_words)


class InlineInstructionTests(SynchronousTestCase):
    """
    The instructions the loop runs itself (L{nodex.evm.interpreter._run})
    give what the table's functions give.
    """

    WORDS = (0, 1, 2, 255, 256, 300, 2**255, 2**256 - 1)
    UNARY = (0x15,)
    BINARY = (0x01, 0x03, 0x10, 0x11, 0x14, 0x16, 0x1B, 0x1C)

    def table_result(self, op: int, operands: tuple[int, ...]) -> tuple[int, int]:
        """
        The word and the gas of C{op} on C{operands} (the first on top)
        through the fork's table.
        """
        evm = run(b"\x00")
        evm.stack.clear()
        evm.stack.extend(reversed(operands))
        evm.gas_left = 100
        evm.pc = 0
        DEFAULT_FORK.instructions[op](evm)
        self.assertEqual((len(evm.stack), evm.pc), (1, 1))
        return evm.stack[-1], 100 - evm.gas_left

    def check(self, op: int, operands: tuple[int, ...]) -> None:
        """
        Run C{op} on C{operands} in the loop and compare word and gas with the table's.
        """
        code = b"".join(push(word) for word in reversed(operands)) + bytes([op])
        pushes = sum(2 if word == 0 else 3 for word in operands)
        word, gas = self.table_result(op, operands)
        evm = run(code + return_top())
        self.assertIsNone(evm.error)
        self.assertEqual(result_word(evm), word, f"opcode {op:#x} on {operands}")
        evm = run(code)
        self.assertIsNone(evm.error)
        self.assertEqual(GAS - evm.gas_left, pushes + gas, f"gas of opcode {op:#x} on {operands}")

    def test_unary(self) -> None:
        """
        ISZERO of every edge word.
        """
        for op in self.UNARY:
            for word in self.WORDS:
                self.check(op, (word,))

    def test_binary(self) -> None:
        """
        ADD, SUB, LT, GT, EQ, AND, SHL and SHR of every pair of edge words
        (wrapping, shifts of 256 and more, signed-looking words).
        """
        for op in self.BINARY:
            for first in self.WORDS:
                for second in self.WORDS:
                    self.check(op, (first, second))

    def test_underflow(self) -> None:
        """
        An inline instruction short of operands is a stack underflow.
        """
        self.assertIsInstance(run(b"\x15").error, StackUnderflowError)
        self.assertIsInstance(run(push(1) + b"\x03").error, StackUnderflowError)
        self.assertIsInstance(run(push(1) + b"\x1c").error, StackUnderflowError)

    def test_other_opcodes_of_the_range(self) -> None:
        """
        MUL, SIGNEXTEND and BYTE, in the range of the inline ones, still run
        through the table.
        """
        self.check(0x02, (3, 5))
        self.check(0x0B, (0, 0xFF))
        self.check(0x1A, (31, 0xAB))


class GasTests(SynchronousTestCase):
    """
    Tests for the gas instructions take.
    """

    def gas_used(self, code: bytes, state: State | None = None) -> int:
        """
        The gas a successful run of C{code} used.
        """
        evm = run(code, state=state)
        self.assertIsNone(evm.error)
        return GAS - evm.gas_left

    def test_simple_costs(self) -> None:
        """
        PUSH1 costs 3, PUSH0 2, ADD 3, MUL 5, STOP nothing.
        """
        self.assertEqual(self.gas_used(push(1) + push(2) + b"\x01\x00"), 9)
        self.assertEqual(self.gas_used(push(1) + push(2) + b"\x02\x00"), 11)

    def test_exp_cost(self) -> None:
        """
        EXP costs 10 plus 50 per byte of the exponent.
        """
        self.assertEqual(self.gas_used(push(0x0102) + push(2) + b"\x0a"), 3 + 3 + 10 + 100)

    def test_memory_expansion(self) -> None:
        """
        MSTORE at offset 0 costs 3 plus 3 for one word; at 992 it pays for 32 words.
        """
        self.assertEqual(self.gas_used(push(1) + push(0) + b"\x52"), 3 + 2 + 3 + 3)
        words = 32
        expansion = 3 * words + words * words // 512
        self.assertEqual(self.gas_used(push(1) + push(992) + b"\x52"), 3 + 3 + 3 + expansion)

    def test_copy_cost(self) -> None:
        """
        CALLDATACOPY of 33 bytes costs 3, plus 3 per word copied, plus the expansion.
        """
        self.assertEqual(self.gas_used(push(33) + push(0) + push(0) + b"\x37"), 3 + 2 + 2 + 3 + 6 + 6)

    def test_sload_cold_then_warm(self) -> None:
        """
        The first SLOAD of a slot costs 2100, the next 100 (EIP-2929).
        """
        self.assertEqual(self.gas_used(push(1) + b"\x54" + push(1) + b"\x54"), 3 + 2100 + 3 + 100)

    def test_sstore_costs(self) -> None:
        """
        Writing a fresh slot costs 20000 plus the cold access; rewriting it in
        the same transaction costs 100.
        """
        code = push(1) + push(0) + b"\x55" + push(2) + push(0) + b"\x55"
        self.assertEqual(self.gas_used(code), 3 + 2 + 22100 + 3 + 2 + 100)

    def test_sstore_clear_refund(self) -> None:
        """
        Clearing a slot that was set before the transaction earns 4800 (EIP-3529).
        """
        state = make_state(push(0) + push(0) + b"\x55")
        state.set_storage(CONTRACT, 0, 1)
        state.begin_transaction()
        evm = run(b"", state=state)
        self.assertEqual(evm.refund_counter, 4800)
        self.assertEqual(GAS - evm.gas_left, 2 + 2 + 2100 + 2900)

    def test_sstore_needs_stipend(self) -> None:
        """
        SSTORE with 2300 gas or less left is out of gas (EIP-2200).
        """
        evm = run(push(1) + push(0) + b"\x55", gas=2306)
        self.assertIsInstance(evm.error, OutOfGasError)

    def test_balance_cold_then_warm(self) -> None:
        """
        BALANCE of a cold address costs 2600, then 100.
        """
        code = push(int.from_bytes(OTHER, "big")) + b"\x31\x50"
        self.assertEqual(self.gas_used(code + code), 3 + 2600 + 2 + 3 + 100 + 2)

    def test_call_to_new_account_with_value(self) -> None:
        """
        A CALL that sends value to a missing account pays cold access, value
        transfer and account creation, and gets back the unused stipend.
        """
        code = push(0) * 4 + push(1) + push(int.from_bytes(OTHER, "big")) + push(0) + b"\xf1"
        used = self.gas_used(code + b"\x00", state=make_state(code))
        # The 2300 stipend comes on top of the gas charged and returns unused.
        self.assertEqual(used, 4 * 2 + 3 + 3 + 2 + 2600 + 9000 + 25000 - 2300)

    def test_out_of_gas(self) -> None:
        """
        Running out of gas consumes all of it and leaves no output.
        """
        evm = run(push(1) + push(0) + b"\x55", gas=5000)
        self.assertIsInstance(evm.error, OutOfGasError)
        self.assertEqual(evm.gas_left, 0)

    def test_lazy_gas_is_checked_at_stop(self) -> None:
        """
        A program that overdraws with cheap instructions fails at STOP.
        """
        evm = run(push(1) + push(2) + b"\x01\x00", gas=8)
        self.assertIsInstance(evm.error, OutOfGasError)


class HaltTests(SynchronousTestCase):
    """
    Tests for the exceptional halts and REVERT.
    """

    def test_stack_underflow(self) -> None:
        """
        ADD on an empty stack is a stack underflow.
        """
        self.assertIsInstance(run(b"\x01").error, StackUnderflowError)
        self.assertIsInstance(run(push(1) + b"\x91").error, StackUnderflowError)

    def test_stack_overflow(self) -> None:
        """
        Pushing a 1025th item overflows the stack.
        """
        self.assertIsNone(run(push(1) * 1024).error)
        self.assertIsInstance(run(push(1) * 1025).error, StackOverflowError)

    def test_invalid_jump(self) -> None:
        """
        Jumping into PUSH data is an invalid jump even if the byte is 0x5b.
        """
        self.assertIsInstance(run(push(1) + b"\x56\x60\x5b").error, InvalidJumpDestError)
        self.assertIsNone(run(push(3) + b"\x56\x5b").error)

    def test_invalid_opcode(self) -> None:
        """
        INVALID and undefined bytes halt exceptionally.
        """
        self.assertIsInstance(run(b"\xfe").error, InvalidOpcodeError)
        self.assertIsInstance(run(b"\x0c").error, InvalidOpcodeError)

    def test_static_write(self) -> None:
        """
        SSTORE inside a static frame is an exceptional halt.
        """
        evm = run(push(1) + push(0) + b"\x55", is_static=True)
        self.assertIsInstance(evm.error, WriteInStaticContextError)

    def test_revert_keeps_gas_and_output(self) -> None:
        """
        REVERT returns its data, keeps the unused gas and undoes storage writes.
        """
        state = make_state(push(1) + push(0) + b"\x55" + push(0xAB) + push(0) + b"\x53" + push(1) + push(0) + b"\xfd")
        evm = run(b"", state=state)
        self.assertIsInstance(evm.error, Revert)
        self.assertEqual(evm.output, b"\xab")
        self.assertGreater(evm.gas_left, 0)
        self.assertEqual(state.get_storage(CONTRACT, 0), 0)

    def test_returndatacopy_out_of_bounds(self) -> None:
        """
        Copying beyond the return data is an exceptional halt (EIP-211).
        """
        evm = run(push(1) + push(0) + push(0) + b"\x3e")
        self.assertIsInstance(evm.error, OutOfBoundsReadError)

    def test_jump_analysis_cached(self) -> None:
        """
        The jump destinations of a code are analysed once.
        """
        code = b"\x5b\x60\x5b\x5b"
        first = analyse_code(code)
        self.assertIs(analyse_code(code), first)
        self.assertEqual(first[1], frozenset({0, 3}))

    def test_analysis_cache_bounded_in_entries(self) -> None:
        """
        Many distinct tiny codes (a hostile caller's CREATEs of distinct
        one- or two-byte initcodes) do not pile up: each entry is charged
        its overhead beside its bytes, so the cache holds at most
        C{_ANALYSIS_CACHE_BYTES // _ANALYSIS_ENTRY_BYTES} of them.
        """
        from nodex.evm import interpreter

        limit = interpreter._ANALYSIS_CACHE_BYTES // interpreter._ANALYSIS_ENTRY_BYTES
        for number in range(3 * limit):
            analyse_code(number.to_bytes(2, "big"))
            self.assertLessEqual(len(interpreter._ANALYSIS_CACHE), limit)


class CallAndCreateTests(SynchronousTestCase):
    """
    Tests for child frames.
    """

    def test_call_returns_child_output(self) -> None:
        """
        CALL copies the child's output into memory and pushes 1.
        """
        callee = push(42) + return_top()
        code = (
            push(32) + push(0) + push(0) + push(0) + push(0) + push(int.from_bytes(OTHER, "big")) + push(100000)
            + b"\xf1" + b"\x50" + push(32) + push(0) + b"\xf3"
        )
        evm = run(b"", state=make_state(code, {OTHER: callee}))
        self.assertIsNone(evm.error)
        self.assertEqual(result_word(evm), 42)

    def test_staticcall_forbids_writes(self) -> None:
        """
        A STATICCALL'd frame that writes storage fails; the caller sees 0.
        """
        callee = push(1) + push(0) + b"\x55"
        code = push(0) * 4 + push(int.from_bytes(OTHER, "big")) + push(100000) + b"\xfa" + return_top()
        state = make_state(code, {OTHER: callee})
        evm = run(b"", state=state)
        self.assertEqual(result_word(evm), 0)
        self.assertEqual(state.get_storage(OTHER, 0), 0)

    def test_delegatecall_uses_caller_storage(self) -> None:
        """
        DELEGATECALL runs the other code against the calling account's storage.
        """
        callee = push(7) + push(0) + b"\x55"
        code = push(0) * 4 + push(int.from_bytes(OTHER, "big")) + push(100000) + b"\xf4\x00"
        state = make_state(code, {OTHER: callee})
        run(b"", state=state)
        self.assertEqual(state.get_storage(CONTRACT, 0), 7)
        self.assertEqual(state.get_storage(OTHER, 0), 0)

    def create(self, initcode: bytes, gas: int = GAS) -> tuple[Evm, State]:
        """
        Run C{initcode} as a creation of C{OTHER} by C{CALLER}.
        """
        state = make_state(b"")
        context = ExecutionContext(state, BLOCK, TransactionEnvironment(CALLER, 7))
        message = Message(CALLER, None, OTHER, gas, 0, b"", None, initcode, 0)
        return process_create_message(message, context), state

    def test_create_deposits_code(self) -> None:
        """
        A creation stores the returned code, at 200 gas a byte, and sets the nonce to 1.
        """
        initcode = push(0xAB) + push(0) + b"\x53" + push(1) + push(0) + b"\xf3"
        evm, state = self.create(initcode)
        self.assertIsNone(evm.error)
        self.assertEqual(state.get_code(OTHER), b"\xab")
        self.assertEqual(state.get_nonce(OTHER), 1)
        self.assertEqual(GAS - evm.gas_left, 3 + 2 + 3 + 3 + 3 + 2 + 200)

    def test_create_refuses_ef_prefix(self) -> None:
        """
        Code starting with 0xEF is refused (EIP-3541) and the account is not created.
        """
        initcode = push(0xEF) + push(0) + b"\x53" + push(1) + push(0) + b"\xf3"
        evm, state = self.create(initcode)
        self.assertIsInstance(evm.error, InvalidContractPrefixError)
        self.assertFalse(state.account_exists(OTHER))

    def test_create_code_size_limit(self) -> None:
        """
        Returning more than 24,576 bytes of code fails the creation.
        """
        evm, _ = self.create(push(24577) + push(0) + b"\xf3", gas=10_000_000)
        self.assertIsInstance(evm.error, OutOfGasError)
        evm, state = self.create(push(24576) + push(0) + b"\xf3", gas=10_000_000)
        self.assertIsNone(evm.error)
        self.assertEqual(len(state.get_code(OTHER)), 24576)

    def test_selfdestruct_of_old_account_keeps_it(self) -> None:
        """
        SELFDESTRUCT of an account not created in the transaction only moves its balance (EIP-6780).
        """
        state = make_state(push(int.from_bytes(OTHER, "big")) + b"\xff")
        state.set_balance(CONTRACT, 50)
        state.begin_transaction()
        evm = run(b"", state=state)
        self.assertIsNone(evm.error)
        self.assertEqual(evm.accounts_to_delete, set())
        self.assertEqual(state.get_balance(OTHER), 50)
        self.assertEqual(state.get_balance(CONTRACT), 0)

    def test_selfdestruct_of_new_account_deletes_it(self) -> None:
        """
        SELFDESTRUCT in the transaction that created the account deletes it.
        """
        evm, _ = self.create(push(int.from_bytes(CALLER, "big")) + b"\xff")
        self.assertIsNone(evm.error)
        self.assertEqual(evm.accounts_to_delete, {OTHER})


class MoreInstructionTests(SynchronousTestCase):
    """
    Tests for the environment, transient storage, MCOPY, logs and the 63/64 rule.
    """

    def test_block_values(self) -> None:
        """
        NUMBER, TIMESTAMP, BASEFEE and BLOBBASEFEE push the environment's values.
        """
        for opcode, expected in [(b"\x43", 5), (b"\x42", 1000), (b"\x48", 0), (b"\x4a", 1), (b"\x46", 33)]:
            evm = run(opcode + return_top())
            self.assertEqual(result_word(evm), expected)

    def test_blobhash_without_blobs(self) -> None:
        """
        BLOBHASH pushes 0 when the transaction has no blob at that index.
        """
        self.assertEqual(result_word(run(push(0) + b"\x49" + return_top())), 0)

    def test_extcodehash_of_missing_account(self) -> None:
        """
        EXTCODEHASH of an account that does not exist is 0; of one with code, the code's hash.
        """
        self.assertEqual(result_word(run(push(0x1234) + b"\x3f" + return_top())), 0)
        code = push(int.from_bytes(CONTRACT, "big")) + b"\x3f" + return_top()
        self.assertEqual(result_word(run(code)), int.from_bytes(keccak256(code), "big"))

    def test_transient_storage_reverts(self) -> None:
        """
        TSTORE in a reverted child is undone; TLOAD reads what the frame stored.
        """
        callee = push(1) + push(0) + b"\x5d" + push(0) + push(0) + b"\xfd"
        code = (
            push(7) + push(1) + b"\x5d"
            + push(0) * 5 + push(int.from_bytes(OTHER, "big")) + push(50000) + b"\xf1\x50"
            + push(1) + b"\x5c" + return_top()
        )
        self.assertEqual(result_word(run(b"", state=make_state(code, {OTHER: callee}))), 7)

    def test_tstore_static(self) -> None:
        """
        TSTORE in a static frame is an exceptional halt.
        """
        self.assertIsInstance(run(push(1) + push(0) + b"\x5d", is_static=True).error, WriteInStaticContextError)

    def test_mcopy_overlap(self) -> None:
        """
        MCOPY copies as if through a buffer when the ranges overlap.
        """
        code = push(0x0102030405) + push(0) + b"\x52" + push(32) + push(27) + push(28) + b"\x5e" + push(28) + b"\x51"
        evm = run(code + return_top())
        self.assertEqual(result_word(evm) >> 216, 0x0102030405)

    def test_log_cost_and_record(self) -> None:
        """
        LOG2 costs 375 + 2 * 375 + 8 a byte and records address, topics and data.
        """
        code = push(0xAA) + push(0) + b"\x53" + push(2) + push(1) + push(1) + push(0) + b"\xa2\x00"
        evm = run(code)
        self.assertEqual(evm.logs, [(CONTRACT, ((1).to_bytes(32, "big"), (2).to_bytes(32, "big")), b"\xaa")])
        self.assertEqual(GAS - evm.gas_left, 3 + 2 + 3 + 3 + 3 + 3 + 3 + 2 + 375 + 750 + 8)

    def test_all_but_one_64th(self) -> None:
        """
        A CALL asking for more gas than it has passes all but a 64th of what is left.
        """
        callee = b"\x5a" + return_top()
        code = (
            push(32) + push(0) + push(0) + push(0) + push(0) + push(int.from_bytes(OTHER, "big")) + push(10**9)
            + b"\xf1\x50" + push(0) + b"\x51" + return_top()
        )
        state = make_state(code, {OTHER: callee})
        evm = run(b"", gas=100_000, state=state)
        before_call = 100_000 - (3 + 2 + 2 + 2 + 2 + 3 + 3) - 2600 - 3
        self.assertEqual(result_word(evm), before_call - before_call // 64 - 2)

    def test_create_initcode_limit(self) -> None:
        """
        CREATE with more than 49,152 bytes of initcode is an exceptional halt (EIP-3860).
        """
        evm = run(push(49153) + push(0) + push(0) + b"\xf0", gas=10_000_000)
        self.assertIsInstance(evm.error, OutOfGasError)

    def test_create2_address(self) -> None:
        """
        CREATE2 deploys at keccak(0xff, sender, salt, keccak(initcode))[12:].
        """
        code = push(0) + push(0) + push(0) + push(0) + b"\xf5" + return_top()
        evm = run(code)
        expected = keccak256(b"\xff" + CONTRACT + b"\x00" * 32 + keccak256(b""))[12:]
        self.assertEqual(result_word(evm), int.from_bytes(expected, "big"))

    def test_call_depth_limit(self) -> None:
        """
        A frame at depth 1024 cannot call further: the CALL pushes 0 and keeps the gas.
        """
        state = make_state(push(0) * 5 + push(int.from_bytes(OTHER, "big")) + push(1000) + b"\xf1" + return_top())
        context = ExecutionContext(state, BLOCK, TransactionEnvironment(CALLER, 7))
        message = Message(CALLER, CONTRACT, CONTRACT, GAS, 0, b"", CONTRACT, state.get_code(CONTRACT), 1024)
        evm = process_message(message, context)
        self.assertIsNone(evm.error)
        self.assertEqual(result_word(evm), 0)


class MarginTests(SynchronousTestCase):
    """
    Tests for the margins a frame counts (L{Evm}'s C{margin}, the context's
    C{call_margin}): how much less gas it could have had and run as it did.
    """

    def test_subframe_tolerance(self) -> None:
        """
        L{subframe_tolerance} is the largest shift of the caller's gas for
        which the share the child is handed (the least of the request and
        all but a 64th of what is left, EIP-150) shrinks by no more than
        the child tolerates, found here by trying every shift; unbounded
        when the child tolerates losing its whole share; -1 when it
        tolerates nothing.
        """
        child = run(b"")
        for available in (*range(0, 140), 1_023, 1_024, 1_025):
            for asked in (None, 0, 50, 63, 64, 1_000):
                def share(gas: int) -> int:
                    whole = max_message_call_gas(gas)
                    return whole if asked is None else min(asked, whole)
                forwarded = share(available)
                for tolerated in (0, 1, 2, 62, 63, 64, 65, 500):
                    for margin, left in ((tolerated, tolerated + 7), (tolerated + 3, tolerated)):
                        child.margin = margin
                        child.gas_left = left
                        shifts = [s for s in range(available + 1) if forwarded - share(available - s) <= tolerated]
                        expected = available if len(shifts) == available + 1 else max(shifts)
                        found = subframe_tolerance(available, forwarded, child)
                        if found == UNBOUNDED_MARGIN:
                            self.assertEqual(len(shifts), available + 1)
                        else:
                            self.assertEqual((available, asked, tolerated, found), (available, asked, tolerated, expected))
        child.margin = -1
        self.assertEqual(subframe_tolerance(100, 50, child), -1)

    def test_frame_margins(self) -> None:
        """
        An SSTORE counts the gas left beyond its 2,300 in its frame's
        margin; a call counts the gas left after its own cost; what a
        subframe tolerates goes to its caller's margin, or, for the
        transaction's frame, to the context's C{call_margin}.
        """
        # SSTORE(0, 1) with 100,000 gas: 5 gas of PUSHes before it.
        evm = run(push(1) + push(0) + b"\x55\x00", gas=100_000)
        self.assertEqual(evm.margin, 100_000 - 5 - 2_301)
        self.assertEqual(evm.context.call_margin, UNBOUNDED_MARGIN)
        # CALL(gas 1,000, OTHER (an empty account, cold: 2,600), no value):
        # five PUSH0s, the PUSH20 and the PUSH2 first.
        call = push(0) * 5 + b"\x73" + OTHER + push(1_000) + b"\xf1\x00"
        evm = run(call, gas=100_000)
        available = 100_000 - 5 * 2 - 3 - 3 - 2_600
        self.assertEqual(evm.margin, available)
        # The empty callee hands back its whole share: it tolerates any shift.
        self.assertEqual(evm.context.call_margin, UNBOUNDED_MARGIN)
        # A callee that burns 4 gas of its 1,000 tolerates losing 996 of
        # them: the caller may have all but the 4 its share needs less.
        evm = run(call, gas=100_000, state=make_state(call, {OTHER: push(0) + b"\x50\x00"}))
        self.assertEqual(evm.margin, available)
        self.assertEqual(evm.context.call_margin, available - 4)
