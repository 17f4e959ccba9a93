"""
The transaction pool as the edges see it.
"""

from collections.abc import Callable, Iterable

from twisted.internet.defer import Deferred
from zope.interface import Interface

from nodex.api.mining import IAutoMining
from nodex.primitives import Hash32
from nodex.structures.transactions import Transaction

__all__ = [
    "ITransactionPool",
]


class ITransactionPool(Interface):
    """
    Transactions waiting to be mined.
    """

    def add(transaction: Transaction, relayed: bool = False) -> "Deferred[Hash32]":
        """
        Validate a signed transaction against the head state and keep it.
        C{relayed}: it came from a peer (in C{auto} mode it asks for no
        block of its own, C{docs/p2p.md}).

        @return: a Deferred firing with its hash, or failing with
            L{nodex.api.errors.TransactionRejectedError} (RPC code -32010).
        """

    def __len__() -> int:
        """
        How many transactions the pool holds (pending and queued).
        """

    def get(tx_hash: bytes) -> "Transaction | None":
        """
        A pooled transaction by hash (in memory).
        """

    def pending() -> "list[Transaction]":
        """
        The executable transactions: per sender, consecutive nonces from its state nonce.
        """

    def queued() -> "list[Transaction]":
        """
        The transactions waiting for a nonce gap to close.
        """

    def next_nonce(address: bytes) -> "Deferred[int]":
        """
        The nonce a new transaction of C{address} should carry (state nonce plus its pending ones).
        """

    def add_observer(observer: "Callable[[Transaction], None]") -> None:
        """
        Call C{observer} with each transaction that becomes pending.  The
        observer may return a Deferred: the L{add} that made the transaction
        pending fires only after it has fired.
        """

    def watch_for_miner(automining: IAutoMining) -> None:
        """
        Let an automining miner watch the pool: told first of each pending
        transaction, and offered first each client's transaction sent to an
        empty pool.
        """

    def clear() -> None:
        """
        Drop every pooled transaction (C{evm_revert}, C{evm_reset}).
        """

    def remove(tx_hashes: "Iterable[bytes]") -> None:
        """
        Drop the transactions the miner found invalid on the head state
        (a nonce already used, too little balance for it, a gas price below
        the block's minimum); unknown hashes are ignored.
        """
