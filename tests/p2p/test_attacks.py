"""
The attacks of issue "Hostile peers cannot hurt a node", end to end: real
nodes in one process (RocksDB, loopback TCP, RPC and /health over HTTP),
each attack run against a node while an honest peer connects and syncs
from it, and each answered by a disconnect, a punishment of the
offender (its node id once its handshake proved it, else its address) and
bounded work.  The hostile peers connect from 127.0.0.2 and up; honest
nodes from 127.0.0.1, except where an attacker shares their address.
"""

import itertools
import json
import os
from dataclasses import replace
from typing import Any

import treq
from twisted.internet import reactor
from twisted.internet.defer import Deferred
from twisted.internet.endpoints import connectProtocol
from twisted.internet.task import deferLater

from nodex.chain.building.builder import seal_block
from nodex.chain.seal.pow import solve
from nodex.p2p.errors import DisconnectReason
from nodex.p2p.host import ChainStatus, PeerSettings
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
from nodex.p2p.protocol import SIDE_BLOCK_QUOTA, PeerProtocol
from nodex.p2p.relay import MAX_UNUSED_ORPHANS
from nodex.structures.blocks import Block
from nodex.structures.transactions import LegacyTransaction
from nodex.node import NodeService
from tests.p2p.nodes import event_counts, head_number, next_block, rpc
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


class ServingHost(FakeHost):
    """
    A peer that serves a chain of its own (headers by number, bodies by
    hash) while claiming a chain far heavier.
    """

    def __init__(self, genesis: bytes, blocks: list[Block], total_difficulty: int) -> None:
        super().__init__(genesis=genesis, settings=PeerSettings(messages_per_second=1_000_000))
        head = blocks[-1].header
        self.status = ChainStatus(7771, genesis, head.hash, head.number, total_difficulty, 0)
        self.blocks = {block.number: block for block in blocks}
        self.by_hash = {block.hash: block for block in blocks}
        self.bodies_served = 0

    def peer_message(self, peer: PeerProtocol, message: Message) -> None:
        if isinstance(message, GetBlockHeaders):
            assert isinstance(message.origin, int) and message.skip == 0
            step = -1 if message.reverse else 1
            numbers = [message.origin + step * index for index in range(message.count)]
            headers = []
            for number in numbers:
                if number not in self.blocks:
                    break
                headers.append(self.blocks[number].header)
            peer.send(BlockHeaders(message.request_id, tuple(headers)))
        elif isinstance(message, GetBlockBodies):
            bodies = [(self.by_hash[h].transactions, self.by_hash[h].uncles) for h in message.hashes if h in self.by_hash]
            self.bodies_served += len(bodies)
            peer.send(BlockBodies(message.request_id, tuple(bodies)))


async def sealed_siblings(node: NodeService, count: int) -> list[Block]:
    """
    C{count} distinct sealed blocks on C{node}'s head, none stored.
    """
    chain = node.chain
    assert chain is not None
    blocks = []
    for index in range(count):
        built, _ = await chain.build(next_block((), extra_data=b"sibling %d" % index))
        header = built.block.header
        seal = solve(header.hash_for_merged_mining, header.difficulty, itertools.count())
        assert seal is not None
        blocks.append(seal_block(built.block, seal))
    return blocks


def sealed_orphan(block: Block) -> Block:
    """
    C{block} on a random parent, sealed again (its seal checks, its parent never comes).
    """
    header = replace(block.header, parent_hash=os.urandom(32))
    seal = solve(header.hash_for_merged_mining, header.difficulty, itertools.count())
    assert seal is not None
    return seal_block(Block(header, block.transactions, block.uncles), seal)


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
        their own); the transaction messages wait in the peer's inbound
        queue, no offence.
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
        for nonce in range(30):
            peer.send(Transactions((cow_transaction(nonce),)))
        peer.send(NewBlock(block, 10**6))
        await self.wait_for(lambda: head_number(node) == 4, what="the block behind the transactions")
        self.assertEqual((len(held), network.queue_size()), (1, 30))
        self.assertFalse(peer.closed)
        for waiting in held:
            waiting.callback(b"")
        peer.disconnect(DisconnectReason.REQUESTED)
        await peer.lost  # type: ignore[attr-defined]

    async def test_deep_side_blocks(self) -> None:
        """
        Distinct sealed blocks at height 1 sent to a node at height 14 are
        refused (they branch deeper than seven blocks below the head), none
        is stored or earns a valid block, and past the quota of side blocks
        the sender is dropped.
        """
        node = await self.start_target(blocks=14)
        other = await self.start_node()
        siblings = await sealed_siblings(other, SIDE_BLOCK_QUOTA + 4)
        peer = await self.peer(node)
        node_id = peer.own_id  # type: ignore[attr-defined]
        for block in siblings:
            peer.send(NewBlock(block, 10**6))
        honest = Deferred.fromCoroutine(self.assertHonestSyncs(node))
        await peer.lost  # type: ignore[attr-defined]
        self.assertEqual(peer.received_disconnect, DisconnectReason.FLOOD)
        assert node.chain is not None
        stored = [await node.chain.get_header_by_hash(block.hash) for block in siblings]
        self.assertEqual(stored, [None] * len(siblings))
        counts = event_counts(node, node_id.hex())
        self.assertEqual((counts["VALID_BLOCK"], counts["INVALID_MESSAGE"]), (0, 1))
        await honest

    async def test_orphans_whose_parents_never_come(self) -> None:
        """
        Sealed blocks of random parents are kept aside only within the
        sender's share (64); each pushed out is one of its orphans that led
        nowhere, and past eight the sender is dropped for an unbacked claim.
        """
        node = await self.start_target()
        other = await self.start_node()
        [template] = await sealed_siblings(other, 1)
        orphans = [sealed_orphan(template) for _ in range(64 + MAX_UNUSED_ORPHANS + 2)]
        genesis = self.network(node).settings.genesis_hash
        host = FakeHost(genesis=genesis, settings=PeerSettings(messages_per_second=10**6))
        host.status = ChainStatus(7771, genesis, genesis, 0, 0, 0)
        peer = await self.peer(node, host=host)
        for block in orphans:
            peer.send(NewBlock(block, 1))
        await peer.lost  # type: ignore[attr-defined]
        self.assertEqual(peer.received_disconnect, DisconnectReason.UNBACKED_CLAIM)
        assert node.chain is not None
        self.assertLessEqual(node.chain.importer.orphan_count, 64)
        await self.assertHonestSyncs(node)

    async def test_lighter_fork_never_imported(self) -> None:
        """
        A peer that claims a heavy chain and serves a real but lighter fork
        (5 blocks from genesis against the node's 10) shows too little work:
        none of its blocks is imported, and after three runs it is dropped.
        """
        node = await self.start_target(blocks=10)
        other = await self.start_node()
        fork = await self.grow(other, 5, extra_data=b"lighter fork")
        genesis = self.network(node).settings.genesis_hash
        assert other.chain is not None
        genesis_block = await other.chain.get_block_by_number(0)
        host = ServingHost(genesis, [genesis_block, *fork], 2**100)
        peer = await self.peer(node, host=host)
        await peer.lost  # type: ignore[attr-defined]
        self.assertEqual(peer.received_disconnect, DisconnectReason.UNBACKED_CLAIM)
        self.assertEqual(host.bodies_served, 0)
        assert node.chain is not None
        self.assertEqual([await node.chain.get_header_by_hash(block.hash) for block in fork], [None] * 5)

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

