"""
Parity-style flat traces (reference §3.9): the call tree depth first, one
object per frame with its C{traceAddress}.

Members appear in the reference's order and only when they have a value,
except C{result}, which is always present (L{None} when the frame failed,
with C{error} saying why: C{Reverted} for a revert).  The top trace's
C{gasUsed} is the receipt's; each trace's C{action.input} is the frame's
own input and C{action.gas} the gas it was given (the transaction's gas
minus the intrinsic gas for the top one), where the reference shows the
transaction's input everywhere and C{0x0} for transfers.
"""

from typing import Any

from nodex.chain.tracing.calltree import CallFrame, CallTreeRecorder
from nodex.chain.tracing.run import TracedRun


def _hex(data: bytes) -> str:
    """
    Bytes as 0x-prefixed hex.
    """
    return "0x" + data.hex()


def flatten(root: CallFrame, run: TracedRun) -> list[dict[str, Any]]:
    """
    The flat traces of one transaction's call tree.
    """
    traces: list[dict[str, Any]] = []
    _walk(root, [], run, traces, top=True)
    return traces


def _walk(frame: CallFrame, address: list[int], run: TracedRun, traces: list[dict[str, Any]], top: bool) -> None:
    """
    Add the trace of C{frame}, then those of its children.
    """
    trace: dict[str, Any] = {"action": _action(frame, top)}
    if run.block_hash is not None:
        trace["blockHash"] = _hex(run.block_hash)
        trace["blockNumber"] = run.block_number
    if run.tx_hash is not None:
        trace["transactionHash"] = _hex(run.tx_hash)
        trace["transactionPosition"] = run.position
    trace["type"] = "suicide" if frame.kind == "SELFDESTRUCT" else "create" if frame.is_create else "call"
    trace["subtraces"] = len(frame.calls)
    trace["traceAddress"] = list(address)
    trace["result"] = _result(frame, run.gas_used if top else frame.gas_used)
    if frame.error is not None:
        trace["error"] = "Reverted" if frame.reverted else frame.error
    traces.append(trace)
    for index, child in enumerate(frame.calls):
        _walk(child, address + [index], run, traces, top=False)


def _action(frame: CallFrame, top: bool) -> dict[str, Any]:
    """
    The C{action} member of a frame's trace.
    """
    if frame.kind == "SELFDESTRUCT":
        return {"address": _hex(frame.sender), "refundAddress": _hex(frame.to), "balance": hex(frame.value or 0)}
    if frame.is_create:
        action = {"from": _hex(frame.sender), "gas": hex(frame.gas), "init": _hex(frame.input), "value": hex(frame.value or 0)}
        if not top:
            action["creationMethod"] = frame.kind.lower()
        return action
    return {
        "callType": frame.kind.lower(),
        "from": _hex(frame.sender),
        "to": _hex(frame.to),
        "gas": hex(frame.gas),
        "input": _hex(frame.input),
        "value": hex(frame.value or 0),
    }


def _result(frame: CallFrame, gas_used: int) -> dict[str, Any] | None:
    """
    The C{result} member: L{None} for a failed frame or a self-destruct.
    """
    if frame.error is not None or frame.kind == "SELFDESTRUCT":
        return None
    if frame.is_create:
        return {"gasUsed": hex(gas_used), "code": _hex(frame.output), "address": _hex(frame.to)}
    return {"gasUsed": hex(gas_used), "output": _hex(frame.output)}


class FlatCallTracer(CallTreeRecorder):
    """
    The call tree as Parity-style flat traces (C{trace_*}, and geth's
    C{flatCallTracer} name in C{debug_trace*}).
    """

    def result(self, run: TracedRun) -> list[dict[str, Any]]:
        """
        The flat traces of the transaction (none if its code never ran).
        """
        return [] if self.root is None else flatten(self.root, run)


__all__ = ["FlatCallTracer", "flatten"]
