"""
Hostile peers end to end (issue "Peer reputation and bans"): real nodes in
one process (RocksDB, loopback TCP on port 0, RPC over HTTP), a node that
punishes (the presets' scoring), an honest peer that keeps syncing from it,
and hostile peers that connect from another loopback address (127.0.0.2), so
that the punishment of their address does not touch the honest peer's
(127.0.0.1).  Loopback addresses cannot be banned through C{sco}: the ban
test uses this machine's own non-loopback address, and is skipped where
there is none.
"""

import socket
from dataclasses import replace
from typing import Any

from twisted.internet import reactor
from twisted.internet.defer import Deferred
from twisted.internet.endpoints import TCP4ClientEndpoint, connectProtocol
from twisted.internet.task import deferLater

from nodex.p2p.messages import WIRE_PROTOCOL_VERSION
from nodex.p2p.errors import DisconnectReason
from nodex.p2p.identity import NodeKey
from nodex.p2p.messages import Disconnect, Hello, NewBlock, Ping, decode_message, encode_frame, encode_message
from nodex.p2p.host import ChainStatus, PeerSettings
from nodex.p2p.protocol import PeerProtocol
from nodex.node import NodeService
from tests.p2p.nodes import NodesTestCase, event_counts, head_number, rpc
from tests.p2p.test_protocol import FakeHost
from tests.p2p.wire import SecureRaw

HOSTILE = "127.0.0.2"
"""The loopback address hostile peers connect from (the honest peer's is 127.0.0.1)."""


def local_address() -> str | None:
    """
    This machine's IPv4 address on its default route (no packet is sent), or
    L{None} when it has none but loopback.
    """
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("198.51.100.1", 9))
        address = str(probe.getsockname()[0])
    except OSError:
        return None
    finally:
        probe.close()
    return None if address.startswith("127.") or address == "0.0.0.0" else address


Raw = SecureRaw
"""A client that writes plaintext frames over the encrypted transport and keeps the node's answers, opened."""


def messages(data: bytes) -> list[object]:
    """
    The messages of a byte stream of frames.
    """
    found = []
    while len(data) >= 4:
        length = int.from_bytes(data[:4], "big")
        found.append(decode_message(data[4 : 4 + length]))
        data = data[4 + length :]
    return found


