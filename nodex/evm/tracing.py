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
        # The refund earned by the enclosing frames, one entry per active
        # frame: the transaction-wide counter geth prints is that plus the
        # current frame's own counter.
        self._refund_bases: list[int] = []
        self._last_evm: Evm | None = None

    def capture_enter(self, message: Message) -> None:
        """
        Remember the refund of the enclosing frames.
        """
        base = 0
        if self._refund_bases and self._last_evm is not None:
            base = self._refund_bases[-1] + self._last_evm.refund_counter
        self._refund_bases.append(base)

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
        self._last_evm = evm
        base = self._refund_bases[-1] if self._refund_bases else 0
        line: dict[str, object] = {
            "pc": pc,
            "op": op,
            "gas": hex(gas),
            "gasCost": hex(gas_cost),
            "memSize": len(memory),
            "stack": [hex(item) for item in stack],
            "depth": evm.message.depth + 1,
            "refund": base + evm.refund_counter,
            "opName": evm.context.fork.opcode_names[op],
        }
        if error is not None:
            line["error"] = getattr(error, "description", type(error).__name__)
        self.write(json.dumps(line, separators=(",", ":")))

    def capture_exit(self, evm: Evm) -> None:
        """
        Forget the ending frame's refund base.
        """
        if self._refund_bases:
            self._refund_bases.pop()

    def capture_summary(self, output: bytes, gas_used: int, error: str | None) -> None:
        """
        Print the closing line of a transaction: output, gas used, error.
        """
        line: dict[str, object] = {"output": output.hex(), "gasUsed": hex(gas_used)}
        if error:
            line["error"] = error
        self.write(json.dumps(line, separators=(",", ":")))
