"""
The exceptions of the storage package.
"""

from nodex.errors import NodexError


class StoreError(NodexError):
    """
    A store cannot be opened, read or written, or was used wrongly.
    """


class SchemaVersionError(StoreError):
    """
    The store was written with another layout than this version of nodex reads.
    """


class WrongNetworkError(StoreError):
    """
    The data directory holds the chain of another network.
    """


class FatalStoreError(StoreError):
    """
    The database cannot go on: the node should stop rather than answer
    errors for everything that touches it.
    """


class StoreCorruptionError(FatalStoreError):
    """
    The database's files are damaged (a checksum does not match); the
    message names the file.
    """


class StoreFullError(FatalStoreError):
    """
    The disk holding the database is full: RocksDB refuses every write
    from then on, until the database is opened again.
    """
