"""
What a tracer is told about the transaction (or call) it watched, to give
its result.
"""

from dataclasses import dataclass

from nodex.state.state import State


@dataclass(frozen=True)
class TracedRun:
    """
    One traced transaction or call, after it ran.

    @ivar sender: the transaction's sender.
    @ivar to: the recipient, or L{None} for a creation.
    @ivar value: the wei sent.
    @ivar input: the data (the initcode of a creation).
    @ivar gas: the transaction's gas limit.
    @ivar gas_used: the gas the receipt records (the call's, for a call).
    @ivar output: the return data, or the revert payload.
    @ivar error: why the transaction failed, or L{None}.
    @ivar reverted: whether it failed by REVERT (C{output} is the revert data).
    @ivar contract_address: the created contract's address for a creation.
    @ivar state: the state after the transaction.
    @ivar coinbase: the block's coinbase.
    @ivar block_hash: the block's hash (L{None} for a call).
    @ivar block_number: the block's number.
    @ivar tx_hash: the transaction's hash (L{None} for a call).
    @ivar position: the transaction's index in its block (L{None} for a call).
    """

    sender: bytes
    to: bytes | None
    value: int
    input: bytes
    gas: int
    gas_used: int
    output: bytes
    error: str | None
    contract_address: bytes | None
    state: State
    coinbase: bytes
    block_hash: bytes | None
    block_number: int
    tx_hash: bytes | None
    position: int | None
    reverted: bool = False


__all__ = ["TracedRun"]
