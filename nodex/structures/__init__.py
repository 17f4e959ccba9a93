"""
RLP classes: headers, blocks, transactions, receipts, logs, accounts (L1).
"""
