"""
Tests for L{nodex.evm.precompiles}.
"""
