"""
The precompiled contracts at addresses 0x01-0x09 (L3).
"""
