"""
The messages of nodex's wire protocol and their encoding (C{docs/p2p.md}).

A frame is a 4-byte big-endian length followed by that many bytes of
payload; the payload is one RLP list whose first item is the message code
and whose other items are the message's fields.  Integers are minimal
big-endian byte strings, as everywhere in RLP.  Blocks, headers and
transactions travel in their chain encodings, embedded as RLP items.

This module is pure: it turns bytes into message objects and back, and
raises L{MessageError} for anything that is not a well-formed message.
"""

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import ClassVar

from abc import ABC, abstractmethod

from nodex.crypto import keccak256
from nodex.p2p.errors import MessageError
from nodex.structures.blocks import Block, encode_body
from nodex.structures.errors import InvalidTransactionError, RLPError
from nodex.structures.headers import Header
from nodex.structures.rlpcodec import (
    RLPItem,
    decode_bytes,
    decode_fixed,
    decode_list,
    MAX_NESTING,
    decode_rlp,
    decode_rlp_at,
    decode_uint,
    encode_list_of_encoded,
    encode_rlp,
    encode_uint,
    item_bounds,
)
from nodex.structures.transactions import Transaction, decode_transaction_in_block

WIRE_PROTOCOL_VERSION = 63
"""
The version of nodex's own peer-to-peer wire protocol (DESIGN §5), which
C{eth_protocolVersion} reports.  The composition root hands it to the RPC edge,
which imports no P2P code.
"""

FRAME_HEADER_BYTES = 4
"""The length prefix of a frame: an unsigned 32-bit big-endian integer."""

MAX_HEADERS_PER_MESSAGE = 512
"""The most headers a C{GET_BLOCK_HEADERS} may ask for and a C{BLOCK_HEADERS} may carry."""

MAX_BODIES_PER_MESSAGE = 256
"""The most hashes a C{GET_BLOCK_BODIES} may name and bodies a C{BLOCK_BODIES} may carry."""

MAX_ANNOUNCEMENTS = 256
"""The most hashes in one C{NEW_BLOCK_HASHES}."""

MAX_TRANSACTIONS_PER_MESSAGE = 4096
"""The most transactions in one C{TRANSACTIONS}."""

MAX_PEERS_PER_MESSAGE = 64
"""The most addresses in one C{PEERS}."""

NODE_ID_BYTES = 64
"""A node id: the uncompressed secp256k1 public key without its 0x04 prefix."""

CHALLENGE_BYTES = 32
"""The random challenge each side of a handshake sends."""

AUTH_DOMAIN = b"nodex handshake v1"
"""The prefix of the signed handshake digest (C{docs/p2p.md}, "Handshake")."""


class MessageCode(IntEnum):
    """
    The code of each message, the first item of its payload.
    """

    HELLO = 0x00
    AUTH = 0x01
    DISCONNECT = 0x02
    PING = 0x03
    PONG = 0x04
    STATUS = 0x05
    NEW_BLOCK = 0x06
    NEW_BLOCK_HASHES = 0x07
    TRANSACTIONS = 0x08
    GET_BLOCK_HEADERS = 0x09
    BLOCK_HEADERS = 0x0A
    GET_BLOCK_BODIES = 0x0B
    BLOCK_BODIES = 0x0C
    GET_PEERS = 0x0D
    PEERS = 0x0E


def encode_bytes(value: bytes) -> bytes:
    """
    The RLP encoding of one byte string.
    """
    return encode_rlp(value)


def _uint(value: int) -> bytes:
    return encode_rlp(encode_uint(value))


def _int_field(item: RLPItem, what: str, bits: int = 256) -> int:
    value = decode_uint(item, what)
    if value >= 1 << bits:
        raise RLPError(f"{what} does not fit in {bits} bits")
    return value


