"""
Tests for L{nodex.rpc.sco}: the sco module through the dispatcher, over the
real reputation service with a fake clock and resolver.
"""

import json
from typing import Any

from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from nodex.api.peers import PeerEvent
from nodex.rpc.dispatch import Dispatcher
from nodex.rpc.registry import MODULES, MethodRegistry, ModuleSettings
from nodex.rpc.sco import ScoMethods
from tests.services.test_reputation import NODE, OTHER_NODE, START, FakeResolver, make_service

RECORD_MEMBERS = [
    "successfulHandshakes", "failedHandshakes", "invalidNetworks", "repeatedMessages", "validBlocks",
    "validTransactions", "invalidBlocks", "invalidTransactions", "invalidMessages", "timeoutMessages",
    "unexpectedMessages", "invalidHeader", "score", "punishments", "goodReputation", "punishedUntil", "id", "type",
]
"""reference §3.11, in order."""

SUMMARY_MEMBERS = [
    "count", "successfulHandshakes", "failedHandshakes", "invalidHeader", "validBlocks", "invalidBlocks",
    "validTransactions", "invalidTransactions", "invalidNetworks", "invalidMessages", "repeatedMessages",
    "timeoutMessages", "unexpectedMessages", "peersTotalScore", "punishments", "goodReputationCount",
    "badReputationCount",
]
"""reference §3.11, in order."""

METHODS = {
    "sco_banAddress": 1,
    "sco_unbanAddress": 1,
    "sco_peerList": 0,
    "sco_bannedAddresses": 0,
    "sco_reputationSummary": 0,
    "sco_clearPeerScoring": 1,
}
"""The methods and how many parameters each takes."""


class ScoFixture:
    """
    A dispatcher serving the sco module over a reputation service.
    """

    def make_dispatcher(self, sco_enabled: bool = True) -> None:
        """
        Build C{self.service}, C{self.clock} and C{self.dispatcher}.
        """
        self.resolver = FakeResolver({"peer.example": ["203.0.113.5", "2001:db8::5"], "home.example": ["::1"]})
        self.service, self.clock = make_service(self.resolver)
        modules = {name: ModuleSettings(name != "sco" or sco_enabled) for name in MODULES}
        registry = MethodRegistry(modules)
        registry.add(ScoMethods(self.service))
        self.dispatcher = Dispatcher(registry, Clock())

    def request(self, method: str, params: Any) -> dict[str, Any]:
        """
        The whole response to one request.
        """
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
        return json.loads(self.successResultOf(self.dispatcher.handle(body)))  # type: ignore[attr-defined]

    def call(self, method: str, *params: Any) -> Any:
        """
        The result of a request that must succeed.
        """
        response = self.request(method, list(params))
        if "error" in response:
            raise AssertionError(f"{method} failed: {response['error']}")
        return response["result"]

    def error(self, method: str, params: Any) -> tuple[int, str]:
        """
        The code and message of a request that must fail.
        """
        response = self.request(method, params)
        if "error" not in response:
            raise AssertionError(f"{method} succeeded: {response['result']}")
        return response["error"]["code"], response["error"]["message"]


