"""
One connection to a peer: frames, the handshake, limits, the inbound
queue and its backpressure, keep-alive and the requests this node sends
(C{docs/p2p.md}).

The protocol knows the wire; what the messages mean for the node is the
business of its L{PeerHost} (the peer network service), to which it hands
every message once the handshake is done.  Messages are routed by tables
from message code to handler, one table per state of the connection.
"""

import os
from collections import deque
from collections.abc import Callable
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.internet.protocol import Protocol
from twisted.logger import Logger
from twisted.python.failure import Failure

from nodex.api.peers import PeerEvent
from nodex.p2p.messages import WIRE_PROTOCOL_VERSION
from nodex.p2p.errors import DisconnectReason
from nodex.p2p.framing import HANDSHAKE_FRAME_BYTES, Framing, LengthPrefixFraming
from nodex.p2p.host import PeerHost
from nodex.p2p.identity import verify_challenge
from nodex.p2p.inbound import KnownSet, WorkLane
from nodex.p2p.messages import (
    CHALLENGE_BYTES,
    Auth,
    Disconnect,
    Hello,
    Message,
    MessageCode,
    Ping,
    Pong,
    Status,
    encode_message,
)
from nodex.p2p.queue import THREAD_DECODE_BYTES, InboundQueue
from nodex.p2p.requests import PeerRequests
from nodex.p2p.secure import KeyExchangeError, SecureFraming


HANDSHAKE, AUTHENTICATING, ESTABLISHED, CLOSED = "handshake", "authenticating", "established", "closed"

SIDE_BLOCK_QUOTA = 16
"""Side blocks (off the canonical chain) a peer may send within L{SIDE_BLOCK_WINDOW}."""

SIDE_BLOCK_WINDOW = 600.0
"""Seconds a side block counts against its sender's quota."""

_HANDSHAKE_FAILURES = {
    DisconnectReason.INCOMPATIBLE_PROTOCOL: PeerEvent.INCOMPATIBLE_PROTOCOL,
    DisconnectReason.WRONG_NETWORK: PeerEvent.INVALID_NETWORK,
    DisconnectReason.WRONG_GENESIS: PeerEvent.UNEXPECTED_GENESIS,
}


