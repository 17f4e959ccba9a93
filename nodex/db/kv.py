"""
The key-value store interface that the chain data lives in.

A store holds named columns of byte keys and byte values.  Reads go straight
to the store; writes are collected in a L{WriteBatch} and applied with
L{KeyValueStore.write} all at once or not at all, so that a block import is
never half done.
"""

from collections.abc import Iterator
from typing import Protocol

from nodex.db.errors import StoreError


class WriteBatch:
    """
    Puts and deletes across columns, applied atomically by L{KeyValueStore.write}.

    @ivar operations: C{(column, key, value)} in order; a value of L{None} deletes.
    """

    __slots__ = ("operations",)

    def __init__(self) -> None:
        """
        Start an empty batch.
        """
        self.operations: list[tuple[str, bytes, bytes | None]] = []

    def put(self, column: str, key: bytes, value: bytes) -> None:
        """
        Set C{key} in C{column} to C{value} when the batch is written.

        @raise StoreError: the key or the value is not C{bytes}.
        """
        if type(key) is not bytes or type(value) is not bytes:
            raise StoreError(
                f"keys and values must be bytes, not {type(key).__name__} and {type(value).__name__}"
            )
        self.operations.append((column, key, value))

    def delete(self, column: str, key: bytes) -> None:
        """
        Remove C{key} from C{column} when the batch is written.

        @raise StoreError: the key is not C{bytes}.
        """
        if type(key) is not bytes:
            raise StoreError(f"keys must be bytes, not {type(key).__name__}")
        self.operations.append((column, key, None))

    def __len__(self) -> int:
        """
        The number of operations in the batch.
        """
        return len(self.operations)


class KeyValueStore(Protocol):
    """
    What every store (L{nodex.db.memory.MemoryStore},
    L{nodex.db.rocks.RocksStore}) offers.  Every method raises L{StoreError}
    for an unknown column or a closed store.
    """

    def get(self, column: str, key: bytes) -> bytes | None:
        """
        The value of C{key} in C{column}, or L{None}.
        """

    def batch(self) -> WriteBatch:
        """
        A new, empty batch for this store.
        """

    def write(self, batch: WriteBatch) -> None:
        """
        Apply every operation of C{batch} atomically: after a crash the store
        holds all of them or none.
        """

    def iterate(self, column: str, prefix: bytes = b"") -> Iterator[tuple[bytes, bytes]]:
        """
        The C{(key, value)} pairs of C{column} whose key starts with
        C{prefix}, in ascending key order.
        """

    def close(self) -> None:
        """
        Release the store; later calls raise L{StoreError}.  Closing twice is harmless.
        """


__all__ = ["KeyValueStore", "WriteBatch"]
