"""
Tests for L{nodex.chain}.
"""
