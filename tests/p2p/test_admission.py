"""
Tests for L{nodex.p2p.admission}: handshake failures per address, and which
connection in its handshake gives way when every slot is taken.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.p2p.admission import HandshakeFailures, KnownGood, eviction_candidate


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
