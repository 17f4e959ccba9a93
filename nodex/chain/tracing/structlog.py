"""
The default tracer: one struct-log entry per executed instruction, in the
reference node's output format (reference §3.8).

Each entry holds C{op}, C{depth} (0 for the transaction's own frame, as the
reference counts), C{pc}, C{gas} (before the instruction), C{gasCost},
C{memory} (32-byte chunks), C{stack} (32-byte words, bottom first) and
C{storage} (the slots of the running contract known so far, as the
reference keeps them), all hex without C{0x}, then C{refund} (the
transaction's refund counter before the instruction, as geth gives it) and, on request, C{returnData}; a halting
instruction also carries C{error}.  The entries' storage mappings are
shared between steps until a slot changes, so a long trace does not copy
them per step.
"""

from typing import Any

from nodex.chain.tracing.limits import TraceBudget, TraceConfig
from nodex.chain.tracing.run import TracedRun
from nodex.evm.frame import Evm
from nodex.evm.instructions import OPCODE_NAMES
from nodex.primitives import Address

SLOAD = 0x54
SSTORE = 0x55

_STEP_BYTES = 90
"""About the bytes of an entry without stack, memory and storage."""
_WORD_BYTES = 67
_SLOT_BYTES = 136


def _word(value: int) -> str:
    """
    A 256-bit word as 64 hex digits.
    """
    return format(value, "064x")


class StructLogTracer:
    """
    Collects the struct log of one transaction (see the module docstring).

    @ivar struct_logs: the entries so far.
    """

    wants_steps = True
    stack_ops = frozenset((SLOAD, SSTORE))

    def __init__(self, config: TraceConfig, budget: TraceBudget) -> None:
        """
        @param config: C{disableStack}, C{disableMemory}, C{disableStorage},
            C{enableReturnData} and C{limit}.
        @param budget: charged once per entry.
        """
        self.wants_stack = not config.disable_stack
        self.wants_memory = not config.disable_memory
        self._with_storage = not config.disable_storage
        self._with_return_data = config.enable_return_data
        self._limit = config.limit
        self._budget = budget
        self.struct_logs: list[dict[str, Any]] = []
        self._refund_bases: list[int] = []
        # Per running frame, its refund counter before the next step (the
        # steps report the counter before the instruction, as geth does).
        self._frame_refunds: list[int] = []
        self._frames: list[Evm] = []
        # The slots each contract has read or written, as shown in the steps.
        self._storage: dict[bytes, dict[str, str]] = {}
        self._first_values: dict[int, int] = {}
        self._top: Evm | None = None
        self._last_memory = b""
        self._last_chunks: list[str] = []

    def capture_enter(self, evm: Evm) -> None:
        """
        A frame starts: remember the refund its callers have earned.
        """
        frames = self._frames
        if frames:
            self._refund_bases.append(self._refund_bases[-1] + self._frame_refunds[-1])
        else:
            self._refund_bases.append(0)
            self._top = evm
        frames.append(evm)
        self._frame_refunds.append(0)

    def capture_exit(self, evm: Evm) -> None:
        """
        A frame ends; a successful one's refund joins its parent's.
        """
        self._frames.pop()
        self._refund_bases.pop()
        self._frame_refunds.pop()
        if self._frame_refunds and evm.error is None:
            self._frame_refunds[-1] += evm.refund_counter

    def capture_selfdestruct(self, evm: Evm, beneficiary: bytes, balance: int) -> None:
        """
        Nothing beyond the step itself.
        """

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
            "op": OPCODE_NAMES[op],
            "depth": evm.message.depth,
            "pc": pc,
            "gas": gas,
            "gasCost": gas_cost,
        }
        if self.wants_memory:
            if memory != self._last_memory:
                text = memory.hex()
                self._last_chunks = [text[start:start + 64] for start in range(0, len(text), 64)]
                self._last_memory = memory
            entry["memory"] = self._last_chunks
            size += len(memory) * 2 + len(self._last_chunks) * 3
        if self.wants_stack:
            entry["stack"] = [_word(item) for item in stack]
            size += len(stack) * _WORD_BYTES
        if self._with_storage:
            storage = self._contract_storage(evm, op, stack, error)
            entry["storage"] = storage
            size += len(storage) * _SLOT_BYTES
        entry["refund"] = self._refund_before(evm)
        if self._with_return_data:
            entry["returnData"] = evm.return_data.hex()
            size += len(evm.return_data) * 2
        if error is not None:
            entry["error"] = getattr(error, "description", type(error).__name__)
        self._keep(entry, size)

    def _refund_before(self, evm: Evm) -> int:
        """
        The transaction's refund counter before this step's instruction
        (remembering the frame's counter after it, for the next step).
        """
        refund = self._refund_bases[-1] + self._frame_refunds[-1]
        self._frame_refunds[-1] = evm.refund_counter
        return refund

    def _keep(self, entry: dict[str, Any], size: int) -> None:
        """
        Keep one entry, within the C{limit} and the budget.
        """
        if self._limit and len(self.struct_logs) >= self._limit:
            return
        self._budget.charge(size)
        self.struct_logs.append(entry)

    def _contract_storage(self, evm: Evm, op: int, stack: list[int], error: Exception | None) -> dict[str, str]:
        """
        The running contract's known slots after this step (a new mapping
        when SLOAD or SSTORE adds or changes one).
        """
        address = evm.message.current_target
        storage = self._storage.get(address)
        if storage is None:
            storage = self._storage[address] = {}
        if error is None and (op == SLOAD or op == SSTORE) and stack:
            key = stack[-1]
            value = evm.stack[-1] if op == SLOAD else stack[-2]
            if address == self._top_address() and key not in self._first_values:
                self._first_values[key] = evm.state.get_original_storage(address, key)
            slot, text = _word(key), _word(value)
            if storage.get(slot) != text:
                storage = self._storage[address] = {**storage, slot: text}
        return storage

    def _top_address(self) -> Address | None:
        """
        The account the transaction's own frame runs for.
        """
        return None if self._top is None else self._top.message.current_target

    def result(self, run: TracedRun) -> dict[str, Any]:
        """
        The trace of the transaction, in the reference's member order;
        C{initStorage} and C{currentStorage} hold the slots of the
        transaction's own contract that the steps showed, before and after.
        """
        output, error, state = run.output, run.error, run.state
        address = self._top_address()
        initial: dict[str, str] = {}
        current: dict[str, str] = {}
        for key in sorted(self._first_values):
            initial[_word(key)] = _word(self._first_values[key])
            if address is not None:
                current[_word(key)] = _word(state.get_storage(address, key))
        return {
            "contractAddress": "" if address is None else address.hex(),
            "initStorage": initial,
            "structLogs": self.struct_logs,
            "result": output.hex(),
            "error": error or "",
            "reverted": run.reverted,
            "storageSize": sum(1 for value in current.values() if int(value, 16)),
            "currentStorage": current,
        }


__all__ = ["StructLogTracer"]
