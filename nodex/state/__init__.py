"""
World state over the trie: accounts, storage, code, journal (L2).
"""

from nodex.state.errors import StateError
from nodex.state.state import State

__all__ = ["State", "StateError"]
