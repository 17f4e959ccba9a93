"""
Tests for the stores: one mixin run against L{MemoryStore} and L{RocksStore}.
"""

import os
import subprocess
import sys
from pathlib import Path

from twisted.trial.unittest import SynchronousTestCase

from nodex.db import KeyValueStore, SchemaVersionError, StoreError, WriteBatch
from nodex.db.memory import MemoryStore
from nodex.db.errors import FatalStoreError, StoreCorruptionError, StoreFullError
from nodex.db.rocks import RocksStore, _failure
from nodex.db.schema import ALL_COLUMNS, BODIES, CODE, HEADERS, METADATA, SCHEMA_VERSION_KEY
from tests.conformance import REPOSITORY_ROOT


class StoreTestsMixin:
    """
    The behaviour every L{KeyValueStore} shares.  Subclasses define
    L{make_store}.
    """

    def make_store(self) -> KeyValueStore:
        """
        A new, empty store; the test closes it.
        """
        raise NotImplementedError()

    def setUp(self) -> None:
        """
        Open a store for the test and close it afterwards.
        """
        self.store = self.make_store()
        self.addCleanup(self.store.close)  # type: ignore[attr-defined]

    def test_missing_key(self) -> None:
        """
        An absent key reads as L{None} in every column.
        """
        for column in ALL_COLUMNS:
            self.assertIsNone(self.store.get(column, b"absent"))  # type: ignore[attr-defined]

    def test_put_get_delete(self) -> None:
        """
        A written value is read back; a deletion in a later batch removes it.
        """
        batch = self.store.batch()
        batch.put(HEADERS, b"key", b"value")
        self.store.write(batch)
        self.assertEqual(self.store.get(HEADERS, b"key"), b"value")  # type: ignore[attr-defined]
        batch = self.store.batch()
        batch.delete(HEADERS, b"key")
        self.store.write(batch)
        self.assertIsNone(self.store.get(HEADERS, b"key"))  # type: ignore[attr-defined]

    def test_columns_are_separate(self) -> None:
        """
        The same key in two columns holds two values.
        """
        batch = self.store.batch()
        batch.put(HEADERS, b"k", b"header")
        batch.put(BODIES, b"k", b"body")
        self.store.write(batch)
        self.assertEqual(self.store.get(HEADERS, b"k"), b"header")  # type: ignore[attr-defined]
        self.assertEqual(self.store.get(BODIES, b"k"), b"body")  # type: ignore[attr-defined]
        self.assertIsNone(self.store.get(CODE, b"k"))  # type: ignore[attr-defined]

    def test_batch_in_order(self) -> None:
        """
        Operations of one batch apply in order: the last write to a key wins.
        """
        batch = self.store.batch()
        batch.put(CODE, b"k", b"first")
        batch.delete(CODE, b"k")
        batch.put(CODE, b"k", b"second")
        batch.put(CODE, b"gone", b"x")
        batch.delete(CODE, b"gone")
        self.assertEqual(len(batch), 5)  # type: ignore[attr-defined]
        self.store.write(batch)
        self.assertEqual(self.store.get(CODE, b"k"), b"second")  # type: ignore[attr-defined]
        self.assertIsNone(self.store.get(CODE, b"gone"))  # type: ignore[attr-defined]

    def test_unknown_column_rejects_whole_batch(self) -> None:
        """
        A batch naming an unknown column raises L{StoreError} and writes nothing.
        """
        batch = self.store.batch()
        batch.put(HEADERS, b"k", b"v")
        batch.put("no such column", b"k", b"v")
        self.assertRaises(StoreError, self.store.write, batch)  # type: ignore[attr-defined]
        self.assertIsNone(self.store.get(HEADERS, b"k"))  # type: ignore[attr-defined]
        self.assertRaises(StoreError, self.store.get, "no such column", b"k")  # type: ignore[attr-defined]

    def test_non_bytes_rejected(self) -> None:
        """
        Keys and values other than C{bytes} raise L{StoreError}.
        """
        batch = self.store.batch()
        self.assertRaises(StoreError, batch.put, HEADERS, "key", b"v")  # type: ignore[attr-defined]
        self.assertRaises(StoreError, batch.put, HEADERS, b"key", 5)  # type: ignore[attr-defined]
        self.assertRaises(StoreError, batch.delete, HEADERS, None)  # type: ignore[attr-defined]

    def test_iterate_prefix_in_order(self) -> None:
        """
        Iteration yields the keys under a prefix in ascending byte order, and
        every key without a prefix.
        """
        batch = self.store.batch()
        keys = [b"\x01\x02", b"\x01", b"\x01\xff", b"\x02\x00", b"\x00\xff", b"\x01\x00\x05"]
        for key in keys:
            batch.put(BODIES, key, key * 2)
        self.store.write(batch)
        under = [key for key in sorted(keys) if key.startswith(b"\x01")]
        self.assertEqual(
            list(self.store.iterate(BODIES, b"\x01")), [(key, key * 2) for key in under]
        )  # type: ignore[attr-defined]
        self.assertEqual(
            [key for key, _ in self.store.iterate(BODIES)], sorted(keys)
        )  # type: ignore[attr-defined]
        self.assertEqual(list(self.store.iterate(BODIES, b"\x03")), [])  # type: ignore[attr-defined]

    def test_binary_values_stay_raw(self) -> None:
        """
        Values come back as the exact bytes written, including empty ones
        and every byte value.
        """
        batch = self.store.batch()
        batch.put(CODE, b"all", bytes(range(256)))
        batch.put(CODE, b"empty", b"")
        self.store.write(batch)
        self.assertEqual(self.store.get(CODE, b"all"), bytes(range(256)))  # type: ignore[attr-defined]
        self.assertEqual(self.store.get(CODE, b"empty"), b"")  # type: ignore[attr-defined]

    def test_closed_store(self) -> None:
        """
        A closed store raises L{StoreError}; closing again is harmless.
        """
        self.store.close()
        self.assertRaises(StoreError, self.store.get, HEADERS, b"k")  # type: ignore[attr-defined]
        self.assertRaises(StoreError, self.store.write, WriteBatch())  # type: ignore[attr-defined]
        self.assertRaises(StoreError, self.store.iterate, HEADERS)  # type: ignore[attr-defined]
        self.store.close()

    def test_new_store_has_schema_version(self) -> None:
        """
        A new store is stamped with the schema version.
        """
        self.assertIsNotNone(self.store.get(METADATA, SCHEMA_VERSION_KEY))  # type: ignore[attr-defined]


