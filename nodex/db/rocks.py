"""
The RocksDB store: one database per data directory, one column family per
column of the schema, through rocksdict (the only module that imports it).

Values are stored raw (rocksdict's raw mode; otherwise it would pickle
them).  A L{WriteBatch} becomes one RocksDB write batch across column
families, written through the write-ahead log: once L{RocksStore.write}
returns, the batch survives the process being killed, and a batch
interrupted by a crash is never half applied.
"""

import os
import threading
import weakref
from collections.abc import Callable, Generator, Iterator

from rocksdict import Options, Rdict, WriteBatch as RocksWriteBatch

from nodex.db.errors import FatalStoreError, StoreCorruptionError, StoreError, StoreFullError
from nodex.db.kv import WriteBatch
from nodex.db.schema import ALL_COLUMNS, ensure_schema_version

_open_paths: set[str] = set()
_open_paths_lock = threading.Lock()


DEFAULT_MAX_OPEN_FILES = 1024
"""
The most table files RocksDB keeps open (its own default keeps every one
open, which a large database pays for in file descriptors that the RPC
connections need too: L{nodex.descriptors}).
"""


def _options(max_open_files: int = DEFAULT_MAX_OPEN_FILES) -> Options:
    """
    The options of the database and of each column family: raw bytes, and
    a bounded number of open table files.
    """
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    options.create_missing_column_families(True)
    options.set_max_open_files(max_open_files)
    return options


def _failure(doing: str, path: str, exc: Exception) -> StoreError:
    """
    The store error for a RocksDB failure: a corrupt file and a full disk
    are fatal (L{FatalStoreError}); RocksDB names the file in the first.
    """
    text = str(exc)
    if "Corruption" in text:
        return StoreCorruptionError(f"the database in {path} is corrupt: {text}")
    if "No space left on device" in text:
        return StoreFullError(f"the disk holding the database in {path} is full: {text}")
    return StoreError(f"{doing} the store at {path} failed: {text}")


