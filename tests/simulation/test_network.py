"""
Tests of the simulated network: endpoints, ports and transports, as a
Twisted protocol sees them.
"""

from typing import Any

from twisted.internet.error import ConnectionDone, ConnectionLost, ConnectionRefusedError
from twisted.internet.error import TimeoutError as ConnectTimeoutError
from twisted.internet.interfaces import IPushProducer, ITCPTransport
from twisted.internet.protocol import Factory, Protocol
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase
from zope.interface import implementer

from nodex.simulation.clock import NodeClock, SimulatedTime
from nodex.simulation.network import WRITE_BUFFER_BYTES, Distribution, LinkModel, SimulatedNetwork


class Recorder(Protocol):
    """
    Records what arrives and when.
    """

    def __init__(self, time: SimulatedTime) -> None:
        self.time = time
        self.received: list[tuple[float, bytes]] = []
        self.made_at: float | None = None
        self.lost: Failure | None = None
        self.lost_at: float | None = None

    def connectionMade(self) -> None:
        self.made_at = self.time.now

    def dataReceived(self, data: bytes) -> None:
        self.received.append((self.time.now, data))

    def connectionLost(self, reason: Failure = Failure(ConnectionDone())) -> None:  # noqa: B008
        self.lost = reason
        self.lost_at = self.time.now

    @property
    def data(self) -> bytes:
        return b"".join(data for _, data in self.received)


@implementer(IPushProducer)
class Producer:
    def __init__(self) -> None:
        self.paused = 0
        self.resumed = 0

    def pauseProducing(self) -> None:
        self.paused += 1

    def resumeProducing(self) -> None:
        self.resumed += 1

    def stopProducing(self) -> None:
        pass


LATENCY = 0.05


class NetworkTestCase(SynchronousTestCase):
    """
    Two hosts, a server on one, links of exactly 50 ms and 1 MB/s.
    """

    def setUp(self) -> None:
        self.time = SimulatedTime(1000)
        self.model = LinkModel(
            latency=Distribution("constant", LATENCY), jitter=0.0, bandwidth=Distribution("constant", 1e6),
            window=256 * 1024,
        )
        self.network = SimulatedNetwork(self.time, self.model, seed=1)
        self.events: list[tuple[int, ...]] = []
        self.network.trace = self.events.append
        self.server_host = self.network.add_host("198.18.0.1", NodeClock(self.time), 0)
        self.client_host = self.network.add_host("198.18.0.2", NodeClock(self.time), 1)
        self.servers: list[Recorder] = []

        def build() -> Recorder:
            protocol = Recorder(self.time)
            self.servers.append(protocol)
            return protocol

        self.server_host.server_endpoint("tcp:50501").listen(Factory.forProtocol(build))

    def connect(self, port: int = 50501, address: str = "198.18.0.1") -> tuple[Any, Recorder]:
        client = Recorder(self.time)
        attempt = self.client_host.client_endpoint(address, port).connect(Factory.forProtocol(lambda: client))
        return attempt, client


