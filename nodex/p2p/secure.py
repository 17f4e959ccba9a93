"""
The encrypted, authenticated transport of a peer connection (C{docs/p2p.md},
"Transport"): an ephemeral ECDH key exchange, then frames sealed with
ChaCha20-Poly1305 (RFC 8439, through C{cryptography}'s OpenSSL binding) under a key per direction, with counter nonces, the key
replaced after a fixed amount of traffic.

The key exchange gives both sides the same session keys and the same
session id; the handshake's AUTH signs the session id with the node key
(L{nodex.p2p.identity}), which binds the session to both node ids: a man in
the middle that runs one exchange with each side cannot carry either
side's signature across.  The ephemeral keys live only until the session
keys are derived, so that a node key stolen later reads no past traffic.

L{SecureFraming} is a L{nodex.p2p.framing.Framing}: plain synchronous
Python, bytes in and frame payloads out.
"""

from typing import Any

from nodex.crypto import (
    AeadTagError,
    SignatureError,
    chacha20_poly1305,
    ecdh,
    hkdf_sha256,
    new_private_key,
    private_key_to_public_key,
    sha256,
)
from nodex.p2p.errors import MessageError
from nodex.p2p.framing import HANDSHAKE_FRAME_BYTES, FrameTooLargeError, whole_frame
from nodex.p2p.messages import FRAME_HEADER_BYTES

EPHEMERAL_KEY_BYTES = 64
"""An ephemeral public key on the wire: x and y, 32 bytes each, big-endian (no C{0x04} prefix)."""

TAG_BYTES = 16
"""The Poly1305 tag that ends each sealed frame."""

SESSION_DOMAIN = b"nodex transport v1"
"""The prefix of the session id's hash."""

KEYS_INFO = b"nodex transport keys"
"""The HKDF info string of the session keys."""

REKEY_DOMAIN = b"nodex rekey"
"""The prefix of the hash that replaces a key."""

REKEY_FRAMES = 65_536
"""A direction's key is replaced after it sealed this many frames ..."""

REKEY_BYTES = 256 * 1024 * 1024
"""... or this many payload bytes, whichever comes first."""


class KeyExchangeError(MessageError):
    """
    The peer's ephemeral key is not a point of secp256k1.
    """


class FrameAuthenticationError(MessageError):
    """
    A frame whose tag does not check: tampered with, replayed, reordered, or
    sealed with another key.
    """


def ephemeral_public_key(private_key: bytes) -> bytes:
    """
    The 64 bytes that announce the ephemeral key of C{private_key}.
    """
    return private_key_to_public_key(private_key)


def shared_secret(private_key: bytes, peer_public_key: bytes) -> bytes:
    """
    SHA-256 of the compressed encoding (C{0x02 | parity(y)}, x) of the
    point C{private_key} times the peer's ephemeral key (libsecp256k1's
    ECDH).

    @raise KeyExchangeError: the peer's key is not a point of the curve.
    """
    if len(peer_public_key) != EPHEMERAL_KEY_BYTES:
        raise KeyExchangeError(f"an ephemeral key of {len(peer_public_key)} bytes, want {EPHEMERAL_KEY_BYTES}")
    try:
        return ecdh(private_key, peer_public_key)
    except SignatureError:
        raise KeyExchangeError("the ephemeral key is not a point of secp256k1 (a plaintext peer?)") from None


def session_id(initiator_key: bytes, responder_key: bytes) -> bytes:
    """
    SHA-256 of the domain and both ephemeral public keys, the dialer's first:
    what each side's AUTH signs.
    """
    return sha256(SESSION_DOMAIN + initiator_key + responder_key)


def session_keys(secret: bytes, session: bytes) -> tuple[bytes, bytes]:
    """
    The keys of the two directions, dialer to listener first: HKDF-SHA256
    (RFC 5869) of the shared secret, salted with the session id, 64 bytes
    split in two.
    """
    outbound, inbound = hkdf_sha256(secret, session, KEYS_INFO, 2)
    return outbound, inbound


