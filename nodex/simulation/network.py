"""
The simulated network: hosts with IP addresses, links between them
(latency drawn from a distribution, bandwidth, loss), partitions, and TCP
connections between the hosts' protocols.

The nodes' peer network and protocol are the production ones; they see
this module only through Twisted's interfaces: server and client endpoints
(C{IStreamServerEndpoint}, C{IStreamClientEndpoint}), listening ports and
transports (C{ITCPTransport} with push-producer flow control both ways).
A transport carries bytes, in order, with the link's latency, its
bandwidth and retransmissions after losses; what the bytes mean is the
protocol's business, so a change of the wire protocol (or an encrypted
framing inside it) needs no change here (C{docs/simulation.md}).

The model of a stream, each way:

- a write is handed to the sender's "kernel" at once while the window
  (bytes in flight plus bytes the receiver has not read) has room, else
  kept in the transport's buffer; a producer registered on the transport
  is paused while that buffer holds more than 64 KiB (Twisted's
  C{FileDescriptor.bufferSize}) and resumed once it is empty;
- a segment leaves when the link is free (size / bandwidth after the
  previous one) and arrives a latency later (plus a retransmission
  timeout per loss), never before the segments sent before it;
- across a partition nothing arrives: segments wait and arrive after the
  heal (TCP retransmits them); a dial across it times out;
- a receiver that paused reading keeps what arrives in its buffer, which
  counts against the sender's window;
- a close sends a FIN behind the data; an abort, or the crash of a host,
  a reset that the other side sees as a lost connection.
"""

import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from twisted.internet.address import IPv4Address
from twisted.internet.defer import Deferred, succeed
from twisted.internet.error import ConnectionAborted, ConnectionDone, ConnectionLost, ConnectionRefusedError
from twisted.internet.error import TimeoutError as ConnectTimeoutError
from twisted.internet.interfaces import (
    IListeningPort,
    IProtocolFactory,
    IPushProducer,
    IStreamClientEndpoint,
    IStreamServerEndpoint,
    ITCPTransport,
)
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from nodex.simulation.clock import NodeClock, SimulatedTime

log = Logger()

WRITE_BUFFER_BYTES = 64 * 1024
"""Above this many unsent bytes a transport pauses its registered producer (Twisted's bufferSize)."""


@dataclass(frozen=True)
class Distribution:
    """
    A distribution of values (seconds, bytes per second).

    @ivar kind: C{"constant"} (C{value}), C{"uniform"} (C{low} to C{high}),
        C{"lognormal"} (median C{value}, shape C{sigma}), C{"exponential"}
        (mean C{value}) or C{"normal"} (mean C{value}, deviation C{sigma}:
        for clock errors, which may be negative).
    """

    kind: str = "constant"
    value: float = 0.0
    low: float = 0.0
    high: float = 0.0
    sigma: float = 0.0

    def sample(self, rng: random.Random) -> float:
        """
        One value.
        """
        if self.kind == "constant":
            return self.value
        if self.kind == "uniform":
            return rng.uniform(self.low, self.high)
        if self.kind == "lognormal":
            return self.value * rng.lognormvariate(0.0, self.sigma)
        if self.kind == "exponential":
            return rng.expovariate(1.0 / self.value) if self.value > 0 else 0.0
        if self.kind == "normal":
            return rng.gauss(self.value, self.sigma)
        raise ValueError(f"unknown distribution {self.kind!r}")


@dataclass(frozen=True)
class LinkModel:
    """
    How links behave.

    @ivar latency: one-way latency of a link in seconds, drawn once per pair of hosts.
    @ivar jitter: each segment's latency varies by up to this fraction of the link's.
    @ivar bandwidth: bytes per second each way, drawn once per pair of hosts.
    @ivar loss: the probability that a segment is lost (and retransmitted).
    @ivar min_retransmit: the least retransmission timeout, in seconds
        (the timeout is at least twice the link's latency).
    @ivar window: the most bytes in flight or unread at the receiver, each way.
    @ivar connect_timeout: seconds before a dial that gets no answer fails.
    """

    latency: Distribution = Distribution("lognormal", 0.05, sigma=0.5)
    jitter: float = 0.1
    bandwidth: Distribution = Distribution("constant", 12.5e6)
    loss: float = 0.0
    min_retransmit: float = 0.2
    window: int = 4 * 1024 * 1024
    connect_timeout: float = 10.0


