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