class Message(ABC):
    """
    The base of every message: its code and its fields' encodings.
    """

    code: ClassVar[MessageCode]

    @abstractmethod
    def fields(self) -> list[bytes]:
        """
        The RLP encodings of the fields, in order.
        """

    @classmethod
    @abstractmethod
    def from_fields(cls, items: list[RLPItem]) -> "Message":
        """
        The message of the decoded fields C{items}.

        @raise RLPError: a field is malformed.
        """


@dataclass(frozen=True)
class Hello(Message):
    """
    The first message of each side: who it is and what chain it follows.

    @ivar listen_port: the port this node accepts peers on (0: none), for peer exchange.
    """

    code = MessageCode.HELLO
    protocol_version: int
    network_id: int
    genesis_hash: bytes
    head_hash: bytes
    head_number: int
    total_difficulty: int
    node_id: bytes
    challenge: bytes
    listen_port: int

    def fields(self) -> list[bytes]:
        return [
            _uint(self.protocol_version), _uint(self.network_id), encode_bytes(self.genesis_hash),
            encode_bytes(self.head_hash), _uint(self.head_number), _uint(self.total_difficulty),
            encode_bytes(self.node_id), encode_bytes(self.challenge), _uint(self.listen_port),
        ]

    @classmethod
    def from_fields(cls, items: list[RLPItem]) -> "Hello":
        _count(items, 9, "HELLO")
        return cls(
            protocol_version=_int_field(items[0], "protocol version", 64),
            network_id=_int_field(items[1], "network id", 64),
            genesis_hash=decode_fixed(items[2], "genesis hash", 32),
            head_hash=decode_fixed(items[3], "head hash", 32),
            head_number=_int_field(items[4], "head number", 64),
            total_difficulty=_int_field(items[5], "total difficulty"),
            node_id=decode_fixed(items[6], "node id", NODE_ID_BYTES),
            challenge=decode_fixed(items[7], "challenge", CHALLENGE_BYTES),
            listen_port=_int_field(items[8], "listen port", 16),
        )


@dataclass(frozen=True)
class Auth(Message):
    """
    The proof of the node key: a recoverable signature (r, s, y parity;
    65 bytes) of the handshake digest of the other side's challenge.
    """

    code = MessageCode.AUTH
    signature: bytes

    def fields(self) -> list[bytes]:
        return [encode_bytes(self.signature)]

    @classmethod
    def from_fields(cls, items: list[RLPItem]) -> "Auth":
        _count(items, 1, "AUTH")
        return cls(decode_fixed(items[0], "signature", 65))


@dataclass(frozen=True)
class Disconnect(Message):
    """
    The last message of a connection, with a L{nodex.p2p.errors.DisconnectReason} code.
    """

    code = MessageCode.DISCONNECT
    reason: int

    def fields(self) -> list[bytes]:
        return [_uint(self.reason)]

    @classmethod
    def from_fields(cls, items: list[RLPItem]) -> "Disconnect":
        _count(items, 1, "DISCONNECT")
        return cls(_int_field(items[0], "reason", 16))


@dataclass(frozen=True)
class Ping(Message):
    """
    A liveness probe; the peer answers a L{Pong} with the same nonce.
    """

    code = MessageCode.PING
    nonce: int

    def fields(self) -> list[bytes]:
        return [_uint(self.nonce)]

    @classmethod
    def from_fields(cls, items: list[RLPItem]) -> "Ping":
        _count(items, 1, "PING")
        return cls(_int_field(items[0], "nonce", 64))


@dataclass(frozen=True)
class Pong(Message):
    """
    The answer to a L{Ping}.
    """

    code = MessageCode.PONG
    nonce: int

    def fields(self) -> list[bytes]:
        return [_uint(self.nonce)]

    @classmethod
    def from_fields(cls, items: list[RLPItem]) -> "Pong":
        _count(items, 1, "PONG")
        return cls(_int_field(items[0], "nonce", 64))