class HostilePeersTestCase(NodesTestCase):
    """
    Nodes, and hostile clients connecting to them from a chosen address.
    """

    async def setup_nodes(self, *argv: str) -> tuple[NodeService, NodeService]:
        """
        A punishing node with RPC and a short chain (and the options
        C{argv}), and an honest peer synced from it.
        """
        node = await self.start_node("--rpc", "tcp:0:interface=127.0.0.1", *argv)
        await self.grow(node, 3)
        honest = await self.start_node("--peer", self.address(node))
        await self.wait_for(lambda: head_number(honest) == 3, what="the honest peer's sync")
        return node, honest

    async def assertHonestPeerSyncs(self, node: NodeService, honest: NodeService) -> None:
        """
        The honest peer is still connected, follows new blocks, and RPC answers.
        """
        self.assertEqual(len(self.network(node).established_peers()), 1)
        target = head_number(node) + 2
        await self.grow(node, 2)
        await self.wait_for(lambda: head_number(honest) == target, what="the honest peer to follow")
        self.assertEqual(await rpc(node, "eth_blockNumber"), hex(target))
        self.assertEqual(len(self.network(node).established_peers()), 1)

    async def raw(self, node: NodeService, data: bytes, source: str = HOSTILE) -> bytes:
        """
        Send raw bytes from C{source}; return everything the node sent until it closed the connection.
        """
        protocol = Raw(data)
        await connectProtocol(self.endpoint(node, source), protocol)
        await protocol.closed
        return protocol.received

    def endpoint(self, node: NodeService, source: str) -> TCP4ClientEndpoint:
        """
        A client endpoint to the node's P2P port, from the address C{source}.
        """
        return TCP4ClientEndpoint(reactor, "127.0.0.1", self.network(node).listening_port, bindAddress=(source, 0))

    def hello(self, node: NodeService, **changes: Any) -> bytes:
        """
        The frame of a hello that matches the node's chain but for C{changes}.
        """
        genesis = self.network(node).settings.genesis_hash
        hello = Hello(WIRE_PROTOCOL_VERSION, 7771, genesis, genesis, 0, 0, NodeKey.generate().node_id, b"\x01" * 32, 0)
        return encode_frame(replace(hello, **changes))

    async def peer(self, node: NodeService, source: str = HOSTILE, key: NodeKey | None = None,
                   host: FakeHost | None = None) -> PeerProtocol:
        """
        A test-driven peer protocol connected from C{source} (with the node
        key C{key}, else a fresh one), its handshake done or refused.
        """
        genesis = self.network(node).settings.genesis_hash
        if host is None:
            host = FakeHost(genesis=genesis, settings=PeerSettings(messages_per_second=1_000_000))
            host.status = ChainStatus(7771, genesis, genesis, 0, 0, 0)
        if key is not None:
            host.node_key = key
        protocol = PeerProtocol(host, reactor, inbound=False)  # type: ignore[arg-type]
        lost: Deferred[None] = Deferred()
        original = protocol.connectionLost

        def connection_lost(reason: Any = None) -> None:
            original(reason)
            lost.callback(None)

        protocol.connectionLost = connection_lost  # type: ignore[method-assign]
        protocol.lost = lost  # type: ignore[attr-defined]
        protocol.own_id = host.node_key.node_id  # type: ignore[attr-defined]
        await connectProtocol(self.endpoint(node, source), protocol)
        await self.wait_for(lambda: protocol.established or protocol.closed, what="the handshake")
        return protocol

    async def assertRefusedOnReconnect(self, node: NodeService, source: str = HOSTILE) -> None:
        """
        A new connection from C{source} is refused at once for its
        reputation, whatever it sends: closed before the key exchange,
        without a word.
        """
        protocol = Raw(self.hello(node))
        await connectProtocol(self.endpoint(node, source), protocol)
        await protocol.closed
        self.assertEqual(protocol.raw, b"")

    async def address_record(self, node: NodeService, address: str = HOSTILE) -> dict[str, Any]:
        """
        The node's C{sco_peerList} record of an address.
        """
        [record] = [entry for entry in await rpc(node, "sco_peerList") if entry["id"] == address]
        return dict(record)

    async def assertPunished(self, node: NodeService, counter: str, address: str = HOSTILE) -> None:
        """
        The address's record counts the offence and is punished.
        """
        record = await self.address_record(node, address)
        self.assertEqual(record[counter], 1)
        self.assertEqual((record["goodReputation"], record["punishments"]), (False, 1))
        self.assertGreater(record["punishedUntil"], 0)

    async def assertNodePunished(self, node: NodeService, node_id: bytes, counter: str, address: str = HOSTILE) -> None:
        """
        The node id's record counts the offence and is punished; its
        address has no record (an authenticated offence is the node's).
        """
        records = await rpc(node, "sco_peerList")
        [record] = [entry for entry in records if entry["type"] == "node" and entry["id"] == node_id.hex()[:8]]
        self.assertEqual(record[counter], 1)
        self.assertEqual((record["goodReputation"], record["punishments"]), (False, 1))
        self.assertEqual([entry for entry in records if entry["id"] == address], [])

    async def assertKeyRefused(self, node: NodeService, key: NodeKey, source: str = HOSTILE) -> None:
        """
        A new connection with the punished node key is refused after its
        handshake; a fresh key from the same address is welcome.
        """
        again = await self.peer(node, source, key=key)
        await again.lost  # type: ignore[attr-defined]
        self.assertEqual(again.received_disconnect, DisconnectReason.BAD_REPUTATION)
        fresh = await self.peer(node, source)
        self.assertTrue(fresh.established)
        fresh.disconnect(DisconnectReason.REQUESTED)
        await fresh.lost  # type: ignore[attr-defined]
        network = self.network(node)
        await self.wait_for(
            lambda: all(peer.address != source for peer in network.established_peers()), what="the fresh peer to go"
        )



