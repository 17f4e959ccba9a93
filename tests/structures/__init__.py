"""
Tests for L{nodex.structures}.
"""
