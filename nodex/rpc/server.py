"""
The HTTP side of the JSON-RPC server, on Klein: C{POST /} with the transport
checks of DESIGN §6 (content type, body size, Host and Origin allow-lists),
CORS preflight, and everything else refused.

Every JSON-RPC answer, error or not, is HTTP 200; only transport problems
get another status (DESIGN §1): 405 wrong method, 415 wrong content type,
413 body too large, 403 Host or Origin not allowed.
"""

import ipaddress
from collections import OrderedDict
from dataclasses import dataclass
from io import BytesIO
from typing import Any

from klein import Klein
from twisted.internet.defer import Deferred
from twisted.logger import Logger
from twisted.python.failure import Failure
from twisted.web.iweb import IRequest
from twisted.web.resource import IResource, Resource
from twisted.web.server import NOT_DONE_YET, Request, Site

from nodex.rpc.channel import RPCChannel
from nodex.rpc.client import CURRENT_CLIENT
from nodex.rpc.dispatch import Dispatcher

JSON_TYPES = frozenset({b"application/json", b"application/json-rpc"})
"""The accepted request media types (parameters after C{;} are ignored)."""

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "127.0.0.1", "::1"})
"""Host names always accepted (literal IP addresses are accepted too)."""


@dataclass(frozen=True)
class HTTPPolicy:
    """
    The transport rules of the server.

    @ivar max_body_bytes: the largest request body (413 beyond).
    @ivar hosts: further Host names accepted (C{*} accepts any); loopback
        names and literal IP addresses are always accepted, since DNS
        rebinding needs a host name.
    @ivar cors_origins: origins whose browser pages may call the node
        (C{*} allows any); a request with another C{Origin} gets 403.
    """

    max_body_bytes: int = 5 * 1024 * 1024
    hosts: frozenset[str] = frozenset()
    cors_origins: frozenset[str] = frozenset()

    def host_allowed(self, host_header: bytes | None) -> bool:
        """
        Whether a request with this C{Host} header may be served.
        """
        if host_header is None or "*" in self.hosts:
            return True
        host = _host_name(host_header.decode("latin-1")).lower()
        if host in LOOPBACK_NAMES or host in self.hosts:
            return True
        return _is_ip_literal(host)

    def origin_allowed(self, origin: bytes) -> bool:
        """
        Whether a browser page from C{origin} may call the node.
        """
        text = origin.decode("latin-1").rstrip("/").lower()
        return "*" in self.cors_origins or text in self.cors_origins


def _is_ip_literal(host: str) -> bool:
    """
    Whether C{host} is an IPv4 or IPv6 address rather than a name (DNS
    rebinding, which the Host check guards against, needs a name).
    """
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _host_name(host: str) -> str:
    """
    The name part of a Host header: without the port, without IPv6 brackets.
    """
    if host.startswith("["):
        return host[1:].partition("]")[0]
    if host.count(":") == 1:
        return host.partition(":")[0]
    return host


class BoundedRequest(Request):
    """
    A request that keeps at most the site's C{max_body_bytes} of its body,
    so that an oversized body costs no memory; the handler answers 413.

    @ivar body_too_large: the body passed the limit.
    """

    body_too_large = False
    _received = 0

    def _limit(self) -> int:
        """
        The body limit of the site (unbounded on a site that has none).
        """
        limit: int | None = getattr(self.channel.site, "max_body_bytes", None)
        return limit if limit is not None else 2**63

    def gotLength(self, length: int | None) -> None:
        """
        Refuse to buffer a body whose declared length is over the limit.
        """
        if length is not None and length > self._limit():
            self.body_too_large = True
            self.content = BytesIO()
            return
        super().gotLength(length)

    def handleContentChunk(self, data: bytes) -> None:
        """
        Store a chunk of the body while it stays within the limit.
        """
        self._received += len(data)
        if self.body_too_large:
            return
        if self._received > self._limit():
            self.body_too_large = True
            self.content = BytesIO()
            return
        super().handleContentChunk(data)


@dataclass(frozen=True)
class ConnectionLimits:
    """
    What the HTTP server gives its connections.

    @ivar max_connections: the most connections served at once.
    @ivar max_connections_per_address: the most from one address.
    @ivar read_timeout: seconds from a request's first byte by which its
        head and body must have arrived (L{None}: no limit).
    @ivar idle_timeout: seconds a connection may stay silent between
        requests (and before its first).
    """

    max_connections: int = 1024
    max_connections_per_address: int = 256
    read_timeout: float | None = 30.0
    idle_timeout: float = 120.0


