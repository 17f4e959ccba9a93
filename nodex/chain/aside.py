"""
Blocks kept aside by the importer (L4, pure): blocks whose parent is not
known yet (I{orphans}) and blocks stamped further ahead of the local clock
than the network allows (I{future blocks}), each kept until what they wait
for comes: the parent, or their time.

Whatever a peer sends, what is kept is bounded twice: in all (blocks and
bytes) and per source (a peer, a chain file, a miner), so that one source
cannot take the room of the others.  Past a bound the oldest block of the
source that holds the most goes first.  A block is kept only after the
checks it can pass without its parent (the seal, the network's minimum
difficulty: L{nodex.chain.importer}), and what leaves unused — pushed out,
or expired — is handed back with its source, so that the edge may count it
against the peer that sent it.
"""

import heapq
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum

from nodex.structures.blocks import Block


class SourceKind(Enum):
    """
    Where a block comes from.
    """

    LOCAL = "local"
    """Built and sealed on this node (its miner, a dev method)."""

    SUBMITTED = "submitted"
    """Built here as a template and sealed by a miner outside the writer
    (C{mnr_submit*}, C{eth_submitWork}, the CPU miner): its transactions came
    through this node's pool."""

    PEER = "peer"
    """Sent by a peer."""

    FILE = "file"
    """Read from a chain file (C{nodex import})."""


@dataclass(frozen=True)
class BlockSource:
    """
    The source of a block, as the importer's bounds and the edges' scoring see it.

    @ivar kind: where the block comes from.
    @ivar peer: the sending peer's node id, for C{PEER}.
    """

    kind: SourceKind
    peer: bytes | None = None

    @property
    def built_here(self) -> bool:
        """
        Whether this node built the block (its transactions came through
        its own pool: on a dev chain they may carry the impersonation marker).
        """
        return self.kind in (SourceKind.LOCAL, SourceKind.SUBMITTED)


LOCAL = BlockSource(SourceKind.LOCAL)
SUBMITTED = BlockSource(SourceKind.SUBMITTED)
FILE = BlockSource(SourceKind.FILE)


def from_peer(node_id: bytes) -> BlockSource:
    """
    The source of the blocks a peer sends.
    """
    return BlockSource(SourceKind.PEER, bytes(node_id))


@dataclass(frozen=True)
class Bounds:
    """
    How much one kind of kept-aside block may take.

    @ivar blocks: blocks in all.
    @ivar size: bytes in all (the blocks' RLP).
    @ivar blocks_per_source: blocks of one source.
    @ivar size_per_source: bytes of one source.
    @ivar seconds: how long a block may wait before it expires (L{None}: until pushed out).
    """

    blocks: int
    size: int
    blocks_per_source: int
    size_per_source: int
    seconds: int | None = None


ORPHAN_BOUNDS = Bounds(256, 32 << 20, 64, 8 << 20, seconds=600)
"""Blocks waiting for their parent: 256 and 32 MiB in all, a quarter of
that per source, each for at most ten minutes (a sync brings a missing
parent within seconds)."""

FUTURE_BOUNDS = Bounds(256, 32 << 20, 64, 8 << 20)
"""Blocks waiting for their time: 256 and 32 MiB in all, a quarter per
source; they wait at most L{nodex.chain.importer.HOLD_SECONDS}, since
later blocks are not kept."""


@dataclass(order=True)
class Held:
    """
    A block kept aside.

    @ivar due: when it may be imported (future blocks), else 0.
    @ivar order: arrival order (older first).
    @ivar block: the block.
    @ivar source: who sent it.
    @ivar size: its RLP's length.
    @ivar since: the local time it was kept at.
    """

    due: int
    order: int
    block: Block = field(compare=False)
    source: BlockSource = field(compare=False)
    size: int = field(compare=False)
    since: int = field(compare=False)


