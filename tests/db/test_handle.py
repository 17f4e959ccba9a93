"""
Tests for L{nodex.db.handle}.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.db.handle import StoreClosedError, StoreHandle
from nodex.db.memory import MemoryStore
from nodex.db.schema import METADATA


class StoreHandleTests(SynchronousTestCase):
    """
    Tests for L{StoreHandle}.
    """

    def setUp(self) -> None:
        """
        A handle over a memory store that counts how often it is opened.
        """
        self.opened: list[MemoryStore] = []

        def opener() -> MemoryStore:
            store = MemoryStore()
            self.opened.append(store)
            return store

        self.handle = StoreHandle(opener, "the test store")

    def test_closed_until_opened(self) -> None:
        """
        Every method of a handle not yet opened raises L{StoreClosedError}
        naming the store, and nothing is opened by making the handle.
        """
        self.assertEqual(self.opened, [])
        for call in (
            lambda: self.handle.get(METADATA, b"k"),
            self.handle.batch,
            lambda: self.handle.write(MemoryStore().batch()),
            lambda: list(self.handle.iterate(METADATA)),
        ):
            error = self.assertRaises(StoreClosedError, call)
            self.assertIn("the test store is not open", str(error))

    def test_open_once(self) -> None:
        """
        L{StoreHandle.open} opens the real store once; reads and writes then reach it.
        """
        first = self.handle.open()
        self.assertIs(self.handle.open(), first)
        self.assertEqual(len(self.opened), 1)
        batch = self.handle.batch()
        batch.put(METADATA, b"k", b"v")
        self.handle.write(batch)
        self.assertEqual(first.get(METADATA, b"k"), b"v")
        self.assertEqual(self.handle.get(METADATA, b"k"), b"v")
        self.assertIn((b"k", b"v"), list(self.handle.iterate(METADATA)))

    def test_method_kept_before_open(self) -> None:
        """
        A bound method looked up before the handle opened (kept by a
        service made before the node started) reaches the real store once open.
        """
        get = self.handle.get
        self.handle.open()
        batch = self.handle.batch()
        batch.put(METADATA, b"k", b"v")
        self.handle.write(batch)
        self.assertEqual(get(METADATA, b"k"), b"v")

    def test_close(self) -> None:
        """
        Closing closes the real store; the handle then refuses again; closing twice is harmless.
        """
        store = self.handle.open()
        self.handle.close()
        self.handle.close()
        self.assertRaises(StoreClosedError, self.handle.get, METADATA, b"k")
        self.assertRaises(Exception, store.get, METADATA, b"k")
