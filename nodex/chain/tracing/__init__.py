"""
Tracing (L4): tracers that watch a transaction re-executed through the same
code as block import, and the replays that run them (see C{docs/tracing.md}).
"""
