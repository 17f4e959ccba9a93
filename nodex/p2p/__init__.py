"""
The peer-to-peer wire protocol edge (L6).
"""
