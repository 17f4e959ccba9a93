"""
Tests for L{nodex.p2p.admission}: handshake failures per address, and which
connection in its handshake gives way when every slot is taken.
"""

from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from nodex.p2p.admission import Gatekeeper, HandshakeFailures, KnownGood, eviction_candidate
from nodex.p2p.host import NetworkSettings


class FakeConnection:
    """
    What eviction looks at: the address and when the connection was made.
    """

    def __init__(self, address: str, connected_at: float) -> None:
        self.address = address
        self.connected_at = connected_at


class HandshakeFailuresTests(SynchronousTestCase):
    """
    Failures counted per address within a window.
    """

    def test_limit(self) -> None:
        """
        One failure more than the limit within the window is reported once; the count starts again.
        """
        failures = HandshakeFailures(3, window=600)
        self.assertEqual([failures.add("192.0.2.7", second) for second in range(4)], [False] * 3 + [True])
        self.assertEqual(failures.count("192.0.2.7", 4), 0)
        self.assertFalse(failures.add("192.0.2.8", 4))

    def test_window(self) -> None:
        """
        Failures older than the window do not count.
        """
        failures = HandshakeFailures(3, window=600)
        for second in (0, 1, 2):
            failures.add("192.0.2.7", second)
        self.assertFalse(failures.add("192.0.2.7", 601))
        self.assertEqual(failures.count("192.0.2.7", 601), 2)

    def test_bounded(self) -> None:
        """
        Only the most recent addresses are remembered.
        """
        failures = HandshakeFailures(3, addresses=2)
        for address in ("192.0.2.1", "192.0.2.2", "192.0.2.3"):
            failures.add(address, 0)
        self.assertEqual([failures.count(a, 0) for a in ("192.0.2.1", "192.0.2.2", "192.0.2.3")], [0, 1, 1])


class KnownGoodTests(SynchronousTestCase):
    """
    Peers that stayed for a while.
    """

    def test_address_and_node(self) -> None:
        """
        A good peer's address and node id are remembered.
        """
        good = KnownGood()
        good.add("192.0.2.7", b"\x01" * 64)
        self.assertTrue(good.has_address("192.0.2.7") and good.has_node(b"\x01" * 64))
        self.assertFalse(good.has_address("192.0.2.8") or good.has_node(b"\x02" * 64))


class EvictionTests(SynchronousTestCase):
    """
    The connection that gives way to a newcomer.
    """

    def test_crowded_address_gives_way(self) -> None:
        """
        The oldest connection of the address holding the most gives way to a newcomer from elsewhere.
        """
        crowd = [FakeConnection("192.0.2.7", when) for when in (5, 3, 4)]
        other = [FakeConnection("192.0.2.8", 1), FakeConnection("192.0.2.8", 2)]
        victim = eviction_candidate(crowd + other, "198.51.100.1", lambda peer: False)
        self.assertIs(victim, crowd[1])

    def test_newcomer_as_crowded(self) -> None:
        """
        A newcomer from an address holding as many as the most crowded evicts nobody.
        """
        held = [FakeConnection("192.0.2.7", 1), FakeConnection("192.0.2.8", 2)]
        self.assertIsNone(eviction_candidate(held, "192.0.2.7", lambda peer: False))
        self.assertIs(eviction_candidate(held, "198.51.100.1", lambda peer: False), held[0])

    def test_protected(self) -> None:
        """
        A protected connection never gives way.
        """
        held = [FakeConnection("192.0.2.7", 1), FakeConnection("192.0.2.7", 2), FakeConnection("192.0.2.8", 0)]
        victim = eviction_candidate(held, "198.51.100.1", lambda peer: peer.address == "192.0.2.7")
        self.assertIs(victim, held[2])
        self.assertIsNone(eviction_candidate(held, "198.51.100.1", lambda peer: True))


class FakeReputation:
    """
    Trusts what it is told to; records the events it gets.
    """

    def __init__(self, trusted: tuple[str, ...] = ()) -> None:
        self.trusted = trusted
        self.events: list[tuple[str, bytes | None, str]] = []

    def is_trusted(self, node_id: bytes | None, address: str) -> bool:
        return address in self.trusted

    def is_allowed(self, node_id: bytes | None, address: str) -> bool:
        return not any(recorded == address for _, _, recorded in self.events)

    def record_event(self, event: str, node_id: bytes | None, address: str) -> None:
        self.events.append((event, node_id, address))


