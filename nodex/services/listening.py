"""
A service that listens on a server endpoint and says where it listens.
"""

from collections.abc import Callable

from twisted.application.service import Service
from twisted.internet.defer import Deferred
from twisted.internet.error import CannotListenError
from twisted.internet.interfaces import IListeningPort, IProtocolFactory, IStreamServerEndpoint
from twisted.logger import Logger
from twisted.python.failure import Failure


class ServerCannotListenError(CannotListenError):
    """
    A server of the node cannot listen; its message is one line that names
    the server, the address and the reason.

    @ivar label: what could not listen (C{"RPC"}).
    """

    def __init__(self, label: str, cause: CannotListenError) -> None:
        """
        @param cause: the endpoint's error.
        """
        super().__init__(cause.interface, cause.port, cause.socketError)
        self.label = label

    def __str__(self) -> str:
        """
        C{RPC server cannot listen on 127.0.0.1:4444: Address already in use}.
        """
        reason = getattr(self.socketError, "strerror", None) or str(self.socketError)
        return f"{self.label} server cannot listen on {self.interface or '0.0.0.0'}:{self.port}: {reason}"


class ListeningService(Service):
    """
    Listen on an endpoint while running; fail the start when the endpoint
    cannot listen (a port in use), so that the node does not run deaf.
    """

    log = Logger()

    def __init__(
        self,
        label: str,
        endpoint: IStreamServerEndpoint,
        factory: IProtocolFactory,
        drain: Callable[[], Deferred[None]] | None = None,
    ) -> None:
        """
        @param label: what listens, for the log line (C{"RPC"}).
        @param endpoint: where to listen.
        @param factory: the protocol factory (a twisted.web site).
        @param drain: closes the connections still open when the service
            stops (long-lived WebSocket connections), firing when they are
            gone; L{None} leaves them to the protocol.
        """
        self._drain = drain
        self._label = label
        self._endpoint = endpoint
        self._factory = factory
        self._port: IListeningPort | None = None
        self._waiters: list[Deferred[IListeningPort]] = []
        self._started_listening = False

    def privilegedStartService(self) -> None:
        """
        Start listening before the other services start (twistd calls this
        first, and with the privileges a port below 1024 needs), so that a
        port in use stops the node before anything else has started.

        @raise Exception: the endpoint failed at once (as TCP does when its
            port is taken).
        """
        super().privilegedStartService()
        self._listen()

    def startService(self) -> None:
        """
        Start listening, unless L{privilegedStartService} already did.

        @raise Exception: the endpoint failed at once (as TCP does when its
            port is taken).
        """
        super().startService()
        if not self._started_listening:
            self._listen()

    def _listen(self) -> None:
        """
        Listen on the endpoint; raise its failure if it failed at once.
        """
        self._started_listening = True
        failures: list[Failure] = []
        self._endpoint.listen(self._factory).addCallbacks(self._listening, self._cannot_listen, errbackArgs=(failures,))
        if failures:
            self.running = False
            self._started_listening = False
            error = failures[0].value
            if isinstance(error, CannotListenError):
                raise ServerCannotListenError(self._label, error) from error
            failures[0].raiseException()

    def _cannot_listen(self, failure: Failure, failures: list[Failure]) -> None:
        """
        Log why the endpoint cannot listen; keep the failure for
        L{startService} to raise when it came at once.
        """
        self.log.critical("{label} server cannot listen: {error}", label=self._label, error=failure.getErrorMessage())
        failures.append(failure)
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            waiter.errback(failure)

    def _listening(self, port: IListeningPort) -> None:
        """
        Remember the port, log where it is, and tell the waiters.
        """
        self._port = port
        address = port.getHost()
        where = f"{getattr(address, 'host', address)}:{getattr(address, 'port', '')}".rstrip(":")
        self.log.info("{label} server listening on {where}", label=self._label, where=where)
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            waiter.callback(port)

    def when_listening(self) -> Deferred[IListeningPort]:
        """
        The listening port.

        @return: a Deferred firing with the L{IListeningPort} once listening.
        """
        if self._port is not None:
            return _fired(self._port)
        waiter: Deferred[IListeningPort] = Deferred()
        self._waiters.append(waiter)
        return waiter

    def stopService(self) -> Deferred[None] | None:
        """
        Stop listening.

        @return: a Deferred firing when the port is closed (and, with a
            C{drain}, its connections).
        """
        super().stopService()
        self._started_listening = False
        port, self._port = self._port, None
        if port is None:
            return None
        stopped = port.stopListening()
        if self._drain is not None:
            drain = self._drain
            stopped = Deferred.fromCoroutine(_after(stopped, drain))
        return stopped


async def _after(stopped: Deferred[None] | None, drain: Callable[[], Deferred[None]]) -> None:
    """
    Wait for the port to close, then for the connections to go.
    """
    if stopped is not None:
        await stopped
    await drain()


def _fired(port: IListeningPort) -> Deferred[IListeningPort]:
    """
    A Deferred that has already fired with C{port}.
    """
    waiter: Deferred[IListeningPort] = Deferred()
    waiter.callback(port)
    return waiter


__all__ = ["ListeningService", "ServerCannotListenError"]
