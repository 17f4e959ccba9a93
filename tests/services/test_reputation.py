"""
Tests for L{nodex.services.reputation}: the reputation service with an
injected clock and resolver.
"""

from collections.abc import Sequence

from twisted.internet.address import IPv4Address, IPv6Address
from twisted.internet.defer import Deferred, fail, succeed
from twisted.internet.interfaces import IResolutionReceiver
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase
from zope.interface.verify import verifyObject

from nodex.api.errors import InvalidBanError
from nodex.api.peers import IPeerScoring, IReputation, PeerEvent
from nodex.reputation.bans import parse_ban_target
from nodex.services.reputation import ReputationService, ReputationSettings, configured_node_ids, host_resolver
from nodex.reputation.scoring import PunishmentParameters

NODE = bytes.fromhex("3fd44f66") + b"\x01" * 60
OTHER_NODE = bytes.fromhex("3fd44f67") + b"\x02" * 60
START = 1_767_225_600.0


class FakeResolver:
    """
    Resolves host names from a table, and counts the lookups.
    """

    def __init__(self, table: dict[str, Sequence[str]]) -> None:
        self.table = table
        self.asked: list[str] = []

    def __call__(self, name: str) -> Deferred[list[str]]:
        self.asked.append(name)
        if name not in self.table:
            return fail(OSError(f"cannot resolve {name}"))
        return succeed(list(self.table[name]))


def make_service(resolver: FakeResolver | None = None, **settings: object) -> tuple[ReputationService, Clock]:
    """
    A reputation service at a fixed time.
    """
    clock = Clock()
    clock.advance(START)
    service = ReputationService(clock, resolver or FakeResolver({}), ReputationSettings(**settings))  # type: ignore[arg-type]
    return service, clock


class InterfaceTests(SynchronousTestCase):
    """
    The service provides both interfaces.
    """

    def test_provides(self) -> None:
        """
        L{IReputation} for the P2P layer and L{IPeerScoring} for the sco module.
        """
        service, _ = make_service()
        self.assertTrue(verifyObject(IReputation, service))
        self.assertTrue(verifyObject(IPeerScoring, service))