@dataclass(frozen=True)
class Status(Message):
    """
    The sender's new best block, sent when its head moves.
    """

    code = MessageCode.STATUS
    head_hash: bytes
    head_number: int
    total_difficulty: int

    def fields(self) -> list[bytes]:
        return [encode_bytes(self.head_hash), _uint(self.head_number), _uint(self.total_difficulty)]

    @classmethod
    def from_fields(cls, items: list[RLPItem]) -> "Status":
        _count(items, 3, "STATUS")
        return cls(
            decode_fixed(items[0], "head hash", 32),
            _int_field(items[1], "head number", 64),
            _int_field(items[2], "total difficulty"),
        )


@dataclass(frozen=True)
class NewBlock(Message):
    """
    A whole new block and the total difficulty of its chain.
    """

    code = MessageCode.NEW_BLOCK
    block: Block
    total_difficulty: int

    def fields(self) -> list[bytes]:
        return [self.block.encode(), _uint(self.total_difficulty)]

    @classmethod
    def from_fields(cls, items: list[RLPItem]) -> "NewBlock":
        _count(items, 2, "NEW_BLOCK")
        header, transactions, uncles = decode_list(items[0], "block", 3)
        block = Block(Header.from_rlp_item(header), _transactions(transactions), _headers(uncles, "uncles"))
        return cls(block, _int_field(items[1], "total difficulty"))


@dataclass(frozen=True)
class NewBlockHashes(Message):
    """
    Announcements of new blocks: (hash, number) pairs.
    """

    code = MessageCode.NEW_BLOCK_HASHES
    entries: tuple[tuple[bytes, int], ...]

    def fields(self) -> list[bytes]:
        return [encode_rlp([[block_hash, encode_uint(number)] for block_hash, number in self.entries])]

    @classmethod
    def from_fields(cls, items: list[RLPItem]) -> "NewBlockHashes":
        _count(items, 1, "NEW_BLOCK_HASHES")
        entries = _bounded_list(items[0], "announcements", MAX_ANNOUNCEMENTS)
        pairs = []
        for entry in entries:
            block_hash, number = decode_list(entry, "announcement", 2)
            pairs.append((decode_fixed(block_hash, "block hash", 32), _int_field(number, "block number", 64)))
        return cls(tuple(pairs))


@dataclass(frozen=True)
class Transactions(Message):
    """
    Transactions for the pool, each in its block-body encoding.
    """

    code = MessageCode.TRANSACTIONS
    transactions: tuple[Transaction, ...]

    def fields(self) -> list[bytes]:
        return [encode_list_of_encoded(tx.encode_in_block() for tx in self.transactions)]

    @classmethod
    def from_fields(cls, items: list[RLPItem]) -> "Transactions":
        _count(items, 1, "TRANSACTIONS")
        return cls(_transactions(items[0], MAX_TRANSACTIONS_PER_MESSAGE))


@dataclass(frozen=True)
class GetBlockHeaders(Message):
    """
    A request for C{count} canonical headers from C{origin} (a 32-byte hash
    or a number), every C{skip + 1}-th, descending when C{reverse}.
    """

    code = MessageCode.GET_BLOCK_HEADERS
    request_id: int
    origin: bytes | int
    count: int
    skip: int = 0
    reverse: bool = False

    def fields(self) -> list[bytes]:
        origin = encode_bytes(self.origin) if isinstance(self.origin, bytes) else _uint(self.origin)
        return [_uint(self.request_id), origin, _uint(self.count), _uint(self.skip), _uint(int(self.reverse))]

    @classmethod
    def from_fields(cls, items: list[RLPItem]) -> "GetBlockHeaders":
        _count(items, 5, "GET_BLOCK_HEADERS")
        origin_item = decode_bytes(items[1], "origin")
        origin: bytes | int = origin_item if len(origin_item) == 32 else _int_field(origin_item, "origin", 64)
        count = _int_field(items[2], "count", 64)
        if not 0 < count <= MAX_HEADERS_PER_MESSAGE:
            raise RLPError(f"count must be from 1 to {MAX_HEADERS_PER_MESSAGE}, got {count}")
        reverse = _int_field(items[4], "reverse", 8)
        if reverse > 1:
            raise RLPError("reverse must be 0 or 1")
        return cls(_int_field(items[0], "request id", 64), origin, count, _int_field(items[3], "skip", 64), bool(reverse))


