"""
The uncle candidates of the blocks this node makes (L5): the side-chain
blocks it has heard of (DESIGN §2).

L{SideBlocks} watches the chain: a valid block stored off the canonical
chain, from any source, and a block a reorganisation abandoned, may be
named as an uncle by a later block.  The miner's blocks, the merged miners'
templates and the pending block take their candidates from here; the
block maker chooses those the rules allow on the parent it builds on.
"""

from collections import OrderedDict

from nodex.api.chain import ChainEvent, IChainService
from nodex.structures.blocks import Block
from nodex.structures.headers import Header

MAX_SIDE_BLOCKS = 64
"""The most side-chain headers kept as uncle candidates."""


class SideBlocks:
    """
    Side-chain headers, newest last, at most L{MAX_SIDE_BLOCKS}.
    """

    def __init__(self, chain: IChainService, limit: int = MAX_SIDE_BLOCKS) -> None:
        """
        @param chain: whose side blocks and reorganisations are watched.
        """
        self._limit = limit
        self._side: OrderedDict[bytes, Header] = OrderedDict()
        # Read by the threads that build blocks: a tuple replaced whole on
        # the reactor thread, never a dict changing under their iteration.
        self._candidates: tuple[Header, ...] = ()
        chain.add_observer(self._chain_changed)
        chain.add_side_observer(self._side_block)

    def candidates(self) -> tuple[Header, ...]:
        """
        The side-chain headers known now, oldest first.
        """
        return self._candidates

    def _chain_changed(self, event: ChainEvent) -> None:
        """
        Blocks a reorganisation abandoned are side blocks now; a rewind deletes them.
        """
        if event.rewound:
            return
        for block in event.abandoned:
            self._remember(block.header)

    def _side_block(self, block: Block) -> None:
        """
        A valid block stored off the canonical chain.
        """
        self._remember(block.header)

    def _remember(self, header: Header) -> None:
        """
        Keep a side-chain header, forgetting the oldest past the limit.
        """
        self._side[header.hash] = header
        while len(self._side) > self._limit:
            self._side.popitem(last=False)
        self._candidates = tuple(self._side.values())


__all__ = ["MAX_SIDE_BLOCKS", "SideBlocks"]
