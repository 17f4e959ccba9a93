"""
A bounded cache of decoded trie nodes by hash, shared by the tries that
readers open (DESIGN §4: the reader pool runs calls and reads against
immutable state roots).

A node is named by its hash, so a cached node is right for every trie and
every block that refers to it, across new blocks and reorganisations.  The
cached nodes are never changed: a trie given the cache walks them for its
lookups without loading them into its own nodes (L{nodex.trie.hexary}),
and what it changes it reads afresh.
"""

from collections import OrderedDict
from collections.abc import Callable
from threading import Lock

from nodex.trie.errors import MissingTrieNodeError
from nodex.trie.nodes import Node, decode_node

DEFAULT_NODE_CACHE_SIZE = 32_768
"""Nodes kept by default: the upper levels of the state trie and the hot storage tries."""


class NodeCache:
    """
    Decoded nodes by their 33-byte hash reference, the least recently used
    forgotten first; safe to share between threads.
    """

    def __init__(self, size: int = DEFAULT_NODE_CACHE_SIZE) -> None:
        """
        @param size: the most nodes kept.
        """
        self._size = size
        self._nodes: OrderedDict[bytes, Node] = OrderedDict()
        self._lock = Lock()

    def load(self, ref: bytes, read_node: Callable[[bytes], bytes | None]) -> Node:
        """
        The decoded node behind C{ref}, from the cache or read with
        C{read_node} and kept.  The caller must not change it.

        @raise MissingTrieNodeError: C{read_node} does not know the hash.
        """
        nodes = self._nodes
        with self._lock:
            node = nodes.get(ref)
            if node is not None:
                nodes.move_to_end(ref)
                return node
        encoded = read_node(ref[1:])
        if encoded is None:
            raise MissingTrieNodeError(ref[1:])
        node = decode_node(encoded)
        node.ref = ref if len(encoded) >= 32 else encoded
        node.stored = True
        with self._lock:
            nodes[ref] = node
            if len(nodes) > self._size:
                nodes.popitem(last=False)
        return node

    def __len__(self) -> int:
        """
        The number of nodes kept.
        """
        return len(self._nodes)


__all__ = ["DEFAULT_NODE_CACHE_SIZE", "NodeCache"]
