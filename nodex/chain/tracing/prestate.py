"""
geth's C{prestateTracer}: the accounts and storage slots a transaction
touched, as they were before it ran; with C{diffMode}, what it changed, as
C{{"pre": ..., "post": ...}}.

The accounts are those of every frame (caller, callee, library, new
contract), those the instructions look at (BALANCE, EXTCODE*, the CALL
family's targets, SELFDESTRUCT's beneficiary), the sender and the coinbase;
the slots are those SLOAD and SSTORE used.  Values come from the state as
it stood before the transaction (L{PrestateTracer.pre_state}, opened by the
replay at the committed root of the transactions before it) and, in diff
mode, after it.
"""

from abc import ABC, abstractmethod
from typing import Any

from nodex.chain.tracing.limits import TraceBudget, TraceConfig
from nodex.chain.tracing.run import TracedRun
from nodex.evm.frame import Evm
from nodex.primitives import Address
from nodex.state.state import State

SLOAD = 0x54
SSTORE = 0x55
ADDRESS_AT_TOP = frozenset((0x31, 0x3B, 0x3C, 0x3F, 0xFF))
"""BALANCE, EXTCODESIZE, EXTCODECOPY, EXTCODEHASH, SELFDESTRUCT: the account on top of the stack."""
ADDRESS_SECOND = frozenset((0xF1, 0xF2, 0xF4, 0xFA))
"""CALL, CALLCODE, DELEGATECALL, STATICCALL: the account second from the top."""

_ACCOUNT_BYTES = 200
_SLOT_BYTES = 140


def _word(value: int) -> str:
    """
    A 256-bit word as 0x and 64 hex digits.
    """
    return "0x" + format(value, "064x")


class AccessWatcher(ABC):
    """
    The steps of a tracer that wants what the instructions look at: the
    slots SLOAD and SSTORE use (L{slot_used}) and the accounts of BALANCE,
    EXTCODE*, SELFDESTRUCT and the CALL family (L{account_used}); the
    interpreter hands these opcodes their stack, and no other step any.
    """

    wants_steps = True
    wants_stack = False
    wants_memory = False
    stack_ops = frozenset((SLOAD, SSTORE)) | ADDRESS_AT_TOP | ADDRESS_SECOND

    @abstractmethod
    def slot_used(self, address: bytes, slot: int) -> None:
        """
        SLOAD or SSTORE of C{address}'s C{slot}.
        """

    @abstractmethod
    def account_used(self, address: bytes) -> None:
        """
        An instruction looked at the account C{address}.
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
        Report the slot or the account an instruction looks at.
        """
        if not stack:
            return
        if op == SLOAD or op == SSTORE:
            self.slot_used(evm.message.current_target, stack[-1])
        elif op in ADDRESS_AT_TOP:
            self.account_used((stack[-1] % 2**160).to_bytes(20, "big"))
        elif op in ADDRESS_SECOND and len(stack) >= 2:
            self.account_used((stack[-2] % 2**160).to_bytes(20, "big"))


