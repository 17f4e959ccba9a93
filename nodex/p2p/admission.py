"""
Who gets a connection slot (L{Gatekeeper}): the limits per address, the
handshake failures counted per address, the peers known to be good (who
keep reserved slots with the trusted and configured ones), and which
connection still in its handshake gives way when every slot is taken
(C{docs/p2p.md}, "Peers and limits").
"""

from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Iterable

from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

from nodex.api.peers import IReputation, PeerEvent
from nodex.p2p.errors import DisconnectReason
from nodex.p2p.host import NetworkSettings
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
    Whether a peer (established now, or until its connection ended) has
    been connected long enough, without an offence, to be known as good.
    """
    established = peer.established or peer.was_established
    return established and not peer.offended and now - peer.connected_at >= KNOWN_GOOD_SECONDS


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


class Gatekeeper:
    """
    Decides which inbound connections get a slot, and who may take the
    reserved ones.

    @ivar handshake_failures: the failed handshakes by address.
    @ivar known_good: the peers that stayed a while without an offence.
    """

    log = Logger()

    def __init__(
        self,
        settings: NetworkSettings,
        reputation: IReputation,
        clock: IReactorTime,
        connections: Callable[[], Iterable[PeerProtocol]],
        peers: Callable[[], Iterable[PeerProtocol]],
        configured_ids: Callable[[], set[bytes]],
    ) -> None:
        """
        @param connections: every open connection, in its handshake or not.
        @param peers: the adopted peers.
        @param configured_ids: the node ids of the configured peers reached so far.
        """
        self.settings = settings
        self.reputation = reputation
        self._clock = clock
        self._connections = connections
        self._peers = peers
        self._configured_ids = configured_ids
        self.handshake_failures = HandshakeFailures(settings.max_handshake_failures)
        self.known_good = KnownGood()

    def admit(self, host: str) -> bool:
        """
        Whether an inbound connection from C{host} gets a slot: within the
        address's limits, and within the limit of connections in their
        handshake (twice C{max_inbound}, plus the reserved slots for a
        trusted, configured or known-good address).  When every slot is
        taken, the oldest connection in its handshake of the address that
        holds the most gives way to a newcomer from a less crowded address.
        """
        privileged = self.privileged(None, host)
        if not self.reputation.is_trusted(None, host) and not self.within_address_limits(host):
            return False
        handshaking = [peer for peer in self._connections() if peer.inbound and not peer.closed and not peer.established]
        limit = 2 * self.settings.max_inbound + (self.settings.reserved_slots if privileged else 0)
        if len(handshaking) < limit:
            return True
        victim = eviction_candidate(
            handshaking, "" if privileged else host, lambda peer: self.privileged(None, peer.address)
        )
        if victim is None:
            self.log.info("refusing a connection from {host}: every handshake slot is taken", host=host)
            return False
        self.log.info(
            "a connection from {host} takes the handshake slot of one from {other}", host=host, other=victim.address
        )
        victim.disconnect(DisconnectReason.TOO_MANY_PEERS)
        return True

    def privileged(self, node_id: bytes | None, address: str) -> bool:
        """
        Whether a peer may take the reserved slots: a trusted node id or
        address (C{scoring.trusted_peer_*}), a configured peer, or a peer
        known to be good (connected for a while without an offence).
        """
        if self.reputation.is_trusted(node_id, address) or self.known_good.has_address(address):
            return True
        if node_id is not None and (self.known_good.has_node(node_id) or node_id in self._configured_ids()):
            return True
        if any(host == address for host, _ in self.settings.bootstrap):
            return True
        now = self._clock.seconds()
        return any(peer.address == address and proved_good(peer, now) for peer in self._peers())

    def within_address_limits(self, host: str) -> bool:
        """
        Whether one more inbound connection from C{host} stays within the
        per-address limits (half-open connections, open connections).
        Exceeding one is an C{INVALID_MESSAGE} offence of the address (node
        id unknown), recorded unless the address is refused already (a
        refused peer does not grow its record).
        """
        open_count = half_open = 0
        for peer in self._connections():
            if peer.inbound and peer.transport is not None and not peer.closed and peer.address == host:
                open_count += 1
                if not peer.established:
                    half_open += 1
        settings = self.settings
        if half_open < settings.max_half_open_per_address and open_count < settings.max_connections_per_address:
            return True
        if self.reputation.is_allowed(None, host):
            self.reputation.record_event(PeerEvent.INVALID_MESSAGE, None, host)
        self.log.info(
            "refusing a connection from {host}: {open} open, {half} in their handshake",
            host=host, open=open_count, half=half_open,
        )
        return False

    def handshake_failed(self, address: str, why: str) -> None:
        """
        Count a failed handshake against C{address}; past
        C{max_handshake_failures} within the window, the address is
        punished (an C{INVALID_MESSAGE} without a node id).
        """
        if self.reputation.is_trusted(None, address):
            return
        if self.handshake_failures.add(address, self._clock.seconds()):
            self.log.info(
                "address {address}: more than {limit} failed handshakes ({why})",
                address=address, limit=self.handshake_failures.limit, why=why,
            )
            self.reputation.record_event(PeerEvent.INVALID_MESSAGE, None, address)

    def peer_lost(self, peer: PeerProtocol) -> None:
        """
        Remember a peer that stayed long enough without an offence as good.
        """
        if proved_good(peer, self._clock.seconds()):
            self.known_good.add(peer.address, peer.node_id)


__all__ = [
    "HANDSHAKE_FAILURE_WINDOW",
    "Gatekeeper",
    "KNOWN_GOOD_SECONDS",
    "HandshakeFailures",
    "KnownGood",
    "eviction_candidate",
    "proved_good",
]
