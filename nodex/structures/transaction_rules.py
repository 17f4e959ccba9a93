"""
The rules a transaction must meet before it touches any state: the chain
id, the intrinsic gas of Cancun, the initcode limit of EIP-3860, the ranges
of EIP-1559 fees and EIP-2681 nonces, and a recoverable low-s signature.

The constant names are execution-specs' so that the two can be read side by
side.
"""

from nodex.primitives import UINT64_CEILING, UINT256_CEILING
from nodex.structures.errors import (
    IntrinsicGasTooLowError,
    InvalidSignatureError,
    InvalidTransactionError,
    WrongChainIdError,
)
from nodex.structures.transactions import LegacyTransaction, Transaction

TX_BASE_COST = 21000
TX_CREATE_COST = 32000
TX_DATA_COST_PER_ZERO = 4
TX_DATA_COST_PER_NON_ZERO = 16
TX_ACCESS_LIST_ADDRESS_COST = 2400
TX_ACCESS_LIST_STORAGE_KEY_COST = 1900
GAS_INIT_CODE_WORD_COST = 2
MAX_CODE_SIZE = 0x6000
MAX_INIT_CODE_SIZE = 2 * MAX_CODE_SIZE


def intrinsic_gas(tx: Transaction) -> int:
    """
    The gas a transaction costs before its first instruction runs (Cancun).

    21000, plus 32000 and 2 per 32-byte word of initcode (EIP-3860) for a
    creation, plus 4 per zero and 16 per non-zero data byte (EIP-2028), plus
    2400 per access-list address and 1900 per storage key (EIP-2930).
    """
    data = tx.data
    zeros = data.count(0)
    gas = TX_BASE_COST + TX_DATA_COST_PER_ZERO * zeros + TX_DATA_COST_PER_NON_ZERO * (len(data) - zeros)
    if tx.to == b"":
        gas += TX_CREATE_COST + GAS_INIT_CODE_WORD_COST * ((len(data) + 31) // 32)
    for entry in tx.access_list:
        gas += TX_ACCESS_LIST_ADDRESS_COST + TX_ACCESS_LIST_STORAGE_KEY_COST * len(entry.storage_keys)
    return gas


def validate_chain_id(tx: Transaction, chain_id: int) -> None:
    """
    Check that C{tx} may run on the chain C{chain_id}.

    A legacy transaction signed without EIP-155 replay protection is valid
    on every chain; any other transaction must carry this chain's id.

    @raise WrongChainIdError: the transaction names another chain.
    """
    carried = tx.chain_id
    if carried != chain_id and (carried is not None or not isinstance(tx, LegacyTransaction)):
        raise WrongChainIdError(f"invalid chain id {carried}: this chain's id is {chain_id}")


def validate_transaction(tx: Transaction, chain_id: int, impersonation: bool = False) -> None:
    """
    Check every rule that needs nothing but the transaction and the chain id,
    including that its sender can be recovered (which caches C{tx.sender}).

    @param impersonation: whether an impersonation marker stands for a
        signature here (a dev chain's own transactions and blocks); when it
        does not, the marker is the invalid signature it looks like.

    @raise WrongChainIdError: see L{validate_chain_id}.
    @raise IntrinsicGasTooLowError: the gas does not cover L{intrinsic_gas}.
    @raise InvalidTransactionError: the nonce is 2**64-1 (EIP-2681), gas
        times the highest price does not fit in 256 bits, the priority fee
        exceeds the fee cap, or the initcode is too large (EIP-3860).
    @raise nodex.structures.errors.InvalidSignatureError: the signature is
        malformed, has a high s, or recovers no sender.
    """
    validate_chain_id(tx, chain_id)
    if tx.nonce >= UINT64_CEILING - 1:
        raise InvalidTransactionError(f"nonce {tx.nonce} is too big: it must stay below 2**64-1 (EIP-2681)")
    # The fee fields are properties on some types: each read once.
    max_fee = tx.max_fee_per_gas
    priority_fee = tx.max_priority_fee_per_gas
    if priority_fee > max_fee:
        raise InvalidTransactionError(
            f"max priority fee per gas {priority_fee} is higher than max fee per gas {max_fee}"
        )
    if tx.gas * max_fee >= UINT256_CEILING:
        raise InvalidTransactionError("gas times gas price does not fit in 256 bits")
    if tx.to == b"" and len(tx.data) > MAX_INIT_CODE_SIZE:
        raise InvalidTransactionError(
            f"initcode of {len(tx.data)} bytes exceeds the limit of {MAX_INIT_CODE_SIZE} bytes (EIP-3860)"
        )
    needed = intrinsic_gas(tx)
    if tx.gas < needed:
        raise IntrinsicGasTooLowError(f"intrinsic gas too low: have {tx.gas}, want {needed}")
    if not impersonation and tx.impersonated:
        raise InvalidSignatureError(
            "invalid signature: s must be in [1, secp256k1n) (an impersonated sender's marker,"
            " which only a dev chain's own transactions and blocks may carry)"
        )
    tx.sender


__all__ = [
    "GAS_INIT_CODE_WORD_COST",
    "MAX_CODE_SIZE",
    "MAX_INIT_CODE_SIZE",
    "TX_ACCESS_LIST_ADDRESS_COST",
    "TX_ACCESS_LIST_STORAGE_KEY_COST",
    "TX_BASE_COST",
    "TX_CREATE_COST",
    "TX_DATA_COST_PER_NON_ZERO",
    "TX_DATA_COST_PER_ZERO",
    "intrinsic_gas",
    "validate_chain_id",
    "validate_transaction",
]
