"""
Tests of L{nodex.p2p.network} and L{nodex.p2p.sync} with real nodes (RocksDB,
loopback TCP on port 0) in one process.
"""

import threading

from twisted.internet import reactor
from twisted.internet.defer import Deferred
from twisted.internet.endpoints import TCP4ClientEndpoint, connectProtocol
from twisted.internet.task import deferLater

from nodex.crypto import keccak256
from nodex.api.chain import ChainEvent
from nodex.p2p.messages import WIRE_PROTOCOL_VERSION
import nodex.p2p.messages as messages_module
from nodex.p2p.errors import DisconnectReason, MessageError
from nodex.p2p.host import PeerSettings
from nodex.p2p.identity import NodeKey
from nodex.p2p.messages import BlockHeaders, Disconnect, Hello, Message, decode_message, encode_frame
from nodex.p2p.protocol import PeerProtocol
from nodex.services.automine import RELAYED_GRACE_SECONDS
from nodex.services.threads import WorkerThread
from nodex.structures.blocks import Block
from nodex.structures.transactions import LegacyTransaction, sign_transaction
from nodex.node import NodeService
from tests.p2p.nodes import NodesTestCase, event_counts, head_number, rpc
from tests.p2p.test_messages import sample_header
from tests.p2p.wire import SecureRaw
from tests.p2p.test_protocol import FakeHost

COW = bytes.fromhex("c85ef7d79691fe79573b1a7064c19c1a9819ebdbd1faaab1a8ec92344438aaf4")
"""The private key of the first regtest account (Keccak-256 of "cow")."""

GENESIS_DIFFICULTY = 1
"""The regtest genesis block's difficulty (its total difficulty)."""

LOG_EMITTER = bytes.fromhex("60006000a0")
"""Init code that emits one empty LOG0 and deploys nothing."""


def cow_transaction(nonce: int, data: bytes = b"", to: bytes | None = b"\x77" * 20) -> LegacyTransaction:
    """
    A regtest transaction of the first dev account.
    """
    unsigned = LegacyTransaction(
        nonce=nonce, gas_price=0, gas=100_000, to=to if to is not None else b"", value=1 if to else 0, data=data
    )
    return sign_transaction(unsigned, COW, 33)  # type: ignore[return-value]


class SyncTests(NodesTestCase):
    """
    A node syncs the chain of its peers.
    """

    async def test_sync_from_scratch(self) -> None:
        """
        A new node syncs 1,000 blocks from its peer, reports the sync through
        eth_syncing's status (the highest block is the highest the peer has
        shown, headers ahead of the bodies), and tells the sync observers
        (the syncing subscriptions) when it starts and ends.
        """
        source = await self.start_node()
        await self.grow(source, 1000)
        follower = await self.start_node("--peer", self.address(source))
        told: list[object] = []
        self.network(follower).sync.add_observer(told.append)
        network = self.network(follower)

        def shown_ahead() -> bool:
            status = network.sync_status()
            return status is not None and status.highest_block > status.current_block

        await self.wait_for(shown_ahead, what="headers shown ahead of the bodies")
        status = network.sync_status()
        assert status is not None
        self.assertEqual(status.starting_block, 0)
        self.assertLessEqual(status.highest_block, 1000)
        await self.wait_for(lambda: head_number(follower) == 1000, what="the sync")
        assert source.chain is not None and follower.chain is not None
        self.assertEqual(follower.chain.head, source.chain.head)
        await self.wait_for(lambda: self.network(follower).sync_status() is None, what="the end of the sync")
        self.assertEqual((told[0].syncing, told[0].starting_block, told[-1].syncing), (True, 0, False))  # type: ignore[attr-defined]

    async def test_sync_from_two_peers(self) -> None:
        """
        With two peers holding the chain, both serve bodies.
        """
        first, second = await self.start_node(), await self.start_node()
        await self.grow(first, 600)
        await self.grow(second, 600)
        follower = await self.start_node("--peer", self.address(first), "--peer", self.address(second))
        await self.wait_for(lambda: len(self.network(follower).established_peers()) == 2, what="two peers")
        await self.wait_for(lambda: head_number(follower) == 600, what="the sync")
        self.assertGreater(self.network(first).relay.answered["bodies"], 0)
        self.assertGreater(self.network(second).relay.answered["bodies"], 0)

    async def test_interrupted_sync_resumes(self) -> None:
        """
        A node stopped in the middle of a sync resumes from its head when it starts again.
        """
        source = await self.start_node()
        await self.grow(source, 1000)
        datadir = self.mktemp()
        follower = await self.start_node("--peer", self.address(source), datadir=datadir)
        await self.wait_for(lambda: head_number(follower) >= 100, what="a part of the sync")
        await self.stop_node(follower)
        stopped_at = head_number(follower)
        self.assertLess(stopped_at, 1000)
        again = await self.start_node("--peer", self.address(source), datadir=datadir)
        self.assertGreaterEqual(head_number(again), stopped_at)
        await self.wait_for(lambda: head_number(again) == 1000, what="the resumed sync")

    async def test_lost_peer(self) -> None:
        """
        When the sync peer goes away, the sync goes on from the other.
        """
        first, second = await self.start_node(), await self.start_node()
        await self.grow(first, 800)
        await self.grow(second, 800)
        follower = await self.start_node("--peer", self.address(first))
        await self.wait_for(lambda: head_number(follower) >= 50, what="a part of the sync")
        self.network(follower).dial("127.0.0.1", self.network(second).listening_port)
        await self.stop_node(first)
        await self.wait_for(lambda: head_number(follower) == 800, what="the sync from the second peer")


