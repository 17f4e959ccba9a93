"""
Automining (L5): the miner's C{auto} mode, a watcher of the pool.

The miner registers an L{AutoMining} with the pool
(L{nodex.services.pool.TransactionPool.watch_for_miner}); the pool knows
nothing of miners.  For each transaction of this node's clients that
becomes pending, it has the miner mine a block and makes the pool's
C{add} wait for it, so that the RPC answer follows the block; a
transaction sent while the pool holds nothing is offered to it alone
first, and the miner admits and mines it in one writer job
(L{nodex.services.miner.Miner.mine_alone}).  Peers' transactions wait for
the block of the node they were sent to (C{docs/p2p.md}).
"""

from twisted.internet.defer import Deferred, succeed
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from nodex.chain.building.making import LoneAdmission
from nodex.api.mining import IAutoMining, IMiner
from nodex.api.pool import ITransactionPool
from nodex.primitives import Hash32
from nodex.structures.transactions import Transaction

RELAYED_GRACE_SECONDS = 2.0
"""
How long a transaction relayed by a peer waits in an automining node's pool
for the block of the node its sender gave it to (a peer's block arrives
within milliseconds on a dev network) before this node mines it itself.
"""


@implementer(IAutoMining)
class AutoMining:
    """
    The miner's C{auto} mode, watching one pool.

    Transactions that become pending together (a nonce gap closed) share one
    block: a transaction that was already among the candidates of a block
    being mined waits for that block rather than asking for another.
    """

    log = Logger()

    def __init__(self, miner: IMiner, pool: ITransactionPool, clock: IReactorTime | None = None) -> None:
        """
        @param miner: mines, when it is in C{auto} mode and mining.
        @param pool: whose pending transactions the miner takes.
        @param clock: times the wait of peers' transactions
            (L{RELAYED_GRACE_SECONDS}); L{None}: they wait for the next
            block whatever its cause.
        """
        self._miner = miner
        self._pool = pool
        self._clock = clock
        self._candidates: set[Hash32] = set()
        self._waiters: list[Deferred[None]] | None = None
        self._relayed: set[Hash32] = set()
        self._relayed_call: IDelayedCall | None = None

    @property
    def _automining(self) -> bool:
        """
        Whether the miner is in C{auto} mode and mining.
        """
        return self._miner.is_mining and self._miner.mode == "auto"

    def transaction_pending(self, transaction: Transaction, relayed: bool) -> "Deferred[None] | None":
        """
        A transaction became pending: mine (or join the block being mined)
        for it, or, for a peer's, give the peers' blocks their grace.

        @return: a Deferred firing once the block is stored, or L{None}
            when nothing waits (not automining, or a peer's transaction).
        """
        if not self._automining:
            return None
        if relayed:
            self._relayed_arrived(transaction)
            return None
        if self._waiters is None or transaction.hash not in self._candidates:
            self._candidates = {tx.hash for tx in self._pool.pending()}
            self._waiters = waiters = []
            # No empty block: the transactions may have come meanwhile in a
            # block from a peer (a relayed one after its grace, say).
            self._miner.mine(empty=False).addBoth(self._mined, waiters)
            if self._waiters is not waiters:
                # The block was stored at once (a synchronous miner).
                return succeed(None)
        waiter: Deferred[None] = Deferred()
        self._waiters.append(waiter)
        return waiter

    def include_alone(
        self, transaction: Transaction, admission: LoneAdmission
    ) -> "Deferred[tuple[int, int] | None] | None":
        """
        Admit and mine a transaction sent to an empty pool in one writer
        job, if the miner automines and no block of this automining is
        being made.

        @return: L{None} to decline (the pool admits the transaction as
            usual), else the miner's Deferred (L{IMiner.mine_alone}).
        """
        if self._waiters is not None or not self._automining or not self._miner.due_now:
            return None
        return self._miner.mine_alone(transaction, admission)

    def _relayed_arrived(self, transaction: Transaction) -> None:
        """
        A transaction from a peer became pending: no block of its own.  The
        node its sender gave it to mines it, if that node automines, and
        this node imports that block; if it is still pending
        L{RELAYED_GRACE_SECONDS} later (its first node does not mine), this
        node mines it then.  So two automining peers do not both mine every
        transaction (C{docs/p2p.md}, "Automining with peers").
        """
        if self._clock is None:
            return
        self._relayed.add(transaction.hash)
        if self._relayed_call is None:
            self._relayed_call = self._clock.callLater(RELAYED_GRACE_SECONDS, self._mine_relayed)

    def _mine_relayed(self) -> None:
        """
        The grace of peers' transactions is over: mine those still pending.
        """
        self._relayed_call = None
        waiting, self._relayed = self._relayed, set()
        if not self._automining:
            return
        still = [transaction for transaction in self._pool.pending() if transaction.hash in waiting]
        if still:
            self.log.info(
                "mining {count} peers' transactions that no block brought within {seconds} s",
                count=len(still), seconds=RELAYED_GRACE_SECONDS,
            )
            self.transaction_pending(still[0], relayed=False)

    def stop(self) -> None:
        """
        Forget the peers' transactions waiting for their grace to end (the node stops).
        """
        if self._relayed_call is not None and self._relayed_call.active():
            self._relayed_call.cancel()
        self._relayed_call = None
        self._relayed = set()

    def _mined(self, result: object, waiters: list[Deferred[None]]) -> None:
        """
        Release the transactions that waited for a block (a failed block is
        logged: the transactions stay pending).
        """
        if self._waiters is waiters:
            self._waiters = None
            self._candidates = set()
        for waiter in waiters:
            waiter.callback(None)
        if isinstance(result, Failure):
            self.log.failure("automatic mining failed", result)


__all__ = ["AutoMining", "RELAYED_GRACE_SECONDS"]
