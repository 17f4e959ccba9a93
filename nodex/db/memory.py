"""
A key-value store in memory, for unit tests and for throw-away chains.
"""

import threading
from collections.abc import Iterator

from nodex.db.errors import StoreError
from nodex.db.kv import WriteBatch
from nodex.db.schema import ALL_COLUMNS, ensure_schema_version


class MemoryStore:
    """
    One dict per column; a lock makes each batch atomic for readers in
    other threads.
    """

    def __init__(self) -> None:
        """
        Create an empty store with every column of the schema, stamped with
        the current schema version.
        """
        self._columns: dict[str, dict[bytes, bytes]] | None = {name: {} for name in ALL_COLUMNS}
        self._lock = threading.Lock()
        ensure_schema_version(self)

    def _column(self, column: str) -> dict[bytes, bytes]:
        """
        The dict of C{column}.

        @raise StoreError: the store is closed or has no such column.
        """
        if self._columns is None:
            raise StoreError("the store is closed")
        try:
            return self._columns[column]
        except KeyError:
            raise StoreError(f"unknown column {column!r}") from None

    def get(self, column: str, key: bytes) -> bytes | None:
        """
        The value of C{key} in C{column}, or L{None}.
        """
        with self._lock:
            return self._column(column).get(key)

    def batch(self) -> WriteBatch:
        """
        A new, empty batch.
        """
        return WriteBatch()

    def write(self, batch: WriteBatch) -> None:
        """
        Apply C{batch}: every column is checked first, so a bad batch changes nothing.
        """
        with self._lock:
            if self._columns is None:
                raise StoreError("the store is closed")
            targets = [(self._column(column), key, value) for column, key, value in batch.operations]
            for values, key, value in targets:
                if value is None:
                    values.pop(key, None)
                else:
                    values[key] = value

    def iterate(self, column: str, prefix: bytes = b"") -> Iterator[tuple[bytes, bytes]]:
        """
        The pairs of C{column} under C{prefix} in key order, as they were
        when the iteration started.
        """
        with self._lock:
            values = self._column(column)
            pairs = sorted((key, value) for key, value in values.items() if key.startswith(prefix))
        return iter(pairs)

    def close(self) -> None:
        """
        Drop the contents; later use raises L{StoreError}.
        """
        self._columns = None


__all__ = ["MemoryStore"]
