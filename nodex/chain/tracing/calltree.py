"""
The call tree of a transaction: one L{CallFrame} per frame (calls, creations,
precompile calls, self-destructs), recorded from the frames' starts and ends
only, so that the EVM runs its plain loop under it.  L{CallTracer} renders it
in geth's C{callTracer} format; L{nodex.chain.tracing.flat} flattens it into
Parity-style traces.

A frame's kind is the instruction that started it, read from the parent's
program counter (which points at the CALL or CREATE while the child runs).
C{from} is the account whose code made the call, C{to} the account whose
code runs (for DELEGATECALL and CALLCODE the library, for a creation the new
contract), and every frame shows its own input: the reference's habit of
showing the transaction's input in every inner call is not copied.
"""

from dataclasses import dataclass, field
from typing import Any

from nodex.chain.calls import decode_revert_reason
from nodex.chain.execution import error_description
from nodex.chain.tracing.limits import TraceBudget, TraceConfig
from nodex.chain.tracing.run import TracedRun
from nodex.evm.errors import Revert
from nodex.evm.frame import Evm

CALL_KINDS = {0xF0: "CREATE", 0xF1: "CALL", 0xF2: "CALLCODE", 0xF4: "DELEGATECALL", 0xF5: "CREATE2", 0xFA: "STATICCALL"}
"""The frame kind each instruction starts."""

_FRAME_BYTES = 300
"""About the bytes of a rendered frame besides its input and output."""


@dataclass
class FrameLog:
    """
    A log a frame emitted itself.

    @ivar position: how many of the frame's child calls came before it.
    """

    address: bytes
    topics: tuple[bytes, ...]
    data: bytes
    position: int


@dataclass
class CallFrame:
    """
    One frame of the call tree.

    @ivar kind: C{CALL}, C{STATICCALL}, C{DELEGATECALL}, C{CALLCODE},
        C{CREATE}, C{CREATE2} or C{SELFDESTRUCT}.
    @ivar value: the wei moved, or L{None} where the instruction moves none
        (DELEGATECALL, STATICCALL).
    @ivar gas: the gas the frame was given.
    @ivar error: why it failed, or L{None}.
    @ivar reverted: whether it ended with REVERT.
    """

    kind: str
    sender: bytes
    to: bytes
    value: int | None
    gas: int
    input: bytes
    depth: int
    gas_used: int = 0
    output: bytes = b""
    error: str | None = None
    reverted: bool = False
    calls: list["CallFrame"] = field(default_factory=list)
    logs: list[FrameLog] = field(default_factory=list)

    @property
    def is_create(self) -> bool:
        """
        Whether the frame is a creation.
        """
        return self.kind in ("CREATE", "CREATE2")

    def drop_logs(self) -> None:
        """
        Forget the logs of this frame and its children (it failed, so they were undone).
        """
        self.logs = []
        for child in self.calls:
            child.drop_logs()


class CallTreeRecorder:
    """
    Builds the L{CallFrame} tree of one transaction.

    @ivar root: the transaction's own frame, once it started.
    """

    wants_steps = False
    wants_stack = False
    wants_memory = False

    def __init__(self, budget: TraceBudget) -> None:
        self._budget = budget
        self.root: CallFrame | None = None
        # Per running frame: its record, its EVM frame, and where each child's
        # logs start in its own list, with how many the child added.
        self._running: list[tuple[CallFrame, Evm, list[tuple[int, int]]]] = []

    def capture_enter(self, evm: Evm) -> None:
        """
        Open a frame.
        """
        message = evm.message
        running = self._running
        if running:
            parent, parent_evm, _ = running[-1]
            kind = CALL_KINDS.get(parent_evm.code[parent_evm.pc], "CALL")
            sender = parent_evm.message.current_target
        else:
            parent = None
            kind = "CREATE" if message.is_create else "CALL"
            sender = message.caller
        if message.is_create:
            to, data = message.current_target, message.code
        else:
            to, data = message.code_address or message.current_target, message.data
        value = None if kind in ("DELEGATECALL", "STATICCALL") else message.value
        frame = CallFrame(kind, sender, to, value, message.gas, data, message.depth)
        self._budget.charge(_FRAME_BYTES + 2 * len(data))
        if parent is None:
            self.root = frame
        else:
            parent.calls.append(frame)
        running.append((frame, evm, []))

    def capture_exit(self, evm: Evm) -> None:
        """
        Close the running frame with its outcome.
        """
        frame, _, blocks = self._running.pop()
        frame.gas_used = evm.message.gas - evm.gas_left
        frame.output = evm.output
        frame.error = error_description(evm.error)
        frame.reverted = isinstance(evm.error, Revert)
        self._budget.charge(2 * len(evm.output))
        if evm.error is None:
            frame.logs = _own_logs(evm.logs, blocks)
        else:
            frame.drop_logs()
        if self._running:
            parent_evm = self._running[-1][1]
            added = len(evm.logs) if evm.error is None else 0
            self._running[-1][2].append((len(parent_evm.logs), added))

    def capture_selfdestruct(self, evm: Evm, beneficiary: bytes, balance: int) -> None:
        """
        Record a SELFDESTRUCT as a child frame of the running frame.
        """
        frame, _, blocks = self._running[-1]
        child = CallFrame("SELFDESTRUCT", evm.message.current_target, beneficiary, balance, 0, b"", evm.message.depth + 1)
        self._budget.charge(_FRAME_BYTES)
        frame.calls.append(child)
        blocks.append((len(evm.logs), 0))

    def capture_step(self, *args: Any) -> None:
        """
        Not called: the recorder wants no steps.
        """


