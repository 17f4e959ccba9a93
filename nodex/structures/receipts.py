"""
Transaction receipts in their consensus form, as the receipts trie holds
them: C{rlp([status, cumulativeGasUsed, logsBloom, logs])}, preceded by the
transaction's type byte for types 1 and 2 (EIP-2718).
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from nodex.primitives import UINT64_CEILING, cached_property, direct_init
from nodex.rlpcore import encode_bytes, encode_list_payload
from nodex.structures.bloom import BLOOM_BYTES, logs_bloom
from nodex.structures.errors import RLPError
from nodex.structures.logs import Log
from nodex.structures.rlpcodec import (
    decode_bytes,
    decode_fixed,
    decode_list,
    decode_rlp,
    decode_uint,
    encode_list_of_encoded,
    encode_rlp,
    encode_uint_item,
)
from nodex.structures.transactions import ACCESS_LIST_TX_TYPE, FEE_MARKET_TX_TYPE, LEGACY_TX_TYPE

_RECEIPT_TYPES = (LEGACY_TX_TYPE, ACCESS_LIST_TX_TYPE, FEE_MARKET_TX_TYPE)


@direct_init
@dataclass(frozen=True)
class Receipt:
    """
    The outcome of one transaction.

    @ivar tx_type: the type of the transaction (0, 1 or 2).
    @ivar status: 1 for success, 0 for failure (EIP-658).
    @ivar cumulative_gas_used: gas used in the block up to and including
        this transaction.
    @ivar bloom: the 256-byte bloom of C{logs}.
    @ivar logs: the logs the transaction emitted.
    """

    tx_type: int
    status: int
    cumulative_gas_used: int
    bloom: bytes
    logs: tuple[Log, ...]

    @classmethod
    def from_logs(cls, tx_type: int, status: int, cumulative_gas_used: int, logs: Iterable[Log]) -> "Receipt":
        """
        A receipt whose bloom is computed from its logs.
        """
        logs = tuple(logs)
        return cls(tx_type, status, cumulative_gas_used, logs_bloom(logs), logs)

    @property
    def succeeded(self) -> bool:
        """
        Whether the transaction succeeded.
        """
        return self.status == 1

    def encode(self) -> bytes:
        """
        The consensus encoding: the RLP list, prefixed by the type byte for
        typed transactions.  This is the value stored in the receipts trie.
        """
        return self._encoded

    @cached_property
    def _encoded(self) -> bytes:
        # rlp([status, cumulativeGasUsed, bloom, logs]) written out: the
        # generic encoder walks the nested lists item by item, several
        # times the cost for the receipt every automined block encodes.
        bloom = self.bloom
        payload = encode_list_payload(
            encode_uint_item(self.status)
            + encode_uint_item(self.cumulative_gas_used)
            + (_BLOOM_PREFIX + bloom if len(bloom) == BLOOM_BYTES else encode_bytes(bloom))
            + encode_list_payload(b"".join([_encode_log(log) for log in self.logs]))
        )
        if self.tx_type == LEGACY_TX_TYPE:
            return payload
        return bytes([self.tx_type]) + payload

    def encode_in_list(self) -> bytes:
        """
        The RLP item of this receipt inside a list of receipts: a legacy
        receipt as is, a typed one as an RLP string of its encoding.
        """
        if self.tx_type == LEGACY_TX_TYPE:
            return self._encoded
        return encode_rlp(self._encoded)

    @classmethod
    def decode(cls, raw: bytes) -> "Receipt":
        """
        Read a receipt from its consensus encoding.

        @raise RLPError: malformed RLP, an unknown type byte, a status other
            than 0 or 1, a bloom that is not 256 bytes, malformed logs.
        """
        if not isinstance(raw, bytes) or not raw:
            raise RLPError("a receipt must be non-empty bytes")
        if raw[0] >= 0xC0:
            tx_type, payload = LEGACY_TX_TYPE, raw
        elif raw[0] in _RECEIPT_TYPES:
            tx_type, payload = raw[0], raw[1:]
        else:
            raise RLPError(f"unknown receipt type {raw[0]}")
        status, cumulative, bloom, logs = decode_list(decode_rlp(payload), "receipt", 4)
        status_bytes = decode_bytes(status, "receipt status")
        if status_bytes not in (b"", b"\x01"):
            raise RLPError("receipt status must be 0 or 1")
        cumulative_gas_used = decode_uint(cumulative, "receipt cumulative gas used")
        if cumulative_gas_used >= UINT64_CEILING:
            raise RLPError("receipt cumulative gas used does not fit in 64 bits")
        receipt = cls(
            tx_type,
            len(status_bytes),
            cumulative_gas_used,
            decode_fixed(bloom, "receipt bloom", BLOOM_BYTES),
            tuple(Log.from_rlp_item(log) for log in decode_list(logs, "receipt logs")),
        )
        receipt.__dict__["_encoded"] = raw
        return receipt


_BLOOM_PREFIX = encode_bytes(bytes(BLOOM_BYTES))[:-BLOOM_BYTES]
_HASH_PREFIX = encode_bytes(bytes(32))[:1]


def _encode_log(log: Log) -> bytes:
    """
    The RLP of a log, C{rlp([address, [topic, ...], data])}; its topics
    take their fixed prefix when all have their fixed 32 bytes.
    """
    topics = log.topics
    if not topics:
        topics_rlp = b""
    elif set(map(len, topics)) == {32}:
        topics_rlp = _HASH_PREFIX + _HASH_PREFIX.join(topics)
    else:
        topics_rlp = b"".join([encode_bytes(topic) for topic in topics])
    return encode_list_payload(encode_bytes(log.address) + encode_list_payload(topics_rlp) + encode_bytes(log.data))


def encode_receipts(receipts: Sequence[Receipt]) -> bytes:
    """
    The RLP list of a block's receipts, as the store keeps them: a legacy
    receipt is its own list, a typed one an RLP string of C{type || rlp}
    (the form transactions take in a block body).
    """
    return encode_list_of_encoded([receipt.encode_in_list() for receipt in receipts])


def decode_receipts(raw: bytes) -> tuple[Receipt, ...]:
    """
    Read a list written by L{encode_receipts}.

    @raise RLPError: malformed list or receipt, or a legacy receipt wrapped
        in a string.
    """
    receipts = []
    for item in decode_list(decode_rlp(raw), "receipts"):
        if isinstance(item, list):
            receipts.append(Receipt.decode(encode_rlp(item)))
        elif item[:1] and item[0] < 0xC0:
            receipts.append(Receipt.decode(item))
        else:
            raise RLPError("a typed receipt in a list must start with its type byte")
    return tuple(receipts)


__all__ = ["Receipt", "decode_receipts", "encode_receipts"]
