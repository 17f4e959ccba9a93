"""
The C{txpool} module: what the transaction pool holds, in the shapes of
reference §3.10, or geth's under the Ethereum conventions.

The reference's shapes: C{txpool_status} answers plain JSON numbers;
C{txpool_content} and C{txpool_inspect} nest by sender (RAWHEX, no C{0x})
and nonce (a decimal string), each nonce holding an array.  The transaction
objects there write C{gasPrice} and C{value} as the reference does: the
minimal two's-complement bytes in hex (zero is C{0x00}, a value whose top
bit is set gets a leading zero byte), and C{to} of a creation as C{0x00}.

geth's shapes (the execution APIs' C{txpool} schema): QUANTITY counts;
senders as EIP-55 checksummed addresses, each nonce holding one
transaction object (C{eth_getTransactionByHash}'s, without a block), or
C{"<to>: <value> wei + <gas> gas × <price> wei"} for C{txpool_inspect}
(C{contract creation: …} for a creation).  C{txpool_contentFrom} answers
one sender's part of C{txpool_content} in either shape.
"""

from collections.abc import Callable, Iterable
from typing import Any

from nodex.crypto import keccak256
from nodex.api.conventions import REFERENCE_CONVENTIONS, Conventions
from nodex.api.pool import ITransactionPool
from nodex.primitives import Address
from nodex.rpc import decoders
from nodex.rpc.objects import transaction_object
from nodex.rpc.registry import Method, Param
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


def checksum_address(address: bytes) -> str:
    """
    An address in EIP-55's mixed-case hex, as geth writes txpool senders.
    """
    text = address.hex()
    digest = keccak256(text.encode()).hex()
    return "0x" + "".join(c.upper() if c.isalpha() and int(digest[i], 16) >= 8 else c for i, c in enumerate(text))


def geth_inspect_line(transaction: Transaction) -> str:
    """
    One transaction of geth's C{txpool_inspect}.
    """
    where = "contract creation" if transaction.is_create else checksum_address(transaction.to)
    return (
        f"{where}: {transaction.value} wei + {transaction.gas} gas \u00d7 {transaction.effective_gas_price} wei"
    )


def geth_transaction_object(transaction: Transaction) -> dict[str, Any]:
    """
    One transaction of geth's C{txpool_content}: the transaction object of
    a pooled transaction.
    """
    return transaction_object(transaction, None, None, None)


def _nest(transactions: Iterable[Transaction], shape: Any) -> dict[str, dict[str, list[Any]]]:
    """
    Group transactions by sender (RAWHEX) and nonce (decimal), each shaped by C{shape}.
    """
    nested: dict[str, dict[str, list[Any]]] = {}
    for transaction in transactions:
        by_nonce = nested.setdefault(transaction.sender.hex(), {})
        by_nonce.setdefault(str(transaction.nonce), []).append(shape(transaction))
    return nested


def _geth_nest(transactions: Iterable[Transaction], shape: Any) -> dict[str, dict[str, Any]]:
    """
    Group transactions by sender (checksummed) and nonce (decimal), one per nonce, shaped by C{shape}.
    """
    nested: dict[str, dict[str, Any]] = {}
    for transaction in transactions:
        nested.setdefault(checksum_address(transaction.sender), {})[str(transaction.nonce)] = shape(transaction)
    return nested


class TxPoolMethods:
    """
    C{txpool_status}, C{txpool_content}, C{txpool_contentFrom} and C{txpool_inspect}.
    """

    def __init__(self, pool: ITransactionPool, conventions: Conventions = REFERENCE_CONVENTIONS) -> None:
        """
        @param pool: the pool described.
        @param conventions: the reference's shapes, or geth's under the Ethereum conventions.
        """
        self._pool = pool
        self._geth = conventions.ethereum

    def rpc_methods(self) -> Iterable[Method]:
        """
        The methods of the C{txpool} module.
        """
        return [
            Method("txpool_status", self.status, ()),
            Method("txpool_content", self.content, ()),
            Method("txpool_contentFrom", self.content_from, (Param("address", decoders.address),)),
            Method("txpool_inspect", self.inspect, ()),
        ]

    def status(self) -> dict[str, Any]:
        """
        How many transactions are pending and queued (plain JSON numbers; QUANTITY in geth's shape).
        """
        pending, queued = len(self._pool.pending()), len(self._pool.queued())
        if self._geth:
            return {"pending": hex(pending), "queued": hex(queued)}
        return {"pending": pending, "queued": queued}

    def _grouped(self, select: Callable[[Transaction], bool], reference: Any, geth: Any) -> dict[str, Any]:
        """
        The selected pending and queued transactions, nested in the conventions' shape.
        """
        nest, shape = (_geth_nest, geth) if self._geth else (_nest, reference)
        return {
            "pending": nest([tx for tx in self._pool.pending() if select(tx)], shape),
            "queued": nest([tx for tx in self._pool.queued() if select(tx)], shape),
        }

    def content(self) -> dict[str, Any]:
        """
        Every pooled transaction, by sender and nonce.
        """
        return self._grouped(lambda tx: True, pool_transaction_object, geth_transaction_object)

    def content_from(self, address: Address) -> dict[str, Any]:
        """
        The pooled transactions of one sender, by nonce.
        """
        grouped = self._grouped(lambda tx: tx.sender == address, pool_transaction_object, geth_transaction_object)
        return {kind: next(iter(by_sender.values()), {}) for kind, by_sender in grouped.items()}

    def inspect(self) -> dict[str, Any]:
        """
        A one-line summary of every pooled transaction, by sender and nonce.
        """
        return self._grouped(lambda tx: True, inspect_line, geth_inspect_line)


__all__ = [
    "TxPoolMethods",
    "checksum_address",
    "geth_inspect_line",
    "geth_transaction_object",
    "inspect_line",
    "pool_transaction_object",
    "signed_bytes_hex",
]
