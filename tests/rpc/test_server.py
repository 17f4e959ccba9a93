"""
Tests for L{nodex.rpc.server}: the HTTP side, through L{StubTreq}.
"""

import json
from typing import Any

from treq.testing import StubTreq
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from nodex.rpc.dispatch import Dispatcher
from nodex.rpc.eth import EthIdentityMethods
from nodex.rpc.registry import MethodRegistry, ModuleSettings
from nodex.rpc.server import BoundedRequest, HTTPPolicy, RPCServer, RPCSite

CHAIN_ID = b'{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}'
JSON = {"Content-Type": "application/json"}


def make_server(policy: HTTPPolicy = HTTPPolicy()) -> RPCServer:
    """
    A server with eth_chainId (chain 33) and the given transport rules.
    """
    registry = MethodRegistry({"eth": ModuleSettings(True)})
    registry.add(EthIdentityMethods(33, 62))
    return RPCServer(Dispatcher(registry, Clock()), policy)


class RPCServerTests(SynchronousTestCase):
    """
    Tests for L{RPCServer}.
    """

    def request(
        self, method: str = "POST", url: str = "http://127.0.0.1:4444/", body: bytes = CHAIN_ID,
        headers: dict[str, str] | None = None, policy: HTTPPolicy = HTTPPolicy(),
    ) -> tuple[int, Any, bytes]:
        """
        Make one request; return status, headers and body.
        """
        stub = StubTreq(make_server(policy).resource())
        response = self.successResultOf(
            stub.request(method, url, data=body, headers=JSON if headers is None else headers)
        )
        content = self.successResultOf(stub.content(response))
        return response.code, response.headers, content

    def test_answer(self) -> None:
        """
        POST / with a JSON body is answered 200 with a JSON content type.
        """
        code, headers, body = self.request()
        self.assertEqual(code, 200)
        self.assertEqual(json.loads(body), {"jsonrpc": "2.0", "id": 1, "result": "0x21"})
        self.assertEqual(headers.getRawHeaders("content-type"), ["application/json"])

    def test_content_length(self) -> None:
        """
        Answers carry their length (not chunked encoding, which would leave the client's
        length unknown), empty ones included.
        """
        stub = StubTreq(make_server().resource())
        for body, length in ((CHAIN_ID, 40), (b'{"jsonrpc":"2.0","method":"eth_chainId"}', 0)):
            response = self.successResultOf(stub.post("http://127.0.0.1/", data=body, headers=JSON))
            self.assertEqual(response.length, length)
            self.assertEqual(len(self.successResultOf(stub.content(response))), length)

    def test_errors_are_200(self) -> None:
        """
        JSON-RPC errors, parse errors included, still come with HTTP 200.
        """
        for body in (b"{", b'{"jsonrpc":"2.0","id":1,"method":"nope"}'):
            code, _, content = self.request(body=body)
            self.assertEqual(code, 200)
            self.assertIn("error", json.loads(content))

    def test_json_rpc_content_type(self) -> None:
        """
        application/json-rpc, parameters and other case are accepted.
        """
        for value in ("application/json-rpc", "Application/JSON; charset=utf-8"):
            self.assertEqual(self.request(headers={"Content-Type": value})[0], 200)

    def test_wrong_content_type(self) -> None:
        """
        Another content type, or none, is 415.
        """
        self.assertEqual(self.request(headers={"Content-Type": "text/plain"})[0], 415)
        self.assertEqual(self.request(headers={})[0], 415)

    def test_wrong_method(self) -> None:
        """
        GET, PUT and DELETE on / are 405.
        """
        for method in ("GET", "PUT", "DELETE"):
            self.assertEqual(self.request(method=method)[0], 405, method)

    def test_other_path(self) -> None:
        """
        Paths other than / are 404.
        """
        self.assertEqual(self.request(url="http://127.0.0.1:4444/rpc")[0], 404)

    def test_body_too_large(self) -> None:
        """
        A body over the limit is 413.
        """
        policy = HTTPPolicy(max_body_bytes=1024)
        self.assertEqual(self.request(body=b" " * 1025 + CHAIN_ID, policy=policy)[0], 413)
        self.assertEqual(self.request(body=CHAIN_ID, policy=policy)[0], 200)

    def test_notification_has_no_body(self) -> None:
        """
        A notification is answered 200 with an empty body.
        """
        code, _, body = self.request(body=b'{"jsonrpc":"2.0","method":"eth_chainId"}')
        self.assertEqual((code, body), (200, b""))

    def test_host_allow_list(self) -> None:
        """
        Loopback names and IP literals are accepted; other names only when configured; others are 403.
        """
        for host in ("localhost:4444", "127.0.0.1", "[::1]:4444", "192.0.2.7:4444"):
            self.assertEqual(self.request(headers={**JSON, "Host": host})[0], 200, host)
        self.assertEqual(self.request(headers={**JSON, "Host": "evil.example:4444"})[0], 403)
        allowed = HTTPPolicy(hosts=frozenset({"node.example"}))
        self.assertEqual(self.request(headers={**JSON, "Host": "node.example"}, policy=allowed)[0], 200)
        anything = HTTPPolicy(hosts=frozenset({"*"}))
        self.assertEqual(self.request(headers={**JSON, "Host": "evil.example"}, policy=anything)[0], 200)

    def test_origin(self) -> None:
        """
        A request with an Origin not configured is 403; a configured one gets the CORS header.
        """
        headers = {**JSON, "Origin": "http://localhost:3000"}
        self.assertEqual(self.request(headers=headers)[0], 403)
        policy = HTTPPolicy(cors_origins=frozenset({"http://localhost:3000"}))
        code, response_headers, _ = self.request(headers=headers, policy=policy)
        self.assertEqual(code, 200)
        self.assertEqual(response_headers.getRawHeaders("access-control-allow-origin"), ["http://localhost:3000"])

    def test_preflight(self) -> None:
        """
        OPTIONS from an allowed origin is a 204 preflight; without an Origin it is 405; from
        another origin 403.
        """
        policy = HTTPPolicy(cors_origins=frozenset({"*"}))
        code, headers, _ = self.request("OPTIONS", headers={"Origin": "http://a.example"}, policy=policy)
        self.assertEqual(code, 204)
        self.assertEqual(headers.getRawHeaders("access-control-allow-methods"), ["POST"])
        self.assertEqual(self.request("OPTIONS", headers={}, policy=policy)[0], 405)
        self.assertEqual(self.request("OPTIONS", headers={"Origin": "http://a.example"})[0], 403)


