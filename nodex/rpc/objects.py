"""
The result objects of the chain methods: block, transaction, receipt and
log, member for member in the order of the interface specification, followed
by the members DESIGN §1 adds from the reference (§4) and, for typed
transactions, the EIP-2718 members standard clients read.

Each function takes the structures (and what the chain service knows about
where they sit) and returns a JSON-ready C{dict}; nothing here touches a
service.
"""

from collections.abc import Iterable
from typing import Any

from nodex.api.chain import ReceiptView, TransactionLocation
from nodex.primitives import ZERO_HASH32
from nodex.structures.blocks import Block
from nodex.structures.headers import Header
from nodex.structures.logs import Log
from nodex.structures.transactions import (
    FEE_MARKET_TX_TYPE,
    LEGACY_TX_TYPE,
    AccessListEntry,
    LegacyTransaction,
    Transaction,
)

_ZERO_NONCE = "0x0000000000000000"
_ZERO_MIX_HASH = "0x" + "00" * 32
_ZERO_BLOCK_HASH = "0x" + ZERO_HASH32.hex()


def _data(value: bytes) -> str:
    """
    DATA: C{0x} and two lowercase hex digits per byte.
    """
    return "0x" + value.hex()


def header_object(
    header: Header,
    total_difficulty: int,
    size: int,
    transactions: list[Any],
    uncles: list[str],
    uncle_difficulty: int = 0,
) -> dict[str, Any]:
    """
    The block object of a header (the specification's members, then the
    reference's: C{mixHash}, C{minimumGasPrice}, the merged-mining fields,
    C{hashForMergedMining}, C{paidFees}), and C{baseFeePerGas}, always
    zero on this chain (DESIGN §2), which clients read to price type 2
    transactions.

    @param total_difficulty: the chain's total difficulty up to this block.
    @param size: the length of the block's RLP.
    @param transactions: the already encoded transactions (hashes or objects).
    @param uncles: the uncles' hashes, encoded.
    @param uncle_difficulty: the sum of the uncles' difficulties.
    """
    return {
        "number": hex(header.number),
        "hash": _data(header.hash),
        "parentHash": _data(header.parent_hash),
        "nonce": _ZERO_NONCE,
        "sha3Uncles": _data(header.uncles_hash),
        "logsBloom": _data(header.logs_bloom),
        "transactionsRoot": _data(header.transactions_root),
        "stateRoot": _data(header.state_root),
        "receiptsRoot": _data(header.receipts_root),
        "miner": _data(header.coinbase),
        "difficulty": hex(header.difficulty),
        "cumulativeDifficulty": hex(header.difficulty + uncle_difficulty),
        "totalDifficulty": hex(total_difficulty),
        "extraData": _data(header.extra_data),
        "size": hex(size),
        "gasLimit": hex(header.gas_limit),
        "gasUsed": hex(header.gas_used),
        "timestamp": hex(header.timestamp),
        "transactions": transactions,
        "uncles": uncles,
        "mixHash": _ZERO_MIX_HASH,
        "minimumGasPrice": hex(header.minimum_gas_price),
        "bitcoinMergedMiningHeader": _data(header.bitcoin_merged_mining_header),
        "bitcoinMergedMiningCoinbaseTransaction": _data(header.bitcoin_merged_mining_coinbase_transaction),
        "bitcoinMergedMiningMerkleProof": _data(header.bitcoin_merged_mining_merkle_proof),
        "hashForMergedMining": _data(header.hash_for_merged_mining),
        "paidFees": hex(header.paid_fees),
        "baseFeePerGas": "0x0",
    }


def block_object(block: Block, total_difficulty: int, full_transactions: bool) -> dict[str, Any]:
    """
    The block object of C{eth_getBlockByHash} and C{eth_getBlockByNumber}.

    @param full_transactions: list transaction objects rather than hashes.
    """
    block_hash = block.hash
    number = block.header.number
    if full_transactions:
        transactions: list[Any] = [
            transaction_object(tx, block_hash, number, index) for index, tx in enumerate(block.transactions)
        ]
    else:
        transactions = [_data(tx.hash) for tx in block.transactions]
    return header_object(
        block.header,
        total_difficulty,
        block.size,
        transactions,
        [_data(uncle.hash) for uncle in block.uncles],
        sum(uncle.difficulty for uncle in block.uncles),
    )


def uncle_object(uncle: Header, total_difficulty: int) -> dict[str, Any]:
    """
    The block object of an uncle: its header alone, with no transactions
    and no uncles (the specification: uncles carry no transactions).

    @param total_difficulty: the total difficulty of the uncle's chain, or
        0 when the node does not know it.
    """
    size = len(Block(uncle).encode())
    return header_object(uncle, total_difficulty, size, [], [])


