"""
The time of the blocks this node makes (L5): one policy for the miner, the
merged miners' templates, the pending block and the dev chain's blocks.

A block is stamped with the clock, moved by the dev chain's controls
(C{evm_increaseTime} adds an offset, C{evm_setNextBlockTimestamp} sets the
next block's time), at least its parent's time plus one, and — on a network
with a drift limit (L{nodex.chain.rules.ChainRules.max_seconds_in_future}) —
never further ahead of the clock than the limit: no follower with a correct
clock refuses a block of this node's.  When the parent's time plus one is
already at the limit (a burst of blocks a second), the next block waits
until it is due.  Regtest has no limit: its developer moves its clock at will.
"""

from twisted.internet.interfaces import IReactorTime

from nodex.chain.building.making import BlockTime, NotDueError
from nodex.chain.rules import ChainRules
from nodex.primitives import UINT64_CEILING
from nodex.api.errors import DevChainInputError


class BlockClock:
    """
    The time policy of one node's blocks.

    @ivar offset: the seconds C{evm_increaseTime} added for the next block.
    @ivar next_timestamp: the time C{evm_setNextBlockTimestamp} set for the
        next block, or L{None}.
    """

    def __init__(self, clock: IReactorTime, rules: ChainRules, lasting_shift: bool = False) -> None:
        """
        @param clock: the local clock.
        @param rules: the network's rules (their drift limit).
        @param lasting_shift: the Ethereum conventions' time (Hardhat's and
            Anvil's): the C{evm_increaseTime} offset lasts for every later
            block, a set time is taken exactly (no offset added) and time
            goes on from it; by default (the reference's) both are for the
            next block only (L{consume}).
        """
        self._clock = clock
        self._limit = rules.max_seconds_in_future
        self._lasting = lasting_shift
        self.offset = 0
        self.next_timestamp: int | None = None

    @property
    def limit(self) -> int | None:
        """
        The network's drift limit in seconds, or L{None}.
        """
        return self._limit

    def now(self) -> int:
        """
        The local clock, in whole seconds.
        """
        return int(self._clock.seconds())

    def wanted(self) -> int:
        """
        The time the next block should carry, before the parent's and the
        limit's bounds: the set time or the clock, plus the offset.
        """
        if self.next_timestamp is None:
            return self.now() + self.offset
        if self._lasting:
            return self.next_timestamp
        return self.next_timestamp + self.offset

    def time(self) -> BlockTime:
        """
        The L{BlockTime} of the next block (the offset and the set time stay
        until L{consume}).
        """
        return BlockTime(self.wanted(), self.now(), self._limit)

    def plain_time(self) -> BlockTime:
        """
        The L{BlockTime} of a block that takes no offset or set time (the
        dev chain's state edits leave them to the next mined block).
        """
        now = self.now()
        return BlockTime(now, now, self._limit)

    def next_stamp(self, parent_timestamp: int) -> int:
        """
        The timestamp of a block on a parent stamped C{parent_timestamp} if
        it were made now (a merged miner's template, the pending block):
        as L{BlockTime.stamp}, but when the parent is already at the drift
        limit, its time plus one (such a block is held for a second or so
        once sealed, not refused).
        """
        try:
            return self.time().stamp(parent_timestamp)
        except NotDueError:
            return parent_timestamp + 1

    def consume(self) -> None:
        """
        A block took the offset and the set time: later blocks follow the
        clock again; with a lasting shift the offset stays, and after a set
        time the clock goes on from it.
        """
        if self._lasting:
            if self.next_timestamp is not None:
                self.offset = self.next_timestamp - self.now()
            self.next_timestamp = None
            return
        self.offset = 0
        self.next_timestamp = None

    def set_chain_time(self, timestamp: int) -> None:
        """
        Make the next blocks' time go on from C{timestamp} now: the offset
        becomes the difference, any set time is forgotten (C{evm_revert}
        under the Ethereum conventions puts a reverted chain back to the
        time of its snapshot, as Hardhat does).
        """
        self.offset = timestamp - self.now()
        self.next_timestamp = None

    def wait_before(self, parent_timestamp: int) -> float:
        """
        How many seconds must pass before a child of a block stamped
        C{parent_timestamp} can be stamped within the drift limit (0: now).
        """
        if self._limit is None:
            return 0.0
        due = parent_timestamp + 1 - self._limit
        return max(0.0, due - self._clock.seconds())

    def increase(self, seconds: int) -> int:
        """
        Add C{seconds} (when positive) to the next block's offset
        (C{evm_increaseTime}).

        @return: the accumulated offset.
        @raise DevChainInputError: the next block's time would not fit in 64
            bits, or would be beyond the network's drift limit.
        """
        if seconds > 0:
            self._check(self.now() if self.next_timestamp is None else self.next_timestamp, self.offset + seconds)
            self.offset += seconds
        return self.offset

    def set_next(self, timestamp: int) -> None:
        """
        Give the next block C{timestamp} (plus the offset)
        (C{evm_setNextBlockTimestamp}).

        @raise DevChainInputError: as L{increase}.
        """
        self._check(timestamp, self.offset)
        self.next_timestamp = timestamp

    def _check(self, base: int, offset: int) -> None:
        """
        Refuse a next-block time that does not fit a header's 64 bits, or
        that followers on a network with a drift limit would hold back.

        @raise DevChainInputError: it would.
        """
        if base + offset >= UINT64_CEILING:
            raise DevChainInputError(f"the next block's timestamp {base} + {offset} seconds would not fit in 64 bits")
        if self._limit is not None and base + offset > self.now() + self._limit:
            raise DevChainInputError(
                f"the next block's timestamp {base} + {offset} seconds would be more than {self._limit} s ahead"
                f" of the clock, which this network's nodes do not accept (only regtest lets its clock be moved"
                " further)"
            )


__all__ = ["BlockClock"]
