"""
Block headers (DESIGN §2).

The RLP list holds, in order: parentHash, unclesHash, coinbase, stateRoot,
transactionsRoot, receiptsRoot, logsBloom, difficulty, number, gasLimit,
gasUsed, timestamp, extraData, paidFees, minimumGasPrice, uncleCount,
bitcoinMergedMiningHeader, bitcoinMergedMiningMerkleProof and
bitcoinMergedMiningCoinbaseTransaction.

The block hash covers the first 17 items (everything but the merkle proof
and the coinbase transaction, which the seal adds after the fact); the hash
for merged mining covers the first 16 (everything the Bitcoin coinbase must
commit to).
"""

from dataclasses import dataclass, fields
from operator import itemgetter

from nodex.crypto import keccak256
from nodex.primitives import UINT64_CEILING, UINT256_CEILING, Address, Hash32, cached_property, direct_init
from nodex.rlpcore import encode_bytes, encode_list_payload
from nodex.structures.bloom import BLOOM_BYTES, EMPTY_BLOOM
from nodex.structures.errors import RLPError
from nodex.structures.rlpcodec import (
    RLPItem,
    decode_bytes,
    decode_fixed,
    decode_list,
    decode_rlp,
    decode_uint,
    encode_rlp,
    encode_uint_item,
)

HEADER_FIELDS = 19
MAX_EXTRA_DATA = 32
_HASHED_FIELDS = 17
_MERGED_MINING_HASHED_FIELDS = 16

EMPTY_UNCLES_HASH = Hash32(keccak256(encode_rlp([])))
"""Keccak-256 of the RLP empty list: the uncles hash of a block without uncles."""