class SlowPeerTests(NodesTestCase):
    """
    A peer that does not answer is dropped, and its share of the work goes to another.
    """

    async def test_silent_body_peer(self) -> None:
        """
        One of two peers never answers body requests: it times out, is
        disconnected, and the sync completes from the other.
        """
        first, second = await self.start_node(), await self.start_node()
        await self.grow(first, 400)
        await self.grow(second, 400)
        silent = self.network(second)
        serve = silent.relay.serve

        async def serve_no_bodies(peer: object, request: object) -> None:
            from nodex.p2p.messages import GetBlockBodies

            if not isinstance(request, GetBlockBodies):
                await serve(peer, request)  # type: ignore[arg-type]

        silent.relay.serve = serve_no_bodies  # type: ignore[method-assign]
        config = self.mktemp()
        with open(config, "w") as handle:
            handle.write("[p2p]\nrequest_timeout = 1.0\n")
        follower = await self.start_node(
            "--config", config, "--peer", self.address(first), "--peer", self.address(second)
        )
        await self.wait_for(lambda: head_number(follower) == 400, what="the sync despite the silent peer")
        self.assertEqual(silent.relay.answered["bodies"], 0)
        counts = event_counts(follower, silent.node_key.node_id.hex())  # type: ignore[union-attr]
        self.assertGreaterEqual(counts.get("TIMEOUT_MESSAGE", 0), 1)


