"""
One connection to a peer: frames, the handshake, limits, keep-alive and
the requests this node sends (C{docs/p2p.md}).

The protocol knows the wire; what the messages mean for the node is the
business of its L{PeerHost} (the peer network service), to which it hands
every message once the handshake is done.
"""

import os
from collections import OrderedDict, deque
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Protocol as TypingProtocol

from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.internet.protocol import Protocol
from twisted.logger import Logger
from twisted.python.failure import Failure

from nodex.interfaces import WIRE_PROTOCOL_VERSION, PeerEvent
from nodex.p2p.errors import DisconnectReason, MessageError, PeerGoneError, RequestTimeoutError
from nodex.p2p.identity import NodeKey, verify_challenge
from nodex.p2p.messages import (
    CHALLENGE_BYTES,
    FRAME_HEADER_BYTES,
    Auth,
    BlockBodies,
    BlockHeaders,
    Body,
    Disconnect,
    GetBlockBodies,
    GetBlockHeaders,
    Hello,
    Message,
    Ping,
    Pong,
    Status,
    decode_message,
    encode_frame,
)
from nodex.structures.headers import Header


@dataclass(frozen=True)
class PeerSettings:
    """
    The limits of one connection (C{p2p.*} configuration keys).

    @ivar max_frame_bytes: the largest frame accepted; a larger length prefix disconnects.
    @ivar messages_per_second: the most messages a peer may send in one second.
    @ivar max_outstanding_requests: the most requests in flight each way.
    @ivar request_timeout: seconds a peer has to answer a request (and to finish the handshake).
    @ivar ping_interval: seconds between pings; a peer silent for three intervals is dropped.
    """

    max_frame_bytes: int = 16 * 1024 * 1024
    messages_per_second: int = 500
    max_outstanding_requests: int = 16
    request_timeout: float = 10.0
    ping_interval: float = 15.0


@dataclass(frozen=True)
class ChainStatus:
    """
    What a hello says about the sender's chain.
    """

    network_id: int
    genesis_hash: bytes
    head_hash: bytes
    head_number: int
    total_difficulty: int
    listen_port: int


class PeerHost(TypingProtocol):
    """
    What a L{PeerProtocol} needs from the node's peer network.
    """

    node_key: NodeKey
    peer_settings: PeerSettings

    def chain_status(self) -> ChainStatus:
        """
        This node's side of a hello.
        """

    def is_allowed(self, node_id: bytes | None, address: str) -> bool:
        """
        Whether a peer may connect or be heard now.
        """

    def record_event(self, peer: "PeerProtocol", event: str) -> None:
        """
        Record a L{PeerEvent} against a peer.
        """

    def peer_ready(self, peer: "PeerProtocol") -> DisconnectReason | None:
        """
        Adopt a peer whose handshake succeeded, or say why it must go.
        """

    def peer_message(self, peer: "PeerProtocol", message: Message) -> None:
        """
        Handle a message of an adopted peer (every message but the
        handshake's, keep-alive's and answers to this node's requests).
        """

    def peer_lost(self, peer: "PeerProtocol") -> None:
        """
        Forget a peer whose connection ended (adopted or not).
        """

    def decode_in_thread(self, payload: bytes) -> "Deferred[Message]":
        """
        Decode a large frame's payload off the reactor thread
        (L{nodex.p2p.messages.decode_and_hash}).

        @return: a Deferred firing with the message, or failing with
            L{MessageError}.
        """


class KnownSet:
    """
    A bounded set of hashes, forgetting the oldest first.
    """

    def __init__(self, limit: int) -> None:
        """
        @param limit: how many entries to keep.
        """
        self._limit = limit
        self._entries: OrderedDict[Hashable, None] = OrderedDict()

    def add(self, entry: Hashable) -> None:
        """
        Remember C{entry}.
        """
        self._entries[entry] = None
        self._entries.move_to_end(entry)
        if len(self._entries) > self._limit:
            self._entries.popitem(last=False)

    def __contains__(self, entry: Hashable) -> bool:
        return entry in self._entries

    def __len__(self) -> int:
        return len(self._entries)


HANDSHAKE, AUTHENTICATING, ESTABLISHED, CLOSED = "handshake", "authenticating", "established", "closed"

THREAD_DECODE_BYTES = 8 * 1024
"""
Frames at least this long are decoded on the host's decoder thread, not on
the reactor's: about 15 headers' worth, under half a millisecond to decode.
"""