class RecordTests(SynchronousTestCase):
    """
    Events against node ids and addresses, and what C{is_allowed} answers.
    """

    def setUp(self) -> None:
        """
        A service with the defaults.
        """
        self.service, self.clock = make_service()

    def test_proven_identity_only(self) -> None:
        """
        An event of a peer whose handshake proved its node id is recorded
        against the node id only: its address's neighbours are not touched.
        """
        self.service.record_event(PeerEvent.SUCCESSFUL_HANDSHAKE, NODE, "192.0.2.7")
        records = self.service.peer_records()
        self.assertEqual([(record.kind, record.id) for record in records], [("node", "3fd44f66")])
        self.assertEqual(records[0].counters["SUCCESSFUL_HANDSHAKE"], 1)

    def test_address_only(self) -> None:
        """
        Before the handshake there is only the address record.
        """
        self.service.record_event(PeerEvent.FAILED_HANDSHAKE, None, "2001:db8::7")
        self.assertEqual([(record.kind, record.id) for record in self.service.peer_records()], [("address", "2001:db8::7")])

    def test_mapped_address_is_ipv4(self) -> None:
        """
        An IPv4 peer seen through a dual-stack socket shares its IPv4 record.
        """
        self.service.record_event(PeerEvent.INVALID_MESSAGE, None, "::ffff:192.0.2.7")
        self.assertFalse(self.service.is_allowed(None, "192.0.2.7"))
        self.assertEqual(self.service.peer_records()[0].id, "192.0.2.7")

    def test_invalid_block_refuses_node_not_address(self) -> None:
        """
        After an invalid block the node id is refused from any address; the
        address stays open to other nodes (those behind the same NAT).
        """
        self.service.record_event(PeerEvent.INVALID_BLOCK, NODE, "192.0.2.7")
        self.assertFalse(self.service.is_allowed(NODE, "198.51.100.1"))
        self.assertTrue(self.service.is_allowed(OTHER_NODE, "192.0.2.7"))
        self.assertTrue(self.service.is_allowed(None, "192.0.2.7"))

    def test_offence_without_identity_refuses_address(self) -> None:
        """
        An offence before the handshake proved a node id is the address's:
        every node from it is refused.
        """
        self.service.record_event(PeerEvent.INVALID_MESSAGE, None, "192.0.2.7")
        self.assertFalse(self.service.is_allowed(None, "192.0.2.7"))
        self.assertFalse(self.service.is_allowed(OTHER_NODE, "192.0.2.7"))
        self.assertTrue(self.service.is_allowed(OTHER_NODE, "198.51.100.1"))

    def test_identity_churn(self) -> None:
        """
        Three node ids punished from one address within ten minutes punish
        the address; the same node id punished again counts once, and
        punishments further apart do not add up.
        """
        nodes = [bytes([number]) * 64 for number in range(4)]
        self.service.record_event(PeerEvent.INVALID_BLOCK, nodes[0], "192.0.2.7")
        self.clock.advance(11 * 60)
        self.service.record_event(PeerEvent.INVALID_BLOCK, nodes[1], "192.0.2.7")
        self.service.record_event(PeerEvent.INVALID_BLOCK, nodes[2], "192.0.2.7")
        self.assertTrue(self.service.is_allowed(None, "192.0.2.7"))
        self.clock.advance(9 * 60)
        self.service.record_event(PeerEvent.INVALID_BLOCK, nodes[3], "192.0.2.7")
        self.assertFalse(self.service.is_allowed(None, "192.0.2.7"))
        [address] = [record for record in self.service.peer_records() if record.kind == "address"]
        self.assertEqual((address.id, address.counters["INVALID_MESSAGE"], address.punishments), ("192.0.2.7", 1, 1))

    def test_redials_of_a_punished_node(self) -> None:
        """
        A punished node id that comes back and completes a handshake is
        refused after it; its third handshake within ten minutes from one
        address punishes the address, which is then refused before any
        handshake.  The handshakes of a node id in good standing, and
        redials further apart, do not count.
        """
        self.service.record_event(PeerEvent.SUCCESSFUL_HANDSHAKE, NODE, "192.0.2.7")
        self.service.record_event(PeerEvent.INVALID_BLOCK, NODE, "192.0.2.7")
        self.assertFalse(self.service.is_allowed(NODE, "192.0.2.7"))
        self.service.record_event(PeerEvent.SUCCESSFUL_HANDSHAKE, NODE, "192.0.2.7")
        self.clock.advance(9 * 60)
        self.service.record_event(PeerEvent.SUCCESSFUL_HANDSHAKE, NODE, "192.0.2.7")
        self.assertTrue(self.service.is_allowed(None, "192.0.2.7"))
        self.clock.advance(2 * 60)
        # The first redial is more than ten minutes old now.
        self.service.record_event(PeerEvent.SUCCESSFUL_HANDSHAKE, NODE, "192.0.2.7")
        self.assertTrue(self.service.is_allowed(None, "192.0.2.7"))
        self.assertTrue(self.service.is_allowed(None, "192.0.2.8"))
        self.service.record_event(PeerEvent.SUCCESSFUL_HANDSHAKE, NODE, "192.0.2.7")
        self.assertFalse(self.service.is_allowed(None, "192.0.2.7"))
        self.assertTrue(self.service.is_allowed(OTHER_NODE, "192.0.2.8"))
        [address] = [record for record in self.service.peer_records() if record.kind == "address"]
        self.assertEqual((address.id, address.counters["INVALID_MESSAGE"], address.punishments), ("192.0.2.7", 1, 1))

    def test_redials_of_a_banned_node(self) -> None:
        """
        The redials of a node id the operator banned count the same way;
        a trusted address is never punished for them.
        """
        service, _ = make_service(banned_node_ids=frozenset({NODE}), trusted_addresses=("198.51.100.1",))
        for _ in range(3):
            service.record_event(PeerEvent.SUCCESSFUL_HANDSHAKE, NODE, "192.0.2.7")
            service.record_event(PeerEvent.SUCCESSFUL_HANDSHAKE, NODE, "198.51.100.1")
        self.assertFalse(service.is_allowed(None, "192.0.2.7"))
        self.assertTrue(service.is_allowed(None, "198.51.100.1"))

    def test_trusted(self) -> None:
        """
        A trusted node id or address is scored and never punished or refused; a ban still refuses it.
        """
        service, _ = make_service(trusted_node_ids=frozenset({NODE}), trusted_addresses=("127.0.0.0/8", "192.0.2.7"))
        service.record_event(PeerEvent.INVALID_BLOCK, NODE, "198.51.100.1")
        service.record_event(PeerEvent.INVALID_MESSAGE, None, "127.0.0.2")
        service.record_event(PeerEvent.INVALID_MESSAGE, None, "::ffff:192.0.2.7")
        self.assertTrue(service.is_allowed(NODE, "198.51.100.1"))
        self.assertTrue(service.is_allowed(None, "127.0.0.2"))
        self.assertTrue(service.is_allowed(OTHER_NODE, "192.0.2.7"))
        self.assertTrue(service.is_trusted(None, "127.0.0.1"))
        self.assertFalse(service.is_trusted(OTHER_NODE, "198.51.100.1"))
        self.assertEqual([record.punishments for record in service.peer_records()], [0, 0, 0])
        self.assertEqual(service.peer_records()[0].score, -1)
        service.bans.add(parse_ban_target("192.0.2.7"))  # type: ignore[arg-type]
        self.assertFalse(service.is_allowed(None, "192.0.2.7"))

    def test_punishment_ends(self) -> None:
        """
        The node and address are allowed again after 12 minutes, with their records reset.
        """
        self.service.record_event(PeerEvent.INVALID_HEADER, NODE, "192.0.2.7")
        self.clock.advance(719.999)
        self.assertFalse(self.service.is_allowed(NODE, "192.0.2.7"))
        self.clock.advance(0.001)
        self.assertTrue(self.service.is_allowed(NODE, "192.0.2.7"))
        record = self.service.peer_records()[0]
        self.assertEqual((record.score, record.punishments, record.punished_until, record.good_reputation), (0, 1, 0, True))

    def test_allowed_answer_kept_until_a_change(self) -> None:
        """
        A yes of C{is_allowed} is kept (the records are not looked at
        again), and dropped when a record turns bad, an address or a node is
        banned or a trust is withdrawn: each refuses at once.
        """
        self.assertTrue(self.service.is_allowed(NODE, "192.0.2.7"))
        looked: list[bytes] = []
        has_good_reputation = self.service.nodes.has_good_reputation
        self.service.nodes.has_good_reputation = lambda key, now: looked.append(key) or has_good_reputation(key, now)  # type: ignore[method-assign, func-returns-value]
        self.assertTrue(self.service.is_allowed(NODE, "192.0.2.7"))
        self.assertEqual(looked, [])
        self.service.record_event(PeerEvent.INVALID_BLOCK, NODE, "192.0.2.7")
        self.assertFalse(self.service.is_allowed(NODE, "192.0.2.7"))
        self.assertEqual(looked, [NODE])
        self.assertTrue(self.service.is_allowed(OTHER_NODE, "192.0.2.8"))
        self.assertTrue(self.service.ban_node(OTHER_NODE))
        self.assertFalse(self.service.is_allowed(OTHER_NODE, "192.0.2.8"))
        self.assertTrue(self.service.is_allowed(None, "192.0.2.9"))
        self.successResultOf(self.service.ban_address("192.0.2.9"))
        self.assertFalse(self.service.is_allowed(None, "192.0.2.9"))
        third = b"\x03" * 64
        self.service.trust_node(third, True)
        self.assertTrue(self.service.is_allowed(third, "192.0.2.10"))
        # (A trusted record is never punished by events: punish it behind the service's back.)
        self.service.nodes.record(third, PeerEvent.INVALID_BLOCK, int(self.clock.seconds() * 1000))
        self.assertTrue(self.service.is_allowed(third, "192.0.2.10"))
        self.service.trust_node(third, False)
        self.assertFalse(self.service.is_allowed(third, "192.0.2.10"))

    def test_punished_until_in_milliseconds(self) -> None:
        """
        punishedUntil is the unix time in milliseconds.
        """
        self.service.record_event(PeerEvent.INVALID_BLOCK, None, "192.0.2.7")
        self.assertEqual(self.service.peer_records()[0].punished_until, int(START * 1000) + 720000)

    def test_separate_parameters(self) -> None:
        """
        Node and address records take their own punishment parameters.
        """
        service, clock = make_service(
            node=PunishmentParameters(1000, 10, 0), address=PunishmentParameters(5000, 10, 0)
        )
        service.record_event(PeerEvent.INVALID_BLOCK, NODE, "192.0.2.7")
        service.record_event(PeerEvent.INVALID_BLOCK, None, "192.0.2.7")
        clock.advance(1)
        self.assertTrue(service.is_allowed(NODE, "198.51.100.1"))
        self.assertFalse(service.is_allowed(None, "192.0.2.7"))
        clock.advance(4)
        self.assertTrue(service.is_allowed(NODE, "192.0.2.7"))

    def test_node_records_bounded(self) -> None:
        """
        Only the most recently used node records are kept; address records are not bounded by default.
        """
        service, _ = make_service(max_node_records=2)
        for number in range(5):
            service.record_event(PeerEvent.DISCONNECTION, bytes([number]) * 64, f"192.0.2.{number}")
            service.record_event(PeerEvent.FAILED_HANDSHAKE, None, f"192.0.2.{number}")
        kinds = [record.kind for record in service.peer_records()]
        self.assertEqual(kinds, ["node", "node"] + ["address"] * 5)

    def test_punishment_disabled(self) -> None:
        """
        With punishments off, offenders are scored but allowed.
        """
        service, _ = make_service(punishment_enabled=False)
        service.record_event(PeerEvent.INVALID_BLOCK, NODE, "192.0.2.7")
        self.assertTrue(service.is_allowed(NODE, "192.0.2.7"))
        self.assertEqual(service.peer_records()[0].score, -1)

    def test_unknown_event(self) -> None:
        """
        An event outside the model raises.
        """
        self.assertRaises(ValueError, self.service.record_event, "NOT_AN_EVENT", NODE, "192.0.2.7")

    def test_non_ip_address(self) -> None:
        """
        An address that is not an IP (a UNIX socket) is scored under its text.
        """
        self.service.record_event(PeerEvent.INVALID_MESSAGE, None, "/tmp/peer.sock")
        self.assertFalse(self.service.is_allowed(None, "/tmp/peer.sock"))

    def test_clear_records(self) -> None:
        """
        Records are cleared by address, or by node id prefix.
        """
        self.service.record_event(PeerEvent.INVALID_BLOCK, NODE, "192.0.2.7")
        self.service.record_event(PeerEvent.INVALID_BLOCK, OTHER_NODE, "192.0.2.8")
        self.service.record_event(PeerEvent.INVALID_BLOCK, None, "192.0.2.7")
        self.service.record_event(PeerEvent.INVALID_BLOCK, None, "192.0.2.8")
        self.assertTrue(self.service.clear_address_record("192.0.2.7"))
        self.assertFalse(self.service.clear_address_record("192.0.2.7"))
        self.assertEqual(self.service.clear_node_records("3fd44f6"), 2)
        self.assertEqual(self.service.clear_node_records(NODE.hex()), 0)
        self.assertTrue(self.service.is_allowed(NODE, "192.0.2.7"))
        self.assertFalse(self.service.is_allowed(None, "192.0.2.8"))


