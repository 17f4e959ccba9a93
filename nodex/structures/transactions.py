"""
Transactions: legacy (type 0, with or without EIP-155), EIP-2930 access-list
(type 1) and EIP-1559 fee-market (type 2); blob (3) and set-code (4)
transactions are recognised by their type byte and refused.

A raw transaction is either the RLP list of a legacy transaction or, per
EIP-2718, one type byte followed by the RLP of the typed payload.  Decoding is
strict: canonical RLP, canonical integers, the exact number of fields,
addresses of 20 bytes (or empty for a creation), values inside their ranges.
The rules that need more than the bytes (chain id, intrinsic gas, signature
recovery) live in L{nodex.structures.transaction_rules}.
"""

from dataclasses import dataclass, replace
from typing import ClassVar, NamedTuple, Union

from nodex.crypto import (
    SECP256K1_HALF_N,
    SECP256K1_N,
    SignatureError,
    keccak256,
    private_key_to_address,
    recover_address,
    sign,
)
from nodex.rlpcore import encode_bytes, encode_list_payload
from nodex.primitives import UINT64_CEILING, UINT256_CEILING, Address, Hash32, cached_property, direct_init
from nodex.structures.errors import (
    InvalidSignatureError,
    InvalidTransactionError,
    RLPError,
    UnsupportedTransactionTypeError,
    WrongChainIdError,
)
from nodex.structures.rlpcodec import (
    RLPItem,
    decode_bytes,
    decode_fixed,
    decode_list,
    decode_rlp,
    decode_uint,
    encode_rlp,
    encode_uint,
)

LEGACY_TX_TYPE = 0
ACCESS_LIST_TX_TYPE = 1
FEE_MARKET_TX_TYPE = 2

REFUSED_TX_TYPES: dict[int, str] = {3: "blob", 4: "set-code"}
"""Types this chain recognises but never accepts, with their names."""

IMPERSONATION_FLAG = 1 << 160
"""
The bit set in the C{r} of an impersonation marker, above the 160 bits of
the sender's address it carries (its C{s} is 0, its recovery id 0): an
C{r} no unsigned transaction has, and one that names the zero address too.
"""


class AccessListEntry(NamedTuple):
    """
    One entry of an EIP-2930 access list: an address and the storage keys
    warmed with it.
    """

    address: Address
    storage_keys: tuple[Hash32, ...]


AccessList = tuple[AccessListEntry, ...]