@dataclass(frozen=True)
class BlockHeaders(Message):
    """
    The answer to L{GetBlockHeaders}: the headers the sender has, in the asked order.
    """

    code = MessageCode.BLOCK_HEADERS
    request_id: int
    headers: tuple[Header, ...]

    def fields(self) -> list[bytes]:
        return [_uint(self.request_id), encode_list_of_encoded(header.encode() for header in self.headers)]

    @classmethod
    def from_fields(cls, items: list[RLPItem]) -> "BlockHeaders":
        _count(items, 2, "BLOCK_HEADERS")
        return cls(_int_field(items[0], "request id", 64), _headers(items[1], "headers", MAX_HEADERS_PER_MESSAGE))


@dataclass(frozen=True)
class GetBlockBodies(Message):
    """
    A request for the bodies of the blocks of the given hashes.
    """

    code = MessageCode.GET_BLOCK_BODIES
    request_id: int
    hashes: tuple[bytes, ...]

    def fields(self) -> list[bytes]:
        return [_uint(self.request_id), encode_rlp(list(self.hashes))]

    @classmethod
    def from_fields(cls, items: list[RLPItem]) -> "GetBlockBodies":
        _count(items, 2, "GET_BLOCK_BODIES")
        hashes = _bounded_list(items[1], "hashes", MAX_BODIES_PER_MESSAGE)
        return cls(_int_field(items[0], "request id", 64), tuple(decode_fixed(h, "block hash", 32) for h in hashes))


Body = tuple[tuple[Transaction, ...], tuple[Header, ...]]
"""A block body: its transactions and its uncle headers."""


@dataclass(frozen=True)
class BlockBodies(Message):
    """
    The answer to L{GetBlockBodies}: the bodies the sender has, in the asked
    order, stopping at the first block it does not have.
    """

    code = MessageCode.BLOCK_BODIES
    request_id: int
    bodies: tuple[Body, ...]

    def fields(self) -> list[bytes]:
        return [
            _uint(self.request_id),
            encode_list_of_encoded(encode_body(txs, uncles) for txs, uncles in self.bodies),
        ]

    @classmethod
    def from_fields(cls, items: list[RLPItem]) -> "BlockBodies":
        _count(items, 2, "BLOCK_BODIES")
        bodies = []
        for body in _bounded_list(items[1], "bodies", MAX_BODIES_PER_MESSAGE):
            transactions, uncles = decode_list(body, "body", 2)
            bodies.append((_transactions(transactions), _headers(uncles, "uncles")))
        return cls(_int_field(items[0], "request id", 64), tuple(bodies))


@dataclass(frozen=True)
class GetPeers(Message):
    """
    A request for the addresses of the peers the other side is connected to.
    """

    code = MessageCode.GET_PEERS

    def fields(self) -> list[bytes]:
        return []

    @classmethod
    def from_fields(cls, items: list[RLPItem]) -> "GetPeers":
        _count(items, 0, "GET_PEERS")
        return cls()


@dataclass(frozen=True)
class PeerAddress:
    """
    Where a node accepts peers, and its node id.
    """

    host: str
    port: int
    node_id: bytes


@dataclass(frozen=True)
class Peers(Message):
    """
    The answer to L{GetPeers}.
    """

    code = MessageCode.PEERS
    peers: tuple[PeerAddress, ...]

    def fields(self) -> list[bytes]:
        return [encode_rlp([[peer.host.encode(), encode_uint(peer.port), peer.node_id] for peer in self.peers])]

    @classmethod
    def from_fields(cls, items: list[RLPItem]) -> "Peers":
        _count(items, 1, "PEERS")
        peers = []
        for entry in _bounded_list(items[0], "peers", MAX_PEERS_PER_MESSAGE):
            host, port, node_id = decode_list(entry, "peer", 3)
            host_bytes = decode_bytes(host, "host")
            if not 0 < len(host_bytes) <= 255:
                raise RLPError("a peer's host must have 1 to 255 bytes")
            try:
                host_text = host_bytes.decode("ascii")
            except UnicodeDecodeError:
                raise RLPError("a peer's host must be ASCII") from None
            peers.append(PeerAddress(host_text, _int_field(port, "port", 16), decode_fixed(node_id, "node id", 64)))
        return cls(tuple(peers))


