"""
Tests for L{nodex.chain.logs}.
"""