class RPCSite(Site):
    """
    The site of the RPC server: requests bounded by L{BoundedRequest}, no
    access log line per request (the dispatcher logs each call at debug
    level instead; formatting an access line costs about a tenth of a
    request's time), and channels that answer simple requests directly
    (L{RPCChannel}) when the site has an C{rpc_server}.

    It also bounds its connections (L{ConnectionLimits}): at the limit, in
    all or from one address, a new connection takes the place of the
    connection that has been idle longest (between requests: its client
    reconnects when it needs to), or, when none is idle, is refused with
    503.  A connection that sends nothing is idle.
    """

    requestFactory = BoundedRequest
    protocol = RPCChannel
    _log = Logger()

    def __init__(
        self,
        resource: IResource,
        max_body_bytes: int,
        rpc_server: "RPCServer | None" = None,
        limits: ConnectionLimits = ConnectionLimits(),
        reactor: Any = None,
    ) -> None:
        """
        @param resource: the root resource.
        @param max_body_bytes: the largest request body accepted.
        @param rpc_server: the server whose simple requests the channels
            answer directly; L{None}: every request goes through C{resource}.
        @param limits: what the connections are given.
        @param reactor: runs the connections' timers (the global reactor if L{None}).
        """
        # JSON-RPC bodies are never HTML form submissions; looking for one
        # parses the Content-Type with the email package, which cost about a
        # tenth of an eth_chainId round trip.
        super().__init__(resource, parsePOSTFormSubmission=False, timeout=limits.idle_timeout, reactor=reactor)
        self.max_body_bytes = max_body_bytes
        self.rpc_server = rpc_server
        self.limits = limits
        self.read_timeout = limits.read_timeout
        self._open: dict[Any, str] = {}
        self._per_address: dict[str, int] = {}
        # Idle connections, the longest idle first.
        self._idle: OrderedDict[Any, str] = OrderedDict()

    def log(self, request: Request) -> None:
        """
        Write no access log.
        """

    def connection_count(self) -> int:
        """
        How many connections are served.
        """
        return len(self._open)

    def admit(self, channel: Any) -> str | None:
        """
        Serve a new connection, closing an idle one if the limits need it.

        @return: L{None}, or why it is refused (the 503 answer's text).
        """
        address = getattr(channel.transport.getPeer(), "host", "")
        limits = self.limits
        if self._per_address.get(address, 0) >= limits.max_connections_per_address:
            victim = next((idle for idle, where in self._idle.items() if where == address), None)
            if victim is None:
                return (
                    f"too many connections from {address}: the server holds its limit of"
                    f" {limits.max_connections_per_address} per address, none of them idle"
                )
            self._evict(victim)
        if len(self._open) >= limits.max_connections:
            if not self._idle:
                self._log.warn(
                    "refusing an HTTP connection from {address}: {limit} connections are busy",
                    address=address, limit=limits.max_connections,
                )
                return f"too many connections: the server holds its limit of {limits.max_connections}, none of them idle"
            self._evict(next(iter(self._idle)))
        self._open[channel] = address
        self._per_address[address] = self._per_address.get(address, 0) + 1
        self._idle[channel] = address
        return None

    def _evict(self, channel: Any) -> None:
        """
        Close an idle connection to make room (it no longer counts from now).
        """
        self.release(channel)
        channel._admitted = False
        channel.transport.loseConnection()

    def release(self, channel: Any) -> None:
        """
        Forget a closed connection.
        """
        address = self._open.pop(channel, None)
        if address is None:
            return
        self._idle.pop(channel, None)
        left = self._per_address[address] - 1
        if left:
            self._per_address[address] = left
        else:
            del self._per_address[address]

    def busy(self, channel: Any) -> None:
        """
        A connection started a request: it may not be closed to make room.
        """
        self._idle.pop(channel, None)

    def idle(self, channel: Any) -> None:
        """
        A connection has been answered and waits for its next request.
        """
        address = self._open.get(channel)
        if address is not None:
            self._idle[channel] = address
            self._idle.move_to_end(channel)


