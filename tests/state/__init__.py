"""
Tests for L{nodex.state}.
"""