class HostileEndToEndTests(HostilePeersTestCase):
    """
    Each offence is scored, punished, disconnected and refused on reconnect,
    while an honest peer keeps syncing and RPC keeps answering.
    """

    async def offence(self, data: bytes, reason: DisconnectReason, counter: str) -> None:
        """
        Raw bytes that are an offence: disconnected with C{reason}, punished, refused afterwards.
        """
        node, honest = await self.setup_nodes()
        received = await self.raw(node, data)
        self.assertEqual(messages(received)[-1], Disconnect(int(reason)))
        await self.assertPunished(node, counter)
        await self.assertRefusedOnReconnect(node)
        await self.assertHonestPeerSyncs(node, honest)

    async def test_garbage(self) -> None:
        """
        A frame that is not RLP.
        """
        await self.offence(b"\x00\x00\x00\x10" + b"\xff" * 16, DisconnectReason.PROTOCOL_ERROR, "invalidMessages")

    async def test_gigabyte_length_prefix(self) -> None:
        """
        A length prefix that claims 4 GiB: refused on the prefix, nothing buffered.
        """
        await self.offence((2**32 - 1).to_bytes(4, "big") + b"\x00" * 64, DisconnectReason.FRAME_TOO_LARGE, "invalidMessages")

    async def test_flood(self) -> None:
        """
        A peer past its handshake that sends more messages in a second than
        the limit: its node id and its address are punished.
        """
        config = self.mktemp()
        with open(config, "w") as handle:
            # Ten times the rate in one burst: a flood however slowly this machine reads.
            handle.write("[p2p]\nmessages_per_second = 100\n")
        node, honest = await self.setup_nodes("--config", config)
        peer = await self.peer(node)
        self.assertTrue(peer.established)
        node_id = peer.own_id  # type: ignore[attr-defined]
        assert peer.transport is not None
        peer.transport.write(b"".join(peer.framing.frame(encode_message(Ping(1))) for _ in range(1000)))
        await peer.lost  # type: ignore[attr-defined]
        self.assertEqual(peer.received_disconnect, DisconnectReason.FLOOD)
        await self.assertNodePunished(node, node_id, "invalidMessages")
        self.assertFalse(node.getServiceNamed("reputation").is_allowed(node_id, "192.0.2.77"))
        await self.assertKeyRefused(node, peer._host.node_key)  # type: ignore[attr-defined]
        await self.assertHonestPeerSyncs(node, honest)

    async def test_invalid_block(self) -> None:
        """
        A peer that sends a block whose seal does not match its header.
        """
        node, honest = await self.setup_nodes()
        other = await self.start_node()
        [block] = await self.grow(other, 1, extra_data=b"other")
        forged = replace(block, header=replace(block.header, timestamp=block.header.timestamp + 7))
        peer = await self.peer(node)
        node_id = peer.own_id  # type: ignore[attr-defined]
        peer.send(NewBlock(forged, 10**6))
        await peer.lost  # type: ignore[attr-defined]
        self.assertEqual(peer.received_disconnect, DisconnectReason.INVALID_BLOCK)
        await self.assertNodePunished(node, node_id, "invalidBlocks")
        await self.assertKeyRefused(node, peer._host.node_key)  # type: ignore[attr-defined]
        await self.assertHonestPeerSyncs(node, honest)

    async def test_wrong_genesis_every_hello(self) -> None:
        """
        The model does not punish a wrong genesis (reference §15: it even
        raises the score): the peer is disconnected at every hello, never
        refused at accept, and its record stays good.
        """
        node, honest = await self.setup_nodes()
        for attempt in range(3):
            received = await self.raw(node, self.hello(node, genesis_hash=b"\x01" * 32))
            self.assertEqual(messages(received)[-1], Disconnect(int(DisconnectReason.WRONG_GENESIS)))
            self.assertIsInstance(messages(received)[0], Hello)
        record = await self.address_record(node)
        self.assertEqual((record["goodReputation"], record["punishments"], record["score"]), (True, 0, 3))
        self.assertEqual(event_counts(node, HOSTILE)["UNEXPECTED_GENESIS"], 3)
        await self.assertHonestPeerSyncs(node, honest)

    async def test_half_open(self) -> None:
        """
        Connections held open without a hello: beyond the per-address limit
        (4) the next is closed at once, the address is punished, the held ones
        are disconnected, and a reconnect is refused.
        """
        node, honest = await self.setup_nodes()
        held = [Raw(b"") for _ in range(4)]
        for protocol in held:
            await connectProtocol(self.endpoint(node, HOSTILE), protocol)
        await self.wait_for(lambda: self.network(node).handshaking >= 4, what="the half-open connections")
        # Each past the key exchange (the node's hello came), so that its disconnect can be said.
        await self.wait_for(lambda: all(messages(protocol.received) for protocol in held), what="the key exchanges")
        extra = Raw(b"")
        await connectProtocol(self.endpoint(node, HOSTILE), extra)
        await extra.closed
        self.assertEqual(extra.received, b"")
        for protocol in held:
            await protocol.closed
            self.assertEqual(messages(protocol.received)[-1], Disconnect(int(DisconnectReason.BAD_REPUTATION)))
        await self.assertPunished(node, "invalidMessages")
        await self.assertRefusedOnReconnect(node)
        self.assertEqual(self.network(node).handshaking, 0)
        await self.assertHonestPeerSyncs(node, honest)

    async def test_connections_per_address(self) -> None:
        """
        With punishment off, the ninth open connection from one address is
        refused (the eighth allowed) and counted against the address.
        """
        config = self.mktemp()
        with open(config, "w") as handle:
            handle.write("[scoring]\npunishment_enabled = false\n[p2p]\nmax_half_open_per_address = 100\n")
        node = await self.start_node("--config", config)
        peers = [await self.peer(node) for _ in range(8)]
        self.assertTrue(all(peer.established for peer in peers))
        refused = Raw(b"")
        await connectProtocol(self.endpoint(node, HOSTILE), refused)
        await refused.closed
        self.assertEqual(refused.received, b"")
        self.assertEqual(event_counts(node, HOSTILE)["INVALID_MESSAGE"], 1)
        self.assertEqual(len(self.network(node).established_peers()), 8)
        for peer in peers:
            peer.disconnect(DisconnectReason.REQUESTED)


