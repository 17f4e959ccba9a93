"""
Tests for L{nodex.p2p.peerstore}: the peers a node reached, their bounds,
their file; and end to end, a node restarted while its configured peer is
down reaches the peer it learned through it.
"""

import json
from pathlib import Path

from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from nodex.p2p.peerstore import (
    EXPIRY_SECONDS,
    MAX_ENTRIES,
    MAX_FAILURES,
    MAX_PER_GROUP,
    PeerStore,
    address_group,
)
from tests.p2p.nodes import NodesTestCase


def node_id(index: int) -> bytes:
    return index.to_bytes(64, "big")


class PeerStoreTests(SynchronousTestCase):
    """
    The store in memory and in its file.
    """

    def setUp(self) -> None:
        self.clock = Clock()
        self.clock.advance(1_000_000)
        self.file = Path(self.mktemp())
        self.store = PeerStore(self.file, self.clock)

    def test_round_trip(self) -> None:
        """
        What is saved is loaded again, the most recently reached first.
        """
        self.store.succeeded("10.0.0.1", 5050, node_id(1))
        self.clock.advance(10)
        self.store.succeeded("10.1.0.2", 5051, node_id(2))
        self.store.failed("10.0.0.1", 5050)
        self.store.save()
        other = PeerStore(self.file, self.clock)
        other.load()
        self.assertEqual([(e.host, e.port, e.node_id, e.failures) for e in other.entries()],
                         [("10.1.0.2", 5051, node_id(2).hex(), 0), ("10.0.0.1", 5050, node_id(1).hex(), 1)])
        self.assertEqual([e.host for e in other.candidates()], ["10.1.0.2", "10.0.0.1"])

    def test_failures_then_dropped(self) -> None:
        """
        A success resets the failures; L{MAX_FAILURES} in a row drop the entry.
        """
        self.store.succeeded("10.0.0.1", 5050, node_id(1))
        for _ in range(MAX_FAILURES - 1):
            self.store.failed("10.0.0.1", 5050)
        self.store.succeeded("10.0.0.1", 5050, node_id(1))
        self.assertEqual(self.store.entries()[0].failures, 0)
        for _ in range(MAX_FAILURES):
            self.store.failed("10.0.0.1", 5050)
        self.assertEqual(len(self.store), 0)

    def test_expiry(self) -> None:
        """
        An entry not reached for L{EXPIRY_SECONDS} is dropped.
        """
        self.store.succeeded("10.0.0.1", 5050, node_id(1))
        self.clock.advance(EXPIRY_SECONDS + 1)
        self.assertEqual(self.store.candidates(), [])

    def test_one_group_cannot_fill_it(self) -> None:
        """
        Many node ids in one /16 keep at most L{MAX_PER_GROUP} entries: the newest replace the group's worst.
        """
        self.store.succeeded("192.168.9.9", 1, node_id(0))
        for index in range(100):
            self.clock.advance(1)
            self.store.succeeded(f"10.0.{index // 250}.{index % 250}", 1000 + index, node_id(index + 1))
        groups = [address_group(entry.host) for entry in self.store.entries()]
        self.assertEqual(groups.count("10.0.0.0/16"), MAX_PER_GROUP)
        self.assertIn("192.168.9.9", [entry.host for entry in self.store.entries()])

    def test_full_store_keeps_answering_peers(self) -> None:
        """
        When the store is full, a newcomer takes only the place of a peer whose dial failed.
        """
        for index in range(MAX_ENTRIES):
            self.store.succeeded(f"{10 + index // 8}.{index % 8}.0.1", 1, node_id(index))
        self.assertEqual(len(self.store), MAX_ENTRIES)
        self.store.succeeded("200.0.0.1", 1, node_id(9999))
        self.assertNotIn("200.0.0.1", [entry.host for entry in self.store.entries()])
        self.store.failed("10.0.0.1", 1)
        self.store.succeeded("200.0.0.1", 1, node_id(9999))
        hosts = [entry.host for entry in self.store.entries()]
        self.assertIn("200.0.0.1", hosts)
        self.assertNotIn("10.0.0.1", hosts)
        self.assertEqual(len(self.store), MAX_ENTRIES)

    def test_bad_files(self) -> None:
        """
        A missing, broken, oversized or ill-typed file is an empty store.
        """
        self.store.load()
        for text in ("not json", json.dumps([{"host": "x"}]), json.dumps({"a": 1}), " " * (1024 * 1024 + 1)):
            self.file.write_text(text)
            store = PeerStore(self.file, self.clock)
            store.load()
            self.assertEqual(len(store), 0)

    def test_invalid_ports_ignored(self) -> None:
        """
        A port of 0 (an inbound peer that does not listen) is not stored.
        """
        self.store.succeeded("10.0.0.1", 0, node_id(1))
        self.assertEqual(len(self.store), 0)


class RestartTests(NodesTestCase):
    """
    A node remembers the peers it reached.
    """

    async def test_restart_while_configured_peer_down(self) -> None:
        """
        C dials A, and learns B (A's other peer) through peer exchange; C
        and A stop; C starts again, its configured peer still down, and
        reaches B through its peer store.
        """
        a = await self.start_node()
        b = await self.start_node("--peer", self.address(a))
        await self.wait_for(lambda: len(self.network(a).established_peers()) == 1, what="B to reach A")
        datadir = self.mktemp()
        c = await self.start_node("--peer", self.address(a), datadir=datadir)
        b_id = self.network(b).node_key.node_id
        await self.wait_for(lambda: b_id in {peer.node_id for peer in self.network(c).established_peers()},
                            what="C to reach B through peer exchange")
        await self.stop_node(c)
        stored = json.loads((self.network(c)._datadir / "peers.json").read_text())
        self.assertEqual({entry["node_id"] for entry in stored},
                         {self.network(a).node_key.node_id.hex(), b_id.hex()})
        a_address = self.address(a)
        await self.stop_node(a)
        again = await self.start_node("--peer", a_address, datadir=datadir)
        await self.wait_for(lambda: b_id in {peer.node_id for peer in self.network(again).established_peers()},
                            what="C to reach B through its peer store")
