"""
JSON-RPC 2.0 over WebSocket (reference §16, DESIGN §6), on autobahn.

Every text message is a JSON-RPC body, answered by the same L{Dispatcher}
as an HTTP body (single requests, batches, notifications, the same limits
and errors); answers go back in the order they are ready, each carrying its
request's id.  The connection also carries the notifications of its
subscriptions (L{nodex.rpc.subscription_methods}), which end with it.

The transport rules:

  - the upgrade request passes the HTTP server's Host and Origin rules
    (L{HTTPPolicy}), else it is refused with 403;
  - a frame or a message over C{max_message_bytes} closes the connection
    with code 1009, a text message of invalid UTF-8 with 1007; a binary
    message is read as UTF-8 JSON, as geth does (web3.py sends binary);
  - the server pings every C{ping_interval} seconds and drops a
    connection whose pong does not come within C{ping_timeout};
  - what the socket does not take waits in the transport's buffer; once
    that buffer is full (the client is not reading), at most
    C{max_queue_bytes} more are accepted, counted from the first time the
    buffer filled until it drains, and the client is then disconnected
    (with a warning that says why) rather than allowed to grow the node's
    memory; meanwhile, and while more than C{max_pending_answers} of its
    answers are being worked out, its further requests are not read;
  - at most C{max_connections} connections, and C{max_connections_per_address}
    from one address, are served; one more is refused with 503 before its
    handshake.

Why autobahn: it is the maintained WebSocket implementation for Twisted
(RFC 6455 with its test suite, frame and message limits, automatic
ping/pong, UTF-8 validation and unmasking in compiled code).
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from autobahn.twisted.websocket import WebSocketServerFactory, WebSocketServerProtocol
from autobahn.websocket.protocol import WebSocketProtocol
from autobahn.websocket.types import ConnectionDeny, ConnectionRequest
from twisted.internet.defer import Deferred, DeferredList, succeed
from twisted.internet.interfaces import IPushProducer
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from nodex.rpc.channel import send_now
from nodex.rpc.client import CURRENT_CLIENT
from nodex.rpc.dispatch import Dispatcher
from nodex.rpc.server import HTTPPolicy
from nodex.rpc.subscription_methods import CURRENT_MESSAGE, MessageScope, SubscriptionMethods

@dataclass(frozen=True)
class WebSocketSettings:
    """
    The limits of the WebSocket server.

    @ivar max_message_bytes: the largest frame and message a client may send
        (C{rpc.max_body_bytes}, as for an HTTP body).
    @ivar max_subscriptions: the most subscriptions one connection holds.
    @ivar max_queue_bytes: what may wait for a client that does not read,
        beyond the transport's own buffer, before it is disconnected.
    @ivar ping_interval: seconds between the server's pings.
    @ivar ping_timeout: seconds a pong may take.
    @ivar open_timeout: seconds the opening handshake may take.
    @ivar max_connections: the most connections served at once.
    @ivar max_connections_per_address: the most from one address.
    @ivar max_pending_answers: answers of one connection being worked out
        beyond which its further requests wait unread.
    """

    max_message_bytes: int = 5 * 1024 * 1024
    max_subscriptions: int = 128
    max_queue_bytes: int = 16 * 1024 * 1024
    ping_interval: float = 30.0
    ping_timeout: float = 30.0
    open_timeout: float = 10.0
    max_connections: int = 1024
    max_connections_per_address: int = 256
    max_pending_answers: int = 64


def text_frame(payload: bytes) -> bytes:
    """
    One unfragmented, unmasked text frame (RFC 6455 §5.2), as a server sends.

    The answers and notifications are written as such frames directly:
    autobahn's C{sendMessage} builds the same bytes through four layers
    (compression, fragmentation, statistics, a debug line whose arguments it
    formats even when debug is off), which cost about a third of a small
    request's time over WebSocket (C{benchmarks/RESULTS.md}).  autobahn
    still writes its control frames (pong, close).
    """
    length = len(payload)
    if length < 126:
        return b"\x81" + bytes((length,)) + payload
    if length < 65536:
        return b"\x81\x7e" + length.to_bytes(2, "big") + payload
    return b"\x81\x7f" + length.to_bytes(8, "big") + payload


@implementer(IPushProducer)
class _SendWatch:
    """
    Registered with the transport as a streaming producer, only to learn
    when its buffer is full (paused) and when it has drained (resumed).

    @ivar paused: the transport's buffer is over its size.
    @ivar queued: bytes written since it first filled.
    """

    paused = False
    queued = 0

    def __init__(self, changed: Callable[[], None]) -> None:
        """
        @param changed: called when the buffer fills or drains.
        """
        self._changed = changed

    def pauseProducing(self) -> None:
        """
        The transport's buffer passed its size: start counting (the
        transport says so again at every write while it is full; the count
        goes on from the first).
        """
        if not self.paused:
            self.paused = True
            self.queued = 0
            self._changed()

    def resumeProducing(self) -> None:
        """
        The transport sent everything it held.
        """
        self.paused = False
        self.queued = 0
        self._changed()

    def stopProducing(self) -> None:
        """
        The connection is gone: nothing to stop.
        """


REFUSED = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
    b"Connection: close\r\nRetry-After: 1\r\n\r\n%s"
)
"""The answer to a connection beyond the limits (before its handshake)."""


class RPCWebSocketProtocol(WebSocketServerProtocol):
    """
    One WebSocket connection: JSON-RPC messages in, answers and
    notifications out.

    @ivar subscriptions: the ids of this connection's live subscriptions.
    @ivar max_subscriptions: how many it may hold.
    """

    factory: "RPCWebSocketFactory"
    _log = Logger()

    def __init__(self) -> None:
        """
        No subscriptions yet.
        """
        super().__init__()
        self.subscriptions: set[bytes] = set()
        self.max_subscriptions = 0
        self._held: dict[bytes, list[bytes]] = {}
        self._watch = _SendWatch(self._reading_changed)
        self._ended = False
        self._refused = False
        self._address = ""
        self._pending_answers = 0
        self._reading_paused = False
        self._outbox: list[bytes] = []
        self._outbox_bytes = 0
        self._flush_call: Any = None

    # Opening

    def onConnect(self, request: ConnectionRequest) -> None:
        """
        Apply the HTTP server's Host and Origin rules to the upgrade request.

        @raise ConnectionDeny: 403 when either is refused.
        """
        policy = self.factory.policy
        host = request.headers.get("host")
        if not policy.host_allowed(None if host is None else host.encode("latin-1")):
            raise ConnectionDeny(403, "Host not allowed")
        origin = request.headers.get("origin")
        if origin is not None and not policy.origin_allowed(origin.encode("latin-1")):
            raise ConnectionDeny(403, "Origin not allowed")
        return None

    def connectionMade(self) -> None:
        """
        Count the connection from its first byte, so that a stopping node
        also drops those still in their opening handshake; refuse it with
        503 when the server holds its limit of connections (in all, or
        from this address).
        """
        super().connectionMade()
        self.max_subscriptions = self.factory.settings.max_subscriptions
        self._address = getattr(self.transport.getPeer(), "host", "")
        refusal = self.factory.admit(self._address)
        if refusal is not None:
            self._refused = True
            body = refusal.encode() + b"\n"
            self.transport.write(REFUSED % (len(body), body))
            self.transport.loseConnection()
            return
        self.factory.opened(self)

    def dataReceived(self, data: bytes) -> None:
        """
        Read a refused connection's bytes no further.
        """
        if not self._refused:
            super().dataReceived(data)

    def client_identity(self) -> str:
        """
        The client, for the methods' quotas (L{nodex.rpc.client}): this connection.
        """
        return f"ws:{self.peer}"

    def onOpen(self) -> None:
        """
        Watch the transport's buffer.
        """
        self.transport.registerProducer(self._watch, True)

    # Messages in

    def onMessageEnd(self) -> None:
        """
        Hand a whole message to L{onMessage}; unlike autobahn's own, without
        also firing its observable C{message} event (a Deferred and a
        future per message, which nobody here listens to).
        """
        payload = b"".join(self.message_data)
        self.message_data = None
        if not self.failedByMe:
            self.onMessage(payload, self.message_is_binary)

    def onMessage(self, payload: bytes, isBinary: bool) -> None:
        """
        Answer one JSON-RPC body, through the dispatcher, with this
        connection as the context of its subscription methods.

        Binary messages are read as UTF-8 JSON too, as geth does: web3.py's
        WebSocket provider sends its requests in binary frames.  A binary
        message that is not UTF-8 JSON gets the parse error (-32700).
        """
        scope = MessageScope(self)
        token = CURRENT_MESSAGE.set(scope)
        client = CURRENT_CLIENT.set(self)
        try:
            answer = self.factory.dispatcher.answer(payload)
        finally:
            CURRENT_CLIENT.reset(client)
            CURRENT_MESSAGE.reset(token)
        if isinstance(answer, Deferred):
            self._pending_answers += 1
            self._reading_changed()
            answer.addCallback(self._answered, scope, True).addErrback(self._failed)
        else:
            self._answered(answer, scope)

    def _answered(self, body: bytes | None, scope: MessageScope, awaited: bool = False) -> None:
        """
        Send an answer, then the notifications its new subscriptions held.
        """
        if awaited:
            self._pending_answers -= 1
            self._reading_changed()
        if body is not None:
            self._send(body)
        for created in scope.created:
            for message in self._held.pop(created, ()):
                self._send(message)

    def _reading_changed(self) -> None:
        """
        Read the client's requests only while its answers can leave: not
        while the transport's buffer is full, nor while more than
        C{max_pending_answers} of its answers are being worked out.
        """
        if self._ended or self.transport is None:
            return
        wanted = self._watch.paused or self._pending_answers > self.factory.settings.max_pending_answers
        if wanted and not self._reading_paused:
            self._reading_paused = True
            self.transport.pauseProducing()
        elif not wanted and self._reading_paused:
            self._reading_paused = False
            self.transport.resumeProducing()

    def _failed(self, failure: Failure) -> None:
        """
        The dispatcher answers every error itself: this is a bug; log it.
        """
        self._log.failure("answering a JSON-RPC message over WebSocket", failure)

    # Messages out

    def hold(self, subscription_id: bytes) -> None:
        """
        Keep the notifications of a new subscription until the answer that
        announces its id is sent.
        """
        self._held[subscription_id] = []

    def push(self, subscription_id: bytes, message: bytes) -> None:
        """
        Send one notification, or keep it while its subscription is
        unannounced.  Notifications wait in an outbox until the end of the
        reactor's turn and leave in one write (a block's logs for many
        subscriptions would otherwise cost a system call each).
        """
        held = self._held.get(subscription_id)
        if held is not None:
            held.append(message)
            return
        if self.state != WebSocketProtocol.STATE_OPEN:
            return
        framed = text_frame(message)
        self._outbox.append(framed)
        self._outbox_bytes += len(framed)
        # The outbox waits too: it counts toward the limit, with what the
        # full transport holds beyond its buffer.
        watch = self._watch
        if self._outbox_bytes + (watch.queued if watch.paused else 0) > self.factory.settings.max_queue_bytes:
            self._overflowed()
            return
        if self._flush_call is None:
            self._flush_call = self.factory.reactor.callLater(0, self._flush)

    def _flush(self) -> None:
        """
        Send the notifications in the outbox in one write (L{send_now}: on
        the socket now when nothing waits before them).
        """
        self._flush_call = None
        if not self._outbox:
            return
        data = b"".join(self._outbox)
        self._outbox = []
        self._outbox_bytes = 0
        if self.state != WebSocketProtocol.STATE_OPEN:
            return
        if self._counted(len(data)):
            send_now(self.transport, data)

    def _send(self, data: bytes) -> None:
        """
        Send a text message (after the notifications waiting before it),
        unless the connection is closing; disconnect a client that lets
        more than C{max_queue_bytes} wait.
        """
        if self.state != WebSocketProtocol.STATE_OPEN:
            return
        if self._outbox:
            self._flush()
            if self.state != WebSocketProtocol.STATE_OPEN:
                return
        framed = text_frame(data)
        if self._counted(len(framed)):
            self.transport.write(framed)

    def _counted(self, size: int) -> bool:
        """
        Count C{size} more bytes to send while the transport's buffer is
        full; past C{max_queue_bytes}, disconnect.

        @return: whether they may be written.
        """
        watch = self._watch
        if watch.paused:
            watch.queued += size
            if watch.queued > self.factory.settings.max_queue_bytes:
                self._overflowed()
                return False
        return True

    def _overflowed(self) -> None:
        """
        The client lets more than C{max_queue_bytes} wait: say so in the
        log, end its subscriptions and drop it.
        """
        self._log.warn(
            "WebSocket client {peer} does not read what it is sent: more than {limit} bytes wait for it"
            " beyond the socket's buffer; disconnecting",
            peer=self.peer,
            limit=self.factory.settings.max_queue_bytes,
        )
        self._end()
        self.dropConnection(abort=True)

    # Closing

    def connectionLost(self, reason: Failure) -> None:
        """
        End the connection's subscriptions with it.
        """
        try:
            super().connectionLost(reason)
        finally:
            # autobahn leaves this timer behind when the peer closes the TCP
            # connection before answering the server's close frame.
            if self.closeHandshakeTimeoutCall is not None:
                self.closeHandshakeTimeoutCall.cancel()
                self.closeHandshakeTimeoutCall = None
            self._end()

    def _end(self) -> None:
        """
        End every subscription and forget the connection (once).
        """
        if self._ended or self._refused:
            return
        self._ended = True
        self._held.clear()
        self._outbox = []
        self._outbox_bytes = 0
        if self._flush_call is not None and self._flush_call.active():
            self._flush_call.cancel()
        self._flush_call = None
        subscriptions = self.factory.subscriptions
        if subscriptions is not None:
            subscriptions.end_all(self)
        self.factory.closed(self)


class RPCWebSocketFactory(WebSocketServerFactory):
    """
    The WebSocket server of the JSON-RPC interface.

    @ivar dispatcher: answers the messages (the HTTP server's).
    @ivar policy: the Host and Origin rules (the HTTP server's).
    @ivar subscriptions: the subscription methods, whose subscriptions end
        with their connections (L{None}: the node has none).
    """

    protocol = RPCWebSocketProtocol
    _log = Logger()

    def __init__(
        self,
        dispatcher: Dispatcher,
        policy: HTTPPolicy,
        subscriptions: SubscriptionMethods | None,
        settings: WebSocketSettings = WebSocketSettings(),
        reactor: Any = None,
    ) -> None:
        """
        @param reactor: runs the ping timers (the global reactor if L{None}).
        """
        super().__init__(server="nodex", reactor=reactor)
        self.dispatcher = dispatcher
        self.policy = policy
        self.subscriptions = subscriptions
        self.settings = settings
        self._open: dict[RPCWebSocketProtocol, Deferred[None]] = {}
        self._per_address: dict[str, int] = {}
        self.setProtocolOptions(
            maxFramePayloadSize=settings.max_message_bytes,
            maxMessagePayloadSize=settings.max_message_bytes,
            autoPingInterval=settings.ping_interval,
            autoPingTimeout=settings.ping_timeout,
            openHandshakeTimeout=settings.open_timeout,
            utf8validateIncoming=True,
            # Close with a code (1007, 1009) rather than drop the socket, so
            # that the client learns why.
            failByDrop=False,
            webStatus=False,
            perMessageCompressionAccept=lambda offers: None,
        )

    def admit(self, address: str) -> str | None:
        """
        Whether a new connection from C{address} may be served.

        @return: L{None}, or why not (the 503 answer's text).
        """
        settings = self.settings
        if len(self._open) >= settings.max_connections:
            self._log.warn(
                "refusing a WebSocket connection from {address}: {limit} connections are open",
                address=address, limit=settings.max_connections,
            )
            return f"too many connections: the server holds its limit of {settings.max_connections}"
        if self._per_address.get(address, 0) >= settings.max_connections_per_address:
            return (
                f"too many connections from {address}: the server holds its limit of"
                f" {settings.max_connections_per_address} per address"
            )
        return None

    def opened(self, connection: RPCWebSocketProtocol) -> None:
        """
        Count a new connection.
        """
        self._open[connection] = Deferred()
        address = connection._address
        self._per_address[address] = self._per_address.get(address, 0) + 1

    def closed(self, connection: RPCWebSocketProtocol) -> None:
        """
        Forget a closed connection.
        """
        waiter = self._open.pop(connection, None)
        if waiter is not None:
            address = connection._address
            left = self._per_address[address] - 1
            if left:
                self._per_address[address] = left
            else:
                del self._per_address[address]
            waiter.callback(None)

    def connection_count(self) -> int:
        """
        How many connections are open.
        """
        return len(self._open)

    def close_all(self) -> Deferred[None]:
        """
        Close every open connection (the node is stopping).

        @return: a Deferred firing once they are all gone.
        """
        if not self._open:
            return succeed(None)
        waiters = list(self._open.values())
        for connection in list(self._open):
            connection.dropConnection(abort=True)
        return DeferredList(waiters).addCallback(lambda _: None)


__all__ = ["RPCWebSocketFactory", "RPCWebSocketProtocol", "WebSocketSettings", "text_frame"]
