"""
Tests for L{nodex.p2p}.
"""
