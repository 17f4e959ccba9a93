"""
The P2P layer's own reputation record, used until the reputation service
(reference §15) is composed: it counts each peer's events and refuses no
one, since the P2P layer already disconnects every offender itself.
"""

from collections import Counter, OrderedDict
from collections.abc import Callable

from zope.interface import implementer

from nodex.interfaces import IReputation

MAX_RECORDS = 1000
"""How many node ids and addresses are counted (the least recently seen are forgotten)."""


@implementer(IReputation)
class EventCounts:
    """
    Per node id and per address counts of L{nodex.interfaces.PeerEvent}s.
    """

    def __init__(self, max_records: int = MAX_RECORDS) -> None:
        """
        @param max_records: how many node ids and addresses to keep counts for.
        """
        self._max_records = max_records
        self._records: OrderedDict[bytes | str, Counter[str]] = OrderedDict()
        self._observers: list[Callable[[], None]] = []

    def record_event(self, event: str, node_id: bytes | None, address: str) -> None:
        """
        Count C{event} against the node id (when known) and the address.
        """
        for key in (node_id, address):
            if key is None or key == "":
                continue
            counts = self._records.pop(key, None) or Counter()
            counts[event] += 1
            self._records[key] = counts
            if len(self._records) > self._max_records:
                self._records.popitem(last=False)

    def counts(self, key: bytes | str) -> dict[str, int]:
        """
        The events counted against a node id or an address.
        """
        return dict(self._records.get(key, {}))

    def is_allowed(self, node_id: bytes | None, address: str) -> bool:
        """
        Everyone is allowed: there are no bans without the reputation service.
        """
        return True

    def add_ban_observer(self, observer: Callable[[], None]) -> None:
        """
        Keep C{observer}; it is never called, since nothing is ever banned here.
        """
        self._observers.append(observer)


__all__ = ["EventCounts"]