@direct_init
@dataclass(frozen=True)
class Header:
    """
    A block header.  Integers are plain C{int}, hashes and addresses C{bytes}.
    """

    parent_hash: Hash32
    uncles_hash: Hash32
    coinbase: Address
    state_root: Hash32
    transactions_root: Hash32
    receipts_root: Hash32
    logs_bloom: bytes
    difficulty: int
    number: int
    gas_limit: int
    gas_used: int
    timestamp: int
    extra_data: bytes
    paid_fees: int
    minimum_gas_price: int
    uncle_count: int
    bitcoin_merged_mining_header: bytes = b""
    bitcoin_merged_mining_merkle_proof: bytes = b""
    bitcoin_merged_mining_coinbase_transaction: bytes = b""

    def encode(self) -> bytes:
        """
        The header's full RLP (all 19 fields).
        """
        return self._encoded

    def forget_encodings(self) -> None:
        """
        Drop the cached encodings of the fields and of the header (made
        again if asked for); the hashes stay.  A run of many thousands of
        headers held for one chain event (C{hardhat_mine}) keeps a third of
        the memory this way.
        """
        for cached in ("_encoded_fields", "_encoded"):
            self.__dict__.pop(cached, None)

    @cached_property
    def _encoded_fields(self) -> list[bytes]:
        # Each field encoded once: the hash, the hash for merged mining and
        # the full encoding are lists of the same leading fields.
        return _encode_fields(self)

    @cached_property
    def _encoded(self) -> bytes:
        return encode_list_payload(b"".join(self._encoded_fields))

    @cached_property
    def hash(self) -> Hash32:
        """
        The block hash: Keccak-256 of the RLP of the first 17 fields.
        """
        return keccak256(self.encode_for_hash())

    def encode_for_hash(self) -> bytes:
        """
        The RLP whose Keccak-256 is the block hash: the first 17 fields (no
        merged-mining merkle proof, no coinbase transaction).
        """
        return encode_list_payload(b"".join(self._encoded_fields[:_HASHED_FIELDS]))

    @cached_property
    def hash_for_merged_mining(self) -> Hash32:
        """
        What a merged-mining coinbase commits to: Keccak-256 of the RLP of the
        first 16 fields (no merged-mining field).
        """
        return keccak256(encode_list_payload(b"".join(self._encoded_fields[:_MERGED_MINING_HASHED_FIELDS])))

    def with_seal(self, bitcoin_header: bytes, merkle_proof: bytes, coinbase: bytes) -> "Header":
        """
        This header with the three merged-mining fields set: what sealing
        a built block does.  The other sixteen fields are the same, so
        their encodings and the hash for merged mining are carried over
        rather than computed again (the block of every automined
        transaction is sealed this way).
        """
        sealed = object.__new__(type(self))
        # A copy of the fields (a dict's copy is one C call), without what
        # was computed from them.
        values = self.__dict__.copy()
        for name in _COMPUTED_NAMES:
            values.pop(name, None)
        object.__setattr__(sealed, "__dict__", values)
        values["bitcoin_merged_mining_header"] = bitcoin_header
        values["bitcoin_merged_mining_merkle_proof"] = merkle_proof
        values["bitcoin_merged_mining_coinbase_transaction"] = coinbase
        carried = self._encoded_fields[:_MERGED_MINING_HASHED_FIELDS]
        values["_encoded_fields"] = carried + [
            encode_bytes(bitcoin_header),
            encode_bytes(merkle_proof),
            encode_bytes(coinbase),
        ]
        values["hash_for_merged_mining"] = self.hash_for_merged_mining
        return sealed

    def replaced(self, **changes: object) -> "Header":
        """
        This header with some fields changed: what L{dataclasses.replace}
        gives (none of the cached encodings or hashes carried over), in a
        fraction of its time, for the headers made per automined block.
        The header's C{__init__} does nothing but set the fields, so
        setting them in the new object's C{__dict__} is the same.

        @raise TypeError: a name that is not a field.
        """
        if not _FIELD_NAMES.issuperset(changes):
            raise TypeError(f"Header has no field {sorted(changes.keys() - _FIELD_NAMES)[0]!r}")
        header = object.__new__(type(self))
        values = header.__dict__
        values.update(zip(_FIELD_NAMES_ORDERED, _field_values(self.__dict__)))
        values.update(changes)
        return header

    @classmethod
    def decode(cls, raw: bytes) -> "Header":
        """
        Read a header from its RLP.

        @raise RLPError: malformed or non-canonical RLP, not exactly 19
            fields, a hash, address or bloom of the wrong length, extra data
            above 32 bytes, or an integer out of its range.
        """
        header = cls.from_rlp_item(decode_rlp(raw))
        header.__dict__["_encoded"] = raw
        return header

    @classmethod
    def from_rlp_item(cls, item: RLPItem) -> "Header":
        """
        Read a header from its decoded RLP item (as found inside a block).

        @raise RLPError: as L{decode}.
        """
        fields = decode_list(item, "header", HEADER_FIELDS)
        extra_data = decode_bytes(fields[12], "header extra data")
        if len(extra_data) > MAX_EXTRA_DATA:
            raise RLPError(
                f"header extra data is {len(extra_data)} bytes long, at most {MAX_EXTRA_DATA} allowed"
            )
        return cls(
            parent_hash=Hash32(decode_fixed(fields[0], "header parent hash", 32)),
            uncles_hash=Hash32(decode_fixed(fields[1], "header uncles hash", 32)),
            coinbase=Address(decode_fixed(fields[2], "header coinbase", 20)),
            state_root=Hash32(decode_fixed(fields[3], "header state root", 32)),
            transactions_root=Hash32(decode_fixed(fields[4], "header transactions root", 32)),
            receipts_root=Hash32(decode_fixed(fields[5], "header receipts root", 32)),
            logs_bloom=decode_fixed(fields[6], "header logs bloom", BLOOM_BYTES),
            difficulty=_bounded(fields[7], "header difficulty", UINT256_CEILING),
            number=_bounded(fields[8], "header number", UINT64_CEILING),
            gas_limit=_bounded(fields[9], "header gas limit", UINT64_CEILING),
            gas_used=_bounded(fields[10], "header gas used", UINT64_CEILING),
            timestamp=_bounded(fields[11], "header timestamp", UINT64_CEILING),
            extra_data=extra_data,
            paid_fees=_bounded(fields[13], "header paid fees", UINT256_CEILING),
            minimum_gas_price=_bounded(fields[14], "header minimum gas price", UINT256_CEILING),
            uncle_count=_bounded(fields[15], "header uncle count", UINT64_CEILING),
            bitcoin_merged_mining_header=decode_bytes(fields[16], "bitcoin merged mining header"),
            bitcoin_merged_mining_merkle_proof=decode_bytes(fields[17], "bitcoin merged mining merkle proof"),
            bitcoin_merged_mining_coinbase_transaction=decode_bytes(
                fields[18], "bitcoin merged mining coinbase transaction"
            ),
        )


