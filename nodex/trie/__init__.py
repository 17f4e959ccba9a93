"""
The hexary Merkle-Patricia trie, its secure variant and proofs (L1).
"""
