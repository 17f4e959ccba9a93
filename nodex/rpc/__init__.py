"""
The JSON-RPC 2.0 edge on Klein (L6).
"""
