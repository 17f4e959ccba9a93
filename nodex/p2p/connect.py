"""
How this node dials a peer: plain TCP, or TLS that checks the peer's
certificate against its host name (service-identity, through Twisted's
C{optionsForClientTLS}).
"""

from collections.abc import Callable
from typing import Any

from twisted.internet.endpoints import HostnameEndpoint, wrapClientTLS
from twisted.internet.interfaces import IStreamClientEndpoint
from twisted.internet.ssl import Certificate, optionsForClientTLS, platformTrust

from nodex.p2p.errors import P2PError

CONNECT_TIMEOUT = 10
"""Seconds a TCP connection attempt may take."""


def peer_connector(reactor: Any, tls: bool, ca_certificate: str = "") -> Callable[[str, int], IStreamClientEndpoint]:
    """
    The function that makes the client endpoint of a peer's host and port.

    @param tls: dial over TLS, verifying that the peer's certificate names the dialed host.
    @param ca_certificate: the PEM file of the certificate authority to
        trust (read at the first dial), or the empty string for the
        platform's trust roots.
    """
    trust: list[Any] = []

    def trust_root() -> Any:
        if not trust:
            if ca_certificate:
                try:
                    with open(ca_certificate, "rb") as handle:
                        trust.append(Certificate.loadPEM(handle.read()))
                except OSError as exc:
                    raise P2PError(f"cannot read the P2P CA certificate {ca_certificate}: {exc.strerror}") from None
            else:
                trust.append(platformTrust())
        return trust[0]

    def connect(host: str, port: int) -> IStreamClientEndpoint:
        endpoint = HostnameEndpoint(reactor, host, port, timeout=CONNECT_TIMEOUT)
        if not tls:
            return endpoint
        return wrapClientTLS(optionsForClientTLS(host, trustRoot=trust_root()), endpoint)

    return connect


__all__ = ["CONNECT_TIMEOUT", "peer_connector"]