MESSAGE_TYPES: dict[int, type[Message]] = {
    cls.code: cls
    for cls in (
        Hello, Auth, Disconnect, Ping, Pong, Status, NewBlock, NewBlockHashes, Transactions,
        GetBlockHeaders, BlockHeaders, GetBlockBodies, BlockBodies, GetPeers, Peers,
    )
}
"""The message class of each code."""

_GOSSIP = frozenset((NewBlock, NewBlockHashes, Transactions, Status))
"""The messages whose same bytes come from many peers (L{RecentMessages})."""

def encode_message(message: Message) -> bytes:
    """
    The payload of a message (without the frame's length prefix), encoded
    once per message object: the relay sends one object to every peer that
    gets it (a block, its announcement, a batch of transactions), and each
    peer's frame seals the same payload (C{docs/p2p.md}, "Propagation").
    Messages are frozen: the payload kept in the object's own dictionary
    cannot go stale.
    """
    cached = message.__dict__.get("_payload")
    if cached is None:
        cached = message.__dict__["_payload"] = encode_list_of_encoded([_uint(message.code), *message.fields()])
    return cached


def encode_frame(message: Message) -> bytes:
    """
    The whole frame of a message: length prefix and payload.
    """
    payload = encode_message(message)
    return len(payload).to_bytes(FRAME_HEADER_BYTES, "big") + payload


def _largest_handshake() -> tuple[int, int]:
    """
    The payload sizes of the longest hello and auth the decoder accepts.
    """
    hello = Hello(2**64 - 1, 2**64 - 1, b"\xff" * 32, b"\xff" * 32, 2**64 - 1, 2**256 - 1,
                  b"\xff" * NODE_ID_BYTES, b"\xff" * CHALLENGE_BYTES, 2**16 - 1)
    return len(encode_message(hello)), len(encode_message(Auth(b"\xff" * 65)))


MAX_HELLO_BYTES, MAX_AUTH_BYTES = _largest_handshake()
"""The payloads of the longest hello (every integer at its largest) and of an auth."""


KnownTransaction = Callable[[bytes], "Transaction | None"]
"""
A transaction this node holds, by hash (L{decode_message}).
"""


def decode_message(payload: bytes, known_transaction: KnownTransaction | None = None) -> Message:
    """
    Read the payload of one frame.

    @param known_transaction: the transactions this node holds, by hash: a
        TRANSACTIONS message's transaction whose bytes hash to one of them
        is that transaction, not decoded again (L{_transactions_message});
        a block's (NEW_BLOCK, BLOCK_BODIES) is that transaction, its sender
        already recovered (L{_known_in_blocks}).
    @raise MessageError: not one RLP list, an unknown code, or a malformed field.
    """
    if known_transaction is not None and payload and payload[0] >= 0xC0:
        code_at = 1 if payload[0] < 0xF8 else payload[0] - 0xF6
        if payload[code_at : code_at + 1] == _TRANSACTIONS_CODE:
            message = _transactions_message(payload, known_transaction)
            if message is not None:
                return message
    try:
        items = decode_list(decode_rlp(payload), "message")
        if not items:
            raise RLPError("a message must start with its code")
        code = _int_field(items[0], "message code", 16)
        cls = MESSAGE_TYPES.get(code)
        if cls is None:
            raise RLPError(f"unknown message code {code}")
        message = cls.from_fields(items[1:])
    except (RLPError, InvalidTransactionError) as exc:
        raise MessageError(str(exc)) from exc
    if known_transaction is not None and (cls is NewBlock or cls is BlockBodies):
        return _known_in_blocks(message, known_transaction)  # type: ignore[arg-type]
    return message


