"""
The HTTP channel of the JSON-RPC server, with a direct lane for the one
request shape that makes up nearly all of its traffic.

A client of the node sends, over a keep-alive connection, requests of one
shape: C{POST / HTTP/1.1}, a handful of headers, a JSON body with its
C{Content-Length}; Node's clients write each whole, in one TCP segment,
Python's C{http.client} writes the head and the body apart, and a client
may pipeline several. L{RPCChannel} recognises such requests in the bytes
it receives (L{simple_head}) and, when the transport rules accept them,
hands each body to the dispatcher and writes the answer itself, without
building a twisted.web C{Request}. Anything else — another method or path,
HTTP/1.0, chunked bodies, C{Expect}, C{Origin} (CORS), C{Connection:
close}, a head split over reads, a Host or content type the rules refuse, a
body over the limit — goes to twisted.web
and the Klein resource unchanged, which answer it as before; the lane only
takes what it can answer exactly as they would (same status, same headers,
same body).

Why: the C{Request} path (headers object, request line parsing per line,
the resource lookup, C{Request.process}, C{finish} and its notifications)
cost about a third of the node's CPU for an automined ERC-20 transfer and
more than half of an C{eth_chainId} (docs/rpc.md, benchmarks/RESULTS.md).
"""

import re
import time
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.tcp import Connection
from twisted.logger import Logger
from twisted.python.failure import Failure
from twisted.web.http import HTTPChannel, datetimeToString
from twisted.web.server import version as SERVER_VERSION

from nodex.api.chain import IFollowUps
from nodex.rpc.client import CURRENT_CLIENT

SIMPLE_REQUEST_LINE = b"POST / HTTP/1.1\r\n"
"""The request line the direct lane serves."""

MAX_SIMPLE_HEAD = 16384
"""The largest request head the lane parses (twisted.web's own limit)."""

_HEAD = re.compile(rb"(?:[!#$%&'*+\-.^_`|~0-9A-Za-z]+:[^\r\n\x00]*\r\n)*")
"""Header lines, each a valid name (RFC 9110 token), a colon and a value
without CR, LF or NUL, ended by CRLF."""

_FIELD = re.compile(rb"([^:]+):[ \t]*([^\r]*?)[ \t]*\r\n")
"""One header line of a head L{_HEAD} matched: its name and its value, stripped."""

_DECLINED_HEADERS = frozenset({b"transfer-encoding", b"expect", b"origin", b"upgrade", b"trailer"})
"""Headers whose requests twisted.web serves (they need more than the lane does)."""

_HELD_LIMIT = 0x4000
"""Bytes held while an answer is awaited before reading from the client stops."""

REFUSED = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
    b"Connection: close\r\nRetry-After: 1\r\n\r\n%s"
)
"""The answer to a connection beyond the server's limits."""


_HEAD_START = len(SIMPLE_REQUEST_LINE)


MAX_LENGTH_DIGITS = 18
"""
The most digits of a C{Content-Length} the lane reads (no body the node
takes comes near 10**18 bytes): a longer run is left to twisted.web, which
answers 400, rather than given to C{int}, which refuses more than 4,300
digits with a C{ValueError}.
"""

_LENGTH_LINE = re.compile(rb"\r\n[Cc]ontent-[Ll]ength:[ \t]*([0-9]+)[ \t]*\r\n")
"""A C{Content-Length} line as Node's and Python's clients spell it; its
digits are cut out of a head to make the key of L{_HEADS}."""

_HEADS: dict[bytes, tuple[bytes | None, bytes | None]] = {}
"""Heads already recognised, without their C{Content-Length} digits: their
C{Host} and C{Content-Type} values."""

_HEADS_LIMIT = 64
"""The most heads kept in L{_HEADS}; when full it is emptied and filled again."""

_HEAD_KEPT_BYTES = 2048
"""The largest head kept in L{_HEADS}: the cache holds at most 128 KiB."""