_HANDSHAKE_FAILURES = {
    DisconnectReason.INCOMPATIBLE_PROTOCOL: PeerEvent.INCOMPATIBLE_PROTOCOL,
    DisconnectReason.WRONG_NETWORK: PeerEvent.INVALID_NETWORK,
    DisconnectReason.WRONG_GENESIS: PeerEvent.UNEXPECTED_GENESIS,
}


class PeerProtocol(Protocol):
    """
    The wire protocol over one TCP (or TLS) connection.

    @ivar node_id: the peer's node id, once its hello arrived.
    @ivar hello: the peer's hello.
    @ivar head_hash: the peer's best block as last heard (hello, status, announcements).
    @ivar known_blocks: the block hashes the peer is known to have.
    @ivar known_transactions: the transaction hashes the peer is known to have.
    @ivar dialed_host: the host name this node dialed (outbound), else L{None}.
    @ivar dial_target: the host and port this node dialed (outbound), else L{None}.
    @ivar disconnect_reason: why the connection ended, when this side ended it.
    @ivar received_disconnect: the reason code of the peer's disconnect, if it sent one.
    @ivar was_established: whether the handshake had succeeded before the connection ended.
    @ivar lost_reason: why the transport closed, once it has.
    """

    log = Logger()

    def __init__(self, host: PeerHost, clock: IReactorTime, inbound: bool, dialed_host: str | None = None) -> None:
        """
        @param inbound: the peer connected to this node.
        @param dialed_host: the name this node dialed, for outbound connections.
        """
        self._host = host
        self._clock = clock
        self.inbound = inbound
        self.dialed_host = dialed_host
        self.dial_target: tuple[str, int] | None = None
        self.state = HANDSHAKE
        self.node_id: bytes | None = None
        self.hello: Hello | None = None
        self.head_hash = b""
        self.head_number = 0
        self.total_difficulty = 0
        self.known_blocks = KnownSet(1024)
        self.known_transactions = KnownSet(8192)
        self.disconnect_reason: DisconnectReason | None = None
        self.was_established = False
        self.lost_reason: Failure | None = None
        self.received_disconnect: int | None = None
        self._challenge = os.urandom(CHALLENGE_BYTES)
        self._buffer = bytearray()
        self._frames: deque[bytes] = deque()
        self._queued_bytes = 0
        self._decoding = False
        self._paused = False
        self._window = -1
        self._window_count = 0
        self._last_received = 0.0
        self._next_request_id = 1
        self._requests: dict[int, tuple[Deferred[Any], IDelayedCall, Message]] = {}
        self._serving = 0
        self._timer: IDelayedCall | None = None
        self._hello_head = b""

    # Addresses

    @property
    def address(self) -> str:
        """
        The peer's IP address.
        """
        return str(getattr(self.transport.getPeer(), "host", ""))  # type: ignore[union-attr]

    @property
    def port(self) -> int:
        """
        The peer's TCP port of this connection.
        """
        return int(getattr(self.transport.getPeer(), "port", 0))  # type: ignore[union-attr]

    @property
    def short_id(self) -> str:
        """
        The first 8 hex digits of the node id (C{net_peerList}, logs).
        """
        return self.node_id.hex()[:8] if self.node_id else "????????"

    @property
    def closed(self) -> bool:
        """
        Whether the connection is closing or closed (refused, disconnected or lost).
        """
        return self.state == CLOSED

    @property
    def established(self) -> bool:
        """
        Whether the handshake succeeded and the connection is open.
        """
        return self.state == ESTABLISHED

    # Connection

    def connectionMade(self) -> None:
        """
        Refuse a refused address, else send the hello and start the handshake timer.
        """
        self._last_received = self._clock.seconds()
        if not self._host.is_allowed(None, self.address):
            self.disconnect(DisconnectReason.BAD_REPUTATION)
            return
        status = self._host.chain_status()
        self._hello_head = status.head_hash
        self.send(
            Hello(
                WIRE_PROTOCOL_VERSION, status.network_id, status.genesis_hash, status.head_hash,
                status.head_number, status.total_difficulty, self._host.node_key.node_id,
                self._challenge, status.listen_port,
            )
        )
        self._timer = self._clock.callLater(self._host.peer_settings.request_timeout, self._handshake_timed_out)

    def _handshake_timed_out(self) -> None:
        self._timer = None
        self._host.record_event(self, PeerEvent.FAILED_HANDSHAKE)
        self.disconnect(DisconnectReason.HANDSHAKE_TIMEOUT)

    def dataReceived(self, data: bytes) -> None:
        """
        Cut frames out of the stream and handle each message.
        """
        if self.state == CLOSED:
            return
        self._buffer += data
        limit = self._host.peer_settings.max_frame_bytes
        while self.state != CLOSED and len(self._buffer) >= FRAME_HEADER_BYTES:
            length = int.from_bytes(self._buffer[:FRAME_HEADER_BYTES], "big")
            if length > limit:
                self.offence(PeerEvent.INVALID_MESSAGE, DisconnectReason.FRAME_TOO_LARGE, f"frame of {length} bytes")
                return
            end = FRAME_HEADER_BYTES + length
            if len(self._buffer) < end:
                break
            payload = bytes(self._buffer[FRAME_HEADER_BYTES:end])
            del self._buffer[:end]
            if not self._count_message():
                return
            self._frames.append(payload)
            self._queued_bytes += len(payload)
            # Each frame is handled before the next length is read (a
            # malformed message ends the connection before what follows it).
            self._drain()

    def _drain(self) -> None:
        """
        Decode and handle the queued frames in order: a small one at once,
        a large one (at least L{THREAD_DECODE_BYTES}: header and body
        answers during a sync, whose decoding took the reactor for up to
        tens of milliseconds) on the host's decoder thread, the frames
        behind it waiting for it.  While more than a frame's limit waits,
        the peer's stream is paused.
        """
        while self._frames and not self._decoding and self.state != CLOSED:
            payload = self._frames.popleft()
            self._queued_bytes -= len(payload)
            if len(payload) >= THREAD_DECODE_BYTES:
                self._decoding = True
                self._host.decode_in_thread(payload).addCallbacks(self._decoded, self._undecodable).addErrback(
                    lambda failure: self.log.failure("handling a decoded peer message failed", failure)
                )
                break
            try:
                message = decode_message(payload)
            except MessageError as exc:
                self.offence(PeerEvent.INVALID_MESSAGE, DisconnectReason.PROTOCOL_ERROR, str(exc))
                return
            self._handle(message)
        self._flow()

    def _decoded(self, message: Message) -> None:
        """
        A large frame decoded on the decoder thread: handle it, then the frames behind it.
        """
        self._decoding = False
        if self.state == CLOSED:
            return
        self._handle(message)
        self._drain()

    def _undecodable(self, failure: Failure) -> None:
        """
        A large frame that is not a message: the peer's offence.
        """
        self._decoding = False
        failure.trap(MessageError)
        if self.state != CLOSED:
            self.offence(PeerEvent.INVALID_MESSAGE, DisconnectReason.PROTOCOL_ERROR, failure.getErrorMessage())

    def _flow(self) -> None:
        """
        Pause the peer's stream while more than a frame's limit of frames
        waits for decoding; resume it once they are handled.
        """
        if self.transport is None or self.state == CLOSED:
            return
        waiting = self._queued_bytes > self._host.peer_settings.max_frame_bytes
        if waiting and not self._paused:
            self._paused = True
            self.transport.pauseProducing()  # type: ignore[attr-defined]
        elif not waiting and self._paused:
            self._paused = False
            self.transport.resumeProducing()  # type: ignore[attr-defined]

    def _count_message(self) -> bool:
        """
        Count a message against the per-second limit; disconnect a flood.
        """
        now = self._clock.seconds()
        self._last_received = now
        window = int(now)
        if window != self._window:
            self._window, self._window_count = window, 0
        self._window_count += 1
        if self._window_count > self._host.peer_settings.messages_per_second:
            self.offence(PeerEvent.INVALID_MESSAGE, DisconnectReason.FLOOD, "too many messages per second")
            return False
        return True

    def _handle(self, message: Message) -> None:
        """
        Route one message by the state of the connection.
        """
        if isinstance(message, Disconnect):
            self.received_disconnect = message.reason
            self.log.debug(
                "peer {peer} disconnected: {reason}", peer=self.short_id, reason=DisconnectReason.describe(message.reason)
            )
            self.was_established = self.state == ESTABLISHED
            self.state = CLOSED
            self.transport.loseConnection()  # type: ignore[union-attr]
            return
        if self.state == HANDSHAKE:
            self._receive_hello(message)
        elif self.state == AUTHENTICATING:
            self._receive_auth(message)
        elif not self._host.is_allowed(self.node_id, self.address):
            self.disconnect(DisconnectReason.BAD_REPUTATION)
        elif isinstance(message, Ping):
            self.send(Pong(message.nonce))
        elif isinstance(message, Pong):
            pass
        elif isinstance(message, (BlockHeaders, BlockBodies)):
            self._receive_answer(message)
        elif isinstance(message, (Hello, Auth)):
            self.offence(PeerEvent.UNEXPECTED_MESSAGE, DisconnectReason.UNEXPECTED_MESSAGE, "a second handshake")
        else:
            self._host.peer_message(self, message)

    def _receive_hello(self, message: Message) -> None:
        """
        Check the peer's hello against this node's chain; answer its challenge.
        """
        if not isinstance(message, Hello):
            self._host.record_event(self, PeerEvent.FAILED_HANDSHAKE)
            self.disconnect(DisconnectReason.UNEXPECTED_MESSAGE)
            return
        self.hello = message
        self.node_id = message.node_id
        self.head_hash, self.head_number = message.head_hash, message.head_number
        self.total_difficulty = message.total_difficulty
        status = self._host.chain_status()
        reason = None
        if message.protocol_version != WIRE_PROTOCOL_VERSION:
            reason = DisconnectReason.INCOMPATIBLE_PROTOCOL
        elif message.network_id != status.network_id:
            reason = DisconnectReason.WRONG_NETWORK
        elif message.genesis_hash != status.genesis_hash:
            reason = DisconnectReason.WRONG_GENESIS
        if reason is not None:
            self._host.record_event(self, _HANDSHAKE_FAILURES[reason])
            self.disconnect(reason)
            return
        if message.node_id == self._host.node_key.node_id:
            self.disconnect(DisconnectReason.SELF_CONNECTION)
            return
        self.state = AUTHENTICATING
        self.send(Auth(self._host.node_key.sign_challenge(message.challenge)))

    def _receive_auth(self, message: Message) -> None:
        """
        Check the proof of the peer's key; adopt the peer.
        """
        assert self.node_id is not None
        if not isinstance(message, Auth) or not verify_challenge(message.signature, self._challenge, self.node_id):
            self._host.record_event(self, PeerEvent.FAILED_HANDSHAKE)
            self.disconnect(DisconnectReason.BAD_HANDSHAKE)
            return
        self._cancel_timer()
        self.known_blocks.add(self.head_hash)
        self._host.record_event(self, PeerEvent.SUCCESSFUL_HANDSHAKE)
        if not self._host.is_allowed(self.node_id, self.address):
            self.disconnect(DisconnectReason.BAD_REPUTATION)
            return
        self.state = ESTABLISHED
        reason = self._host.peer_ready(self)
        if reason is not None:
            self.disconnect(reason)
            return
        # Blocks adopted during the handshake went only to established
        # peers: name the head if it moved since the hello.
        status = self._host.chain_status()
        if status.head_hash != self._hello_head:
            self.send(Status(status.head_hash, status.head_number, status.total_difficulty))
        self._timer = self._clock.callLater(self._host.peer_settings.ping_interval, self._keep_alive)

    def _keep_alive(self) -> None:
        """
        Ping the peer; drop it when it has been silent for three intervals.
        """
        interval = self._host.peer_settings.ping_interval
        self._timer = None
        if self._clock.seconds() - self._last_received > 3 * interval:
            self.offence(PeerEvent.TIMEOUT_MESSAGE, DisconnectReason.REQUEST_TIMEOUT, "silent peer")
            return
        self.send(Ping(int.from_bytes(os.urandom(4), "big")))
        self._timer = self._clock.callLater(interval, self._keep_alive)

    def _cancel_timer(self) -> None:
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None

    # Sending

    def send(self, message: Message) -> None:
        """
        Send one message (nothing once the connection is closing).
        """
        if self.state != CLOSED and self.transport is not None:
            self.transport.write(encode_frame(message))

    def disconnect(self, reason: DisconnectReason) -> None:
        """
        Send a disconnect with C{reason} and close the connection.
        """
        if self.state == CLOSED:
            return
        self.send(Disconnect(int(reason)))
        self.was_established = self.state == ESTABLISHED or self.was_established
        self.state = CLOSED
        self.disconnect_reason = reason
        self.log.debug("disconnecting peer {peer}: {reason}", peer=self.short_id, reason=DisconnectReason.describe(reason))
        self.transport.loseConnection()  # type: ignore[union-attr]

    def offence(self, event: str, reason: DisconnectReason, detail: str) -> None:
        """
        Record an offence of the peer and disconnect it.
        """
        self.log.info(
            "peer {peer} at {address}: {detail}; disconnecting ({reason})",
            peer=self.short_id, address=self.address, detail=detail, reason=DisconnectReason.describe(reason),
        )
        self._host.record_event(self, event)
        self.disconnect(reason)

    def connectionLost(self, reason: Failure = Failure(ConnectionError())) -> None:  # noqa: B008
        """
        Fail the outstanding requests and tell the host.
        """
        self.was_established = self.state == ESTABLISHED or self.was_established
        self.state = CLOSED
        self.lost_reason = reason
        self._cancel_timer()
        requests, self._requests = self._requests, {}
        for waiter, timeout, _ in requests.values():
            if timeout.active():
                timeout.cancel()
            waiter.errback(PeerGoneError(f"peer {self.short_id} disconnected"))
        self._host.peer_lost(self)

    # Requests this node sends

    @property
    def free_request_slots(self) -> int:
        """
        How many more requests this node may have in flight to the peer.
        """
        return self._host.peer_settings.max_outstanding_requests - len(self._requests)

    def request_headers(
        self, origin: bytes | int, count: int, skip: int = 0, reverse: bool = False
    ) -> Deferred[tuple[Header, ...]]:
        """
        Ask for headers.

        @return: a Deferred firing with the headers, or failing with
            L{RequestTimeoutError} or L{PeerGoneError}.
        """
        return self._request(lambda request_id: GetBlockHeaders(request_id, origin, count, skip, reverse))

    def request_bodies(self, hashes: tuple[bytes, ...]) -> Deferred[tuple[Body, ...]]:
        """
        Ask for block bodies.

        @return: a Deferred firing with the bodies (possibly fewer than
            asked), or failing as L{request_headers}.
        """
        return self._request(lambda request_id: GetBlockBodies(request_id, hashes))

    def _request(self, make: Any) -> Deferred[Any]:
        if self.state != ESTABLISHED:
            return _failed(PeerGoneError(f"peer {self.short_id} is not connected"))
        request_id = self._next_request_id
        self._next_request_id += 1
        message = make(request_id)
        waiter: Deferred[Any] = Deferred()
        timeout = self._clock.callLater(self._host.peer_settings.request_timeout, self._request_timed_out, request_id)
        self._requests[request_id] = (waiter, timeout, message)
        self.send(message)
        return waiter

    def _request_timed_out(self, request_id: int) -> None:
        entry = self._requests.pop(request_id, None)
        if entry is None:
            return
        entry[0].errback(RequestTimeoutError(f"peer {self.short_id} did not answer in time"))
        self.offence(PeerEvent.TIMEOUT_MESSAGE, DisconnectReason.REQUEST_TIMEOUT, "request timed out")

    def _receive_answer(self, message: BlockHeaders | BlockBodies) -> None:
        """
        Fire the waiter of the request a message answers.
        """
        entry = self._requests.pop(message.request_id, None)
        if entry is None:
            self._host.record_event(self, PeerEvent.UNEXPECTED_MESSAGE)
            return
        waiter, timeout, request = entry
        timeout.cancel()
        if isinstance(message, BlockHeaders) and isinstance(request, GetBlockHeaders):
            if len(message.headers) > request.count:
                waiter.errback(MessageError("more headers than asked"))
                self.offence(PeerEvent.INVALID_MESSAGE, DisconnectReason.PROTOCOL_ERROR, "more headers than asked")
                return
            waiter.callback(message.headers)
        elif isinstance(message, BlockBodies) and isinstance(request, GetBlockBodies):
            if len(message.bodies) > len(request.hashes):
                waiter.errback(MessageError("more bodies than asked"))
                self.offence(PeerEvent.INVALID_MESSAGE, DisconnectReason.PROTOCOL_ERROR, "more bodies than asked")
                return
            waiter.callback(message.bodies)
        else:
            waiter.errback(MessageError("an answer of the wrong kind"))
            self.offence(PeerEvent.INVALID_MESSAGE, DisconnectReason.PROTOCOL_ERROR, "an answer of the wrong kind")

    # Requests the peer sends

    def begin_serving(self) -> bool:
        """
        Count a request of the peer that this node starts to answer;
        C{False} (and a disconnect) when the peer has too many in flight.
        """
        if self._serving >= self._host.peer_settings.max_outstanding_requests:
            self.offence(PeerEvent.INVALID_MESSAGE, DisconnectReason.FLOOD, "too many requests in flight")
            return False
        self._serving += 1
        return True

    def end_serving(self) -> None:
        """
        Count a request of the peer as answered.
        """
        self._serving -= 1


def _failed(exc: Exception) -> Deferred[Any]:
    waiter: Deferred[Any] = Deferred()
    waiter.errback(exc)
    return waiter


__all__ = [
    "THREAD_DECODE_BYTES",
    "ChainStatus",
    "KnownSet",
    "PeerHost",
    "PeerProtocol",
    "PeerSettings",
]
