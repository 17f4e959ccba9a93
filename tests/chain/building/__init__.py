"""
Tests for L{nodex.chain.building}.
"""
