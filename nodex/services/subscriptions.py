"""
The subscription service (L5): the pushed counterpart of the polled filters,
behind C{eth_subscribe} over WebSocket (reference §16, DESIGN §6).

A subscription is a kind (L{NEW_HEADS}, L{LOGS}, L{PENDING_TRANSACTIONS} or
L{SYNCING}) and a C{deliver} callable of the edge that owns it; its id is
16 random bytes.  The service observes the chain and the pool on the reactor
thread and calls each subscription's C{deliver} there:

  - after the chain service has moved its head, so that a block announced
    is already readable (C{eth_getBlockByHash}, its receipts, its logs);
  - once per change of the canonical chain, in the event's order: the logs
    of abandoned blocks again with C{removed} set (a reorganisation or a
    rewind), then each adopted block, oldest first, its header and then its
    logs.  Nothing is queued or replayed, so nothing is delivered twice.

The same object goes to every subscription of a kind (one L{NewHead} per
block for all C{newHeads} subscribers, one L{LogEntry} per log for all the
C{logs} subscriptions that select it), one after the other, so that the
edge can encode it once.

Many subscriptions stay cheap (issue 26): the C{logs} subscriptions are
matched through one index (L{nodex.chain.logs.match}), each block's logs
once; and every delivery runs in slices of the reactor's time
(L{nodex.services.slices}), in the order of the changes, so that a block of
a thousand logs for thousands of subscriptions does not hold the reactor
for the whole of it.
"""

import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from twisted.internet.interfaces import IReactorTime
from twisted.internet.task import Clock
from twisted.logger import Logger
from zope.interface import implementer

from nodex.chain.logs.match import LogFilterIndex
from nodex.chain.logs.search import LogFilter
from nodex.chain.processing import cumulative_difficulty
from nodex.api.chain import ChainEvent, IChainService
from nodex.api.errors import SubscriptionLimitError
from nodex.api.peers import SyncStatus
from nodex.api.pool import ITransactionPool
from nodex.api.subscriptions import ISubscriptionService, NewHead, SubscriptionKind
from nodex.primitives import Hash32
from nodex.structures.blocks import Block
from nodex.structures.receipts import Receipt
from nodex.services.slices import SliceRunner
from nodex.structures.transactions import Transaction

NEW_HEADS = SubscriptionKind.NEW_HEADS
LOGS = SubscriptionKind.LOGS
PENDING_TRANSACTIONS = SubscriptionKind.NEW_PENDING_TRANSACTIONS
SYNCING = SubscriptionKind.SYNCING

KINDS = SubscriptionKind.ALL
"""The subscription kinds, by their C{eth_subscribe} names."""

MAX_SUBSCRIPTIONS = 100_000
"""The most subscriptions of the whole node (each edge also limits its own)."""

Deliver = Callable[[Any], None]
"""Called with each notification's object; it must not raise."""

_NOTIFICATIONS_PER_STEP = 64
"""Notifications delivered between two looks at the slice's clock (L{SliceRunner})."""

_log = Logger()


@dataclass
class _Subscription:
    """
    One subscription.

    @ivar log_filter: for L{LOGS}, what a log must have.
    @ivar full_transactions: for L{PENDING_TRANSACTIONS}, deliver the
        transaction rather than its hash.
    """

    kind: str
    deliver: Deliver
    log_filter: LogFilter = field(default_factory=LogFilter)
    full_transactions: bool = False