class HeldBlocks:
    """
    Kept-aside blocks of one kind, within their L{Bounds}.
    """

    def __init__(self, bounds: Bounds) -> None:
        self.bounds = bounds
        self._held: OrderedDict[bytes, Held] = OrderedDict()
        self._children: dict[bytes, set[bytes]] = {}
        self._due: list[Held] = []
        self._by_source: dict[BlockSource, tuple[int, int]] = {}
        self._size = 0
        self._arrivals = 0

    def __len__(self) -> int:
        return len(self._held)

    def __contains__(self, block_hash: object) -> bool:
        return block_hash in self._held

    def __iter__(self) -> Iterator[Held]:
        return iter(list(self._held.values()))

    @property
    def size(self) -> int:
        """
        The bytes held.
        """
        return self._size

    def held_by(self, source: BlockSource) -> tuple[int, int]:
        """
        How many blocks and bytes C{source} has here.
        """
        return self._by_source.get(source, (0, 0))

    def add(self, block: Block, source: BlockSource, now: int, due: int = 0) -> list[Held]:
        """
        Keep C{block} (a block kept already stays as it is).

        @param now: the local time.
        @param due: when a future block may be imported.
        @return: the blocks pushed out to make room (C{block} itself when
            it is larger than a source may hold).
        """
        block_hash = block.hash
        if block_hash in self._held:
            return []
        self._arrivals += 1
        entry = Held(due, self._arrivals, block, source, block.size, now)
        bounds = self.bounds
        if entry.size > bounds.size_per_source:
            return [entry]
        self._held[block_hash] = entry
        self._children.setdefault(block.header.parent_hash, set()).add(block_hash)
        if due:
            heapq.heappush(self._due, entry)
        self._count(source, 1, entry.size)
        evicted = []
        while True:
            count, size = self._by_source[source]
            if count <= bounds.blocks_per_source and size <= bounds.size_per_source:
                break
            evicted.append(self._remove(self._oldest_of(source)))
        while len(self._held) > bounds.blocks or self._size > bounds.size:
            evicted.append(self._remove(self._oldest_of(self._largest_source())))
        return evicted

    def pop_children(self, parent_hash: bytes) -> list[Held]:
        """
        Take the kept blocks whose parent is C{parent_hash}, oldest first.
        """
        hashes = self._children.get(parent_hash, ())
        found = sorted((self._held[block_hash] for block_hash in hashes), key=lambda entry: entry.order)
        return [self._remove(entry) for entry in found]

    def pop_due(self, now: int) -> list[Held]:
        """
        Take the kept blocks due at C{now}, earliest first.
        """
        due = []
        while self._due and self._due[0].due <= now:
            entry = heapq.heappop(self._due)
            if self._held.get(entry.block.hash) is entry:
                due.append(self._remove(entry))
        return due

    def due_of(self, block_hash: bytes) -> int | None:
        """
        When the kept block C{block_hash} is due (L{None}: not kept, or kept
        without a due time).
        """
        entry = self._held.get(block_hash)
        return entry.due if entry is not None and entry.due else None

    def next_due(self) -> int | None:
        """
        When the earliest kept block is due, or L{None}.
        """
        while self._due and self._held.get(self._due[0].block.hash) is not self._due[0]:
            heapq.heappop(self._due)
        return self._due[0].due if self._due else None

    def expire(self, now: int) -> list[Held]:
        """
        Take the blocks kept longer than the bounds allow.
        """
        seconds = self.bounds.seconds
        if seconds is None:
            return []
        # Oldest first (the dict keeps arrival order): the scan stops at the
        # first block still in time, so a call costs what it expires, not
        # what is held (it runs on every import).
        old = []
        for entry in self._held.values():
            if now - entry.since < seconds:
                break
            old.append(entry)
        return [self._remove(entry) for entry in old]

    def _oldest_of(self, source: BlockSource) -> Held:
        """
        The oldest block C{source} has here.
        """
        return next(entry for entry in self._held.values() if entry.source == source)

    def _largest_source(self) -> BlockSource:
        """
        The source that holds the most bytes.
        """
        return max(self._by_source, key=lambda source: self._by_source[source][1])

    def _remove(self, entry: Held) -> Held:
        """
        Forget a kept block.
        """
        block_hash = entry.block.hash
        del self._held[block_hash]
        parent_hash = entry.block.header.parent_hash
        siblings = self._children.get(parent_hash)
        if siblings is not None:
            siblings.discard(block_hash)
            if not siblings:
                del self._children[parent_hash]
        self._count(entry.source, -1, -entry.size)
        return entry

    def _count(self, source: BlockSource, blocks: int, size: int) -> None:
        """
        Add to a source's counts (and the total bytes).
        """
        count, held = self._by_source.get(source, (0, 0))
        count += blocks
        held += size
        self._size += size
        if count:
            self._by_source[source] = (count, held)
        else:
            self._by_source.pop(source, None)


__all__ = [
    "FILE",
    "FUTURE_BOUNDS",
    "LOCAL",
    "ORPHAN_BOUNDS",
    "SUBMITTED",
    "BlockSource",
    "Bounds",
    "Held",
    "HeldBlocks",
    "SourceKind",
    "from_peer",
]
