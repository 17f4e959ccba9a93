"""
RLP classes: headers, blocks, transactions, receipts, logs, accounts (L1).

Every class is immutable and caches its encoding and hash.  Malformed bytes
raise L{RLPError}; well-formed transactions that break a rule raise
L{InvalidTransactionError} or one of its subclasses (all in
L{nodex.structures.errors}).
"""

from nodex.structures.accounts import EMPTY_ACCOUNT, EMPTY_TRIE_ROOT, Account
from nodex.structures.errors import (
    IntrinsicGasTooLowError,
    InvalidSignatureError,
    InvalidTransactionError,
    RLPError,
    UnsupportedTransactionTypeError,
    WrongChainIdError,
)
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
    sign_transaction,
)

__all__ = [
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
