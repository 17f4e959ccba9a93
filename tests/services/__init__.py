"""
Tests for L{nodex.services}.
"""