class Link:
    """
    The path between two hosts: its latency and bandwidth.
    """

    __slots__ = ("latency", "bandwidth", "low", "high")

    def __init__(self, latency: float, bandwidth: float, jitter: float) -> None:
        self.latency = latency
        self.bandwidth = bandwidth
        self.low = latency * (1 - jitter)
        self.high = latency * (1 + jitter)


class Counters:
    """
    What a host sent and received, in bytes and segments.
    """

    __slots__ = ("sent", "received", "segments_sent", "segments_received")

    def __init__(self) -> None:
        self.sent = 0
        self.received = 0
        self.segments_sent = 0
        self.segments_received = 0


class SimulatedNetwork:
    """
    The hosts, the links between them, and the partitions.

    @ivar trace: called with a tuple of integers for each event the
        network records (connections, deliveries), for the run's digest.
    """

    def __init__(self, time: SimulatedTime, model: LinkModel, seed: int,
                 trace: Callable[[tuple[int, ...]], None] | None = None) -> None:
        """
        @param seed: the seed of the links' and segments' random draws.
        """
        self.time = time
        self.model = model
        self._seed = seed
        self.hosts: dict[str, SimulatedHost] = {}
        self._links: dict[tuple[str, str], Link] = {}
        self._groups: dict[str, int] | None = None
        self._stuck: list[tuple[Any, ...]] = []
        self.trace = trace or (lambda event: None)
        self.connections_made = 0

    def add_host(self, address: str, clock: NodeClock, index: int) -> "SimulatedHost":
        """
        A new host at C{address}, whose protocols run on C{clock}.

        @param index: the host's number in the trace.
        """
        if address in self.hosts:
            raise ValueError(f"address {address} is taken")
        host = SimulatedHost(self, address, clock, index)
        self.hosts[address] = host
        return host

    def link(self, a: str, b: str) -> Link:
        """
        The link between two addresses (the same both ways), drawn on first use
        from the seed and the two addresses alone.
        """
        key = (a, b) if a < b else (b, a)
        link = self._links.get(key)
        if link is None:
            rng = random.Random(f"{self._seed}/link/{key[0]}/{key[1]}")
            latency = max(0.0, self.model.latency.sample(rng))
            bandwidth = max(1.0, self.model.bandwidth.sample(rng))
            link = self._links[key] = Link(latency, bandwidth, self.model.jitter)
        return link

    # Partitions

    def partition(self, groups: list[list[str]]) -> None:
        """
        Cut the network into C{groups} of addresses: nothing crosses
        between groups until L{heal}.  Addresses in no group form one more.
        """
        self._groups = {}
        for number, group in enumerate(groups):
            for address in group:
                self._groups[address] = number

    def heal(self) -> None:
        """
        Join the groups again; what waited at the cut arrives, in order, a
        latency after the heal.
        """
        self._groups = None
        stuck, self._stuck = self._stuck, []
        for sender, data in stuck:
            sender._resend(data)

    def blocked(self, a: str, b: str) -> bool:
        """
        Whether a partition separates two addresses.
        """
        groups = self._groups
        if groups is None:
            return False
        return groups.get(a, -1) != groups.get(b, -1)

    def hold(self, sender: "SimulatedTransport", data: Any) -> None:
        """
        Keep a segment at the cut until the heal.
        """
        self._stuck.append((sender, data))

    # Draws

    def stream(self, *names: object) -> random.Random:
        """
        A random stream of its own for one connection, one dial: named by
        the seed and the endpoints, so that its draws do not depend on the
        order in which the nodes use the network.
        """
        return random.Random("/".join([str(self._seed), *map(str, names)]))

    def segment_delay(self, link: Link, rng: random.Random) -> float:
        """
        One segment's latency, its retransmissions included.
        """
        model = self.model
        delay = rng.uniform(link.low, link.high) if model.jitter else link.latency
        if model.loss:
            timeout = max(model.min_retransmit, 2 * link.latency)
            while rng.random() < model.loss:
                delay += timeout
                timeout *= 2
        return delay


