"""
Tests for L{nodex.rpc.channel}: the direct lane for simple requests and its
agreement with the twisted.web path.
"""

import json
import re
import socket
from collections.abc import Iterable
from typing import Any

from twisted.internet import reactor
from twisted.internet.defer import Deferred, inlineCallbacks
from twisted.internet.address import IPv4Address
from twisted.internet.error import ConnectionDone
from twisted.internet.protocol import ClientFactory, Protocol
from twisted.internet.task import Clock, deferLater
from twisted.internet.testing import StringTransport
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase, TestCase

from nodex.rpc import decoders
from nodex.rpc import channel
from nodex.rpc.channel import MAX_SIMPLE_HEAD, RPCChannel, parse_head, response_bytes, simple_head, simple_post
from nodex.rpc.dispatch import Dispatcher
from nodex.rpc.eth import EthIdentityMethods
from nodex.rpc.registry import Method, MethodRegistry, ModuleSettings, Param
from nodex.rpc.server import ConnectionLimits, HTTPPolicy, RPCServer
from nodex.services.followups import FollowUps

CHAIN_ID = b'{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}'


def post(body: bytes = CHAIN_ID, *headers: bytes, line: bytes = b"POST / HTTP/1.1") -> bytes:
    """
    A request with C{Host}, JSON content type, the body's length and the
    given extra header lines.
    """
    head = [line, b"Host: 127.0.0.1:8545", b"Content-Type: application/json", b"Content-Length: %d" % len(body)]
    return b"\r\n".join(head + list(headers)) + b"\r\n\r\n" + body


class TestMethods:
    """
    Methods for the tests: C{test_later} answers when the test fires its
    Deferred; C{test_big} answers a string of the given length.
    """

    def __init__(self) -> None:
        self.waiting: list[Deferred[str]] = []

    def rpc_methods(self) -> Iterable[Method]:
        return [
            Method("test_later", self.later),
            Method("test_big", self.big, (Param("size", decoders.quantity),)),
        ]

    def later(self) -> Deferred[str]:
        waiting: Deferred[str] = Deferred()
        self.waiting.append(waiting)
        return waiting

    def big(self, size: int) -> str:
        return "x" * size


def make_server(policy: HTTPPolicy = HTTPPolicy(max_body_bytes=4096)) -> tuple[RPCServer, TestMethods]:
    """
    A server with eth_chainId (chain 33) and L{TestMethods}.
    """
    registry = MethodRegistry({"eth": ModuleSettings(True), "test": ModuleSettings(True)})
    registry.add(EthIdentityMethods(33, 62))
    methods = TestMethods()
    registry.add(methods)
    return RPCServer(Dispatcher(registry, Clock()), policy), methods


def parse_responses(data: bytes) -> list[tuple[int, dict[bytes, bytes], bytes]]:
    """
    Split written bytes into HTTP/1.1 responses with a C{Content-Length}:
    status, headers (names lower-cased) and body of each.
    """
    responses = []
    while data:
        head, _, data = data.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split(b" ")[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get(b"content-length", b"0"))
        responses.append((status, headers, data[:length]))
        data = data[length:]
    return responses


class SimplePostTests(SynchronousTestCase):
    """
    Tests for L{simple_post}.
    """

    def test_simple(self) -> None:
        """
        One whole request gives its Host, content type and body.
        """
        self.assertEqual(
            simple_post(post(CHAIN_ID, b"Connection: keep-alive", b"User-Agent: x")),
            (b"127.0.0.1:8545", b"application/json", CHAIN_ID),
        )

    def test_header_case_and_spaces(self) -> None:
        """
        Header names are matched without regard to case; values are stripped.
        """
        data = b"POST / HTTP/1.1\r\nhOsT:  a \r\ncontent-TYPE:\tapplication/json\r\ncontent-length: 2\r\n\r\n[]"
        self.assertEqual(simple_post(data), (b"a", b"application/json", b"[]"))

    def test_no_host_or_type(self) -> None:
        """
        Absent Host and Content-Type are reported as L{None} (the server's
        rules decide).
        """
        self.assertEqual(simple_post(b"POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"), (None, None, b"{}"))

    def test_declined(self) -> None:
        """
        Anything but one whole plain request is left to twisted.web.
        """
        declined = {
            "GET": post(line=b"GET / HTTP/1.1"),
            "other path": post(line=b"POST /x HTTP/1.1"),
            "query": post(line=b"POST /?a HTTP/1.1"),
            "HTTP/1.0": post(line=b"POST / HTTP/1.0"),
            "no length": b"POST / HTTP/1.1\r\nHost: a\r\n\r\n{}",
            "no headers": b"POST / HTTP/1.1\r\n\r\n",
            "short body": post(CHAIN_ID)[:-1],
            "head only": post(CHAIN_ID)[: -len(CHAIN_ID)],
            "unfinished head": post(CHAIN_ID)[:30],
            "pipelined": post(CHAIN_ID) * 2,
            "two lengths": post(CHAIN_ID, b"Content-Length: %d" % len(CHAIN_ID)),
            "signed length": post(CHAIN_ID).replace(b"Length: ", b"Length: +"),
            "two hosts": post(CHAIN_ID, b"Host: b"),
            "two types": post(CHAIN_ID, b"Content-Type: application/json"),
            "chunked": post(CHAIN_ID, b"Transfer-Encoding: chunked"),
            "expect": post(CHAIN_ID, b"Expect: 100-continue"),
            "origin": post(CHAIN_ID, b"Origin: http://a"),
            "close": post(CHAIN_ID, b"Connection: close"),
            "upgrade": post(CHAIN_ID, b"Upgrade: websocket"),
            "bad name": post(CHAIN_ID, b"Bad Name: x"),
            "no colon": post(CHAIN_ID, b"NoColon"),
            "folded": post(CHAIN_ID, b"X-A: 1", b" continued"),
            "NUL": post(CHAIN_ID, b"X-A: a\x00b"),
            "bare CR": post(CHAIN_ID, b"X-A: a\rb"),
            "bare LF": post(CHAIN_ID, b"X-A: a\nb"),
            "huge head": post(CHAIN_ID, b"X-A: " + b"a" * MAX_SIMPLE_HEAD),
            "empty": b"",
        }
        for name, data in declined.items():
            self.assertIsNone(simple_post(data), name)


