"""
nodex: a full node for an EVM blockchain of the Bitcoin-merge-mined family.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