class BanOverRPCTests(HostilePeersTestCase):
    """
    C{sco_banAddress} of a connected peer's address disconnects it at once
    and refuses it until C{sco_unbanAddress}.
    """

    async def test_ban_connected_peer(self) -> None:
        """
        The peer connects from this machine's non-loopback address; the
        honest peer (loopback) stays.
        """
        source = local_address()
        if source is None:
            self.skipTest("no non-loopback IPv4 address to connect from")
        node = await self.start_node("--rpc", "tcp:0:interface=127.0.0.1")
        honest = await self.start_node("--peer", self.address(node))
        await self.wait_for(lambda: len(self.network(honest).established_peers()) == 1, what="the honest peer")
        peer = await self.peer(node, source)
        self.assertTrue(peer.established)
        self.assertIsNone(await rpc(node, "sco_banAddress", source))
        await peer.lost  # type: ignore[attr-defined]
        self.assertEqual(peer.received_disconnect, DisconnectReason.BAD_REPUTATION)
        await self.assertRefusedOnReconnect(node, source)
        self.assertEqual(await rpc(node, "sco_bannedAddresses"), [source])
        self.assertEqual(len(self.network(node).established_peers()), 1)
        self.assertIsNone(await rpc(node, "sco_unbanAddress", source))
        again = await self.peer(node, source)
        self.assertTrue(again.established)
        again.disconnect(DisconnectReason.REQUESTED)
        await again.lost  # type: ignore[attr-defined]
        await deferLater(reactor, 0, lambda: None)
