"""
C{eth_feeHistory}: what wallets ask before they price a transaction, on a
chain without a fee market.

The base fee is always zero (DESIGN §2), so every C{baseFeePerGas} is
C{0x0} and the rewards are the effective gas prices the blocks' transactions
paid, at the asked percentiles of the gas they used.  C{eth_maxPriorityFeePerGas}
is served beside C{eth_gasPrice} by L{nodex.rpc.transaction_methods}, with
the same value, so that a wallet that adds it to a base fee of zero offers
what C{eth_gasPrice} suggests.
"""

from collections.abc import Iterable
from typing import Any

from nodex.api.chain import IChainService
from nodex.rpc import decoders
from nodex.rpc.blockref import require_block
from nodex.rpc.decoders import BlockParameter, DecodeError
from nodex.rpc.registry import Method, Param
from nodex.structures.blocks import Block

MAX_BLOCK_COUNT = 1024
"""The most blocks one C{eth_feeHistory} covers (geth's limit)."""


def block_count(value: Any) -> int:
    """
    The C{blockCount} parameter: a QUANTITY (or, as geth and ethers also
    send, a JSON number) from 1 to L{MAX_BLOCK_COUNT}.
    """
    count = value if isinstance(value, int) and not isinstance(value, bool) else decoders.uint64(value)
    if not 1 <= count <= MAX_BLOCK_COUNT:
        raise DecodeError(f"block count must be between 1 and {MAX_BLOCK_COUNT}, got {count}")
    return count


def reward_percentiles(value: Any) -> list[float]:
    """
    The C{rewardPercentiles} parameter: numbers from 0 to 100, in ascending order.
    """
    if not isinstance(value, list) or len(value) > 100:
        raise DecodeError("want an array of at most 100 percentiles")
    previous = 0.0
    for item in value:
        if isinstance(item, bool) or not isinstance(item, (int, float)) or not previous <= item <= 100:
            raise DecodeError("percentiles must be numbers from 0 to 100 in ascending order")
        previous = item
    return [float(item) for item in value]


def rewards(fees: list[tuple[int, int]], percentiles: list[float]) -> list[int]:
    """
    The prices paid at each percentile of a block's gas, the cheapest
    transactions first (zero for an empty block).

    @param fees: the effective gas price and the gas used of each of the
        block's transactions (L{nodex.api.chain.IChainService.get_block_fees}).
    """
    if not fees:
        return [0 for _ in percentiles]
    paid = sorted(fees)
    total = sum(gas for _, gas in paid)
    answers = []
    for percentile in percentiles:
        threshold = total * percentile / 100
        cumulative = 0
        for price, gas in paid:
            cumulative += gas
            if cumulative >= threshold:
                break
        answers.append(price)
    return answers


class FeeMethods:
    """
    C{eth_feeHistory}.
    """

    def __init__(self, chain: IChainService) -> None:
        """
        @param chain: where the blocks and their receipts are read.
        """
        self._chain = chain

    def rpc_methods(self) -> Iterable[Method]:
        """
        The fee methods of the C{eth} module.
        """
        return [
            Method(
                "eth_feeHistory",
                self.fee_history,
                (
                    Param("blockCount", block_count),
                    Param("newestBlock", decoders.block_parameter),
                    Param("rewardPercentiles", reward_percentiles, None),
                ),
            )
        ]

    async def fee_history(
        self, count: int, newest: BlockParameter, percentiles: list[float] | None
    ) -> dict[str, Any]:
        """
        C{eth_feeHistory}: base fees (always zero), gas-used ratios and, if
        asked, rewards of the C{count} blocks up to C{newest}.
        """
        # A number or a tag (never a hash): the canonical block there, read
        # once; the loop reads only the older ones.
        newest_block = await require_block(self._chain, newest)
        newest_number = newest_block.number
        oldest = max(0, newest_number - count + 1)
        ratios: list[float] = []
        reward_rows: list[list[str]] = []
        for number in range(oldest, newest_number + 1):
            if number == newest_number:
                block: Block | None = newest_block
            else:
                block = await self._chain.get_block_by_number(number)
            if block is None:
                break
            header = block.header
            ratios.append(header.gas_used / header.gas_limit if header.gas_limit else 0.0)
            if percentiles is not None:
                fees = await self._chain.get_block_fees(block.hash) or []
                reward_rows.append([hex(price) for price in rewards(fees, percentiles)])
        answer: dict[str, Any] = {
            "oldestBlock": hex(oldest),
            "baseFeePerGas": ["0x0"] * (len(ratios) + 1),
            "gasUsedRatio": ratios,
        }
        if percentiles is not None:
            answer["reward"] = reward_rows
        return answer


__all__ = ["MAX_BLOCK_COUNT", "FeeMethods", "block_count", "reward_percentiles", "rewards"]
