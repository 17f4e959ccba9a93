"""
The exceptions of the trie package.
"""

from nodex.errors import NodexError


class TrieError(NodexError):
    """
    Base class of every error the trie package raises.
    """


class MissingTrieNodeError(TrieError):
    """
    A node the trie needs is not in its node reader.

    @ivar node_hash: the Keccak-256 hash of the missing node.
    """

    def __init__(self, node_hash: bytes) -> None:
        """
        @param node_hash: the hash that the node reader does not know.
        """
        super().__init__(f"missing trie node 0x{node_hash.hex()}")
        self.node_hash = node_hash


class MalformedNodeError(TrieError):
    """
    Bytes that should hold an RLP-encoded trie node do not.
    """


class BadProofError(TrieError):
    """
    A Merkle proof does not link the key to the root it claims.
    """