def _own_logs(logs: list[Any], blocks: list[tuple[int, int]]) -> list[FrameLog]:
    """
    The logs a frame emitted itself: its log list without the runs its
    children added, each with the number of children before it.

    @param blocks: per child, in order, where its logs start and how many.
    """
    own = []
    index = 0
    position = 0
    pending = iter(blocks)
    block = next(pending, None)
    while True:
        if block is not None and block[0] <= index:
            index += block[1]
            position += 1
            block = next(pending, None)
            continue
        if index >= len(logs):
            return own
        address, topics, data = logs[index]
        own.append(FrameLog(address, tuple(topics), data, position))
        index += 1


def _hex(data: bytes) -> str:
    """
    Bytes as 0x-prefixed hex.
    """
    return "0x" + data.hex()


class CallTracer(CallTreeRecorder):
    """
    geth's C{callTracer}: the call tree as nested objects, with
    C{onlyTopCall} and C{withLog}.
    """

    def __init__(self, config: TraceConfig, budget: TraceBudget) -> None:
        super().__init__(budget)
        self._only_top_call = config.only_top_call
        self._with_log = config.with_log

    def result(self, run: TracedRun) -> dict[str, Any] | None:
        """
        The tree of the traced transaction; the top frame's C{gas} is the
        transaction's gas and its C{gasUsed} the receipt's.
        """
        root = self.root
        if root is None:
            return _failed_before_execution(run)
        rendered = self._render(root)
        rendered["gas"] = hex(run.gas)
        rendered["gasUsed"] = hex(run.gas_used)
        return rendered

    def _render(self, frame: CallFrame) -> dict[str, Any]:
        """
        One frame and, unless only the top call is asked for, its children.
        """
        rendered: dict[str, Any] = {"type": frame.kind, "from": _hex(frame.sender), "to": _hex(frame.to)}
        if frame.value is not None:
            rendered["value"] = hex(frame.value)
        rendered["gas"] = hex(frame.gas)
        rendered["gasUsed"] = hex(frame.gas_used)
        rendered["input"] = _hex(frame.input)
        if frame.output:
            rendered["output"] = _hex(frame.output)
        if frame.error is not None:
            rendered["error"] = frame.error
            reason = decode_revert_reason(frame.output) if frame.reverted else None
            if reason is not None:
                rendered["revertReason"] = reason
        if frame.calls and not self._only_top_call:
            rendered["calls"] = [self._render(child) for child in frame.calls]
        if self._with_log and frame.logs:
            rendered["logs"] = [
                {
                    "address": _hex(log.address),
                    "topics": [_hex(topic) for topic in log.topics],
                    "data": _hex(log.data),
                    "position": hex(log.position),
                }
                for log in frame.logs
            ]
        return rendered


def _failed_before_execution(run: TracedRun) -> dict[str, Any]:
    """
    The single frame of a transaction whose code never ran (a creation at an
    address that is taken).
    """
    rendered: dict[str, Any] = {
        "type": "CREATE" if run.to is None else "CALL",
        "from": _hex(run.sender),
        "to": _hex(run.to if run.to is not None else run.contract_address or b""),
        "value": hex(run.value),
        "gas": hex(run.gas),
        "gasUsed": hex(run.gas_used),
        "input": _hex(run.input),
    }
    if run.error is not None:
        rendered["error"] = run.error
    return rendered


__all__ = ["CALL_KINDS", "CallFrame", "CallTracer", "CallTreeRecorder", "FrameLog"]