class ObserverTests(SynchronousTestCase):
    """
    Observers hear of records turning bad and of new bans, on a later turn.
    """

    def setUp(self) -> None:
        """
        A service with one counting observer.
        """
        self.service, self.clock = make_service(FakeResolver({"bad.example": ["203.0.113.5"]}))
        self.calls = 0

        def observer() -> None:
            self.calls += 1

        self.service.add_ban_observer(observer)

    def test_turned_bad(self) -> None:
        """
        One call after a record turns bad (once for both records), none for other events.
        """
        self.service.record_event(PeerEvent.VALID_BLOCK, NODE, "192.0.2.7")
        self.service.record_event(PeerEvent.INVALID_BLOCK, NODE, "192.0.2.7")
        self.assertEqual(self.calls, 0)
        self.clock.advance(0)
        self.assertEqual(self.calls, 1)
        self.service.record_event(PeerEvent.INVALID_BLOCK, NODE, "192.0.2.7")
        self.clock.advance(0)
        self.assertEqual(self.calls, 1)

    def test_ban(self) -> None:
        """
        A new ban calls the observers; banning again, or unbanning, does not.
        """
        self.successResultOf(self.service.ban_address("192.0.2.7"))
        self.successResultOf(self.service.ban_address("bad.example"))
        self.clock.advance(0)
        self.assertEqual(self.calls, 1)
        self.successResultOf(self.service.ban_address("192.0.2.7"))
        self.successResultOf(self.service.unban_address("192.0.2.7"))
        self.clock.advance(0)
        self.assertEqual(self.calls, 1)

    def test_failing_observer(self) -> None:
        """
        An observer that raises is logged, and the others still run.
        """
        def broken() -> None:
            raise RuntimeError("observer bug")

        service, clock = make_service()
        seen = []
        service.add_ban_observer(broken)
        service.add_ban_observer(lambda: seen.append(True))
        service.record_event(PeerEvent.INVALID_MESSAGE, None, "192.0.2.7")
        clock.advance(0)
        self.assertEqual(seen, [True])
        self.assertEqual(len(self.flushLoggedErrors(RuntimeError)), 1)

    def test_stop_cancels(self) -> None:
        """
        Stopping the service drops a pending notification.
        """
        self.service.startService()
        self.service.record_event(PeerEvent.INVALID_MESSAGE, None, "192.0.2.7")
        self.service.stopService()
        self.assertEqual(self.clock.getDelayedCalls(), [])
        self.clock.advance(0)
        self.assertEqual(self.calls, 0)