class _TransactionBase:
    """
    What every transaction type shares: hashes, the sender, block encoding.

    Subclasses are frozen dataclasses that define C{type}, C{chain_id},
    C{y_parity}, C{r}, C{s}, C{signing_hash} and C{_encode}.
    """

    type: ClassVar[int]
    to: bytes
    r: int
    s: int

    def encode(self) -> bytes:
        """
        The raw transaction: legacy RLP, or C{type || rlp(payload)}.
        """
        return self._encoded

    @cached_property
    def _encoded(self) -> bytes:
        return self._encode()  # type: ignore[attr-defined]

    def encode_in_block(self) -> bytes:
        """
        The RLP item of this transaction inside a block body (and in the
        transactions trie of EIP-2718): the legacy list as is, a typed
        transaction as an RLP string of its raw bytes.
        """
        if self.type == LEGACY_TX_TYPE:
            return self._encoded
        return encode_rlp(self._encoded)

    @cached_property
    def hash(self) -> Hash32:
        """
        Keccak-256 of the raw transaction.
        """
        return keccak256(self._encoded)

    def _unsigned_payload(self, signature_value: int) -> bytes | None:
        """
        The encoded unsigned fields, cut from the raw transaction when it is
        known (decoded, or encoded once already): its RLP list's payload is
        the fields' encodings one after another, the signature's three last
        (C{signature_value}, then r and s), since the raw bytes are canonical
        (the strict decoder admits nothing else, L{_encode} makes nothing
        else).  The signing hash of a transaction just decoded (the sender's
        recovery of every C{eth_sendRawTransaction}) is made from this slice
        instead of encoding the unsigned fields again; a legacy transaction
        decoded in one pass (L{_plain_legacy}) holds that slice already,
        found on the way, under C{_unsigned}.

        @param signature_value: C{v} of a legacy transaction, C{y_parity} of
            a typed one.
        @return: L{None} when the raw bytes are not known (or, which their
            canonical form rules out, do not end with the signature): the
            caller encodes the fields.
        """
        values = self.__dict__
        cut = values.get("_unsigned")
        if cut is not None:
            return cut
        raw = values.get("_encoded")
        if raw is None:
            return None
        offset = 0 if self.type == LEGACY_TX_TYPE else 1
        first = raw[offset]
        # The list's prefix: one byte under 56 bytes of payload, else one plus the length's bytes.
        start = offset + 1 if first < 0xF8 else offset + first - 0xF6
        signature = encode_bytes(encode_uint(signature_value)) + encode_bytes(encode_uint(self.r)) + encode_bytes(
            encode_uint(self.s)
        )
        stop = len(raw) - len(signature)
        if stop < start or not raw.endswith(signature):
            return None
        return raw[start:stop]

    @property
    def is_create(self) -> bool:
        """
        Whether the transaction creates a contract (its C{to} is empty).
        """
        return self.to == b""

    @property
    def impersonated(self) -> bool:
        """
        Whether the signature is the marker of an impersonated sender (see
        L{impersonate}) rather than a secp256k1 signature.
        """
        return self.s == 0 and IMPERSONATION_FLAG <= self.r < IMPERSONATION_FLAG << 1

    @cached_property
    def sender(self) -> Address:
        """
        The address that signed the transaction (recovered once, then
        cached), or the address an impersonation marker names.  Whether a
        chain accepts that marker is a rule of its own (see
        L{nodex.structures.transaction_rules.validate_transaction}).

        @raise InvalidSignatureError: r or s is zero or not below the curve
            order, s is in the upper half (EIP-2), the recovery id is
            invalid, or no public key can be recovered.
        """
        y_parity = self.y_parity  # type: ignore[attr-defined]
        if self.impersonated and y_parity == 0:
            return Address((self.r - IMPERSONATION_FLAG).to_bytes(20, "big"))
        check_signature_values(y_parity, self.r, self.s)
        try:
            digest = self.signing_hash()  # type: ignore[attr-defined]
            return recover_address(digest, y_parity, self.r, self.s)
        except SignatureError as exc:
            raise InvalidSignatureError(f"cannot recover the sender: {exc}") from exc


def check_signature_values(y_parity: int, r: int, s: int) -> None:
    """
    Check the ranges of a transaction signature (Homestead and EIP-2).

    @raise InvalidSignatureError: y_parity is not 0 or 1, r or s is not in
        [1, n), or s is above n/2.
    """
    if y_parity not in (0, 1):
        raise InvalidSignatureError(f"invalid signature: y parity must be 0 or 1, got {y_parity}")
    if not 0 < r < SECP256K1_N:
        raise InvalidSignatureError("invalid signature: r must be in [1, secp256k1n)")
    if not 0 < s < SECP256K1_N:
        raise InvalidSignatureError("invalid signature: s must be in [1, secp256k1n)")
    if s > SECP256K1_HALF_N:
        raise InvalidSignatureError("invalid signature: s is above secp256k1n/2 (EIP-2 requires low s)")


class _GasPricePayment:
    """
    The fee fields of the transaction types that carry one gas price
    (legacy and EIP-2930): it is at once the cap, the tip and the price paid.
    """

    gas_price: int

    @property
    def max_fee_per_gas(self) -> int:
        """
        The most the sender pays per gas: the gas price.
        """
        return self.gas_price

    @property
    def max_priority_fee_per_gas(self) -> int:
        """
        The tip per gas; with a base fee of 0, the whole gas price.
        """
        return self.gas_price

    @property
    def effective_gas_price(self) -> int:
        """
        The price per gas actually paid: the gas price.
        """
        return self.gas_price


