"""
Tests for L{nodex.rpc}.
"""
