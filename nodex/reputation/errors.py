"""
Errors of the reputation model; the RPC edge maps them (through L{nodex.api.errors}).
"""

from nodex.errors import NodexError

_SHOWN = 64


class InvalidBanError(NodexError):
    """
    A ban or unban names something that cannot be banned: loopback, the
    wildcard address, a malformed address, block or host name, or a host
    name that does not resolve.  The RPC code is -32602.
    """

    def __init__(self, address: str) -> None:
        """
        @param address: the text as given (shortened in the message when long).
        """
        shown = address if len(address) <= _SHOWN else address[:_SHOWN] + "..."
        super().__init__(f"invalid banned address {shown}")
        self.address = address
