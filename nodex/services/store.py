"""
The store service (L5): opens the chain's database when the node starts and
closes it when the node has stopped.

The composition root wires the services to a L{StoreHandle} before the node
starts; this service, the first child of the node, opens it in
C{startService} (so that twistd has already forked into the background: a
database opened before the fork has no background threads in the child),
prepares the chain in it (the genesis on the first start), and, being
first, stops last: after every service that reads or writes it.
"""

from collections.abc import Callable
from typing import Any

from twisted.application.service import Service
from twisted.logger import Logger

from nodex.db.errors import FatalStoreError
from nodex.db.handle import StoreHandle
from nodex.db.kv import KeyValueStore


class StoreService(Service):
    """
    Opens and closes one store with the node.

    @ivar handle: the store the other services hold.
    """

    log = Logger()

    def __init__(
        self,
        handle: StoreHandle,
        prepare: Callable[[KeyValueStore], object] | None = None,
        on_fatal: Callable[[FatalStoreError], object] | None = None,
        reactor: Any = None,
    ) -> None:
        """
        @param handle: the store to open.
        @param prepare: runs on the opened store before any other service
            starts (writes the genesis on the first start, checks the network).
        @param on_fatal: told, once, on the reactor thread, of the first
            failure after which the store cannot go on (a corrupt file, a
            full disk: L{FatalStoreError}), in whichever thread it was met.
        @param reactor: hands that failure to the reactor thread.
        """
        self.handle = handle
        self._prepare = prepare
        self._on_fatal = on_fatal
        self._reactor = reactor
        self._fatal: FatalStoreError | None = None

    def startService(self) -> None:
        """
        Open the store and prepare it.

        @raise nodex.errors.NodexError: it cannot be opened, or holds another
            network or genesis (the store is closed again).
        """
        store = self.handle.open()
        if self._on_fatal is not None and hasattr(store, "on_fatal"):
            store.on_fatal = self._fatal_met  # type: ignore[attr-defined]
        try:
            if self._prepare is not None:
                self._prepare(store)
        except BaseException:
            self.handle.close()
            raise
        super().startService()

    def _fatal_met(self, error: FatalStoreError) -> None:
        """
        A thread met a fatal store failure: tell the node, on the reactor
        thread, the first time.
        """
        if self._fatal is not None:
            return
        self._fatal = error
        assert self._on_fatal is not None
        if self._reactor is None:
            self._on_fatal(error)
        else:
            self._reactor.callFromThread(self._on_fatal, error)

    def stopService(self) -> None:
        """
        Close the store (after the services that use it: this one stops last).
        """
        super().stopService()
        self.handle.close()


__all__ = ["StoreService"]
