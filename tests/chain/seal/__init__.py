"""
Tests for L{nodex.chain.seal}.
"""