class PeerListTests(ScoFixture, SynchronousTestCase):
    """
    sco_peerList and sco_reputationSummary.
    """

    def setUp(self) -> None:
        """
        Two peers: one that behaved, one that sent an invalid block; each
        event recorded against the node id and, as if made before the
        handshake, against the address (an event counts against one of them).
        """
        self.make_dispatcher()
        for node_id in (NODE, None):
            self.service.record_event(PeerEvent.SUCCESSFUL_HANDSHAKE, node_id, "192.0.2.7")
            self.service.record_event(PeerEvent.REPEATED_MESSAGE, node_id, "192.0.2.7")
        for node_id in (OTHER_NODE, None):
            self.service.record_event(PeerEvent.SUCCESSFUL_HANDSHAKE, node_id, "2001:db8::9")
            self.service.record_event(PeerEvent.INVALID_BLOCK, node_id, "2001:db8::9")

    def test_empty(self) -> None:
        """
        A node without peers lists nothing and sums to zeros.
        """
        self.make_dispatcher()
        self.assertEqual(self.call("sco_peerList"), [])
        summary = self.call("sco_reputationSummary")
        self.assertEqual(list(summary), SUMMARY_MEMBERS)
        self.assertEqual(set(summary.values()), {0})

    def test_record_shape(self) -> None:
        """
        The reference's example record, member for member and in order.
        """
        records = self.call("sco_peerList")
        self.assertEqual([list(record) for record in records], [RECORD_MEMBERS] * 4)
        self.assertEqual(
            records[0],
            {
                "successfulHandshakes": 1, "failedHandshakes": 0, "invalidNetworks": 0, "repeatedMessages": 1,
                "validBlocks": 0, "validTransactions": 0, "invalidBlocks": 0, "invalidTransactions": 0,
                "invalidMessages": 0, "timeoutMessages": 0, "unexpectedMessages": 0, "invalidHeader": 0,
                "score": 0, "punishments": 0, "goodReputation": True, "punishedUntil": 0,
                "id": "3fd44f66", "type": "node",
            },
        )

    def test_order_and_punished(self) -> None:
        """
        Node records first, then address records; the offender is punished until 12 minutes later.
        """
        records = self.call("sco_peerList")
        self.assertEqual(
            [(record["type"], record["id"]) for record in records],
            [("node", "3fd44f66"), ("node", "3fd44f67"), ("address", "192.0.2.7"), ("address", "2001:db8::9")],
        )
        offender = records[1]
        self.assertEqual(
            (offender["score"], offender["punishments"], offender["goodReputation"], offender["punishedUntil"]),
            (-1, 1, False, int(START * 1000) + 720000),
        )

    def test_summary(self) -> None:
        """
        The summary sums the records.
        """
        summary = self.call("sco_reputationSummary")
        self.assertEqual(list(summary), SUMMARY_MEMBERS)
        self.assertEqual(
            summary,
            {
                "count": 4, "successfulHandshakes": 4, "failedHandshakes": 0, "invalidHeader": 0,
                "validBlocks": 0, "invalidBlocks": 2, "validTransactions": 0, "invalidTransactions": 0,
                "invalidNetworks": 0, "invalidMessages": 0, "repeatedMessages": 2, "timeoutMessages": 0,
                "unexpectedMessages": 0, "peersTotalScore": -2, "punishments": 2, "goodReputationCount": 2,
                "badReputationCount": 2,
            },
        )

    def test_clear_by_address(self) -> None:
        """
        sco_clearPeerScoring with an address clears that record and answers the new list.
        """
        records = self.call("sco_clearPeerScoring", "2001:db8::9")
        self.assertEqual([record["id"] for record in records], ["3fd44f66", "3fd44f67", "192.0.2.7"])
        self.assertTrue(self.service.is_allowed(None, "2001:db8::9"))

    def test_clear_by_node_id(self) -> None:
        """
        By the short id of sco_peerList, or the whole node id with or without 0x.
        """
        records = self.call("sco_clearPeerScoring", "3FD44F67")
        self.assertEqual([record["id"] for record in records], ["3fd44f66", "192.0.2.7", "2001:db8::9"])
        records = self.call("sco_clearPeerScoring", "0x" + NODE.hex())
        self.assertEqual([record["id"] for record in records], ["192.0.2.7", "2001:db8::9"])

    def test_clear_unknown(self) -> None:
        """
        Clearing a record that does not exist changes nothing.
        """
        self.assertEqual(len(self.call("sco_clearPeerScoring", "198.51.100.1")), 4)
        self.assertEqual(len(self.call("sco_clearPeerScoring", "ffffffff")), 4)