class PropagationTests(NodesTestCase):
    """
    Blocks and transactions travel along a line of nodes.
    """

    async def line(self) -> tuple[NodeService, NodeService, NodeService]:
        """
        Three nodes A - B - C, connected in a line (one outbound peer for B
        and C, none for A, so that peer exchange does not make a triangle).
        """
        config, alone = self.mktemp(), self.mktemp()
        with open(config, "w") as handle:
            handle.write("[p2p]\nmax_outbound = 1\n")
        with open(alone, "w") as handle:
            handle.write("[p2p]\nmax_outbound = 0\n")
        a = await self.start_node("--config", alone)
        b = await self.start_node("--config", config, "--peer", self.address(a))
        c = await self.start_node("--config", config, "--peer", self.address(b))
        for node, count in ((a, 1), (b, 2), (c, 1)):
            await self.wait_for(lambda node=node, count=count: len(self.network(node).established_peers()) >= count)
        return a, b, c

    async def test_peer_exchange(self) -> None:
        """
        A node learns its peer's peers and connects to them.
        """
        a = await self.start_node()
        b = await self.start_node("--peer", self.address(a))
        c = await self.start_node("--peer", self.address(b))
        await self.wait_for(lambda: len(self.network(c).established_peers()) == 2, what="C to reach A")
        await self.wait_for(lambda: len(self.network(a).established_peers()) == 2, what="A to see C")

    async def test_blocks_along_a_line(self) -> None:
        """
        Blocks mined on A reach C through B.
        """
        a, b, c = await self.line()
        assert a.miner is not None
        for _ in range(3):
            await a.miner.mine()
        await self.wait_for(lambda: head_number(c) == 3, what="C to follow")
        assert a.chain is not None and c.chain is not None
        self.assertEqual(c.chain.head.header.hash, a.chain.head.header.hash)
        self.assertEqual(len(self.network(c).established_peers()), 1)

    async def test_transactions_along_a_line(self) -> None:
        """
        A transaction given to C reaches A's pool through B, and A's block with it reaches C.
        """
        a, b, c = await self.line()
        transaction = cow_transaction(0)
        await c.getServiceNamed("pool").add(transaction)
        await self.wait_for(lambda: a.getServiceNamed("pool").get(transaction.hash) is not None, what="A's pool")
        assert a.miner is not None
        block = await a.miner.mine()
        self.assertEqual([tx.hash for tx in block.transactions], [transaction.hash])
        await self.wait_for(lambda: head_number(c) == 1, what="C to follow")
        await self.wait_for(lambda: c.getServiceNamed("pool").get(transaction.hash) is None, what="C's pool to drop it")

    async def test_transaction_wait_from_configuration(self) -> None:
        """
        A regtest node relays pending transactions at once; C{p2p.transaction_delay}
        gives the mean of the random wait the public networks' presets use.
        """
        config = self.mktemp()
        with open(config, "w") as handle:
            handle.write("[p2p]\ntransaction_delay = 0.5\n")
        at_once, waiting = await self.start_node(), await self.start_node("--config", config)
        self.assertEqual(self.network(at_once).settings.transaction_delay, 0.0)
        self.assertEqual(self.network(waiting).settings.transaction_delay, 0.5)

    async def test_orphan_fetches_parents(self) -> None:
        """
        A new block whose parents a peer never heard of makes that peer fetch them.
        """
        a = await self.start_node()
        b = await self.start_node("--peer", self.address(a))
        await self.wait_for(lambda: len(self.network(b).established_peers()) == 1, what="the peer")
        relay = self.network(a).relay
        relay._running = lambda: False  # type: ignore[method-assign]
        await self.grow(a, 3)
        relay._running = lambda: True  # type: ignore[method-assign]
        self.assertEqual(head_number(b), 0)
        await self.grow(a, 1)
        await self.wait_for(lambda: head_number(b) == 4, what="the orphan and its parents")

    async def test_no_echo(self) -> None:
        """
        A peer that sent a block is not sent it back.
        """
        a, b, c = await self.line()
        assert a.miner is not None
        block = await a.miner.mine()
        await self.wait_for(lambda: head_number(c) == 1)
        b_side_of_a = next(peer for peer in self.network(b).established_peers() if peer.dial_target is not None)
        self.assertIn(block.hash, b_side_of_a.known_blocks)


