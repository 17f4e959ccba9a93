"""
C{eth_createAccessList}: the EIP-2930 access list a call would want, and
the gas it uses with that list.

L{AccessListTracer} records what the call's instructions look at: the slots
SLOAD and SSTORE use (with their contract), and the accounts of BALANCE,
EXTCODE*, SELFDESTRUCT and the CALL family, including in frames that later
revert, as geth's access-list tracer does.  The sender, the callee (or the
contract a creation makes) and the precompiles are warm anyway, so they
appear only with storage keys.  Running the call with the list can change
its path (a contract that reads its own gas), so the call runs again with
each new list, which starts from the last and only grows, until it no
longer changes (L{MAX_ROUNDS} at most), as geth does.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from nodex.chain.calls import CallError, CallRequest, InsufficientFundsError, call_gas, run_request
from nodex.chain.tracing.prestate import AccessWatcher
from nodex.evm.environment import BlockEnvironment
from nodex.evm.frame import Evm
from nodex.evm.instructions.system import compute_contract_address
from nodex.primitives import Address, Hash32
from nodex.state.overrides import StateOverrides, apply_overrides
from nodex.state.state import State
from nodex.structures.errors import InvalidTransactionError
from nodex.structures.transactions import AccessListEntry

MAX_ROUNDS = 8
"""The most runs of the call: the list settles after two for almost every call."""


@dataclass(frozen=True)
class AccessListResult:
    """
    The answer of C{eth_createAccessList}.

    @ivar access_list: the accounts and storage keys, in the order first used.
    @ivar gas_used: the gas of the call run with that list.
    @ivar error: why the call failed with that list (C{execution reverted},
        C{out of gas}, ...), or L{None}.
    """

    access_list: tuple[AccessListEntry, ...]
    gas_used: int
    error: str | None


class AccessListTracer(AccessWatcher):
    """
    Collects the accounts and slots a call looks at (see the module docstring).
    """

    def __init__(self, initial: Sequence[AccessListEntry], excluded: frozenset[bytes]) -> None:
        """
        @param initial: the list to start from (the request's own, or the last round's).
        @param excluded: the accounts listed only with storage keys.
        """
        self._excluded = excluded
        self._accounts: dict[bytes, dict[int, None]] = {}
        for entry in initial:
            if entry.address in excluded and not entry.storage_keys:
                continue
            slots = self._slots_of(entry.address)
            for key in entry.storage_keys:
                slots[int.from_bytes(key, "big")] = None

    def _slots_of(self, address: bytes) -> dict[int, None]:
        """
        The slots kept for C{address}, which is listed from now on.
        """
        slots = self._accounts.get(address)
        if slots is None:
            slots = self._accounts[address] = {}
        return slots

    def slot_used(self, address: bytes, slot: int) -> None:
        """
        List the slot, and its account.
        """
        self._slots_of(address)[slot] = None

    def account_used(self, address: bytes) -> None:
        """
        List the account, unless it is warm anyway.
        """
        if address not in self._excluded:
            self._slots_of(address)

    def capture_enter(self, evm: Evm) -> None:
        """
        Nothing to do when a frame starts: its accounts were named by the
        instruction that started it.
        """

    def capture_exit(self, evm: Evm) -> None:
        """
        Nothing to do when a frame ends.
        """

    def capture_selfdestruct(self, evm: Evm, beneficiary: bytes, balance: int) -> None:
        """
        Nothing to do: SELFDESTRUCT's step named the beneficiary.
        """

    def access_list(self) -> tuple[AccessListEntry, ...]:
        """
        The accounts and their slots, in the order first seen.
        """
        return tuple(
            AccessListEntry(Address(address), tuple(Hash32(slot.to_bytes(32, "big")) for slot in slots))
            for address, slots in self._accounts.items()
        )


def create_access_list(
    open_state: Callable[[], State],
    block: BlockEnvironment,
    request: CallRequest,
    overrides: StateOverrides,
    gas_cap: int,
) -> AccessListResult:
    """
    C{eth_createAccessList}: run the call with the list it gathers until the
    list settles; the list, and the gas and error of the last run.

    @raise InsufficientFundsError: the sender cannot pay.
    @raise CallError: the gas does not cover the intrinsic gas (of the
        request, or of the request with the list gathered so far).
    @raise nodex.state.overrides.StateOverrideError: a bad override set.
    """
    gas = call_gas(open_state, request, overrides, gas_cap)
    state = open_state()
    apply_overrides(state, overrides)
    callee = request.to if request.to is not None else compute_contract_address(
        request.sender, state.get_nonce(request.sender)
    )
    excluded = frozenset((bytes(request.sender), bytes(callee), *block.fork.precompile_addresses))
    current = AccessListTracer(request.access_list, excluded).access_list()
    for round_number in range(1, MAX_ROUNDS + 1):
        tracer = AccessListTracer(current, excluded)
        try:
            result = run_request(open_state, block, replace(request, access_list=current), overrides, gas, tracer)
        except InsufficientFundsError:
            raise
        except InvalidTransactionError as exc:
            # The list's own intrinsic gas is above the request's gas.
            raise CallError(str(exc)) from exc
        found = tracer.access_list()
        if found == current or round_number == MAX_ROUNDS:
            return AccessListResult(current, result.gas_used, result.error)
        current = found
    raise AssertionError("unreachable: the last round returns")


__all__ = ["MAX_ROUNDS", "AccessListResult", "AccessListTracer", "create_access_list"]
