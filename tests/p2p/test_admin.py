"""
The C{admin} module and C{sco}'s node bans end to end: real nodes, the
methods called over HTTP as an operator would.
"""

import json
from typing import Any

import treq

from nodex.api.peers import PeerURL
from nodex.p2p.errors import DisconnectReason
from nodex.p2p.identity import NodeKey
from nodex.p2p.messages import Ping
from nodex.rpc.admin import REMOTE_REFUSED
from nodex.node import NodeService
from tests.p2p.nodes import head_number, rpc, rpc_port
from tests.p2p.test_hostile import HostilePeersTestCase

RPC = ("--rpc", "tcp:0:interface=127.0.0.1")


class AdminTests(HostilePeersTestCase):
    """
    Each admin method, end to end.
    """

    async def peer_ids(self, node: NodeService) -> set[str]:
        return {peer["id"] for peer in await rpc(node, "admin_peers")}

    async def wait_peers(self, node: NodeService, ids: set[str], what: str) -> None:
        """
        Wait until C{node}'s established peers are exactly C{ids}.
        """
        await self.wait_for(
            lambda: {peer.node_id.hex() for peer in self.network(node).established_peers() if peer.node_id} == ids,
            what=what,
        )

    async def test_node_info(self) -> None:
        """
        The node's id, its URL (which round-trips), its listening port and its chain.
        """
        node = await self.start_node(*RPC)
        await self.grow(node, 2)
        info = await rpc(node, "admin_nodeInfo")
        network = self.network(node)
        assert network.node_key is not None
        self.assertEqual(info["id"], network.node_key.node_id.hex())
        url = PeerURL.parse(info["enode"])
        self.assertEqual((url.host, url.port, url.node_id), ("127.0.0.1", network.listening_port, network.node_key.node_id))
        self.assertEqual(str(url), info["enode"])
        self.assertEqual(info["ports"], {"discovery": 0, "listener": network.listening_port})
        protocol = info["protocols"]["nodex"]
        self.assertEqual((protocol["version"], protocol["network"], protocol["headNumber"], protocol["encryption"]), (63, 7771, 2, True))
        self.assertEqual(protocol["head"], "0x" + node.chain.head.header.hash.hex())  # type: ignore[union-attr]

    async def test_add_see_remove(self) -> None:
        """
        admin_addPeer with the other node's URL connects them (a static peer);
        admin_peers shows each side's detail; admin_removePeer ends the
        connection and it is not redialed.
        """
        a = await self.start_node(*RPC)
        await self.grow(a, 3)
        b = await self.start_node(*RPC)
        a_info = await rpc(a, "admin_nodeInfo")
        b_id = (await rpc(b, "admin_nodeInfo"))["id"]
        self.assertIs(await rpc(b, "admin_addPeer", a_info["enode"]), True)
        await self.wait_peers(b, {a_info["id"]}, "B to reach A")
        await self.wait_for(lambda: head_number(b) == 3, what="B to sync")
        [seen] = await rpc(b, "admin_peers")
        self.assertEqual((seen["id"], seen["enode"], seen["caps"]), (a_info["id"], a_info["enode"], ["nodex/63"]))
        self.assertEqual((seen["network"]["inbound"], seen["network"]["static"], seen["network"]["trusted"]), (False, True, False))
        self.assertEqual(seen["protocols"]["nodex"]["headNumber"], 3)
        self.assertGreater(seen["protocols"]["nodex"]["difficulty"], 0)
        self.assertIsInstance(seen["latency"], float)
        self.assertGreaterEqual(seen["connectedSeconds"], 0)
        [other] = await rpc(a, "admin_peers")
        self.assertEqual((other["id"], other["network"]["inbound"], other["network"]["static"]), (b_id, True, False))
        self.assertTrue(other["network"]["remoteAddress"].startswith("127.0.0.1:"))
        self.assertIs(await rpc(b, "admin_removePeer", a_info["enode"]), True)
        await self.wait_peers(b, set(), "B to drop A")
        await self.wait_peers(a, set(), "A to see B go")
        network = self.network(b)
        self.assertEqual((network._redials, network._dialing), ({}, {}))
        self.assertIs(await rpc(b, "admin_removePeer", a_info["enode"]), False)

    async def test_url_peer_and_wrong_id(self) -> None:
        """
        --peer takes the URL of admin_nodeInfo; a URL whose node id is not the peer's is refused.
        """
        a = await self.start_node(*RPC)
        enode = (await rpc(a, "admin_nodeInfo"))["enode"]
        b = await self.start_node("--peer", enode)
        await self.wait_for(lambda: len(self.network(b).established_peers()) == 1, what="B to reach A by URL")
        url = PeerURL.parse(enode)
        wrong = str(PeerURL(url.host, url.port, NodeKey.generate().node_id))
        c = await self.start_node(*RPC)
        self.assertIs(await rpc(c, "admin_addPeer", wrong), True)
        network = self.network(c)
        await self.wait_for(lambda: network.unfinished_handshakes or network._failures.get((url.host, url.port), 0) > 0,
                            what="the impostor's refusal")
        self.assertEqual(network.established_peers(), [])

    async def test_trusted_peer_survives_offence(self) -> None:
        """
        A trusted node id that commits an offence is disconnected but never
        punished: it connects again at once; untrusted again, the same
        offence punishes it.
        """
        node = await self.start_node(*RPC)
        key = NodeKey.generate()
        self.assertIs(await rpc(node, "admin_addTrustedPeer", key.node_id.hex()), True)
        for _ in range(2):
            peer = await self.peer(node, key=key)
            self.assertTrue(peer.established)
            peer.transport.write(peer.framing.frame(b"\xff" * 8))  # type: ignore[union-attr]
            await peer.lost  # type: ignore[attr-defined]
            self.assertEqual(peer.received_disconnect, DisconnectReason.PROTOCOL_ERROR)
        [record] = [r for r in await rpc(node, "sco_peerList") if r["type"] == "node"]
        self.assertEqual((record["invalidMessages"], record["punishments"], record["goodReputation"]), (2, 0, True))
        self.assertIs(await rpc(node, "admin_removeTrustedPeer", key.node_id.hex()), True)
        peer = await self.peer(node, key=key)
        peer.send(Ping(1))
        peer.transport.write(peer.framing.frame(b"\xff" * 8))  # type: ignore[union-attr]
        await peer.lost  # type: ignore[attr-defined]
        await self.assertKeyRefused(node, key)

    async def test_ban_node(self) -> None:
        """
        sco_banNode disconnects a connected node id at once and refuses it
        until sco_unbanNode; sco_bannedNodes lists it.
        """
        node = await self.start_node(*RPC)
        key = NodeKey.generate()
        peer = await self.peer(node, key=key)
        self.assertTrue(peer.established)
        self.assertIsNone(await rpc(node, "sco_banNode", "0x" + key.node_id.hex()))
        await peer.lost  # type: ignore[attr-defined]
        self.assertEqual(peer.received_disconnect, DisconnectReason.BAD_REPUTATION)
        self.assertEqual(await rpc(node, "sco_bannedNodes"), [key.node_id.hex()])
        again = await self.peer(node, key=key)
        await again.lost  # type: ignore[attr-defined]
        self.assertEqual(again.received_disconnect, DisconnectReason.BAD_REPUTATION)
        self.assertIsNone(await rpc(node, "sco_unbanNode", key.node_id.hex()))
        self.assertEqual(await rpc(node, "sco_bannedNodes"), [])
        fresh = await self.peer(node, key=key)
        self.assertTrue(fresh.established)
        fresh.disconnect(DisconnectReason.REQUESTED)
        await fresh.lost  # type: ignore[attr-defined]

    async def test_bad_params(self) -> None:
        """
        A malformed URL or node id answers -32602.
        """
        node = await self.start_node(*RPC)
        for method, param in (("admin_addPeer", "nowhere"), ("admin_addTrustedPeer", "abcd"), ("sco_banNode", "0x12")):
            error = await raw_call(node, method, param)
            self.assertEqual(error["error"]["code"], -32602, method)

    async def test_remote_refused(self) -> None:
        """
        An RPC server beyond loopback answers the admin methods with -32601,
        saying how to allow them.
        """
        node = await self.start_node("--rpc", "tcp:0:interface=0.0.0.0")
        answer = await raw_call(node, "admin_nodeInfo")
        self.assertEqual(answer["error"], {"code": -32601, "message": REMOTE_REFUSED})


async def raw_call(node: NodeService, method: str, *params: Any) -> dict[str, Any]:
    """
    The whole JSON-RPC answer of a call.
    """
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}).encode()
    response = await treq.post(f"http://127.0.0.1:{await rpc_port(node)}/", data=body,
                               headers={"Content-Type": "application/json"}, persistent=False)
    return dict(json.loads(await response.content()))