class MemoryStoreTests(StoreTestsMixin, SynchronousTestCase):
    """
    The store tests against L{MemoryStore}.
    """

    def make_store(self) -> KeyValueStore:
        """
        A new L{MemoryStore}.
        """
        return MemoryStore()


class RocksStoreTests(StoreTestsMixin, SynchronousTestCase):
    """
    The store tests against L{RocksStore}, plus what only a disk store does.
    """

    def make_store(self) -> KeyValueStore:
        """
        A new L{RocksStore} in a fresh directory.
        """
        self.path = self.mktemp()
        return RocksStore.open(self.path)

    def test_persists_across_reopen(self) -> None:
        """
        What was written is there after closing and opening again.
        """
        batch = self.store.batch()
        batch.put(HEADERS, b"k", b"v")
        self.store.write(batch)
        self.store.close()
        self.store = RocksStore.open(self.path)
        self.addCleanup(self.store.close)
        self.assertEqual(self.store.get(HEADERS, b"k"), b"v")

    def test_second_open_refused(self) -> None:
        """
        Opening a directory that this process already has open raises L{StoreError}.
        """
        error = self.assertRaises(StoreError, RocksStore.open, self.path)
        self.assertIn("already open", str(error))

    def test_close_ends_iterations(self) -> None:
        """
        Closing with an iteration half done still frees the directory.
        """
        batch = self.store.batch()
        batch.put(HEADERS, b"a", b"1")
        batch.put(HEADERS, b"b", b"2")
        self.store.write(batch)
        iteration = self.store.iterate(HEADERS)
        next(iteration)
        self.store.close()
        self.store = RocksStore.open(self.path)
        self.addCleanup(self.store.close)
        self.assertEqual(self.store.get(HEADERS, b"b"), b"2")

    def test_locked_by_another_process(self) -> None:
        """
        A directory held open by another process raises L{StoreError} naming it.
        """
        self.store.close()
        holder = subprocess.Popen(
            [sys.executable, "-c", _HOLD_OPEN, os.path.abspath(self.path)],
            cwd=str(REPOSITORY_ROOT),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self.addCleanup(holder.wait)
        self.addCleanup(holder.stdin.close)  # type: ignore[union-attr]
        self.assertEqual(holder.stdout.readline(), b"open\n")  # type: ignore[union-attr]
        holder.stdout.close()  # type: ignore[union-attr]
        error = self.assertRaises(StoreError, RocksStore.open, self.path)
        self.assertIn("in use", str(error))

    def test_other_schema_version_refused(self) -> None:
        """
        A database stamped with another schema version raises
        L{SchemaVersionError} at open, and is left closed.
        """
        batch = self.store.batch()
        batch.put(METADATA, SCHEMA_VERSION_KEY, b"\x63")
        self.store.write(batch)
        self.store.close()
        error = self.assertRaises(SchemaVersionError, RocksStore.open, self.path)
        self.assertIn("version 99", str(error))
        self.assertRaises(SchemaVersionError, RocksStore.open, self.path)

    def test_corruption_is_fatal(self) -> None:
        """
        A damaged table file: a read that meets it, or a walk over it (which
        RocksDB ends as if the keys ended), raises L{StoreCorruptionError}
        naming the file, and tells C{on_fatal} first.
        """
        for first in range(0, 20000, 100):
            batch = self.store.batch()
            for key in range(first, first + 100):
                batch.put(HEADERS, key.to_bytes(8, "big"), bytes([key % 251]) * 200)
            self.store.write(batch)
        self.store.close()
        table = max(Path(self.path).glob("*.sst"), key=lambda path: path.stat().st_size)
        with table.open("r+b") as handle:
            handle.seek(table.stat().st_size // 2)
            handle.write(b"\x00" * 2000)
        self.store = RocksStore.open(self.path)
        self.addCleanup(self.store.close)
        told: list[Exception] = []
        self.store.on_fatal = told.append  # type: ignore[attr-defined]
        errors = []
        for key in range(20000):
            try:
                self.store.get(HEADERS, key.to_bytes(8, "big"))
            except StoreError as exc:
                errors.append(exc)
        self.assertTrue(errors)
        self.assertTrue(all(isinstance(error, StoreCorruptionError) for error in errors))
        self.assertIn(table.name, str(errors[0]))
        self.assertEqual(told, errors)
        with self.assertRaises(StoreCorruptionError):
            for _ in self.store.iterate(HEADERS):
                pass

    def test_full_disk_is_fatal(self) -> None:
        """
        A write refused for want of space raises L{StoreFullError}.
        """
        self.assertIsInstance(
            _failure("writing to", "/x", Exception("IO error: No space left on device: While appending to file")),
            StoreFullError,
        )
        self.assertIsInstance(_failure("reading from", "/x", Exception("Corruption: bad block")), StoreCorruptionError)
        plain = _failure("reading from", "/x", Exception("IO error: something"))
        self.assertNotIsInstance(plain, FatalStoreError)
        self.assertEqual(str(plain), "reading from the store at /x failed: IO error: something")


_HOLD_OPEN = """
import sys
from nodex.db.rocks import RocksStore
store = RocksStore.open(sys.argv[1])
print("open", flush=True)
sys.stdin.read()
store.close()
"""