def next_key(key: bytes) -> bytes:
    """
    The key that replaces C{key} after L{REKEY_FRAMES} frames or L{REKEY_BYTES} bytes.
    """
    return sha256(REKEY_DOMAIN + key)


def nonce(counter: int) -> bytes:
    """
    The 12-byte nonce of a direction's C{counter}-th frame under its key: 4 zero bytes and the counter, big-endian.
    """
    return counter.to_bytes(12, "big")


class _Direction:
    """
    One direction's key, counter and the traffic sealed under the key.
    """

    def __init__(self, key: bytes, rekey_frames: int, rekey_bytes: int) -> None:
        self.key = key
        self.aead = chacha20_poly1305(key)
        self.counter = 0
        self.sealed = 0
        self._rekey_frames = rekey_frames
        self._rekey_bytes = rekey_bytes

    def advance(self, size: int) -> None:
        """
        Count one frame of C{size} payload bytes; replace the key past the bounds.
        """
        self.counter += 1
        self.sealed += size
        if self.counter >= self._rekey_frames or self.sealed >= self._rekey_bytes:
            self.rekey()

    def rekey(self) -> None:
        """
        Replace the key; count afresh.
        """
        self.key = next_key(self.key)
        self.aead = chacha20_poly1305(self.key)
        self.counter = self.sealed = 0


def seal(key: bytes, counter: int, payload: bytes) -> bytes:
    """
    One sealed frame: the length of C{payload} (4 bytes, big-endian, in the
    clear and authenticated), its ciphertext and the tag.
    """
    return _seal(chacha20_poly1305(key), counter, payload)


def _seal(aead: Any, counter: int, payload: bytes) -> bytes:
    length = len(payload).to_bytes(FRAME_HEADER_BYTES, "big")
    return length + aead.encrypt(nonce(counter), payload, length)