def _known_in_blocks(message: "NewBlock | BlockBodies", known_transaction: KnownTransaction) -> Message:
    """
    A block message whose transactions this node holds are its own objects:
    the pool recovered their senders when it took them, and the block's
    import would recover each again (C{docs/p2p.md}, "Propagation").  The
    whole message was decoded, and so checked, first; equal hashes are
    equal bytes, so the block is the same.
    """
    if type(message) is NewBlock:
        block = message.block
        transactions = _known(block.transactions, known_transaction)
        if transactions is None:
            return message
        return NewBlock(Block(block.header, transactions, block.uncles), message.total_difficulty)
    bodies = message.bodies  # type: ignore[union-attr]
    known_bodies = []
    changed = False
    for transactions, uncles in bodies:
        known = _known(transactions, known_transaction)
        if known is not None:
            changed = True
            transactions = known
        known_bodies.append((transactions, uncles))
    if not changed:
        return message
    return BlockBodies(message.request_id, tuple(known_bodies))  # type: ignore[union-attr]


def _known(
    transactions: tuple[Transaction, ...], known_transaction: KnownTransaction
) -> tuple[Transaction, ...] | None:
    """
    C{transactions} with those this node holds replaced by its own, or
    L{None} when it holds none of them.
    """
    replaced = None
    for index, transaction in enumerate(transactions):
        held = known_transaction(transaction.hash)
        if held is not None and held is not transaction:
            if replaced is None:
                replaced = list(transactions)
            replaced[index] = held
    return None if replaced is None else tuple(replaced)


_TRANSACTIONS_CODE = bytes([MessageCode.TRANSACTIONS])


def _transactions_message(payload: bytes, known_transaction: KnownTransaction) -> "Transactions | None":
    """
    A TRANSACTIONS message, each transaction looked up by the hash of its
    bytes before it is decoded: a gossiping network brings each transaction
    over every connection, and all but the first copy are known.  Equal
    hashes are equal bytes, which decode to the transaction already held;
    the others are decoded with the same checks as L{decode_message}'s
    (the depth of lists counted from the message's own list).

    @return: the message, or L{None} when it is not a well-formed
        TRANSACTIONS message (then the whole decoding says what is wrong).
    """
    try:
        end = len(payload)
        start, stop, is_list = item_bounds(payload, 0, end)
        if not is_list or stop != end:
            return None
        code_start, code_stop, is_list = item_bounds(payload, start, stop)
        if is_list or payload[code_start:code_stop] != _TRANSACTIONS_CODE:
            return None
        first, stop, is_list = item_bounds(payload, code_stop, end)
        if not is_list or stop != end:
            return None
        transactions = []
        position = first
        while position < stop:
            if len(transactions) == MAX_TRANSACTIONS_PER_MESSAGE:
                return None
            inner, after, is_list = item_bounds(payload, position, stop)
            transaction = None
            if is_list:
                transaction = known_transaction(keccak256(payload[position:after]))
            elif inner < after and payload[inner] < 0xC0:
                # A typed transaction's raw bytes (its type byte first).
                transaction = known_transaction(keccak256(payload[inner:after]))
            if transaction is None:
                transaction = decode_transaction_in_block(decode_rlp_at(payload, position, after, MAX_NESTING - 2))
            transactions.append(transaction)
            position = after
        return Transactions(tuple(transactions))
    except (RLPError, InvalidTransactionError):
        return None


RECENT_MESSAGES = 256
"""Gossip payloads a node keeps decoded (L{RecentMessages})."""

RECENT_MESSAGE_BYTES = 8 * 1024
"""The longest payload kept (longer ones are decoded off the reactor and not kept)."""


