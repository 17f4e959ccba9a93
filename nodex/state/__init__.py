"""
World state over the trie: accounts, storage, code, journal (L2).
"""
