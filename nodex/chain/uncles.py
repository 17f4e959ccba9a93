"""
Choosing the uncles of a new block (DESIGN §2).

A block may name up to L{MAX_UNCLES} headers of side-chain blocks whose
parents are among its L{MAX_UNCLE_DEPTH} most recent ancestors; they add
their difficulty to the block's cumulative difficulty (no reward).
L{select_uncles} picks, from the side blocks a node knows, those that
L{nodex.chain.processing.validate_uncles} will accept, nearest first.
"""

from collections.abc import Iterable, Sequence

from nodex.chain.processing import Ancestor
from nodex.chain.rules import MAX_UNCLE_DEPTH, MAX_UNCLES
from nodex.structures.headers import Header


def select_uncles(candidates: Iterable[Header], ancestry: Sequence[Ancestor]) -> list[Header]:
    """
    The candidates a child of C{ancestry[0]} may include as uncles.

    A candidate qualifies when it is the child of one of the
    L{MAX_UNCLE_DEPTH} most recent ancestors, is not itself an ancestor,
    and was not already included by one of them; duplicates count once.
    Higher candidates come first (they are the likelier to be still
    includable later by nobody else), at most L{MAX_UNCLES}.

    @param ancestry: the parent of the new block first, then its ancestors
        (as L{nodex.chain.processing.validate_uncles} takes them).
    """
    recent = ancestry[:MAX_UNCLE_DEPTH]
    ancestors = {ancestor.header.hash: ancestor.header for ancestor in recent}
    included: set[bytes] = set().union(*(ancestor.uncle_hashes for ancestor in recent)) if recent else set()
    chosen: dict[bytes, Header] = {}
    for header in candidates:
        header_hash = header.hash
        if header_hash in ancestors or header_hash in included or header_hash in chosen:
            continue
        parent = ancestors.get(header.parent_hash)
        if parent is None or parent.number + 1 != header.number:
            continue
        chosen[header_hash] = header
    ordered = sorted(chosen.values(), key=lambda header: -header.number)
    return ordered[:MAX_UNCLES]


def still_useful(header: Header, head_number: int) -> bool:
    """
    Whether a side block could still be an uncle of a block on a head at C{head_number}.
    """
    return head_number + 1 - header.number <= MAX_UNCLE_DEPTH


__all__ = ["select_uncles", "still_useful"]
