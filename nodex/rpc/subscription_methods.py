"""
C{eth_subscribe} and C{eth_unsubscribe} (reference §16): the methods that
only a WebSocket connection can serve, since their notifications are pushed.

The methods are registered in the one registry and called by the one
dispatcher, like every other method; what they need beyond their parameters,
the connection that asks, they read from L{CURRENT_MESSAGE}, which the
WebSocket protocol sets while the dispatcher answers one of its messages
(the dispatcher's coroutines copy the context, so that the later elements of
a batch see it too).  Over HTTP nothing sets it, and both methods answer
-32601 with a message saying they need a WebSocket connection.

A notification is an C{eth_subscription} message with C{subscription} (the
id as 16 bytes of DATA) and C{result}: a header object for C{newHeads}, a log
object for C{logs} (C{removed} true when a reorganisation revokes it), a
transaction hash or object for C{newPendingTransactions}, a sync status for
C{syncing}.  One object delivered to many subscribers is encoded once.
"""

import json
from collections.abc import Iterable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

from nodex.api.filters import LogEntry
from nodex.api.peers import SyncStatus
from nodex.api.subscriptions import ISubscriptionService, NewHead, SubscriptionKind
from nodex.rpc import decoders
from nodex.rpc.decoders import DecodeError
from nodex.rpc.errors import InvalidParamsError, LimitExceededError, MethodNotFoundError
from nodex.rpc.filter_methods import filter_query, log_entry_object
from nodex.rpc.objects import header_object, transaction_object
from nodex.rpc.registry import Method, Param
from nodex.structures.transactions import Transaction

NEEDS_WEBSOCKET = (
    "the method {name} needs a WebSocket connection: subscriptions push notifications, "
    "which HTTP cannot carry (connect to the node's WebSocket endpoint, rpc.ws)"
)
"""The message of C{eth_subscribe} and C{eth_unsubscribe} over HTTP (-32601)."""


class Subscriber(Protocol):
    """
    A connection that can hold subscriptions: the WebSocket protocol.

    @ivar subscriptions: the ids of its live subscriptions.
    @ivar max_subscriptions: how many it may hold at once.
    """

    subscriptions: set[bytes]
    max_subscriptions: int

    def hold(self, subscription_id: bytes) -> None:
        """
        Keep the notifications of a new subscription until the answer that
        announces it is sent (a batch may be answered later).
        """

    def push(self, subscription_id: bytes, message: bytes) -> None:
        """
        Send one notification message of the subscription C{subscription_id}.
        """


@dataclass
class MessageScope:
    """
    The connection a message came from, and the subscriptions its answer
    announces (their notifications wait until that answer is written).
    """

    subscriber: Subscriber
    created: list[bytes] = field(default_factory=list)


CURRENT_MESSAGE: ContextVar[MessageScope | None] = ContextVar("CURRENT_MESSAGE", default=None)
"""The message being answered, set by the WebSocket protocol around the dispatcher."""


subscription_id = decoders.fixed_data(16, "subscription id")
"""A subscription id: 16 bytes of DATA."""


NEW_HEAD_MEMBERS = (
    "number", "hash", "parentHash", "nonce", "sha3Uncles", "logsBloom", "transactionsRoot", "stateRoot",
    "receiptsRoot", "miner", "difficulty", "totalDifficulty", "extraData", "size", "gasLimit", "gasUsed",
    "timestamp", "mixHash", "baseFeePerGas",
)
"""
The members of a C{newHeads} result: the standard header members of the
block object (geth's notification, and the reference's, carry no body and
no chain-specific members).  Clients recognise a header by them: web3.py
formats a notification as a block only when nearly all its members are
standard ones.  The merged-mining members are one C{eth_getBlockByHash} away.
"""


def _header_object(head: NewHead) -> dict[str, Any]:
    """
    The C{newHeads} result: L{NEW_HEAD_MEMBERS} of the block object.
    """
    block = head.block
    full = header_object(
        block.header, head.total_difficulty, block.size, [], [], sum(uncle.difficulty for uncle in block.uncles)
    )
    return {name: full[name] for name in NEW_HEAD_MEMBERS}


def _sync_object(status: SyncStatus) -> dict[str, Any]:
    """
    The C{syncing} result (geth's shape).
    """
    return {
        "syncing": status.syncing,
        "status": {
            "startingBlock": hex(status.starting_block),
            "currentBlock": hex(status.current_block),
            "highestBlock": hex(status.highest_block),
        },
    }


def result_object(item: Any) -> Any:
    """
    The JSON C{result} of one delivered object.
    """
    if isinstance(item, NewHead):
        return _header_object(item)
    if isinstance(item, LogEntry):
        return log_entry_object(item)
    if isinstance(item, Transaction):
        return transaction_object(item, None, None, None)
    if isinstance(item, SyncStatus):
        return _sync_object(item)
    return "0x" + item.hex()


_encode = json.JSONEncoder(separators=(",", ":")).encode


def notification_prefix(subscription: bytes) -> bytes:
    """
    The bytes of a subscription's C{eth_subscription} messages before the
    result (the same for all of them).
    """
    return (
        b'{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"0x'
        + subscription.hex().encode()
        + b'","result":'
    )


def notification(subscription: bytes, result: bytes) -> bytes:
    """
    The C{eth_subscription} message of one result (already JSON).
    """
    return notification_prefix(subscription) + result + b"}}"


