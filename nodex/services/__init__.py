"""
Deferred-returning services behind nodex.interfaces (L5).
"""
