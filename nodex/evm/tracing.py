"""
Tracer hooks and the EIP-3155 JSON tracer.

The interpreter runs a separate loop when a tracer is attached, so the plain
loop pays nothing for tracing.  A tracer receives each frame's start and end
and, unless it says it does not want them (C{wants_steps}), one call per
executed instruction; a tracer of frames only (a call tree) runs at the
plain loop's speed.  C{wants_stack} and C{wants_memory} say whether the
steps need copies of the stack and the memory, which are most of a traced
step's cost.
"""

import json
from collections.abc import Callable, Sequence
from typing import Protocol

from nodex.evm.frame import Evm


class Tracer(Protocol):
    """
    What the interpreter calls on an attached tracer.

    @ivar wants_steps: whether L{capture_step} is called (else the frames
        run in the plain loop and only their starts and ends are reported).
    @ivar wants_stack: whether the steps receive a copy of the stack (else
        an empty one).
    @ivar wants_memory: whether the steps receive a copy of the memory
        (else C{b""}).
    @ivar stack_ops: optional: the opcodes whose steps receive the stack
        even without C{wants_stack} (a storage view needs SLOAD's slot).
    """

    wants_steps: bool
    wants_stack: bool
    wants_memory: bool

    def capture_enter(self, evm: Evm) -> None:
        """
        A new frame C{evm} starts executing C{evm.message} (also for
        precompiles).  While the child runs, its parent's C{pc} is that of
        the CALL or CREATE instruction that started it.
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
        A frame ended; C{evm.error}, C{evm.output} and C{evm.gas_left} are
        final (for a creation, after the code deposit).
        """

    def capture_selfdestruct(self, evm: Evm, beneficiary: bytes, balance: int) -> None:
        """
        SELFDESTRUCT of C{evm}'s account succeeded and is about to send
        C{balance} to C{beneficiary}.
        """


class JSONTracer:
    """
    Writes one EIP-3155 JSON line per instruction, as geth's and evmone's
    C{--json} output does, and a summary line per transaction.

    @ivar write: receives each line, without a newline.
    """

    wants_steps = True
    wants_stack = True
    wants_memory = True

    def __init__(self, write: Callable[[str], None]) -> None:
        self.write = write
        # The refund earned by the enclosing frames, one entry per active
        # frame: the transaction-wide counter geth prints is that plus the
        # current frame's own counter.
        self._refund_bases: list[int] = []
        self._last_evm: Evm | None = None

    def capture_enter(self, evm: Evm) -> None:
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

    def capture_selfdestruct(self, evm: Evm, beneficiary: bytes, balance: int) -> None:
        """
        Nothing to print: the SELFDESTRUCT step's line says it.
        """

    def capture_summary(self, output: bytes, gas_used: int, error: str | None) -> None:
        """
        Print the closing line of a transaction: output, gas used, error.
        """
        line: dict[str, object] = {"output": output.hex(), "gasUsed": hex(gas_used)}
        if error:
            line["error"] = error
        self.write(json.dumps(line, separators=(",", ":")))
