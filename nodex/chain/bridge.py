"""
The bridge system account and the layout of its storage, which
C{eth_bridgeState} reads (reference §3.3).

Genesis creates the account C{0x0000000000000000000000000000000001000006}
(on regtest with 21·10^24 wei, reference §13.4).  nodex runs no bridge
contract of its own: the account's storage holds what the federation's
bridge logic (or a network's genesis) writes there, in this layout, laid out
as Solidity lays out a C{uint256} followed by a C{bytes32[]}:

  - slot 0: the best Bitcoin block height known to the bridge;
  - slot 1: the number M{n} of peg-out transactions waiting for federation
    signatures;
  - slots M{keccak256(pad32(1)) + i}, M{0 <= i < n}: the 32-byte key of the
    M{i}-th waiting transaction.

An account with empty storage reads as height 0 and no waiting transaction,
which is a fresh regtest chain's answer.
"""

from collections.abc import Callable
from dataclasses import dataclass

from nodex.crypto import keccak256
from nodex.primitives import Address

BRIDGE_ADDRESS = Address(bytes.fromhex("0000000000000000000000000000000001000006"))
"""The bridge system account that genesis creates."""

BEST_HEIGHT_SLOT = 0
"""The slot of the best Bitcoin height known to the bridge."""

WAITING_COUNT_SLOT = 1
"""The slot of the number of peg-outs waiting for signatures (the array's length)."""

WAITING_BASE_SLOT = int.from_bytes(keccak256(WAITING_COUNT_SLOT.to_bytes(32, "big")), "big")
"""The slot of the first waiting peg-out's key (Solidity's dynamic-array rule)."""

MAX_WAITING = 10_000
"""The most waiting keys one answer lists, so that a corrupt count cannot make a read endless."""


class BridgeStateError(Exception):
    """
    The bridge account's storage does not follow the layout (a count beyond
    L{MAX_WAITING}).
    """


@dataclass(frozen=True)
class BridgeState:
    """
    What C{eth_bridgeState} answers.

    @ivar best_chain_height: the best Bitcoin height known to the bridge.
    @ivar waiting_for_signatures: the keys of the peg-out transactions
        waiting for federation signatures, in storage order.
    """

    best_chain_height: int
    waiting_for_signatures: tuple[bytes, ...]


def waiting_slot(index: int) -> int:
    """
    The storage slot of the key of waiting peg-out number C{index}.
    """
    return (WAITING_BASE_SLOT + index) % 2**256


def read_bridge_state(read_slot: Callable[[int], int]) -> BridgeState:
    """
    Read the bridge's state from its storage.

    @param read_slot: the value of a storage slot of L{BRIDGE_ADDRESS} (0
        when unset).
    @raise BridgeStateError: the count of waiting peg-outs is beyond L{MAX_WAITING}.
    """
    count = read_slot(WAITING_COUNT_SLOT)
    if count > MAX_WAITING:
        raise BridgeStateError(f"bridge storage lists {count} waiting peg-outs, more than {MAX_WAITING}")
    keys = tuple(read_slot(waiting_slot(index)).to_bytes(32, "big") for index in range(count))
    return BridgeState(read_slot(BEST_HEIGHT_SLOT), keys)


__all__ = [
    "BEST_HEIGHT_SLOT",
    "BRIDGE_ADDRESS",
    "BridgeState",
    "BridgeStateError",
    "MAX_WAITING",
    "WAITING_BASE_SLOT",
    "WAITING_COUNT_SLOT",
    "read_bridge_state",
    "waiting_slot",
]