class UncleTests(NodesTestCase):
    """
    A side block a peer sends becomes an uncle of this node's next block.
    """

    async def test_peer_fork_block_becomes_an_uncle(self) -> None:
        """
        A and B each make a block 1 while they hear nothing of each other;
        B's reaches A as a side block, A's miner names it as an uncle in
        block 2, and B accepts that block (reorganising onto A's chain,
        whose total difficulty counts the uncle).
        """
        a = await self.start_node()
        b = await self.start_node("--peer", self.address(a))
        await self.wait_for(lambda: len(self.network(b).established_peers()) == 1, what="the peer")
        assert a.miner is not None and a.chain is not None and b.chain is not None
        relays = (self.network(a).relay, self.network(b).relay)
        for relay in relays:
            relay._running = lambda: False  # type: ignore[method-assign]
        a1 = await a.miner.mine()
        [b1] = await self.grow(b, 1, extra_data=b"fork")
        for relay in relays:
            relay._running = lambda: True  # type: ignore[method-assign]
        sides: list[Block] = []
        a.chain.add_side_observer(sides.append)
        self.network(b).relay.chain_changed(ChainEvent((b1,)))
        await self.wait_for(lambda: b1 in sides, what="A to store B's block 1 as a side block")
        self.assertEqual(a.chain.head.header.hash, a1.hash)
        a2 = await a.miner.mine()
        self.assertEqual(a2.uncles, (b1.header,))
        await self.wait_for(lambda: b.chain.head.header.hash == a2.hash, what="B to take A's block with the uncle")  # type: ignore[union-attr]
        self.assertEqual(b.chain.head.total_difficulty, a.chain.head.total_difficulty)
        self.assertEqual(
            a.chain.head.total_difficulty,
            GENESIS_DIFFICULTY + a1.header.difficulty + a2.header.difficulty + b1.header.difficulty,
        )


class AutominingPeersTests(NodesTestCase):
    """
    Automining nodes with peers mine their own clients' transactions, not
    every transaction a peer relays (C{docs/p2p.md}, "Automining with peers").
    """

    async def test_two_automining_peers_do_not_fork(self) -> None:
        """
        A transaction sent to A over RPC is mined by A alone; B, also in
        C{auto} mode, takes A's block and mines nothing, even once the
        grace of relayed transactions has passed.  (A queued transaction in
        A's pool makes A pass each new one to B before its block, as a busy
        pool does.)
        """
        a = await self.start_node("--mining", "auto", "--rpc", "tcp:0:interface=127.0.0.1")
        b = await self.start_node("--mining", "auto", "--peer", self.address(a))
        await self.wait_for(lambda: len(self.network(b).established_peers()) == 1, what="the peer")
        assert a.chain is not None and b.chain is not None and a.miner is not None and b.miner is not None
        gap = sign_transaction(LegacyTransaction(5, 0, 21_000, b"\x77" * 20, 1, b""), keccak256(b"cow1"), 33)
        await rpc(a, "eth_sendRawTransaction", "0x" + gap.encode().hex())
        for nonce in range(3):
            transaction = cow_transaction(nonce)
            await rpc(a, "eth_sendRawTransaction", "0x" + transaction.encode().hex())
            self.assertEqual(head_number(a), nonce + 1)
            await self.wait_for(lambda: b.chain.head.header.hash == a.chain.head.header.hash, what="B to take A's block")  # type: ignore[union-attr]
        await deferLater(reactor, RELAYED_GRACE_SECONDS + 0.5, lambda: None)
        self.assertEqual((a.miner.blocks_mined, b.miner.blocks_mined), (3, 0))
        self.assertEqual(b.chain.head.header.hash, a.chain.head.header.hash)
        self.assertEqual(len(b.getServiceNamed("pool")), 0)
        self.assertEqual(a.getServiceNamed("pool").queued(), [gap])

    async def test_follower_transaction_mined_after_the_grace(self) -> None:
        """
        A transaction given to a node that does not mine reaches the
        automining peer, which mines it once the grace has passed; the
        follower takes that block.
        """
        a = await self.start_node("--mining", "auto")
        b = await self.start_node("--mining", "off", "--peer", self.address(a))
        await self.wait_for(lambda: len(self.network(b).established_peers()) == 1, what="the peer")
        transaction = cow_transaction(0)
        await b.getServiceNamed("pool").add(transaction)
        await self.wait_for(lambda: a.getServiceNamed("pool").get(transaction.hash) is not None, what="A's pool")
        self.assertEqual(head_number(a), 0)
        await self.wait_for(lambda: head_number(b) == 1, timeout=RELAYED_GRACE_SECONDS + 30, what="A's block")
        assert a.chain is not None and b.chain is not None
        block = await b.chain.get_block_by_number(1)
        self.assertEqual([tx.hash for tx in block.transactions], [transaction.hash])  # type: ignore[union-attr]
        self.assertEqual(b.chain.head.header.hash, a.chain.head.header.hash)


