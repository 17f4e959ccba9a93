"""
Deferred-returning services behind nodex.api (L5).
"""
