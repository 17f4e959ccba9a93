"""
The framing of a peer connection: how the byte stream is cut into frame
payloads and how a payload becomes bytes on the wire (C{docs/p2p.md},
"Frames").

The protocol (L{nodex.p2p.protocol.PeerProtocol}) sees frames only through
the L{Framing} seam, so that another framing (an encrypted one, with its
own handshake) can replace the plain length prefix without touching what
the messages mean.  A framing is plain synchronous Python: bytes in,
payloads out.
"""

from typing import Protocol

from nodex.p2p.errors import MessageError
from nodex.p2p.messages import FRAME_HEADER_BYTES, MAX_AUTH_BYTES, MAX_HELLO_BYTES

HANDSHAKE_FRAME_BYTES = max(MAX_HELLO_BYTES, MAX_AUTH_BYTES)
"""
The largest frame a peer may send before its handshake is done: a hello
of the largest fields (or an auth).  A peer that has proved nothing gets
no more of this node's memory than that per frame.
"""


class FrameTooLargeError(MessageError):
    """
    A length prefix above the framing's limit (checked before anything of
    the frame is buffered).

    @ivar length: the length the prefix announced.
    """

    def __init__(self, length: int, limit: int) -> None:
        super().__init__(f"frame of {length} bytes, at most {limit}")
        self.length = length
        self.limit = limit


class Framing(Protocol):
    """
    What a connection's framing does.

    @ivar limit: the largest payload accepted now; the protocol raises it
        once the handshake is done.
    """

    limit: int
    preamble: bytes
    session: bytes | None

    def feed(self, data: bytes) -> None:
        """
        Take bytes received from the peer.
        """

    def exchange(self) -> bool:
        """
        Whether frames may be sent and received yet: an encrypted framing
        first needs the peer's key (L{preamble} is what this side sends
        before any frame; L{session} is known once this answers L{True}).

        @raise MessageError: the peer's opening is not what the framing expects.
        """

    def next_frame(self) -> bytes | None:
        """
        The payload of the next whole frame received, or L{None} until one
        is complete.

        @raise FrameTooLargeError: the next frame is longer than L{limit}.
        """

    def frame(self, payload: bytes) -> bytes:
        """
        The bytes that carry C{payload} to the peer.
        """

    @property
    def buffered(self) -> int:
        """
        Bytes received and not yet returned as frames.
        """


def whole_frame(buffer: bytearray, limit: int, overhead: int = 0) -> int | None:
    """
    Where the first frame of C{buffer} ends (its length prefix, the
    payload it names and C{overhead} bytes more), or L{None} until it is
    all there.

    @raise FrameTooLargeError: the prefix names more than C{limit} bytes
        (checked as soon as the prefix is in, before the frame is).
    """
    if len(buffer) < FRAME_HEADER_BYTES:
        return None
    length = int.from_bytes(buffer[:FRAME_HEADER_BYTES], "big")
    if length > limit:
        raise FrameTooLargeError(length, limit)
    end = FRAME_HEADER_BYTES + length + overhead
    return end if len(buffer) >= end else None


class LengthPrefixFraming:
    """
    Frames of a 4-byte big-endian length followed by that many bytes.
    """

    def __init__(self, limit: int = HANDSHAKE_FRAME_BYTES) -> None:
        """
        @param limit: the largest payload accepted until changed.
        """
        self.limit = limit
        self._buffer = bytearray()

    preamble = b""
    """Nothing precedes the first frame."""

    session: bytes | None = b""
    """No session: the handshake signs no session id."""

    def exchange(self) -> bool:
        """
        Frames flow from the start.
        """
        return True

    def feed(self, data: bytes) -> None:
        """
        Take bytes received from the peer.
        """
        self._buffer += data

    def next_frame(self) -> bytes | None:
        """
        The payload of the next whole frame, or L{None}.

        @raise FrameTooLargeError: the length prefix names more than L{limit} bytes.
        """
        buffer = self._buffer
        end = whole_frame(buffer, self.limit)
        if end is None:
            return None
        payload = bytes(buffer[FRAME_HEADER_BYTES:end])
        del buffer[:end]
        return payload

    def frame(self, payload: bytes) -> bytes:
        """
        The length prefix and the payload.
        """
        return len(payload).to_bytes(FRAME_HEADER_BYTES, "big") + payload

    @property
    def buffered(self) -> int:
        """
        Bytes received and not yet cut into frames.
        """
        return len(self._buffer)


__all__ = ["HANDSHAKE_FRAME_BYTES", "FrameTooLargeError", "Framing", "LengthPrefixFraming", "whole_frame"]