def simple_head(data: bytes) -> tuple[bytes | None, bytes | None, int, int] | None:
    """
    Recognise the head of an ordinary JSON-RPC request at the start of
    C{data}; its body may be there whole, in part, or be followed by more
    requests.

    A client sends the same head with every request but for the body's
    length: a head recognised once (L{parse_head}) is kept without its
    C{Content-Length} digits (L{_HEADS}), and the next with other digits in
    their place is known at once — any run of digits there gives the same
    answer but for the length (a regular expression finding the line and a
    dictionary look-up: ~1 µs against ~13 µs for the nine headers Node's
    fetch sends).

    @param data: the bytes received from an idle connection.
    @return: the C{Host} and C{Content-Type} values (L{None} when absent),
        the body's length (C{Content-Length}) and where the body starts in
        C{data}; or L{None} when C{data} does not start with a whole
        C{POST / HTTP/1.1} head that has a C{Content-Length} and only
        headers that need nothing more, each name valid and present once.
    """
    if not data.startswith(SIMPLE_REQUEST_LINE):
        return None
    end = data.find(b"\r\n\r\n", _HEAD_START - 2)
    if end < 0 or end > MAX_SIMPLE_HEAD:
        return None
    # From the request line's CRLF, so that the first header line is found
    # too; the head's lines hold no CRLF, so a match is a whole line.
    line = _LENGTH_LINE.search(data, _HEAD_START - 2, end + 2)
    if line is None:
        parsed = parse_head(data[_HEAD_START:end + 2])
        return None if parsed is None else (*parsed, end + 4)
    digits_start, digits_end = line.span(1)
    if digits_end - digits_start > MAX_LENGTH_DIGITS:
        return None
    key = data[_HEAD_START:digits_start] + data[digits_end:end + 2]
    known = _HEADS.get(key)
    length = int(data[digits_start:digits_end])
    if known is not None:
        return known[0], known[1], length, end + 4
    parsed = parse_head(data[_HEAD_START:end + 2])
    if parsed is None:
        return None
    host, content_type, parsed_length = parsed
    if parsed_length == length and end <= _HEAD_KEPT_BYTES:
        if len(_HEADS) >= _HEADS_LIMIT:
            _HEADS.clear()
        _HEADS[key] = (host, content_type)
    return host, content_type, parsed_length, end + 4


def parse_head(head: bytes) -> tuple[bytes | None, bytes | None, int] | None:
    """
    Check and read the header lines of a request head (L{simple_head}).

    @param head: the lines after the request line, each ended by CRLF.
    @return: the C{Host} and C{Content-Type} values (L{None} when absent)
        and the C{Content-Length}; or L{None} when a line is malformed, a
        header needs more than the lane does, one is repeated, or
        C{Content-Length} is absent.
    """
    # One regular expression checks every line, another splits them: half
    # the time of a loop that checked each line (~12 µs for the nine
    # headers Node's fetch sends).
    if _HEAD.fullmatch(head) is None:
        return None
    host = content_type = None
    length = -1
    for name, value in _FIELD.findall(head):
        name = name.lower()
        if name == b"content-length":
            if length >= 0 or not value.isdigit() or len(value) > MAX_LENGTH_DIGITS:
                return None
            length = int(value)
        elif name == b"content-type":
            if content_type is not None:
                return None
            content_type = value
        elif name == b"host":
            if host is not None:
                return None
            host = value
        elif name in _DECLINED_HEADERS:
            return None
        elif name == b"connection" and value.lower() != b"keep-alive":
            return None
    if length < 0:
        return None
    return host, content_type, length


def simple_post(data: bytes) -> tuple[bytes | None, bytes | None, bytes] | None:
    """
    Recognise one whole, ordinary JSON-RPC request in C{data}.

    @param data: the bytes received from an idle connection.
    @return: the C{Host} and C{Content-Type} values (L{None} when absent)
        and the body; or L{None} when C{data} is not exactly one
        C{POST / HTTP/1.1} request with a C{Content-Length} body and only
        headers that need nothing more, each name valid and present once
        (L{simple_head}).
    """
    head = simple_head(data)
    if head is None:
        return None
    host, content_type, length, start = head
    if start + length != len(data):
        return None
    return host, content_type, data[start:]


_date_cache: tuple[int, bytes] = (0, b"")


def http_date() -> bytes:
    """
    The C{Date} header's value for now, formatted once a second.
    """
    global _date_cache
    second = int(time.time())
    if _date_cache[0] != second:
        _date_cache = (second, datetimeToString(second))
    return _date_cache[1]


