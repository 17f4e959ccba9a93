"""
Logs after execution: the bloom-bitmap index of stored blocks, the logs as stored,
the search of C{eth_getLogs}, and the matching of installed filters (C{docs/state-and-logs.md}).
"""
