"""
Tests for L{nodex.trie}.
"""
