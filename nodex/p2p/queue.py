"""
The inbound queue of one connection: frames cut out of the stream, decoded
(large ones on the decoder thread, in order), handled, and counted by
number and bytes until handled; the peer's stream paused while the queue
is full; the message rate (C{docs/p2p.md}, "Backpressure").

A mixin of L{nodex.p2p.protocol.PeerProtocol}, which provides the
attributes it names and handles each message (C{_handle}).
"""

from collections import deque
from collections.abc import Callable
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IReactorTime, ITransport
from twisted.logger import Logger
from twisted.python.failure import Failure

from nodex.api.peers import PeerEvent
from nodex.p2p.errors import DisconnectReason, MessageError
from nodex.p2p.framing import FrameTooLargeError, Framing
from nodex.p2p.host import PeerHost
from nodex.p2p.messages import Message
from nodex.p2p.secure import FrameAuthenticationError

THREAD_DECODE_BYTES = 8 * 1024
"""
Frames at least this long are decoded on the host's decoder thread, not on
the reactor's: about 15 headers' worth, under half a millisecond to decode.
"""


class InboundQueue:
    """
    What one connection received and has not handled yet.
    """

    log: Logger
    _host: PeerHost
    _clock: IReactorTime
    transport: ITransport | None
    framing: Framing
    closed: bool
    offence: Callable[[str, DisconnectReason, str], None]
    _handle: Callable[[Message], "Deferred[Any] | None"]

    def init_queue(self) -> None:
        """
        Nothing received yet.
        """
        self._frames: deque[bytes] = deque()
        self._held = 0
        self._held_bytes = 0
        self._decoding = False
        self._pumping = False
        self._paused = False
        self._pauses = 0
        self._tokens: float | None = None
        self._refilled = 0.0
        self._paused_at = 0.0
        self._last_received = 0.0

    @property
    def queued(self) -> int:
        """
        The peer's messages received and not handled yet.
        """
        return self._held

    @property
    def paused(self) -> bool:
        """
        Whether this node stopped reading from the peer (its inbound queue is full).
        """
        return self._paused

    def _over_budget(self) -> bool:
        settings = self._host.peer_settings
        return self._held >= settings.max_queued_messages or self._held_bytes >= settings.max_queued_bytes

    def _pump(self) -> None:
        """
        Handle the frames cut so far in order, and cut more while the
        inbound queue has room.  A small frame is decoded at once, a large
        one (at least L{THREAD_DECODE_BYTES}: header and body answers
        during a sync, whose decoding took the reactor for up to tens of
        milliseconds) on the host's decoder thread, the frames behind it
        waiting for it.  Each frame stays in the queue, counted by number
        and bytes, until its message is handled; while the queue is full
        the peer's stream is paused.

        (The loop is the path of every message: it reads the limits once,
        and a frame cut while nothing waits ahead of it is decoded without
        passing through the deque, in the same order.)
        """
        if self._pumping:
            return
        self._pumping = True
        frames = self._frames
        settings = self._host.peer_settings
        most, most_bytes = settings.max_queued_messages, settings.max_queued_bytes
        try:
            while not self.closed:
                if frames and not self._decoding:
                    self._decode(frames.popleft())
                    continue
                if self._held >= most or self._held_bytes >= most_bytes:
                    break
                payload = self._cut()
                if payload is None:
                    break
                if frames or self._decoding:
                    frames.append(payload)
                else:
                    self._decode(payload)
        finally:
            self._pumping = False
        if self._paused or self._held >= most or self._held_bytes >= most_bytes:
            self._flow()

    def _cut(self) -> bytes | None:
        """
        Cut the next whole frame out of the stream, counted in the queue.

        @return: its payload, or L{None} when none was cut.
        """
        try:
            payload = self.framing.next_frame()
        except FrameTooLargeError as exc:
            self.offence(PeerEvent.INVALID_MESSAGE, DisconnectReason.FRAME_TOO_LARGE, str(exc))
            return None
        except FrameAuthenticationError as exc:
            self.offence(PeerEvent.INVALID_MESSAGE, DisconnectReason.BAD_FRAME, str(exc))
            return None
        if payload is None or not self._count_message():
            return None
        self._held += 1
        self._held_bytes += len(payload)
        return payload

    def _decode(self, payload: bytes) -> None:
        """
        Decode one frame at once and handle it, or start its decoding on
        the decoder thread.
        """
        size = len(payload)
        if size >= THREAD_DECODE_BYTES:
            self._decoding = True
            decoding = self._host.decode_in_thread(payload)
            decoding.addCallbacks(self._decoded, self._undecodable, (size,), errbackArgs=(size,))
            decoding.addErrback(lambda failure: self.log.failure("handling a decoded peer message failed", failure))
            return
        try:
            message = self._host.decode(payload)
        except MessageError as exc:
            self.offence(PeerEvent.INVALID_MESSAGE, DisconnectReason.PROTOCOL_ERROR, str(exc))
            self._release(size)
            return
        self._dispatch(message, size)

    def _decoded(self, message: Message, size: int) -> None:
        """
        A large frame decoded on the decoder thread: handle it, then the frames behind it.
        """
        self._decoding = False
        if self.closed:
            self._release(size)
            return
        self._dispatch(message, size)
        self._pump()

    def _undecodable(self, failure: Failure, size: int) -> Failure | None:
        """
        A large frame that is not a message: the peer's offence.
        """
        self._decoding = False
        if failure.check(MessageError) and not self.closed:
            self.offence(PeerEvent.INVALID_MESSAGE, DisconnectReason.PROTOCOL_ERROR, failure.getErrorMessage())
        self._release(size)
        if not failure.check(MessageError):
            return failure
        return None

    def _dispatch(self, message: Message, size: int) -> None:
        """
        Handle one message; it leaves the queue once handled.
        """
        try:
            handling = self._handle(message)
        except Exception:
            self._release(size)
            raise
        if handling is None:
            self._release(size)
        else:
            handling.addBoth(self._released, size)

    def _released(self, result: Any, size: int) -> None:
        if isinstance(result, Failure):
            self.log.failure("handling a peer message failed", result)
        self._release(size)

    def _release(self, size: int) -> None:
        """
        A message left the queue: read on if there is room now.
        """
        self._held -= 1
        self._held_bytes -= size
        if not self._pumping:
            self._pump()

    def _flow(self) -> None:
        """
        Pause the peer's stream while its inbound queue is full; resume it
        once there is room.  Silence and unanswered requests while paused
        are this node's doing, not the peer's (see L{_keep_alive} and
        L{_request_timed_out}).
        """
        if self.transport is None or self.closed:
            return
        full = self._over_budget()
        if full and not self._paused:
            self._paused = True
            self._pauses += 1
            self._paused_at = self._clock.seconds()
            self.transport.pauseProducing()  # type: ignore[attr-defined]
        elif not full and self._paused:
            self._paused = False
            now = self._last_received = self._clock.seconds()
            if self._tokens is not None:
                # The backlog of the paused seconds may come at once.
                self._tokens += (now - self._paused_at) * self._host.peer_settings.messages_per_second
            self.transport.resumeProducing()  # type: ignore[attr-defined]

    def _count_message(self) -> bool:
        """
        Count a message against the rate limit (a bucket of
        C{messages_per_second} tokens, refilled at that rate); disconnect a
        flood.  What the peer sent while this node was not reading from it
        arrives at once when reading resumes: reading resumes with the
        tokens of the paused seconds added (L{_flow}), so that the backlog
        this node caused is not taken for a flood (the average stays within
        the limit).
        """
        rate = self._host.peer_settings.messages_per_second
        now = self._clock.seconds()
        self._last_received = now
        tokens = self._tokens
        if tokens is None:
            tokens, self._refilled = float(rate), now
        # Refilled up to a second's worth; the credit of a pause stays until
        # spent (max(tokens, min(refilled, rate)), without the calls).
        refilled = tokens + (now - self._refilled) * rate
        if refilled > rate:
            refilled = rate
        if refilled > tokens:
            tokens = refilled
        self._refilled = now
        if tokens < 1:
            self._tokens = tokens
            self.offence(PeerEvent.INVALID_MESSAGE, DisconnectReason.FLOOD, "too many messages per second")
            return False
        self._tokens = tokens - 1
        return True


__all__ = ["THREAD_DECODE_BYTES", "InboundQueue"]