@direct_init
@dataclass(frozen=True)
class LegacyTransaction(_GasPricePayment, _TransactionBase):
    """
    A type 0 transaction.  Its chain id, if any, is folded into C{v} by
    EIP-155 (C{v = 35 + 2 * chain_id + y_parity}); C{v} of 27 or 28 means a
    signature valid on every chain.

    @ivar to: the recipient's 20-byte address, or C{b""} for a creation.
    """

    nonce: int
    gas_price: int
    gas: int
    to: bytes
    value: int
    data: bytes
    v: int = 0
    r: int = 0
    s: int = 0

    type: ClassVar[int] = LEGACY_TX_TYPE

    @property
    def chain_id(self) -> int | None:
        """
        The EIP-155 chain id carried by C{v}, or L{None} for a signature
        without one (v = 27 or 28, or an unsigned transaction).
        """
        if self.v >= 35:
            return (self.v - 35) // 2
        return None

    @property
    def y_parity(self) -> int:
        """
        The recovery id folded into C{v}.

        @raise InvalidSignatureError: C{v} is neither 27, 28 nor at least 35.
        """
        if self.v in (27, 28):
            return self.v - 27
        if self.v >= 35:
            return (self.v - 35) % 2
        raise InvalidSignatureError(f"invalid signature: v must be 27, 28 or 35 + 2 * chain id, got {self.v}")

    @property
    def access_list(self) -> AccessList:
        """
        Legacy transactions have no access list.
        """
        return ()

    def _unsigned_fields(self) -> list[bytes]:
        return [
            encode_uint(self.nonce),
            encode_uint(self.gas_price),
            encode_uint(self.gas),
            self.to,
            encode_uint(self.value),
            self.data,
        ]

    def signing_hash(self, chain_id: int | None = None) -> Hash32:
        """
        The digest that the sender signs.

        @param chain_id: the chain to sign for (EIP-155); by default the
            chain id carried by C{v}.  L{None} in both means the pre-EIP-155
            digest of the six unsigned fields.
        """
        if chain_id is None:
            chain_id = self.chain_id
        unsigned = self._unsigned_payload(self.v)
        if unsigned is None:
            fields = self._unsigned_fields()
            if chain_id is not None:
                fields += [encode_uint(chain_id), b"", b""]
            return keccak256(encode_rlp(fields))
        if chain_id is not None:
            unsigned += encode_bytes(encode_uint(chain_id)) + b"\x80\x80"
        return keccak256(encode_list_payload(unsigned))

    def _encode(self) -> bytes:
        signature = [encode_uint(self.v), encode_uint(self.r), encode_uint(self.s)]
        return encode_rlp(self._unsigned_fields() + signature)


class _TypedEnvelope:
    """
    The EIP-2718 framing the typed transactions share: their type byte, then
    the RLP of their fields; the signature covers the unsigned fields only.
    Each typed transaction lists its own fields in C{_unsigned_fields}.
    """

    type: ClassVar[int]
    chain_id: int
    y_parity: int
    r: int
    s: int

    def signing_hash(self, chain_id: int | None = None) -> Hash32:
        """
        The digest that the sender signs: C{keccak(type || rlp(unsigned fields))}.

        @param chain_id: if given, must be the transaction's own chain id.
        @raise WrongChainIdError: C{chain_id} differs from the transaction's.
        """
        _check_same_chain(self.chain_id, chain_id)
        unsigned = self._unsigned_payload(self.y_parity)  # type: ignore[attr-defined]
        if unsigned is None:
            return keccak256(bytes([self.type]) + encode_rlp(self._unsigned_fields()))  # type: ignore[attr-defined]
        return keccak256(bytes([self.type]) + encode_list_payload(unsigned))

    def _encode(self) -> bytes:
        signature = [encode_uint(self.y_parity), encode_uint(self.r), encode_uint(self.s)]
        return bytes([self.type]) + encode_rlp(self._unsigned_fields() + signature)  # type: ignore[attr-defined]