class SimulatedHost:
    """
    One machine: its address, its listening ports, its connections and counters.

    @ivar clock: the reactor of the node running on it (replaced when it restarts).
    @ivar up: whether the machine runs (a crashed node's host is down until it restarts).
    """

    def __init__(self, network: SimulatedNetwork, address: str, clock: NodeClock, index: int) -> None:
        self.network = network
        self.address = address
        self.clock = clock
        self.index = index
        self.up = True
        self.counters = Counters()
        self.listeners: dict[int, SimulatedPort] = {}
        # A dict, not a set: a crash resets them in the order they were made.
        self.transports: dict[SimulatedTransport, None] = {}
        self._next_port = 40000

    def ephemeral_port(self) -> int:
        """
        The next local port of an outbound connection.
        """
        self._next_port += 1
        if self._next_port > 65535:
            self._next_port = 40001
        return self._next_port

    def server_endpoint(self, description: str) -> "SimulatedServerEndpoint":
        """
        The server endpoint of a C{tcp:PORT[:...]} description on this host.

        @raise ValueError: not a TCP description with a port.
        """
        kind, _, rest = description.partition(":")
        if kind != "tcp":
            raise ValueError(f"the simulated network has TCP endpoints only, not {description!r}")
        port = int(rest.split(":")[0].partition("=")[2] if rest.startswith("port=") else rest.split(":")[0])
        return SimulatedServerEndpoint(self, port)

    def client_endpoint(self, host: str, port: int) -> "SimulatedClientEndpoint":
        """
        The client endpoint of a peer's address and port, from this host.
        """
        return SimulatedClientEndpoint(self, host, port)

    def crash(self) -> None:
        """
        The machine's node was killed: its ports close, and every
        connection is reset (the other sides see the connection lost).
        """
        self.up = False
        self.listeners.clear()
        for transport in list(self.transports):
            transport._killed()
        self.transports.clear()

    def restart(self, clock: NodeClock) -> None:
        """
        The machine runs again, with a new node on C{clock}.
        """
        self.up = True
        self.clock = clock


@implementer(IStreamServerEndpoint)
class SimulatedServerEndpoint:
    """
    Where a host listens.
    """

    def __init__(self, host: SimulatedHost, port: int) -> None:
        self._host = host
        self._port = port

    def listen(self, protocolFactory: IProtocolFactory) -> "Deferred[SimulatedPort]":
        """
        Listen on the port.

        @return: a Deferred that has fired with the listening port.
        """
        if self._port in self._host.listeners:
            from twisted.internet.error import CannotListenError

            failed: Deferred[SimulatedPort] = Deferred()
            failed.errback(CannotListenError(self._host.address, self._port, OSError("address in use")))
            return failed
        port = SimulatedPort(self._host, self._port, protocolFactory)
        self._host.listeners[self._port] = port
        return succeed(port)


@implementer(IListeningPort)
class SimulatedPort:
    """
    A listening port.
    """

    def __init__(self, host: SimulatedHost, port: int, factory: IProtocolFactory) -> None:
        self._host = host
        self.port = port
        self.factory = factory

    def startListening(self) -> None:
        """
        Already listening.
        """

    def stopListening(self) -> "Deferred[None]":
        """
        Refuse connections from now on.
        """
        if self._host.listeners.get(self.port) is self:
            del self._host.listeners[self.port]
        return succeed(None)

    def getHost(self) -> IPv4Address:
        """
        The address listened on.
        """
        return IPv4Address("TCP", self._host.address, self.port)


