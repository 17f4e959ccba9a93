"""
State overrides: the third parameter of C{eth_call} (and C{eth_estimateGas}),
applied to a throw-away L{State} before the call runs.

Per account a client may replace the balance, the nonce, the code, and either
the whole storage (C{state}) or some of its slots (C{stateDiff}).  Moving a
precompile (C{movePrecompileToAddress}) is recognised and refused, as the
interface specification says it is not supported yet.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field

from nodex.primitives import UINT64_CEILING, UINT256_CEILING, Address
from nodex.state.errors import StateError
from nodex.state.state import State

PRECOMPILE_COUNT = 0x0A
"""Addresses 0x01 .. 0x0a are precompiles, whose code cannot be replaced."""


class StateOverrideError(StateError):
    """
    A state override set that cannot be applied; the message says which
    account and which member is wrong.
    """


@dataclass(frozen=True)
class AccountOverride:
    """
    What one account's override replaces; L{None} leaves a member as it is.

    @ivar balance: the new balance in wei (below 2**256).
    @ivar nonce: the new nonce (below 2**64).
    @ivar code: the new code.
    @ivar state: the whole new storage: every other slot reads zero.
    @ivar state_diff: slots to set, the others unchanged.
    @ivar move_precompile_to: C{movePrecompileToAddress}, refused.
    """

    balance: int | None = None
    nonce: int | None = None
    code: bytes | None = None
    state: Mapping[int, int] | None = None
    state_diff: Mapping[int, int] | None = None
    move_precompile_to: Address | None = None


@dataclass(frozen=True)
class StateOverrides:
    """
    A state override set: accounts and what to replace in each.
    """

    accounts: Mapping[Address, AccountOverride] = field(default_factory=dict)

    def __bool__(self) -> bool:
        """
        Whether any account is overridden.
        """
        return bool(self.accounts)


def _is_precompile(address: Address) -> bool:
    """
    Whether C{address} is one of the precompiles.
    """
    return 0 < int.from_bytes(address, "big") <= PRECOMPILE_COUNT


def check_override(address: Address, override: AccountOverride) -> None:
    """
    Refuse an account override that cannot be applied.

    @raise StateOverrideError: C{movePrecompileToAddress} (not supported
        yet); C{state} together with C{stateDiff}; a balance, nonce, slot or
        slot value out of range; code for a precompile.
    """
    where = f"account 0x{address.hex()}"
    if override.move_precompile_to is not None:
        raise StateOverrideError(f"{where}: movePrecompileToAddress is not supported yet")
    if override.state is not None and override.state_diff is not None:
        raise StateOverrideError(f"{where}: has both 'state' and 'stateDiff'")
    if override.balance is not None and not 0 <= override.balance < UINT256_CEILING:
        raise StateOverrideError(f"{where}: balance must be a 32-byte unsigned integer")
    if override.nonce is not None and not 0 <= override.nonce < UINT64_CEILING:
        raise StateOverrideError(f"{where}: nonce must be an 8-byte unsigned integer")
    if override.code is not None and _is_precompile(address):
        raise StateOverrideError(f"{where}: the code of a precompiled contract can not be overridden")
    for name, slots in (("state", override.state), ("stateDiff", override.state_diff)):
        for slot, value in (slots or {}).items():
            if not (0 <= slot < UINT256_CEILING and 0 <= value < UINT256_CEILING):
                raise StateOverrideError(f"{where}: {name} slots and values must be 32-byte words")


def apply_overrides(state: State, overrides: StateOverrides) -> None:
    """
    Change C{state} as the override set says; every account is checked
    before any is changed.

    @raise StateOverrideError: see L{check_override}.
    """
    for address, override in overrides.accounts.items():
        check_override(address, override)
    for address, override in overrides.accounts.items():
        if override.balance is not None:
            state.set_balance(address, override.balance)
        if override.nonce is not None:
            state.set_nonce(address, override.nonce)
        if override.code is not None:
            state.set_code(address, override.code)
        if override.state is not None:
            state.destroy_storage(address)
        for slot, value in (override.state or override.state_diff or {}).items():
            state.set_storage(address, slot, value)


__all__ = [
    "AccountOverride",
    "PRECOMPILE_COUNT",
    "StateOverrideError",
    "StateOverrides",
    "apply_overrides",
    "check_override",
]
