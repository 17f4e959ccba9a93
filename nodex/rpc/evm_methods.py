"""
The C{evm} module: the test-chain controls of reference §3.4.

Snapshots are the heights of the head when they were taken, kept in a
list: a snapshot's id is its position from 1.  Reverting to id I{n} keeps
snapshots 1..n (I{n} itself can be reverted to again), rewinds the chain to
the recorded height if the head is above it, and empties the pool.
"""

from collections.abc import Iterable
from typing import Any

from nodex.interfaces import IChainService, IMiner, ITransactionPool
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


class EvmMethods:
    """
    C{evm_snapshot}, C{evm_revert}, C{evm_reset}, C{evm_mine},
    C{evm_increaseTime}, C{evm_startMining} and C{evm_stopMining}.
    """

    def __init__(self, chain: IChainService, pool: ITransactionPool, miner: IMiner) -> None:
        """
        @param chain: rewound by revert and reset.
        @param pool: emptied by revert and reset.
        @param miner: mines, and is started, stopped and time-shifted.
        """
        self._chain = chain
        self._pool = pool
        self._miner = miner
        self._snapshots: list[int] = []

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
        self._snapshots.append(self._chain.head.header.number)
        return len(self._snapshots)

    async def revert(self, wanted: int) -> bool:
        """
        Go back to a snapshot.

        @return: C{false} for an unknown id, else C{true}.
        """
        if wanted <= 0 or wanted > len(self._snapshots):
            return False
        height = self._snapshots[wanted - 1]
        del self._snapshots[wanted:]
        if height < self._chain.head.header.number:
            await self._chain.rewind(height)
            self._pool.clear()
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
