"""
Key-value stores (memory and RocksDB) and the storage schema (L1).

L{nodex.db.kv} defines the store interface and L{WriteBatch};
L{nodex.db.memory.MemoryStore} and L{nodex.db.rocks.RocksStore} implement
it; L{nodex.db.schema} names the columns and reads and writes typed values.
"""

from nodex.db.errors import SchemaVersionError, StoreError, WrongNetworkError
from nodex.db.kv import KeyValueStore, WriteBatch

__all__ = ["KeyValueStore", "SchemaVersionError", "StoreError", "WriteBatch", "WrongNetworkError"]
