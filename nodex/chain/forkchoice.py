"""
Fork choice: which chain is canonical, and what changes when it changes.

The canonical chain is the one with the highest total difficulty; of two
equally heavy chains the one seen first stays (DESIGN §2).  When another
chain becomes the heaviest, L{find_reorganisation} walks both heads back to
their common ancestor, and L{write_canonical_changes} rewrites the canonical
index, the transaction lookup and the log index in the batch that stores
the new head, so that the change is atomic.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from nodex.chain.errors import ChainError
from nodex.db.kv import WriteBatch
from nodex.chain.logs.index import index_block, unindex_block
from nodex.db.schema import (
    delete_canonical_hash,
    delete_tx_lookup,
    write_canonical_hash,
    write_head_hash,
    write_tx_lookup,
)
from nodex.structures.blocks import Block
from nodex.structures.headers import Header

HeaderReader = Callable[[bytes], Header | None]
"""Reads a stored (or about to be stored) header by its hash."""


class MissingAncestorError(ChainError):
    """
    A header's ancestry is not stored back to a common ancestor: the store is damaged.
    """


def is_heavier(total_difficulty: int, head_total_difficulty: int) -> bool:
    """
    Whether a chain of C{total_difficulty} replaces the current head's:
    only when strictly heavier (the first seen wins a tie).
    """
    return total_difficulty > head_total_difficulty


@dataclass(frozen=True)
class Reorganisation:
    """
    How the canonical chain moves from one head to another.

    @ivar ancestor: the newest block both chains share.
    @ivar abandoned: the old chain's blocks above the ancestor, oldest first.
    @ivar adopted: the new chain's blocks above the ancestor, oldest first
        (the new head last).
    """

    ancestor: Header
    abandoned: tuple[Header, ...]
    adopted: tuple[Header, ...]


def _parent(read_header: HeaderReader, header: Header) -> Header:
    """
    The parent of C{header}.

    @raise MissingAncestorError: it is not stored.
    """
    parent = read_header(header.parent_hash)
    if parent is None:
        raise MissingAncestorError(
            f"block {header.number} 0x{header.hash.hex()} has no stored parent 0x{header.parent_hash.hex()}"
        )
    return parent


def find_reorganisation(read_header: HeaderReader, old_head: Header, new_head: Header) -> Reorganisation:
    """
    Walk C{old_head} and C{new_head} back to their common ancestor.

    @raise MissingAncestorError: a header on the way is not stored.
    """
    abandoned: list[Header] = []
    adopted: list[Header] = []
    old, new = old_head, new_head
    while old.number > new.number:
        abandoned.append(old)
        old = _parent(read_header, old)
    while new.number > old.number:
        adopted.append(new)
        new = _parent(read_header, new)
    while old.hash != new.hash:
        if old.number == 0:
            raise MissingAncestorError("the two chains do not share a genesis block")
        abandoned.append(old)
        adopted.append(new)
        old = _parent(read_header, old)
        new = _parent(read_header, new)
    return Reorganisation(old, tuple(reversed(abandoned)), tuple(reversed(adopted)))


def write_canonical_changes(
    batch: WriteBatch,
    ancestor: Header,
    abandoned: Sequence[Block],
    adopted: Sequence[Block],
    indexed_through: int | None = None,
) -> None:
    """
    Rewrite the canonical index, the transaction lookup, the log index and
    the head in C{batch}: the C{abandoned} blocks leave the canonical chain
    above C{ancestor} and the C{adopted} ones (oldest first, the new head
    last) take their place.

    @param indexed_through: how far the log index's bitmaps reach, if
        known (L{nodex.chain.logs.index.unindex_block}).
    """
    for block in abandoned:
        for transaction in block.transactions:
            delete_tx_lookup(batch, transaction.hash)
        delete_canonical_hash(batch, block.number)
        unindex_block(batch, block.header, indexed_through)
    for block in adopted:
        block_hash = block.hash
        for index, transaction in enumerate(block.transactions):
            write_tx_lookup(batch, transaction.hash, block_hash, index)
        write_canonical_hash(batch, block.number, block_hash)
        index_block(batch, block.header)
    write_head_hash(batch, adopted[-1].hash if adopted else ancestor.hash)


__all__ = [
    "HeaderReader",
    "MissingAncestorError",
    "Reorganisation",
    "find_reorganisation",
    "is_heavier",
    "write_canonical_changes",
]
