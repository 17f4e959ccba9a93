"""
The development chain's methods (Anvil's and Hardhat's), as the edges see them.
"""

from typing import Any

from twisted.internet.defer import Deferred
from zope.interface import Interface

from nodex.primitives import Address
from nodex.structures.blocks import Block

__all__ = [
    "IDevChain",
    "IImpersonation",
]


class IImpersonation(Interface):
    """
    A dev chain's impersonated accounts (C{nodex.services.devchain.Impersonation}):
    C{eth_sendTransaction} sends from them without their keys.
    """

    def is_impersonated(address: bytes) -> bool:
        """
        Whether transactions from C{address} need no key now.
        """

    def addresses() -> "list[Address]":
        """
        The accounts impersonated one by one, in the order they were named
        (C{eth_accounts} lists them after the wallet's, as Anvil does).
        """


class IDevChain(Interface):
    """
    The Hardhat and Anvil dev-chain controls of regtest and devnet
    (C{nodex.services.devchain}): state setters that write a block, runs of
    empty blocks, mining switches and state snapshots.
    """

    def set_balance(address: bytes, balance: int) -> "Deferred[Block]":
        """
        Write a block in which C{address} holds C{balance} wei.
        """

    def set_code(address: bytes, code: bytes) -> "Deferred[Block]":
        """
        Write a block in which C{address} has C{code}.
        """

    def set_nonce(address: bytes, nonce: int) -> "Deferred[Block]":
        """
        Write a block in which C{address} has C{nonce}.
        """

    def set_storage_at(address: bytes, slot: int, value: int) -> "Deferred[Block]":
        """
        Write a block in which slot C{slot} of C{address} holds C{value}.
        """

    def mine(blocks: int, interval: int) -> "Deferred[Block | None]":
        """
        Write C{blocks} empty blocks, C{interval} seconds apart, in one writer job.
        """

    def set_next_block_timestamp(timestamp: int) -> None:
        """
        Stamp the next mined block with C{timestamp}.

        @raise DevChainInputError: not after the head's timestamp.
        """

    def set_automine(enabled: bool) -> None:
        """
        Mine a block per transaction, or stop doing so.
        """

    def get_automine() -> bool:
        """
        Whether a block is mined per transaction.
        """

    def set_interval_mining(milliseconds: int) -> None:
        """
        Mine a block every C{milliseconds} (0: stop).
        """

    def set_block_gas_limit(gas_limit: int) -> "Deferred[None]":
        """
        Give the blocks from the next on C{gas_limit}.
        """

    def drop_transaction(tx_hash: bytes) -> "Deferred[bool]":
        """
        Remove a transaction from the pool; whether it was there.
        """

    def set_coinbase(address: bytes) -> None:
        """
        Credit the fees of the blocks from now on to C{address}.
        """

    def dump_state() -> "Deferred[dict[str, Any]]":
        """
        A snapshot of every account of the head's state (C{nodex.chain.dev.state}).
        """

    def load_state(snapshot: Any) -> "Deferred[Block]":
        """
        Write a block whose state is the head's with C{snapshot}'s accounts laid over it.
        """

    def impersonate_account(address: bytes) -> None:
        """
        Let C{eth_sendTransaction} send from C{address} without its key
        (the impersonation marker, C{docs/devchain.md}).
        """

    def stop_impersonating_account(address: bytes) -> bool:
        """
        Stop impersonating C{address}; whether it was impersonated.
        """

    def set_auto_impersonate(enabled: bool) -> None:
        """
        Impersonate every address, or only those named one by one.
        """
