"""
The blocks this node makes (L4, pure): a request says what block is
wanted — of pending transactions, of a dev chain's state edits or loaded
snapshot, or a run of empty blocks — and the importer builds it on its tip
and stores it through the same write as every other block
(L{nodex.chain.importer.BlockImporter.make}).

A request is data, made by the services above (the miner, the dev chain)
on the reactor thread: nothing here calls back into them.  It carries the
block's time as a L{BlockTime}: the time its maker wants and the bound the
network's drift limit puts on it, so that no block made here is stamped
further ahead of the clock than the network's followers accept.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from nodex.chain.admission import AdmissionRules, check_admission, check_transaction
from nodex.chain.building.builder import BuiltBlock, build_block
from nodex.chain.dev.blocks import StateEdit
from nodex.chain.dev.state import load_state
from nodex.chain.errors import ChainError, InvalidBlockError
from nodex.chain.processing import Ancestor, BlockHashes
from nodex.chain.rules import ChainRules
from nodex.chain.uncles import select_uncles, still_useful
from nodex.primitives import UINT64_CEILING, Address, direct_init
from nodex.state.state import State
from nodex.structures.headers import Header
from nodex.structures.transactions import Transaction


class NotDueError(ChainError):
    """
    No block may be stamped on the tip yet: its parent's time plus one is
    beyond the network's drift limit from the clock.

    @ivar due: the local time from which a block can be stamped.
    """

    def __init__(self, due: int) -> None:
        super().__init__(f"the next block cannot be stamped before {due} (the network's drift limit)")
        self.due = due


@direct_init
@dataclass(frozen=True)
class BlockTime:
    """
    When a block made here should be stamped.

    @ivar wanted: the time its maker wants (the clock, plus an
        C{evm_increaseTime} offset, or a time set by C{evm_setNextBlockTimestamp}).
    @ivar now: the local clock when the request was made.
    @ivar limit: the network's drift limit in seconds
        (L{ChainRules.max_seconds_in_future}), L{None} for none.
    """

    wanted: int
    now: int
    limit: int | None = None

    def stamp(self, parent_timestamp: int) -> int:
        """
        The timestamp of a child of a block stamped C{parent_timestamp}: the
        wanted time, at least the parent's plus one, at most the drift
        limit ahead of the clock.

        @raise NotDueError: the parent's time plus one is already beyond the limit.
        """
        timestamp = max(self.wanted, parent_timestamp + 1)
        if self.limit is None:
            return timestamp
        latest = self.now + self.limit
        if timestamp <= latest:
            return timestamp
        if parent_timestamp + 1 > latest:
            raise NotDueError(parent_timestamp + 1 - self.limit)
        return latest


@direct_init
@dataclass(frozen=True)
class LoneAdmission:
    """
    Admit the only candidate of a block as the pool admits the transaction
    of a sender with nothing pooled (an automining node's block for one
    transaction, built before the transaction ever enters the pool).

    @ivar rules: the pool's admission rules.
    @ivar may_impersonate: the transaction carries the impersonation marker
        of a sender the dev chain impersonates now.
    """

    rules: AdmissionRules
    may_impersonate: bool = False


@direct_init
@dataclass(frozen=True)
class TransactionsBlock:
    """
    A block of pending transactions (the miner's).

    @ivar candidates: in the order to try them.
    @ivar uncle_candidates: side blocks the block may name as uncles (those
        the rules allow are chosen on the tip).
    @ivar empty: make the block even when it includes no candidate.
    @ivar admit: check the one candidate with the pool's rules first.
    """

    coinbase: Address
    time: BlockTime
    candidates: tuple[Transaction, ...] = ()
    extra_data: bytes = b""
    uncle_candidates: tuple[Header, ...] = ()
    empty: bool = True
    admit: LoneAdmission | None = None


@dataclass(frozen=True)
class EditsBlock:
    """
    A block whose state is the tip's with dev-chain edits (C{hardhat_setBalance} and its kin).
    """

    coinbase: Address
    time: BlockTime
    edits: tuple[StateEdit, ...]
    extra_data: bytes = b""


@dataclass(frozen=True)
class SnapshotBlock:
    """
    A block whose state is the tip's with a state snapshot laid over it
    (C{anvil_loadState}, L{nodex.chain.dev.state}).
    """

    coinbase: Address
    time: BlockTime
    snapshot: Any
    extra_data: bytes = b""


@dataclass(frozen=True)
class EmptyRun:
    """
    C{count} empty blocks, each on the one before (C{hardhat_mine}): the
    first at the request's time, the others C{interval} seconds apart.
    """

    coinbase: Address
    time: BlockTime
    count: int
    interval: int
    extra_data: bytes = b""


BlockRequest = TransactionsBlock | EditsBlock | SnapshotBlock | EmptyRun
"""What the node's own block makers may ask the importer for."""


@dataclass(frozen=True)
class Declined:
    """
    A request that made no block: its candidates could not be included (or
    the lone candidate is not executable yet).

    @ivar account: the lone candidate's sender nonce and balance, as read
        on the tip (the pool then queues the transaction), else L{None}.
    """

    account: tuple[int, int] | None = None


def build_requested(
    request: TransactionsBlock | EditsBlock | SnapshotBlock,
    parent: Header,
    state: State,
    block_hashes: BlockHashes,
    rules: ChainRules,
    ancestry: Callable[[Header], Sequence[Ancestor]],
) -> BuiltBlock | Declined:
    """
    Build the unsealed block a request asks for on C{parent}.

    @param state: the parent's state; changed into the block's (a snapshot
        block's state is another L{State} over it: the built block's
        outcome holds its nodes).
    @param ancestry: the ancestry of a header, for choosing uncles.
    @raise NotDueError: the block cannot be stamped yet.
    @raise TransactionRejectedError: the lone candidate breaks an admission rule.
    @raise nodex.chain.dev.state.SnapshotError: a malformed snapshot.
    """
    timestamp = request.time.stamp(parent.timestamp)
    if timestamp >= UINT64_CEILING:
        # Refused before an edit touches the state (build_block would
        # refuse it too, after them).
        raise InvalidBlockError(f"timestamp {timestamp} does not fit in 64 bits")
    if isinstance(request, TransactionsBlock):
        return _transactions_block(request, parent, state, block_hashes, rules, ancestry, timestamp)
    if isinstance(request, EditsBlock):
        for edit in request.edits:
            edit.apply(state)
        return build_block(
            parent, state, (), request.coinbase, timestamp, rules, block_hashes, request.extra_data
        )
    root, nodes, codes = load_state(state.read_node, parent.state_root, request.snapshot)
    loaded = State(
        lambda node_hash: nodes.get(node_hash) or state.read_node(node_hash),
        lambda code_hash: codes.get(code_hash) or state.read_code(code_hash),
        root,
    )
    built = build_block(parent, loaded, (), request.coinbase, timestamp, rules, block_hashes, request.extra_data)
    outcome = replace(built.outcome, nodes={**nodes, **built.outcome.nodes}, code={**codes, **built.outcome.code})
    return replace(built, outcome=outcome)


def _transactions_block(
    request: TransactionsBlock,
    parent: Header,
    state: State,
    block_hashes: BlockHashes,
    rules: ChainRules,
    ancestry: Callable[[Header], Sequence[Ancestor]],
    timestamp: int,
) -> BuiltBlock | Declined:
    """
    Build a block of the request's candidates (see L{build_requested}).
    """
    validated = None
    if request.admit is not None:
        (transaction,) = request.candidates
        admission = request.admit
        check_transaction(
            transaction, admission.rules, parent.gas_limit, parent.minimum_gas_price, admission.may_impersonate
        )
        sender = transaction.sender
        nonce, balance = state.get_nonce(sender), state.get_balance(sender)
        check_admission(transaction, nonce, balance, {}, admission.rules)
        if transaction.nonce != nonce:
            return Declined((nonce, balance))
        # The admission ran validate_transaction: the builder's would give
        # the same answer when the chain id is the same and the marker of
        # an impersonated sender is allowed in the block if it was here.
        if admission.rules.chain_id == rules.chain_id and (rules.impersonation or not admission.may_impersonate):
            validated = transaction
    uncles: list[Header] = []
    if request.uncle_candidates:
        useful = [header for header in request.uncle_candidates if still_useful(header, parent.number)]
        uncles = select_uncles(useful, ancestry(parent)) if useful else []
    built = build_block(
        parent, state, request.candidates, request.coinbase, timestamp, rules, block_hashes,
        request.extra_data, uncles, validated,
    )
    if not request.empty and not built.block.transactions:
        return Declined()
    return built


__all__ = [
    "BlockRequest",
    "BlockTime",
    "Declined",
    "EditsBlock",
    "EmptyRun",
    "LoneAdmission",
    "NotDueError",
    "SnapshotBlock",
    "TransactionsBlock",
    "build_requested",
]