class DecoderThreadTests(NodesTestCase):
    """
    The peer network's decoder thread (large frames, off the reactor).
    """

    async def test_decodes_and_hashes_in_its_thread(self) -> None:
        """
        A running network decodes on its own thread and hashes the headers
        there; a stopped one decodes at once; malformed payloads fail with
        L{MessageError}.
        """
        node = await self.start_node()
        network = self.network(node)
        answer = BlockHeaders(7, tuple(sample_header(number) for number in range(3)))
        payload = encode_frame(answer)[4:]
        threads: list[str] = []
        original = messages_module.decode_message

        def recording(raw: bytes) -> Message:
            threads.append(threading.current_thread().name)
            return original(raw)

        self.patch(messages_module, "decode_message", recording)
        decoded = await network.decode_in_thread(payload)
        self.assertEqual(decoded, answer)
        self.assertTrue(all("hash" in vars(header) for header in decoded.headers))  # type: ignore[attr-defined]
        self.assertNotEqual(threads, [threading.current_thread().name])
        self.assertIsInstance(network._decoder.threads[0], WorkerThread)  # type: ignore[union-attr]
        with self.assertRaises(MessageError):
            await network.decode_in_thread(b"\xff" * 10)
        await self.stop_node(node)
        threads.clear()
        self.assertEqual(self.successResultOf(network.decode_in_thread(payload)), answer)
        self.assertEqual(threads, [threading.current_thread().name])


class ReorganisationTests(NodesTestCase):
    """
    A node on a heavier fork makes its peer reorganise.
    """

    async def test_heavier_fork_removes_logs(self) -> None:
        """
        A's block with a log is replaced by B's heavier chain; A's log filter reports the log as removed.
        """
        a = await self.start_node("--rpc", "tcp:0:interface=127.0.0.1")
        b = await self.start_node()
        filter_id = await rpc(a, "eth_newFilter", {})
        await self.grow(a, 1, lambda index: [cow_transaction(0, LOG_EMITTER, to=None)])
        [log] = await rpc(a, "eth_getFilterChanges", filter_id)
        self.assertFalse(log["removed"])
        await self.grow(b, 3, extra_data=b"fork")
        self.network(b).dial("127.0.0.1", self.network(a).listening_port)
        await self.wait_for(lambda: head_number(a) == 3, what="the reorganisation")
        assert a.chain is not None and b.chain is not None
        self.assertEqual(a.chain.head.header.hash, b.chain.head.header.hash)
        changes = await rpc(a, "eth_getFilterChanges", filter_id)
        self.assertEqual([(entry["transactionHash"], entry["removed"]) for entry in changes], [(log["transactionHash"], True)])