class RPCServer:
    """
    The JSON-RPC endpoint: a Klein application whose C{POST /} route hands
    bodies to the L{Dispatcher}.
    """

    app = Klein()

    def __init__(self, dispatcher: Dispatcher, policy: HTTPPolicy) -> None:
        """
        @param dispatcher: answers JSON-RPC bodies.
        @param policy: the transport rules.
        """
        self.dispatcher = dispatcher
        self._policy = policy
        self._hosts_allowed: set[bytes] = set()

    @property
    def policy(self) -> HTTPPolicy:
        """
        The transport rules (which the WebSocket server applies too).
        """
        return self._policy

    def site(self, limits: ConnectionLimits = ConnectionLimits(), reactor: Any = None) -> RPCSite:
        """
        A twisted.web site serving this server, simple requests directly.

        @param limits: what its connections are given.
        @param reactor: runs the connections' timers (the global reactor if L{None}).
        """
        return RPCSite(self.resource(), self._policy.max_body_bytes, self, limits, reactor)

    def accepts(self, host: bytes | None, content_type: bytes | None, length: int) -> bool:
        """
        Whether a simple request (L{RPCChannel}) passes the transport checks
        of L{post}; a refused one is answered by L{post} with its status.

        @param host: the C{Host} header, if any.
        @param content_type: the C{Content-Type} header, if any.
        @param length: the body's length.
        """
        if content_type is None or length > self._policy.max_body_bytes:
            return False
        if host is not None and host not in self._hosts_allowed:
            if not self._policy.host_allowed(host):
                return False
            if len(self._hosts_allowed) < 64:
                self._hosts_allowed.add(host)
        return content_type == b"application/json" or (
            content_type.partition(b";")[0].strip().lower() in JSON_TYPES
        )

    def resource(self) -> IResource:
        """
        The root resource: the Klein application, with C{POST /} served
        without the router (see L{_DirectPost}).
        """
        return _DirectPost(self, self.app.resource())

    @app.route("/", methods=["POST"])
    def post(self, request: IRequest) -> bytes | Deferred[bytes]:
        """
        Answer a JSON-RPC body, after the transport checks.
        """
        refusal = self._refuse(request)
        if refusal is not None:
            return refusal
        content_type = request.getHeader(b"content-type")
        if content_type is None or content_type.partition(b";")[0].strip().lower() not in JSON_TYPES:
            request.setResponseCode(415)
            return b"Content-Type must be application/json or application/json-rpc\n"
        if getattr(request, "body_too_large", False):
            request.setResponseCode(413)
            return f"request body exceeds {self._policy.max_body_bytes} bytes\n".encode()
        request.content.seek(0)
        body = request.content.read()
        if len(body) > self._policy.max_body_bytes:
            request.setResponseCode(413)
            return f"request body exceeds {self._policy.max_body_bytes} bytes\n".encode()
        channel = getattr(request, "channel", None)
        token = CURRENT_CLIENT.set(channel if hasattr(channel, "client_identity") else None)
        try:
            answer = self.dispatcher.answer(body)
        finally:
            CURRENT_CLIENT.reset(token)
        if isinstance(answer, Deferred):
            return answer.addCallback(self._reply, request)
        return self._reply(answer, request)

    @app.route("/", methods=["OPTIONS"])
    def preflight(self, request: IRequest) -> bytes:
        """
        Answer a CORS preflight from an allowed origin; anything else that
        is not a POST is refused with 405.
        """
        refusal = self._refuse(request)
        if refusal is not None:
            return refusal
        if request.getHeader(b"origin") is None:
            request.setResponseCode(405)
            request.setHeader(b"allow", b"POST")
            return b""
        request.setResponseCode(204)
        request.setHeader(b"access-control-allow-methods", b"POST")
        request.setHeader(b"access-control-allow-headers", b"Content-Type")
        request.setHeader(b"access-control-max-age", b"600")
        return b""

    def _refuse(self, request: IRequest) -> bytes | None:
        """
        Check Host and Origin; answer 403 when refused, else set the CORS
        headers and return L{None}.
        """
        if not self._policy.host_allowed(request.getHeader(b"host")):
            request.setResponseCode(403)
            return b"Host not allowed\n"
        origin = request.getHeader(b"origin")
        if origin is not None:
            if not self._policy.origin_allowed(origin):
                request.setResponseCode(403)
                return b"Origin not allowed\n"
            request.setHeader(b"access-control-allow-origin", origin)
            request.setHeader(b"vary", b"Origin")
        return None

    def _reply(self, body: bytes | None, request: IRequest) -> bytes:
        """
        The HTTP answer to a dispatched body: 200, JSON, or empty when
        there is nothing to answer (notifications only).
        """
        # An explicit length keeps the answer out of chunked encoding (one
        # write instead of three, and fewer bytes) when it is written after
        # the route returned.
        if body is None:
            request.setHeader(b"content-length", b"0")
            return b""
        request.setHeader(b"content-type", b"application/json")
        request.setHeader(b"content-length", b"%d" % len(body))
        return body


class _DirectPost(Resource):
    """
    The root resource: C{POST /}, the one hot route, calls
    L{RPCServer.post} directly; every other request goes through the Klein
    router (OPTIONS preflight, 405 for other methods, 404 for other paths).

    Klein's routing (a werkzeug map bound per request, an adapter, three
    Deferreds and two finish notifications) costs about a fifth of an
    C{eth_chainId} round trip (benchmarks/RESULTS.md); the route function is
    the same either way.
    """

    isLeaf = True

    def __init__(self, server: RPCServer, routed: IResource) -> None:
        """
        @param server: whose C{post} route serves C{POST /}.
        @param routed: the Klein resource for everything else.
        """
        super().__init__()
        self._server = server
        self._routed = routed

    def render(self, request: Request) -> Any:
        """
        Serve C{POST /} directly, anything else through Klein.
        """
        if request.method != b"POST" or request.path != b"/":
            return self._routed.render(request)
        answer = self._server.post(request)
        if isinstance(answer, bytes):
            return answer
        answer.addBoth(_deliver, request)
        return NOT_DONE_YET


def _deliver(body: bytes | Failure, request: Request) -> None:
    """
    Write an asynchronous answer unless the client has gone; an unexpected
    failure of the handler becomes a 500.
    """
    if request.channel is None or request._disconnected:
        return
    if isinstance(body, Failure):
        request.processingFailed(body)
        return
    request.write(body)
    request.finish()


__all__ = ["BoundedRequest", "ConnectionLimits", "HTTPPolicy", "JSON_TYPES", "RPCServer", "RPCSite"]