def response_bytes(body: bytes | None) -> bytes:
    """
    The whole HTTP answer to a JSON-RPC body: 200 with the JSON body, or
    200 with no body for notifications (the headers the C{Request} path
    writes: server, date, type and length).
    """
    if body is None:
        return b"HTTP/1.1 200 OK\r\nServer: %s\r\nDate: %s\r\nContent-Length: 0\r\n\r\n" % (
            SERVER_VERSION, http_date(),
        )
    return b"HTTP/1.1 200 OK\r\nServer: %s\r\nDate: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
        SERVER_VERSION, http_date(), len(body), body,
    )


def send_now(transport: Any, data: bytes) -> None:
    """
    Write C{data} to a transport, sending it on the socket at once when
    nothing is waiting to be sent before it.

    A twisted TCP transport's C{write} only buffers: it asks the reactor to
    watch the socket for writability, and sends on the next turn of the
    loop, then stops watching — two C{epoll_ctl}, one C{epoll_wait} and a
    turn of the reactor per answer. Sending at once when the buffer is empty
    (as asyncio's transports do) saves them; what the socket does not take is
    buffered by C{write} as before, and an error is left for C{write}'s own
    send to report. Other transports (TLS, tests' C{StringTransport}) are
    written to as usual.
    """
    if (
        isinstance(transport, Connection)
        and transport.connected
        and not transport.disconnecting
        and not transport._writeDisconnected
        and not transport._tempDataBuffer
        and transport.offset == len(transport.dataBuffer)
    ):
        sent = transport.writeSomeData(data)
        if sent == len(data):
            return
        if isinstance(sent, int):
            data = data[sent:]
    transport.write(data)


