"""
Pushed notifications (C{eth_subscribe}) as the edges see them.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from zope.interface import Interface

from nodex.chain.logs.search import LogFilter
from nodex.structures.blocks import Block

__all__ = [
    "ISubscriptionService",
    "NewHead",
    "SubscriptionKind",
]


class SubscriptionKind:
    """
    The kinds of C{eth_subscribe}, by their wire names (reference §16).
    """

    NEW_HEADS = "newHeads"
    LOGS = "logs"
    NEW_PENDING_TRANSACTIONS = "newPendingTransactions"
    SYNCING = "syncing"

    ALL = (NEW_HEADS, LOGS, NEW_PENDING_TRANSACTIONS, SYNCING)


@dataclass(frozen=True)
class NewHead:
    """
    A block that became canonical, as a C{newHeads} subscription gets it.

    @ivar total_difficulty: the chain's total difficulty up to and including it.
    """

    block: Block
    total_difficulty: int


class ISubscriptionService(Interface):
    """
    Pushed notifications of new heads, logs, pending transactions and the
    sync status (C{eth_subscribe}); each is delivered on the reactor thread,
    once, in chain order, after the block it concerns is readable.
    """

    def subscribe(
        kind: str, deliver: "Callable[[Any], None]", log_filter: "LogFilter | None" = None,
        full_transactions: bool = False,
    ) -> bytes:
        """
        Start a subscription of a L{SubscriptionKind}; C{deliver} is called
        with each L{NewHead}, L{LogEntry} (C{removed} set when a
        reorganisation revokes it), pending transaction hash (or
        L{Transaction} with C{full_transactions}), or L{SyncStatus}.

        @return: the subscription's random 16-byte id.
        @raise ValueError: an unknown kind.
        @raise SubscriptionLimitError: the node holds its limit of subscriptions.
        """

    def unsubscribe(subscription_id: bytes) -> bool:
        """
        End a subscription; whether it existed.
        """