class HeadCacheTests(SynchronousTestCase):
    """
    Tests for the heads L{simple_head} keeps: a kept head answers as the
    lines' own parse (L{parse_head}) would.
    """

    def setUp(self) -> None:
        channel._HEADS.clear()
        self.addCleanup(channel._HEADS.clear)

    def reference(self, data: bytes) -> tuple[bytes | None, bytes | None, int, int] | None:
        """
        What L{simple_head} answers without its kept heads.
        """
        if not data.startswith(b"POST / HTTP/1.1\r\n"):
            return None
        end = data.find(b"\r\n\r\n", 15)
        if end < 0 or end > MAX_SIMPLE_HEAD:
            return None
        parsed = parse_head(data[17 : end + 2])
        return None if parsed is None else (*parsed, end + 4)

    def test_other_lengths(self) -> None:
        """
        A head seen before with another length answers the new length,
        whatever the number of digits, and the same Host and type.
        """
        for body in (b"{}", b"[" + b" " * 1000 + b"]", b"{" + b" " * 98 + b"}"):
            data = post(body, b"Connection: keep-alive")
            self.assertEqual(
                simple_head(data), (b"127.0.0.1:8545", b"application/json", len(body), len(data) - len(body))
            )
        self.assertEqual(len(channel._HEADS), 1)

    def test_same_as_parse(self) -> None:
        """
        Heads that differ from a kept one in any line but the length's digits
        answer as their own lines do: each variant twice (the second from
        the kept heads), after the plain head was kept.
        """
        plain = post(b"{}", b"Connection: keep-alive")
        self.assertIsNotNone(simple_head(plain))
        variants = [
            plain.replace(b"Content-Length: 2", b"Content-Length: 2\r\nContent-Length: 2"),
            plain.replace(b"Content-Length: 2", b"Content-Length: 2\r\ncontent-length: 3"),
            plain.replace(b"Content-Length: 2", b"Content-Length: 2 3"),
            plain.replace(b"Content-Length: 2", b"Content-Length: +2"),
            plain.replace(b"Content-Length: 2", b"Content-Length: 2x"),
            plain.replace(b"Content-Length: 2", b"Content-Length: \t2 "),
            plain.replace(b"Content-Length: 2", b"CONTENT-LENGTH: 2"),
            plain.replace(b"Content-Length: 2", b"X-Content-Length: 2"),
            plain.replace(b"Content-Length: 2", b"X-A: b\r\nContent-Length: 2"),
            plain.replace(b"Content-Length: 2", b"Content-Length:2"),
            plain.replace(b"Host: 127.0.0.1:8545", b"Host: other"),
            plain.replace(b"Host: 127.0.0.1:8545", b"Host: 127.0.0.1:8545\r\nHost: a"),
            plain.replace(b"keep-alive", b"close"),
            plain.replace(b"keep-alive", b"keep-alive\r\nOrigin: x"),
            plain.replace(b"keep-alive", b"keep-alive\r\nX-A: a\x00"),
            plain.replace(b"application/json", b"text/plain"),
            b"POST / HTTP/1.1\r\nContent-Length: 2\r\nHost: a\r\n\r\n{}",
            b"POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}",
        ]
        for data in variants:
            for _ in range(2):
                self.assertEqual(simple_head(data), self.reference(data), data)
            longer = data.replace(b": 2", b": 12345")
            self.assertEqual(simple_head(longer), self.reference(longer), longer)

    def test_bounded(self) -> None:
        """
        At most C{_HEADS_LIMIT} heads are kept, none over C{_HEAD_KEPT_BYTES};
        past the limit the cache starts again, and every head still answers.
        """
        for index in range(3 * channel._HEADS_LIMIT):
            data = post(b"{}", b"X-Id: %d" % index)
            self.assertEqual(simple_head(data), self.reference(data))
            self.assertLessEqual(len(channel._HEADS), channel._HEADS_LIMIT)
        channel._HEADS.clear()
        data = post(b"{}", b"X-A: " + b"a" * channel._HEAD_KEPT_BYTES)
        self.assertEqual(simple_head(data), self.reference(data))
        self.assertEqual(channel._HEADS, {})