def _bounded(item: RLPItem, what: str, ceiling: int) -> int:
    value = decode_uint(item, what)
    if value >= ceiling:
        raise RLPError(f"{what} does not fit in {ceiling.bit_length() - 1} bits")
    return value


_FIELD_NAMES_ORDERED = tuple(field.name for field in fields(Header))
_FIELD_NAMES = frozenset(_FIELD_NAMES_ORDERED)
# The fields' values out of a header's __dict__, in order, in one C call.
_field_values = itemgetter(*_FIELD_NAMES_ORDERED)
# What a header's __dict__ may hold besides its fields: its cached encodings and hashes.
_COMPUTED_NAMES = tuple(name for name, value in vars(Header).items() if isinstance(value, cached_property))

_HASH_PREFIX = encode_bytes(bytes(32))[:1]
_ADDRESS_PREFIX = encode_bytes(bytes(20))[:1]
_BLOOM_PREFIX = encode_bytes(EMPTY_BLOOM)[:-BLOOM_BYTES]


def _encode_fields(header: Header) -> list[bytes]:
    """
    The RLP encodings of a header's 19 fields, in order.

    Written out field by field rather than through the generic encoder: a
    block made here encodes a header each time.  The hashes, the coinbase
    and the bloom take their fixed prefixes when they have their fixed
    lengths (always, but in a header made by hand for a test).
    """
    parent_hash = header.parent_hash
    uncles_hash = header.uncles_hash
    coinbase = header.coinbase
    state_root = header.state_root
    transactions_root = header.transactions_root
    receipts_root = header.receipts_root
    logs_bloom = header.logs_bloom
    if (
        len(parent_hash) == len(uncles_hash) == len(state_root) == len(transactions_root) == len(receipts_root) == 32
        and len(coinbase) == 20
        and len(logs_bloom) == BLOOM_BYTES
    ):
        encoded = [
            _HASH_PREFIX + parent_hash,
            _HASH_PREFIX + uncles_hash,
            _ADDRESS_PREFIX + coinbase,
            _HASH_PREFIX + state_root,
            _HASH_PREFIX + transactions_root,
            _HASH_PREFIX + receipts_root,
            _BLOOM_PREFIX + logs_bloom,
        ]
    else:
        encoded = [
            encode_bytes(field)
            for field in (parent_hash, uncles_hash, coinbase, state_root, transactions_root, receipts_root, logs_bloom)
        ]
    encoded += (
        encode_uint_item(header.difficulty),
        encode_uint_item(header.number),
        encode_uint_item(header.gas_limit),
        encode_uint_item(header.gas_used),
        encode_uint_item(header.timestamp),
        encode_bytes(header.extra_data),
        encode_uint_item(header.paid_fees),
        encode_uint_item(header.minimum_gas_price),
        encode_uint_item(header.uncle_count),
        encode_bytes(header.bitcoin_merged_mining_header),
        encode_bytes(header.bitcoin_merged_mining_merkle_proof),
        encode_bytes(header.bitcoin_merged_mining_coinbase_transaction),
    )
    return encoded


__all__ = ["EMPTY_UNCLES_HASH", "HEADER_FIELDS", "MAX_EXTRA_DATA", "Header"]
