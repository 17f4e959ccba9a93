"""
Tests for L{nodex.rpc.websocket} and L{nodex.rpc.subscription_methods}:
the WebSocket server on a real socket on 127.0.0.1, driven by a raw client
(L{tests.rpc.wsclient}) that sends frames byte by byte.
"""

import json
from collections.abc import Iterable
from typing import Any

from twisted.internet import reactor
from twisted.internet.defer import Deferred
from twisted.internet.endpoints import TCP4ClientEndpoint, connectProtocol
from twisted.internet.address import IPv4Address
from twisted.internet.error import ConnectionDone
from twisted.internet.protocol import Protocol
from twisted.internet.task import Clock, deferLater
from twisted.logger import globalLogPublisher
from twisted.python.failure import Failure
from twisted.test.proto_helpers import StringTransport
from twisted.trial.unittest import SynchronousTestCase, TestCase

from nodex.api.chain import ChainEvent
from nodex.rpc.dispatch import Dispatcher, EnvelopeLimits
from nodex.rpc.registry import Method, MethodRegistry, ModuleSettings
from nodex.rpc.server import HTTPPolicy
from nodex.rpc.subscription_methods import NEW_HEAD_MEMBERS, SubscriptionMethods, notification
from nodex.rpc.websocket import RPCWebSocketFactory, RPCWebSocketProtocol, WebSocketSettings, text_frame
from nodex.services.subscriptions import SubscriptionService
from tests.chain.logs.test_search import make_block
from tests.rpc.wsclient import BINARY, PING, TEXT, RawWebSocket, connect_raw, frame
from tests.services.test_filters import FakeChain, FakePool, topic_logs

CHAIN_ID = {"jsonrpc": "2.0", "id": 1, "method": "eth_chainId"}


class SlowMethods:
    """
    C{eth_chainId} at once, C{eth_slow}, whose answer waits for the test,
    and C{eth_big}, a long answer.
    """

    def __init__(self) -> None:
        """
        No slow call yet.
        """
        self.waiting: list[Deferred[str]] = []

    def rpc_methods(self) -> Iterable[Method]:
        """
        The two methods.
        """
        return [
            Method("eth_chainId", lambda: "0x21"),
            Method("eth_slow", self.slow),
            Method("eth_big", lambda: "0x" + "00" * 4096),
        ]

    def slow(self) -> Deferred[str]:
        """
        A Deferred the test fires.
        """
        waiter: Deferred[str] = Deferred()
        self.waiting.append(waiter)
        return waiter


class Node:
    """
    A dispatcher with the subscription methods over a fake chain and pool.
    """

    def __init__(self, max_batch: int = 50) -> None:
        """
        A chain at block 0, its pool, the service and the methods.
        """
        genesis, _ = make_block(0, [])
        self.chain = FakeChain(genesis)
        self.pool = FakePool()
        self.service = SubscriptionService(self.chain, self.pool)  # type: ignore[arg-type]
        self.subscriptions = SubscriptionMethods(self.service)
        self.slow = SlowMethods()
        registry = MethodRegistry({"eth": ModuleSettings(True)})
        registry.add(self.slow)
        registry.add(self.subscriptions)
        self.dispatcher = Dispatcher(registry, reactor, EnvelopeLimits(max_batch=max_batch))

    def mine(self, number: int, logs: list[Any] | None = None) -> Any:
        """
        Publish a new head (with a log of TOPIC per transaction when asked).
        """
        block, receipts = make_block(number, logs or [])
        self.chain.publish(ChainEvent((block,), adopted_receipts=(receipts,)))
        return block


