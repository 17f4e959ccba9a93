"""
Tests for L{nodex.services.store}.
"""

from typing import Any

from twisted.trial.unittest import SynchronousTestCase

from nodex.db.handle import StoreClosedError, StoreHandle
from nodex.db.kv import KeyValueStore
from nodex.db.memory import MemoryStore
from nodex.db.schema import METADATA
from nodex.services.store import StoreService


class StoreServiceTests(SynchronousTestCase):
    """
    Tests for L{StoreService}.
    """

    def test_open_prepare_close(self) -> None:
        """
        The service opens the store and prepares it when it starts, and
        closes it when it stops.
        """
        handle = StoreHandle(MemoryStore)
        prepared: list[KeyValueStore] = []
        service = StoreService(handle, prepared.append)
        self.assertRaises(StoreClosedError, handle.get, METADATA, b"k")
        service.startService()
        self.assertEqual(prepared, [handle.opened])
        self.assertIsNone(handle.get(METADATA, b"k"))
        service.stopService()
        self.assertIsNone(handle.opened)
        self.assertRaises(StoreClosedError, handle.get, METADATA, b"k")

    def test_failed_preparation_closes(self) -> None:
        """
        When preparing fails (another network's store), the store is closed
        again, the error propagates and the service does not run.
        """
        handle = StoreHandle(MemoryStore)

        def refuse(store: KeyValueStore) -> None:
            raise ValueError("another network")

        service = StoreService(handle, refuse)
        self.assertRaises(ValueError, service.startService)
        self.assertIsNone(handle.opened)
        self.assertFalse(service.running)

    def test_fatal_failure_told_once(self) -> None:
        """
        The first fatal failure of the opened store (met in any thread)
        reaches C{on_fatal} through the reactor; later ones do not.
        """
        from twisted.internet.task import Clock

        from nodex.db.errors import StoreCorruptionError

        class FatalStore(MemoryStore):
            on_fatal = None

        told: list[Exception] = []

        class Reactor(Clock):
            def callFromThread(self, function: Any, *args: Any) -> None:
                function(*args)

        store = FatalStore()
        service = StoreService(StoreHandle(lambda: store), None, told.append, Reactor())
        service.startService()
        self.addCleanup(service.stopService)
        first, second = StoreCorruptionError("first"), StoreCorruptionError("second")
        store.on_fatal(first)  # type: ignore[misc]
        store.on_fatal(second)  # type: ignore[misc]
        self.assertEqual(told, [first])
