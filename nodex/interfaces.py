"""
The zope interfaces through which the edges (RPC, P2P, manhole) see the
node's services (L5).  The edges depend only on these; the composition root
(L{nodex.tap}) hands them the objects that provide them.

Every method that may touch storage or the network returns a Deferred.
"""

from twisted.internet.defer import Deferred
from zope.interface import Interface

WIRE_PROTOCOL_VERSION = 62
"""
The version of nodex's own peer-to-peer wire protocol (DESIGN §5), which
C{eth_protocolVersion} reports.  It lives here so that the P2P package and the
composition root share it without the RPC edge importing P2P.
"""


class IPeerNetwork(Interface):
    """
    The peer-to-peer side of the node, as the RPC edge sees it.
    """

    def is_listening() -> "Deferred[bool]":
        """
        Whether the node accepts incoming peer connections now.

        @return: a Deferred firing with C{True} while the P2P server listens.
        """


__all__ = ["IPeerNetwork", "WIRE_PROTOCOL_VERSION"]
