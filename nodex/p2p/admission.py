"""
Who gets a connection slot: the handshake failures counted per address,
the peers known to be good (who keep reserved slots), and which
connection still in its handshake gives way when every slot is taken
(C{docs/p2p.md}, "Peers and limits").

Plain bookkeeping over the clock's seconds, driven by the peer network.
"""

from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Iterable

from nodex.p2p.inbound import KnownSet
from nodex.p2p.protocol import PeerProtocol

HANDSHAKE_FAILURE_WINDOW = 600.0
"""Seconds a failed handshake counts against its address."""

KNOWN_GOOD_SECONDS = 60.0
"""Seconds a peer must stay connected, without an offence, to be known as good."""

TRACKED_ADDRESSES = 4096
"""Addresses whose handshake failures are remembered (the least recent leave first)."""


class HandshakeFailures:
    """
    Failed handshakes (timeouts, bad proofs, messages out of order) by
    address, within a sliding window.
    """

    def __init__(self, limit: int, window: float = HANDSHAKE_FAILURE_WINDOW, addresses: int = TRACKED_ADDRESSES) -> None:
        """
        @param limit: the failures an address may have within the window;
            one more is an offence.
        @param window: seconds a failure counts.
        @param addresses: the most addresses tracked.
        """
        self.limit = limit
        self._window = window
        self._addresses = addresses
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def add(self, address: str, now: float) -> bool:
        """
        Count one failure of C{address} at C{now}.

        @return: whether the address now has more failures than the limit
            within the window (its count starts again).
        """
        times = self._failures.get(address)
        if times is None:
            times = self._failures[address] = deque()
            if len(self._failures) > self._addresses:
                self._failures.popitem(last=False)
        else:
            self._failures.move_to_end(address)
        while times and times[0] <= now - self._window:
            times.popleft()
        times.append(now)
        if len(times) > self.limit:
            del self._failures[address]
            return True
        return False

    def count(self, address: str, now: float) -> int:
        """
        The failures of C{address} within the window.
        """
        return sum(1 for when in self._failures.get(address, ()) if when > now - self._window)


class KnownGood:
    """
    Addresses and node ids of peers that stayed connected for a while
    without an offence (bounded, the least recent leave first).
    """

    def __init__(self, limit: int = 1024) -> None:
        self._addresses = KnownSet(limit)
        self._node_ids = KnownSet(limit)

    def add(self, address: str, node_id: bytes | None) -> None:
        """
        Remember a good peer.
        """
        self._addresses.add(address)
        if node_id is not None:
            self._node_ids.add(node_id)

    def has_address(self, address: str) -> bool:
        """
        Whether a good peer came from C{address}.
        """
        return address in self._addresses

    def has_node(self, node_id: bytes) -> bool:
        """
        Whether C{node_id} was a good peer.
        """
        return node_id in self._node_ids


def proved_good(peer: PeerProtocol, now: float) -> bool:
    """
    Whether an established peer has been connected long enough, without an
    offence, to be known as good.
    """
    return peer.was_established and not peer.offended and now - peer.connected_at >= KNOWN_GOOD_SECONDS


def eviction_candidate(
    handshaking: Iterable[PeerProtocol], newcomer: str, protected: Callable[[PeerProtocol], bool]
) -> PeerProtocol | None:
    """
    The inbound connection still in its handshake that gives way to a
    newcomer from address C{newcomer} when every slot is taken: the oldest
    of the address that holds the most, provided it holds more than the
    newcomer's address does (so that a few addresses holding every slot
    cannot lock the others out, and an honest peer's quick handshake is
    rarely the oldest); never a protected one.
    """
    candidates = [peer for peer in handshaking if not protected(peer)]
    if not candidates:
        return None
    counts = Counter(peer.address for peer in candidates)
    ours = counts.get(newcomer, 0)
    most = max(counts.values())
    if most <= ours:
        return None
    crowded = {address for address, count in counts.items() if count == most}
    return min((peer for peer in candidates if peer.address in crowded), key=lambda peer: peer.connected_at)


__all__ = [
    "HANDSHAKE_FAILURE_WINDOW",
    "KNOWN_GOOD_SECONDS",
    "HandshakeFailures",
    "KnownGood",
    "eviction_candidate",
    "proved_good",
]
