"""
Tests for L{nodex.evm}.
"""
