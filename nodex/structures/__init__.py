"""
RLP classes: headers, blocks, transactions, receipts, logs, accounts (L1).

Every class is immutable and caches its encoding and hash.  Malformed bytes
raise L{RLPError}; well-formed transactions that break a rule raise
L{InvalidTransactionError} or one of its subclasses (all in
L{nodex.structures.errors}).
"""

from nodex.structures.accounts import EMPTY_ACCOUNT, EMPTY_TRIE_ROOT, Account
from nodex.structures.blocks import Block, decode_body, encode_body
from nodex.structures.bloom import EMPTY_BLOOM, bloom_add, bloom_may_contain, logs_bloom, merge_blooms
from nodex.structures.errors import (
    IntrinsicGasTooLowError,
    InvalidSignatureError,
    InvalidTransactionError,
    RLPError,
    UnsupportedTransactionTypeError,
    WrongChainIdError,
)
from nodex.structures.headers import EMPTY_UNCLES_HASH, Header
from nodex.structures.logs import Log
from nodex.structures.receipts import Receipt, decode_receipts, encode_receipts
from nodex.structures.transaction_rules import intrinsic_gas, validate_chain_id, validate_transaction
from nodex.structures.transactions import (
    ACCESS_LIST_TX_TYPE,
    FEE_MARKET_TX_TYPE,
    LEGACY_TX_TYPE,
    AccessList,
    AccessListEntry,
    AccessListTransaction,
    FeeMarketTransaction,
    LegacyTransaction,
    Transaction,
    decode_transaction,
    decode_transaction_in_block,
    sign_transaction,
)

__all__ = [
    "EMPTY_BLOOM",
    "EMPTY_UNCLES_HASH",
    "Block",
    "Header",
    "Log",
    "Receipt",
    "bloom_add",
    "bloom_may_contain",
    "decode_body",
    "decode_receipts",
    "decode_transaction_in_block",
    "encode_body",
    "encode_receipts",
    "logs_bloom",
    "merge_blooms",
    "ACCESS_LIST_TX_TYPE",
    "EMPTY_ACCOUNT",
    "EMPTY_TRIE_ROOT",
    "FEE_MARKET_TX_TYPE",
    "LEGACY_TX_TYPE",
    "AccessList",
    "AccessListEntry",
    "AccessListTransaction",
    "Account",
    "FeeMarketTransaction",
    "IntrinsicGasTooLowError",
    "InvalidSignatureError",
    "InvalidTransactionError",
    "LegacyTransaction",
    "RLPError",
    "Transaction",
    "UnsupportedTransactionTypeError",
    "WrongChainIdError",
    "decode_transaction",
    "intrinsic_gas",
    "sign_transaction",
    "validate_chain_id",
    "validate_transaction",
]