class ChannelTests(SynchronousTestCase):
    """
    Tests for L{RPCChannel} over a C{StringTransport}.
    """

    def connect(self, policy: HTTPPolicy = HTTPPolicy(max_body_bytes=4096)) -> tuple[RPCChannel, StringTransport, TestMethods]:
        server, methods = make_server(policy)
        site = server.site()
        channel = site.buildProtocol(None)
        transport = StringTransport()
        channel.makeConnection(transport)
        self.addCleanup(channel.connectionLost, Failure(ConnectionDone()))
        return channel, transport, methods

    def exchange(
        self, *chunks: bytes, policy: HTTPPolicy = HTTPPolicy(max_body_bytes=4096), direct: bool = False,
    ) -> list[tuple[int, dict[bytes, bytes], bytes]]:
        """
        Feed chunks to a new channel; the responses written. With C{direct},
        fail if twisted.web builds a request.
        """
        channel, transport, _ = self.connect(policy)
        if direct:
            channel.requestFactory = lambda *args: self.fail("a twisted.web request was built")
        for chunk in chunks:
            channel.dataReceived(chunk)
        return parse_responses(transport.value())

    def test_direct(self) -> None:
        """
        A simple request is answered 200 with the JSON body, its type and
        length.
        """
        [(status, headers, body)] = self.exchange(post(), direct=True)
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(body), {"jsonrpc": "2.0", "id": 1, "result": "0x21"})
        self.assertEqual(headers[b"content-type"], b"application/json")
        self.assertEqual(int(headers[b"content-length"]), len(body))

    def test_same_as_twisted_web(self) -> None:
        """
        The direct answer has the status, headers and body of the answer the
        twisted.web path gives the same request (here sent with its head in
        two pieces, which the lane leaves to twisted.web).
        """
        request = post()
        [direct] = self.exchange(request)
        [routed] = self.exchange(request[:20], request[20:])
        self.assertEqual(direct[0], routed[0])
        self.assertEqual(direct[2], routed[2])
        self.assertEqual(sorted(direct[1]), sorted(routed[1]))
        for name in direct[1]:
            if name != b"date":
                self.assertEqual(direct[1][name], routed[1][name], name)

    def test_notification(self) -> None:
        """
        A notification is answered 200 with an empty body, as twisted.web's
        path answers it.
        """
        notification = b'{"jsonrpc":"2.0","method":"eth_chainId"}'
        [direct] = self.exchange(post(notification), direct=True)
        [routed] = self.exchange(post(notification)[:20], post(notification)[20:])
        self.assertEqual(direct[0], 200)
        self.assertEqual(direct[2], b"")
        self.assertEqual(sorted(direct[1]), sorted(routed[1]))

    def test_keep_alive(self) -> None:
        """
        Requests one after another on a connection are each answered.
        """
        responses = self.exchange(post(), post(b'{"jsonrpc":"2.0","id":2,"method":"eth_chainId"}'), direct=True)
        self.assertEqual([json.loads(body)["id"] for _, _, body in responses], [1, 2])

    def test_pipelined(self) -> None:
        """
        Requests that arrive together are answered directly, in order, and
        as twisted.web answers them.
        """
        second = post(b'{"jsonrpc":"2.0","id":2,"method":"eth_chainId"}')
        responses = self.exchange(post() + second + post(), direct=True)
        self.assertEqual([json.loads(body)["id"] for _, _, body in responses], [1, 2, 1])
        routed = self.exchange(post()[:20], post()[20:] + second + post())
        self.assertEqual([response[2] for response in routed], [response[2] for response in responses])

    def test_pipelined_then_twisted_web(self) -> None:
        """
        Pipelined requests the lane does not take (here one with C{Expect},
        and a head split over reads) are answered by twisted.web after the
        lane's, in order.
        """
        second = post(b'{"jsonrpc":"2.0","id":2,"method":"eth_chainId"}', b"Expect: 100-continue")
        third = post(b'{"jsonrpc":"2.0","id":3,"method":"eth_chainId"}')
        channel, transport, _ = self.connect()
        channel.dataReceived(post() + second + third[:10])
        channel.dataReceived(third[10:])
        written = transport.value().replace(b"HTTP/1.1 100 Continue\r\n\r\n", b"")
        self.assertEqual([json.loads(body)["id"] for _, _, body in parse_responses(written)], [1, 2, 3])

    def test_pipelined_after_awaited_answer(self) -> None:
        """
        Requests pipelined behind one whose answer is awaited are held and
        answered after it, in order.
        """
        channel, transport, methods = self.connect()
        later = post(b'{"jsonrpc":"2.0","id":"a","method":"test_later"}')
        channel.dataReceived(later + post() + later)
        self.assertEqual(transport.value(), b"")
        methods.waiting.pop().callback("first")
        methods.waiting.pop().callback("second")
        responses = parse_responses(transport.value())
        self.assertEqual(
            [json.loads(body).get("result") for _, _, body in responses], ["first", "0x21", "second"]
        )

    def test_pipelined_client_not_reading(self) -> None:
        """
        While the transport cannot take more answers (a client that sends
        requests but reads no answers), no further pipelined request is
        answered and nothing more is read; when it drains, the held requests
        are answered in order and reading resumes.
        """
        channel, transport, _ = self.connect()
        channel.requestFactory = lambda *args: self.fail("a twisted.web request was built")
        writes = []

        def write(data: bytes) -> None:
            writes.append(data)
            channel.pauseProducing()

        transport.write = write  # type: ignore[method-assign]
        channel.dataReceived(post() + post() + post())
        self.assertEqual(len(writes), 1)
        self.assertEqual(transport.producerState, "paused")
        transport.write = writes.append  # type: ignore[method-assign]
        channel.resumeProducing()
        self.assertEqual(len(writes), 3)
        self.assertEqual(transport.producerState, "producing")

    def test_body_apart(self) -> None:
        """
        A request whose body comes in later reads than its head (Python's
        C{http.client} writes them apart) is answered directly once whole,
        as twisted.web answers it.
        """
        request = post()
        head_end = request.index(b"\r\n\r\n") + 4
        [(status, _, body)] = self.exchange(request[:head_end], request[head_end:], direct=True)
        self.assertEqual((status, json.loads(body)["result"]), (200, "0x21"))
        pieces = [request[:head_end], request[head_end:head_end + 5], request[head_end + 5:-1], request[-1:] + post()]
        responses = self.exchange(*pieces, direct=True)
        self.assertEqual([json.loads(body)["id"] for _, _, body in responses], [1, 1])

    def test_body_apart_over_the_limit(self) -> None:
        """
        A head announcing a body over the limit is left to twisted.web at
        once (the lane keeps none of it), which drains the body without
        keeping it and answers 413.
        """
        request = post(b"[" + b" " * 5000 + b"]")
        head_end = request.index(b"\r\n\r\n") + 4
        channel, transport, _ = self.connect()
        channel.dataReceived(request[:head_end])
        self.assertEqual((channel._partial, len(channel.requests)), ([], 1))
        channel.dataReceived(request[head_end:])
        self.assertEqual(parse_responses(transport.value())[0][0], 413)

    def test_content_length_of_too_many_digits(self) -> None:
        """
        A C{Content-Length} of more digits than C{int} reads (4,300 by
        default) is answered 400 and the connection closed, whether the
        head comes whole (the lane) or in pieces (twisted.web), and whether
        the lane has kept that head's shape before; nothing reaches the
        reactor as an unhandled error.
        """
        for digits in (19, 5000):
            request = re.sub(rb"Content-Length: \d+", b"Content-Length: " + b"9" * digits, post())
            for chunks in ((post(), request), (request,), (request[:20], request[20:])):
                channel, transport, _ = self.connect()
                for chunk in chunks:
                    channel.dataReceived(chunk)
                written = transport.value()
                self.assertTrue(written.endswith(b"HTTP/1.1 400 Bad Request\r\n\r\n"), (digits, written[-60:]))
                self.assertTrue(transport.disconnecting)
        self.assertIsNone(simple_head(re.sub(rb"Content-Length: \d+", b"Content-Length: " + b"1" * 19, post())))
        self.assertEqual(simple_head(re.sub(rb"Content-Length: \d+", b"Content-Length: 000000000000000047", post()))[2], 47)

    def test_after_twisted_web(self) -> None:
        """
        A request twisted.web answered leaves the channel able to answer the
        next one directly.
        """
        request = post()
        responses = self.exchange(request[:10], request[10:], request)
        self.assertEqual([status for status, _, _ in responses], [200, 200])

    def test_refusals(self) -> None:
        """
        Requests the transport rules refuse are answered with their status
        by twisted.web.
        """
        self.assertEqual(self.exchange(post().replace(b"127.0.0.1:8545", b"evil.example"))[0][0], 403)
        self.assertEqual(self.exchange(post().replace(b"application/json", b"text/plain"))[0][0], 415)
        self.assertEqual(self.exchange(post(b"[" + b" " * 5000 + b"]"))[0][0], 413)
        self.assertEqual(self.exchange(post(line=b"GET / HTTP/1.1"))[0][0], 405)

    def test_content_type_parameters(self) -> None:
        """
        Content-Type parameters and case are accepted as twisted.web's path
        accepts them.
        """
        request = post().replace(b"application/json", b"Application/JSON; charset=utf-8")
        [(status, _, body)] = self.exchange(request, direct=True)
        self.assertEqual((status, json.loads(body)["result"]), (200, "0x21"))

    def test_awaited_answer_holds_later_requests(self) -> None:
        """
        While an answer is awaited, later requests wait; they are answered
        after it, in order.
        """
        channel, transport, methods = self.connect()
        channel.dataReceived(post(b'{"jsonrpc":"2.0","id":"a","method":"test_later"}'))
        channel.dataReceived(post(b'{"jsonrpc":"2.0","id":"b","method":"eth_chainId"}'))
        self.assertEqual(transport.value(), b"")
        methods.waiting.pop().callback("done")
        responses = parse_responses(transport.value())
        self.assertEqual([json.loads(body)["id"] for _, _, body in responses], ["a", "b"])
        self.assertEqual(json.loads(responses[0][2])["result"], "done")

    def test_holding_stops_reading(self) -> None:
        """
        Once a good amount is held, the channel stops reading from the
        client until the awaited answer is written.
        """
        channel, transport, methods = self.connect(HTTPPolicy(max_body_bytes=100_000))
        channel.dataReceived(post(b'{"jsonrpc":"2.0","id":"a","method":"test_later"}'))
        channel.dataReceived(post(b"[" + b" " * 20_000 + b"]"))
        self.assertEqual(transport.producerState, "paused")
        methods.waiting.pop().callback("done")
        self.assertEqual(transport.producerState, "producing")
        self.assertEqual(len(parse_responses(transport.value())), 2)

    def test_holding_stays_paused_when_the_transport_drains(self) -> None:
        """
        Reading stopped because enough is held stays stopped when the
        transport drains meanwhile; the awaited answer resumes it.
        """
        channel, transport, methods = self.connect(HTTPPolicy(max_body_bytes=100_000))
        channel.dataReceived(post(b'{"jsonrpc":"2.0","id":"a","method":"test_later"}'))
        channel.dataReceived(post(b"[" + b" " * 20_000 + b"]"))
        channel.pauseProducing()
        channel.resumeProducing()
        self.assertEqual(transport.producerState, "paused")
        methods.waiting.pop().callback("done")
        self.assertEqual(transport.producerState, "producing")
        self.assertEqual(len(parse_responses(transport.value())), 2)

    def test_lost_while_awaited(self) -> None:
        """
        An answer that comes after the client has gone is dropped.
        """
        channel, transport, methods = self.connect()
        channel.dataReceived(post(b'{"jsonrpc":"2.0","id":"a","method":"test_later"}'))
        channel.connectionLost(Failure(ConnectionDone()))
        methods.waiting.pop().callback("done")
        self.assertEqual(transport.value(), b"")

    def test_unexpected_failure(self) -> None:
        """
        An answer that fails (the dispatcher answers every error itself, so
        this is a bug) is logged, answered 500 and the connection closed.
        """
        channel, transport, _ = self.connect()
        failing: Deferred[bytes] = Deferred()
        channel.site.rpc_server.dispatcher.answer = lambda body: failing
        channel.dataReceived(post())
        failing.errback(RuntimeError("bug"))
        self.assertEqual(parse_responses(transport.value())[0][0], 500)
        self.assertTrue(transport.disconnecting)
        self.assertEqual(len(self.flushLoggedErrors(RuntimeError)), 1)

    def test_without_server(self) -> None:
        """
        A site without an RPC server serves every request through its
        resource.
        """
        server, _ = make_server()
        site = server.site()
        site.rpc_server = None
        channel = site.buildProtocol(None)
        transport = StringTransport()
        channel.makeConnection(transport)
        self.addCleanup(channel.connectionLost, Failure(ConnectionDone()))
        channel.dataReceived(post())
        [(status, headers, body)] = parse_responses(transport.value())
        self.assertEqual((status, json.loads(body)["result"]), (200, "0x21"))

    def test_response_bytes(self) -> None:
        """
        L{response_bytes} writes the length of the body.
        """
        [(status, headers, body)] = parse_responses(response_bytes(b"[1]"))
        self.assertEqual((status, headers[b"content-length"], body), (200, b"3", b"[1]"))


