"""
Transaction execution: the checks against the state, the up-front payment,
the message, refunds, fees and the receipt, under the rule set the block
environment carries (L{nodex.evm.forks}).

L{apply_transaction} runs one transaction of a block; L{run_call} runs a
message for C{eth_call} and C{eth_estimateGas} without the transaction's
checks or payment.  Both leave the state uncommitted: the caller commits
(block import) or throws the L{State} away (a call).
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from nodex.evm.environment import BlockEnvironment, TransactionEnvironment
from nodex.evm.errors import AddressCollisionError, Revert
from nodex.evm.frame import Evm, ExecutionContext, Message
from nodex.evm.gas import GAS_PER_BLOB, MAX_BLOB_GAS_PER_BLOCK, VERSIONED_HASH_VERSION_KZG
from nodex.evm.instructions.system import compute_contract_address
from nodex.evm.interpreter import ensure_recursion_limit, process_create_message, process_message
from nodex.evm.tracing import Tracer
from nodex.primitives import UINT64_CEILING, UINT256_CEILING, Address, Hash32, direct_init
from nodex.state.state import State
from nodex.structures.errors import InsufficientBalanceError, IntrinsicGasTooLowError, InvalidTransactionError
from nodex.structures.logs import Log
from nodex.structures.receipts import Receipt
from nodex.structures.transaction_rules import intrinsic_gas
from nodex.structures.transactions import AccessListEntry

BLOB_TX_TYPE = 3

class ExecutableTransaction(Protocol):
    """
    What execution reads of a transaction; the classes of
    L{nodex.structures.transactions} provide it, and blob transactions add
    C{max_fee_per_blob_gas} and C{blob_versioned_hashes}.
    """

    type: int
    nonce: int
    gas: int
    to: bytes
    value: int
    data: bytes
    access_list: Sequence[AccessListEntry]
    max_fee_per_gas: int
    max_priority_fee_per_gas: int


@direct_init
@dataclass(frozen=True)
class TransactionResult:
    """
    The outcome of one applied transaction.

    @ivar receipt: the receipt (status, cumulative gas, bloom, logs).
    @ivar gas_used: the gas the transaction consumed after its refund.
    @ivar output: the return data, or the revert data of a reverted call.
    @ivar error: why the top frame failed (C{"execution reverted"},
        C{"out of gas"}, ...), or L{None}.
    @ivar contract_address: the created contract's address for a creation.
    @ivar effective_gas_price: the price paid per gas.
    @ivar fee: the priority fee credited to the coinbase.
    """

    receipt: Receipt
    gas_used: int
    output: bytes
    error: str | None
    contract_address: Address | None
    effective_gas_price: int
    fee: int
    reverted: bool = False
    """Whether the top frame ended in REVERT (its C{output} is the revert data)."""

    @property
    def logs(self) -> tuple[Log, ...]:
        """
        The logs the transaction emitted.
        """
        return self.receipt.logs


@dataclass(frozen=True)
class CallResult:
    """
    The outcome of L{run_call}.

    @ivar success: whether the message ended without error.
    @ivar output: the return data, or the revert data.
    @ivar gas_used: the gas consumed, refund deducted, intrinsic gas included.
    @ivar error: why it failed, or L{None}.
    @ivar limit_dependent: whether the run did something whose outcome
        could differ with more gas (see
        L{nodex.evm.frame.ExecutionContext.limit_dependent}).
    @ivar refund: the refund deducted from C{gas_used} (EIP-3529): the
        run consumed C{gas_used + refund} before it was paid.
    @ivar spare_gas: how much less gas the run could have had and run the
        same instructions, its own frame's margin (L{nodex.evm.frame.Evm}).
    @ivar call_spare_gas: how much less gas the run could have had and still
        hand each subframe of its own frame enough to run as it did
        (L{nodex.evm.frame.ExecutionContext.call_margin}).
    """

    success: bool
    output: bytes
    gas_used: int
    error: str | None
    limit_dependent: bool = False
    refund: int = 0
    reverted: bool = False
    """Whether the message ended in REVERT (its C{output} is the revert data)."""
    spare_gas: int = -1
    call_spare_gas: int = -1


def error_description(error: Exception | None) -> str | None:
    """
    A short text for a frame's error, as traces and results print it.
    """
    if error is None:
        return None
    if isinstance(error, Revert):
        return "execution reverted"
    return getattr(error, "description", type(error).__name__)


def check_transaction(
    state: State, block: BlockEnvironment, tx: ExecutableTransaction, sender: Address, gas_available: int
) -> tuple[int, int]:
    """
    Check a transaction against the block and its sender's account.

    @param gas_available: the block's gas limit minus the gas used so far.
    @return: the intrinsic gas and the effective gas price.
    @raise InvalidTransactionError: a rule is broken (too little gas,
        nonce, fees below the base fee, balance, sender with code, blobs).
    """
    # The fee cap is a property on some types: read once.
    max_fee = tx.max_fee_per_gas
    if tx.value >= UINT256_CEILING or max_fee >= UINT256_CEILING or tx.gas >= UINT64_CEILING:
        raise InvalidTransactionError("a value, fee or gas limit is out of range")
    intrinsic = intrinsic_gas(tx)
    if intrinsic > tx.gas:
        raise IntrinsicGasTooLowError(f"intrinsic gas too low: have {tx.gas}, want {intrinsic}")
    if tx.nonce >= UINT64_CEILING - 1:
        raise InvalidTransactionError(f"nonce {tx.nonce} is too big (EIP-2681)")
    fork = block.fork
    if tx.type not in fork.transaction_types:
        raise InvalidTransactionError(f"transaction type {tx.type} is not supported by the {fork.name} rules")
    max_init_code_size = fork.gas.max_init_code_size
    if tx.to == b"" and len(tx.data) > max_init_code_size:
        raise InvalidTransactionError(f"initcode of {len(tx.data)} bytes exceeds {max_init_code_size} (EIP-3860)")
    if tx.gas > gas_available:
        raise InvalidTransactionError(f"gas limit {tx.gas} exceeds the block's available gas {gas_available}")
    if tx.type >= 2:
        if max_fee < tx.max_priority_fee_per_gas:
            raise InvalidTransactionError("max priority fee per gas higher than max fee per gas")
        if max_fee < block.base_fee:
            raise InvalidTransactionError(f"max fee per gas {max_fee} below the base fee {block.base_fee}")
        price = min(tx.max_priority_fee_per_gas, max_fee - block.base_fee) + block.base_fee
    else:
        if max_fee < block.base_fee:
            raise InvalidTransactionError(f"gas price {max_fee} below the base fee {block.base_fee}")
        price = max_fee
    max_cost = tx.gas * max_fee + tx.value
    if tx.type == BLOB_TX_TYPE:
        max_cost += _check_blobs(block, tx)
    account = state.get_account(sender)
    balance = 0 if account is None else account.balance
    nonce = 0 if account is None else account.nonce
    if balance < max_cost:
        raise InsufficientBalanceError(f"insufficient funds for gas * price + value: have {balance} want {max_cost}")
    if nonce != tx.nonce:
        raise InvalidTransactionError(f"nonce {tx.nonce} does not match the sender's nonce {nonce}")
    if state.has_code_or_nonce(sender) and state.get_code(sender):
        raise InvalidTransactionError("sender is a contract (EIP-3607)")
    return intrinsic, price


def _check_blobs(block: BlockEnvironment, tx: Any) -> int:
    """
    Check a blob transaction's blobs (EIP-4844).

    @return: the most its blob gas may cost.
    @raise InvalidTransactionError: no blobs, a wrong version byte, too many
        blobs, a creation, or a blob fee cap below the blob base fee.
    """
    hashes = tx.blob_versioned_hashes
    if not hashes:
        raise InvalidTransactionError("a blob transaction carries no blob hashes")
    if any(h[:1] != bytes([VERSIONED_HASH_VERSION_KZG]) for h in hashes):
        raise InvalidTransactionError("a blob hash has the wrong version byte")
    if tx.to == b"":
        raise InvalidTransactionError("a blob transaction cannot create a contract")
    blob_gas = GAS_PER_BLOB * len(hashes)
    if blob_gas > MAX_BLOB_GAS_PER_BLOCK:
        raise InvalidTransactionError(f"{len(hashes)} blobs exceed the block's blob gas")
    if tx.max_fee_per_blob_gas < block.blob_base_fee:
        raise InvalidTransactionError("max fee per blob gas below the blob base fee")
    return blob_gas * tx.max_fee_per_blob_gas


def _warm_up(state: State, block: BlockEnvironment, sender: Address, target: Address, access_list: Any) -> None:
    """
    Warm what EIP-2929, EIP-2930 and EIP-3651 warm before the first instruction.
    """
    state.warm_addresses((sender, target, block.coinbase, *block.fork.precompile_addresses))  # type: ignore[arg-type]
    for entry in access_list:
        state.mark_warm_address(Address(entry.address))
        for key in entry.storage_keys:
            state.mark_warm_slot(Address(entry.address), int.from_bytes(key, "big"))


def _run_message(
    state: State,
    context: ExecutionContext,
    sender: Address,
    tx: Any,
    gas: int,
) -> tuple[Evm, Address | None]:
    """
    Build and run the transaction's message (a call, or a creation that may collide).

    @return: the finished top frame and the created address, if any.
    """
    if tx.to == b"":
        contract_address = compute_contract_address(sender, state.get_nonce(sender) - 1)
        _warm_up(state, context.block, sender, contract_address, tx.access_list)
        message = Message(sender, None, contract_address, gas, tx.value, b"", None, tx.data, 0)
        if state.has_code_or_nonce(contract_address) or state.has_storage(contract_address):
            evm = Evm(message, context, b"", frozenset())
            evm.gas_left = 0
            evm.error = AddressCollisionError()
            return evm, contract_address
        return process_create_message(message, context), contract_address
    to = Address(tx.to)
    _warm_up(state, context.block, sender, to, tx.access_list)
    message = Message(sender, to, to, gas, tx.value, tx.data, to, state.get_code(to), 0)
    return process_message(message, context), None


def apply_transaction(
    state: State,
    block: BlockEnvironment,
    tx: ExecutableTransaction,
    sender: Address,
    block_gas_used: int = 0,
    tracer: Tracer | None = None,
) -> TransactionResult:
    """
    Check and execute one transaction of a block, changing C{state}.

    The sender pays C{gas * price} (and blob gas) up front, gets back the
    unused gas and the refund (capped at a fifth of the gas used, EIP-3529),
    the base fee is burnt and the priority fee goes to the coinbase.  An
    invalid transaction leaves the state untouched.

    @param sender: the transaction's sender (recovered by the caller).
    @param block_gas_used: the gas of the block's earlier transactions.
    @raise InvalidTransactionError: see L{check_transaction}.
    """
    ensure_recursion_limit()
    state.begin_transaction()
    intrinsic, price = check_transaction(state, block, tx, sender, block.gas_limit - block_gas_used)
    blob_hashes: Sequence[Hash32] = getattr(tx, "blob_versioned_hashes", ()) or ()
    # Only a blob transaction needs the block's blob base fee (computed on first use).
    blob_fee = GAS_PER_BLOB * len(blob_hashes) * block.blob_base_fee if blob_hashes else 0
    state.increment_nonce(sender)
    state.set_balance(sender, state.get_balance(sender) - tx.gas * price - blob_fee)
    context = ExecutionContext(state, block, TransactionEnvironment(sender, price, tuple(blob_hashes)), tracer)
    evm, contract_address = _run_message(state, context, sender, tx, tx.gas - intrinsic)
    gas_used = tx.gas - evm.gas_left
    refund = min(gas_used // 5, evm.refund_counter) if evm.error is None else 0
    gas_used -= refund
    state.add_balance(sender, (evm.gas_left + refund) * price)
    fee = gas_used * (price - block.base_fee)
    coinbase_balance = state.get_balance(block.coinbase) + fee
    if coinbase_balance:
        state.set_balance(block.coinbase, coinbase_balance)
    elif state.account_exists(block.coinbase) and not state.is_alive(block.coinbase):
        state.destroy_account(block.coinbase)
    success = evm.error is None
    state.finalize_transaction(evm.accounts_to_delete if success else ())
    logs = tuple(Log(address, topics, data) for address, topics, data in evm.logs) if success else ()
    receipt = Receipt.from_logs(tx.type, 1 if success else 0, block_gas_used + gas_used, logs)
    return TransactionResult(
        receipt=receipt,
        gas_used=gas_used,
        output=evm.output,
        error=error_description(evm.error),
        contract_address=contract_address if success else None,
        effective_gas_price=price,
        fee=fee,
        reverted=isinstance(evm.error, Revert),
    )


def run_call(
    state: State,
    block: BlockEnvironment,
    sender: Address,
    to: Address | None,
    data: bytes = b"",
    value: int = 0,
    gas: int = 50_000_000,
    gas_price: int = 0,
    access_list: Sequence[AccessListEntry] = (),
    tracer: Tracer | None = None,
) -> CallResult:
    """
    Run a message as C{eth_call} does: no signature, nonce or fee checks,
    no payment; the value must still be covered by the sender's balance.

    The state is changed; run it on a L{State} that is thrown away.

    @param gas: the gas cap, intrinsic gas included.
    @raise InvalidTransactionError: the gas does not cover the intrinsic
        gas, or the sender cannot pay the value.
    """
    ensure_recursion_limit()
    state.begin_transaction()
    tx = _CallTransaction(to or b"", value, data, gas, tuple(access_list))
    intrinsic = intrinsic_gas(tx)  # type: ignore[arg-type]
    if intrinsic > gas:
        raise IntrinsicGasTooLowError(f"intrinsic gas too low: have {gas}, want {intrinsic}")
    if state.get_balance(sender) < value:
        raise InsufficientBalanceError("insufficient funds for transfer")
    state.increment_nonce(sender)
    context = ExecutionContext(state, block, TransactionEnvironment(sender, gas_price), tracer)
    evm, _ = _run_message(state, context, sender, tx, gas - intrinsic)
    gas_used = gas - evm.gas_left
    refund = min(gas_used // 5, evm.refund_counter) if evm.error is None else 0
    return CallResult(
        evm.error is None, evm.output, gas_used - refund, error_description(evm.error), context.limit_dependent, refund,
        isinstance(evm.error, Revert), evm.margin, context.call_margin,
    )


@dataclass(frozen=True)
class _CallTransaction:
    """
    The fields of a call that L{intrinsic_gas} and the message builder read.
    """

    to: bytes
    value: int
    data: bytes
    gas: int
    access_list: tuple[AccessListEntry, ...]


__all__ = [
    "BLOB_TX_TYPE",
    "CallResult",
    "ExecutableTransaction",
    "TransactionResult",
    "apply_transaction",
    "check_transaction",
    "run_call",
]
