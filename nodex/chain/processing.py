"""
Block processing: executing a block's transactions on its parent's state,
and validating a block against its parent, its ancestry and that outcome.

L{apply_block} runs the transactions of a block and gathers everything the
header commits to (receipts, gas, bloom, paid fees, the three roots) together
with the trie nodes and code to store.  L{validate_header} checks the rules
that need only the parent (number, time, difficulty, gas limit, extra data,
minimum gas price, seal), L{validate_uncles} the uncles against the recent
ancestry, and L{validate_block} the body and the outcome against the header.

The chain's block environment (DESIGN §2): base fee 0, excess blob gas 0 (so
BLOBBASEFEE is 1), no blob hashes, and PREVRANDAO pushes the block's
difficulty as a 32-byte word, as DIFFICULTY did before the merge.  BLOCKHASH
sees the 256 most recent ancestors through the lookup the caller passes.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from nodex.chain.difficulty import next_difficulty
from nodex.chain.errors import FutureBlockError, InvalidBlockError, InvalidSealError
from nodex.chain.execution import apply_transaction
from nodex.chain.seal.pow import Seal, check_seal
from nodex.chain.rules import (
    DEFAULT_FORK_SCHEDULE,
    MAX_EXTRA_DATA_SIZE,
    MAX_UNCLE_DEPTH,
    MAX_UNCLES,
    ChainRules,
    ForkSchedule,
    check_gas_limit,
)
from nodex.crypto import keccak256
from nodex.evm.environment import BlockEnvironment
from nodex.primitives import UINT64_CEILING, Address, Hash32, direct_init
from nodex.state.errors import StateError
from nodex.state.state import State
from nodex.structures.blocks import Block
from nodex.structures.bloom import merge_blooms
from nodex.structures.errors import InvalidTransactionError
from nodex.structures.headers import EMPTY_UNCLES_HASH, Header
from nodex.structures.receipts import Receipt
from nodex.structures.rlpcodec import encode_list_of_encoded
from nodex.structures.transaction_rules import validate_transaction
from nodex.structures.transactions import Transaction
from nodex.trie.ordered import ordered_trie_root

BlockHashes = Callable[[int], Hash32 | None]
"""Maps a block number to the hash of that ancestor of the block being processed, or L{None}."""

MINIMUM_GAS_PRICE_DIVISOR = 100
"""A block's minimumGasPrice may differ from its parent's by at most 1/100 of it (reference §13.3)."""


@direct_init
@dataclass(frozen=True)
class BlockOutcome:
    """
    What executing a block's transactions produced.

    @ivar receipts: one receipt per transaction, in order.
    @ivar gas_used: the gas of all transactions.
    @ivar logs_bloom: the union of the receipts' blooms.
    @ivar paid_fees: the fees credited to the coinbase.
    @ivar state_root: the state root after the block.
    @ivar transactions_root: the root of the transactions trie.
    @ivar receipts_root: the root of the receipts trie.
    @ivar nodes: the new trie nodes (hash to RLP), to be written with the block.
    @ivar code: the new contract code (code hash to code).
    """

    receipts: tuple[Receipt, ...]
    gas_used: int
    logs_bloom: bytes
    paid_fees: int
    state_root: Hash32
    transactions_root: Hash32
    receipts_root: Hash32
    nodes: dict[bytes, bytes] = field(compare=False, repr=False)
    code: dict[bytes, bytes] = field(compare=False, repr=False)


def block_environment(
    header: Header, chain_id: int, block_hashes: BlockHashes, forks: ForkSchedule = DEFAULT_FORK_SCHEDULE
) -> BlockEnvironment:
    """
    The environment a block's transactions run in (see the module docstring).

    @param forks: the network's schedule, which chooses the block's rule set.
    """
    return environment_of(
        header.coinbase, header.number, header.timestamp, header.gas_limit, header.difficulty, chain_id, block_hashes,
        forks,
    )


def environment_of(
    coinbase: Address,
    number: int,
    timestamp: int,
    gas_limit: int,
    difficulty: int,
    chain_id: int,
    block_hashes: BlockHashes,
    forks: ForkSchedule = DEFAULT_FORK_SCHEDULE,
) -> BlockEnvironment:
    """
    The environment of a block with these header fields (L{block_environment}
    for a block whose header is not made yet: the builder's).
    """
    return BlockEnvironment(
        coinbase=coinbase,
        number=number,
        timestamp=timestamp,
        gas_limit=gas_limit,
        prev_randao=difficulty.to_bytes(32, "big"),
        chain_id=chain_id,
        base_fee=0,
        excess_blob_gas=0,
        block_hashes=block_hashes,
        fork=forks.fork_at(number),
    )


def effective_gas_price(transaction: Transaction) -> int:
    """
    What a transaction pays per gas on a chain whose base fee is always 0:
    its gas price, or for a fee-market transaction min(maxFee, maxPriorityFee).
    """
    return min(transaction.max_fee_per_gas, transaction.max_priority_fee_per_gas)


def transactions_root(transactions: Sequence[Transaction]) -> Hash32:
    """
    The root of the transactions trie: each transaction's raw bytes under its index.
    """
    return Hash32(ordered_trie_root([transaction.encode() for transaction in transactions]))


def receipts_root(receipts: Sequence[Receipt]) -> Hash32:
    """
    The root of the receipts trie: each receipt's consensus encoding under its index.
    """
    return Hash32(ordered_trie_root([receipt.encode() for receipt in receipts]))


def uncles_hash(uncles: Sequence[Header]) -> Hash32:
    """
    Keccak-256 of the RLP list of the uncle headers (a constant for none,
    the block of nearly every automined transaction).
    """
    if not uncles:
        return EMPTY_UNCLES_HASH
    return keccak256(encode_list_of_encoded([uncle.encode() for uncle in uncles]))


def cumulative_difficulty(block: Block) -> int:
    """
    The difficulty a block adds to its chain: its own plus its uncles' (DESIGN §2).
    """
    uncles = block.uncles
    if not uncles:
        return block.header.difficulty
    return block.header.difficulty + sum(uncle.difficulty for uncle in uncles)


def checked_sender(transaction: Transaction, chain_id: int, impersonation: bool = False) -> Address:
    """
    The sender of a transaction that may run on chain C{chain_id}.

    @param impersonation: whether an impersonation marker names a sender
        here (see L{validate_transaction}).

    @raise InvalidTransactionError: the signature gives no sender, the
        transaction names another chain, or breaks a static rule.
    """
    validate_transaction(transaction, chain_id, impersonation)
    return transaction.sender


def sender_of(transaction: Transaction, index: int, chain_id: int, impersonation: bool = False) -> Address:
    """
    The sender of a block's transaction (see L{checked_sender}).

    @raise InvalidBlockError: the transaction cannot run on this chain.
    """
    try:
        return checked_sender(transaction, chain_id, impersonation)
    except InvalidTransactionError as exc:
        raise InvalidBlockError(f"transaction {index} (0x{transaction.hash.hex()}): {exc}") from exc


def execute_transaction(
    state: State,
    environment: BlockEnvironment,
    transaction: Transaction,
    sender: Address,
    gas_used: int,
    minimum_gas_price: int,
) -> tuple[Receipt, int, int]:
    """
    Apply one transaction of a block.

    @return: its receipt, its gas and the fee it paid to the coinbase.
    @raise InvalidTransactionError: it cannot be included at this point
        (the state is left as it was).
    """
    price = effective_gas_price(transaction)
    if price < minimum_gas_price:
        raise InvalidTransactionError(
            f"transaction's gas price {price} is below the block's minimum gas price {minimum_gas_price}"
        )
    result = apply_transaction(state, environment, transaction, sender, gas_used)
    return result.receipt, result.gas_used, result.fee


def finish_block(
    state: State, transactions: Sequence[Transaction], receipts: Sequence[Receipt], paid_fees: int
) -> BlockOutcome:
    """
    Commit the state of an executed block and compute what its header commits to.

    @raise InvalidBlockError: the state cannot be committed (a missing trie node).
    """
    try:
        state_root, nodes = state.commit()
    except StateError as exc:
        raise InvalidBlockError(f"cannot compute the state root: {exc}") from exc
    code = dict(state.new_codes)
    state.new_codes.clear()
    # A block of one transaction (every automined one) has its receipt's bloom.
    bloom = receipts[0].bloom if len(receipts) == 1 else merge_blooms(receipt.bloom for receipt in receipts)
    return BlockOutcome(
        receipts=tuple(receipts),
        gas_used=receipts[-1].cumulative_gas_used if receipts else 0,
        logs_bloom=bloom,
        paid_fees=paid_fees,
        state_root=state_root,
        transactions_root=transactions_root(transactions),
        receipts_root=receipts_root(receipts),
        nodes=nodes,
        code=code,
    )


def apply_block(
    block: Block,
    state: State,
    chain_id: int,
    block_hashes: BlockHashes,
    forks: ForkSchedule = DEFAULT_FORK_SCHEDULE,
    impersonation: bool = False,
) -> BlockOutcome:
    """
    Execute a block's transactions on C{state}, its parent's state, and commit it.

    @param block_hashes: the lookup of the block's ancestors for BLOCKHASH.
    @param forks: the network's schedule, which chooses the block's rule set.
    @param impersonation: whether the block may carry transactions of
        impersonated senders (a dev chain's block built by this node).
    @raise InvalidBlockError: a transaction cannot be included (bad
        signature, another chain's id, nonce, balance, gas, price below the
        block's minimum).
    """
    header = block.header
    environment = block_environment(header, chain_id, block_hashes, forks)
    receipts: list[Receipt] = []
    gas_used = 0
    paid_fees = 0
    for index, transaction in enumerate(block.transactions):
        sender = sender_of(transaction, index, chain_id, impersonation)
        try:
            receipt, gas, fee = execute_transaction(
                state, environment, transaction, sender, gas_used, header.minimum_gas_price
            )
        except InvalidTransactionError as exc:
            raise InvalidBlockError(f"transaction {index} (0x{transaction.hash.hex()}): {exc}") from exc
        receipts.append(receipt)
        gas_used += gas
        paid_fees += fee
    return finish_block(state, block.transactions, receipts, paid_fees)


def header_seal(header: Header) -> Seal:
    """
    The merged-mining seal a header carries.
    """
    return Seal(
        header.bitcoin_merged_mining_header,
        header.bitcoin_merged_mining_merkle_proof,
        header.bitcoin_merged_mining_coinbase_transaction,
    )


def validate_seal(header: Header) -> None:
    """
    Check a header's merged-mining proof of work.

    @raise InvalidBlockError: the seal is malformed or insufficient.
    """
    try:
        check_seal(header.hash_for_merged_mining, header.difficulty, header_seal(header))
    except InvalidSealError as exc:
        raise InvalidSealError(f"block {header.number} 0x{header.hash.hex()}: invalid seal: {exc}") from exc


def validate_header(
    parent: Header, header: Header, rules: ChainRules, now: int | None = None, seal: bool = True
) -> None:
    """
    Check the header rules that need only the parent.

    @param now: the local time in seconds, or L{None} to skip the check of
        timestamps in the future (the node's own blocks, old blocks).
    @param seal: check the merged-mining seal too; L{False} only for a
        header whose seal this node's solver has just found for it (the
        solver's search is the same check).
    @raise InvalidBlockError: a rule is broken; the message says which.
    """
    if header.parent_hash != parent.hash:
        raise InvalidBlockError(
            f"parent hash 0x{header.parent_hash.hex()} is not the parent's 0x{parent.hash.hex()}"
        )
    if header.number != parent.number + 1:
        raise InvalidBlockError(f"block number {header.number} does not follow the parent's {parent.number}")
    if header.timestamp <= parent.timestamp:
        raise InvalidBlockError(
            f"timestamp {header.timestamp} is not after the parent's {parent.timestamp}"
        )
    if header.timestamp >= UINT64_CEILING:
        # Only a block built here can get so far (decoding refuses it).
        raise InvalidBlockError(f"timestamp {header.timestamp} does not fit in 64 bits")
    limit = rules.max_seconds_in_future
    if now is not None and limit is not None and header.timestamp > now + limit:
        raise FutureBlockError(f"timestamp {header.timestamp} is more than {limit} seconds in the future")
    expected = next_difficulty(
        rules.difficulty, parent.difficulty, parent.timestamp, header.timestamp, header.uncle_count
    )
    if header.difficulty != expected:
        raise InvalidBlockError(f"difficulty {header.difficulty} differs from the expected {expected}")
    check_gas_limit(rules, parent.gas_limit, header.gas_limit)
    if header.gas_used > header.gas_limit:
        raise InvalidBlockError(f"gas used {header.gas_used} exceeds the gas limit {header.gas_limit}")
    if len(header.extra_data) > MAX_EXTRA_DATA_SIZE:
        raise InvalidBlockError(
            f"extra data of {len(header.extra_data)} bytes is longer than {MAX_EXTRA_DATA_SIZE}"
        )
    bound = parent.minimum_gas_price // MINIMUM_GAS_PRICE_DIVISOR
    if abs(header.minimum_gas_price - parent.minimum_gas_price) > bound:
        raise InvalidBlockError(
            f"minimum gas price {header.minimum_gas_price} moves more than {bound}"
            f" from the parent's {parent.minimum_gas_price}"
        )
    if seal:
        validate_seal(header)


@dataclass(frozen=True)
class Ancestor:
    """
    One block of the ancestry an uncle check needs.

    @ivar header: the ancestor's header.
    @ivar uncle_hashes: the hashes of the uncles it included.
    """

    header: Header
    uncle_hashes: frozenset[bytes]


def validate_uncles(block: Block, ancestry: Sequence[Ancestor], rules: ChainRules) -> None:
    """
    Check a block's uncles: the uncles hash and count, at most
    L{MAX_UNCLES}, each a child of one of the L{MAX_UNCLE_DEPTH} most recent
    ancestors whose header passes L{validate_header} against it (seal
    included), none of them an ancestor, included twice, or already
    included by an ancestor.

    @param ancestry: the parent first, then its ancestors, at least
        L{MAX_UNCLE_DEPTH} of them (fewer near genesis).
    @raise InvalidBlockError: a rule is broken.
    """
    header = block.header
    if uncles_hash(block.uncles) != header.uncles_hash:
        raise InvalidBlockError("the uncles hash does not match the block's uncles")
    if header.uncle_count != len(block.uncles):
        raise InvalidBlockError(f"uncle count {header.uncle_count} differs from the {len(block.uncles)} uncles")
    if len(block.uncles) > MAX_UNCLES:
        raise InvalidBlockError(f"{len(block.uncles)} uncles, at most {MAX_UNCLES} allowed")
    if not block.uncles:
        return
    recent = ancestry[:MAX_UNCLE_DEPTH]
    ancestors = {ancestor.header.hash: ancestor.header for ancestor in recent}
    included = set().union(*(ancestor.uncle_hashes for ancestor in recent))
    seen: set[bytes] = set()
    for uncle in block.uncles:
        uncle_hash = uncle.hash
        if uncle_hash in seen:
            raise InvalidBlockError(f"uncle 0x{uncle_hash.hex()} is included twice")
        seen.add(uncle_hash)
        if uncle_hash in ancestors:
            raise InvalidBlockError(f"uncle 0x{uncle_hash.hex()} is an ancestor")
        if uncle_hash in included:
            raise InvalidBlockError(f"uncle 0x{uncle_hash.hex()} was already included")
        uncle_parent = ancestors.get(uncle.parent_hash)
        if uncle_parent is None or uncle_parent.number + 1 != uncle.number:
            raise InvalidBlockError(
                f"uncle 0x{uncle_hash.hex()} is not the child of one of the {MAX_UNCLE_DEPTH} latest ancestors"
            )
        validate_header(uncle_parent, uncle, rules)


def validate_block(block: Block, outcome: BlockOutcome) -> None:
    """
    Check a block's header against its body and the outcome of executing it.

    @raise InvalidBlockError: a root, the gas, the bloom or the fees differ.
    """
    header = block.header
    if outcome.transactions_root != header.transactions_root:
        raise InvalidBlockError(
            f"transactions root 0x{header.transactions_root.hex()} differs from the"
            f" transactions' 0x{outcome.transactions_root.hex()}"
        )
    if outcome.gas_used != header.gas_used:
        raise InvalidBlockError(f"gas used {header.gas_used} differs from the executed {outcome.gas_used}")
    if outcome.receipts_root != header.receipts_root:
        raise InvalidBlockError(
            f"receipts root 0x{header.receipts_root.hex()} differs from the executed"
            f" 0x{outcome.receipts_root.hex()}"
        )
    if outcome.logs_bloom != header.logs_bloom:
        raise InvalidBlockError("the logs bloom differs from the receipts' bloom")
    if outcome.paid_fees != header.paid_fees:
        raise InvalidBlockError(f"paid fees {header.paid_fees} differ from the executed {outcome.paid_fees}")
    if outcome.state_root != header.state_root:
        raise InvalidBlockError(
            f"state root 0x{header.state_root.hex()} differs from the executed 0x{outcome.state_root.hex()}"
        )


__all__ = [
    "Ancestor",
    "BlockHashes",
    "BlockOutcome",
    "MINIMUM_GAS_PRICE_DIVISOR",
    "apply_block",
    "block_environment",
    "checked_sender",
    "cumulative_difficulty",
    "effective_gas_price",
    "environment_of",
    "execute_transaction",
    "finish_block",
    "header_seal",
    "receipts_root",
    "sender_of",
    "transactions_root",
    "uncles_hash",
    "validate_block",
    "validate_header",
    "validate_seal",
    "validate_uncles",
]
