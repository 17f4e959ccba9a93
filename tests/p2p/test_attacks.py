"""
The attacks of issue "Hostile peers cannot hurt a node", end to end: real
nodes in one process (RocksDB, loopback TCP, RPC and /health over HTTP),
each attack run against a node while an honest peer connects and syncs
from it, and each answered by a disconnect, a punishment of the
offender (its node id once its handshake proved it, else its address) and
bounded work.  The hostile peers connect from 127.0.0.2 and up; honest
nodes from 127.0.0.1, except where an attacker shares their address.
"""

import json
from dataclasses import replace
from typing import Any

import treq
from twisted.internet import reactor
from twisted.internet.defer import Deferred
from twisted.internet.endpoints import connectProtocol
from twisted.internet.task import deferLater

from nodex.p2p.errors import DisconnectReason
from nodex.p2p.host import ChainStatus, PeerSettings
from nodex.p2p.network import MAX_WAITING_TRANSACTION_MESSAGES
from nodex.p2p.messages import (
    BlockBodies,
    BlockHeaders,
    Disconnect,
    GetBlockBodies,
    GetBlockHeaders,
    Message,
    NewBlock,
    Transactions,
)
from nodex.p2p.protocol import PeerProtocol
from nodex.structures.transactions import LegacyTransaction
from nodex.tap import NodeService
from tests.p2p.nodes import event_counts, head_number, rpc
from tests.p2p.test_hostile import HostilePeersTestCase, Raw, messages
from tests.p2p.test_network import cow_transaction
from tests.p2p.test_protocol import FakeHost


def forged_transaction(nonce: int) -> LegacyTransaction:
    """
    A transaction whose signature cannot be one (s = 0): never valid.
    """
    return LegacyTransaction(nonce=nonce, gas_price=1, gas=21_000, to=b"\x07" * 20, value=1, data=b"", v=101, r=1, s=0)


class LiarHost(FakeHost):
    """
    A peer that claims an immense chain and answers every request with nothing.
    """

    def __init__(self, genesis: bytes) -> None:
        super().__init__(genesis=genesis, settings=PeerSettings(messages_per_second=1_000_000))
        self.status = ChainStatus(7771, genesis, b"\x99" * 32, 1_000_000, 2**200, 0)
        self.asked = 0

    def peer_message(self, peer: PeerProtocol, message: Message) -> None:
        if isinstance(message, GetBlockHeaders):
            self.asked += 1
            peer.send(BlockHeaders(message.request_id, ()))
        elif isinstance(message, GetBlockBodies):
            peer.send(BlockBodies(message.request_id, ()))


