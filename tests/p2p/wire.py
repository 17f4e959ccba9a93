"""
A raw client of the encrypted transport for end-to-end tests of what a
hostile peer sends: it runs the key exchange as the dialer, then seals a
stream of plaintext frames (4-byte length and payload: what the tests
write, well-formed or not) and opens what the node answers back into
plaintext frames, so that a test reads and writes the messages as if the
transport were plain.
"""

import socket

from twisted.internet.defer import Deferred
from twisted.internet.protocol import Protocol

from nodex.p2p.framing import FrameTooLargeError
from nodex.p2p.messages import FRAME_HEADER_BYTES
from nodex.p2p.secure import EPHEMERAL_KEY_BYTES, SecureFraming


def seal_stream(framing: SecureFraming, data: bytes) -> bytes:
    """
    The bytes that carry C{data}, a stream of plaintext frames, sealed frame
    by frame; what is not a whole frame (a length prefix alone, announcing
    more than is there) goes as it is.
    """
    sealed = b""
    while len(data) >= FRAME_HEADER_BYTES:
        length = int.from_bytes(data[:FRAME_HEADER_BYTES], "big")
        end = FRAME_HEADER_BYTES + length
        if len(data) < end:
            break
        sealed += framing.frame(data[FRAME_HEADER_BYTES:end])
        data = data[end:]
    return sealed + data


class SecureRaw(Protocol):
    """
    Writes C{data} (plaintext frames) over the encrypted transport and keeps
    what the node answers, opened into plaintext frames, until the
    connection ends.

    @ivar received: the node's frames, as a plaintext stream.
    @ivar raw: the bytes the node sent, as they came.
    """

    def __init__(self, data: bytes, exchange: bool = True) -> None:
        """
        @param exchange: send this side's ephemeral key (else the connection stays silent).
        """
        self.data = data
        self.exchange = exchange
        self.received = b""
        self.raw = b""
        self.framing = SecureFraming(initiator=True, limit=2**32 - 1)
        self.closed: Deferred[None] = Deferred()
        self._sent = False

    def connectionMade(self) -> None:
        if self.exchange:
            self.transport.write(self.framing.preamble)  # type: ignore[union-attr]

    def dataReceived(self, chunk: bytes) -> None:
        self.raw += chunk
        self.framing.feed(chunk)
        if not self.framing.exchange():
            return
        if not self._sent:
            self._sent = True
            if self.data:
                self.transport.write(seal_stream(self.framing, self.data))  # type: ignore[union-attr]
        while True:
            try:
                payload = self.framing.next_frame()
            except FrameTooLargeError:
                return
            if payload is None:
                return
            self.received += len(payload).to_bytes(FRAME_HEADER_BYTES, "big") + payload

    def connectionLost(self, reason: object = None) -> None:
        self.closed.callback(None)


class SecureSocket:
    """
    A blocking socket of the encrypted transport, for the benchmarks'
    hostile clients: the key exchange done at once (as the dialer), then
    C{sendall} seals a stream of plaintext frames and C{recv} answers the
    node's frames opened, as a plaintext stream (C{b""} once it closed).

    @ivar session: the session id (what an AUTH signs).
    """

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.framing = SecureFraming(initiator=True, limit=2**32 - 1)
        sock.sendall(self.framing.preamble)
        while not self.framing.exchange():
            chunk = sock.recv(EPHEMERAL_KEY_BYTES)
            if not chunk:
                raise ConnectionError("closed before the key exchange")
            self.framing.feed(chunk)
        assert self.framing.session is not None
        self.session: bytes = self.framing.session
        self._plain = b""

    def sendall(self, data: bytes) -> None:
        self.sock.sendall(seal_stream(self.framing, data))

    def settimeout(self, seconds: float | None) -> None:
        self.sock.settimeout(seconds)

    def close(self) -> None:
        self.sock.close()

    def recv(self, size: int) -> bytes:
        while not self._plain:
            chunk = self.sock.recv(size)
            if not chunk:
                return b""
            self.framing.feed(chunk)
            while (payload := self.framing.next_frame()) is not None:
                self._plain += len(payload).to_bytes(FRAME_HEADER_BYTES, "big") + payload
        plain, self._plain = self._plain, b""
        return plain


__all__ = ["SecureRaw", "SecureSocket", "seal_stream"]
