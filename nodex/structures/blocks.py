"""
Blocks: C{rlp([header, [transaction, ...], [uncle header, ...]])}.

Inside the transactions list a legacy transaction is its own RLP list and a
typed transaction is an RLP string holding C{type || payload}, as Ethereum
encodes them since EIP-2718.  The body (what the store keeps beside the
header) is C{rlp([[transaction, ...], [uncle header, ...]])}.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from nodex.primitives import Hash32, cached_property, direct_init
from nodex.structures.headers import Header
from nodex.structures.rlpcodec import RLPItem, decode_list, decode_rlp, encode_list_of_encoded
from nodex.structures.transactions import Transaction, decode_transaction_in_block


def encode_body(transactions: Sequence[Transaction], uncles: Sequence[Header]) -> bytes:
    """
    The RLP of a block body: its transactions and its uncle headers.
    """
    return encode_list_of_encoded([_transactions_item(transactions), _uncles_item(uncles)])


def decode_body(raw: bytes) -> tuple[tuple[Transaction, ...], tuple[Header, ...]]:
    """
    Read a block body.

    @return: the transactions and the uncle headers.
    @raise nodex.structures.errors.RLPError: malformed body, transaction or
        header.
    @raise nodex.structures.errors.InvalidTransactionError: a transaction
        breaks a decoding rule (see L{decode_transaction}).
    """
    transactions, uncles = decode_list(decode_rlp(raw), "block body", 2)
    return _decode_transactions(transactions), _decode_uncles(uncles)


@direct_init
@dataclass(frozen=True)
class Block:
    """
    A header with its transactions and uncle headers.
    """

    header: Header
    transactions: tuple[Transaction, ...] = ()
    uncles: tuple[Header, ...] = ()

    @property
    def hash(self) -> Hash32:
        """
        The block hash (the header's).
        """
        return self.header.hash

    @property
    def number(self) -> int:
        """
        The block number (the header's).
        """
        return self.header.number

    def encode(self) -> bytes:
        """
        The block's full RLP.
        """
        return self._encoded

    @cached_property
    def _encoded(self) -> bytes:
        return encode_list_of_encoded(
            [self.header.encode(), _transactions_item(self.transactions), _uncles_item(self.uncles)]
        )

    def encode_body(self) -> bytes:
        """
        The RLP of the block's body (transactions and uncles).
        """
        return encode_body(self.transactions, self.uncles)

    @property
    def size(self) -> int:
        """
        The length in bytes of the block's full RLP.
        """
        return len(self._encoded)

    @classmethod
    def decode(cls, raw: bytes) -> "Block":
        """
        Read a block from its RLP.

        @raise nodex.structures.errors.RLPError: malformed block, header or
            transaction.
        @raise nodex.structures.errors.InvalidTransactionError: as L{decode_body}.
        """
        header, transactions, uncles = decode_list(decode_rlp(raw), "block", 3)
        block = cls(Header.from_rlp_item(header), _decode_transactions(transactions), _decode_uncles(uncles))
        block.__dict__["_encoded"] = raw
        return block

    @classmethod
    def from_body(cls, header: Header, body: bytes) -> "Block":
        """
        Join a header and the RLP of its body.

        @raise nodex.structures.errors.RLPError: as L{decode_body}.
        """
        transactions, uncles = decode_body(body)
        return cls(header, transactions, uncles)


def _transactions_item(transactions: Sequence[Transaction]) -> bytes:
    return encode_list_of_encoded([tx.encode_in_block() for tx in transactions])


def _uncles_item(uncles: Sequence[Header]) -> bytes:
    return encode_list_of_encoded([uncle.encode() for uncle in uncles])


def _decode_transactions(item: RLPItem) -> tuple[Transaction, ...]:
    return tuple(decode_transaction_in_block(tx) for tx in decode_list(item, "block transactions"))


def _decode_uncles(item: RLPItem) -> tuple[Header, ...]:
    return tuple(Header.from_rlp_item(uncle) for uncle in decode_list(item, "block uncles"))


__all__ = ["Block", "decode_body", "encode_body"]