class WebSocketServerTests(TestCase):
    """
    The server on a real socket.
    """

    def serve(self, settings: WebSocketSettings = WebSocketSettings(), policy: HTTPPolicy = HTTPPolicy()) -> int:
        """
        Listen on 127.0.0.1 with C{settings}; the port number.
        """
        self.node = Node()
        self.factory = RPCWebSocketFactory(self.node.dispatcher, policy, self.node.subscriptions, settings)
        port = reactor.listenTCP(0, self.factory, interface="127.0.0.1")
        self.addCleanup(port.stopListening)
        self.addCleanup(self.factory.close_all)
        return port.getHost().port

    async def client(self, port: int, **keywords: Any) -> RawWebSocket:
        """
        A connected raw client, closed at the end of the test.
        """
        client = await connect_raw(reactor, port, **keywords)
        self.addCleanup(lambda: client.closed)
        self.addCleanup(client.transport.loseConnection)
        return client

    async def ask(self, client: RawWebSocket, request: Any) -> Any:
        """
        Send one request and wait for the next text message.
        """
        count = len(client.texts())
        client.send_json(request)
        await client.wait_texts(count + 1)
        return client.texts()[count]

    async def test_answers_like_http(self) -> None:
        """
        A request, a batch and a malformed body get the dispatcher's answers;
        a notification gets nothing.
        """
        port = self.serve()
        client = await self.client(port)
        self.assertIn(b"101 Switching Protocols", client.handshake)
        self.assertEqual(await self.ask(client, CHAIN_ID), {"jsonrpc": "2.0", "id": 1, "result": "0x21"})
        batch = [CHAIN_ID, {"jsonrpc": "2.0", "id": 2, "method": "nope"}]
        answer = await self.ask(client, batch)
        self.assertEqual([entry.get("result") for entry in answer], ["0x21", None])
        self.assertEqual(answer[1]["error"]["code"], -32601)
        client.send_json({"jsonrpc": "2.0", "method": "eth_chainId"})
        not_an_object = await self.ask(client, "{")
        self.assertEqual((not_an_object["id"], not_an_object["error"]["code"]), (None, -32600))
        client.send_text(b"{not json")
        await client.wait_texts(4)
        self.assertEqual(client.texts()[3]["error"]["code"], -32700)
        self.assertEqual(len(client.texts()), 4)

    async def test_batch_limit(self) -> None:
        """
        The envelope's batch limit applies as over HTTP.
        """
        port = self.serve()
        client = await self.client(port)
        answer = await self.ask(client, [CHAIN_ID] * 51)
        self.assertEqual(answer["error"]["code"], -32600)

    async def test_host_and_origin_rules(self) -> None:
        """
        The upgrade request passes the HTTP rules: a foreign Host name or
        Origin is refused with 403; loopback, IP literals and configured
        origins are accepted.
        """
        port = self.serve(policy=HTTPPolicy(cors_origins=frozenset({"http://localhost:3000"})))
        refused = await connect_raw(reactor, port, host="evil.example")
        self.assertTrue(refused.handshake.startswith(b"HTTP/1.1 403"))
        await refused.closed
        refused = await connect_raw(reactor, port, origin="http://evil.example")
        self.assertTrue(refused.handshake.startswith(b"HTTP/1.1 403"))
        await refused.closed
        for host, origin in (("localhost:4445", None), ("192.0.2.1", "http://localhost:3000")):
            client = await self.client(port, host=host, origin=origin)
            self.assertIn(b"101 Switching Protocols", client.handshake)

    async def test_binary_message(self) -> None:
        """
        A binary message is read as UTF-8 JSON (web3.py sends binary
        frames) and answered in a text frame; one that is not UTF-8 gets the
        parse error, and the connection goes on.
        """
        port = self.serve()
        client = await self.client(port)
        client.transport.write(frame(BINARY, json.dumps(CHAIN_ID).encode()))
        await client.wait_texts(1)
        self.assertEqual(client.texts()[0]["result"], "0x21")
        client.transport.write(frame(BINARY, b'{"jsonrpc":"2.0","id":"\xff","method":"eth_chainId"}'))
        await client.wait_texts(2)
        self.assertEqual(client.texts()[1]["error"]["code"], -32700)
        self.assertEqual((await self.ask(client, CHAIN_ID))["result"], "0x21")

    async def test_invalid_utf8_closes(self) -> None:
        """
        A text message that is not UTF-8 closes the connection with 1007.
        """
        port = self.serve()
        client = await self.client(port)
        client.transport.write(frame(TEXT, b'{"jsonrpc":"2.0","id":"\xff\xfe","method":"eth_chainId"}'))
        await client.closed
        self.assertEqual(client.close_code(), 1007)

    async def test_oversize_frame_closes(self) -> None:
        """
        A frame over the message limit closes the connection with 1009, and
        so does a message of small frames that adds up past it.
        """
        port = self.serve(WebSocketSettings(max_message_bytes=1024))
        client = await self.client(port)
        client.send_text(b" " * 1025)
        await client.closed
        self.assertEqual(client.close_code(), 1009)
        client = await self.client(port)
        client.transport.write(frame(TEXT, b" " * 600, final=False) + frame(0x0, b" " * 600))
        await client.closed
        self.assertEqual(client.close_code(), 1009)

    async def test_large_answer_within_response_limit(self) -> None:
        """
        An answer larger than the incoming message limit is sent whole (what
        the node sends is bounded by the response limit instead).
        """
        port = self.serve(WebSocketSettings(max_message_bytes=1024))
        client = await self.client(port)
        answer = await self.ask(client, {"jsonrpc": "2.0", "id": 1, "method": "eth_big"})
        self.assertEqual(len(answer["result"]), 8194)

    async def test_new_heads_and_unsubscribe(self) -> None:
        """
        A newHeads subscription gets an C{eth_subscription} message per new
        head; after C{eth_unsubscribe} (true once, then false) nothing more.
        """
        port = self.serve()
        client = await self.client(port)
        answer = await self.ask(client, {"jsonrpc": "2.0", "id": 1, "method": "eth_subscribe", "params": ["newHeads"]})
        subscription = answer["result"]
        self.assertRegex(subscription, "^0x[0-9a-f]{32}$")
        block = self.node.mine(1)
        await client.wait_texts(2)
        message = client.texts()[1]
        self.assertEqual((message["method"], message["params"]["subscription"]), ("eth_subscription", subscription))
        self.assertEqual(message["params"]["result"]["hash"], "0x" + block.hash.hex())
        self.assertEqual(list(message["params"]["result"]), list(NEW_HEAD_MEMBERS))
        unsubscribe = {"jsonrpc": "2.0", "id": 2, "method": "eth_unsubscribe", "params": [subscription]}
        self.assertEqual((await self.ask(client, unsubscribe))["result"], True)
        self.assertEqual((await self.ask(client, {**unsubscribe, "id": 3}))["result"], False)
        self.node.mine(2)
        self.assertEqual((await self.ask(client, CHAIN_ID))["result"], "0x21")
        self.assertEqual(len(client.texts()), 5)

    async def test_logs_subscription(self) -> None:
        """
        A logs subscription with a topic filter gets the matching log objects.
        """
        port = self.serve()
        client = await self.client(port)
        topic = "0x" + "0a" * 32
        request = {"jsonrpc": "2.0", "id": 1, "method": "eth_subscribe", "params": ["logs", {"topics": [topic]}]}
        subscription = (await self.ask(client, request))["result"]
        self.node.mine(1, topic_logs(1))
        await client.wait_texts(2)
        result = client.texts()[1]["params"]
        self.assertEqual(result["subscription"], subscription)
        self.assertEqual((result["result"]["topics"], result["result"]["removed"]), ([topic], False))

    async def test_bad_subscriptions(self) -> None:
        """
        Unknown kinds and bad options get -32602 with a message; the
        connection goes on.
        """
        port = self.serve()
        client = await self.client(port)
        cases = [
            (["newBlocks"], "unknown subscription kind"),
            ([], "missing value for required argument 0"),
            ([7], "want a subscription kind"),
            (["logs", {"address": "0x12"}], 'field "address"'),
            (["logs", {"fromBlock": "0x1"}], "takes address and topics"),
            (["logs", {"topics": [["0x12"]]}], "topic position 0"),
            (["newPendingTransactions", "yes"], "invalid argument 1"),
            (["newHeads", {"includeTransactions": True}], "takes no options"),
        ]
        for index, (params, message) in enumerate(cases):
            answer = await self.ask(client, {"jsonrpc": "2.0", "id": index, "method": "eth_subscribe", "params": params})
            self.assertEqual(answer["error"]["code"], -32602, params)
            self.assertIn(message, answer["error"]["message"])
        answer = await self.ask(client, {"jsonrpc": "2.0", "id": 9, "method": "eth_unsubscribe", "params": ["0x12"]})
        self.assertEqual(answer["error"]["code"], -32602)
        self.assertEqual(self.node.service.count(), 0)

    async def test_subscription_limit(self) -> None:
        """
        A flood of eth_subscribe calls stops at the per-connection limit
        with -32011; another connection still subscribes.
        """
        port = self.serve(WebSocketSettings(max_subscriptions=3))
        client = await self.client(port)
        flood = [{"jsonrpc": "2.0", "id": index, "method": "eth_subscribe", "params": ["newHeads"]} for index in range(5)]
        answers = await self.ask(client, flood)
        self.assertEqual(["result" in answer for answer in answers], [True, True, True, False, False])
        self.assertEqual(answers[3]["error"]["code"], -32011)
        self.assertIn("limit of 3 subscriptions", answers[3]["error"]["message"])
        other = await self.client(port)
        answer = await self.ask(other, flood[0])
        self.assertIn("result", answer)

    async def test_subscriptions_end_with_connection(self) -> None:
        """
        When the connection closes, its subscriptions end.
        """
        port = self.serve()
        client = await self.client(port)
        await self.ask(client, {"jsonrpc": "2.0", "id": 1, "method": "eth_subscribe", "params": ["newHeads"]})
        await self.ask(client, {"jsonrpc": "2.0", "id": 2, "method": "eth_subscribe", "params": ["syncing"]})
        self.assertEqual(self.node.service.count(), 2)
        client.transport.loseConnection()
        await client.closed
        await deferLater(reactor, 0.05, lambda: None)
        self.assertEqual((self.node.service.count(), self.factory.connection_count()), (0, 0))

    async def test_notifications_wait_for_the_announcing_answer(self) -> None:
        """
        A subscription made in a batch whose answer waits for a slow element
        gets its notifications only after that answer, in order.
        """
        port = self.serve()
        client = await self.client(port)
        subscribe = {"jsonrpc": "2.0", "id": 2, "method": "eth_subscribe", "params": ["newHeads"]}
        client.send_json([subscribe, {"jsonrpc": "2.0", "id": 3, "method": "eth_slow"}])
        while not self.node.slow.waiting:
            await deferLater(reactor, 0.01, lambda: None)
        self.node.mine(1)
        self.node.mine(2)
        await deferLater(reactor, 0.05, lambda: None)
        self.assertEqual(client.texts(), [])
        self.node.slow.waiting[0].callback("0x1")
        await client.wait_texts(3)
        batch, first, second = client.texts()
        subscription = batch[0]["result"]
        self.assertEqual([first["params"]["subscription"], second["params"]["subscription"]], [subscription] * 2)
        self.assertEqual([first["params"]["result"]["number"], second["params"]["result"]["number"]], ["0x1", "0x2"])

    async def test_close_all(self) -> None:
        """
        C{close_all} (the node stopping) drops every connection, those still
        in their opening handshake too, and fires when they are gone.
        """
        port = self.serve()
        client = await self.client(port)
        silent = Protocol()
        await connectProtocol(TCP4ClientEndpoint(reactor, "127.0.0.1", port), silent)
        while self.factory.connection_count() < 2:
            await deferLater(reactor, 0.01, lambda: None)
        await self.factory.close_all()
        self.assertEqual(self.factory.connection_count(), 0)
        await client.closed

    async def test_ping_timeout_drops(self) -> None:
        """
        The server pings; a client that does not answer is dropped.
        """
        port = self.serve(WebSocketSettings(ping_interval=0.1, ping_timeout=0.1))
        client = await self.client(port, answer_pings=False)
        await client.closed
        self.assertIn(PING, [opcode for opcode, _ in client.frames])

    async def test_ponging_client_stays(self) -> None:
        """
        A client that answers the pings stays connected.
        """
        # autobahn's timers run in whole seconds.
        port = self.serve(WebSocketSettings(ping_interval=1, ping_timeout=2))
        client = await self.client(port)
        # Three pings: at least two ping timeouts passed with answers.
        for _ in range(300):
            if client.closed.called or [opcode for opcode, _ in client.frames].count(PING) >= 3:
                break
            await deferLater(reactor, 0.05, lambda: None)
        self.assertFalse(client.closed.called)
        self.assertGreaterEqual([opcode for opcode, _ in client.frames].count(PING), 3)

    async def test_client_that_does_not_read_is_dropped(self) -> None:
        """
        A client that sends requests but never reads the answers: once its
        answers fill the socket, the server reads no more of its requests
        (so that no more work is done and queued for it: what waits stays
        within the queue limit), and, its pongs unread, drops it at the
        ping timeout; the server goes on serving others.
        """
        port = self.serve(WebSocketSettings(max_queue_bytes=65536, ping_interval=1.0, ping_timeout=3.0))
        client = await self.client(port)
        client.transport.pauseProducing()
        batch = json.dumps([{"jsonrpc": "2.0", "id": 1, "method": "eth_big"}] * 50).encode()
        for _ in range(200):
            client.send_text(batch)
            await deferLater(reactor, 0.005, lambda: None)
            if self.factory.connection_count() == 0:
                break
        for _ in range(200):
            if self.factory.connection_count() == 0:
                break
            await deferLater(reactor, 0.05, lambda: None)
        self.assertEqual(self.factory.connection_count(), 0)
        self.flushLoggedErrors()
        other = await self.client(port)
        self.assertEqual((await self.ask(other, CHAIN_ID))["result"], "0x21")

    async def test_subscribers_that_do_not_read_are_dropped(self) -> None:
        """
        Two clients with 128 C{logs} subscriptions each that never read, and
        a block of 923 logs (issue 26: 53 MB queued for one such client,
        and 8 of them took the node from 92 to 518 MB): each is dropped once
        more than C{max_queue_bytes} wait for it, with a warning that says
        why; a client that reads is served meanwhile and after.
        """
        port = self.serve(WebSocketSettings(max_queue_bytes=1024 * 1024))
        silent = []
        for _ in range(2):
            client = await self.client(port)
            for _ in range(4):
                batch = [{"jsonrpc": "2.0", "id": n, "method": "eth_subscribe", "params": ["logs"]} for n in range(32)]
                answers = await self.ask(client, batch)
                self.assertEqual(len([answer for answer in answers if "result" in answer]), 32)
            client.transport.pauseProducing()
            silent.append(client)
        reader = await self.client(port)
        self.assertEqual(self.node.service.count(), 256)
        warnings: list[dict[str, Any]] = []
        globalLogPublisher.addObserver(warnings.append)
        self.addCleanup(globalLogPublisher.removeObserver, warnings.append)
        self.node.mine(1, [topic_logs(n)[0] for n in range(923)])
        for _ in range(400):
            if self.factory.connection_count() == 1 and not self.node.service._runner.pending:
                break
            await deferLater(reactor, 0.05, lambda: None)
        self.assertEqual(self.factory.connection_count(), 1)
        self.assertEqual(self.node.service.count(), 0)
        reasons = [event for event in warnings if "does not read what it is sent" in event.get("log_format", "")]
        self.assertEqual(len(reasons), 2)
        self.assertEqual((await self.ask(reader, CHAIN_ID))["result"], "0x21")