@implementer(ISubscriptionService)
class SubscriptionService:
    """
    Subscriptions to new heads, logs, pending transactions and the sync
    status of one node.
    """

    def __init__(
        self,
        chain: IChainService,
        pool: ITransactionPool | None,
        random_bytes: Callable[[int], bytes] = secrets.token_bytes,
        max_subscriptions: int = MAX_SUBSCRIPTIONS,
        clock: IReactorTime | None = None,
        runner: SliceRunner | None = None,
    ) -> None:
        """
        Start observing C{chain} and C{pool}.

        @param pool: the transaction pool (no pending-transaction
            notifications without it).
        @param random_bytes: draws the ids (tests fix it).
        @param max_subscriptions: the most subscriptions at once.
        @param clock: times the slices of the deliveries; L{None} (tests):
            every delivery is done at once.
        @param runner: runs the deliveries in slices (the node shares one
            with the filters); by default its own, on C{clock}.
        """
        self._chain = chain
        self._random_bytes = random_bytes
        self._max = max_subscriptions
        self._by_id: dict[bytes, _Subscription] = {}
        self._by_kind: dict[str, dict[bytes, _Subscription]] = {kind: {} for kind in KINDS}
        self._log_index = LogFilterIndex()
        self._runner = runner or SliceRunner(Clock() if clock is None else clock)
        chain.add_observer(self._chain_changed)
        if pool is not None:
            pool.add_observer(self._transaction_pending)

    # Subscribing

    def subscribe(
        self, kind: str, deliver: Deliver, log_filter: LogFilter | None = None, full_transactions: bool = False
    ) -> bytes:
        """
        Start a subscription.

        @param kind: one of L{KINDS}.
        @param deliver: called on the reactor thread with each
            notification's object: a L{NewHead}, a L{LogEntry}, a
            transaction hash or L{Transaction}, or a L{SyncStatus}.
        @param log_filter: for L{LOGS}, the selection (default: every log).
        @param full_transactions: for L{PENDING_TRANSACTIONS}, whole transactions.
        @return: the subscription's 16-byte id.
        @raise ValueError: an unknown kind.
        @raise SubscriptionLimitError: the node holds L{MAX_SUBSCRIPTIONS} already.
        """
        if kind not in self._by_kind:
            raise ValueError(f"unknown subscription kind {kind!r}")
        if len(self._by_id) >= self._max:
            raise SubscriptionLimitError(f"the node holds its limit of {self._max} subscriptions")
        while True:
            subscription_id = self._random_bytes(16)
            if subscription_id not in self._by_id:
                break
        subscription = _Subscription(kind, deliver, log_filter or LogFilter(), full_transactions)
        self._by_id[subscription_id] = subscription
        self._by_kind[kind][subscription_id] = subscription
        if kind == LOGS:
            self._log_index.add(subscription_id, subscription.log_filter)
        return subscription_id

    def unsubscribe(self, subscription_id: bytes) -> bool:
        """
        End a subscription: nothing is delivered for it afterwards.

        @return: whether it existed.
        """
        subscription = self._by_id.pop(subscription_id, None)
        if subscription is None:
            return False
        del self._by_kind[subscription.kind][subscription_id]
        if subscription.kind == LOGS:
            self._log_index.remove(subscription_id)
        return True

    def stop(self) -> None:
        """
        Drop the deliveries still waiting for the reactor (the node stops).
        """
        self._runner.stop()

    def count(self) -> int:
        """
        How many subscriptions exist.
        """
        return len(self._by_id)

    # Observing

    def _chain_changed(self, event: ChainEvent) -> None:
        """
        Deliver one change of the canonical chain (see the module's
        docstring), after the deliveries given before it.
        """
        if not event.adopted and not (event.abandoned and self._by_kind[LOGS]):
            return
        if not self._by_kind[NEW_HEADS] and not self._by_kind[LOGS]:
            # Nobody to tell (an automining node's usual case: a block per
            # transaction); a subscription made later starts after this change.
            return
        # The totals are the head's now, when the event is told.
        totals = self._total_difficulties(event.adopted) if event.adopted else []
        self._runner.run(self._deliver_event(event, totals))

    def _deliver_event(self, event: ChainEvent, totals: list[int]) -> Iterator[None]:
        """
        Deliver one change (a generator: it yields where the runner may pause).
        """
        for index, block in enumerate(event.abandoned):
            yield from self._deliver_logs(block, event.receipts_of_abandoned(index), True)
        for index, block in enumerate(event.adopted):
            if self._by_kind[NEW_HEADS]:
                yield from self._deliver(NEW_HEADS, NewHead(block, totals[index]))
            yield from self._deliver_logs(block, event.receipts_of_adopted(index), False)

    def _total_difficulties(self, adopted: tuple[Block, ...]) -> list[int]:
        """
        The total difficulty of each adopted block, from the new head's
        (the last adopted block is the head when observers are told).
        """
        total = self._chain.head.total_difficulty
        totals = [0] * len(adopted)
        for index in range(len(adopted) - 1, -1, -1):
            totals[index] = total
            total -= cumulative_difficulty(adopted[index])
        return totals

    def _deliver_logs(self, block: Block, receipts: tuple[Receipt, ...], removed: bool) -> Iterator[None]:
        """
        Deliver one block's logs to each log subscription that selects
        them, in block order: each entry to all its subscribers in turn, so
        that the edge encodes it once.
        """
        if not self._by_kind[LOGS] or not any(receipt.logs for receipt in receipts):
            return
        hashes: list[Hash32] = [transaction.hash for transaction in block.transactions]
        subscriptions = self._by_id
        sent = 0
        for found in self._log_index.match_logs(block.hash, block.number, hashes, receipts, removed):
            if found is None:
                yield None
                continue
            selection, entries = found
            members = list(selection.members)
            for entry in entries:
                for member in members:
                    subscription = subscriptions.get(member)
                    if subscription is not None:
                        _call(subscription.deliver, entry)
                        sent += 1
                        if not sent % _NOTIFICATIONS_PER_STEP:
                            yield None

    def _transaction_pending(self, transaction: Transaction) -> None:
        """
        Deliver a newly pending transaction (its hash, or itself to the
        subscriptions that asked for whole transactions).
        """
        if self._by_kind[PENDING_TRANSACTIONS]:
            self._runner.run(self._deliver_pending(transaction))

    def _deliver_pending(self, transaction: Transaction) -> Iterator[None]:
        """
        Deliver one pending transaction (a generator).
        """
        subscriptions = self._by_kind[PENDING_TRANSACTIONS]
        for sent, subscription_id in enumerate(list(subscriptions), 1):
            subscription = subscriptions.get(subscription_id)
            if subscription is not None:
                _call(subscription.deliver, transaction if subscription.full_transactions else transaction.hash)
            if not sent % _NOTIFICATIONS_PER_STEP:
                yield None

    def sync_status_changed(self, status: SyncStatus) -> None:
        """
        Deliver a change of the sync status to the C{syncing} subscriptions:
        the peer-to-peer sync calls this when it starts, progresses or ends.
        A node without peers never syncs, so its C{syncing} subscriptions
        stay silent.
        """
        if self._by_kind[SYNCING]:
            self._runner.run(self._deliver(SYNCING, status))

    def _deliver(self, kind: str, item: Any) -> Iterator[None]:
        """
        Deliver the same object to every subscription of C{kind} (a generator).
        """
        subscriptions = self._by_kind[kind]
        for sent, subscription_id in enumerate(list(subscriptions), 1):
            subscription = subscriptions.get(subscription_id)
            if subscription is not None:
                _call(subscription.deliver, item)
            if not sent % _NOTIFICATIONS_PER_STEP:
                yield None


def _call(deliver: Deliver, item: Any) -> None:
    """
    Deliver one object; an edge's failure is logged and does not stop the others.
    """
    try:
        deliver(item)
    except Exception:
        _log.failure("delivering a subscription notification failed")


__all__ = [
    "KINDS",
    "LOGS",
    "MAX_SUBSCRIPTIONS",
    "NEW_HEADS",
    "PENDING_TRANSACTIONS",
    "SYNCING",
    "SubscriptionService",
]
