"""
geth's struct logger (the execution APIs' opcode tracer): the default
tracer under the Ethereum conventions, and C{"tracer": "structLogger"}
under the reference's.

The answer is C{{gas, failed, returnValue, structLogs}}: the gas the
receipt records, whether the transaction failed (reverted or halted),
the return data or revert payload (C{0x…}), and one entry per executed
instruction: C{pc}, C{op}, C{gas}, C{gasCost}, C{depth} (1 for the
transaction's own frame), C{refund}, C{stack} (0x-prefixed quantities,
bottom first; without C{disableStack}), C{memory} (0x-prefixed 32-byte
words; only with C{enableMemory}), C{returnData} (with
C{enableReturnData}), C{storage} (only on SLOAD and SSTORE: the running
contract's slots seen so far, 0x-prefixed 32-byte keys and values; without
C{disableStorage}) and C{error} on the instruction that halted its frame.
"""

from typing import Any

from nodex.chain.tracing.limits import TraceBudget, TraceConfig
from nodex.chain.tracing.run import TracedRun
from nodex.chain.tracing.structlog import SLOAD, SSTORE, StructLogTracer
from nodex.evm.frame import Evm
from nodex.evm.instructions import OPCODE_NAMES

_STEP_BYTES = 80
"""About the bytes of an entry without stack, memory and storage."""
_WORD_BYTES = 20
_CHUNK_BYTES = 69
_SLOT_BYTES = 140


class GethStructLogTracer(StructLogTracer):
    """
    Collects one transaction's struct log in geth's format (the module docstring).
    """

    def __init__(self, config: TraceConfig, budget: TraceBudget) -> None:
        """
        @param config: C{disableStack}, C{enableMemory}, C{disableStorage},
            C{enableReturnData} and C{limit}.
        @param budget: charged once per entry.
        """
        super().__init__(config, budget)
        self.wants_memory = config.enable_memory
        self._last_words: list[str] = []

    def capture_step(
        self,
        evm: Evm,
        pc: int,
        op: int,
        gas: int,
        gas_cost: int,
        stack: list[int],
        memory: bytes,
        error: Exception | None,
    ) -> None:
        """
        Add the entry of one instruction.
        """
        size = _STEP_BYTES
        entry: dict[str, Any] = {
            "pc": pc,
            "op": OPCODE_NAMES[op],
            "gas": gas,
            "gasCost": gas_cost,
            "depth": evm.message.depth + 1,
        }
        if error is not None:
            entry["error"] = getattr(error, "description", type(error).__name__)
        if self.wants_stack:
            entry["stack"] = [hex(item) for item in stack]
            size += len(stack) * _WORD_BYTES
        if self.wants_memory:
            if memory != self._last_memory:
                text = memory.hex()
                self._last_words = ["0x" + text[start:start + 64] for start in range(0, len(text), 64)]
                self._last_memory = memory
            entry["memory"] = self._last_words
            size += len(self._last_words) * _CHUNK_BYTES
        if self._with_return_data:
            entry["returnData"] = "0x" + evm.return_data.hex()
            size += len(evm.return_data) * 2
        if self._with_storage:
            storage = self._contract_storage(evm, op, stack, error)
            if op == SLOAD or op == SSTORE:
                entry["storage"] = {"0x" + slot: "0x" + value for slot, value in storage.items()}
                size += len(storage) * _SLOT_BYTES
        entry["refund"] = self._refund_before(evm)
        self._keep(entry, size)

    def result(self, run: TracedRun) -> dict[str, Any]:
        """
        geth's C{{gas, failed, returnValue, structLogs}}.
        """
        return {
            "gas": run.gas_used,
            "failed": run.error is not None,
            "returnValue": "0x" + run.output.hex(),
            "structLogs": self.struct_logs,
        }


__all__ = ["GethStructLogTracer"]
