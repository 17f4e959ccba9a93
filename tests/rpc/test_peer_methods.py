"""
Tests for L{nodex.rpc.peer_methods} and C{eth_syncing}, with a fake peer network.
"""

from twisted.internet.defer import Deferred, succeed
from twisted.trial.unittest import SynchronousTestCase
from zope.interface import implementer
from zope.interface.verify import verifyObject

from nodex.api.peers import IPeerNetwork, PeerInfo, SyncStatus
from nodex.rpc.chain_methods import ChainMethods
from nodex.rpc.peer_methods import PeerMethods, peer_line
from nodex.services.offline import OfflinePeerNetwork


@implementer(IPeerNetwork)
class FakePeers:
    """
    A peer network with fixed answers.
    """

    def __init__(self, peers: list[PeerInfo], queued: int = 0, status: SyncStatus | None = None) -> None:
        self._peers, self._queued, self._status = peers, queued, status

    def is_listening(self) -> Deferred[bool]:
        return succeed(True)

    def peers(self) -> list[PeerInfo]:
        return self._peers

    def queue_size(self) -> int:
        return self._queued

    def sync_status(self) -> SyncStatus | None:
        return self._status


class PeerMethodsTests(SynchronousTestCase):
    """
    The peer methods.
    """

    def test_interface(self) -> None:
        """
        The offline network and the fake provide the interface.
        """
        verifyObject(IPeerNetwork, OfflinePeerNetwork())
        verifyObject(IPeerNetwork, FakePeers([]))

    def test_peer_line(self) -> None:
        """
        The first 8 hex digits of the node id, a bar, host/ip:port (no host: /ip:port).
        """
        node_id = bytes.fromhex("3fd44f66") + b"\x00" * 60
        self.assertEqual(peer_line(PeerInfo(node_id, "", "52.15.37.171", 5050)), "3fd44f66 | /52.15.37.171:5050")
        self.assertEqual(
            peer_line(PeerInfo(node_id, "node.example", "192.0.2.1", 50501)), "3fd44f66 | node.example/192.0.2.1:50501"
        )

    def test_methods(self) -> None:
        """
        Count, list and queue size come from the peer network.
        """
        peers = [PeerInfo(b"\x01" * 64, "", "192.0.2.1", 1), PeerInfo(b"\x02" * 64, "", "192.0.2.2", 2)]
        methods = PeerMethods(FakePeers(peers, queued=3))
        self.assertEqual((methods.peer_count(), methods.queue_size()), (2, 3))
        self.assertEqual(methods.peer_list(), ["01010101 | /192.0.2.1:1", "02020202 | /192.0.2.2:2"])
        names = [method.name for method in methods.rpc_methods()]
        self.assertEqual(names, ["net_peerCount", "net_peerList", "debug_wireProtocolQueueSize"])

    def test_syncing(self) -> None:
        """
        eth_syncing is false without a sync, else the object in the specification's order.
        """
        self.assertIs(ChainMethods(None, None, FakePeers([])).syncing(), False)  # type: ignore[arg-type]
        self.assertIs(ChainMethods(None, None).syncing(), False)  # type: ignore[arg-type]
        status = ChainMethods(None, None, FakePeers([], status=SyncStatus(True, 5, 100, 1000))).syncing()  # type: ignore[arg-type]
        self.assertEqual(list(status.items()), [("startingBlock", "0x5"), ("currentBlock", "0x64"), ("highestBlock", "0x3e8")])  # type: ignore[union-attr]