class RocksStore:
    """
    A L{nodex.db.kv.KeyValueStore} on RocksDB.  Open it with L{RocksStore.open}.

    @ivar on_fatal: called (in the thread that met it) with the first
        L{FatalStoreError} before it is raised, so that the node can stop
        instead of answering errors for everything that touches the store.
    """

    on_fatal: Callable[[FatalStoreError], None] | None = None

    def __init__(self, path: str, database: Rdict) -> None:
        """
        Wrap an open database; use L{RocksStore.open} instead.

        @param path: the data directory, as registered among the open ones.
        @param database: the open rocksdict database with every column family.
        """
        self.path = path
        self._database: Rdict | None = database
        self._columns = {name: database.get_column_family(name) for name in ALL_COLUMNS}
        self._handles = {name: database.get_column_family_handle(name) for name in ALL_COLUMNS}
        # A RocksDB iterator keeps the database open: close() ends the
        # iterations still running so that the directory is really freed.
        self._iterations: weakref.WeakSet[Generator[tuple[bytes, bytes], None, None]] = weakref.WeakSet()

    @classmethod
    def open(cls, path: str, max_open_files: int = DEFAULT_MAX_OPEN_FILES) -> "RocksStore":
        """
        Open (creating if needed) the database in directory C{path} and
        check its schema version.

        @param max_open_files: the most table files kept open.

        @raise StoreError: the directory is already open, in this process or
            another, or RocksDB cannot open it.
        @raise SchemaVersionError: the database has another schema version.
        """
        path = os.path.realpath(path)
        with _open_paths_lock:
            if path in _open_paths:
                raise StoreError(f"the data directory {path} is already open in this process")
            _open_paths.add(path)
        try:
            database = cls._open_database(path, max_open_files)
        except BaseException:
            with _open_paths_lock:
                _open_paths.discard(path)
            raise
        store = cls(path, database)
        try:
            ensure_schema_version(store)
        except BaseException:
            store.close()
            raise
        return store

    @staticmethod
    def _open_database(path: str, max_open_files: int = DEFAULT_MAX_OPEN_FILES) -> Rdict:
        """
        Open the RocksDB database with every column family, including any
        unknown ones an existing database holds (RocksDB requires opening all).

        @raise StoreError: RocksDB refuses, for instance because another
            process holds the directory's lock.
        """
        names = set(ALL_COLUMNS)
        if os.path.exists(os.path.join(path, "CURRENT")):
            try:
                names.update(Rdict.list_cf(path))
            except Exception as exc:  # rocksdict raises bare Exceptions
                raise StoreError(f"cannot read the database in {path}: {exc}") from exc
        names.discard("default")
        try:
            return Rdict(
                path,
                options=_options(max_open_files),
                column_families={name: _options(max_open_files) for name in sorted(names)},
            )
        except Exception as exc:  # rocksdict raises bare Exceptions
            if "lock" in str(exc).lower():
                raise StoreError(
                    f"the data directory {path} is in use by another process (or this one): {exc}"
                ) from exc
            raise StoreError(f"cannot open the database in {path}: {exc}") from exc

    def _column(self, column: str) -> Rdict:
        """
        The column family C{column}.

        @raise StoreError: the store is closed or has no such column.
        """
        if self._database is None:
            raise StoreError(f"the store at {self.path} is closed")
        try:
            return self._columns[column]
        except KeyError:
            raise StoreError(f"unknown column {column!r}") from None

    def get(self, column: str, key: bytes) -> bytes | None:
        """
        The value of C{key} in C{column}, or L{None}.

        @raise StoreError: unknown column, closed store, or RocksDB failed.
        """
        values = self._column(column)
        try:
            return values.get(key)
        except Exception as exc:  # rocksdict raises bare Exceptions and DbClosedError
            raise self._failed("reading from", exc) from exc

    def batch(self) -> WriteBatch:
        """
        A new, empty batch.
        """
        return WriteBatch()

    def write(self, batch: WriteBatch) -> None:
        """
        Apply C{batch} as one RocksDB write batch; an unknown column rejects
        the whole batch before anything is written.

        @raise StoreError: unknown column, closed store, or RocksDB failed.
        """
        if self._database is None:
            raise StoreError(f"the store at {self.path} is closed")
        handles = self._handles
        rocks_batch = RocksWriteBatch(raw_mode=True)
        for column, key, value in batch.operations:
            handle = handles.get(column)
            if handle is None:
                raise StoreError(f"unknown column {column!r}")
            if value is None:
                rocks_batch.delete(key, handle)
            else:
                rocks_batch.put(key, value, handle)
        try:
            self._database.write(rocks_batch)
        except Exception as exc:  # rocksdict raises bare Exceptions
            raise self._failed("writing to", exc) from exc

    def _failed(self, doing: str, exc: Exception) -> StoreError:
        """
        The error to raise for a RocksDB failure, after telling L{on_fatal}
        of a fatal one.
        """
        error = _failure(doing, self.path, exc)
        if isinstance(error, FatalStoreError) and self.on_fatal is not None:
            self.on_fatal(error)
        return error

    def iterate(self, column: str, prefix: bytes = b"") -> Iterator[tuple[bytes, bytes]]:
        """
        The pairs of C{column} under C{prefix}, in key order, from a
        consistent view taken when the iteration starts.  Closing the store
        ends the iteration.

        @raise StoreError: RocksDB stopped the walk on a failure (a damaged
            file), which it otherwise reports as the end of the keys.
        """
        iteration = self._iterate(self._column(column), prefix)
        self._iterations.add(iteration)
        return iteration

    def _iterate(self, column: Rdict, prefix: bytes) -> Generator[tuple[bytes, bytes], None, None]:
        """
        Walk one column family from C{prefix} while the keys start with it.
        """
        iterator = column.iter()
        # Log searches walk thousands of short key lists: the bound methods are looked up once.
        valid, key_of, value_of, advance = iterator.valid, iterator.key, iterator.value, iterator.next
        try:
            iterator.seek(prefix)
            while valid():
                key = key_of()
                if not key.startswith(prefix):
                    return
                yield key, value_of()
                advance()
            try:
                iterator.status()
            except Exception as exc:  # rocksdict raises bare Exceptions
                raise self._failed("reading from", exc) from exc
        finally:
            del iterator, valid, key_of, value_of, advance

    def close(self) -> None:
        """
        Flush and close the database and free the data directory; closing
        twice is harmless.
        """
        database = self._database
        if database is None:
            return
        self._database = None
        for iteration in list(self._iterations):
            iteration.close()
        for column in self._columns.values():
            column.close()
        self._columns = {}
        self._handles = {}
        database.close()
        with _open_paths_lock:
            _open_paths.discard(self.path)


__all__ = ["RocksStore"]