class BoundedRequestTests(SynchronousTestCase):
    """
    Tests for L{BoundedRequest} on an L{RPCSite}.
    """

    def make_request(self, limit: int) -> BoundedRequest:
        """
        A request on a channel of a site with the given body limit.
        """
        from twisted.web.test.requesthelper import DummyChannel

        channel = DummyChannel()
        channel.site = RPCSite(make_server().resource(), limit)
        return BoundedRequest(channel)

    def test_declared_length_over_limit(self) -> None:
        """
        A body that declares a length over the limit is not stored.
        """
        request = self.make_request(2048)
        request.gotLength(4096)
        request.handleContentChunk(b"x" * 4096)
        self.assertTrue(request.body_too_large)
        self.assertEqual(request.content.getvalue(), b"")

    def test_chunked_over_limit(self) -> None:
        """
        A body without declared length stops being stored when it passes the limit.
        """
        request = self.make_request(2048)
        request.gotLength(None)
        request.handleContentChunk(b"x" * 2000)
        self.assertFalse(request.body_too_large)
        request.handleContentChunk(b"x" * 100)
        self.assertTrue(request.body_too_large)

    def test_within_limit(self) -> None:
        """
        A body within the limit is stored whole.
        """
        request = self.make_request(2048)
        request.gotLength(10)
        request.handleContentChunk(b"0123456789")
        request.content.seek(0)
        self.assertEqual(request.content.read(), b"0123456789")
        self.assertFalse(request.body_too_large)