class AttackTests(HostilePeersTestCase):
    """
    Each attack of the issue's table, answered.
    """

    async def start_target(self, *argv: str, blocks: int = 3) -> NodeService:
        """
        The node under attack: RPC on, a short chain.
        """
        node = await self.start_node("--rpc", "tcp:0:interface=127.0.0.1", *argv)
        await self.grow(node, blocks)
        return node

    async def assertHonestSyncs(self, node: NodeService) -> NodeService:
        """
        A new honest node connects to C{node} and syncs its chain; RPC answers.
        """
        honest = await self.start_node("--peer", self.address(node))
        target = head_number(node)
        await self.wait_for(lambda: head_number(honest) == target, what="the honest node's sync")
        self.assertEqual(await rpc(node, "eth_blockNumber"), hex(target))
        return honest

    def config(self, text: str) -> str:
        """
        A configuration file holding C{text}.
        """
        path = self.mktemp()
        with open(path, "w") as handle:
            handle.write(text)
        return path

    async def test_invalid_transactions(self) -> None:
        """
        TRANSACTIONS messages full of transactions that can never be valid:
        past 16 the peer is disconnected and its node id punished, the rest
        is never checked, and the queue stays small.
        """
        node = await self.start_target()
        network = self.network(node)
        peer = await self.peer(node)
        node_id = peer.own_id  # type: ignore[attr-defined]
        for batch in range(20):
            peer.send(Transactions(tuple(forged_transaction(batch * 256 + index) for index in range(256))))
        honest = Deferred.fromCoroutine(self.assertHonestSyncs(node))
        await peer.lost  # type: ignore[attr-defined]
        self.assertEqual(peer.received_disconnect, DisconnectReason.INVALID_TRANSACTIONS)
        await self.assertNodePunished(node, node_id, "invalidMessages")
        self.assertEqual(len(network.relay.invalid_transactions), 17)
        await honest
        await self.wait_for(lambda: network.queue_size() == 0, what="the queue to empty")

    async def test_large_frame_before_hello(self) -> None:
        """
        A frame longer than a hello before the handshake (here 1 MiB, below
        the frame limit) ends the connection on its length prefix and
        punishes the address; a reconnect is refused.
        """
        node = await self.start_target()
        received = await self.raw(node, (1 << 20).to_bytes(4, "big") + b"\x00" * 65536)
        self.assertEqual(messages(received)[-1], Disconnect(int(DisconnectReason.FRAME_TOO_LARGE)))
        await self.assertPunished(node, "invalidMessages")
        await self.assertRefusedOnReconnect(node)
        await self.assertHonestSyncs(node)

    async def test_silent_connections(self) -> None:
        """
        Silent connections from a few addresses that take every handshake
        slot do not lock an honest peer out: it takes the slot of one of
        the most crowded address's; the silent ones time out, and their
        addresses, past their handshake failures, are punished.
        """
        config = self.config(
            "[p2p]\nmax_inbound = 3\nhandshake_timeout = 1.0\nmax_handshake_failures = 0\nreserved_slots = 0\n"
        )
        node = await self.start_target("--config", config)
        network = self.network(node)
        sources = ["127.0.0.2", "127.0.0.3", "127.0.0.4"]
        held = [Raw(b"") for _ in range(4) for _ in sources]
        for index, protocol in enumerate(held):
            await connectProtocol(self.endpoint(node, sources[index % 3]), protocol)
        await self.wait_for(lambda: network.handshaking >= 6, what="every handshake slot taken")
        honest = await self.start_node("--peer", self.address(node))
        await self.wait_for(lambda: len(network.established_peers()) == 1, what="the honest peer's handshake")
        await self.wait_for(lambda: head_number(honest) == head_number(node), what="the honest sync")
        for protocol in held:
            await protocol.closed
        records = {entry["id"]: entry for entry in await rpc(node, "sco_peerList") if entry["type"] == "address"}
        self.assertEqual({source: records[source]["goodReputation"] for source in sources}, dict.fromkeys(sources, False))
        await self.assertRefusedOnReconnect(node, "127.0.0.3")
        self.assertEqual(len(network.established_peers()), 1)

    async def test_liar(self) -> None:
        """
        A peer that claims total difficulty 2^200 and block 1,000,000 and
        answers every request with nothing is dropped after three sync runs
        and its node id punished; meanwhile the node syncs from an honest
        peer, eth_syncing never names the claimed block, and /health stays 200.
        """
        source = await self.start_node()
        await self.grow(source, 30)
        node = await self.start_node("--rpc", "tcp:0:interface=127.0.0.1", "--metrics", "tcp:0:interface=127.0.0.1")
        metrics = await node.getServiceNamed("metrics").getServiceNamed("metrics-port").when_listening()
        health_url = f"http://127.0.0.1:{metrics.getHost().port}/health"
        genesis = self.network(node).settings.genesis_hash
        liar = LiarHost(genesis)
        peer = await self.peer(node, host=liar)
        node_id = peer.own_id  # type: ignore[attr-defined]
        self.network(node).dial("127.0.0.1", self.network(source).listening_port)
        statuses: list[int] = []
        highest: list[int] = []
        while not peer.closed:
            response = await treq.get(health_url, persistent=False)
            statuses.append(response.code)
            answer = json.loads(await response.content())
            highest.append(answer.get("highestBlock", 0))
            syncing = await rpc(node, "eth_syncing")
            if syncing:
                highest.append(int(syncing["highestBlock"], 16))
            await deferLater(reactor, 0.05, lambda: None)
        await peer.lost  # type: ignore[attr-defined]
        self.assertEqual(peer.received_disconnect, DisconnectReason.UNBACKED_CLAIM)
        self.assertEqual(set(statuses), {200})
        self.assertLessEqual(max(highest), 30)
        self.assertLessEqual(liar.asked, 10)
        await self.assertNodePunished(node, node_id, "invalidMessages")
        await self.wait_for(lambda: head_number(node) == 30, what="the sync from the honest peer")

    async def test_repeated_messages(self) -> None:
        """
        The same block sent again is not imported again and the same
        transactions are not checked again: each repeat is a repeated
        message; past the limit of repeats the peer is dropped (a flood).
        """
        node = await self.start_target()
        network = self.network(node)
        other = await self.start_node()
        block = (await self.grow(other, 4))[-1]
        chain = network.relay.chain
        imports: list[bytes] = []
        original = chain.import_blocks

        def counting(blocks: Any, source: Any) -> Deferred[Any]:
            imports.extend(block.hash for block in blocks)
            return original(blocks, source)

        chain.import_blocks = counting
        self.addCleanup(delattr, chain, "import_blocks")
        peer = await self.peer(node)
        node_id = peer.own_id  # type: ignore[attr-defined]
        for _ in range(10):
            peer.send(NewBlock(block, 10**6))
        transaction = Transactions((cow_transaction(0),))
        for _ in range(51):
            peer.send(transaction)
        await self.wait_for(
            lambda: event_counts(node, node_id.hex()).get("REPEATED_MESSAGE") == 9 + 50, what="the repeats counted"
        )
        self.assertFalse(peer.closed)
        self.assertEqual(imports, [block.hash])
        for _ in range(10):
            peer.send(transaction)
        await peer.lost  # type: ignore[attr-defined]
        self.assertEqual(peer.received_disconnect, DisconnectReason.FLOOD)
        await self.assertHonestSyncs(node)

    async def test_transactions_never_stall_blocks(self) -> None:
        """
        While the pool checks a peer's transactions slower than it sends
        them, its next block is imported at once (blocks have a lane of
        their own), and transaction messages beyond the lane's bound are
        dropped, no offence.
        """
        node = await self.start_target()
        network = self.network(node)
        other = await self.start_node()
        block = (await self.grow(other, 4))[-1]
        assert network.pool is not None
        held: list[Deferred[Any]] = []

        def slow_add(transaction: Any, relayed: bool = False) -> Deferred[Any]:
            held.append(Deferred())
            return held[-1]

        network.pool.add = slow_add  # type: ignore[method-assign]
        self.addCleanup(delattr, network.pool, "add")
        peer = await self.peer(node)
        for nonce in range(MAX_WAITING_TRANSACTION_MESSAGES + 10):
            peer.send(Transactions((cow_transaction(nonce),)))
        peer.send(NewBlock(block, 10**6))
        await self.wait_for(lambda: head_number(node) == 4, what="the block behind the transactions")
        [connection] = network.established_peers()
        self.assertEqual((len(held), connection.dropped_transaction_messages), (1, 10))
        self.assertFalse(peer.closed)
        for waiting in held:
            waiting.callback(b"")
        peer.disconnect(DisconnectReason.REQUESTED)
        await peer.lost  # type: ignore[attr-defined]

    async def test_neighbour_keeps_its_peers(self) -> None:
        """
        An attacker behind the honest peer's own address (127.0.0.1) that
        sends an invalid block is disconnected and its node id punished;
        the honest peer stays connected and keeps syncing, and new nodes
        from that address are welcome.
        """
        node = await self.start_target()
        honest = await self.start_node("--peer", self.address(node))
        await self.wait_for(lambda: head_number(honest) == head_number(node), what="the honest sync")
        other = await self.start_node()
        [block] = await self.grow(other, 1, extra_data=b"other")
        peer = await self.peer(node, "127.0.0.1")
        node_id = peer.own_id  # type: ignore[attr-defined]
        peer.send(NewBlock(_forged(block), 1))
        await peer.lost  # type: ignore[attr-defined]
        self.assertEqual(peer.received_disconnect, DisconnectReason.INVALID_BLOCK)
        await self.assertNodePunished(node, node_id, "invalidBlocks", address="127.0.0.1")
        self.assertEqual(len(self.network(node).established_peers()), 1)
        await self.assertHonestPeerSyncs(node, honest)
        await self.assertHonestSyncs(node)

    async def test_no_redial_of_connected_peers(self) -> None:
        """
        Two nodes configured to dial each other keep one connection and
        schedule no redial while it lasts; when it ends, they dial again.
        """
        first = await self.start_node()
        second = await self.start_node("--peer", self.address(first))
        await self.wait_for(lambda: len(self.network(first).established_peers()) == 1, what="the first connection")
        self.network(first).settings = _with_bootstrap(self.network(first).settings, self.address(second))
        self.network(first).dial("127.0.0.1", self.network(second).listening_port, redial=True)
        for network in (self.network(first), self.network(second)):
            await self.wait_for(lambda network=network: len(network._connections) == 1, what="one connection each")
        self.assertEqual((self.network(first)._redials, self.network(second)._redials), ({}, {}))
        [connection] = self.network(second).established_peers()
        connection.disconnect(DisconnectReason.REQUESTED)
        await self.wait_for(
            lambda: bool(self.network(first)._redials) or bool(self.network(second)._redials), what="a redial"
        )


def _forged(block: Any) -> Any:
    """
    C{block} with a header whose seal no longer matches it.
    """
    return replace(block, header=replace(block.header, timestamp=block.header.timestamp + 7))


def _with_bootstrap(settings: Any, address: str) -> Any:
    """
    Network settings that also name C{address} as a configured peer.
    """
    host, port = address.rsplit(":", 1)
    return replace(settings, bootstrap=(*settings.bootstrap, (host, int(port))))


__all__ = ["AttackTests", "LiarHost", "forged_transaction"]