class BanTests(SynchronousTestCase):
    """
    Bans by address, block, host name and node id.
    """

    def setUp(self) -> None:
        """
        A service whose resolver knows a few names.
        """
        self.resolver = FakeResolver(
            {
                "peer.example": ["203.0.113.5", "2001:db8::5"],
                "empty.example": [],
                "local.example": ["127.0.0.1"],
                "weird.example": ["not-an-address"],
                "scoped.example": ["fe80::1%eth0"],
            }
        )
        self.service, self.clock = make_service(self.resolver)

    def test_address(self) -> None:
        """
        A banned IPv4 or IPv6 address is refused with any node id, and allowed once unbanned.
        """
        for address in ("192.0.2.7", "2001:db8::7"):
            self.assertIsNone(self.successResultOf(self.service.ban_address(address)))
            self.assertFalse(self.service.is_allowed(None, address))
            self.assertFalse(self.service.is_allowed(NODE, address))
            self.successResultOf(self.service.unban_address(address))
            self.assertTrue(self.service.is_allowed(NODE, address))

    def test_blocks(self) -> None:
        """
        A banned block refuses every address in it.
        """
        self.successResultOf(self.service.ban_address("198.51.100.0/24"))
        self.successResultOf(self.service.ban_address("2001:db8:1::/48"))
        self.assertFalse(self.service.is_allowed(None, "198.51.100.77"))
        self.assertFalse(self.service.is_allowed(None, "::ffff:198.51.100.77"))
        self.assertFalse(self.service.is_allowed(None, "2001:db8:1:ffff::1"))
        self.assertTrue(self.service.is_allowed(None, "2001:db8:2::1"))
        self.assertEqual(self.service.banned_addresses(), ["198.51.100.0/24", "2001:db8:1::/48"])

    def test_host_name(self) -> None:
        """
        A host name bans every address it resolves to; unbanning resolves again.
        """
        self.successResultOf(self.service.ban_address("peer.example"))
        self.assertEqual(self.service.banned_addresses(), ["203.0.113.5", "2001:db8::5"])
        self.assertFalse(self.service.is_allowed(None, "2001:db8::5"))
        self.successResultOf(self.service.unban_address("peer.example"))
        self.assertEqual(self.service.banned_addresses(), [])
        self.assertEqual(self.resolver.asked, ["peer.example", "peer.example"])

    def test_scoped_address(self) -> None:
        """
        A resolved link-local address loses its scope.
        """
        self.successResultOf(self.service.ban_address("scoped.example"))
        self.assertEqual(self.service.banned_addresses(), ["fe80::1"])

    def test_unresolvable(self) -> None:
        """
        A name that does not resolve, resolves to nothing, to loopback or to garbage is refused.
        """
        for name in ("unknown.example", "empty.example", "local.example", "weird.example"):
            failure = self.failureResultOf(self.service.ban_address(name), InvalidBanError)
            self.assertEqual(str(failure.value), f"invalid banned address {name}")
        self.assertEqual(len(self.flushLoggedErrors(OSError)), 1)
        self.assertEqual(self.service.banned_addresses(), [])

    def test_refused_without_resolving(self) -> None:
        """
        Loopback, wildcard and malformed input fail at once; nothing is resolved.
        """
        for text in ("127.0.0.1", "::", "0.0.0.0", "::1", "10.0.0.0/33", "1.2.3", "bad_name"):
            self.failureResultOf(self.service.ban_address(text), InvalidBanError)
            self.failureResultOf(self.service.unban_address(text), InvalidBanError)
        self.assertEqual(self.resolver.asked, [])

    def test_unban_unknown(self) -> None:
        """
        Lifting a ban that does not exist is not an error.
        """
        self.assertIsNone(self.successResultOf(self.service.unban_address("192.0.2.99")))

    def test_configured_bans(self) -> None:
        """
        Banned node ids and addresses from the configuration are refused from the start.
        """
        ids = configured_node_ids(["0x" + NODE.hex()])
        service, _ = make_service(banned_node_ids=ids, banned_addresses=("192.0.2.7", "2001:db8::/32"))
        self.assertFalse(service.is_allowed(NODE, "198.51.100.1"))
        self.assertTrue(service.is_allowed(OTHER_NODE, "198.51.100.1"))
        self.assertFalse(service.is_allowed(None, "192.0.2.7"))
        self.assertFalse(service.is_allowed(OTHER_NODE, "2001:db8::1"))
        self.assertEqual(service.banned_addresses(), ["192.0.2.7", "2001:db8::/32"])

    def test_configured_bad_ban(self) -> None:
        """
        A configured ban of loopback or of a host name is refused.
        """
        for text in ("127.0.0.1", "peer.example"):
            self.assertRaises(InvalidBanError, make_service, banned_addresses=(text,))

    def test_ban_beats_good_record(self) -> None:
        """
        A banned address is refused whatever its score.
        """
        for _ in range(5):
            self.service.record_event(PeerEvent.VALID_BLOCK, NODE, "192.0.2.7")
        self.successResultOf(self.service.ban_address("192.0.2.0/24"))
        self.assertFalse(self.service.is_allowed(NODE, "192.0.2.7"))


