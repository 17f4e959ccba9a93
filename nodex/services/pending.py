"""
The pending block (L5): the block the miner would build now (DESIGN §6:
C{pending} always means the block the miner would build next).

It is built as the miner's block would be: on the head, numbered one
higher, stamped by the node's block clock (the dev chain's offset and set
time included, within the drift limit), with the miner's coinbase, the
next gas limit and difficulty, the pool's pending transactions in the
miner's order and the uncles it would name.  Calls, estimates and traces
at C{pending} run in it: a contract whose cost depends on C{block.number}
or the time is estimated for the block its transaction will be mined in.

With nothing pending (an automining dev chain, mostly) the block is empty
and its header is made at once: its state is the head's.  Otherwise it is
built on a reader thread, executing the pending transactions, and its
state's new trie nodes and code are handed to the state service
(C{hold_state}) so that reads at its state root find them.  The last one
built is kept until the head, the pending transactions or its time change.

While the pool is empty (an automining dev chain, where every
C{eth_estimateGas} of hardhat-ethers asks at C{pending}), the kept block is
recognised without making its key: by the head header object, the clock's
whole second, the block clock's offset and set time, the coinbase and the
side-block candidates (a tuple replaced whenever they change), compared by
identity or equality.  Any of them changing, or a transaction entering the
pool, takes the full path, which makes the key as before.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from twisted.internet.defer import Deferred, succeed
from zope.interface import implementer

from nodex.chain.building.builder import BuiltBlock
from nodex.chain.dev.blocks import empty_header_fields
from nodex.chain.uncles import still_useful
from nodex.api.chain import IChainWriter
from nodex.api.mining import IMiner, IPendingBlock
from nodex.api.pool import ITransactionPool
from nodex.services.blocktime import BlockClock
from nodex.services.miner import order_candidates
from nodex.services.sideblocks import SideBlocks
from nodex.chain.building.templates import ChainReads
from nodex.services.threads import RunInThread
from nodex.structures.blocks import Block
from nodex.structures.headers import Header
from nodex.structures.receipts import Receipt
from nodex.structures.transactions import Transaction

HoldState = Callable[[dict[bytes, bytes], dict[bytes, bytes]], None]
"""Gives the state service the trie nodes and code of a state not in the store."""


@dataclass(frozen=True)
class PendingBlock:
    """
    The block the miner would build now: unsealed, never stored.

    @ivar block: the block (its header's seal fields are empty).
    @ivar receipts: the receipts of its transactions.
    """

    block: Block
    receipts: tuple[Receipt, ...] = ()

    @property
    def header(self) -> Header:
        """
        The block's header.
        """
        return self.block.header


@implementer(IPendingBlock)
class PendingBlocks:
    """
    Makes, and keeps for a while, the pending block of one node.
    """

    def __init__(
        self,
        chain: IChainWriter,
        pool: ITransactionPool,
        miner: IMiner,
        block_clock: BlockClock,
        reads: ChainReads,
        run_in_thread: RunInThread,
        hold_state: HoldState,
        side_blocks: SideBlocks | None = None,
        extra_data: bytes = b"",
    ) -> None:
        """
        @param chain: the head and the rules blocks are made by now.
        @param pool: the pending transactions.
        @param miner: its coinbase.
        @param block_clock: the time policy of the node's blocks.
        @param reads: builds a block on a stored parent (a reader thread).
        @param run_in_thread: where a block with transactions is built.
        @param hold_state: hands a built block's new state to the state service.
        @param side_blocks: the uncle candidates.
        """
        self._chain = chain
        self._pool = pool
        self._miner = miner
        self._block_clock = block_clock
        self._reads = reads
        self._run_in_thread = run_in_thread
        self._hold_state = hold_state
        self._side_blocks = side_blocks
        self._extra_data = extra_data
        self._kept: tuple[tuple[object, ...], PendingBlock] | None = None
        self._quick: tuple[object, ...] | None = None

    def header(self) -> "Deferred[Header]":
        """
        The pending block's header (at once when nothing is pending).
        """
        header = self.header_now()
        if header is not None:
            return succeed(header)
        return self.block().addCallback(lambda pending: pending.header)

    def header_now(self) -> Header | None:
        """
        The pending block's header, if it is known without building: while
        the pool is empty and no side block is a useful uncle, the block is
        the head's empty child, made here (no Deferred, no transaction
        list); L{None} otherwise (then ask L{header}).
        """
        if len(self._pool):
            return None
        pending = self._empty()
        return None if pending is None else pending.header

    def block(self) -> "Deferred[PendingBlock]":
        """
        The block the miner would build now.

        @return: a Deferred firing with the L{PendingBlock}.
        """
        if not len(self._pool):
            pending = self._empty()
            if pending is not None:
                return succeed(pending)
            candidates: Sequence[Transaction] = ()
        else:
            candidates = order_candidates(self._pool.pending())
        head = self._chain.head.header
        timestamp = self._block_clock.next_stamp(head.timestamp)
        side = self._useful_side(head)
        coinbase = self._miner.coinbase
        key = (head.hash, timestamp, coinbase, tuple(tx.hash for tx in candidates), tuple(h.hash for h in side))
        if self._kept is not None and self._kept[0] == key:
            return succeed(self._kept[1])
        self._quick = None
        building = self._run_in_thread(
            self._reads.thd_build, head, candidates, timestamp, side, coinbase, self._chain.rules
        )
        return building.addCallback(self._built, key)

    def _empty(self) -> PendingBlock | None:
        """
        With the pool empty (the caller's test): the kept block if the
        quick key still names it, else the head's empty child made now and
        kept; L{None} when a side block is a useful uncle (the block is
        then built, as with transactions).
        """
        head = self._chain.head.header
        clock = self._block_clock
        quick = (
            head, clock.now(), clock.offset, clock.next_timestamp, self._miner.coinbase,
            () if self._side_blocks is None else self._side_blocks.candidates(),
        )
        if quick == self._quick and self._kept is not None:
            return self._kept[1]
        side = self._useful_side(head)
        if side:
            return None
        timestamp = clock.next_stamp(head.timestamp)
        coinbase = self._miner.coinbase
        key = (head.hash, timestamp, coinbase, (), ())
        if self._kept is not None and self._kept[0] == key:
            pending = self._kept[1]
        else:
            fields = empty_header_fields(head, timestamp, coinbase, self._chain.rules, self._extra_data)
            pending = PendingBlock(Block(Header(**fields), (), ()))
            self._kept = (key, pending)
        self._quick = quick
        return pending

    def _built(self, built: BuiltBlock, key: tuple[object, ...]) -> PendingBlock:
        """
        Hand a built block's state to the state service; keep the block.
        """
        outcome = built.outcome
        self._hold_state(outcome.nodes, outcome.code)
        pending = PendingBlock(built.block, outcome.receipts)
        self._kept = (key, pending)
        # A build started before the pool emptied may end after a quick
        # look-up: the kept block is no longer the one the quick key names.
        self._quick = None
        return pending

    def _useful_side(self, head: Header) -> Sequence[Header]:
        """
        The side blocks a child of the head might name as uncles.
        """
        if self._side_blocks is None:
            return ()
        return tuple(header for header in self._side_blocks.candidates() if still_useful(header, head.number))


__all__ = ["PendingBlock", "PendingBlocks"]
