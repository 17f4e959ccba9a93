"""
End-to-end tests of the sco module: a real node (RocksDB under a temporary
directory, HTTP on 127.0.0.1 port 0) banning and unbanning by address, CIDR
block and host name, IPv4 and IPv6, driven over HTTP as a client would.
"""

import json
from pathlib import Path
from typing import Any

import treq
from twisted.internet import reactor
from twisted.internet.address import IPv4Address, IPv6Address
from twisted.internet.interfaces import IHostnameResolver, IResolutionReceiver
from twisted.trial.unittest import TestCase
from twisted.web.client import HTTPConnectionPool
from zope.interface import implementer

from nodex.api.peers import IReputation, PeerEvent
from nodex.node import NodeService
from nodex.tap import Options, makeService

NODE_ID = "ab" * 64


@implementer(IHostnameResolver)
class TableResolver:
    """
    A host-name resolver answering from a table, as C{/etc/hosts} would,
    and passing other names (the client's own C{127.0.0.1}) to the reactor's
    resolver.
    """

    def __init__(self, table: dict[str, list[str]], fallback: IHostnameResolver) -> None:
        self.table = table
        self.fallback = fallback

    def resolveHostName(  # noqa: N802 (Twisted's name)
        self,
        resolutionReceiver: IResolutionReceiver,
        hostName: str,
        portNumber: int = 0,
        addressTypes: Any = None,
        transportSemantics: str = "TCP",
    ) -> IResolutionReceiver:
        """
        Deliver the table's addresses for C{hostName}, or ask the fallback
        for other names outside C{.example}.
        """
        if hostName not in self.table and not hostName.endswith(".example"):
            return self.fallback.resolveHostName(
                resolutionReceiver, hostName, portNumber, addressTypes, transportSemantics
            )
        resolutionReceiver.resolutionBegan(None)
        for address in self.table.get(hostName, []):
            kind = IPv6Address if ":" in address else IPv4Address
            resolutionReceiver.addressResolved(kind("TCP", address, portNumber))
        resolutionReceiver.resolutionComplete()
        return resolutionReceiver