class SubscriptionMethods:
    """
    C{eth_subscribe} and C{eth_unsubscribe} over the subscription service.
    """

    def __init__(self, subscriptions: ISubscriptionService) -> None:
        """
        @param subscriptions: the node's subscription service.
        """
        self._subscriptions = subscriptions
        self._last_item: Any = None
        self._last_json = b""

    def rpc_methods(self) -> Iterable[Method]:
        """
        The subscription methods of the C{eth} module.
        """
        return [
            Method(
                "eth_subscribe",
                self.subscribe,
                (Param("kind", decoders.any_json, None), Param("options", decoders.any_json, None)),
                lambda value: "0x" + value.hex(),
            ),
            Method("eth_unsubscribe", self.unsubscribe, (Param("subscriptionId", decoders.any_json, None),)),
        ]

    def subscribe(self, kind: Any, options: Any) -> bytes:
        """
        C{eth_subscribe}: start a subscription for the connection that asks.
        The parameters are checked here, after the transport: over HTTP the
        answer is always that a WebSocket is needed.

        @raise MethodNotFoundError: not over WebSocket.
        @raise InvalidParamsError: an unknown kind or bad options.
        @raise LimitExceededError: the connection holds its limit.
        """
        scope = CURRENT_MESSAGE.get()
        if scope is None:
            raise MethodNotFoundError(NEEDS_WEBSOCKET.format(name="eth_subscribe"))
        subscriber = scope.subscriber
        arguments = _options(kind, options)
        if len(subscriber.subscriptions) >= subscriber.max_subscriptions:
            raise LimitExceededError(
                f"this connection holds its limit of {subscriber.max_subscriptions} subscriptions; "
                "unsubscribe from some first"
            )
        # The id is drawn by the service, and the closure needs it: a cell.
        cell: list[bytes] = []

        def deliver(item: Any) -> None:
            subscriber.push(cell[0], cell[1] + self._result_json(item) + b"}}")

        new_id = self._subscriptions.subscribe(kind, deliver, **arguments)
        cell += [new_id, notification_prefix(new_id)]
        subscriber.hold(new_id)
        subscriber.subscriptions.add(new_id)
        scope.created.append(new_id)
        return new_id

    def unsubscribe(self, value: Any) -> bool:
        """
        C{eth_unsubscribe}: end one of the connection's subscriptions.

        @return: whether the connection had it.
        @raise MethodNotFoundError: not over WebSocket.
        @raise InvalidParamsError: not a subscription id.
        """
        scope = CURRENT_MESSAGE.get()
        if scope is None:
            raise MethodNotFoundError(NEEDS_WEBSOCKET.format(name="eth_unsubscribe"))
        if value is None:
            raise InvalidParamsError("missing value for required argument 0")
        try:
            subscription = subscription_id(value)
        except DecodeError as exc:
            raise InvalidParamsError(f"invalid argument 0: {exc}") from None
        owned = scope.subscriber.subscriptions
        if subscription not in owned:
            return False
        owned.discard(subscription)
        return self._subscriptions.unsubscribe(subscription)

    def end_all(self, subscriber: Subscriber) -> None:
        """
        End every subscription of a connection that closed.
        """
        for owned in list(subscriber.subscriptions):
            self._subscriptions.unsubscribe(owned)
        subscriber.subscriptions.clear()

    def _result_json(self, item: Any) -> bytes:
        """
        The JSON of a delivered object, encoded once however many
        subscribers get the same object one after the other.
        """
        if item is self._last_item:
            return self._last_json
        encoded = _encode(result_object(item)).encode()
        self._last_item, self._last_json = item, encoded
        return encoded


def _options(kind: str, options: Any) -> dict[str, Any]:
    """
    The service's arguments for a kind and its options parameter.

    @raise InvalidParamsError: an unknown kind, or options it does not take.
    """
    if kind is None:
        raise InvalidParamsError("missing value for required argument 0")
    if not isinstance(kind, str):
        raise InvalidParamsError("invalid argument 0: want a subscription kind (a string)")
    if kind == SubscriptionKind.LOGS:
        if options is None:
            return {}
        try:
            query = filter_query(options)
        except DecodeError as exc:
            raise InvalidParamsError(f"invalid argument 1: {exc}") from None
        if query.block_hash is not None or query.from_block is not None or query.to_block is not None:
            raise InvalidParamsError(
                "invalid argument 1: a logs subscription follows new blocks: "
                "it takes address and topics, not blockHash or numbered fromBlock/toBlock"
            )
        return {"log_filter": query.log_filter}
    if kind == SubscriptionKind.NEW_PENDING_TRANSACTIONS:
        if options is None:
            return {}
        try:
            return {"full_transactions": decoders.boolean(options)}
        except DecodeError as exc:
            raise InvalidParamsError(f"invalid argument 1: {exc}") from None
    if kind in (SubscriptionKind.NEW_HEADS, SubscriptionKind.SYNCING):
        if options is not None:
            raise InvalidParamsError(f"invalid argument 1: a {kind} subscription takes no options")
        return {}
    wanted = ", ".join(SubscriptionKind.ALL)
    raise InvalidParamsError(f"invalid argument 0: unknown subscription kind {json.dumps(kind)[:80]}, want one of {wanted}")


__all__ = [
    "CURRENT_MESSAGE",
    "MessageScope",
    "NEEDS_WEBSOCKET",
    "Subscriber",
    "SubscriptionMethods",
    "notification",
    "notification_prefix",
    "result_object",
]
