"""
The methods that show the node's peers: C{net_peerCount}, C{net_peerList}
and C{debug_wireProtocolQueueSize} (reference §3.2, §3.8).
"""

from collections.abc import Iterable

from nodex.api.peers import IPeerNetwork, PeerInfo
from nodex.rpc import encoders
from nodex.rpc.registry import Method


def peer_line(peer: PeerInfo) -> str:
    """
    One entry of C{net_peerList}: the first 8 hex digits of the node id, a
    bar, then C{host/ip:port} (C{/ip:port} when no host name is known), as
    the specification shows it (DESIGN §1).
    """
    return f"{peer.node_id.hex()[:8]} | {peer.host}/{peer.ip}:{peer.port}"


class PeerMethods:
    """
    The peer methods of the C{net} and C{debug} modules.
    """

    def __init__(self, peers: IPeerNetwork) -> None:
        """
        @param peers: the peer-to-peer side of the node.
        """
        self._peers = peers

    def rpc_methods(self) -> Iterable[Method]:
        """
        C{net_peerCount}, C{net_peerList}, C{debug_wireProtocolQueueSize}.
        """
        return [
            Method("net_peerCount", self.peer_count, (), encoders.quantity),
            Method("net_peerList", self.peer_list),
            Method("debug_wireProtocolQueueSize", self.queue_size, (), encoders.quantity),
        ]

    def peer_count(self) -> int:
        """
        How many peers are connected (handshake done).
        """
        return len(self._peers.peers())

    def peer_list(self) -> list[str]:
        """
        One line per connected peer.
        """
        return [peer_line(peer) for peer in self._peers.peers()]

    def queue_size(self) -> int:
        """
        Peer messages received and not yet handled.
        """
        return self._peers.queue_size()


__all__ = ["PeerMethods", "peer_line"]
