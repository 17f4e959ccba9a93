"""
The chain as the edges see it: reads (L{IChainService}), the writing half the
block makers are given (L{IChainWriter}), batch reads for peers (L{IBlockSource}),
raw consensus data (L{IRawChainData}), and the value types they exchange.
"""

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from twisted.internet.defer import Deferred
from zope.interface import Attribute, Interface

from nodex.chain.aside import BlockSource, SourceKind, from_peer
from nodex.chain.bridge import BridgeState
from nodex.chain.importer import ChainEvent, ChainHead, Imported, ImportOutcome, ImportResult, Unused
from nodex.chain.building.making import BlockRequest, LoneAdmission
from nodex.primitives import Address, Hash32, direct_init
from nodex.structures.blocks import Block
from nodex.structures.headers import Header
from nodex.structures.receipts import Receipt
from nodex.structures.transactions import Transaction

__all__ = [
    "BadBlock",
    "BlockRequest",
    "BlockSource",
    "BridgeState",
    "ChainEvent",
    "ChainHead",
    "from_peer",
    "IBlockSource",
    "IChainService",
    "IChainWriter",
    "IFollowUps",
    "Imported",
    "IPeerChain",
    "ImportOutcome",
    "ImportResult",
    "IRawChainData",
    "LoneAdmission",
    "ReceiptView",
    "SourceKind",
    "TransactionLocation",
    "Unused",
]


@direct_init
@dataclass(frozen=True)
class TransactionLocation:
    """
    A transaction of the canonical chain and where it sits.
    """

    transaction: Transaction
    block_hash: Hash32
    block_number: int
    index: int


@dataclass(frozen=True)
class BadBlock:
    """
    A block the importer refused (C{debug_getBadBlocks}).

    @ivar reason: the rule it broke.
    """

    block: Block
    reason: str


@direct_init
@dataclass(frozen=True)
class ReceiptView:
    """
    Everything a receipt answer needs, gathered in one read.

    @ivar gas_used: the gas this transaction alone used (its cumulative gas
        minus the previous receipt's).
    @ivar first_log_index: the block-wide index of this receipt's first log.
    @ivar contract_address: the created contract, for a creation.
    @ivar effective_gas_price: what the sender paid per gas.
    """

    receipt: Receipt
    location: TransactionLocation
    gas_used: int
    first_log_index: int
    contract_address: Address | None
    effective_gas_price: int


class IChainService(Interface):
    """
    The chain: blocks, transactions and receipts, their import and the head.
    """

    chain_id = Attribute("The EIP-155 chain id (int).")
    head = Attribute("The current L{ChainHead}; kept in memory, read on the reactor thread.")
    rules = Attribute(
        "The network's L{nodex.chain.rules.ChainRules} (the RPC edge reads the C{safe} and C{finalized} depths)."
    )

    def get_block_by_hash(block_hash: bytes) -> "Deferred[Block | None]":
        """
        Any stored block (canonical or not) by hash, or L{None}.
        """

    def get_block_by_number(number: int) -> "Deferred[Block | None]":
        """
        The canonical block at C{number}, or L{None} above the head.
        """

    def get_header_by_hash(block_hash: bytes) -> "Deferred[Header | None]":
        """
        Any stored header (canonical or not) by hash, or L{None}.
        """

    def get_total_difficulty(block_hash: bytes) -> "Deferred[int | None]":
        """
        The total difficulty up to a stored block, or L{None}.
        """

    def is_canonical(block_hash: bytes) -> "Deferred[bool]":
        """
        Whether a block is on the canonical chain.
        """

    def get_transaction(tx_hash: bytes) -> "Deferred[TransactionLocation | None]":
        """
        A transaction of the canonical chain by hash, or L{None}.
        """

    def get_receipt(tx_hash: bytes) -> "Deferred[ReceiptView | None]":
        """
        The receipt of a canonical transaction, or L{None}.
        """

    def get_block_receipts(block_hash: bytes) -> "Deferred[list[ReceiptView] | None]":
        """
        The receipts of a stored block in transaction order, or L{None}.
        """

    def get_block_fees(block_hash: bytes) -> "Deferred[list[tuple[int, int]] | None]":
        """
        The effective gas price and the gas used of each transaction of a
        stored block, in transaction order, or L{None} (C{eth_feeHistory}'s
        rewards: the two fields of L{get_block_receipts}' views it reads,
        without making the views).
        """

    def bad_blocks() -> "list[BadBlock]":
        """
        The last blocks the importer refused since the node started, oldest
        first, each with the rule it broke.
        """

    def import_blocks(blocks: "Sequence[Block]", source: BlockSource) -> "Deferred[list[ImportOutcome]]":
        """
        Import blocks from outside in order (each in its own atomic batch),
        stopping after the first invalid one; a block whose parent is
        unknown is kept aside, one ahead of the clock held until it is due.

        @param source: where they come from (a peer's node id bounds what it
            may have kept aside; a template built here may carry a dev
            chain's impersonation marker, blocks from peers and files never).
        @return: a Deferred firing with an L{ImportOutcome} per block
            imported, kept or refused, the refused one last.
        """

    def add_observer(observer: "Callable[[ChainEvent], None]") -> None:
        """
        Call C{observer} on the reactor thread after every change of the canonical chain.
        """

    def add_side_observer(observer: "Callable[[Block], None]") -> None:
        """
        Call C{observer} on the reactor thread with every valid block stored
        off the canonical chain (C{IMPORTED_NOT_BEST}): the uncle candidates.
        """

    def add_unused_observer(observer: "Callable[[Unused], None]") -> None:
        """
        Call C{observer} on the reactor thread with every block kept aside
        that left without being imported (its parent never came, no room,
        invalid once due).
        """

    def rewind(number: int) -> "Deferred[None]":
        """
        Make the canonical block at C{number} the head, forgetting the blocks above it.
        """


