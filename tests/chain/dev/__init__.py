"""
Tests for L{nodex.chain.dev}.
"""