class HostResolverTests(SynchronousTestCase):
    """
    Tests for L{host_resolver} over a Twisted host-name resolver.
    """

    def test_collects_addresses(self) -> None:
        """
        Every distinct resolved address, IPv4 and IPv6, in the order given.
        """
        asked = []

        class Resolver:
            def resolveHostName(self, receiver, hostName, portNumber=0, addressTypes=None, transportSemantics="TCP"):  # type: ignore[no-untyped-def]
                asked.append((hostName, portNumber, tuple(addressTypes)))
                self.assertProvides = IResolutionReceiver.providedBy(receiver)
                receiver.resolutionBegan(None)
                receiver.addressResolved(IPv4Address("TCP", "203.0.113.5", 0))
                receiver.addressResolved(IPv6Address("TCP", "2001:db8::5", 0))
                receiver.addressResolved(IPv4Address("TCP", "203.0.113.5", 0))
                receiver.resolutionComplete()
                return receiver

        resolver = Resolver()

        class Reactor:
            nameResolver = resolver

        result = self.successResultOf(host_resolver(Reactor())("peer.example"))
        self.assertEqual(result, ["203.0.113.5", "2001:db8::5"])
        self.assertEqual(asked, [("peer.example", 0, (IPv4Address, IPv6Address))])
        self.assertTrue(resolver.assertProvides)
