"""
Tests for L{nodex.reputation}.
"""
