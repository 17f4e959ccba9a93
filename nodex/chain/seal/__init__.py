"""
The merged-mining seal (reference §3, §4): Bitcoin's header, coinbase and
merkle branches, SHA-256 mid-states, and the proof-of-work check of a block's seal.
"""