class ConnectTests(NetworkTestCase):
    """
    Dials: accepted, refused, timed out.
    """

    def test_connect(self) -> None:
        """
        The server side is made when the SYN arrives, the client side a latency later.
        """
        attempt, client = self.connect()
        self.time.run()
        self.assertIs(self.successResultOf(attempt), client)
        (server,) = self.servers
        self.assertAlmostEqual(server.made_at, 1000 + LATENCY)
        self.assertAlmostEqual(client.made_at, 1000 + 2 * LATENCY)
        assert client.transport is not None and server.transport is not None
        self.assertTrue(ITCPTransport.providedBy(client.transport))
        self.assertEqual((client.transport.getPeer().host, client.transport.getPeer().port), ("198.18.0.1", 50501))
        self.assertEqual(server.transport.getPeer().host, "198.18.0.2")
        self.assertEqual(self.events, [(1, 1, 0)])

    def test_refused(self) -> None:
        """
        A port nobody listens on refuses after a round trip.
        """
        attempt, _ = self.connect(port=1)
        self.time.run()
        self.failureResultOf(attempt, ConnectionRefusedError)
        self.assertAlmostEqual(self.time.now, 1000 + self.model.connect_timeout)

    def test_unknown_address(self) -> None:
        """
        No host answers: the dial times out.
        """
        attempt, _ = self.connect(address="198.18.9.9")
        self.time.run()
        self.failureResultOf(attempt, ConnectTimeoutError)

    def test_factory_refuses(self) -> None:
        """
        A server factory that builds no protocol closes the connection at once.
        """
        class Refusing(Factory):
            def buildProtocol(self, addr: Any) -> None:
                return None

        self.server_host.listeners[50501].factory = Refusing()
        attempt, client = self.connect()
        self.time.run()
        self.successResultOf(attempt)
        assert client.lost is not None
        self.assertIsInstance(client.lost.value, ConnectionDone)

    def test_cancel(self) -> None:
        """
        A cancelled dial resets the connection the server accepted.
        """
        attempt, _ = self.connect()
        self.time.run(until=1000 + LATENCY * 1.5)
        attempt.cancel()
        self.failureResultOf(attempt)
        self.time.run()
        (server,) = self.servers
        assert server.lost is not None
        self.assertIsInstance(server.lost.value, ConnectionLost)


class StreamTests(NetworkTestCase):
    """
    Bytes arrive in order, with latency and bandwidth.
    """

    def connected(self) -> tuple[Recorder, Recorder]:
        attempt, client = self.connect()
        self.time.run()
        self.successResultOf(attempt)
        return client, self.servers[0]

    def test_latency_and_bandwidth(self) -> None:
        """
        A segment arrives after its transmission (size / bandwidth, after the
        previous one) and the latency.
        """
        client, server = self.connected()
        start = self.time.now
        assert client.transport is not None
        client.transport.write(b"x" * 100_000)
        client.transport.write(b"y" * 10)
        self.time.run()
        (first, data1), (second, data2) = server.received
        self.assertEqual((data1, data2), (b"x" * 100_000, b"y" * 10))
        self.assertAlmostEqual(first, start + 0.1 + LATENCY)
        self.assertAlmostEqual(second, start + 0.1 + 0.00001 + LATENCY)
        self.assertEqual(self.client_host.counters.sent, 100_010)
        self.assertEqual(self.server_host.counters.received, 100_010)

    def test_jitter_keeps_order(self) -> None:
        """
        With jitter, segments still arrive in the order sent.
        """
        self.network.model = LinkModel(latency=self.model.latency, jitter=0.9, bandwidth=Distribution("constant", 1e9))
        client, server = self.connected()
        assert client.transport is not None
        for index in range(200):
            client.transport.write(b"%d," % index)
        self.time.run()
        self.assertEqual(server.data, b"".join(b"%d," % index for index in range(200)))

    def test_loss_delays(self) -> None:
        """
        A lost segment arrives after a retransmission timeout.
        """
        client, server = self.connected()
        self.network.model = LinkModel(
            latency=self.model.latency, jitter=0.0, bandwidth=Distribution("constant", 1e9), loss=0.5,
            min_retransmit=0.2,
        )
        start = self.time.now
        assert client.transport is not None
        for index in range(50):
            client.transport.write(b"%d," % index)
        self.time.run()
        self.assertEqual(server.data, b"".join(b"%d," % index for index in range(50)))
        self.assertGreater(server.received[-1][0] - start, LATENCY + 0.2)

    def test_lose_connection(self) -> None:
        """
        A close ends this side at once and the other after the data before it.
        """
        client, server = self.connected()
        assert client.transport is not None
        client.transport.write(b"last words")
        client.transport.loseConnection()
        client.transport.write(b"ignored")
        self.time.run()
        self.assertEqual(server.data, b"last words")
        assert client.lost is not None and server.lost is not None
        self.assertIsInstance(client.lost.value, ConnectionDone)
        self.assertIsInstance(server.lost.value, ConnectionDone)
        assert client.lost_at is not None and server.lost_at is not None
        self.assertLess(client.lost_at, server.lost_at)

    def test_abort(self) -> None:
        """
        An abort drops unsent data; the other side sees a reset.
        """
        client, server = self.connected()
        assert client.transport is not None
        client.transport.abortConnection()
        self.time.run()
        assert server.lost is not None
        self.assertIsInstance(server.lost.value, ConnectionLost)

    def test_data_after_close_resets(self) -> None:
        """
        Data sent to a side that closed makes the sender's connection reset.
        """
        client, server = self.connected()
        assert client.transport is not None and server.transport is not None
        server.transport.loseConnection()
        client.transport.write(b"too late")
        self.time.run()
        assert client.lost is not None
        self.assertEqual(server.data, b"")

    def test_pause_reading(self) -> None:
        """
        A paused reader gets nothing until it resumes; then it gets all, in order.
        """
        client, server = self.connected()
        assert client.transport is not None and server.transport is not None
        server.transport.pauseProducing()
        client.transport.write(b"one")
        client.transport.write(b"two")
        self.time.run()
        self.assertEqual(server.received, [])
        server.transport.resumeProducing()
        self.time.run()
        self.assertEqual(server.data, b"onetwo")

    def test_window_and_producer(self) -> None:
        """
        While the reader is paused, the window fills; the writer's data then
        waits in its transport, whose registered producer is paused above
        64 KiB and resumed once all is sent.
        """
        client, server = self.connected()
        assert client.transport is not None and server.transport is not None
        producer = Producer()
        client.transport.registerProducer(producer, True)
        server.transport.pauseProducing()
        chunk = b"z" * 32 * 1024
        for _ in range(12):
            client.transport.write(chunk)
        self.time.run()
        self.assertEqual((producer.paused, producer.resumed), (1, 0))
        self.assertEqual(self.server_host.counters.received, self.model.window)
        server.transport.resumeProducing()
        self.time.run()
        self.assertEqual(len(server.data), 12 * len(chunk))
        self.assertEqual((producer.paused, producer.resumed), (1, 1))
        self.assertGreater(12 * len(chunk) - self.model.window, WRITE_BUFFER_BYTES)