class PeerProtocol(InboundQueue, PeerRequests, Protocol):
    """
    The wire protocol over one TCP (or TLS) connection.

    @ivar node_id: the peer's node id, once its hello arrived (proven once
        the handshake is done: L{proven_node_id}).
    @ivar hello: the peer's hello.
    @ivar head_hash: the peer's best block as it claims it (hello, status,
        announcements): a claim, used to choose whom to ask, never to
        report how far the network is.
    @ivar head_number: the number of the claimed best block.
    @ivar total_difficulty: the claimed total difficulty.
    @ivar shown_number: the highest block number the peer has shown: the
        last of a chain of headers it delivered that links to this node's
        chain, or a block of it that this node imported.
    @ivar claim_failures: how many sync runs in a row ended without the
        peer backing its claim.
    @ivar known_blocks: the block hashes the peer is known to have.
    @ivar known_transactions: the transaction hashes the peer is known to have.
    @ivar invalid_transactions: transactions that can never be valid that it sent.
    @ivar repeated_messages: messages that repeated what it sent before.
    @ivar offended: whether this node disconnected it for an offence.
    @ivar side_blocks: when its last side blocks arrived (the quota's window).
    @ivar lane: where its blocks wait their turn to be imported.
    @ivar transaction_lane: where its transaction messages wait their turn
        for the pool (apart from the blocks, so that a backlog of
        transactions never delays a block).
    @ivar framing: how its byte stream is cut into frames.
    @ivar dialed_host: the host name this node dialed (outbound), else L{None}.
    @ivar dial_target: the host and port this node dialed (outbound), else L{None}.
    @ivar connected_at: when the connection was made (the clock's seconds).
    @ivar disconnect_reason: why the connection ended, when this side ended it.
    @ivar received_disconnect: the reason code of the peer's disconnect, if it sent one.
    @ivar was_established: whether the handshake had succeeded before the connection ended.
    @ivar lost_reason: why the transport closed, once it has.
    @ivar latency: seconds of the last round trip: from this node's hello to
        the peer's auth, then from each ping to its pong (L{None} before).
    """

    log = Logger()

    def __init__(
        self,
        host: PeerHost,
        clock: IReactorTime,
        inbound: bool,
        dialed_host: str | None = None,
        entropy: Callable[[int], bytes] = os.urandom,
    ) -> None:
        """
        @param inbound: the peer connected to this node.
        @param dialed_host: the name this node dialed, for outbound connections.
        @param entropy: returns that many random bytes (the challenge, ping nonces).
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
        self.shown_number = 0
        self.claim_failures = 0
        self.known_blocks = KnownSet(1024)
        self.known_transactions = KnownSet(8192)
        self.invalid_transactions = 0
        self.repeated_messages = 0
        self.offended = False
        self.side_blocks: deque[float] = deque()
        self.lane = WorkLane()
        self.transaction_lane = WorkLane()
        self.framing: Framing = (
            SecureFraming(initiator=not inbound, private_key=entropy(32)) if host.peer_settings.encryption
            else LengthPrefixFraming(HANDSHAKE_FRAME_BYTES)
        )
        self._hello_sent = False
        self.connected_at = 0.0
        self.disconnect_reason: DisconnectReason | None = None
        self.was_established = False
        self.lost_reason: Failure | None = None
        self.received_disconnect: int | None = None
        self._entropy = entropy
        self._challenge = entropy(CHALLENGE_BYTES)
        self.init_queue()
        self.init_requests()
        self._timer: IDelayedCall | None = None
        self._hello_head = b""
        self._proven = False
        self._hello_sent_at = 0.0
        self._ping: tuple[int, float] | None = None
        self.latency: float | None = None
        self._address: str | None = None

    # Addresses

    @property
    def address(self) -> str:
        """
        The peer's IP address (read from the transport once: it is asked
        before every message, and a connection's peer does not change).
        """
        address = self._address
        if address is None:
            address = self._address = str(getattr(self.transport.getPeer(), "host", ""))  # type: ignore[union-attr]
        return address

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
    def proven_node_id(self) -> bytes | None:
        """
        The node id once the handshake has proved that the peer holds its
        key; L{None} before (a hello's node id is only a claim).
        """
        return self.node_id if self._proven else None

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
        self._last_received = self._last_sent = self.connected_at = self._clock.seconds()
        if not self._host.is_allowed(None, self.address):
            # Over the encrypted transport nothing can be said before the
            # key exchange: the connection closes without a word, and
            # without this node spending an ECDH on it.
            self.disconnect(DisconnectReason.BAD_REPUTATION)
            return
        if self.framing.preamble:
            self.transport.write(self.framing.preamble)  # type: ignore[union-attr]
        else:
            self._send_hello()
        self._timer = self._clock.callLater(self._host.peer_settings.handshake_timeout, self._handshake_timed_out)

    def _send_hello(self) -> None:
        """
        Send this node's hello: as soon as the connection is made, or, over
        the encrypted transport, once the session keys are known.
        """
        self._hello_sent = True
        self._hello_sent_at = self._clock.seconds()
        status = self._host.chain_status()
        self._hello_head = status.head_hash
        self.send(
            Hello(
                WIRE_PROTOCOL_VERSION, status.network_id, status.genesis_hash, status.head_hash,
                status.head_number, status.total_difficulty, self._host.node_key.node_id,
                self._challenge, status.listen_port,
            )
        )

    def _handshake_timed_out(self) -> None:
        self._timer = None
        self._handshake_failure(PeerEvent.FAILED_HANDSHAKE, DisconnectReason.HANDSHAKE_TIMEOUT, "handshake timed out")

    def _handshake_failure(self, event: str, reason: DisconnectReason, why: str) -> None:
        """
        A handshake that failed by the peer's doing: recorded against its
        address, counted by the host, and the connection ended.
        """
        self._host.record_event(self, event)
        self._host.handshake_failed(self, why)
        self.disconnect(reason)

    def dataReceived(self, data: bytes) -> None:
        """
        Take bytes of the stream; cut and handle the frames the inbound queue has room for.
        """
        if self.state == CLOSED:
            return
        self.framing.feed(data)
        if not self._hello_sent:
            try:
                if not self.framing.exchange():
                    return
            except KeyExchangeError as exc:
                self._handshake_failure(PeerEvent.FAILED_HANDSHAKE, DisconnectReason.BAD_HANDSHAKE, str(exc))
                return
            self._send_hello()
        self._pump()

    @property
    def session(self) -> bytes:
        """
        The id of the encrypted session (what the handshake's AUTH signs), empty over a plaintext connection.
        """
        return self.framing.session or b""

    # Routing

    def _handle(self, message: Message) -> "Deferred[Any] | None":
        """
        Route one message by the table of the connection's state; in an
        established connection, what the table lacks goes to the host.
        """
        code = message.code
        if code == _DISCONNECT:
            self._receive_disconnect(message)  # type: ignore[arg-type]
            return None
        state = self.state
        if state != ESTABLISHED:
            handler = _HANDLERS[state].get(code)
            if handler is None:
                self._unexpected_before_handshake(message)
            else:
                handler(self, message)
            return None
        if not self._host.is_allowed(self.node_id, self.address):
            self.disconnect(DisconnectReason.BAD_REPUTATION)
            return None
        handler = _ESTABLISHED_HANDLERS.get(code)
        if handler is not None:
            handler(self, message)
            return None
        return self._host.peer_message(self, message)

    def _receive_disconnect(self, message: Disconnect) -> None:
        self.received_disconnect = message.reason
        self.log.debug(
            "peer {peer} disconnected: {reason}", peer=self.short_id, reason=DisconnectReason.describe(message.reason)
        )
        self.was_established = self.state == ESTABLISHED or self.was_established
        self._close()
        self.transport.loseConnection()  # type: ignore[union-attr]

    def _unexpected_before_handshake(self, message: Message) -> None:
        """
        A message out of the handshake's order (C{docs/reputation.md}: an
        C{UNEXPECTED_MESSAGE} of the address, and a failed handshake).
        """
        self._handshake_failure(
            PeerEvent.UNEXPECTED_MESSAGE, DisconnectReason.UNEXPECTED_MESSAGE,
            f"{message.code.name} before the handshake",
        )

    def _receive_hello(self, message: Hello) -> None:
        """
        Check the peer's hello against this node's chain; answer its challenge.
        """
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
        self.send(Auth(self._host.node_key.sign_challenge(message.challenge, self.session)))

    def _receive_auth(self, message: Auth) -> None:
        """
        Check the proof of the peer's key; adopt the peer.
        """
        assert self.node_id is not None
        if not verify_challenge(message.signature, self._challenge, self.node_id, self.session):
            self._handshake_failure(PeerEvent.FAILED_HANDSHAKE, DisconnectReason.BAD_HANDSHAKE, "bad proof of its key")
            return
        self._cancel_timer()
        self._proven = True
        self.latency = self._clock.seconds() - self._hello_sent_at
        self.known_blocks.add(self.head_hash)
        self.framing.limit = self._host.peer_settings.max_frame_bytes
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

    def _receive_ping(self, message: Ping) -> None:
        self.send(Pong(message.nonce))

    def _receive_pong(self, message: Pong) -> None:
        """
        Its arrival counted as a sign of life; the answer to this node's
        last ping gives the latency.
        """
        if self._ping is not None and self._ping[0] == message.nonce:
            self.latency = self._clock.seconds() - self._ping[1]
            self._ping = None

    def _second_handshake(self, message: Message) -> None:
        self.offence(PeerEvent.UNEXPECTED_MESSAGE, DisconnectReason.UNEXPECTED_MESSAGE, "a second handshake")

    def _keep_alive(self) -> None:
        """
        Keep-alive (C{docs/p2p.md}, "PING/PONG"): only the side that dialed
        pings, and only a connection idle one way or the other for an
        interval; both sides drop a peer from which nothing arrived for
        three intervals (not while this node has stopped reading from it).
        """
        interval = self._host.peer_settings.ping_interval
        self._timer = None
        now = self._clock.seconds()
        silent = now - self._last_received
        if not self._paused and silent > 3 * interval:
            self.offence(PeerEvent.TIMEOUT_MESSAGE, DisconnectReason.REQUEST_TIMEOUT, "silent peer")
            return
        if self.inbound:
            # The dialer pings; this side answers and watches the silence.
            self._timer = self._clock.callLater(interval, self._keep_alive)
            return
        idle = max(silent, now - self._last_sent)
        if idle < interval:
            # Messages went both ways within the interval: the connection
            # is alive without a ping; look again an interval after the
            # older of the two.
            self._timer = self._clock.callLater(interval - idle, self._keep_alive)
            return
        nonce = int.from_bytes(self._entropy(4), "big")
        self._ping = (nonce, now)
        self.send(Ping(nonce))
        self._timer = self._clock.callLater(interval, self._keep_alive)

    def _cancel_timer(self) -> None:
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None

    # Events

    def record(self, event: str) -> None:
        """
        Record a L{PeerEvent} against the peer (no disconnect).
        """
        self._host.record_event(self, event)

    def repeated(self, what: str) -> None:
        """
        The peer sent again what it sent before: a C{REPEATED_MESSAGE},
        dropped; past L{PeerSettings.max_repeated_messages} in one
        connection, a flood.
        """
        self.repeated_messages += 1
        self.record(PeerEvent.REPEATED_MESSAGE)
        if self.repeated_messages > self._host.peer_settings.max_repeated_messages:
            self.offence(PeerEvent.INVALID_MESSAGE, DisconnectReason.FLOOD, f"too many repeated messages ({what})")

    def invalid_transaction(self, why: str) -> None:
        """
        The peer sent a transaction that can never be valid: an
        C{INVALID_TRANSACTION}; past L{PeerSettings.max_invalid_transactions}
        in one connection, an offence.
        """
        self.invalid_transactions += 1
        self.record(PeerEvent.INVALID_TRANSACTION)
        if self.invalid_transactions > self._host.peer_settings.max_invalid_transactions:
            self.offence(
                PeerEvent.INVALID_MESSAGE, DisconnectReason.INVALID_TRANSACTIONS,
                f"{self.invalid_transactions} invalid transactions (the last: {why})",
            )

    def side_block(self, what: str) -> bool:
        """
        The peer sent a block off this node's canonical chain: within
        C{SIDE_BLOCK_QUOTA} per C{SIDE_BLOCK_WINDOW} seconds it may; past
        that, an offence.

        @return: whether it was within the quota.
        """
        now = self._clock.seconds()
        while self.side_blocks and self.side_blocks[0] <= now - SIDE_BLOCK_WINDOW:
            self.side_blocks.popleft()
        self.side_blocks.append(now)
        if len(self.side_blocks) > SIDE_BLOCK_QUOTA:
            self.offence(PeerEvent.INVALID_MESSAGE, DisconnectReason.FLOOD, f"more than {SIDE_BLOCK_QUOTA} side blocks ({what})")
            return False
        return True

    # Sending

    def send(self, message: Message) -> None:
        """
        Send one message (nothing once the connection is closing).
        """
        if self.state != CLOSED and self.transport is not None and self.framing.session is not None:
            self._last_sent = self._clock.seconds()
            self.transport.write(self.framing.frame(encode_message(message)))

    def disconnect(self, reason: DisconnectReason) -> None:
        """
        Send a disconnect with C{reason} and close the connection.
        """
        if self.state == CLOSED:
            return
        self.send(Disconnect(int(reason)))
        self.was_established = self.state == ESTABLISHED or self.was_established
        self._close()
        self.disconnect_reason = reason
        self.log.debug("disconnecting peer {peer}: {reason}", peer=self.short_id, reason=DisconnectReason.describe(reason))
        self.transport.loseConnection()  # type: ignore[union-attr]

    def _close(self) -> None:
        self.state = CLOSED
        self.lane.close()
        self.transaction_lane.close()

    def offence(self, event: str, reason: DisconnectReason, detail: str) -> None:
        """
        Record an offence of the peer and disconnect it.
        """
        if self.state == CLOSED:
            return
        self.offended = True
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
        self._close()
        self.lost_reason = reason
        self._cancel_timer()
        self.fail_requests()
        self._host.peer_lost(self)


_Handler = Callable[[PeerProtocol, Any], None]

_HANDLERS: dict[str, dict[int, _Handler]] = {
    HANDSHAKE: {MessageCode.HELLO: PeerProtocol._receive_hello},
    AUTHENTICATING: {MessageCode.AUTH: PeerProtocol._receive_auth},
    ESTABLISHED: {
        MessageCode.PING: PeerProtocol._receive_ping,
        MessageCode.PONG: PeerProtocol._receive_pong,
        MessageCode.BLOCK_HEADERS: PeerProtocol._receive_answer,
        MessageCode.BLOCK_BODIES: PeerProtocol._receive_answer,
        MessageCode.HELLO: PeerProtocol._second_handshake,
        MessageCode.AUTH: PeerProtocol._second_handshake,
    },
    CLOSED: {},
}
"""
The messages the connection itself handles, by state; in an established
connection every other message goes to the host's table
(L{nodex.p2p.network.PeerNetwork}).  Before the handshake is done, a
message a state's table lacks is out of order.
"""

_ESTABLISHED_HANDLERS = _HANDLERS[ESTABLISHED]
_DISCONNECT = MessageCode.DISCONNECT


__all__ = ["SIDE_BLOCK_QUOTA", "SIDE_BLOCK_WINDOW", "THREAD_DECODE_BYTES", "PeerProtocol"]