@direct_init
@dataclass(frozen=True)
class AccessListTransaction(_GasPricePayment, _TypedEnvelope, _TransactionBase):
    """
    A type 1 transaction (EIP-2930): a legacy gas price plus an access list,
    with the chain id as a field.
    """

    chain_id: int
    nonce: int
    gas_price: int
    gas: int
    to: bytes
    value: int
    data: bytes
    access_list: AccessList = ()
    y_parity: int = 0
    r: int = 0
    s: int = 0

    type: ClassVar[int] = ACCESS_LIST_TX_TYPE

    def _unsigned_fields(self) -> list[RLPItem]:
        return [
            encode_uint(self.chain_id),
            encode_uint(self.nonce),
            encode_uint(self.gas_price),
            encode_uint(self.gas),
            self.to,
            encode_uint(self.value),
            self.data,
            _access_list_item(self.access_list),
        ]


@direct_init
@dataclass(frozen=True)
class FeeMarketTransaction(_TypedEnvelope, _TransactionBase):
    """
    A type 2 transaction (EIP-1559).  The base fee of this chain is always 0,
    so the price paid per gas is C{min(max_fee_per_gas, max_priority_fee_per_gas)}.
    """

    chain_id: int
    nonce: int
    max_priority_fee_per_gas: int
    max_fee_per_gas: int
    gas: int
    to: bytes
    value: int
    data: bytes
    access_list: AccessList = ()
    y_parity: int = 0
    r: int = 0
    s: int = 0

    type: ClassVar[int] = FEE_MARKET_TX_TYPE

    @property
    def effective_gas_price(self) -> int:
        """
        The price per gas actually paid with a base fee of 0 (DESIGN §2).
        """
        return min(self.max_fee_per_gas, self.max_priority_fee_per_gas)

    def _unsigned_fields(self) -> list[RLPItem]:
        return [
            encode_uint(self.chain_id),
            encode_uint(self.nonce),
            encode_uint(self.max_priority_fee_per_gas),
            encode_uint(self.max_fee_per_gas),
            encode_uint(self.gas),
            self.to,
            encode_uint(self.value),
            self.data,
            _access_list_item(self.access_list),
        ]


Transaction = Union[LegacyTransaction, AccessListTransaction, FeeMarketTransaction]
"""Any transaction this chain accepts."""


def _check_same_chain(own: int, asked: int | None) -> None:
    if asked is not None and asked != own:
        raise WrongChainIdError(f"transaction is for chain id {own}, not {asked}")


def _access_list_item(access_list: AccessList) -> list[RLPItem]:
    return [[address, list(keys)] for address, keys in access_list]


def decode_transaction(raw: bytes) -> Transaction:
    """
    Decode a raw transaction (as sent to C{eth_sendRawTransaction}).

    @raise RLPError: the bytes are not canonical RLP of the right shape.
    @raise UnsupportedTransactionTypeError: a blob or set-code transaction,
        or an unknown type byte.
    @raise InvalidTransactionError: a value is out of its range.
    @raise InvalidSignatureError: the signature values are malformed.
    """
    if not isinstance(raw, bytes):
        raise RLPError(f"a raw transaction must be bytes, not {type(raw).__name__}")
    if not raw:
        raise RLPError("a raw transaction cannot be empty")
    first = raw[0]
    if first >= 0xC0:
        legacy = _plain_legacy(raw)
        tx: Transaction = _legacy_from_fields(decode_rlp(raw)) if legacy is None else legacy
    elif first == ACCESS_LIST_TX_TYPE:
        tx = _access_list_from_fields(decode_rlp(raw[1:]))
    elif first == FEE_MARKET_TX_TYPE:
        tx = _fee_market_from_fields(decode_rlp(raw[1:]))
    elif first in REFUSED_TX_TYPES:
        raise UnsupportedTransactionTypeError(
            f"transaction type {first} ({REFUSED_TX_TYPES[first]}) is not supported by this chain"
        )
    elif first <= 0x7F:
        raise UnsupportedTransactionTypeError(f"unknown transaction type {first}")
    else:
        raise RLPError("a legacy transaction must be an RLP list, not an RLP string")
    # Strict decoding admits only canonical bytes, so the input is the encoding.
    tx.__dict__["_encoded"] = raw
    return tx