class SendQueueTests(SynchronousTestCase):
    """
    The outgoing queue of one connection, over a L{StringTransport}.
    """

    def test_paused_transport_bounds_the_queue(self) -> None:
        """
        While the transport's buffer is full, what is written is counted;
        past C{max_queue_bytes} the connection is dropped and its
        subscriptions end; a drained buffer restarts the count.
        """
        node = Node()
        factory = RPCWebSocketFactory(
            node.dispatcher, HTTPPolicy(), node.subscriptions,
            WebSocketSettings(max_queue_bytes=1000, ping_interval=0, open_timeout=0), reactor=Clock(),
        )
        protocol = factory.buildProtocol(None)
        assert isinstance(protocol, RPCWebSocketProtocol)
        transport = StringTransport()
        protocol.makeConnection(transport)
        protocol.dataReceived(
            b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        self.assertIs(transport.producer, protocol._watch)
        protocol.dataReceived(frame(TEXT, b'{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}'))
        self.assertEqual(node.service.count(), 1)
        transport.producer.pauseProducing()
        protocol._send(b"x" * 900)
        transport.producer.resumeProducing()
        transport.producer.pauseProducing()
        protocol._send(b"x" * 900)
        self.assertFalse(transport.disconnecting)
        protocol._send(b"x" * 200)
        self.assertTrue(transport.disconnecting or transport.disconnected)
        self.assertEqual((node.service.count(), factory.connection_count()), (0, 0))
        protocol.connectionLost(Failure(ConnectionDone()))


    def connect(self, settings: WebSocketSettings, node: Node | None = None) -> tuple[Any, Any, Any, Clock]:
        """
        A protocol of a factory with C{settings}, after its handshake over a
        L{StringTransport}: the node, the factory, the protocol and the clock.
        """
        node = node or Node()
        clock = Clock()
        factory = RPCWebSocketFactory(node.dispatcher, HTTPPolicy(), node.subscriptions, settings, reactor=clock)
        protocol = factory.buildProtocol(None)
        protocol.makeConnection(StringTransport())
        protocol.dataReceived(
            b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        return node, factory, protocol, clock

    def test_count_from_the_first_pause(self) -> None:
        """
        The transport says its buffer is full again at every write while it
        is: the count goes on from the first time (issue 26: each call
        restarted it, and a client that never read was never dropped, 53 MB
        queued for one), and is over at the limit plus one byte.
        """
        settings = WebSocketSettings(max_queue_bytes=1000, ping_interval=0, open_timeout=0)
        node, factory, protocol, _ = self.connect(settings)
        transport = protocol.transport
        transport.producer.pauseProducing()
        protocol._send(b"x" * 496)
        transport.producer.pauseProducing()
        protocol._send(b"x" * 496)
        self.assertFalse(transport.disconnecting)
        self.assertEqual(protocol._watch.queued, 1000)
        transport.producer.pauseProducing()
        protocol._send(b"")
        self.assertTrue(transport.disconnecting or transport.disconnected)
        self.assertEqual(factory.connection_count(), 0)
        protocol.connectionLost(Failure(ConnectionDone()))

    def test_notifications_batched_and_bounded(self) -> None:
        """
        Notifications wait in an outbox until the end of the reactor's turn
        and leave in one write; they count toward the limit as they come
        (with what a full buffer holds), so that a client that does not
        read is dropped even before the outbox is written.
        """
        settings = WebSocketSettings(max_queue_bytes=6000, ping_interval=0, open_timeout=0)
        node, factory, protocol, clock = self.connect(settings)
        transport = protocol.transport
        protocol.dataReceived(frame(TEXT, b'{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}'))
        sent = transport.value()
        for number in range(1, 4):
            node.mine(number)
        self.assertEqual(transport.value(), sent)
        clock.advance(0)
        written = transport.value()[len(sent):]
        self.assertEqual(written.count(b'"method":"eth_subscription"'), 3)
        transport.producer.pauseProducing()
        for number in range(4, 10):
            node.mine(number)
            if transport.disconnecting:
                break
        self.assertTrue(transport.disconnecting or transport.disconnected)
        self.assertEqual(node.service.count(), 0)
        protocol.connectionLost(Failure(ConnectionDone()))

    def test_reading_stops_while_answers_wait(self) -> None:
        """
        While the transport's buffer is full, and while more than
        C{max_pending_answers} answers are being worked out, the client's
        further requests are not read; reading resumes once they can go.
        """
        settings = WebSocketSettings(max_pending_answers=2, ping_interval=0, open_timeout=0)
        node, _, protocol, _ = self.connect(settings)
        transport = protocol.transport
        transport.producer.pauseProducing()
        self.assertEqual(transport.producerState, "paused")
        transport.producer.resumeProducing()
        self.assertEqual(transport.producerState, "producing")
        slow = frame(TEXT, b'{"jsonrpc":"2.0","id":1,"method":"eth_slow"}')
        protocol.dataReceived(slow + slow)
        self.assertEqual(transport.producerState, "producing")
        protocol.dataReceived(slow)
        self.assertEqual(transport.producerState, "paused")
        node.slow.waiting[0].callback("0x1")
        self.assertEqual(transport.producerState, "producing")
        for waiter in node.slow.waiting[1:]:
            waiter.callback("0x1")
        protocol.connectionLost(Failure(ConnectionDone()))

    def test_connection_limits(self) -> None:
        """
        At most C{max_connections} connections, and
        C{max_connections_per_address} from one address: at the limit one
        is served, one past it is answered 503 with the reason and closed
        before its handshake; a closed connection gives its place back.
        """
        node = Node()
        settings = WebSocketSettings(max_connections=3, max_connections_per_address=2, ping_interval=0, open_timeout=0)
        factory = RPCWebSocketFactory(node.dispatcher, HTTPPolicy(), node.subscriptions, settings, reactor=Clock())

        def connect(host: str) -> tuple[Any, StringTransport]:
            protocol = factory.buildProtocol(None)
            transport = StringTransport(peerAddress=IPv4Address("TCP", host, 4000))
            protocol.makeConnection(transport)
            return protocol, transport

        first, _ = connect("192.0.2.1")
        connect("192.0.2.1")
        _, refused = connect("192.0.2.1")
        self.assertTrue(refused.value().startswith(b"HTTP/1.1 503 Service Unavailable\r\n"))
        self.assertIn(b"too many connections from 192.0.2.1: the server holds its limit of 2 per address", refused.value())
        self.assertTrue(refused.disconnecting)
        connect("192.0.2.2")
        _, full = connect("192.0.2.3")
        self.assertIn(b"too many connections: the server holds its limit of 3\n", full.value())
        self.assertEqual(factory.connection_count(), 3)
        first.connectionLost(Failure(ConnectionDone()))
        _, accepted = connect("192.0.2.3")
        self.assertFalse(accepted.disconnecting)
        self.assertEqual(factory.connection_count(), 3)


class OverHTTPTests(SynchronousTestCase):
    """
    The subscription methods outside a WebSocket connection.
    """

    def test_subscribe_over_http(self) -> None:
        """
        Over HTTP (no connection in the context), eth_subscribe and
        eth_unsubscribe answer -32601 saying they need a WebSocket, whatever
        their parameters.
        """
        node = Node()
        for method, params in (("eth_subscribe", ["newHeads"]), ("eth_subscribe", []), ("eth_unsubscribe", ["0x1"])):
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
            answer = json.loads(self.successResultOf(node.dispatcher.handle(body)))
            self.assertEqual(answer["error"]["code"], -32601)
            self.assertIn(f"the method {method} needs a WebSocket connection", answer["error"]["message"])

    def test_notification_message(self) -> None:
        """
        A notification is an C{eth_subscription} message with the id and the result.
        """
        message = json.loads(notification(b"\x01" * 16, b'{"a":1}'))
        self.assertEqual(
            message,
            {"jsonrpc": "2.0", "method": "eth_subscription", "params": {"subscription": "0x" + "01" * 16, "result": {"a": 1}}},
        )


class TextFrameTests(SynchronousTestCase):
    """
    Tests for L{text_frame}.
    """

    def test_length_encodings(self) -> None:
        """
        Payloads up to 125 bytes carry their length in the second byte, up
        to 65535 in two more bytes, longer ones in eight; the frame is final,
        text, unmasked.
        """
        self.assertEqual(text_frame(b"ab"), b"\x81\x02ab")
        self.assertEqual(text_frame(b"x" * 125)[:2], b"\x81\x7d")
        self.assertEqual(text_frame(b"x" * 126)[:4], b"\x81\x7e\x00\x7e")
        self.assertEqual(text_frame(b"x" * 65536)[:10], b"\x81\x7f" + (65536).to_bytes(8, "big"))
        self.assertEqual(len(text_frame(b"x" * 65536)), 65546)
