"""
The C{evm} module: the test-chain controls of reference §3.4.

Snapshots are the heights of the head when they were taken, kept in a
list.  By the reference's rule a snapshot's id is its position from 1, and
reverting to id I{n} keeps snapshots 1..n (I{n} itself can be reverted to
again).  Under the Ethereum conventions (Hardhat's and Anvil's rule) ids
only grow, reverting to a snapshot consumes it and every later one, and
puts the chain's time back to the snapshot's.  Either way a revert rewinds
the chain to the recorded height if the head is above it, and empties the
pool.
"""

from bisect import bisect_left
from collections.abc import Iterable
from typing import Any

from dataclasses import dataclass

from nodex.api.chain import IChainService
from nodex.api.conventions import REFERENCE_CONVENTIONS, Conventions
from nodex.api.mining import IMiner
from nodex.api.pool import ITransactionPool
from nodex.rpc import encoders
from nodex.rpc.decoders import DecodeError
from nodex.rpc.registry import Method, Param

_HEX = frozenset("0123456789abcdefABCDEF")


def snapshot_id(value: Any) -> int:
    """
    A snapshot id: a C{0x}-prefixed hex string.
    """
    if isinstance(value, str) and value[:2] in ("0x", "0X") and value[2:] and _HEX.issuperset(value[2:]):
        return int(value[2:], 16)
    shown = value if isinstance(value, str) else type(value).__name__
    raise DecodeError(f"invalid snapshot id {str(shown)[:80]}")


def seconds(value: Any) -> int:
    """
    A number of seconds: a decimal or C{0x}-hex string, or a JSON integer
    (which web3 libraries send).
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip()
        try:
            if text[:2] in ("0x", "0X"):
                if text[2:] and _HEX.issuperset(text[2:]):
                    return int(text[2:], 16)
            elif text.lstrip("-").isdigit():
                return int(text, 10)
        except ValueError:
            pass
    shown = value if isinstance(value, str) else type(value).__name__
    raise DecodeError(f"invalid number of seconds {str(shown)[:80]}")


@dataclass(frozen=True)
class _Snapshot:
    """
    What C{evm_snapshot} remembers.

    @ivar id: the id it answered.
    @ivar height: the head's number then.
    @ivar time: the miner's chain time then (L{IMiner.chain_time}), which
        a revert puts back under the Ethereum conventions.
    """

    id: int
    height: int
    time: int | None


def _snapshot_id(snapshot: _Snapshot) -> int:
    """
    The key a revert's binary search orders the snapshots by.
    """
    return snapshot.id


class EvmMethods:
    """
    C{evm_snapshot}, C{evm_revert}, C{evm_reset}, C{evm_mine},
    C{evm_increaseTime}, C{evm_startMining} and C{evm_stopMining}.
    """

    def __init__(
        self, chain: IChainService, pool: ITransactionPool, miner: IMiner, conventions: Conventions = REFERENCE_CONVENTIONS
    ) -> None:
        """
        @param chain: rewound by revert and reset.
        @param pool: emptied by revert and reset.
        @param miner: mines, and is started, stopped and time-shifted.
        @param conventions: whose snapshot rule applies (module docstring).
        """
        self._chain = chain
        self._pool = pool
        self._miner = miner
        self._consume_snapshots = conventions.ethereum
        self._snapshots: list[_Snapshot] = []
        self._last_id = 0

    def rpc_methods(self) -> Iterable[Method]:
        """
        The methods of the C{evm} module.
        """
        return [
            Method("evm_snapshot", self.snapshot, (), encoders.quantity),
            Method("evm_revert", self.revert, (Param("id", snapshot_id),)),
            Method("evm_reset", self.reset, ()),
            Method("evm_mine", self.mine, ()),
            Method("evm_increaseTime", self.increase_time, (Param("seconds", seconds),), encoders.quantity),
            Method("evm_startMining", self.start_mining, ()),
            Method("evm_stopMining", self.stop_mining, ()),
        ]

    def snapshot(self) -> int:
        """
        Record the head's height; return the snapshot's id (from 1).
        """
        if self._consume_snapshots:
            self._last_id += 1
            snapshot = _Snapshot(self._last_id, self._chain.head.header.number, self._miner.chain_time())
        else:
            snapshot = _Snapshot(len(self._snapshots) + 1, self._chain.head.header.number, None)
        self._snapshots.append(snapshot)
        return snapshot.id

    async def revert(self, wanted: int) -> bool:
        """
        Go back to a snapshot.

        @return: C{false} for an unknown (or consumed) id, else C{true}.
        """
        # The ids ascend along the list under both rules (a new snapshot's
        # id is above every kept one), so a binary search finds it: a suite's
        # fixtures keep hundreds, and reverts mostly name a recent one.
        position = bisect_left(self._snapshots, wanted, key=_snapshot_id)
        if position == len(self._snapshots) or self._snapshots[position].id != wanted:
            return False
        snapshot = self._snapshots[position]
        del self._snapshots[position if self._consume_snapshots else position + 1:]
        if snapshot.height < self._chain.head.header.number:
            await self._chain.rewind(snapshot.height)
            self._pool.clear()
        if snapshot.time is not None:
            self._miner.set_chain_time(snapshot.time)
        return True

    async def reset(self) -> None:
        """
        Go back to the genesis block, forgetting every snapshot.
        """
        self._snapshots.clear()
        if self._chain.head.header.number > 0:
            await self._chain.rewind(0)
        self._pool.clear()

    async def mine(self) -> None:
        """
        Mine one block now.
        """
        await self._miner.mine()

    def increase_time(self, amount: int) -> int:
        """
        Shift the next block's timestamp; a value of zero or less adds nothing.

        @return: the accumulated shift in seconds.
        """
        return int(self._miner.increase_time(max(amount, 0)))

    def start_mining(self) -> None:
        """
        Resume automatic mining.
        """
        self._miner.start()

    def stop_mining(self) -> None:
        """
        Suspend automatic mining.
        """
        self._miner.stop()


__all__ = ["EvmMethods", "seconds", "snapshot_id"]