class IChainWriter(Interface):
    """
    The writing half of the chain, as the node's own block makers (the
    miner, the dev chain, the work service) see it: every write goes
    through the one importer on the writer thread.
    """

    head = Attribute("The current L{ChainHead} (reactor thread).")
    rules = Attribute("The network's L{nodex.chain.rules.ChainRules}.")

    def make(request: BlockRequest, small: bool = False, after_answer: bool = False) -> "Deferred[Imported]":
        """
        Build the block C{request} asks for on the tip, seal it with the
        built-in solver and store it, in one writer job.

        @param after_answer: the observers of the block may be told once
            the answer of the request being served has been sent
            (L{IFollowUps}); the caller and its callbacks read nothing they change.
        @return: a Deferred firing with the published step (its C{block}
            L{None} when the request made none).
        """

    def build(request: BlockRequest) -> "Deferred[tuple[Any, Any]]":
        """
        Build the unsealed block C{request} asks for on the tip without
        storing it (the first half of a block sealed elsewhere).

        @return: a Deferred firing with the built block (or the L{nodex.chain.building.making.Declined}
            answer) and the state it was built on.
        """

    def store_built(block: Block, outcome: Any, state: Any = None) -> "Deferred[ImportOutcome]":
        """
        Store a block L{build} made, once sealed.
        """

    def import_blocks(blocks: "Sequence[Block]", source: BlockSource) -> "Deferred[list[ImportOutcome]]":
        """
        Import blocks from outside (a miner's submission of a template built here, say).
        """

    def rewind(number: int) -> "Deferred[None]":
        """
        Make the canonical block at C{number} the head, deleting the canonical blocks above it.
        """

    def set_rules(rules: Any) -> "Deferred[None]":
        """
        Replace the network's rules for the blocks built and imported from now on.
        """


class IFollowUps(Interface):
    """
    Work that follows an answer: bookkeeping a request caused (the chain's
    observers of the block an automined transaction made, say) that changes
    nothing in the answer, put off until the answer has been handed to the
    transport, yet done before the reactor reads another request
    (C{docs/chain-service.md}, "Answer first").

    The edge that answers holds it (L{hold}) while it computes and sends an
    answer on the reactor thread, and releases it (L{release}) right after
    the send; what the services put off (L{later}) in between runs then.
    """

    holding = Attribute("Whether work is being put off now (an answer is being computed).")

    def hold() -> None:
        """
        Put off the work given to L{later} until the matching L{release}.
        """

    def release() -> None:
        """
        End a L{hold}: when no other is open, run the work put off, in order.
        """

    def later(function: "Callable[..., object]", *args: object) -> None:
        """
        Call C{function(*args)} when the hold ends, or now when none is open.
        """

    def run_now() -> None:
        """
        Run the work put off so far, even while held: before another request
        of the same hold (the next element of a batch) is started.
        """


class IBlockSource(Interface):
    """
    Batch reads of the chain for serving peers: one reader job per request.
    """

    def get_headers_by_number(numbers: "list[int]") -> "Deferred[list[Header | None]]":
        """
        The canonical headers at C{numbers}, in that order (L{None} above the head).
        """

    def get_blocks_by_hash(block_hashes: "Iterable[bytes]") -> "Deferred[list[Block | None]]":
        """
        Stored blocks by hash, in the order asked (L{None} for the unknown).
        """


class IPeerChain(IChainService, IBlockSource):
    """
    The chain as the peer network uses it: its head and observers, reads,
    the import path of peers' blocks (L{IChainService}), and the batch reads
    that serve peers' requests (L{IBlockSource}).
    """


class IRawChainData(Interface):
    """
    The chain's data in its consensus encodings, and the bridge account's
    state: what the C{nodex} module and C{eth_bridgeState} answer.
    """

    def get_raw_header(block_hash: bytes) -> "Deferred[bytes | None]":
        """
        The RLP of a stored header whose Keccak-256 is C{block_hash}, or L{None}.
        """

    def get_raw_receipt(tx_hash: bytes) -> "Deferred[bytes | None]":
        """
        The consensus encoding of a canonical transaction's receipt (its
        value in the receipts trie), or L{None}.
        """

    def get_receipt_trie_nodes(block_hash: bytes, tx_hash: bytes) -> "Deferred[list[bytes] | None]":
        """
        The receipts-trie nodes proving a transaction's receipt under the
        block's receiptsRoot, the receipt's node first and the root last;
        L{None} when the transaction is not in the block.

        @return: a Deferred failing with L{BlockNotFoundError} for an unknown block.
        """

    def get_bridge_state() -> "Deferred[BridgeState]":
        """
        The bridge account's state at the head (L{nodex.chain.bridge}).
        """