def decode_transaction_in_block(item: RLPItem) -> Transaction:
    """
    Decode a transaction as a block body holds it: a legacy transaction's
    list, or an RLP string holding a typed transaction's raw bytes.

    @raise RLPError: and the other errors of L{decode_transaction}.
    """
    if isinstance(item, list):
        tx = _legacy_from_fields(item)
        tx.__dict__["_encoded"] = encode_rlp(item)
        return tx
    if not item or item[0] >= 0xC0:
        raise RLPError("a typed transaction in a block must start with its type byte")
    return decode_transaction(item)


def _uint(item: RLPItem, what: str, ceiling: int) -> int:
    value = decode_uint(item, what)
    if value >= ceiling:
        bits = ceiling.bit_length() - 1
        raise InvalidTransactionError(f"{what} {value} does not fit in {bits} bits")
    return value


def _recipient(item: RLPItem) -> bytes:
    to = decode_bytes(item, "to")
    if len(to) not in (0, 20):
        raise RLPError(f"to must be a 20-byte address or empty, got {len(to)} bytes")
    return to


def _signature(y_item: RLPItem, r_item: RLPItem, s_item: RLPItem, what: str) -> tuple[int, int, int]:
    y = decode_uint(y_item, what)
    r = decode_uint(r_item, "signature r")
    s = decode_uint(s_item, "signature s")
    if r >= UINT256_CEILING or s >= UINT256_CEILING:
        raise InvalidSignatureError("invalid signature: r and s must fit in 256 bits")
    return y, r, s


def _legacy_from_fields(item: RLPItem) -> LegacyTransaction:
    fields = decode_list(item, "legacy transaction", 9)
    v, r, s = _signature(fields[6], fields[7], fields[8], "signature v")
    if v not in (27, 28) and v < 35:
        raise InvalidSignatureError(f"invalid signature: v must be 27, 28 or 35 + 2 * chain id, got {v}")
    if v >= UINT256_CEILING:
        raise InvalidSignatureError("invalid signature: v does not fit in 256 bits")
    return LegacyTransaction(
        nonce=_uint(fields[0], "nonce", UINT64_CEILING),
        gas_price=_uint(fields[1], "gas price", UINT256_CEILING),
        gas=_uint(fields[2], "gas", UINT64_CEILING),
        to=_recipient(fields[3]),
        value=_uint(fields[4], "value", UINT256_CEILING),
        data=decode_bytes(fields[5], "data"),
        v=v,
        r=r,
        s=s,
    )


_LEGACY_INTEGERS = ((True, True, True, False, True, False), (True, True, True))
"""Which of a legacy transaction's nine fields are integers (all but C{to} and C{data}): the six unsigned
fields, then the signature's three."""