class SecureFraming:
    """
    The framing of an encrypted connection: the ephemeral key first, then
    sealed frames.

    @ivar limit: the largest payload accepted now (checked on the length, before anything is buffered).
    @ivar session: the session id once the peer's ephemeral key arrived, else L{None}.
    """

    def __init__(self, initiator: bool, limit: int = HANDSHAKE_FRAME_BYTES, private_key: bytes | None = None,
                 rekey_frames: int = REKEY_FRAMES, rekey_bytes: int = REKEY_BYTES) -> None:
        """
        @param initiator: this side dialed.
        @param private_key: the ephemeral key (tests give a fixed one; else a fresh random one).
        @param rekey_frames: frames a key seals before it is replaced (tests lower it).
        @param rekey_bytes: payload bytes a key seals before it is replaced.
        """
        self.limit = limit
        self.initiator = initiator
        self.session: bytes | None = None
        self._private_key: bytes | None = private_key or new_private_key()
        self.preamble = ephemeral_public_key(self._private_key)
        self._rekey = (rekey_frames, rekey_bytes)
        # What arrived and is not opened yet: a segment kept as it came
        # (C{_data}, read from C{_position} on) while it starts at a frame's
        # start, else the bytes gathered in C{_buffer} (a frame split over
        # segments, or the key exchange).  Most segments carry whole frames,
        # which are opened straight from the segment, without a copy.
        self._buffer = bytearray()
        self._data = b""
        self._position = 0
        self._send: _Direction | None = None
        self._receive: _Direction | None = None

    @property
    def ready(self) -> bool:
        """
        Whether the session keys are known (the peer's ephemeral key arrived).
        """
        return self.session is not None

    def feed(self, data: bytes) -> None:
        """
        Take bytes received from the peer: kept as they are while nothing
        else waits (once the session is known), else added to the buffer.
        """
        if self._position == len(self._data) and not self._buffer and self.session is not None and type(data) is bytes:
            self._data, self._position = data, 0
            return
        self._spill()
        self._buffer += data

    def _spill(self) -> None:
        """
        Move what is left of the kept segment into the buffer.
        """
        data, position = self._data, self._position
        if position < len(data):
            self._buffer += memoryview(data)[position:]
        self._data, self._position = b"", 0

    def exchange(self) -> bool:
        """
        Derive the session once the peer's ephemeral key is in; forget the ephemeral private key.

        @return: whether the session is ready.
        @raise KeyExchangeError: the peer's key is not a point of the curve.
        """
        if self.session is not None:
            return True
        if len(self._buffer) < EPHEMERAL_KEY_BYTES:
            return False
        assert self._private_key is not None
        peer_key = bytes(self._buffer[:EPHEMERAL_KEY_BYTES])
        secret = shared_secret(self._private_key, peer_key)
        del self._buffer[:EPHEMERAL_KEY_BYTES]
        self._private_key = None
        ours, theirs = (self.preamble, peer_key) if self.initiator else (peer_key, self.preamble)
        self.session = session_id(ours, theirs)
        outbound, inbound = session_keys(secret, self.session)
        if not self.initiator:
            outbound, inbound = inbound, outbound
        self._send = _Direction(outbound, *self._rekey)
        self._receive = _Direction(inbound, *self._rekey)
        return True

    def next_frame(self) -> bytes | None:
        """
        The payload of the next whole frame, opened, or L{None}.

        @raise FrameTooLargeError: the length names more than L{limit} bytes.
        @raise FrameAuthenticationError: the frame's tag does not check.
        @raise KeyExchangeError: the peer's ephemeral key is not a point.
        """
        data, position = self._data, self._position
        size = len(data)
        if position < size:
            # A kept segment (the session is known): a whole frame is
            # opened from it in place; a partial one moves to the buffer.
            header = position + FRAME_HEADER_BYTES
            if header <= size:
                length = int.from_bytes(data[position:header], "big")
                if length > self.limit:
                    raise FrameTooLargeError(length, self.limit)
                end = header + length + TAG_BYTES
                if end <= size:
                    self._position = end
                    view = memoryview(data)
                    return self._open(view[header:end], view[position:header], length)
            self._spill()
        elif size:
            self._data, self._position = b"", 0
        if not self.exchange():
            return None
        buffer = self._buffer
        end = whole_frame(buffer, self.limit, TAG_BYTES)
        if end is None:
            return None
        sealed = bytes(buffer[:end])
        del buffer[:end]
        return self._open(sealed[FRAME_HEADER_BYTES:], sealed[:FRAME_HEADER_BYTES], end - FRAME_HEADER_BYTES - TAG_BYTES)

    def _open(self, sealed: Any, header: Any, length: int) -> bytes:
        """
        Open one frame (its ciphertext and tag, authenticated with its length prefix).
        """
        direction = self._receive
        assert direction is not None
        try:
            payload: bytes = direction.aead.decrypt(nonce(direction.counter), sealed, header)
        except AeadTagError:
            raise FrameAuthenticationError(
                f"frame {direction.counter} of its key fails authentication (tampered, replayed or reordered)"
            ) from None
        direction.advance(length)
        return payload

    def frame(self, payload: bytes) -> bytes:
        """
        The sealed frame of C{payload}.
        """
        direction = self._send
        assert direction is not None, "no frame before the key exchange"
        sealed = _seal(direction.aead, direction.counter, payload)
        direction.advance(len(payload))
        return sealed

    @property
    def buffered(self) -> int:
        """
        Bytes received and not yet opened.
        """
        return len(self._buffer) + len(self._data) - self._position


__all__ = [
    "EPHEMERAL_KEY_BYTES",
    "REKEY_BYTES",
    "REKEY_FRAMES",
    "TAG_BYTES",
    "FrameAuthenticationError",
    "KeyExchangeError",
    "SecureFraming",
    "ephemeral_public_key",
    "next_key",
    "seal",
    "session_id",
    "session_keys",
    "shared_secret",
]
