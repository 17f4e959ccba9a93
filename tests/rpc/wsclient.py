"""
A raw WebSocket client for the tests: it writes the opening handshake and
frames byte by byte (so that tests can send what no well-behaved library
would: binary frames, invalid UTF-8, oversized frames) and parses what the
server sends, without answering pings unless told to.
"""

import base64
import json
import os
import struct
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.endpoints import TCP4ClientEndpoint, connectProtocol
from twisted.internet.protocol import Protocol
from twisted.python.failure import Failure

TEXT, BINARY, CLOSE, PING, PONG = 0x1, 0x2, 0x8, 0x9, 0xA


def frame(opcode: int, payload: bytes, final: bool = True, mask: bool = True) -> bytes:
    """
    One client frame (masked, as RFC 6455 requires of clients).
    """
    head = bytes([(0x80 if final else 0) | opcode])
    length = len(payload)
    bit = 0x80 if mask else 0
    if length < 126:
        head += bytes([bit | length])
    elif length < 65536:
        head += bytes([bit | 126]) + struct.pack("!H", length)
    else:
        head += bytes([bit | 127]) + struct.pack("!Q", length)
    if not mask:
        return head + payload
    key = os.urandom(4)
    masked = bytes(byte ^ key[index % 4] for index, byte in enumerate(payload))
    return head + key + masked


class RawWebSocket(Protocol):
    """
    A client connection: C{handshake} is the server's answer head; C{frames}
    the (opcode, payload) pairs received since; C{closed} fires when the
    connection ends.
    """

    def __init__(self, host: str = "127.0.0.1", origin: str | None = None, answer_pings: bool = True) -> None:
        """
        @param host: the C{Host} header of the upgrade request.
        @param origin: its C{Origin} header, if any.
        @param answer_pings: answer the server's pings with pongs.
        """
        self._host = host
        self._origin = origin
        self._answer_pings = answer_pings
        self._buffer = b""
        self.handshake: bytes | None = None
        self.frames: list[tuple[int, bytes]] = []
        self.opened: Deferred[bytes] = Deferred()
        self.closed: Deferred[None] = Deferred()
        self._waiters: list[tuple[int, Deferred[None]]] = []

    def connectionMade(self) -> None:
        """
        Send the opening handshake.
        """
        key = base64.b64encode(os.urandom(16)).decode()
        lines = [
            "GET / HTTP/1.1",
            f"Host: {self._host}",
            "Upgrade: websocket",
            "Connection: Upgrade",
            f"Sec-WebSocket-Key: {key}",
            "Sec-WebSocket-Version: 13",
        ]
        if self._origin is not None:
            lines.append(f"Origin: {self._origin}")
        self.transport.write(("\r\n".join(lines) + "\r\n\r\n").encode())

    def dataReceived(self, data: bytes) -> None:
        """
        Take the handshake answer, then frames.
        """
        self._buffer += data
        if self.handshake is None:
            end = self._buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            self.handshake, self._buffer = self._buffer[: end + 4], self._buffer[end + 4 :]
            self.opened.callback(self.handshake)
        while self._parse_one():
            pass
        self._wake()

    def _parse_one(self) -> bool:
        """
        Take one whole frame off the buffer (answering a ping); whether there was one.
        """
        buffer = self._buffer
        if len(buffer) < 2:
            return False
        opcode, length = buffer[0] & 0x0F, buffer[1] & 0x7F
        offset = 2
        if length == 126:
            if len(buffer) < 4:
                return False
            length, offset = struct.unpack("!H", buffer[2:4])[0], 4
        elif length == 127:
            if len(buffer) < 10:
                return False
            length, offset = struct.unpack("!Q", buffer[2:10])[0], 10
        if len(buffer) < offset + length:
            return False
        payload = buffer[offset : offset + length]
        self._buffer = buffer[offset + length :]
        self.frames.append((opcode, payload))
        if opcode == PING and self._answer_pings:
            self.transport.write(frame(PONG, payload))
        return True

    def connectionLost(self, reason: Failure) -> None:
        """
        Fire C{closed} and wake the waiters.
        """
        if not self.opened.called:
            self.opened.callback(self._buffer)
        self.closed.callback(None)
        self._wake()

    def _wake(self) -> None:
        """
        Fire the waiters whose count of messages has come.
        """
        waiters, self._waiters = self._waiters, []
        for count, waiter in waiters:
            if len(self.texts()) >= count or self.closed.called:
                waiter.callback(None)
            else:
                self._waiters.append((count, waiter))

    # Use

    def send_text(self, text: str | bytes) -> None:
        """
        Send one text message in one frame.
        """
        self.transport.write(frame(TEXT, text.encode() if isinstance(text, str) else text))

    def send_json(self, value: Any) -> None:
        """
        Send a JSON value as a text message.
        """
        self.send_text(json.dumps(value))

    def texts(self) -> list[Any]:
        """
        The text messages received so far, decoded from JSON.
        """
        return [json.loads(payload) for opcode, payload in self.frames if opcode == TEXT]

    def wait_texts(self, count: int) -> Deferred[None]:
        """
        Fire once C{count} text messages have come (or the connection ended).
        """
        waiter: Deferred[None] = Deferred()
        self._waiters.append((count, waiter))
        self._wake()
        return waiter

    def close_code(self) -> int | None:
        """
        The code of the server's close frame, if it sent one.
        """
        for opcode, payload in self.frames:
            if opcode == CLOSE and len(payload) >= 2:
                return struct.unpack("!H", payload[:2])[0]
        return None


async def connect_raw(reactor: Any, port: int, **keywords: Any) -> RawWebSocket:
    """
    Connect a L{RawWebSocket} and wait for the server's handshake answer.
    """
    client = RawWebSocket(**keywords)
    await connectProtocol(TCP4ClientEndpoint(reactor, "127.0.0.1", port), client)
    await client.opened
    return client


__all__ = ["BINARY", "CLOSE", "PING", "PONG", "RawWebSocket", "TEXT", "connect_raw", "frame"]