@implementer(IStreamClientEndpoint)
class SimulatedClientEndpoint:
    """
    A dial from one host to an address and port.
    """

    def __init__(self, host: SimulatedHost, address: str, port: int) -> None:
        self._host = host
        self._address = address
        self._port = port

    def connect(self, protocolFactory: IProtocolFactory) -> "Deferred[Any]":
        """
        Dial: the SYN reaches the target a latency later; a listening port
        there accepts (its factory may refuse: the connection then closes
        at once), a closed one refuses; no answer (the target is down or
        beyond a partition) fails after the connect timeout.

        @return: a Deferred firing with the protocol once connected.
        """
        return _Dial(self._host, self._address, self._port, protocolFactory).start()


class _Dial:
    """
    One connection attempt.
    """

    def __init__(self, host: SimulatedHost, address: str, port: int, factory: IProtocolFactory) -> None:
        self.host = host
        self.network = host.network
        self.address = address
        self.port = port
        self.factory = factory
        self.local_port = host.ephemeral_port()
        self.generation = host.clock.generation
        self.done = False
        self.server: SimulatedTransport | None = None
        self.deferred: Deferred[Any] = Deferred(self._cancel)
        self.rng = self.network.stream("dial", host.address, self.local_port, address, port)

    def start(self) -> "Deferred[Any]":
        network = self.network
        time = network.time
        time.later(network.model.connect_timeout, self._timed_out)
        if not network.blocked(self.host.address, self.address):
            link = network.link(self.host.address, self.address)
            time.later(network.segment_delay(link, self.rng), self._syn_arrived, link)
        return self.deferred

    def _alive(self) -> bool:
        return not self.done and self.host.up and self.host.clock.generation == self.generation

    def _cancel(self, deferred: Deferred[Any]) -> None:
        self.done = True
        if self.server is not None:
            self.server._reset_by_peer()

    def _timed_out(self) -> None:
        if self._alive():
            self.done = True
            self.deferred.errback(ConnectTimeoutError(string=f"connection to {self.address}:{self.port} timed out"))

    def _syn_arrived(self, link: Link) -> None:
        if self.done:
            return
        network = self.network
        target = network.hosts.get(self.address)
        back = network.segment_delay(link, self.rng)
        if target is None or not target.up:
            return
        listener = target.listeners.get(self.port)
        if listener is None:
            network.time.later(back, self._refused)
            return
        client_address = IPv4Address("TCP", self.host.address, self.local_port)
        server_address = IPv4Address("TCP", target.address, self.port)
        server = SimulatedTransport(target, server_address, client_address, link)
        self.server = server
        protocol = listener.factory.buildProtocol(client_address)
        network.time.later(back, self._accepted, server, server_address, client_address, link)
        if protocol is None:
            server._refuse()
            return
        server._attach(protocol)

    def _refused(self) -> None:
        if self._alive():
            self.done = True
            self.deferred.errback(ConnectionRefusedError(f"{self.address}:{self.port}"))

    def _accepted(self, server: "SimulatedTransport", server_address: IPv4Address, client_address: IPv4Address,
                  link: Link) -> None:
        if not self._alive():
            if not self.done and not server._closed:
                server._reset_by_peer()
            return
        self.done = True
        target = server._host
        if not target.up or target.clock.generation != server._generation:
            # The target crashed between the SYN and its answer.
            self.deferred.errback(ConnectionRefusedError(f"{self.address}:{self.port}"))
            return
        client = SimulatedTransport(self.host, client_address, server_address, link)
        client._pair(server)
        protocol = self.factory.buildProtocol(server_address)
        if protocol is None:
            client.abortConnection()
            self.deferred.errback(ConnectionAborted("the client factory refused the connection"))
            return
        self.network.connections_made += 1
        self.network.trace((1, self.host.index, server._host.index))
        client._attach(protocol)
        self.deferred.callback(protocol)


