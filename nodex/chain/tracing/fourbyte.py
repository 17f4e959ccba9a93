"""
geth's C{4byteTracer}: how often each function selector was called, with
the size of the arguments: C{{"0x<selector>-<size>": count}}.

Every frame of the CALL family whose input has at least four bytes counts,
the transaction's own call included; creations and precompiles do not.
"""

from typing import Any

from nodex.chain.tracing.limits import TraceBudget
from nodex.chain.tracing.run import TracedRun
from nodex.evm.frame import Evm


class FourByteTracer:
    """
    Counts selectors (see the module docstring).
    """

    wants_steps = False
    wants_stack = False
    wants_memory = False

    def __init__(self, budget: TraceBudget) -> None:
        self._budget = budget
        self.counts: dict[str, int] = {}

    def capture_enter(self, evm: Evm) -> None:
        """
        Count the frame's selector.
        """
        message = evm.message
        if message.is_create or len(message.data) < 4:
            return
        if message.code_address in evm.context.fork.precompiles:
            return
        key = f"0x{message.data[:4].hex()}-{len(message.data) - 4}"
        if key not in self.counts:
            self._budget.charge(len(key) + 8)
        self.counts[key] = self.counts.get(key, 0) + 1

    def capture_exit(self, evm: Evm) -> None:
        """
        Nothing to do when a frame ends.
        """

    def capture_selfdestruct(self, evm: Evm, beneficiary: bytes, balance: int) -> None:
        """
        Not a call.
        """

    def capture_step(self, *args: Any) -> None:
        """
        Not called: the tracer wants no steps.
        """

    def result(self, run: TracedRun) -> dict[str, int]:
        """
        The counts.
        """
        return dict(self.counts)


__all__ = ["FourByteTracer"]