class FollowUpsTests(SynchronousTestCase):
    """
    Tests for the channel's hold on the services' work put off until an
    answer is sent (L{nodex.api.chain.IFollowUps}).
    """

    def connect(self) -> tuple[RPCChannel, StringTransport, FollowUps, list[Any]]:
        """
        A channel whose server's C{test_later} puts off a call that records
        what the transport held when it ran (C{test_failing}: a call that raises).
        """
        follow_ups = FollowUps()
        seen: list[Any] = []
        transport = StringTransport()

        class PuttingOff:
            def rpc_methods(self) -> Iterable[Method]:
                return [Method("test_putOff", self.put_off), Method("test_failing", self.failing)]

            def put_off(self) -> str:
                follow_ups.later(lambda: seen.append(transport.value()))
                return "0x1"

            def failing(self) -> str:
                follow_ups.later(lambda: 1 // 0)
                follow_ups.later(lambda: seen.append(transport.value()))
                return "0x2"

        registry = MethodRegistry({"test": ModuleSettings(True)})
        registry.add(PuttingOff())
        server = RPCServer(Dispatcher(registry, Clock(), follow_ups=follow_ups), HTTPPolicy(max_body_bytes=4096))
        channel = server.site().buildProtocol(None)
        channel.makeConnection(transport)
        self.addCleanup(channel.connectionLost, Failure(ConnectionDone()))
        return channel, transport, follow_ups, seen

    def test_after_the_answer(self) -> None:
        """
        Work put off while a request is answered runs once its answer has
        been written, before the next request (pipelined with it) is read.
        """
        channel, transport, follow_ups, seen = self.connect()
        first = post(b'{"jsonrpc":"2.0","id":1,"method":"test_putOff"}')
        channel.dataReceived(first + first)
        self.assertFalse(follow_ups.holding)
        [one, two] = parse_responses(transport.value())
        self.assertEqual([json.loads(one[2])["result"], json.loads(two[2])["result"]], ["0x1", "0x1"])
        self.assertEqual([len(parse_responses(value)) for value in seen], [1, 2])

    def test_failure_does_not_lose_the_answer(self) -> None:
        """
        Put-off work that raises is logged; the answer is sent, the other
        calls run, and the next request is answered.
        """
        channel, transport, follow_ups, seen = self.connect()
        failing = post(b'{"jsonrpc":"2.0","id":7,"method":"test_failing"}')
        channel.dataReceived(failing + post(b'{"jsonrpc":"2.0","id":8,"method":"test_putOff"}'))
        self.assertEqual(len(self.flushLoggedErrors(ZeroDivisionError)), 1)
        responses = parse_responses(transport.value())
        self.assertEqual([json.loads(body)["id"] for _, _, body in responses], [7, 8])
        self.assertEqual([len(parse_responses(value)) for value in seen], [1, 2])

    def test_batch_elements_see_the_work_before_them(self) -> None:
        """
        In a batch, what an element put off runs before the next element
        starts (the batch's answer is sent after all of them).
        """
        channel, transport, follow_ups, seen = self.connect()
        order: list[str] = []
        follow_ups_later = follow_ups.later
        follow_ups.later = lambda function, *args: follow_ups_later(  # type: ignore[method-assign]
            lambda: order.append("put off") or function(*args)
        )
        dispatcher = channel.site.rpc_server.dispatcher
        start = dispatcher._start
        dispatcher._start = lambda request, deadline: order.append("start") or start(request, deadline)
        call = b'{"jsonrpc":"2.0","id":%d,"method":"test_putOff"}'
        channel.dataReceived(post(b"[" + call % 1 + b"," + call % 2 + b"]"))
        self.assertEqual(order, ["start", "put off", "start", "put off"])
        [(_, _, body)] = parse_responses(transport.value())
        self.assertEqual([answer["id"] for answer in json.loads(body)], [1, 2])


class RealSocketFollowUpsTests(TestCase):
    """
    The answer of the direct lane is on the socket before the work put off
    until it runs (L{channel.send_now} sends at once, not at the reactor's
    next turn).
    """

    @inlineCallbacks
    def test_answer_on_the_socket_before_the_follow_ups(self) -> Any:
        """
        When the work put off by a request runs, its answer can already be
        read from the client's socket.
        """
        follow_ups = FollowUps()
        readable: list[bytes] = []
        client = socket.socket()
        self.addCleanup(client.close)

        def read_now() -> None:
            try:
                readable.append(client.recv(65536, socket.MSG_DONTWAIT))
            except BlockingIOError:
                readable.append(b"")

        class PuttingOff:
            def rpc_methods(self) -> Iterable[Method]:
                return [Method("test_putOff", self.put_off)]

            def put_off(self) -> str:
                follow_ups.later(read_now)
                return "0x1"

        registry = MethodRegistry({"test": ModuleSettings(True)})
        registry.add(PuttingOff())
        server = RPCServer(Dispatcher(registry, Clock(), follow_ups=follow_ups), HTTPPolicy(max_body_bytes=4096))
        port = reactor.listenTCP(0, server.site(), interface="127.0.0.1")
        self.addCleanup(port.stopListening)
        client.connect(("127.0.0.1", port.getHost().port))
        client.sendall(post(b'{"jsonrpc":"2.0","id":1,"method":"test_putOff"}'))
        for _ in range(500):
            if readable:
                break
            yield deferLater(reactor, 0.01, lambda: None)
        [(status, _, body)] = parse_responses(readable[0])
        self.assertEqual((status, json.loads(body)["result"]), (200, "0x1"))


class _Collect(Protocol):
    """
    A client that sends a request and collects everything until closed.
    """

    def __init__(self, request: bytes) -> None:
        self.request = request
        self.received: list[bytes] = []
        self.done: Deferred[bytes] = Deferred()

    def connectionMade(self) -> None:
        self.transport.write(self.request)

    def dataReceived(self, data: bytes) -> None:
        self.received.append(data)
        data = b"".join(self.received)
        head, _, body = data.partition(b"\r\n\r\n")
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:") and len(body) >= int(line.split(b":")[1]):
                self.transport.loseConnection()

    def connectionLost(self, reason: Failure) -> None:
        self.done.callback(b"".join(self.received))


class RealSocketTests(TestCase):
    """
    Tests for the direct lane over real TCP connections (its answers are
    sent on the socket at once when nothing is buffered).
    """

    @inlineCallbacks
    def ask(self, body: bytes) -> Any:
        server, _ = make_server(HTTPPolicy(max_body_bytes=4096))
        port = reactor.listenTCP(0, server.site(), interface="127.0.0.1")
        self.addCleanup(port.stopListening)
        client = _Collect(post(body))
        factory = ClientFactory.forProtocol(lambda: client)
        reactor.connectTCP("127.0.0.1", port.getHost().port, factory)
        return parse_responses((yield client.done))

    @inlineCallbacks
    def test_small_answer(self) -> Any:
        """
        A small answer arrives whole.
        """
        [(status, _, body)] = yield self.ask(CHAIN_ID)
        self.assertEqual((status, json.loads(body)["result"]), (200, "0x21"))

    @inlineCallbacks
    def test_answer_larger_than_the_socket_takes(self) -> Any:
        """
        An answer larger than the socket takes at once arrives whole: the
        rest is buffered and sent as the socket drains.
        """
        size = 8 * 1024 * 1024
        [(status, _, body)] = yield self.ask(b'{"jsonrpc":"2.0","id":1,"method":"test_big","params":["0x%x"]}' % size)
        self.assertEqual(status, 200)
        self.assertEqual(len(json.loads(body)["result"]), size)


class RealSocketPipeliningTests(TestCase):
    """
    Pipelined requests over a real TCP connection.
    """

    @inlineCallbacks
    def test_many_pipelined(self) -> Any:
        """
        Thousands of requests written at once, more than the sockets hold,
        are all answered, in order; the last, with C{Connection: close},
        by twisted.web, which then closes.
        """
        server, _ = make_server(HTTPPolicy(max_body_bytes=4096))
        port = reactor.listenTCP(0, server.site(), interface="127.0.0.1")
        self.addCleanup(port.stopListening)
        count = 5000
        body = b'{"jsonrpc":"2.0","id":%d,"method":"test_big","params":["0x100"]}'
        requests = b"".join(post(body % index) for index in range(count - 1))
        client = _Collect(requests + post(body % (count - 1), b"Connection: close"))
        client.dataReceived = client.received.append  # type: ignore[method-assign]
        reactor.connectTCP("127.0.0.1", port.getHost().port, ClientFactory.forProtocol(lambda: client))
        answers = yield client.done
        self.assertEqual(answers.count(b"HTTP/1.1 200 OK\r\n"), count)
        self.assertEqual([int(found) for found in re.findall(rb'"id":(\d+),', answers)], list(range(count)))


class ConnectionLimitTests(SynchronousTestCase):
    """
    The site's limits on connections and on the time a request may take
    to arrive (issue 26).
    """

    def setUp(self) -> None:
        """
        A site with small limits on a L{Clock}.
        """
        self.clock = Clock()
        server, self.methods = make_server()
        self.site = server.site(
            ConnectionLimits(max_connections=3, max_connections_per_address=2, read_timeout=30, idle_timeout=120),
            reactor=self.clock,
        )

    def connect(self, host: str = "192.0.2.1") -> tuple[RPCChannel, StringTransport]:
        """
        A new connection from C{host}.
        """
        channel = self.site.buildProtocol(None)
        transport = StringTransport(peerAddress=IPv4Address("TCP", host, 40000))
        channel.makeConnection(transport)
        transport.protocol = channel
        self.addCleanup(lambda: None if channel._lost else channel.connectionLost(Failure(ConnectionDone())))
        return channel, transport

    def close(self, channel: RPCChannel) -> None:
        """
        The connection is gone.
        """
        channel.connectionLost(Failure(ConnectionDone()))

    def test_slow_request_closed_at_its_deadline(self) -> None:
        """
        A client that sends one byte of its request head every 20 seconds
        is disconnected 30 seconds after its first byte (issue 26: every
        byte restarted twisted.web's timer, and a 16 KiB head could take 90
        hours); a request that arrives whole in time is answered, and the
        idle time after it is not counted.
        """
        channel, transport = self.connect()
        request = post()
        channel.dataReceived(request[:1])
        self.clock.advance(20)
        channel.dataReceived(request[1:2])
        self.clock.advance(9.9)
        self.assertFalse(transport.disconnecting)
        self.clock.advance(0.1)
        self.assertTrue(transport.disconnecting)
        self.close(channel)
        channel, transport = self.connect("192.0.2.2")
        channel.dataReceived(request[:10])
        self.clock.advance(29)
        channel.dataReceived(request[10:])
        self.assertEqual(parse_responses(transport.value())[0][0], 200)
        self.clock.advance(100)
        self.assertFalse(transport.disconnecting)
        channel.dataReceived(request)
        self.assertEqual(len(parse_responses(transport.value())), 2)

    def test_idle_timeout_waits_for_an_awaited_answer(self) -> None:
        """
        The idle timeout does not close a connection whose answer is
        awaited, however long it takes; after the answer the connection
        may stay idle for the whole timeout again, not longer.  A request
        that arrives whole runs no deadline timer.
        """
        channel, transport = self.connect()
        channel.dataReceived(post(b'{"jsonrpc":"2.0","id":"a","method":"test_later"}'))
        self.assertEqual(self.clock.getDelayedCalls()[0].getTime(), 120)
        self.assertEqual(len(self.clock.getDelayedCalls()), 1)
        self.clock.advance(500)
        self.assertFalse(transport.disconnecting)
        self.methods.waiting.pop().callback("x")
        self.assertEqual(parse_responses(transport.value())[0][0], 200)
        self.clock.advance(119.9)
        self.assertFalse(transport.disconnecting)
        self.clock.advance(0.1)
        self.assertTrue(transport.disconnecting)
        self.close(channel)

    def test_client_not_reading_has_the_deadline(self) -> None:
        """
        Requests held because the client reads no answers keep their
        connection busy and are closed at their read deadline, as on
        twisted.web's path; read in time, they are answered.
        """
        for drained, host in ((False, "192.0.2.1"), (True, "192.0.2.2")):
            channel, transport = self.connect(host)
            written = []

            def write(data: bytes) -> None:
                written.append(data)
                channel.pauseProducing()

            transport.write = write  # type: ignore[method-assign]
            channel.dataReceived(post() + post())
            self.assertEqual(len(written), 1)
            self.assertNotIn(channel, self.site._idle)
            self.clock.advance(29.9)
            if drained:
                transport.write = written.append  # type: ignore[method-assign]
                channel.resumeProducing()
                self.assertEqual(len(written), 2)
                self.clock.advance(1)
                self.assertFalse(transport.disconnecting)
            else:
                self.clock.advance(0.1)
                self.assertTrue(transport.disconnecting)
            self.close(channel)

    def test_body_apart_has_the_deadline(self) -> None:
        """
        A request whose body does not follow its head within the read
        deadline is closed at it, as a slow head is.
        """
        channel, transport = self.connect()
        request = post()
        head_end = request.index(b"\r\n\r\n") + 4
        channel.dataReceived(request[:head_end + 3])
        self.clock.advance(20)
        channel.dataReceived(request[head_end + 3:-1])
        self.clock.advance(9.9)
        self.assertFalse(transport.disconnecting)
        self.clock.advance(0.1)
        self.assertTrue(transport.disconnecting)
        self.assertEqual(transport.value(), b"")
        self.close(channel)
        channel, transport = self.connect("192.0.2.2")
        channel.dataReceived(request[:head_end])
        self.clock.advance(29)
        channel.dataReceived(request[head_end:])
        self.assertEqual(parse_responses(transport.value())[0][0], 200)
        self.assertEqual(self.clock.getDelayedCalls()[0].getTime(), self.clock.seconds() + 120)
        self.assertEqual(len(self.clock.getDelayedCalls()), 1)
        self.close(channel)

    def test_body_apart_restarts_the_idle_timer(self) -> None:
        """
        Without a read deadline, each piece of a body restarts the idle
        timer, as on twisted.web's path: a body that keeps coming is not
        cut off, one that stops is closed at the idle timeout.
        """
        server, _ = make_server()
        self.site = server.site(
            ConnectionLimits(max_connections=3, max_connections_per_address=2, read_timeout=None, idle_timeout=120),
            reactor=self.clock,
        )
        channel, transport = self.connect()
        request = post()
        head_end = request.index(b"\r\n\r\n") + 4
        channel.dataReceived(request[:head_end])
        self.clock.advance(100)
        channel.dataReceived(request[head_end:head_end + 5])
        self.clock.advance(100)
        channel.dataReceived(request[head_end + 5:])
        self.assertEqual(parse_responses(transport.value())[0][0], 200)
        self.assertFalse(transport.disconnecting)
        channel.dataReceived(request[:head_end])
        self.clock.advance(119)
        self.assertFalse(transport.disconnecting)
        self.clock.advance(1)
        self.assertTrue(transport.disconnecting)
        self.close(channel)

    def test_deadline_through_twisted_web(self) -> None:
        """
        A request twisted.web reads (here with C{Expect}) has the same
        deadline, and after its answer, a request begun in the same read
        too.
        """
        channel, transport = self.connect()
        channel.dataReceived(post(CHAIN_ID, b"Expect: 100-continue") + post()[:20])
        self.assertEqual(parse_responses(transport.value().split(b"HTTP/1.1 100 Continue\r\n\r\n")[-1])[0][0], 200)
        self.clock.advance(29.9)
        self.assertFalse(transport.disconnecting)
        self.clock.advance(0.1)
        self.assertTrue(transport.disconnecting)
        self.close(channel)

    def test_limits_and_idle_connections(self) -> None:
        """
        At the limit, per address or in all, a new connection takes the
        place of the longest idle one (its client reconnects); when none is
        idle it is refused with 503 and the reason.
        """
        first, first_transport = self.connect()
        second, second_transport = self.connect()
        second.dataReceived(post()[:5])
        third, third_transport = self.connect()
        self.assertTrue(first_transport.disconnecting)
        self.close(first)
        self.assertFalse(third_transport.disconnecting)
        third.dataReceived(post()[:5])
        _, refused = self.connect()
        self.assertTrue(refused.value().startswith(b"HTTP/1.1 503 Service Unavailable\r\n"))
        self.assertIn(
            b"too many connections from 192.0.2.1: the server holds its limit of 2 per address, none of them idle",
            refused.value(),
        )
        self.assertTrue(refused.disconnecting)
        other, other_transport = self.connect("192.0.2.9")
        other.dataReceived(post()[:5])
        _, full = self.connect("192.0.2.10")
        self.assertIn(b"too many connections: the server holds its limit of 3, none of them idle", full.value())
        self.assertEqual(self.site.connection_count(), 3)
        other.dataReceived(post()[5:])
        self.assertEqual(parse_responses(other_transport.value())[0][0], 200)
        newcomer, newcomer_transport = self.connect("192.0.2.10")
        self.assertTrue(other_transport.disconnecting)
        self.assertFalse(newcomer_transport.disconnecting)
        self.assertEqual(self.site.connection_count(), 3)