class BanMethodTests(ScoFixture, SynchronousTestCase):
    """
    sco_banAddress, sco_unbanAddress and sco_bannedAddresses.
    """

    def setUp(self) -> None:
        """
        A dispatcher over a fresh service.
        """
        self.make_dispatcher()

    def test_ban_and_unban(self) -> None:
        """
        Addresses (IPv4, IPv6) and blocks are banned, listed, and unbanned; the answers are null.
        """
        for text in ("192.0.2.7", "2001:db8::7", "198.51.100.0/24", "2001:db8:1::/48"):
            self.assertIsNone(self.call("sco_banAddress", text))
        self.assertEqual(
            self.call("sco_bannedAddresses"), ["192.0.2.7", "2001:db8::7", "198.51.100.0/24", "2001:db8:1::/48"]
        )
        self.assertFalse(self.service.is_allowed(None, "198.51.100.3"))
        for text in ("192.0.2.7", "2001:db8::7", "198.51.100.0/24", "2001:db8:1::/48"):
            self.assertIsNone(self.call("sco_unbanAddress", text))
        self.assertEqual(self.call("sco_bannedAddresses"), [])
        self.assertTrue(self.service.is_allowed(None, "198.51.100.3"))

    def test_host_name(self) -> None:
        """
        A host name bans what it resolves to.
        """
        self.assertIsNone(self.call("sco_banAddress", "peer.example"))
        self.assertEqual(self.call("sco_bannedAddresses"), ["203.0.113.5", "2001:db8::5"])
        self.assertEqual(self.error("sco_banAddress", ["home.example"]), (-32602, "invalid banned address home.example"))

    def test_invalid_addresses(self) -> None:
        """
        Loopback, wildcard and malformed input: -32602 with the reference's message, for both methods.
        """
        for text in ("127.0.0.1", "::1", "0.0.0.0", "::", "10.0.0.0/0", "10.0.0.0/33", "2001:db8::/129",
                     "127.0.0.0/8", "1.2.3", "not a host", "", "nowhere.example"):
            for method in ("sco_banAddress", "sco_unbanAddress"):
                self.assertEqual(self.error(method, [text]), (-32602, f"invalid banned address {text}"), (method, text))
        self.assertEqual(self.call("sco_bannedAddresses"), [])
        self.flushLoggedErrors(OSError)

    def test_bad_parameter_types(self) -> None:
        """
        Non-string and missing arguments are -32602 naming the argument.
        """
        for method in ("sco_banAddress", "sco_unbanAddress"):
            self.assertEqual(self.error(method, [7]), (-32602, "invalid argument 0: want a string, got a number"))
            self.assertEqual(self.error(method, [["192.0.2.7"]]), (-32602, "invalid argument 0: want a string, got an array"))
            self.assertEqual(self.error(method, []), (-32602, "missing value for required argument 0"))
            self.assertEqual(self.error(method, [None]), (-32602, "missing value for required argument 0"))
        self.assertEqual(
            self.error("sco_clearPeerScoring", [{"id": 1}]), (-32602, "invalid argument 0: want a string, got an object")
        )
        self.assertEqual(self.error("sco_clearPeerScoring", []), (-32602, "missing value for required argument 0"))

    def test_bad_peer_ids(self) -> None:
        """
        sco_clearPeerScoring wants an IP address or at least 8 hex digits of a node id.
        """
        message = "invalid argument 0: want an IP address, or a node id of 8 to 128 hex digits"
        for text in ("3fd44f6", "not-hex!", "0x", "", "127.0.0.1:80", "g" * 8, "a" * 129):
            self.assertEqual(self.error("sco_clearPeerScoring", [text]), (-32602, message), text)

    def test_too_many_parameters(self) -> None:
        """
        Every sco method refuses more parameters than it takes.
        """
        for method, count in METHODS.items():
            code, message = self.error(method, ["192.0.2.7"] * (count + 1))
            self.assertEqual((code, message), (-32602, f"too many arguments, want at most {count}"), method)

    def test_by_name(self) -> None:
        """
        Parameters by name work; unknown names are refused.
        """
        response = self.request("sco_banAddress", {"address": "192.0.2.7"})
        self.assertIsNone(response["result"])
        self.assertEqual(self.error("sco_banAddress", {"host": "192.0.2.7"})[0], -32602)

    def test_disabled_module(self) -> None:
        """
        With the module off (main and testnet), every sco method is unavailable.
        """
        self.make_dispatcher(sco_enabled=False)
        for method in METHODS:
            self.assertEqual(self.error(method, []), (-32601, f"the method {method} does not exist/is not available"))