def access_list_object(entries: Iterable[AccessListEntry]) -> list[dict[str, Any]]:
    """
    An EIP-2930 access list: C{[{"address": ..., "storageKeys": [...]}, ...]}.
    """
    return [{"address": _data(entry.address), "storageKeys": [_data(key) for key in entry.storage_keys]} for entry in entries]


def transaction_object(
    transaction: Transaction,
    block_hash: bytes | None,
    block_number: int | None,
    index: int | None,
) -> dict[str, Any]:
    """
    The transaction object: the specification's members, then C{type},
    then for typed (or EIP-155) transactions C{chainId}, and for typed ones
    C{accessList}, the fee caps of type 2 and C{yParity}.

    @param block_hash: L{None} for a pooled transaction (then C{blockHash},
        C{blockNumber} and C{transactionIndex} are C{null}).
    """
    obj: dict[str, Any] = {
        "blockHash": None if block_hash is None else _data(block_hash),
        "blockNumber": None if block_number is None else hex(block_number),
        "from": _data(transaction.sender),
        "gas": hex(transaction.gas),
        "gasPrice": hex(transaction.effective_gas_price),
        "hash": _data(transaction.hash),
        "input": _data(transaction.data),
        "nonce": hex(transaction.nonce),
        "to": None if transaction.is_create else _data(transaction.to),
        "transactionIndex": None if index is None else hex(index),
        "value": hex(transaction.value),
    }
    if isinstance(transaction, LegacyTransaction):
        obj["v"] = hex(transaction.v)
    else:
        obj["v"] = hex(transaction.y_parity)
    obj["r"] = hex(transaction.r)
    obj["s"] = hex(transaction.s)
    obj["type"] = hex(transaction.type)
    if transaction.chain_id is not None:
        obj["chainId"] = hex(transaction.chain_id)
    if transaction.type != LEGACY_TX_TYPE:
        obj["accessList"] = access_list_object(transaction.access_list)
        if transaction.type == FEE_MARKET_TX_TYPE:
            obj["maxFeePerGas"] = hex(transaction.max_fee_per_gas)
            obj["maxPriorityFeePerGas"] = hex(transaction.max_priority_fee_per_gas)
        obj["yParity"] = hex(transaction.y_parity)
    return obj


def located_transaction_object(location: TransactionLocation) -> dict[str, Any]:
    """
    The transaction object of a transaction of the canonical chain.
    """
    return transaction_object(location.transaction, location.block_hash, location.block_number, location.index)


def pending_transaction_object(transaction: Transaction) -> dict[str, Any]:
    """
    The shape of C{eth_pendingTransactions} (the specification's): the zero
    block hash, C{blockNumber} C{null} and C{transactionIndex} C{0x0}.
    """
    obj = transaction_object(transaction, None, None, None)
    obj["blockHash"] = _ZERO_BLOCK_HASH
    obj["transactionIndex"] = "0x0"
    return obj


def log_object(
    log: Log,
    log_index: int,
    location: TransactionLocation,
    removed: bool = False,
) -> dict[str, Any]:
    """
    The log object: C{removed} (true for a log revoked by a
    reorganisation), its block-wide index, where its transaction sits, and
    the log itself.
    """
    return {
        "removed": removed,
        "logIndex": hex(log_index),
        "transactionIndex": hex(location.index),
        "transactionHash": _data(location.transaction.hash),
        "blockHash": _data(location.block_hash),
        "blockNumber": hex(location.block_number),
        "address": _data(log.address),
        "data": _data(log.data),
        "topics": [_data(topic) for topic in log.topics],
    }


def receipt_object(view: ReceiptView) -> dict[str, Any]:
    """
    The receipt object: the specification's members (C{status}, never
    C{root}), then C{type}.
    """
    location = view.location
    transaction = location.transaction
    receipt = view.receipt
    return {
        "transactionHash": _data(transaction.hash),
        "transactionIndex": hex(location.index),
        "blockHash": _data(location.block_hash),
        "blockNumber": hex(location.block_number),
        "from": _data(transaction.sender),
        "to": None if transaction.is_create else _data(transaction.to),
        "cumulativeGasUsed": hex(receipt.cumulative_gas_used),
        "gasUsed": hex(view.gas_used),
        "contractAddress": None if view.contract_address is None else _data(view.contract_address),
        "logs": [
            log_object(log, view.first_log_index + offset, location) for offset, log in enumerate(receipt.logs)
        ],
        "logsBloom": _data(receipt.bloom),
        "effectiveGasPrice": hex(view.effective_gas_price),
        "status": hex(receipt.status),
        "type": hex(receipt.tx_type),
    }


__all__ = [
    "access_list_object",
    "block_object",
    "header_object",
    "located_transaction_object",
    "log_object",
    "pending_transaction_object",
    "receipt_object",
    "transaction_object",
    "uncle_object",
]