class PartitionAndCrashTests(NetworkTestCase):
    """
    Partitions hold segments until the heal; a crash resets the connections.
    """

    def connected(self) -> tuple[Recorder, Recorder]:
        attempt, client = self.connect()
        self.time.run()
        self.successResultOf(attempt)
        return client, self.servers[0]

    def test_partition_holds_until_heal(self) -> None:
        """
        Nothing crosses the cut; after the heal what waited arrives, in order.
        """
        client, server = self.connected()
        assert client.transport is not None
        self.network.partition([["198.18.0.1"], ["198.18.0.2"]])
        client.transport.write(b"held")
        client.transport.write(b" back")
        self.time.run(until=self.time.now + 100)
        self.assertEqual(server.received, [])
        healed = self.time.now
        self.network.heal()
        self.time.run()
        self.assertEqual(server.data, b"held back")
        self.assertGreaterEqual(server.received[0][0], healed + LATENCY)

    def test_dial_across_partition(self) -> None:
        """
        A dial across the cut times out.
        """
        self.network.partition([["198.18.0.1"]])
        attempt, _ = self.connect()
        self.time.run()
        self.failureResultOf(attempt, ConnectTimeoutError)

    def test_crash(self) -> None:
        """
        A crashed host's connections are reset at the other side; its own
        protocols hear nothing more; its port refuses.
        """
        client, server = self.connected()
        self.server_host.clock.kill()
        self.server_host.crash()
        assert client.transport is not None
        client.transport.write(b"anyone?")
        self.time.run()
        assert client.lost is not None
        self.assertIsInstance(client.lost.value, ConnectionLost)
        self.assertEqual((server.data, server.lost), (b"", None))
        attempt, _ = self.connect()
        self.time.run()
        self.failureResultOf(attempt)
