"""
Who sends the request being answered: the connection that carried it, as
the edges (HTTP, WebSocket) set it around the dispatcher, for the methods
that keep something per client (installed filters count against their
client's quota).

An HTTP client is its address (its connections come and go, and HTTP has
no other identity); a WebSocket client is its connection.  Behind a
reverse proxy every HTTP client has the proxy's address, and shares its
quota.
"""

from collections.abc import Hashable
from contextvars import ContextVar
from typing import Protocol


class Client(Protocol):
    """
    A connection that can say whose requests it carries.
    """

    def client_identity(self) -> Hashable:
        """
        The client, as the methods' quotas count it.
        """


CURRENT_CLIENT: ContextVar[Client | None] = ContextVar("CURRENT_CLIENT", default=None)
"""The connection whose request is being answered (L{None}: not known, as in tests)."""


def current_client() -> Hashable | None:
    """
    The identity of the client whose request is being answered, if known.
    """
    connection = CURRENT_CLIENT.get()
    return None if connection is None else connection.client_identity()


__all__ = ["CURRENT_CLIENT", "Client", "current_client"]
