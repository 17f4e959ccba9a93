"""
Tests for L{nodex.services.listening}.
"""

from twisted.internet.defer import Deferred, fail
from twisted.internet.endpoints import TCP4ServerEndpoint
from twisted.internet.error import CannotListenError
from twisted.internet.interfaces import IListeningPort, IProtocolFactory
from twisted.internet.protocol import Factory
from twisted.internet.testing import MemoryReactor
from twisted.trial.unittest import SynchronousTestCase

from nodex.services.listening import ListeningService


class _LaterEndpoint:
    """
    An endpoint whose listening result the test decides.
    """

    def __init__(self) -> None:
        """
        Nothing asked yet.
        """
        self.result: Deferred[IListeningPort] = Deferred()

    def listen(self, factory: IProtocolFactory) -> Deferred[IListeningPort]:
        """
        The Deferred the test fires.
        """
        return self.result


class _FailingEndpoint:
    """
    An endpoint that fails at once, as TCP does when its port is taken.
    """

    def listen(self, factory: IProtocolFactory) -> Deferred[IListeningPort]:
        """
        A failed Deferred.
        """
        return fail(CannotListenError("127.0.0.1", 4444, OSError("in use")))


class ListeningServiceTests(SynchronousTestCase):
    """
    Tests for L{ListeningService}.
    """

    def test_listens_and_stops(self) -> None:
        """
        Started, it listens and reports the port; stopped, it stops listening.
        """
        reactor = MemoryReactor()
        service = ListeningService("RPC", TCP4ServerEndpoint(reactor, 4444, interface="127.0.0.1"), Factory())
        waiting = service.when_listening()
        service.startService()
        port = self.successResultOf(waiting)
        self.assertEqual(port.getHost().port, 4444)
        self.assertIs(self.successResultOf(service.when_listening()), port)
        stopped: list[bool] = []
        port.stopListening = lambda: stopped.append(True)  # type: ignore[method-assign]
        service.stopService()
        self.assertEqual(stopped, [True])
        self.assertFalse(service.running)

    def test_immediate_failure_raises(self) -> None:
        """
        An endpoint that fails at once makes startService raise, and logs why.
        """
        service = ListeningService("RPC", _FailingEndpoint(), Factory())
        self.assertRaises(CannotListenError, service.startService)
        self.assertFalse(service.running)
        self.assertIsNone(service.stopService())

    def test_later_failure_fails_waiters(self) -> None:
        """
        An endpoint that fails later fails whoever waits for the port.
        """
        endpoint = _LaterEndpoint()
        service = ListeningService("RPC", endpoint, Factory())
        service.startService()
        waiting = service.when_listening()
        endpoint.result.errback(CannotListenError("127.0.0.1", 4444, OSError("in use")))
        self.failureResultOf(waiting, CannotListenError)

    def test_later_success(self) -> None:
        """
        An endpoint that listens later fires the waiters then.
        """
        endpoint = _LaterEndpoint()
        service = ListeningService("RPC", endpoint, Factory())
        service.startService()
        waiting = service.when_listening()
        self.assertNoResult(waiting)
        reactor = MemoryReactor()
        port = self.successResultOf(TCP4ServerEndpoint(reactor, 5555).listen(Factory()))
        endpoint.result.callback(port)
        self.assertIs(self.successResultOf(waiting), port)

    def test_drain_after_stop(self) -> None:
        """
        With a C{drain}, stopping waits for the port and then for the
        connections the drain closes.
        """
        reactor = MemoryReactor()
        drained: Deferred[None] = Deferred()
        calls: list[str] = []

        def drain() -> Deferred[None]:
            calls.append("drain")
            return drained

        service = ListeningService("WebSocket", TCP4ServerEndpoint(reactor, 4445), Factory(), drain)
        service.startService()
        stopping = service.stopService()
        assert stopping is not None
        self.assertEqual(calls, ["drain"])
        self.assertNoResult(stopping)
        drained.callback(None)
        self.successResultOf(stopping)