class ScoNodeTests(TestCase):
    """
    The sco module of a running node.
    """

    async def start_node(self, *argv: str) -> NodeService:
        """
        Start a node with RPC on port 0; keep its URL in C{self.url}.
        """
        options = Options()
        options.parseOptions(
            ["--datadir", self.mktemp(), "--rpc", "tcp:0:interface=127.0.0.1", "--ws", "none", "--p2p", "none", *argv]
        )
        node: NodeService = makeService(options)
        node.startService()
        self.addCleanup(node.stopService)
        port = await node.getServiceNamed("rpc").when_listening()
        self.pool = HTTPConnectionPool(reactor, persistent=False)
        self.addCleanup(self.pool.closeCachedConnections)
        self.url = f"http://127.0.0.1:{port.getHost().port}/"
        return node

    async def rpc(self, method: str, *params: Any) -> dict[str, Any]:
        """
        One JSON-RPC request over HTTP; the whole response object.
        """
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}).encode()
        response = await treq.post(self.url, data=body, headers={"Content-Type": "application/json"}, pool=self.pool)
        self.assertEqual(response.code, 200)
        return json.loads(await response.content())

    async def result(self, method: str, *params: Any) -> Any:
        """
        The result of a request that must succeed.
        """
        response = await self.rpc(method, *params)
        self.assertNotIn("error", response, method)
        return response["result"]

    async def test_ban_unban_ipv4_ipv6_cidr(self) -> None:
        """
        On regtest (sco enabled), addresses and blocks of both families are banned, refused by the
        reputation service the P2P layer asks, listed, and unbanned.
        """
        node = await self.start_node()
        reputation = node.getServiceNamed("reputation")
        self.assertTrue(IReputation.providedBy(reputation))
        bans = ["192.0.2.7", "2001:db8::7", "198.51.100.0/24", "2001:db8:1::/48"]
        for text in bans:
            self.assertIsNone(await self.result("sco_banAddress", text))
        self.assertEqual(await self.result("sco_bannedAddresses"), bans)
        for address in ("192.0.2.7", "2001:db8::7", "198.51.100.200", "2001:db8:1:2::3", "::ffff:198.51.100.1"):
            self.assertFalse(reputation.is_allowed(None, address), address)
        self.assertTrue(reputation.is_allowed(None, "192.0.2.8"))
        for text in bans:
            self.assertIsNone(await self.result("sco_unbanAddress", text))
        self.assertEqual(await self.result("sco_bannedAddresses"), [])
        self.assertTrue(reputation.is_allowed(None, "198.51.100.200"))

    async def test_refused_addresses(self) -> None:
        """
        Loopback (also a host name that resolves to it through the real resolver), wildcard
        and malformed input answer -32602 with the reference's message.
        """
        await self.start_node()
        for text in ("127.0.0.1", "::1", "0.0.0.0", "::", "localhost", "10.1.2.3/33", "1.2.3", "a b"):
            response = await self.rpc("sco_banAddress", text)
            self.assertEqual(response["error"], {"code": -32602, "message": f"invalid banned address {text}"})
        response = await self.rpc("sco_unbanAddress", 42)
        self.assertEqual(response["error"]["code"], -32602)
        self.assertEqual(await self.result("sco_bannedAddresses"), [])

    async def test_bad_inputs_every_method(self) -> None:
        """
        Every sco method answers bad parameters with -32602 and a message naming the problem.
        """
        await self.start_node()
        cases = [
            ("sco_banAddress", [], "missing value for required argument 0"),
            ("sco_banAddress", [{"address": "192.0.2.7"}], "invalid argument 0: want a string, got an object"),
            ("sco_unbanAddress", [True], "invalid argument 0: want a string, got a boolean"),
            ("sco_unbanAddress", ["192.0.2.7", "x"], "too many arguments, want at most 1"),
            ("sco_peerList", [1], "too many arguments, want at most 0"),
            ("sco_bannedAddresses", ["192.0.2.7"], "too many arguments, want at most 0"),
            ("sco_reputationSummary", [None], "too many arguments, want at most 0"),
            ("sco_clearPeerScoring", ["xyz"], "invalid argument 0: want an IP address, or a node id of 8 to 128 hex digits"),
            ("sco_clearPeerScoring", [12345678], "invalid argument 0: want a string, got a number"),
        ]
        for method, params, message in cases:
            response = await self.rpc(method, *params)
            self.assertEqual(response["error"], {"code": -32602, "message": message}, method)
        response = await self.rpc("sco_banAddress", "1" * 100_000)
        self.assertEqual(response["error"], {"code": -32602, "message": "invalid banned address " + "1" * 64 + "..."})

    async def test_host_name(self) -> None:
        """
        A host name is resolved by the reactor's resolver and every address it names is banned.
        """
        previous = reactor.nameResolver
        reactor.installNameResolver(TableResolver({"peer.example": ["203.0.113.5", "2001:db8::5"]}, previous))
        self.addCleanup(reactor.installNameResolver, previous)
        node = await self.start_node()
        self.assertIsNone(await self.result("sco_banAddress", "peer.example"))
        self.assertEqual(await self.result("sco_bannedAddresses"), ["203.0.113.5", "2001:db8::5"])
        self.assertFalse(node.getServiceNamed("reputation").is_allowed(None, "2001:db8::5"))
        response = await self.rpc("sco_banAddress", "unknown.example")
        self.assertEqual(response["error"], {"code": -32602, "message": "invalid banned address unknown.example"})
        self.assertIsNone(await self.result("sco_unbanAddress", "peer.example"))
        self.assertEqual(await self.result("sco_bannedAddresses"), [])

    async def test_peer_list_and_summary(self) -> None:
        """
        Events the P2P layer reports appear in sco_peerList and sco_reputationSummary, and
        sco_clearPeerScoring forgets them: an established peer's against its node id, one
        before the handshake against its address.
        """
        node = await self.start_node()
        reputation = node.getServiceNamed("reputation")
        node_id = bytes.fromhex(NODE_ID)
        reputation.record_event(PeerEvent.SUCCESSFUL_HANDSHAKE, node_id, "192.0.2.7")
        reputation.record_event(PeerEvent.INVALID_MESSAGE, node_id, "192.0.2.7")
        reputation.record_event(PeerEvent.FAILED_HANDSHAKE, None, "192.0.2.7")
        reputation.record_event(PeerEvent.INVALID_MESSAGE, None, "192.0.2.7")
        records = await self.result("sco_peerList")
        self.assertEqual([(record["type"], record["id"]) for record in records], [("node", "abababab"), ("address", "192.0.2.7")])
        self.assertEqual([record["goodReputation"] for record in records], [False, False])
        summary = await self.result("sco_reputationSummary")
        self.assertEqual((summary["count"], summary["invalidMessages"], summary["badReputationCount"]), (2, 2, 2))
        self.assertEqual(await self.result("sco_clearPeerScoring", "abababab"), [records[1]])
        self.assertEqual(await self.result("sco_clearPeerScoring", "192.0.2.7"), [])

    async def test_off_on_main_until_enabled(self) -> None:
        """
        The module is off on main; a configuration file turns it on, with its configured bans.
        """
        await self.start_node("--network", "main")
        response = await self.rpc("sco_bannedAddresses")
        self.assertEqual(response["error"]["code"], -32601)
        config = Path(self.mktemp())
        config.write_text(
            "[rpc.modules.sco]\nenabled = true\n"
            f'[scoring]\nbanned_peer_ips = ["192.0.2.0/24", "2001:db8::1"]\nbanned_peer_ids = ["{NODE_ID}"]\n'
        )
        node = await self.start_node("--network", "main", "--config", str(config))
        self.assertEqual(await self.result("sco_bannedAddresses"), ["2001:db8::1", "192.0.2.0/24"])
        self.assertFalse(node.getServiceNamed("reputation").is_allowed(bytes.fromhex(NODE_ID), "198.51.100.1"))