def _plain_legacy(raw: bytes) -> LegacyTransaction | None:
    """
    Decode the usual legacy transaction (what every C{eth_sendRawTransaction}
    of a wallet or a test suite sends) in one pass over its bytes, without
    the general decoder's items and a call per field: a list of fewer than
    256 bytes of payload whose nine fields are strings of fewer than 256
    bytes.

    It returns a transaction only when the general path (L{decode_rlp},
    then L{_legacy_from_fields}) would return the same one: canonical
    prefixes (a single byte below 0x80 bare, the short form under 56 bytes,
    the list's prefix spanning the bytes exactly), integers without leading
    zero bytes and inside their ranges, a C{to} of 0 or 20 bytes, a valid
    C{v}.  Anything else, well formed or not, gives L{None}, and the general
    path decodes it or raises its own error.

    @param raw: the raw transaction; its first byte is at least 0xC0.
    """
    if type(raw) is not bytes:
        return None
    end = len(raw)
    first = raw[0]
    if first < 0xF8:
        position = 1
        if first - 0xBF != end:
            return None
    elif first == 0xF8 and end > 57 and raw[1] == end - 2:
        position = 2
    else:
        return None
    payload_start = position
    fields = []
    stops = []
    for part in _LEGACY_INTEGERS:
        for integer in part:
            if position >= end:
                return None
            prefix = raw[position]
            if prefix < 0x80:
                if integer and prefix == 0:
                    return None
                position += 1
                fields.append(raw[position - 1 : position])
                continue
            if prefix < 0xB8:
                start = position + 1
                position = start + prefix - 0x80
            elif prefix == 0xB8 and position + 1 < end and raw[position + 1] >= 56:
                start = position + 2
                position = start + raw[position + 1]
            else:
                return None
            if position > end:
                return None
            if position > start and (raw[start] < 0x80 if prefix == 0x81 else integer and raw[start] == 0):
                return None
            fields.append(raw[start:position])
        stops.append(position)
    if position != end:
        return None
    nonce, gas_price, gas, to, value, data, v, r, s = fields
    v = int.from_bytes(v, "big")
    r = int.from_bytes(r, "big")
    s = int.from_bytes(s, "big")
    nonce = int.from_bytes(nonce, "big")
    gas = int.from_bytes(gas, "big")
    if (
        (v < 35 and v != 27 and v != 28)
        or len(to) not in (0, 20)
        or nonce >= UINT64_CEILING
        or gas >= UINT64_CEILING
        or len(gas_price) > 32
        or len(value) > 32
        or r >= UINT256_CEILING
        or s >= UINT256_CEILING
        or v >= UINT256_CEILING
    ):
        return None
    gas_price = int.from_bytes(gas_price, "big")
    value = int.from_bytes(value, "big")
    tx = LegacyTransaction(nonce, gas_price, gas, to, value, data, v, r, s)
    # The unsigned fields' encodings, found on the way (L{_TransactionBase._unsigned_payload}).
    tx.__dict__["_unsigned"] = raw[payload_start : stops[0]]
    return tx


def _typed_signature(fields: list[RLPItem]) -> tuple[int, int, int]:
    y_parity, r, s = _signature(fields[-3], fields[-2], fields[-1], "signature y parity")
    if y_parity not in (0, 1):
        raise InvalidSignatureError(f"invalid signature: y parity must be 0 or 1, got {y_parity}")
    return y_parity, r, s


def _access_list_from_fields(item: RLPItem) -> AccessListTransaction:
    fields = decode_list(item, "access-list transaction", 11)
    y_parity, r, s = _typed_signature(fields)
    return AccessListTransaction(
        chain_id=_uint(fields[0], "chain id", UINT256_CEILING),
        nonce=_uint(fields[1], "nonce", UINT64_CEILING),
        gas_price=_uint(fields[2], "gas price", UINT256_CEILING),
        gas=_uint(fields[3], "gas", UINT64_CEILING),
        to=_recipient(fields[4]),
        value=_uint(fields[5], "value", UINT256_CEILING),
        data=decode_bytes(fields[6], "data"),
        access_list=decode_access_list(fields[7]),
        y_parity=y_parity,
        r=r,
        s=s,
    )


def _fee_market_from_fields(item: RLPItem) -> FeeMarketTransaction:
    fields = decode_list(item, "fee-market transaction", 12)
    y_parity, r, s = _typed_signature(fields)
    return FeeMarketTransaction(
        chain_id=_uint(fields[0], "chain id", UINT256_CEILING),
        nonce=_uint(fields[1], "nonce", UINT64_CEILING),
        max_priority_fee_per_gas=_uint(fields[2], "max priority fee per gas", UINT256_CEILING),
        max_fee_per_gas=_uint(fields[3], "max fee per gas", UINT256_CEILING),
        gas=_uint(fields[4], "gas", UINT64_CEILING),
        to=_recipient(fields[5]),
        value=_uint(fields[6], "value", UINT256_CEILING),
        data=decode_bytes(fields[7], "data"),
        access_list=decode_access_list(fields[8]),
        y_parity=y_parity,
        r=r,
        s=s,
    )