class Pending(FakeConnection):
    """
    An inbound connection in its handshake, that can be told to go.
    """

    inbound = True
    closed = False
    established = False
    transport = object()
    was_established = False
    offended = False
    node_id = None

    def disconnect(self, reason: object) -> None:
        self.closed = True
        self.reason = reason


class GatekeeperTests(SynchronousTestCase):
    """
    Which inbound connection gets a slot.
    """

    def setUp(self) -> None:
        self.connections: list[Pending] = []
        self.reputation = FakeReputation(trusted=("10.0.0.9",))
        self.settings = NetworkSettings(
            network_id=7771, genesis_hash=b"\x00" * 32, bootstrap=(("10.0.0.8", 5050),), max_inbound=2,
            max_half_open_per_address=2, max_handshake_failures=1, reserved_slots=1,
        )
        self.clock = Clock()
        self.gate = Gatekeeper(
            self.settings, self.reputation, self.clock, lambda: [c for c in self.connections if not c.closed],  # type: ignore[arg-type]
            lambda: [], lambda: set(),
        )

    def connect(self, address: str) -> bool:
        admitted = self.gate.admit(address)
        if admitted:
            self.connections.append(Pending(address, self.clock.seconds()))
        self.clock.advance(1)
        return admitted

    def test_address_limit(self) -> None:
        """
        One more connection in its handshake than the address's limit is
        refused and counted against the address; a trusted address is exempt.
        """
        self.assertEqual([self.connect("192.0.2.7") for _ in range(3)], [True, True, False])
        self.assertEqual(self.reputation.events, [("INVALID_MESSAGE", None, "192.0.2.7")])
        self.assertEqual([self.connect("10.0.0.9") for _ in range(3)], [True, True, True])

    def test_eviction_and_reserved_slots(self) -> None:
        """
        With every slot taken (twice max_inbound), a newcomer from a less
        crowded address takes the oldest slot of the most crowded; a
        configured peer's address takes a reserved slot without evicting.
        """
        for address in ("192.0.2.7", "192.0.2.7", "192.0.2.8"):
            self.assertTrue(self.connect(address))
        self.assertTrue(self.connect("192.0.2.9"))
        self.assertFalse(any(c.closed for c in self.connections))
        self.assertTrue(self.connect("198.51.100.1"))
        self.assertEqual([c.address for c in self.connections if c.closed], ["192.0.2.7"])
        self.assertTrue(self.connect("10.0.0.8"))
        self.assertEqual(len([c for c in self.connections if c.closed]), 1)
        self.assertFalse(self.connect("192.0.2.8"))

    def test_handshake_failures(self) -> None:
        """
        Past max_handshake_failures, the address is punished; a trusted address never.
        """
        self.gate.handshake_failed("192.0.2.7", "timed out")
        self.assertEqual(self.reputation.events, [])
        self.gate.handshake_failed("192.0.2.7", "timed out")
        self.assertEqual(self.reputation.events, [("INVALID_MESSAGE", None, "192.0.2.7")])
        for _ in range(5):
            self.gate.handshake_failed("10.0.0.9", "timed out")
        self.assertEqual(len(self.reputation.events), 1)

    def test_known_good_now(self) -> None:
        """
        An address whose peer has been connected for a minute without an
        offence is known to be good while it stays.
        """
        peer = Pending("192.0.2.7", 0)
        peer.established = True  # type: ignore[misc]
        peers = [peer]
        gate = Gatekeeper(
            self.settings, self.reputation, self.clock, lambda: [], lambda: peers, lambda: set()  # type: ignore[arg-type]
        )
        self.clock.advance(59)
        self.assertFalse(gate.privileged(None, "192.0.2.7"))
        self.clock.advance(1)
        self.assertTrue(gate.privileged(None, "192.0.2.7"))
        peer.offended = True  # type: ignore[misc]
        self.assertFalse(gate.privileged(None, "192.0.2.7"))

    def test_privileged(self) -> None:
        """
        Trusted, configured and known-good peers may take the reserved slots.
        """
        self.assertTrue(self.gate.privileged(None, "10.0.0.9"))
        self.assertTrue(self.gate.privileged(None, "10.0.0.8"))
        self.assertFalse(self.gate.privileged(None, "192.0.2.7"))
        self.gate.known_good.add("192.0.2.7", b"\x01" * 64)
        self.assertTrue(self.gate.privileged(None, "192.0.2.7"))
        self.assertTrue(self.gate.privileged(b"\x01" * 64, "198.51.100.1"))