class HostilePeerTests(NodesTestCase):
    """
    Hostile or mistaken peers are disconnected with the right reason, and the node goes on.
    The nodes do not punish (C{scoring.punishment_enabled = false}), so that
    an honest peer from the same loopback address is heard afterwards; the
    last test shows the punishment.
    """

    async def lenient_node(self) -> NodeService:
        """
        A node whose reputation service records events but punishes no one.
        """
        config = self.mktemp()
        with open(config, "w") as handle:
            handle.write("[scoring]\npunishment_enabled = false\n")
        return await self.start_node("--config", config)

    async def connect(self, node: NodeService, host: FakeHost) -> PeerProtocol:
        """
        Connect a test-driven peer protocol to a node.
        """
        from twisted.internet import reactor as clock

        protocol = PeerProtocol(host, clock, inbound=False)  # type: ignore[arg-type]
        lost: Deferred[None] = Deferred()
        original = protocol.connectionLost

        def connection_lost(reason: object = None) -> None:
            original()
            lost.callback(None)

        protocol.connectionLost = connection_lost  # type: ignore[method-assign]
        protocol.lost = lost  # type: ignore[attr-defined]
        endpoint = TCP4ClientEndpoint(reactor, "127.0.0.1", self.network(node).listening_port)
        await connectProtocol(endpoint, protocol)
        return protocol

    def genesis(self, node: NodeService) -> bytes:
        """
        The genesis hash of a node.
        """
        return self.network(node).settings.genesis_hash

    async def assertRefused(self, node: NodeService, host: FakeHost, reason: DisconnectReason) -> None:
        """
        A peer with C{host}'s view of the chain is disconnected by the node with C{reason}.
        """
        protocol = await self.connect(node, host)
        await protocol.lost  # type: ignore[attr-defined]
        self.assertEqual(protocol.received_disconnect, reason)

    async def assertStillServes(self, node: NodeService) -> None:
        """
        An honest peer still connects to the node afterwards.
        """
        other = await self.start_node("--peer", self.address(node))
        await self.wait_for(lambda: len(self.network(other).established_peers()) == 1, what="an honest peer")

    def hello(self, node: NodeService, **changes: object) -> bytes:
        """
        The frame of a hello that matches the node's chain but for C{changes}.
        """
        from dataclasses import replace

        hello = Hello(WIRE_PROTOCOL_VERSION, 7771, self.genesis(node), self.genesis(node), 0, 1, NodeKey.generate().node_id, b"\x01" * 32, 0)
        return encode_frame(replace(hello, **changes))

    async def test_mismatches(self) -> None:
        """
        A peer of another network id, genesis or protocol version.
        """
        node = await self.lenient_node()
        for changes, reason in (
            ({"network_id": 775}, DisconnectReason.WRONG_NETWORK),
            ({"genesis_hash": b"\x01" * 32}, DisconnectReason.WRONG_GENESIS),
            ({"protocol_version": WIRE_PROTOCOL_VERSION - 1}, DisconnectReason.INCOMPATIBLE_PROTOCOL),
        ):
            received = await self.raw(node, self.hello(node, **changes))
            self.assertEqual(self.last_message(received), Disconnect(int(reason)))
        counts = event_counts(node, "127.0.0.1")
        self.assertEqual(
            (counts["INVALID_NETWORK"], counts["UNEXPECTED_GENESIS"], counts["INCOMPATIBLE_PROTOCOL"]), (1, 1, 1)
        )
        await self.assertStillServes(node)

    async def test_bad_signature(self) -> None:
        """
        A peer that cannot prove its node key.
        """
        node = await self.lenient_node()
        host = FakeHost(genesis=self.genesis(node), settings=PeerSettings())
        impostor = NodeKey.generate()
        host.node_key = NodeKey(impostor.private_key, NodeKey.generate().node_id)
        await self.assertRefused(node, host, DisconnectReason.BAD_HANDSHAKE)
        await self.assertStillServes(node)

    async def raw(self, node: NodeService, data: bytes) -> bytes:
        """
        Send raw bytes to a node's P2P port; return everything it sent until it closed the connection.
        """
        protocol = SecureRaw(data)
        await connectProtocol(TCP4ClientEndpoint(reactor, "127.0.0.1", self.network(node).listening_port), protocol)
        await protocol.closed
        return protocol.received

    def last_message(self, data: bytes) -> object:
        """
        The last message of a byte stream of frames.
        """
        message = None
        while data:
            length = int.from_bytes(data[:4], "big")
            message = decode_message(data[4 : 4 + length])
            data = data[4 + length :]
        return message

    async def test_garbage(self) -> None:
        """
        Garbage bytes end in a protocol-error disconnect.
        """
        node = await self.lenient_node()
        received = await self.raw(node, b"\x00\x00\x00\x10" + b"\xff" * 16)
        self.assertIsInstance(self.last_message(received[: 4 + int.from_bytes(received[:4], "big")]), Hello)
        self.assertEqual(self.last_message(received), Disconnect(int(DisconnectReason.PROTOCOL_ERROR)))
        await self.assertStillServes(node)

    async def test_frame_over_limit(self) -> None:
        """
        A frame longer than the limit ends in a frame-too-large disconnect.
        """
        node = await self.lenient_node()
        received = await self.raw(node, (2**32 - 1).to_bytes(4, "big"))
        self.assertEqual(self.last_message(received), Disconnect(int(DisconnectReason.FRAME_TOO_LARGE)))
        await self.assertStillServes(node)

    async def test_offender_refused(self) -> None:
        """
        With punishment on, an address that sent garbage is refused afterwards (bad reputation).
        """
        node = await self.start_node()
        await self.raw(node, b"\x00\x00\x00\x10" + b"\xff" * 16)
        protocol = SecureRaw(self.hello(node))
        await connectProtocol(TCP4ClientEndpoint(reactor, "127.0.0.1", self.network(node).listening_port), protocol)
        await protocol.closed
        # Refused before the key exchange: closed without a word.
        self.assertEqual(protocol.raw, b"")