def decode_access_list(item: RLPItem) -> AccessList:
    """
    Read an EIP-2930 access list: a list of C{[address, [storage keys]]}.

    @raise RLPError: the shape is wrong, an address is not 20 bytes or a
        storage key not 32 bytes.
    """
    entries = []
    for entry in decode_list(item, "access list"):
        address, keys = decode_list(entry, "access list entry", 2)
        storage_keys = tuple(
            Hash32(decode_fixed(key, "access list storage key", 32))
            for key in decode_list(keys, "access list storage keys")
        )
        entry_address = Address(decode_fixed(address, "access list address", 20))
        entries.append(AccessListEntry(entry_address, storage_keys))
    return tuple(entries)


def sign_transaction(
    unsigned: Transaction, private_key: bytes, chain_id: int | None, sender: Address | None = None
) -> Transaction:
    """
    Sign a transaction, returning a copy with the signature filled in.

    @param unsigned: the transaction; its signature fields are ignored.
    @param private_key: the 32-byte secp256k1 key.
    @param chain_id: for a legacy transaction, the chain to sign for with
        EIP-155, or L{None} for a signature valid on every chain; for a typed
        transaction, L{None} or its own chain id.
    @param sender: the key's address, when the caller knows it (a wallet
        keeps each key under the address derived from it): the signed
        transaction's sender without deriving it again (a point
        multiplication, about a third of the signing).
    @raise WrongChainIdError: a typed transaction is for another chain.
    @raise nodex.crypto.SignatureError: the key is not a valid scalar.
    """
    if isinstance(unsigned, LegacyTransaction):
        digest = _pre_eip155_hash(unsigned) if chain_id is None else unsigned.signing_hash(chain_id)
        y_parity, r, s = sign(digest, private_key)
        v = 27 + y_parity if chain_id is None else 35 + 2 * chain_id + y_parity
        signed: Transaction = replace(unsigned, v=v, r=r, s=s)
    else:
        y_parity, r, s = sign(unsigned.signing_hash(chain_id), private_key)
        signed = replace(unsigned, y_parity=y_parity, r=r, s=s)
    signed.__dict__["sender"] = private_key_to_address(private_key) if sender is None else Address(sender)
    return signed


def impersonate(unsigned: Transaction, sender: bytes, chain_id: int) -> Transaction:
    """
    Give a transaction the marker of an impersonated sender instead of a
    signature: recovery id 0, C{r} the sender's address with
    L{IMPERSONATION_FLAG} set, C{s} 0 (an C{s} no valid signature has).
    The sender travels inside the transaction, so its hash is distinct
    for each sender and every later decoding names the same sender;
    only dev chains accept the marker, and only from their own users
    (C{docs/devchain.md}).

    @param sender: the 20-byte address the transaction is sent from.
    @param chain_id: the chain of a legacy transaction (EIP-155 C{v}).
    """
    if len(sender) != 20:
        raise ValueError(f"an address has 20 bytes, got {len(sender)}")
    r = IMPERSONATION_FLAG | int.from_bytes(sender, "big")
    if isinstance(unsigned, LegacyTransaction):
        marked: Transaction = replace(unsigned, v=35 + 2 * chain_id, r=r, s=0)
    else:
        marked = replace(unsigned, y_parity=0, r=r, s=0)
    marked.__dict__["sender"] = Address(bytes(sender))
    return marked


def _pre_eip155_hash(tx: LegacyTransaction) -> Hash32:
    return keccak256(encode_rlp(tx._unsigned_fields()))


__all__ = [
    "ACCESS_LIST_TX_TYPE",
    "FEE_MARKET_TX_TYPE",
    "IMPERSONATION_FLAG",
    "LEGACY_TX_TYPE",
    "REFUSED_TX_TYPES",
    "AccessList",
    "AccessListEntry",
    "AccessListTransaction",
    "FeeMarketTransaction",
    "LegacyTransaction",
    "Transaction",
    "check_signature_values",
    "decode_access_list",
    "decode_transaction",
    "decode_transaction_in_block",
    "impersonate",
    "sign_transaction",
]
