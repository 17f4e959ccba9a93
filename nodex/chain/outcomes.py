"""
What the importer tells of each block (L4): the outcome of an import, the
change of the canonical chain to publish, and the head.  Shared by the
importer, the services above it and, through C{nodex.api}, the edges.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from nodex.chain.aside import LOCAL, BlockSource
from nodex.chain.building.builder import BuiltBlock
from nodex.chain.building.making import Declined
from nodex.primitives import Hash32, direct_init
from nodex.structures.blocks import Block
from nodex.structures.headers import Header
from nodex.structures.receipts import Receipt

HOLD_SECONDS = 7200
"""
How far ahead of the local clock a block may be stamped and still be held
until it is due (the plausible drift of an unsynchronised clock: Bitcoin's
two hours).  A block further ahead is dropped, not refused: its sender is
not punished for its clock (C{docs/chain-service.md}).
"""


class ImportResult(Enum):
    """
    What became of a block given to the importer: the reference's names
    (§3.5), and two of nodex's own for blocks ahead of the clock.
    """

    IMPORTED_BEST = "IMPORTED_BEST"
    """Stored, and the head of the canonical chain."""

    IMPORTED_NOT_BEST = "IMPORTED_NOT_BEST"
    """Stored on a side chain."""

    EXIST = "EXIST"
    """Stored already, or already kept aside."""

    NO_PARENT = "NO_PARENT"
    """Its parent is unknown: kept aside until the parent arrives."""

    INVALID_BLOCK = "INVALID_BLOCK"
    """It breaks a rule (the outcome's reason says which)."""

    FUTURE_BLOCK = "FUTURE_BLOCK"
    """Stamped beyond the network's drift limit from the local clock, within
    L{HOLD_SECONDS}: held, and imported when it is due."""

    DROPPED = "DROPPED"
    """Not kept: stamped more than L{HOLD_SECONDS} ahead of the local clock."""

    @property
    def stored(self) -> bool:
        """
        Whether the block is now stored (on any chain).
        """
        return self in (ImportResult.IMPORTED_BEST, ImportResult.IMPORTED_NOT_BEST)


@direct_init
@dataclass(frozen=True)
class ChainHead:
    """
    The best block as the node knows it now.

    @ivar header: the head block's header.
    @ivar total_difficulty: the chain's total difficulty up to and including it.
    """

    header: Header
    total_difficulty: int


@direct_init
@dataclass(frozen=True)
class ChainEvent:
    """
    What one change of the canonical chain did, oldest blocks first.

    @ivar adopted: blocks that became canonical (the new head last).
    @ivar abandoned: blocks that left the canonical chain in a reorganisation.
    @ivar adopted_receipts: the receipts of each adopted block, in order.
    @ivar abandoned_receipts: the receipts of each abandoned block, in order.
    @ivar rewound: C{True} when the change is a rewind (C{evm_revert},
        C{evm_reset}): the abandoned blocks are deleted, not replaced, and
        their transactions must not go back to the pool (which the caller
        clears).
    """

    adopted: tuple[Block, ...]
    abandoned: tuple[Block, ...] = ()
    adopted_receipts: tuple[tuple[Receipt, ...], ...] = ()
    abandoned_receipts: tuple[tuple[Receipt, ...], ...] = ()
    rewound: bool = False

    def receipts_of_adopted(self, index: int) -> tuple[Receipt, ...]:
        """
        The receipts of the adopted block at C{index}, or none if the event lacks them.
        """
        return self.adopted_receipts[index] if index < len(self.adopted_receipts) else ()

    def receipts_of_abandoned(self, index: int) -> tuple[Receipt, ...]:
        """
        The receipts of the abandoned block at C{index}, or none if the event lacks them.
        """
        return self.abandoned_receipts[index] if index < len(self.abandoned_receipts) else ()


@dataclass(frozen=True)
class ImportOutcome:
    """
    The outcome of one block of an import, as the edges report it.

    @ivar block_hash: the block's hash.
    @ivar result: what became of it.
    @ivar reason: the broken rule of an C{INVALID_BLOCK}, why a block was
        held or dropped, else L{None}.
    @ivar source: where the block came from.
    @ivar due: for a block held until it is due (C{FUTURE_BLOCK}, or
        C{EXIST} for one held already), when it is due (local time, in
        seconds); else L{None}.
    """

    block_hash: Hash32
    result: ImportResult
    reason: str | None = None
    source: BlockSource = LOCAL
    due: int | None = None


@direct_init
@dataclass(frozen=True)
class Imported:
    """
    What one step of the importer did, for the writer lane to publish.

    @ivar result: what became of the block the step was about; L{None}
        when nothing was stored (a request that made no block, a rewind).
    @ivar block: the block stored, if one was (the last of a run).
    @ivar receipts: its receipts.
    @ivar head: the new head, when the head moved.
    @ivar event: the change of the canonical chain, when there was one.
    @ivar reason: why a block was refused, held or dropped.
    @ivar block_hash: the hash of the block the step was about.
    @ivar source: where that block came from.
    @ivar built: for a made block, the builder's account of it (the
        candidates it left out); for a request that made none, why.
    @ivar refused: the block refused, for C{INVALID_BLOCK}.
    @ivar due: when a held block is due (L{ImportOutcome.due}).
    """

    result: ImportResult | None
    block: Block | None = None
    receipts: tuple[Receipt, ...] = ()
    head: ChainHead | None = None
    event: ChainEvent | None = None
    reason: str | None = None
    block_hash: Hash32 | None = None
    source: BlockSource = LOCAL
    built: BuiltBlock | Declined | None = None
    refused: Block | None = None
    due: int | None = None

    def outcome(self) -> ImportOutcome:
        """
        The edge's view of this step (for imports).
        """
        assert self.block_hash is not None and self.result is not None
        return ImportOutcome(self.block_hash, self.result, self.reason, self.source, self.due)


@dataclass(frozen=True)
class Unused:
    """
    A block kept aside that left without being imported.

    @ivar block_hash: its hash.
    @ivar source: who sent it.
    @ivar reason: why it left (its parent never came, no room, an invalid
        block once due).
    """

    block_hash: Hash32
    source: BlockSource
    reason: str


def outcomes(steps: Sequence[Imported]) -> list[ImportOutcome]:
    """
    The edge's view of import steps.
    """
    return [step.outcome() for step in steps]


__all__ = [
    "HOLD_SECONDS",
    "ChainEvent",
    "ChainHead",
    "ImportOutcome",
    "ImportResult",
    "Imported",
    "Unused",
    "outcomes",
]
