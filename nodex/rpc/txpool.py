"""
The C{txpool} module: what the transaction pool holds, in the shapes of
reference §3.10.

C{txpool_content} and C{txpool_inspect} nest by sender (RAWHEX, no C{0x})
and nonce (a decimal string), each nonce holding an array.  The transaction
objects there write C{gasPrice} and C{value} as the reference does: the
minimal two's-complement bytes in hex (zero is C{0x00}, a value whose top
bit is set gets a leading zero byte), and C{to} of a creation as C{0x00}.
"""

from collections.abc import Iterable
from typing import Any

from nodex.interfaces import ITransactionPool
from nodex.rpc.registry import Method
from nodex.structures.transactions import Transaction

_ZERO_BLOCK_HASH = "0x" + "00" * 32


def signed_bytes_hex(value: int) -> str:
    """
    A non-negative integer as the reference's big-integer bytes: the
    shortest two's-complement encoding, in hex with C{0x}.
    """
    return "0x" + value.to_bytes(value.bit_length() // 8 + 1, "big").hex()


def pool_transaction_object(transaction: Transaction) -> dict[str, Any]:
    """
    One transaction of C{txpool_content}.
    """
    return {
        "blockHash": _ZERO_BLOCK_HASH,
        "blockNumber": None,
        "transactionIndex": None,
        "from": "0x" + transaction.sender.hex(),
        "gas": hex(transaction.gas),
        "gasPrice": signed_bytes_hex(transaction.effective_gas_price),
        "hash": "0x" + transaction.hash.hex(),
        "input": "0x" + transaction.data.hex(),
        "nonce": hex(transaction.nonce),
        "to": "0x00" if transaction.is_create else "0x" + transaction.to.hex(),
        "value": signed_bytes_hex(transaction.value),
    }


def inspect_line(transaction: Transaction) -> str:
    """
    One transaction of C{txpool_inspect}:
    C{<to>: <value> wei + <gas> x <gasPrice> gas}.
    """
    return (
        f"{transaction.to.hex()}: {transaction.value} wei + "
        f"{transaction.gas} x {transaction.effective_gas_price} gas"
    )


def _nest(transactions: Iterable[Transaction], shape: Any) -> dict[str, dict[str, list[Any]]]:
    """
    Group transactions by sender (RAWHEX) and nonce (decimal), each shaped by C{shape}.
    """
    nested: dict[str, dict[str, list[Any]]] = {}
    for transaction in transactions:
        by_nonce = nested.setdefault(transaction.sender.hex(), {})
        by_nonce.setdefault(str(transaction.nonce), []).append(shape(transaction))
    return nested


class TxPoolMethods:
    """
    C{txpool_status}, C{txpool_content} and C{txpool_inspect}.
    """

    def __init__(self, pool: ITransactionPool) -> None:
        """
        @param pool: the pool described.
        """
        self._pool = pool

    def rpc_methods(self) -> Iterable[Method]:
        """
        The methods of the C{txpool} module.
        """
        return [
            Method("txpool_status", self.status, ()),
            Method("txpool_content", self.content, ()),
            Method("txpool_inspect", self.inspect, ()),
        ]

    def status(self) -> dict[str, int]:
        """
        How many transactions are pending and queued (plain JSON numbers).
        """
        return {"pending": len(self._pool.pending()), "queued": len(self._pool.queued())}

    def content(self) -> dict[str, Any]:
        """
        Every pooled transaction, by sender and nonce.
        """
        return {
            "pending": _nest(self._pool.pending(), pool_transaction_object),
            "queued": _nest(self._pool.queued(), pool_transaction_object),
        }

    def inspect(self) -> dict[str, Any]:
        """
        A one-line summary of every pooled transaction, by sender and nonce.
        """
        return {"pending": _nest(self._pool.pending(), inspect_line), "queued": _nest(self._pool.queued(), inspect_line)}


__all__ = ["TxPoolMethods", "inspect_line", "pool_transaction_object", "signed_bytes_hex"]
