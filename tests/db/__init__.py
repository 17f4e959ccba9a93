"""
Tests for L{nodex.db}.
"""