class RPCTests(NodesTestCase):
    """
    The peer methods answer from the running peer network.
    """

    async def test_peer_methods(self) -> None:
        """
        net_peerCount, net_peerList, net_listening, debug_wireProtocolQueueSize and eth_protocolVersion.
        """
        a = await self.start_node()
        b = await self.start_node("--rpc", "tcp:0:interface=127.0.0.1", "--peer", self.address(a))
        await self.wait_for(lambda: len(self.network(b).established_peers()) == 1, what="the peer")
        self.assertEqual(await rpc(b, "net_peerCount"), "0x1")
        self.assertIs(await rpc(b, "net_listening"), True)
        a_id = self.network(a).node_key.node_id.hex()  # type: ignore[union-attr]
        port = self.network(a).listening_port
        self.assertEqual(await rpc(b, "net_peerList"), [f"{a_id[:8]} | 127.0.0.1/127.0.0.1:{port}"])
        self.assertEqual(await rpc(b, "debug_wireProtocolQueueSize"), "0x0")
        self.assertEqual(await rpc(b, "eth_protocolVersion"), "0x3f")
        self.assertIs(await rpc(b, "eth_syncing"), False)


class TLSTests(NodesTestCase):
    """
    Peers over TLS, with host-name verification on the dialing side.
    """

    async def tls_pair(self, certified_name: str) -> tuple[NodeService, NodeService]:
        """
        A node serving TLS with a certificate for C{certified_name}, and a node dialing it as C{localhost}.
        """
        from pathlib import Path

        from tests.p2p.certificates import make_certificates

        ca, key, certificate = make_certificates(Path(self.mktemp()).resolve(), certified_name)
        server = await self.start_node("--p2p", f"ssl:0:interface=127.0.0.1:privateKey={key}:certKey={certificate}")
        config = Path(self.mktemp()).resolve()
        config.write_text(f'[p2p]\ntls = true\ntls_ca_certificate = "{ca}"\n')
        port = self.network(server).listening_port
        client = await self.start_node("--config", str(config), "--peer", f"localhost:{port}")
        return server, client

    async def test_tls(self) -> None:
        """
        A certificate for the dialed name: the peers connect and blocks flow.
        """
        server, client = await self.tls_pair("localhost")
        await self.grow(server, 5)
        await self.wait_for(lambda: head_number(client) == 5, what="the sync over TLS")
        [peer] = self.network(client).peers()
        self.assertEqual(peer.host, "localhost")

    async def test_wrong_name_refused(self) -> None:
        """
        A certificate for another name: the dialing node refuses the connection.
        """
        server, client = await self.tls_pair("other.example")
        await self.grow(server, 5)
        port = self.network(server).listening_port
        await self.wait_for(
            lambda: self.network(client).unfinished_handshakes[f"localhost:{port}"] >= 1, what="the refused handshake"
        )
        self.assertEqual((self.network(client).peers(), self.network(server).peers()), ([], []))
        self.assertEqual(head_number(client), 0)

