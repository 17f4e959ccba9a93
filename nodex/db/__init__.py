"""
Key-value stores (memory and RocksDB) and the storage schema (L1).
"""
