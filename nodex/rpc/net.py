"""
The C{net} module: the network the node is on and its peer server.
"""

from collections.abc import Iterable

from twisted.internet.defer import Deferred

from nodex.api.peers import IPeerNetwork
from nodex.rpc import encoders
from nodex.rpc.registry import Method


class NetMethods:
    """
    C{net_version} and C{net_listening}.
    """

    def __init__(self, chain_id: int, peers: IPeerNetwork) -> None:
        """
        @param chain_id: the chain id, which C{net_version} answers in decimal
            (reference §3.2; not the P2P network id).
        @param peers: the peer-to-peer side of the node.
        """
        self._chain_id = chain_id
        self._peers = peers

    def rpc_methods(self) -> Iterable[Method]:
        """
        The methods of the C{net} module.
        """
        return [
            Method("net_version", self.version, (), encoders.decimal),
            Method("net_listening", self.listening),
        ]

    def version(self) -> int:
        """
        The chain id (encoded as a decimal string).
        """
        return self._chain_id

    def listening(self) -> Deferred[bool]:
        """
        Whether the P2P server accepts connections.

        @return: a Deferred firing with a boolean.
        """
        return self._peers.is_listening()


__all__ = ["NetMethods"]
