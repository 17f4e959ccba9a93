"""
State reads, calls, estimates and proofs at any block, as the edges see them.
"""

from dataclasses import dataclass
from typing import Any

from twisted.internet.defer import Deferred
from zope.interface import Attribute, Interface

from nodex.chain.calls import CallRequest
from nodex.primitives import Address, Hash32
from nodex.state.overrides import AccountOverride, StateOverrides
from nodex.structures.headers import Header

__all__ = [
    "AccountOverride",
    "AccountProof",
    "CallRequest",
    "IStateService",
    "StateOverrides",
    "StorageProof",
]


@dataclass(frozen=True)
class StorageProof:
    """
    One storage slot's value and its proof (EIP-1186).

    @ivar key: the slot as the client gave it.
    @ivar proof: the trie nodes from the storage root down, root first.
    """

    key: int
    value: int
    proof: tuple[bytes, ...]


@dataclass(frozen=True)
class AccountProof:
    """
    An account's fields, their proof against the block's state root, and
    the proofs of the asked storage slots (EIP-1186).
    """

    address: Address
    balance: int
    nonce: int
    code_hash: Hash32
    storage_hash: Hash32
    account_proof: tuple[bytes, ...]
    storage_proofs: tuple[StorageProof, ...]


class IStateService(Interface):
    """
    Reads of the world state at any stored block, and calls against it that
    commit nothing.  Each runs in the reader pool against the block's state
    root; calls are bounded by the gas cap and the per-request time limit.
    """

    call_gas_cap = Attribute("The most gas an eth_call or an estimate may use (int).")

    def get_balance(header: Header, address: bytes) -> "Deferred[int]":
        """
        The balance of C{address} in the state after block C{header}.
        """

    def get_nonce(header: Header, address: bytes) -> "Deferred[int]":
        """
        The nonce of C{address} after block C{header}.
        """

    def get_storage(header: Header, address: bytes, slot: int) -> "Deferred[int]":
        """
        A storage slot of C{address} after block C{header} (zero when absent).
        """

    def get_code(header: Header, address: bytes) -> "Deferred[bytes]":
        """
        The code of C{address} after block C{header} (empty when none).
        """

    def get_proof(header: Header, address: bytes, slots: "list[int]") -> "Deferred[AccountProof]":
        """
        The EIP-1186 proof of an account and some of its slots after block C{header}.
        """

    def call(header: Header, request: CallRequest, overrides: StateOverrides) -> "Deferred[bytes]":
        """
        Run a call on the state after block C{header}, in that block's context.

        @return: a Deferred firing with the return data, or failing with
            L{ExecutionRevertedError} (-32015), L{InsufficientFundsError},
            L{CallError}, L{StateOverrideError} or L{CallTimeoutError}.
        """

    def estimate_gas(header: Header, request: CallRequest, overrides: StateOverrides) -> "Deferred[int]":
        """
        The least gas with which the call succeeds on the state after block
        C{header}, at most the block's gas limit (or the request's gas).

        @return: a Deferred firing with the gas, or failing as L{call} does.
        """

    def create_access_list(header: Header, request: CallRequest, overrides: StateOverrides) -> "Deferred[Any]":
        """
        The EIP-2930 access list the call would want on the state after
        block C{header}, and the gas it uses with it (C{eth_createAccessList}).

        @return: a Deferred firing with an object with C{access_list},
            C{gas_used} and C{error} (the failed call's, or L{None}), or
            failing with L{InsufficientFundsError}, L{CallError} or
            L{CallTimeoutError}.
        """
