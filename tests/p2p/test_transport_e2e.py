"""
The encrypted transport end to end: two nodes sync and propagate through a
TCP relay, which then changes one byte on the way (flips it, drops it, or
plays a piece again): the receiving node ends the connection and records
an offence of the sender's node id.
"""

from collections.abc import Callable

from twisted.internet import reactor
from twisted.internet.endpoints import TCP4ClientEndpoint, TCP4ServerEndpoint, connectProtocol
from twisted.internet.protocol import Factory, Protocol

from nodex.p2p.errors import DisconnectReason
from tests.p2p.nodes import NodesTestCase, event_counts, head_number

Tamper = Callable[[bytes], bytes]


def flip(data: bytes) -> bytes:
    return data[:-1] + bytes([data[-1] ^ 0x01])


def drop(data: bytes) -> bytes:
    return data[:-1] if len(data) > 1 else b""


def replay(data: bytes) -> bytes:
    return data + data


class _Side(Protocol):
    """
    One end of a relayed connection.
    """

    def __init__(self, relay: "Relay", forward: bool) -> None:
        self.relay = relay
        self.forward = forward
        self.other: "_Side | None" = None
        self.pending = b""

    def connectionMade(self) -> None:
        if self.pending and self.transport is not None:
            self.transport.write(self.pending)
            self.pending = b""

    def dataReceived(self, data: bytes) -> None:
        if self.forward and self.relay.tamper is not None:
            data, self.relay.tamper = self.relay.tamper(data), None
        assert self.other is not None
        if self.other.transport is None:
            self.other.pending += data
        else:
            self.other.transport.write(data)

    def connectionLost(self, reason: object = None) -> None:
        if self.other is not None and self.other.transport is not None:
            self.other.transport.loseConnection()


class Relay(Factory):
    """
    Passes the bytes of each connection to C{port} on 127.0.0.1; the next
    chunk from the dialer goes through C{tamper} once it is set.
    """

    def __init__(self, port: int) -> None:
        self.port = port
        self.tamper: Tamper | None = None

    def buildProtocol(self, addr: object) -> _Side:
        inbound, outbound = _Side(self, forward=True), _Side(self, forward=False)
        inbound.other, outbound.other = outbound, inbound
        connectProtocol(TCP4ClientEndpoint(reactor, "127.0.0.1", self.port), outbound)
        return inbound


class RelayTests(NodesTestCase):
    """
    Two nodes through a relay.
    """

    async def assertTamperEnds(self, tamper: Tamper) -> None:
        listener = await self.start_node("--rpc", "tcp:0:interface=127.0.0.1")
        await self.grow(listener, 3)
        relay = Relay(self.network(listener).listening_port)
        port = await TCP4ServerEndpoint(reactor, 0, interface="127.0.0.1").listen(relay)
        self.addCleanup(port.stopListening)
        dialer = await self.start_node("--peer", f"127.0.0.1:{port.getHost().port}")
        await self.wait_for(lambda: head_number(dialer) == 3, what="the sync through the relay")
        await self.grow(dialer, 1)
        await self.wait_for(lambda: head_number(listener) == 4, what="the propagation through the relay")
        [peer] = self.network(listener).established_peers()
        assert peer.node_id is not None
        relay.tamper = tamper
        await self.grow(dialer, 1)
        await self.wait_for(lambda: relay.tamper is None, what="the relay to change a piece")
        # More bytes behind the changed piece (a dropped byte leaves a frame waiting for one).
        await self.grow(dialer, 1)
        await self.wait_for(lambda: peer.closed, what="the listener to end the connection")
        self.assertEqual(peer.disconnect_reason, DisconnectReason.BAD_FRAME)
        self.assertEqual(event_counts(listener, peer.node_id.hex())["INVALID_MESSAGE"], 1)

    async def test_flipped_byte(self) -> None:
        """
        One bit of one byte flipped.
        """
        await self.assertTamperEnds(flip)

    async def test_dropped_byte(self) -> None:
        """
        A byte left out: the frame that lacks it is opened with the next one's
        first byte (more blocks follow, so it completes) and fails its tag.
        """
        await self.assertTamperEnds(drop)

    async def test_replayed_piece(self) -> None:
        """
        A piece of the stream played twice.
        """
        await self.assertTamperEnds(replay)
