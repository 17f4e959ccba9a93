"""
Whether the local clock looks wrong (L5): a node whose clock runs slow
sees every peer's new blocks stamped ahead of it, holds them as future
blocks and falls behind; an operator should hear of it once, plainly.

L{ClockCheck} is told how far ahead of the local clock each new block from
a peer is stamped; when most of the recent ones, from more than one peer or
several from one, are ahead by more than L{AHEAD_SECONDS}, it warns once.
A block is stamped by its miner's clock when it is made and arrives within
seconds, and no nodex node stamps a block beyond the network's drift
limit, so on a network of honest peers a block that arrives further ahead
than the limit means that this node's clock is behind (or that one peer's
is ahead: hence "most").
"""

from collections import deque

from twisted.logger import Logger


WINDOW = 16
"""The recent new blocks from peers that are looked at."""

LEAST_BLOCKS = 4
"""How many of them must be known before the check says anything."""


class ClockCheck:
    """
    Watches the stamps of peers' new blocks against the local clock, and warns once.

    @ivar warned: whether the warning was given.
    """

    log = Logger()

    def __init__(self, ahead_seconds: int, window: int = WINDOW) -> None:
        """
        @param ahead_seconds: how far ahead of the local clock a new block
            must be stamped to count as a sign of a slow clock (the
            network's drift limit).
        @param window: how many recent blocks are looked at.
        """
        self._ahead_seconds = ahead_seconds
        self._recent: deque[tuple[bytes, int]] = deque(maxlen=window)
        self.warned = False

    def observe(self, peer: bytes, ahead: int) -> None:
        """
        A new block from C{peer} is stamped C{ahead} seconds after the local clock.
        """
        self._recent.append((peer, ahead))
        if self.warned or len(self._recent) < LEAST_BLOCKS:
            return
        early = [(sender, seconds) for sender, seconds in self._recent if seconds > self._ahead_seconds]
        if 2 * len(early) <= len(self._recent):
            return
        peers = {sender for sender, _ in early}
        self.warned = True
        self.log.warn(
            "this node's clock looks slow: {early} of the last {count} new blocks from {peers} peer(s) are stamped"
            " a median {median} s ahead of it; blocks ahead of the clock by more than the network's drift limit"
            " wait until they are due, so the node falls behind: check the machine's time synchronisation (NTP)",
            early=len(early),
            count=len(self._recent),
            peers=len(peers),
            median=sorted(seconds for _, seconds in early)[len(early) // 2],
        )


__all__ = ["ClockCheck"]
