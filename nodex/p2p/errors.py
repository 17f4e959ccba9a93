"""
The errors of the peer-to-peer edge, and the reason codes of a disconnect.
"""

from enum import IntEnum

from nodex.errors import NodexError


class DisconnectReason(IntEnum):
    """
    Why a connection ends; the code travels in the C{DISCONNECT} message
    (C{docs/p2p.md}, "Disconnect reasons").
    """

    REQUESTED = 0
    PROTOCOL_ERROR = 1
    FRAME_TOO_LARGE = 2
    INCOMPATIBLE_PROTOCOL = 3
    WRONG_NETWORK = 4
    WRONG_GENESIS = 5
    BAD_HANDSHAKE = 6
    TOO_MANY_PEERS = 7
    SELF_CONNECTION = 8
    ALREADY_CONNECTED = 9
    HANDSHAKE_TIMEOUT = 10
    REQUEST_TIMEOUT = 11
    INVALID_BLOCK = 12
    FLOOD = 13
    UNEXPECTED_MESSAGE = 14
    BAD_REPUTATION = 15
    SHUTTING_DOWN = 16
    INVALID_HEADERS = 17
    INVALID_TRANSACTIONS = 18
    UNBACKED_CLAIM = 19
    BAD_FRAME = 20

    @classmethod
    def describe(cls, code: int) -> str:
        """
        The name of a reason code, or C{unknown (N)} for one this version does not know.
        """
        try:
            return cls(code).name.lower().replace("_", " ")
        except ValueError:
            return f"unknown ({code})"


class P2PError(NodexError):
    """
    The root of the peer-to-peer edge's errors.
    """


class MessageError(P2PError):
    """
    Bytes that are not a well-formed message of the wire protocol.
    """


class PeerGoneError(P2PError):
    """
    The peer a request was sent to disconnected before it answered.
    """


class RequestTimeoutError(P2PError):
    """
    A peer did not answer a request within the request time.
    """


class NodeKeyError(P2PError):
    """
    The node key file cannot be read, created, or holds no valid key.
    """


__all__ = [
    "DisconnectReason",
    "MessageError",
    "NodeKeyError",
    "P2PError",
    "PeerGoneError",
    "RequestTimeoutError",
]
