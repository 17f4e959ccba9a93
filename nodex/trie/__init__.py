"""
The hexary Merkle-Patricia trie, its secure variant and proofs (L1).

L{HexaryTrie} works over a node reader (hash to RLP) and hands new nodes back
from L{HexaryTrie.commit}; it never writes to a store itself.
"""

from nodex.trie.errors import BadProofError, MalformedNodeError, MissingTrieNodeError, TrieError
from nodex.trie.hexary import BLANK_ROOT, HexaryTrie, NodeReader
from nodex.trie.ordered import ordered_trie_root
from nodex.trie.proof import make_proof, verify_proof
from nodex.trie.secure import SecureTrie

__all__ = [
    "BLANK_ROOT",
    "BadProofError",
    "HexaryTrie",
    "MalformedNodeError",
    "MissingTrieNodeError",
    "NodeReader",
    "SecureTrie",
    "TrieError",
    "make_proof",
    "ordered_trie_root",
    "verify_proof",
]
