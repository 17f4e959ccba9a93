"""
The block builder: a block template on a parent from candidate transactions.

L{build_block} executes the candidates in the order given on the parent's
state, leaves out those that cannot be included at that point (and says
why), stops when no more gas is left for even a plain transfer, and returns
the unsealed block with the outcome of its execution, so that the miner
never executes a block twice.  L{seal_block} puts a merged-mining seal on it.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from nodex.chain.difficulty import next_difficulty
from nodex.chain.errors import InvalidBlockError
from nodex.chain.seal.pow import Seal
from nodex.chain.processing import (
    BlockHashes,
    BlockOutcome,
    checked_sender,
    environment_of,
    execute_transaction,
    finish_block,
    uncles_hash,
)
from nodex.chain.rules import MAX_EXTRA_DATA_SIZE, MAX_UNCLES, ChainRules, check_gas_limit, next_gas_limit
from nodex.primitives import UINT64_CEILING, Address, direct_init
from nodex.state.state import State
from nodex.structures.blocks import Block
from nodex.structures.errors import InvalidTransactionError
from nodex.structures.headers import Header
from nodex.structures.receipts import Receipt
from nodex.structures.transaction_rules import TX_BASE_COST
from nodex.structures.transactions import Transaction


@dataclass(frozen=True)
class SkippedTransaction:
    """
    A candidate the builder left out.

    @ivar transaction: the candidate.
    @ivar reason: why it cannot be included on this state.
    @ivar invalid: C{True} when it can never be included on this chain as
        it stands (bad signature, another chain's id, used nonce, too little
        balance, price below the block minimum); C{False} when it may fit a later block
        (too much gas for the space left, a nonce gap, an earlier
        transaction of its sender left out).
    """

    transaction: Transaction
    reason: str
    invalid: bool


@direct_init
@dataclass(frozen=True)
class BuiltBlock:
    """
    An unsealed block template and what executing it gave.
    """

    block: Block
    outcome: BlockOutcome
    skipped: tuple[SkippedTransaction, ...]


def _fits_later(transaction: Transaction, nonce: int, gas_left: int) -> str | None:
    """
    Why a candidate cannot be included now but might be later, or L{None}.

    @param nonce: its sender's nonce in the block's state so far.
    """
    if transaction.gas > gas_left:
        return f"gas {transaction.gas} exceeds the {gas_left} left in the block"
    if transaction.nonce > nonce:
        return f"nonce {transaction.nonce} is ahead of the sender's nonce {nonce}"
    return None


def build_block(
    parent: Header,
    state: State,
    candidates: Iterable[Transaction],
    coinbase: Address,
    timestamp: int,
    rules: ChainRules,
    block_hashes: BlockHashes,
    extra_data: bytes = b"",
    uncles: Sequence[Header] = (),
    validated: Transaction | None = None,
) -> BuiltBlock:
    """
    Build a block template on C{parent}, executing C{candidates} in order.

    @param state: the parent's state; it is changed to the block's state
        and committed.
    @param timestamp: the block's timestamp, already after the parent's.
    @param block_hashes: the lookup of the parent's ancestry for BLOCKHASH.
    @param uncles: uncle headers to include (already checked by the caller).
    @param validated: a candidate that has just passed
        L{nodex.structures.transaction_rules.validate_transaction} for this
        chain's id under its impersonation rule (an automining node's lone
        candidate, checked with the pool's rules): not checked again.
    @raise InvalidBlockError: the timestamp does not follow the parent or
        does not fit in 64 bits, the extra data is too long, there are too
        many uncles, or the parent's gas limit allows no valid one.
    """
    if timestamp <= parent.timestamp:
        raise InvalidBlockError(f"timestamp {timestamp} is not after the parent's {parent.timestamp}")
    if timestamp >= UINT64_CEILING:
        raise InvalidBlockError(f"timestamp {timestamp} does not fit in 64 bits")
    if len(extra_data) > MAX_EXTRA_DATA_SIZE:
        raise InvalidBlockError(f"extra data of {len(extra_data)} bytes is longer than {MAX_EXTRA_DATA_SIZE}")
    if len(uncles) > MAX_UNCLES:
        raise InvalidBlockError(f"{len(uncles)} uncles, at most {MAX_UNCLES} allowed")
    gas_limit = next_gas_limit(rules, parent.gas_limit)
    # The check an importer makes, so that a template is never refused
    # for its gas limit (a parent below the minimum, which a genesis may be).
    check_gas_limit(rules, parent.gas_limit, gas_limit)
    difficulty = next_difficulty(rules.difficulty, parent.difficulty, parent.timestamp, timestamp, len(uncles))
    number = parent.number + 1
    minimum_gas_price = parent.minimum_gas_price
    environment = environment_of(
        coinbase, number, timestamp, gas_limit, difficulty, rules.chain_id, block_hashes, rules.forks
    )
    included: list[Transaction] = []
    receipts: list[Receipt] = []
    skipped: list[SkippedTransaction] = []
    blocked_senders: set[Address] = set()
    gas_used = 0
    paid_fees = 0
    for transaction in candidates:
        if gas_limit - gas_used < TX_BASE_COST:
            break
        try:
            if transaction is validated:
                sender = transaction.sender
            else:
                sender = checked_sender(transaction, rules.chain_id, rules.impersonation)
        except InvalidTransactionError as exc:
            skipped.append(SkippedTransaction(transaction, str(exc), True))
            continue
        nonce = state.get_nonce(sender)
        if transaction.nonce < nonce:
            # Already mined (a template taken before the previous block was
            # stored): drop it without holding up the sender's next ones.
            skipped.append(
                SkippedTransaction(transaction, f"nonce {transaction.nonce} is below the sender's nonce {nonce}", True)
            )
            continue
        if sender in blocked_senders:
            skipped.append(SkippedTransaction(transaction, "an earlier transaction of its sender was left out", False))
            continue
        later = _fits_later(transaction, nonce, gas_limit - gas_used)
        if later is not None:
            blocked_senders.add(sender)
            skipped.append(SkippedTransaction(transaction, later, False))
            continue
        try:
            receipt, gas, fee = execute_transaction(
                state, environment, transaction, sender, gas_used, minimum_gas_price
            )
        except InvalidTransactionError as exc:
            blocked_senders.add(sender)
            skipped.append(SkippedTransaction(transaction, str(exc), True))
            continue
        included.append(transaction)
        receipts.append(receipt)
        gas_used += gas
        paid_fees += fee
    outcome = finish_block(state, included, receipts, paid_fees)
    # The header is made once, with what the execution gave: every field
    # is known before the first transaction but these six.
    header = Header(
        parent_hash=parent.hash,
        uncles_hash=uncles_hash(uncles),
        coinbase=coinbase,
        state_root=outcome.state_root,
        transactions_root=outcome.transactions_root,
        receipts_root=outcome.receipts_root,
        logs_bloom=outcome.logs_bloom,
        difficulty=difficulty,
        number=number,
        gas_limit=gas_limit,
        gas_used=outcome.gas_used,
        timestamp=timestamp,
        extra_data=extra_data,
        paid_fees=outcome.paid_fees,
        minimum_gas_price=minimum_gas_price,
        uncle_count=len(uncles),
    )
    return BuiltBlock(Block(header, tuple(included), tuple(uncles)), outcome, tuple(skipped))


def seal_block(block: Block, seal: Seal) -> Block:
    """
    The block with C{seal} in its header's merged-mining fields (its hash
    for merged mining does not change).
    """
    header = block.header.with_seal(seal.bitcoin_header, seal.merkle_proof, seal.coinbase)
    return Block(header, block.transactions, block.uncles)


__all__ = ["BuiltBlock", "SkippedTransaction", "build_block", "seal_block"]
