"""
The admission rules of the transaction pool (L4, pure): what a transaction
must satisfy to wait for a block, with the reference node's refusals
(reference §5.3).

One set of rules, used in two places: by the pool, for every transaction
it is offered, and by the block maker, for a transaction that an
automining node includes in a block of its own before it ever enters the
pool (L{nodex.chain.building.making.TransactionsBlock.admit}).  The rules come in
two parts:

  - L{check_transaction}: what the transaction must satisfy whatever the
    state (size, nonce range, signature, chain id, intrinsic gas) and
    against the head it is checked on (gas limit, minimum gas price);
  - L{check_admission}: what it must satisfy against its sender's account
    and the sender's other pooled transactions (nonce, quota, replacement
    price, funds).

Refusals raise L{TransactionRejectedError}; the ones that no state can
cure raise its subclass L{InvalidTransactionRejectedError} (a peer that
relays one misbehaves).
"""

from collections.abc import Mapping
from dataclasses import dataclass

from nodex.chain.errors import InvalidTransactionRejectedError, TransactionRejectedError
from nodex.primitives import UINT64_CEILING
from nodex.structures.errors import (
    IntrinsicGasTooLowError,
    InvalidSignatureError,
    InvalidTransactionError,
    WrongChainIdError,
)
from nodex.structures.transaction_rules import MAX_INIT_CODE_SIZE, validate_transaction
from nodex.structures.transactions import Transaction

ACCOUNT_SLOTS = 16
"""Transactions one sender may have in the pool (reference C{transaction.accountSlots})."""

PRICE_BUMP_PERCENT = 40
"""How much more a replacement must pay per gas (reference C{transaction.gasPriceBump})."""

MAX_TRANSACTION_SIZE = 128 * 1024
"""The largest raw transaction accepted, in bytes."""


@dataclass(frozen=True)
class AdmissionRules:
    """
    The parameters of the admission rules on one node.

    @ivar chain_id: the EIP-155 chain id transactions must carry (or none).
    @ivar account_slots: transactions one sender may have pooled.
    @ivar price_bump_percent: how much more per gas a replacement pays.
    @ivar max_size: the largest raw transaction, in bytes.
    """

    chain_id: int
    account_slots: int = ACCOUNT_SLOTS
    price_bump_percent: int = PRICE_BUMP_PERCENT
    max_size: int = MAX_TRANSACTION_SIZE


def cost(transaction: Transaction) -> int:
    """
    The most a transaction can take from its sender: gas at the highest price plus value.
    """
    return transaction.gas * transaction.max_fee_per_gas + transaction.value


def check_transaction(
    transaction: Transaction,
    rules: AdmissionRules,
    gas_limit: int,
    minimum_gas_price: int,
    may_impersonate: bool = False,
) -> None:
    """
    The rules that need neither the pool nor the state: the transaction's
    own (it can never be valid if it breaks one) and the head's limits.
    Recovers the sender (a signature check): run it off the reactor.

    @param gas_limit: the gas limit of the block the transaction is checked against.
    @param minimum_gas_price: that block's minimum gas price.
    @param may_impersonate: the transaction carries the impersonation marker
        of a sender a dev chain impersonates now (C{docs/devchain.md}).
    @raise InvalidTransactionRejectedError: a rule no state can cure.
    @raise TransactionRejectedError: the head's gas limit or price floor.
    """
    size = len(transaction.encode())
    if size > rules.max_size:
        raise InvalidTransactionRejectedError(
            f"transaction's size is higher than defined maximum: {size} > {rules.max_size}"
        )
    if transaction.is_create and len(transaction.data) > MAX_INIT_CODE_SIZE:
        raise InvalidTransactionRejectedError("transaction's init code size is invalid")
    if transaction.nonce >= UINT64_CEILING - 1:
        raise InvalidTransactionRejectedError("transaction nonce too high")
    try:
        validate_transaction(transaction, rules.chain_id, may_impersonate)
    except WrongChainIdError:
        raise InvalidTransactionRejectedError(f"Invalid chainId: {transaction.chain_id}") from None
    except IntrinsicGasTooLowError:
        raise InvalidTransactionRejectedError("transaction's basic cost is above the gas limit") from None
    except InvalidSignatureError as exc:
        raise InvalidTransactionRejectedError(str(exc)) from None
    except InvalidTransactionError as exc:
        if transaction.gas * transaction.max_fee_per_gas >= 1 << 256:
            raise InvalidTransactionRejectedError("transaction's gas price exceeds cap") from None
        raise InvalidTransactionRejectedError(str(exc)) from None
    if transaction.gas > gas_limit:
        raise TransactionRejectedError(
            f"transaction's gas limit of {transaction.gas} exceeds the block's gas limit of {gas_limit}"
        )
    if transaction.effective_gas_price < minimum_gas_price:
        raise TransactionRejectedError("transaction's gas price lower than block's minimum")


def check_admission(
    transaction: Transaction,
    first_nonce: int,
    balance: int,
    pooled: Mapping[int, Transaction],
    rules: AdmissionRules,
) -> Transaction | None:
    """
    The rules that depend on the sender's account and its other pooled
    transactions.

    @param first_nonce: the nonce the sender's next executable transaction
        carries (its state nonce).
    @param balance: the sender's balance.
    @param pooled: the sender's pooled transactions by nonce (empty for a
        sender with nothing pooled, as when a block is built for the
        transaction alone).
    @return: the pooled transaction it replaces (same nonce), or L{None}.
    @raise TransactionRejectedError: a rule is broken (reference §5.3's messages).
    """
    nonce = transaction.nonce
    if nonce < first_nonce:
        raise TransactionRejectedError("transaction nonce too low")
    replaced = pooled.get(nonce)
    if replaced is None and len(pooled) >= rules.account_slots:
        raise TransactionRejectedError("account exceeds quota")
    if nonce >= first_nonce + rules.account_slots:
        raise TransactionRejectedError("transaction nonce too high")
    if replaced is not None:
        check_replacement(replaced, transaction, rules.price_bump_percent)
    own = cost(transaction)
    if own > balance:
        raise TransactionRejectedError("insufficient funds")
    # (Nothing pooled, as for a transaction mined alone: no generator to sum.)
    others = sum(cost(pending) for pending_nonce, pending in pooled.items() if pending_nonce != nonce) if pooled else 0
    if others + own > balance:
        raise TransactionRejectedError("insufficient funds to pay for pending and new transactions")
    return replaced


def check_replacement(old: Transaction, new: Transaction, price_bump_percent: int) -> None:
    """
    Refuse a replacement that does not pay enough more per gas (both the
    fee cap and the tip, for EIP-1559 transactions).

    @raise TransactionRejectedError: it does not.
    """
    factor = 100 + price_bump_percent
    for old_price, new_price in (
        (old.max_fee_per_gas, new.max_fee_per_gas),
        (old.max_priority_fee_per_gas, new.max_priority_fee_per_gas),
    ):
        if new_price * 100 < old_price * factor:
            raise TransactionRejectedError("gas price not enough to bump transaction")


__all__ = [
    "ACCOUNT_SLOTS",
    "AdmissionRules",
    "MAX_TRANSACTION_SIZE",
    "PRICE_BUMP_PERCENT",
    "check_admission",
    "check_replacement",
    "check_transaction",
    "cost",
]
