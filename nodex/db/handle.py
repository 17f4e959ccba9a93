"""
A store that is opened later than it is handed out.

The composition root wires every service to the chain's store before the
node starts, but a RocksDB database starts background threads when it
opens, and twistd forks into the background after composing the node and
before starting it: threads started before the fork do not exist in the
child (a daemonised node then waited for ever in RocksDB's flush when it
stopped).  So the root hands the services a L{StoreHandle}, and the node
opens it when it starts (L{nodex.services.store.StoreService}).

Once open, the handle's methods are the real store's own bound methods,
set on the instance, so reads and writes cost no extra call; a method
looked up before the handle opened (a bound method kept by a service)
forwards to the real store.
"""

from collections.abc import Callable, Iterator

from nodex.db.errors import StoreError
from nodex.db.kv import KeyValueStore, WriteBatch


class StoreClosedError(StoreError):
    """
    The store was used before it was opened or after it was closed.
    """


class StoreHandle:
    """
    A L{KeyValueStore} that opens its real store on L{open}.

    @ivar opened: the real store while the handle is open, else L{None}.
    """

    _METHODS = ("get", "batch", "write", "iterate")

    def __init__(self, opener: Callable[[], KeyValueStore], description: str = "the store") -> None:
        """
        @param opener: opens the real store (called once by L{open}).
        @param description: names the store in errors.
        """
        self._opener = opener
        self._description = description
        self.opened: KeyValueStore | None = None

    def open(self) -> KeyValueStore:
        """
        Open the real store (once).

        @return: the real store.
        @raise StoreError: it cannot be opened.
        """
        if self.opened is None:
            store = self._opener()
            self.opened = store
            for name in self._METHODS:
                setattr(self, name, getattr(store, name))
        return self.opened

    def close(self) -> None:
        """
        Close the real store, if it is open; closing twice is harmless.
        """
        store, self.opened = self.opened, None
        for name in self._METHODS:
            self.__dict__.pop(name, None)
        if store is not None:
            store.close()

    def _real(self) -> KeyValueStore:
        """
        The open store.

        @raise StoreClosedError: it is not open.
        """
        if self.opened is None:
            raise StoreClosedError(f"{self._description} is not open")
        return self.opened

    def get(self, column: str, key: bytes) -> bytes | None:
        """
        See L{KeyValueStore.get}.
        """
        return self._real().get(column, key)

    def batch(self) -> WriteBatch:
        """
        See L{KeyValueStore.batch}.
        """
        return self._real().batch()

    def write(self, batch: WriteBatch) -> None:
        """
        See L{KeyValueStore.write}.
        """
        self._real().write(batch)

    def iterate(self, column: str, prefix: bytes = b"") -> Iterator[tuple[bytes, bytes]]:
        """
        See L{KeyValueStore.iterate}.
        """
        return self._real().iterate(column, prefix)


__all__ = ["StoreClosedError", "StoreHandle"]