class PrestateTracer(AccessWatcher):
    """
    Collects what the transaction touched (see the module docstring).

    @ivar pre_state: the state before the transaction, set by the replay
        before it runs.
    """

    needs_pre_state = True

    def __init__(self, config: TraceConfig, budget: TraceBudget) -> None:
        self._diff_mode = config.diff_mode
        self._budget = budget
        self.pre_state: State | None = None
        self._accounts: dict[bytes, set[int]] = {}

    def _touch(self, address: bytes) -> set[int]:
        """
        Remember an account; its set of touched slots.
        """
        slots = self._accounts.get(address)
        if slots is None:
            slots = self._accounts[address] = set()
            self._budget.charge(_ACCOUNT_BYTES)
        return slots

    def capture_enter(self, evm: Evm) -> None:
        """
        Remember the frame's accounts.
        """
        message = evm.message
        self._touch(message.caller)
        self._touch(message.current_target)
        if message.code_address is not None:
            self._touch(message.code_address)

    def capture_exit(self, evm: Evm) -> None:
        """
        Nothing to do when a frame ends.
        """

    def capture_selfdestruct(self, evm: Evm, beneficiary: bytes, balance: int) -> None:
        """
        Remember the beneficiary.
        """
        self._touch(beneficiary)

    def slot_used(self, address: bytes, slot: int) -> None:
        """
        Remember a slot an instruction used.
        """
        slots = self._touch(address)
        if slot not in slots:
            slots.add(slot)
            self._budget.charge(_SLOT_BYTES)

    def account_used(self, address: bytes) -> None:
        """
        Remember an account an instruction looked at.
        """
        self._touch(address)

    def result(self, run: TracedRun) -> dict[str, Any]:
        """
        The accounts before the transaction or, in diff mode, C{pre} and C{post}.
        """
        self._touch(run.sender)
        if run.to is not None:
            self._touch(run.to)
        elif run.contract_address is not None:
            self._touch(run.contract_address)
        self._touch(run.coinbase)
        assert self.pre_state is not None
        pre = {address: _account(self.pre_state, address, slots) for address, slots in self._accounts.items()}
        if not self._diff_mode:
            return {"0x" + address.hex(): _render(account) for address, account in sorted(pre.items())}
        return self._diff(pre, run.state)

    def _diff(self, pre: dict[bytes, dict[str, Any] | None], after: State) -> dict[str, Any]:
        """
        C{pre}: the changed accounts as they were (with only the changed
        slots); C{post}: what changed in them, deleted accounts left out.
        """
        pre_part: dict[str, Any] = {}
        post_part: dict[str, Any] = {}
        for address in sorted(pre):
            before = pre[address]
            now = _account(after, address, self._accounts[address])
            if before == now:
                continue
            key = "0x" + address.hex()
            before_storage = before["storage"] if before else {}
            now_storage = now["storage"] if now else {}
            changed = {slot for slot in set(before_storage) | set(now_storage)
                       if before_storage.get(slot, 0) != now_storage.get(slot, 0)}
            if before is not None:
                pre_part[key] = _render({**before, "storage": {s: before_storage.get(s, 0) for s in changed}})
            if now is not None:
                post: dict[str, Any] = {}
                for member in ("balance", "nonce", "code"):
                    if before is None or before[member] != now[member]:
                        post[member] = now[member]
                post["storage"] = {s: now_storage.get(s, 0) for s in changed}
                post_part[key] = _render(post, keep_zero_storage=True)
        return {"pre": pre_part, "post": post_part}


def _account(state: State, address: bytes, slots: set[int]) -> dict[str, Any] | None:
    """
    An account's balance, nonce, code and touched slots in C{state}, or
    L{None} if it does not exist there.
    """
    address = Address(address)
    if state.get_account(address) is None:
        return None
    return {
        "balance": state.get_balance(address),
        "nonce": state.get_nonce(address),
        "code": state.get_code(address),
        "storage": {slot: state.get_storage(address, slot) for slot in slots},
    }


def _render(account: dict[str, Any] | None, keep_zero_storage: bool = False) -> dict[str, Any]:
    """
    geth's account object: C{balance} (hex), C{nonce} (a number, left out
    when zero), C{code} (left out when empty) and C{storage} (left out
    when empty; zero slots left out unless C{keep_zero_storage}).
    """
    if account is None:
        return {"balance": "0x0"}
    rendered: dict[str, Any] = {}
    if "balance" in account:
        rendered["balance"] = hex(account["balance"])
    if account.get("nonce"):
        rendered["nonce"] = account["nonce"]
    if account.get("code"):
        rendered["code"] = "0x" + account["code"].hex()
    storage = {
        _word(slot): _word(value)
        for slot, value in sorted(account.get("storage", {}).items())
        if value or keep_zero_storage
    }
    if storage:
        rendered["storage"] = storage
    return rendered


__all__ = ["ADDRESS_AT_TOP", "ADDRESS_SECOND", "SLOAD", "SSTORE", "AccessWatcher", "PrestateTracer"]
