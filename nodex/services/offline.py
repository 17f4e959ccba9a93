"""
The peer network of a node that has no peer-to-peer server: until the P2P
service is composed, or when it is disabled (C{--p2p none}).
"""

from twisted.internet.defer import Deferred, succeed
from zope.interface import implementer

from nodex.api.peers import IPeerAdmin, IPeerNetwork, NodeInfo, PeerDetail, PeerInfo, PeerURL, SyncStatus


@implementer(IPeerNetwork, IPeerAdmin)
class OfflinePeerNetwork:
    """
    A peer network that never listens and has no peers.
    """

    def is_listening(self) -> Deferred[bool]:
        """
        Never listening.

        @return: a Deferred firing with C{False}.
        """
        return succeed(False)

    def peers(self) -> list[PeerInfo]:
        """
        No peers.
        """
        return []

    def queue_size(self) -> int:
        """
        No peer messages, so none waiting.
        """
        return 0

    def sync_status(self) -> SyncStatus | None:
        """
        A node without peers is never syncing.
        """
        return None

    def node_info(self) -> NodeInfo | None:
        """
        No peer network to describe.
        """
        return None

    def peer_details(self) -> list[PeerDetail]:
        """
        No peers.
        """
        return []

    def add_peer(self, url: PeerURL) -> bool:
        """
        Nowhere to add it: start the node with C{--p2p} or C{--peer}.
        """
        return False

    def remove_peer(self, url: PeerURL) -> bool:
        """
        Nothing to remove.
        """
        return False


__all__ = ["OfflinePeerNetwork"]
