"""
Errors of the world state.
"""

from nodex.errors import NodexError


class StateError(NodexError):
    """
    The state cannot answer: a trie node or a piece of code is missing from
    the store, or stored data is malformed.
    """