_FIN = b""
_RESET = None


@implementer(ITCPTransport, IPushProducer)
class SimulatedTransport:
    """
    One end of a simulated TCP connection.
    """

    def __init__(self, host: SimulatedHost, local: IPv4Address, remote: IPv4Address, link: Link) -> None:
        self._host = host
        self._network = host.network
        self._generation = host.clock.generation
        self._local = local
        self._remote = remote
        self._link = link
        self._rng = self._network.stream(local.host, local.port, remote.host, remote.port)
        self.protocol: Any = None
        self.peer: SimulatedTransport | None = None
        self.connected = False
        self.disconnecting = False
        self._closed = False
        self._fin_sent = False
        # Sending.
        self._unsent: deque[bytes] = deque()
        self._unsent_bytes = 0
        self._in_flight = 0
        self._busy_until = 0.0
        self._last_arrival = 0.0
        self._producer: Any = None
        self._producer_paused = False
        # Receiving.
        self._reading_paused = False
        self._received: deque[bytes | None] = deque()
        self._received_bytes = 0
        self._early: deque[bytes | None] = deque()
        host.transports[self] = None

    # Wiring

    def _pair(self, other: "SimulatedTransport") -> None:
        self.peer = other
        other.peer = self
        early, other._early = other._early, deque()
        other._flush_early(early)

    def _attach(self, protocol: Any) -> None:
        self.protocol = protocol
        self.connected = True
        protocol.makeConnection(self)

    def _flush_early(self, early: deque[bytes | None]) -> None:
        for data in early:
            if data is _RESET:
                self._reset_by_self()
            elif data == _FIN:
                self._send_fin()
            else:
                self._send(data)

    def _refuse(self) -> None:
        """
        The server's factory refused: close at once (the client sees a connection that ends).
        """
        self._closed = True
        self._host.transports.pop(self, None)
        self._fin_or_early()

    def _fin_or_early(self) -> None:
        if self.peer is None:
            self._early.append(_FIN)
        else:
            self._send_fin()

    # ITransport

    def write(self, data: bytes) -> None:
        """
        Send C{data} (nothing once closing).
        """
        if self.disconnecting or self._closed or not data:
            return
        data = bytes(data)
        size = len(data)
        self._host.counters.sent += size
        peer = self.peer
        if peer is None:
            self._early.append(data)
            return
        if not self._unsent and self._room(size):
            self._send(data)
            return
        self._unsent.append(data)
        self._unsent_bytes += size
        if self._producer is not None and not self._producer_paused and self._unsent_bytes > WRITE_BUFFER_BYTES:
            self._producer_paused = True
            self._producer.pauseProducing()

    def writeSequence(self, data: list[bytes]) -> None:
        """
        Send the concatenation of C{data}.
        """
        self.write(b"".join(data))

    def loseConnection(self) -> None:
        """
        Close after the unsent data: the other side sees a clean close, this side's protocol is told at once.
        """
        if self.disconnecting or self._closed:
            return
        self.disconnecting = True
        self._reading_paused = True
        if not self._unsent:
            self._close(ConnectionDone("closed"))

    def abortConnection(self) -> None:
        """
        Close at once, dropping unsent data; the other side sees a reset.
        """
        if self._closed:
            return
        self._unsent.clear()
        self._unsent_bytes = 0
        self._reset_by_self()

    def getPeer(self) -> IPv4Address:
        """
        The other side's address.
        """
        return self._remote

    def getHost(self) -> IPv4Address:
        """
        This side's address.
        """
        return self._local

    def getTcpNoDelay(self) -> bool:
        return True

    def setTcpNoDelay(self, enabled: bool) -> None:
        pass

    def getTcpKeepAlive(self) -> bool:
        return False

    def setTcpKeepAlive(self, enabled: bool) -> None:
        pass

    def loseWriteConnection(self) -> None:
        """
        Half-close is not modelled: a full close.
        """
        self.loseConnection()

    def getHandle(self) -> None:
        return None

    # IConsumer (this side's writes)

    def registerProducer(self, producer: Any, streaming: bool) -> None:
        """
        Pause C{producer} while more than 64 KiB wait to be sent.
        """
        self._producer = producer
        self._producer_paused = False
        if self._unsent_bytes > WRITE_BUFFER_BYTES:
            self._producer_paused = True
            producer.pauseProducing()

    def unregisterProducer(self) -> None:
        self._producer = None
        self._producer_paused = False

    # IPushProducer (this side's reading)

    def pauseProducing(self) -> None:
        """
        Stop handing received data to the protocol (it stays in the buffer,
        and counts against the sender's window).
        """
        self._reading_paused = True

    def resumeProducing(self) -> None:
        """
        Hand the buffered data to the protocol, on a later turn.
        """
        if self._closed or self.disconnecting or not self._reading_paused:
            return
        self._reading_paused = False
        if self._received:
            self._network.time.later(0, self._drain_received)

    def stopProducing(self) -> None:
        """
        Close the connection.
        """
        self.loseConnection()

    # Sending, on the wire

    def _room(self, size: int) -> bool:
        peer = self.peer
        waiting = self._in_flight + (peer._received_bytes if peer is not None else 0)
        return waiting == 0 or waiting + size <= self._network.model.window

    def _send(self, data: bytes) -> None:
        network = self._network
        self._in_flight += len(data)
        peer = self.peer
        assert peer is not None
        if network.blocked(self._host.address, peer._host.address):
            network.hold(self, data)
            return
        self._transmit(data)

    def _resend(self, data: bytes | None) -> None:
        """
        A segment held at a partition, sent again after the heal.
        """
        if data is _RESET:
            self._reset_by_self()
        elif data == _FIN:
            self._transmit(_FIN)
        else:
            self._transmit(data)

    def _transmit(self, data: bytes) -> None:
        network = self._network
        link = self._link
        time = network.time
        now = time.now
        start = self._busy_until if self._busy_until > now else now
        done = start + len(data) / link.bandwidth
        self._busy_until = done
        arrival = done + network.segment_delay(link, self._rng)
        if arrival < self._last_arrival:
            arrival = self._last_arrival
        self._last_arrival = arrival
        time.queue(arrival, self._arrive, (data,))

    def _arrive(self, data: bytes) -> None:
        """
        A segment of this side reaches the other.
        """
        peer = self.peer
        assert peer is not None
        if data:
            self._in_flight -= len(data)
        if peer._closed or not peer._host.up or peer._host.clock.generation != peer._generation:
            if data and not self._closed:
                # Data for a closed socket: the other kernel answers with a reset.
                self._network.time.later(self._link.latency, self._reset_by_peer)
            return
        if data:
            size = len(data)
            counters = peer._host.counters
            counters.received += size
            counters.segments_received += 1
            host = self._host
            host.counters.segments_sent += 1
            self._network.trace((2, host.index, peer._host.index, size))
        if peer._reading_paused or peer._received:
            peer._received.append(data)
            if data:
                peer._received_bytes += len(data)
            return
        if data:
            peer._deliver(data)
            self._pump()
        else:
            peer._fin_arrived()

    def _pump(self) -> None:
        """
        Send what the window now has room for; resume the producer once all is sent.
        """
        unsent = self._unsent
        while unsent and self._room(len(unsent[0])):
            data = unsent.popleft()
            self._unsent_bytes -= len(data)
            self._send(data)
        if not unsent:
            if self._producer is not None and self._producer_paused:
                self._producer_paused = False
                self._producer.resumeProducing()
            if self.disconnecting and not self._closed:
                self._close(ConnectionDone("closed"))

    # Receiving

    def _deliver(self, data: bytes) -> None:
        self._network.time.current = self._host.clock
        try:
            self.protocol.dataReceived(data)
        except Exception:
            log.failure("a simulated protocol failed on its data", Failure())
            self.abortConnection()

    def _drain_received(self) -> None:
        while self._received and not self._reading_paused and not self._closed:
            data = self._received.popleft()
            if data:
                self._received_bytes -= len(data)
                self._deliver(data)
            elif data == _FIN:
                self._fin_arrived()
            else:
                self._reset_by_peer()
        if self.peer is not None:
            self.peer._pump()

    def _fin_arrived(self) -> None:
        """
        The other side closed: this side's connection ends cleanly.
        """
        if self._closed:
            return
        self._close(ConnectionDone("the peer closed the connection"), fin=False)
        self._fin_sent = True

    # Closing

    def _close(self, reason: Exception, fin: bool = True) -> None:
        """
        End this side: send a FIN behind the data (when C{fin}) and tell the
        protocol on a later turn.
        """
        self._closed = True
        self.connected = False
        self._host.transports.pop(self, None)
        if fin and not self._fin_sent:
            self._send_fin()
        if self.peer is not None:
            self._network.trace((3, self._host.index, self.peer._host.index))
        self._network.time.later(0, self._lost, reason)

    def _send_fin(self) -> None:
        self._fin_sent = True
        if self.peer is None:
            self._early.append(_FIN)
            return
        network = self._network
        if network.blocked(self._host.address, self.peer._host.address):
            network.hold(self, _FIN)
            return
        self._transmit(_FIN)

    def _lost(self, reason: Exception) -> None:
        if not self._host.up or self._host.clock.generation != self._generation or self.protocol is None:
            return
        protocol, self.protocol = self.protocol, None
        if self._producer is not None:
            self._producer = None
        self._network.time.current = self._host.clock
        try:
            protocol.connectionLost(Failure(reason))
        except Exception:
            log.failure("a simulated protocol failed on its connection's end", Failure())

    def _reset_by_self(self) -> None:
        """
        Abort: this side ends at once, the other sees a reset a latency later.
        """
        already = self._closed
        if not already:
            self._closed = True
            self.connected = False
            self._host.transports.pop(self, None)
            self._network.time.later(0, self._lost, ConnectionAborted())
        if self.peer is None:
            self._early.append(_RESET)
            return
        self._send_reset()

    def _send_reset(self) -> None:
        """
        Tell the other side (a latency later, or after a heal) that this side is gone.
        """
        peer = self.peer
        if peer is None or peer._closed:
            return
        network = self._network
        if network.blocked(self._host.address, peer._host.address):
            network.hold(self, _RESET)
            return
        network.time.later(network.segment_delay(self._link, self._rng), peer._reset_by_peer)

    def _reset_by_peer(self) -> None:
        """
        A reset arrived: this side's connection is lost.
        """
        if self._closed:
            return
        self._closed = True
        self.connected = False
        self._unsent.clear()
        self._unsent_bytes = 0
        self._host.transports.pop(self, None)
        if self.peer is not None:
            self._network.trace((4, self._host.index, self.peer._host.index))
        self._lost(ConnectionLost("connection reset by peer"))

    def _killed(self) -> None:
        """
        This side's host crashed: no more callbacks here; the other side gets a reset.
        """
        if self._closed:
            return
        self._closed = True
        self.connected = False
        self.protocol = None
        self._send_reset()

    def __repr__(self) -> str:
        return f"<SimulatedTransport {self._local.host}:{self._local.port} -> {self._remote.host}:{self._remote.port}>"


__all__ = [
    "Distribution",
    "Link",
    "LinkModel",
    "SimulatedClientEndpoint",
    "SimulatedHost",
    "SimulatedNetwork",
    "SimulatedPort",
    "SimulatedServerEndpoint",
    "SimulatedTransport",
]
