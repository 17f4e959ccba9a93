"""
Tracer hooks and the EIP-3155 JSON tracer.

The interpreter runs a separate loop when a tracer is attached, so the plain
loop pays nothing for tracing.  A tracer receives each frame's start and end
and one call per executed instruction.
"""

import json
from collections.abc import Callable, Sequence
from typing import Protocol

from nodex.evm.frame import Evm, Message
from nodex.evm.instructions import OPCODE_NAMES


class Tracer(Protocol):
    """
    What the interpreter calls on an attached tracer.
    """

    def capture_enter(self, message: Message) -> None:
        """
        A frame starts executing C{message} (also for precompiles).
        """

    def capture_step(
        self,
        evm: Evm,
        pc: int,
        op: int,
        gas: int,
        gas_cost: int,
        stack: Sequence[int],
        memory: bytes,
        error: Exception | None,
    ) -> None:
        """
        One instruction ran (or halted the frame with C{error}).

        @param gas: the gas left before the instruction.
        @param gas_cost: the gas it took (for CALL and CREATE, what was
            charged before the child ran, including the gas handed over).
        @param stack: the stack before the instruction, top last.
        @param memory: the memory before the instruction.
        """

    def capture_exit(self, evm: Evm) -> None:
        """
        A frame ended; C{evm.error}, C{evm.output} and C{evm.gas_left} are final.
        """


class JSONTracer:
    """
    Writes one EIP-3155 JSON line per instruction, as geth's and evmone's
    C{--json} output does, and a summary line per transaction.

    @ivar write: receives each line, without a newline.
    """

    def __init__(self, write: Callable[[str], None]) -> None:
        self.write = write

    def capture_enter(self, message: Message) -> None:
        """
        Nothing to print when a frame starts.
        """

    def capture_step(
        self,
        evm: Evm,
        pc: int,
        op: int,
        gas: int,
        gas_cost: int,
        stack: Sequence[int],
        memory: bytes,
        error: Exception | None,
    ) -> None:
        """
        Print the EIP-3155 line of one instruction.
        """
        line: dict[str, object] = {
            "pc": pc,
            "op": op,
            "gas": hex(gas),
            "gasCost": hex(gas_cost),
            "memSize": len(memory),
            "stack": [hex(item) for item in stack],
            "depth": evm.message.depth + 1,
            "refund": evm.refund_counter,
            "opName": OPCODE_NAMES[op],
        }
        if error is not None:
            line["error"] = getattr(error, "description", type(error).__name__)
        self.write(json.dumps(line, separators=(",", ":")))

    def capture_exit(self, evm: Evm) -> None:
        """
        Nothing to print when a frame ends.
        """

    def capture_summary(self, output: bytes, gas_used: int, error: str | None) -> None:
        """
        Print the closing line of a transaction: output, gas used, error.
        """
        line: dict[str, object] = {"output": output.hex(), "gasUsed": hex(gas_used)}
        if error:
            line["error"] = error
        self.write(json.dumps(line, separators=(",", ":")))
