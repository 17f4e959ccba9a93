"""
The peer network of a node that has no peer-to-peer server: until the P2P
service exists (a later issue), or when it is disabled (C{--p2p none}).
"""

from twisted.internet.defer import Deferred, succeed
from zope.interface import implementer

from nodex.interfaces import IPeerNetwork


@implementer(IPeerNetwork)
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


__all__ = ["OfflinePeerNetwork"]