class RecentMessages:
    """
    The gossip a node decoded lately, by payload: the same block, its
    announcement, a batch of transactions or a status comes from several
    peers, byte for byte the same, and is decoded once.  Equal bytes decode
    to equal messages (messages and what they carry are frozen), and only
    payloads that decoded are kept: a malformed one is refused on every
    arrival, as before.  Bounded by L{RECENT_MESSAGES} payloads of at most
    L{RECENT_MESSAGE_BYTES} each, the oldest forgotten first (C{docs/p2p.md},
    "Propagation").
    """

    def __init__(self, known_transaction: KnownTransaction | None = None, size: int = RECENT_MESSAGES) -> None:
        """
        @param known_transaction: as L{decode_message}'s.
        @param size: how many payloads to keep.
        """
        self._known_transaction = known_transaction
        self._size = size
        self._recent: OrderedDict[bytes, Message] = OrderedDict()

    def decode(self, payload: bytes) -> Message:
        """
        L{decode_message} of C{payload}, or the message its bytes decoded to lately.

        @raise MessageError: as L{decode_message}.
        """
        recent = self._recent
        message = recent.get(payload)
        if message is not None:
            return message
        message = decode_message(payload, self._known_transaction)
        if type(message) in _GOSSIP and len(payload) <= RECENT_MESSAGE_BYTES:
            recent[payload] = message
            if len(recent) > self._size:
                recent.popitem(last=False)
        return message

    def __len__(self) -> int:
        return len(self._recent)


def decode_and_hash(payload: bytes) -> Message:
    """
    L{decode_message}, then the hash of every header and transaction the
    message carries (a header answer's, a new block's, a transaction
    message's), which its receiver looks each one up by: both on the
    calling thread (the peer network's decoder thread,
    so that neither holds the reactor; C{docs/p2p.md}, "Threads").

    @raise MessageError: as L{decode_message}.
    """
    message = decode_message(payload)
    if isinstance(message, BlockHeaders):
        for header in message.headers:
            header.hash
    elif isinstance(message, NewBlock):
        message.block.hash
    elif isinstance(message, Transactions):
        for transaction in message.transactions:
            transaction.hash
    return message


def _count(items: Sequence[RLPItem], expected: int, name: str) -> None:
    if len(items) != expected:
        raise RLPError(f"{name} must have {expected} fields, got {len(items)}")


def _bounded_list(item: RLPItem, what: str, limit: int) -> list[RLPItem]:
    entries = decode_list(item, what)
    if len(entries) > limit:
        raise RLPError(f"too many {what}: {len(entries)}, at most {limit}")
    return entries


def _transactions(item: RLPItem, limit: int | None = None) -> tuple[Transaction, ...]:
    entries = decode_list(item, "transactions") if limit is None else _bounded_list(item, "transactions", limit)
    return tuple(decode_transaction_in_block(entry) for entry in entries)


def _headers(item: RLPItem, what: str, limit: int | None = None) -> tuple[Header, ...]:
    entries = decode_list(item, what) if limit is None else _bounded_list(item, what, limit)
    return tuple(Header.from_rlp_item(entry) for entry in entries)


__all__ = [
    "AUTH_DOMAIN",
    "Auth",
    "BlockBodies",
    "BlockHeaders",
    "Body",
    "CHALLENGE_BYTES",
    "Disconnect",
    "FRAME_HEADER_BYTES",
    "GetBlockBodies",
    "GetBlockHeaders",
    "GetPeers",
    "Hello",
    "KnownTransaction",
    "MESSAGE_TYPES",
    "MAX_AUTH_BYTES",
    "MAX_BODIES_PER_MESSAGE",
    "MAX_HELLO_BYTES",
    "MAX_HEADERS_PER_MESSAGE",
    "Message",
    "MessageCode",
    "NODE_ID_BYTES",
    "NewBlock",
    "NewBlockHashes",
    "PeerAddress",
    "Peers",
    "Ping",
    "Pong",
    "RECENT_MESSAGES",
    "RECENT_MESSAGE_BYTES",
    "RecentMessages",
    "Status",
    "Transactions",
    "decode_and_hash",
    "decode_message",
    "encode_frame",
    "encode_message",
]
