"""
The methods of the C{eth} module that need only the node's identity: the
chain id and the wire-protocol version.  The chain, pool and mining methods
of later issues come with their services, in their own providers.
"""

from collections.abc import Iterable

from nodex.rpc import encoders
from nodex.rpc.registry import Method


class EthIdentityMethods:
    """
    C{eth_chainId} and C{eth_protocolVersion}.
    """

    def __init__(self, chain_id: int, protocol_version: int) -> None:
        """
        @param chain_id: the EIP-155 chain id of the network.
        @param protocol_version: the version of the peer-to-peer wire
            protocol (L{nodex.p2p.messages.WIRE_PROTOCOL_VERSION}).
        """
        self._chain_id = chain_id
        self._protocol_version = protocol_version

    def rpc_methods(self) -> Iterable[Method]:
        """
        The identity methods of the C{eth} module.
        """
        return [
            Method("eth_chainId", self.chain_id, (), encoders.quantity),
            Method("eth_protocolVersion", self.protocol_version, (), encoders.quantity),
        ]

    def chain_id(self) -> int:
        """
        The chain id (DESIGN §1: the chain id, not the protocol version).
        """
        return self._chain_id

    def protocol_version(self) -> int:
        """
        The P2P wire protocol version.
        """
        return self._protocol_version


__all__ = ["EthIdentityMethods"]
