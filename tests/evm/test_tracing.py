"""
Tests for the tracer hooks and L{nodex.evm.tracing.JSONTracer}.
"""

import json

from twisted.trial.unittest import SynchronousTestCase

from nodex.evm.frame import ExecutionContext, Message
from nodex.evm.environment import TransactionEnvironment
from nodex.evm.interpreter import process_message
from nodex.evm.tracing import JSONTracer
from tests.evm.test_instructions import BLOCK, CALLER, CONTRACT, OTHER, make_state, push


def trace(code: bytes, accounts: dict[bytes, bytes] | None = None, gas: int = 100_000) -> list[dict]:
    """
    Run C{code} with a L{JSONTracer} and return the parsed lines.
    """
    lines: list[str] = []
    state = make_state(code, accounts)
    context = ExecutionContext(state, BLOCK, TransactionEnvironment(CALLER, 1), JSONTracer(lines.append))
    process_message(Message(CALLER, CONTRACT, CONTRACT, gas, 0, b"", CONTRACT, code, 0), context)
    return [json.loads(line) for line in lines]


class JSONTracerTests(SynchronousTestCase):
    """
    Tests for the EIP-3155 lines.
    """

    def test_steps(self) -> None:
        """
        Each instruction gives one line with the gas before it, its cost and the stack before it.
        """
        lines = trace(push(1) + push(2) + b"\x01\x00")
        self.assertEqual([line["opName"] for line in lines], ["PUSH1", "PUSH1", "ADD", "STOP"])
        self.assertEqual(lines[2]["stack"], ["0x1", "0x2"])
        self.assertEqual((lines[2]["gas"], lines[2]["gasCost"]), (hex(100_000 - 6), "0x3"))
        self.assertEqual(lines[0]["depth"], 1)

    def test_error_step(self) -> None:
        """
        The failing instruction's line carries the error.
        """
        lines = trace(b"\x01")
        self.assertEqual(lines[-1]["error"], "stack underflow")

    def test_out_of_gas_step(self) -> None:
        """
        The traced loop reports out of gas at the instruction that overdraws.
        """
        lines = trace(push(1) + push(2) + b"\x01\x00", gas=7)
        self.assertEqual((lines[-1]["opName"], lines[-1]["error"]), ("ADD", "out of gas"))

    def test_call_step_before_child(self) -> None:
        """
        A CALL's line comes before its child's lines and its cost includes the gas handed over.
        """
        callee = push(0) + b"\x00"
        code = push(0) * 4 + push(0) + push(int.from_bytes(OTHER, "big")) + push(1000) + b"\xf1\x00"
        lines = trace(code, {OTHER: callee})
        names = [(line["opName"], line["depth"]) for line in lines]
        call_index = names.index(("CALL", 1))
        self.assertEqual(names[call_index + 1], ("PUSH0", 2))
        self.assertEqual(int(lines[call_index]["gasCost"], 16), 2600 + 1000)


class TracerHookTests(SynchronousTestCase):
    """
    Tests for what the hooks receive.
    """

    def test_memory_before_step(self) -> None:
        """
        Each step receives the memory as it was before the instruction.
        """
        steps: list[tuple[str, bytes]] = []

        class Recorder:
            """
            A tracer that keeps each step's opcode and memory.
            """

            wants_steps = True
            wants_stack = True
            wants_memory = True

            def capture_enter(self, evm: object) -> None:
                """
                Nothing to keep when a frame starts.
                """

            def capture_exit(self, evm: object) -> None:
                """
                Nothing to keep when a frame ends.
                """

            def capture_step(
                self,
                evm: object,
                pc: int,
                op: int,
                gas: int,
                gas_cost: int,
                stack: list[int],
                memory: bytes,
                error: Exception | None,
            ) -> None:
                """
                Keep the opcode and the memory.
                """
                steps.append((op, memory))

        code = push(0xAB) + push(0) + b"\x53\x00"
        state = make_state(code)
        context = ExecutionContext(state, BLOCK, TransactionEnvironment(CALLER, 1), Recorder())
        process_message(Message(CALLER, CONTRACT, CONTRACT, 100_000, 0, b"", CONTRACT, code, 0), context)
        self.assertEqual(steps[2], (0x53, b""))
        self.assertEqual(steps[3], (0x00, b"\xab" + b"\x00" * 31))


class RefundTests(SynchronousTestCase):
    """
    Tests for the C{refund} field.
    """

    def test_refund_counts_enclosing_frames(self) -> None:
        """
        Inside a child frame, the refund printed includes what the caller earned before the call.
        """
        state_code = push(0) + push(0) + b"\x55"
        callee = push(0) + push(0) + b"\x55\x00"
        code = state_code + push(0) * 5 + push(int.from_bytes(OTHER, "big")) + push(50000) + b"\xf1\x00"
        lines: list[str] = []
        state = make_state(code, {OTHER: callee})
        state.set_storage(CONTRACT, 0, 1)
        state.set_storage(OTHER, 0, 1)
        state.begin_transaction()
        context = ExecutionContext(state, BLOCK, TransactionEnvironment(CALLER, 1), JSONTracer(lines.append))
        process_message(Message(CALLER, CONTRACT, CONTRACT, 100_000, 0, b"", CONTRACT, code, 0), context)
        parsed = [json.loads(line) for line in lines]
        child_stop = [line for line in parsed if line["depth"] == 2][-1]
        self.assertEqual(child_stop["refund"], 2 * 4800)
        self.assertEqual(parsed[-1]["refund"], 2 * 4800)