class RPCChannel(HTTPChannel):
    """
    An HTTP channel that answers simple JSON-RPC requests directly (see the
    module's docstring) and everything else through twisted.web.

    Its site provides C{rpc_server}: an object with C{accepts(host,
    content_type, length) -> bool} (the transport rules) and C{dispatcher}
    (whose C{answer(body)} gives the body, L{None} or a L{Deferred} of
    either, and whose C{follow_ups}, an L{IFollowUps} or L{None}, is held
    while an answer is computed and sent). A site without it gets plain
    twisted.web behaviour.

    @ivar _answering: a direct request's answer is awaited; what arrives
        meanwhile is held in C{_held} and read afterwards, in order.
    """

    _log = Logger()
    _answering = False
    _lost = False
    _paused_reading = False
    _refused = False
    _admitted = False
    _in_request = False
    _handling = False
    _read_call: Any = None
    _stalled = False
    _partial_bytes = 0
    _partial_wanted = 0

    def __init__(self) -> None:
        super().__init__()
        self._held: list[bytes] = []
        self._held_bytes = 0
        self._partial: list[bytes] = []

    def connectionMade(self) -> None:
        """
        Serve the connection if the site's limits admit it (the site may
        close an idle one to make room); otherwise answer 503 with the
        reason and close.
        """
        super().connectionMade()
        admit = getattr(self.site, "admit", None)
        if admit is None:
            return
        refusal = admit(self)
        if refusal is not None:
            self._refused = True
            body = refusal.encode() + b"\n"
            self.setTimeout(None)
            send_now(self.transport, REFUSED % (len(body), body))
            self.transport.loseConnection()
            return
        self._admitted = True

    def headerReceived(self, line: bytes) -> bool:
        """
        A header on twisted.web's path: a C{Content-Length} of more than
        L{MAX_LENGTH_DIGITS} digits is answered 400 and the connection
        closed, as twisted.web answers a malformed one; twisted.web itself
        hands it to C{int}, whose C{ValueError} past 4,300 digits would go
        up to the reactor as an unhandled error (a traceback in the log for
        every such request, and no answer).
        """
        name, colon, value = line.partition(b":")
        if colon and name.lower() == b"content-length" and len(value.strip(b" \t")) > MAX_LENGTH_DIGITS:
            self.transport.write(b"HTTP/1.1 400 Bad Request\r\n\r\n")
            self.loseConnection()
            return False
        return bool(super().headerReceived(line))

    def client_identity(self) -> str:
        """
        The client, for the methods' quotas (L{nodex.rpc.client}): its address.
        """
        return "http:" + getattr(self.transport.getPeer(), "host", "")

    def dataReceived(self, data: bytes) -> None:
        """
        Answer simple requests directly; give anything else to twisted.web.

        Several requests in one read (pipelined) are answered in order: the
        next is read once the answer before it is written (an awaited one
        holds the rest, L{_hold}), and not while the client leaves the
        answers unread (the transport then pauses the channel; the rest is
        held and read when it resumes, L{resumeProducing}). A request
        whose whole head came but not all of its body (Python's
        C{http.client} writes them apart) is kept until its body is whole,
        if the transport rules accept its size.

        The first byte of a request starts its deadline: the head and body
        must have come by then (L{_begin_request}); a request that came
        whole in this read has met it, and runs no timer.
        """
        if self._refused:
            return
        if self._answering or self._stalled:
            self._hold(data)
            return
        if self._partial:
            # Bytes received restart the idle timer, as twisted.web's do
            # (the read deadline bounds the whole request).
            self.resetTimeout()
            self._partial.append(data)
            self._partial_bytes += len(data)
            if self._partial_bytes < self._partial_wanted:
                return
            data = b"".join(self._partial)
            self._partial = []
        while not self.requests and self.persistent and self.line_mode and not self._buffer:
            head = simple_head(data)
            if head is None:
                break
            host, content_type, length, start = head
            end = start + length
            if end > len(data):
                if not self._accepts(host, content_type, length):
                    break
                # The body is still to come: keep what came, within the
                # body limit the rules just checked and the deadline.
                if not self._in_request:
                    self._begin_request()
                self.resetTimeout()
                self._partial = [data]
                self._partial_bytes = len(data)
                self._partial_wanted = end
                return
            if not self._in_request:
                self._begin_request(deadline=False)
            if not self._serve(host, content_type, data[start:end]):
                break
            if end == len(data):
                return
            data = data[end:]
            if self._answering:
                self._hold(data)
                return
            if self._waitingForTransport:
                # The client does not read its answers: read no more of
                # its requests until it does. The connection is busy, and
                # the held request's deadline runs, as on twisted.web's
                # path (a client that reads nothing is closed at it).
                self._stalled = True
                self._held.append(data)
                self._held_bytes += len(data)
                self._begin_request()
                return
        if not self._in_request:
            self._begin_request()
        super().dataReceived(data)

    def resumeProducing(self) -> None:
        """
        The transport took what was waiting to be sent: read the requests
        held while it could not, then resume reading from the client.
        """
        if self._stalled:
            self._stalled = False
            self._waitingForTransport = False
            data = b"".join(self._held)
            self._held = []
            self._held_bytes = 0
            self.dataReceived(data)
            if self._stalled or self._lost:
                return
        if self._paused_reading:
            # Reading stays paused while an awaited answer holds enough
            # (L{_hold}); L{_answered} resumes it.
            self._waitingForTransport = False
            return
        super().resumeProducing()

    def connectionLost(self, reason: Failure) -> None:
        """
        Forget an awaited answer's connection, then close as twisted.web does.
        """
        self._lost = True
        self._cancel_deadline()
        if self._admitted:
            self._admitted = False
            self.site.release(self)
        super().connectionLost(reason)

    # The request deadline and the idle state, for the site's limits.

    def _begin_request(self, deadline: bool = True) -> None:
        """
        A request begins: the connection is busy, and the whole request,
        head and body, must arrive within the site's C{read_timeout}
        (twisted.web's own timer restarts at every byte, so a client
        sending one byte every few seconds held a connection for hours).

        @param deadline: start the deadline's timer (not for a request that
            has already arrived whole).
        """
        self._in_request = True
        site = self.site
        if self._admitted:
            site.busy(self)
        timeout = getattr(site, "read_timeout", None) if deadline else None
        if timeout and self._read_call is None:
            self._read_call = self.callLater(timeout, self._read_expired)

    def _request_read(self) -> None:
        """
        The request's head and body have all arrived: its deadline is met.
        """
        self._in_request = True
        self._cancel_deadline()

    def _request_done(self) -> None:
        """
        The answer is written: the connection is idle until its next request.
        """
        self._in_request = False
        if self._admitted and not self._lost:
            self.site.idle(self)

    def _cancel_deadline(self) -> None:
        """
        Stop the request's deadline, if it runs.
        """
        call, self._read_call = self._read_call, None
        if call is not None and call.active():
            call.cancel()

    def _read_expired(self) -> None:
        """
        The request did not arrive whole in time: close the connection.
        """
        self._read_call = None
        self._log.info(
            "closing the connection of {peer}: its request did not arrive within {seconds} s",
            peer=str(self.transport.getPeer()),
            seconds=self.site.read_timeout,
        )
        super().timeoutConnection()

    def allContentReceived(self) -> None:
        """
        twisted.web has the whole request: its deadline is met.
        """
        self._handling = True
        self._request_read()
        super().allContentReceived()

    def requestDone(self, request: Any) -> None:
        """
        twisted.web has answered: the connection is idle, unless a request
        it had read meanwhile is being served, or part of one waits.
        """
        self._handling = False
        super().requestDone(request)
        if self._handling or self._lost or not self.persistent:
            return
        if self._buffer:
            self._begin_request()
        else:
            self._request_done()

    def _accepts(self, host: bytes | None, content_type: bytes | None, length: int) -> bool:
        """
        Whether the lane may serve a request of these headers: the site
        has a JSON-RPC server and its transport rules accept the request.
        """
        server: Any = getattr(self.site, "rpc_server", None)
        return server is not None and server.accepts(host, content_type, length)

    def _serve(self, host: bytes | None, content_type: bytes | None, body: bytes) -> bool:
        """
        Answer one simple request, unless the transport rules refuse it
        (twisted.web then answers it with its status).

        @return: whether the request was taken.
        """
        server: Any = getattr(self.site, "rpc_server", None)
        if server is None or not server.accepts(host, content_type, len(body)):
            return False
        self.resetTimeout()
        self._request_read()
        dispatcher = server.dispatcher
        follow_ups: IFollowUps | None = dispatcher.follow_ups
        if follow_ups is None:
            self._answer(dispatcher, body)
            return True
        # The services put off, until the answer is sent, the work it
        # caused that changes nothing in it (IFollowUps): it runs on
        # release, while the client reads its answer, and before this
        # channel or any other reads another request.
        follow_ups.hold()
        try:
            self._answer(dispatcher, body)
        finally:
            follow_ups.release()
        return True

    def _answer(self, dispatcher: Any, body: bytes) -> None:
        """
        Have the dispatcher answer a body, and send its answer when it is
        known at once (else when it comes, L{_answered}).
        """
        token = CURRENT_CLIENT.set(self)
        try:
            answer = dispatcher.answer(body)
        finally:
            CURRENT_CLIENT.reset(token)
        # The body or None, else a Deferred (not isinstance: Deferred is an
        # abstract Awaitable, whose check of bytes costs ~0.7 us).
        if answer is None or type(answer) is bytes:
            self._send(response_bytes(answer))
            self._request_done()
        else:
            # The idle timer keeps running (stopping and restarting it cost
            # two timer operations a request); it does not close a
            # connection whose answer is awaited (L{timeoutConnection}).
            self._answering = True
            answer.addBoth(self._answered)

    def timeoutConnection(self) -> None:
        """
        The idle timeout: close the connection, unless an answer is awaited
        (then the timer starts again).
        """
        if self._answering:
            self.setTimeout(self.timeOut)
            return
        super().timeoutConnection()

    def _answered(self, answer: bytes | None | Failure) -> None:
        """
        Write an awaited answer (unless the client has gone), then read what
        arrived meanwhile.
        """
        self._answering = False
        if self._lost:
            return
        if isinstance(answer, Failure):
            # The dispatcher answers every error itself; this is a bug.
            self._log.failure("answering a JSON-RPC request", answer)
            send_now(
                self.transport, b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            )
            self.transport.loseConnection()
            return
        self._send(response_bytes(answer))
        self._request_done()
        self.resetTimeout()
        if self._paused_reading:
            self._paused_reading = False
            if not self._waitingForTransport:
                self._networkProducer.resumeProducing()
        if self._held:
            data = b"".join(self._held)
            self._held = []
            self._held_bytes = 0
            self.dataReceived(data)

    def _send(self, data: bytes) -> None:
        """
        Write an answer; see L{send_now}.
        """
        send_now(self.transport, data)

    def _hold(self, data: bytes) -> None:
        """
        Keep data that arrived while an answer is awaited; stop reading from
        the client once a good amount is held.
        """
        self._held.append(data)
        self._held_bytes += len(data)
        if self._held_bytes > _HELD_LIMIT and not self._paused_reading:
            self._paused_reading = True
            self._networkProducer.pauseProducing()


__all__ = ["RPCChannel", "http_date", "parse_head", "response_bytes", "send_now", "simple_head", "simple_post"]
