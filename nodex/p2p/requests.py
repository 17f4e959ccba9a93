"""
The requests of one connection: those this node sends (headers, bodies),
each with its timeout and its answer, and those the peer sends, counted
against its limit of requests in flight (C{docs/p2p.md}).

A mixin of L{nodex.p2p.protocol.PeerProtocol}, which provides the
attributes it names.
"""

from collections.abc import Callable
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IDelayedCall, IReactorTime

from nodex.api.peers import PeerEvent
from nodex.p2p.errors import DisconnectReason, MessageError, PeerGoneError, RequestTimeoutError
from nodex.p2p.host import PeerHost
from nodex.p2p.messages import (
    BlockBodies,
    BlockHeaders,
    Body,
    GetBlockBodies,
    GetBlockHeaders,
    Message,
)
from nodex.structures.headers import Header


class PeerRequests:
    """
    Requests both ways over one connection.
    """

    _host: PeerHost
    _clock: IReactorTime
    _paused: bool
    _pauses: int
    established: bool
    short_id: str
    send: Callable[[Message], None]
    offence: Callable[[str, DisconnectReason, str], None]
    record: Callable[[str], None]

    def init_requests(self) -> None:
        """
        No request yet either way.
        """
        self._next_request_id = 1
        self._requests: dict[int, tuple[Deferred[Any], IDelayedCall, Message]] = {}
        self._serving = 0

    def fail_requests(self) -> None:
        """
        The connection ended: every request in flight fails with L{PeerGoneError}.
        """
        requests, self._requests = self._requests, {}
        for waiter, timeout, _ in requests.values():
            if timeout.active():
                timeout.cancel()
            waiter.errback(PeerGoneError(f"peer {self.short_id} disconnected"))

    # Requests this node sends

    @property
    def free_request_slots(self) -> int:
        """
        How many more requests this node may have in flight to the peer.
        """
        return self._host.peer_settings.max_outstanding_requests - len(self._requests)

    def request_headers(
        self, origin: bytes | int, count: int, skip: int = 0, reverse: bool = False
    ) -> Deferred[tuple[Header, ...]]:
        """
        Ask for headers.

        @return: a Deferred firing with the headers, or failing with
            L{RequestTimeoutError} or L{PeerGoneError}.
        """
        return self._request(lambda request_id: GetBlockHeaders(request_id, origin, count, skip, reverse))

    def request_bodies(self, hashes: tuple[bytes, ...]) -> Deferred[tuple[Body, ...]]:
        """
        Ask for block bodies.

        @return: a Deferred firing with the bodies (possibly fewer than
            asked), or failing as L{request_headers}.
        """
        return self._request(lambda request_id: GetBlockBodies(request_id, hashes))

    def _request(self, make: Callable[[int], Message]) -> Deferred[Any]:
        if not self.established:
            return _failed(PeerGoneError(f"peer {self.short_id} is not connected"))
        request_id = self._next_request_id
        self._next_request_id += 1
        message = make(request_id)
        waiter: Deferred[Any] = Deferred()
        timeout = self._clock.callLater(
            self._host.peer_settings.request_timeout, self._request_timed_out, request_id, self._pauses
        )
        self._requests[request_id] = (waiter, timeout, message)
        self.send(message)
        return waiter

    def _request_timed_out(self, request_id: int, pauses: int) -> None:
        """
        A request unanswered in time: the peer's offence, unless this node
        stopped reading from the peer meanwhile (the answer may wait in the
        paused stream), in which case the peer gets the time again.
        """
        entry = self._requests.get(request_id)
        if entry is None:
            return
        if self._paused or self._pauses != pauses:
            waiter, _, message = entry
            timeout = self._clock.callLater(
                self._host.peer_settings.request_timeout, self._request_timed_out, request_id, self._pauses
            )
            self._requests[request_id] = (waiter, timeout, message)
            return
        del self._requests[request_id]
        entry[0].errback(RequestTimeoutError(f"peer {self.short_id} did not answer in time"))
        self.offence(PeerEvent.TIMEOUT_MESSAGE, DisconnectReason.REQUEST_TIMEOUT, "request timed out")

    def _receive_answer(self, message: BlockHeaders | BlockBodies) -> None:
        """
        Fire the waiter of the request a message answers.
        """
        entry = self._requests.pop(message.request_id, None)
        if entry is None:
            self.record(PeerEvent.UNEXPECTED_MESSAGE)
            return
        waiter, timeout, request = entry
        timeout.cancel()
        if isinstance(message, BlockHeaders) and isinstance(request, GetBlockHeaders):
            if len(message.headers) > request.count:
                waiter.errback(MessageError("more headers than asked"))
                self.offence(PeerEvent.INVALID_MESSAGE, DisconnectReason.PROTOCOL_ERROR, "more headers than asked")
                return
            waiter.callback(message.headers)
        elif isinstance(message, BlockBodies) and isinstance(request, GetBlockBodies):
            if len(message.bodies) > len(request.hashes):
                waiter.errback(MessageError("more bodies than asked"))
                self.offence(PeerEvent.INVALID_MESSAGE, DisconnectReason.PROTOCOL_ERROR, "more bodies than asked")
                return
            waiter.callback(message.bodies)
        else:
            waiter.errback(MessageError("an answer of the wrong kind"))
            self.offence(PeerEvent.INVALID_MESSAGE, DisconnectReason.PROTOCOL_ERROR, "an answer of the wrong kind")

    # Requests the peer sends

    def begin_serving(self) -> bool:
        """
        Count a request of the peer that this node starts to answer;
        C{False} (and a disconnect) when the peer has too many in flight.
        """
        if self._serving >= self._host.peer_settings.max_outstanding_requests:
            self.offence(PeerEvent.INVALID_MESSAGE, DisconnectReason.FLOOD, "too many requests in flight")
            return False
        self._serving += 1
        return True

    def end_serving(self) -> None:
        """
        Count a request of the peer as answered.
        """
        self._serving -= 1


def _failed(exc: Exception) -> Deferred[Any]:
    waiter: Deferred[Any] = Deferred()
    waiter.errback(exc)
    return waiter


__all__ = ["PeerRequests"]
