"""
The reputation service (L5): the peer scoring model of reference §15 and the
bans of §3.11 in the node's service tree.  The P2P layer reports events and
asks before it accepts a connection or handles a message (L{IReputation});
the C{sco} RPC module bans, unbans, lists and clears (L{IPeerScoring}).

Unlike the reference, an event counts against one record, the identity the
peer has proved: its node id after the handshake, else its address; an
address is punished for what was done from it without a proven identity,
and for several node ids from it punished in a short while (identity
churn).  Trusted node ids and addresses are scored and never punished
(C{docs/reputation.md}, C{docs/compatibility.md}).

Everything lives in memory and runs on the reactor thread except host-name
resolution, which the injected resolver does off it.  Time comes from the
injected clock.
"""

import ipaddress
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from twisted.application.service import Service
from twisted.internet.address import IPv4Address as TwistedIPv4Address
from twisted.internet.address import IPv6Address as TwistedIPv6Address
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import (
    IDelayedCall,
    IHostResolution,
    IReactorPluggableNameResolver,
    IReactorTime,
    IResolutionReceiver,
)
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from nodex.api.peers import IPeerScoring, IReputation, PeerEvent
from nodex.reputation.bans import (
    AddressBlock,
    BanList,
    HostName,
    IPAddress,
    check_bannable,
    parse_ban_target,
    parse_peer_address,
)
from nodex.reputation.errors import InvalidBanError
from nodex.reputation.scoring import PunishmentParameters, ScoringRecord, ScoringTable

log = Logger()

Resolve = Callable[[str], "Deferred[list[str]]"]
"""Resolves a host name to its IP address texts (off the reactor thread)."""


@dataclass(frozen=True)
class ReputationSettings:
    """
    The parameters of the scoring model and the configured bans.

    @ivar node: punishment durations of the records by node id.
    @ivar address: punishment durations of the records by IP address.
    @ivar max_node_records: most records by node id kept (least recently used leave first).
    @ivar max_address_records: most records by address kept (0: no bound).
    @ivar punishment_enabled: when C{False}, peers are scored but never punished.
    @ivar banned_node_ids: node ids refused whatever their records.
    @ivar banned_addresses: addresses and CIDR blocks banned from the start.
    @ivar trusted_node_ids: node ids scored but never punished.
    @ivar trusted_addresses: addresses and CIDR blocks whose peers are
        scored but never punished (a ban still refuses them).
    @ivar churn_limit: how many node ids punished from one address within
        L{churn_window} punish the address.
    @ivar churn_window: milliseconds a punished node id counts against its
        address, and a redial of a punished or banned node id against the
        address it came from.
    @ivar redial_limit: how many handshakes of punished or banned node ids
        from one address within L{churn_window} punish the address.
    """

    node: PunishmentParameters = PunishmentParameters(12 * 60_000, 10, 0)
    address: PunishmentParameters = PunishmentParameters(12 * 60_000, 10, 6000 * 60_000)
    max_node_records: int = 100
    max_address_records: int = 0
    punishment_enabled: bool = True
    banned_node_ids: frozenset[bytes] = frozenset()
    banned_addresses: tuple[str, ...] = ()
    trusted_node_ids: frozenset[bytes] = frozenset()
    trusted_addresses: tuple[str, ...] = ()
    churn_limit: int = 3
    churn_window: int = 10 * 60_000
    redial_limit: int = 3


CHURN_ADDRESSES = 4096
"""Addresses whose punished node ids are remembered (the least recent leave first)."""

ALLOWED_CACHE = 4096
"""Answers "allowed" of L{ReputationService.is_allowed} kept at most (all dropped when full)."""


@implementer(IResolutionReceiver)
class _Collector:
    """
    Gathers the addresses of one host-name resolution and fires a Deferred
    with them when it completes.
    """

    def __init__(self, done: "Deferred[list[str]]") -> None:
        self._done = done
        self._addresses: list[str] = []

    def resolutionBegan(self, resolution: IHostResolution) -> None:
        """
        Nothing to do until addresses arrive.
        """

    def addressResolved(self, address: TwistedIPv4Address | TwistedIPv6Address) -> None:
        """
        Keep one resolved address.
        """
        if address.host not in self._addresses:
            self._addresses.append(address.host)

    def resolutionComplete(self) -> None:
        """
        Fire with every address resolved (none when the name does not resolve).
        """
        self._done.callback(self._addresses)


def host_resolver(reactor: IReactorPluggableNameResolver) -> Resolve:
    """
    A L{Resolve} over the reactor's host-name resolver, looked up at each
    resolution (the default one runs C{getaddrinfo} in the reactor's thread
    pool, off the reactor thread).
    """
    def resolve(name: str) -> "Deferred[list[str]]":
        done: Deferred[list[str]] = Deferred()
        reactor.nameResolver.resolveHostName(
            _Collector(done), name, 0, (TwistedIPv4Address, TwistedIPv6Address)
        )
        return done

    return resolve


@implementer(IReputation, IPeerScoring)
class ReputationService(Service):
    """
    Scores peers by node id and by IP address, punishes them, and keeps the
    bans.

    @ivar nodes: the records by node id.
    @ivar addresses: the records by IP address (text of the normalised address).
    @ivar bans: the banned addresses and blocks.
    """

    def __init__(self, clock: IReactorTime, resolve: Resolve, settings: ReputationSettings = ReputationSettings()) -> None:
        """
        @param clock: the time of the model, and where observers are called.
        @param resolve: resolves host names given to L{ban_address}.
        @param settings: the model's parameters and the configured bans.
        @raise InvalidBanError: a configured ban is not an address or block
            that may be banned.
        """
        self._clock = clock
        self._resolve = resolve
        self.settings = settings
        enabled = settings.punishment_enabled
        self.nodes = ScoringTable(settings.node, settings.max_node_records, enabled)
        self.addresses = ScoringTable(settings.address, settings.max_address_records, enabled)
        self.bans = BanList()
        for text in settings.banned_addresses:
            target = parse_ban_target(text, allow_host_names=False)
            assert not isinstance(target, HostName)
            self.bans.add(target)
        self.trusted = tuple(trusted_network(text) for text in settings.trusted_addresses)
        self.banned_ids: set[bytes] = set(settings.banned_node_ids)
        self.trusted_ids: set[bytes] = set(settings.trusted_node_ids)
        self._punished_ids: OrderedDict[str, deque[tuple[int, bytes]]] = OrderedDict()
        self._redials: OrderedDict[str, deque[tuple[int, bytes]]] = OrderedDict()
        self._observers: list[Callable[[], None]] = []
        self._pending: IDelayedCall | None = None
        # Peers found allowed, kept until something could refuse them (a
        # record turned bad, a ban, a trust withdrawn: L{_notify}); a
        # refusal is never kept, since punishments end with time.
        self._allowed: set[tuple[bytes | None, str]] = set()

    def _now(self) -> int:
        """
        The time in unix milliseconds.
        """
        return int(self._clock.seconds() * 1000)

    def stopService(self) -> "Deferred[None] | None":
        """
        Drop a pending notification of the observers.
        """
        if self._pending is not None and self._pending.active():
            self._pending.cancel()
        self._pending = None
        return super().stopService()

    # IReputation

    def record_event(self, event: str, node_id: bytes | None, address: str) -> None:
        """
        Record C{event} against the node id when the handshake proved it,
        else against the IP address; tell the observers when a record
        turns bad.  A node id punished counts against its address: the
        address is punished when L{ReputationSettings.churn_limit} of its
        node ids were punished within the churn window, or when
        L{ReputationSettings.redial_limit} handshakes of punished or banned
        node ids came from it (the node id is refused after each, the
        address then before the handshake).

        @raise ValueError: C{event} is not a L{nodex.api.peers.PeerEvent}.
        """
        now = self._now()
        key = self._address_key(address)
        turned_bad = []
        if node_id is not None:
            if event == PeerEvent.SUCCESSFUL_HANDSHAKE and self._redialed(key, node_id, now):
                if self._record_address(key, PeerEvent.INVALID_MESSAGE, now):
                    turned_bad.append(("address", key, self.addresses.get(key)))
            if self.nodes.record(node_id, event, now, punish=not self.is_trusted(node_id, address)):
                turned_bad.append(("node", node_id.hex()[:8], self.nodes.get(node_id)))
                if self._churned(key, node_id, now) and self._record_address(key, PeerEvent.INVALID_MESSAGE, now):
                    turned_bad.append(("address", key, self.addresses.get(key)))
        elif self._record_address(key, event, now):
            turned_bad.append(("address", key, self.addresses.get(key)))
        for kind, name, score in turned_bad:
            log.info(
                "peer {kind} {name} punished after {event} until {until} ms (punishment {count})",
                kind=kind, name=name, event=event, until=score.punished_until, count=score.punishments,
            )
        if turned_bad:
            self._notify()

    def _record_address(self, key: str, event: str, now: int) -> bool:
        """
        Record C{event} against an address's record (never punished when trusted).
        """
        return self.addresses.record(key, event, now, punish=not self._trusted_address(key))

    def _redialed(self, key: str, node_id: bytes, now: int) -> bool:
        """
        A handshake of C{node_id} from the address C{key}: when the node id
        is punished or banned (its connection is refused next), count a
        redial against the address; whether that makes
        L{ReputationSettings.redial_limit} within the churn window.
        """
        if node_id not in self.banned_ids and self.nodes.has_good_reputation(node_id, now):
            return False
        redials = self._recent(self._redials, key, now)
        redials.append((now, node_id))
        if len(redials) >= self.settings.redial_limit:
            redials.clear()
            return True
        return False

    def _recent(self, table: OrderedDict[str, deque[tuple[int, bytes]]], key: str, now: int) -> deque[tuple[int, bytes]]:
        """
        The entries C{(time, node id)} of the address C{key} in C{table}
        within the churn window (the last L{CHURN_ADDRESSES} addresses are
        remembered).
        """
        entries = table.get(key)
        if entries is None:
            entries = table[key] = deque()
            if len(table) > CHURN_ADDRESSES:
                table.popitem(last=False)
        else:
            table.move_to_end(key)
        while entries and entries[0][0] <= now - self.settings.churn_window:
            entries.popleft()
        return entries

    def _churned(self, key: str, node_id: bytes, now: int) -> bool:
        """
        Count a node id punished from the address C{key}; whether that makes
        L{ReputationSettings.churn_limit} within the window.
        """
        punished = self._recent(self._punished_ids, key, now)
        if all(other != node_id for _, other in punished):
            punished.append((now, node_id))
        if len(punished) >= self.settings.churn_limit:
            punished.clear()
            return True
        return False

    def is_allowed(self, node_id: bytes | None, address: str) -> bool:
        """
        Whether a peer may connect, or have its messages handled, now.

        It is asked before every message of every peer: a yes is kept
        (at most L{ALLOWED_CACHE} of them) until a record turns bad, a ban
        is added or a trust withdrawn, all of which drop every kept answer.
        A kept answer does not mark the records as used: the least recently
        used record of a full table is the least recently I{scored} one.
        """
        if (node_id, address) in self._allowed:
            return True
        ip = parse_peer_address(address)
        if ip is not None and self.bans.is_banned(ip):
            return False
        if node_id is not None and node_id in self.banned_ids:
            return False
        if not self.is_trusted(node_id, address):
            now = self._now()
            if node_id is not None and not self.nodes.has_good_reputation(node_id, now):
                return False
            key = str(ip) if ip is not None else address
            if not self.addresses.has_good_reputation(key, now):
                return False
        if len(self._allowed) >= ALLOWED_CACHE:
            self._allowed.clear()
        self._allowed.add((node_id, address))
        return True

    def is_trusted(self, node_id: bytes | None, address: str) -> bool:
        """
        Whether the operator trusts the node id or the address
        (C{scoring.trusted_peer_ids}, C{scoring.trusted_peer_ips}).
        """
        if node_id is not None and node_id in self.trusted_ids:
            return True
        return self._trusted_address(address)

    def _trusted_address(self, address: str) -> bool:
        ip = parse_peer_address(address)
        return ip is not None and any(ip in network for network in self.trusted)

    def add_ban_observer(self, observer: Callable[[], None]) -> None:
        """
        Call C{observer} on the reactor thread, soon after a record turns bad
        or a ban is added (once for several in the same turn).
        """
        self._observers.append(observer)

    def _address_key(self, address: str) -> str:
        """
        The key of an address's record: the normalised IP text (an IPv4-mapped
        IPv6 address counts as its IPv4 address), or the text itself.
        """
        ip = parse_peer_address(address)
        return str(ip) if ip is not None else address

    def _notify(self) -> None:
        """
        Schedule one call of every observer; forget the kept answers of L{is_allowed}.
        """
        self._allowed.clear()
        if self._observers and (self._pending is None or not self._pending.active()):
            self._pending = self._clock.callLater(0, self._call_observers)

    def _call_observers(self) -> None:
        """
        Call every observer; one that raises is logged and the others still run.
        """
        self._pending = None
        for observer in list(self._observers):
            try:
                observer()
            except Exception:
                log.failure("a ban observer failed", Failure())

    # IPeerScoring

    def ban_address(self, address: str) -> "Deferred[None]":
        """
        Ban an address, a block, or what a host name resolves to.

        @return: a Deferred firing with L{None}, or failing with L{InvalidBanError}.
        """
        return Deferred.fromCoroutine(self._change_ban(address, ban=True))

    def unban_address(self, address: str) -> "Deferred[None]":
        """
        Lift a ban; not an error when there is none.

        @return: a Deferred firing with L{None}, or failing with L{InvalidBanError}.
        """
        return Deferred.fromCoroutine(self._change_ban(address, ban=False))

    async def _change_ban(self, text: str, ban: bool) -> None:
        """
        Parse C{text}, resolve it if it is a host name, and add or remove the bans.

        @raise InvalidBanError: it cannot be banned.
        """
        target = parse_ban_target(text)
        targets: list[IPAddress | AddressBlock]
        if isinstance(target, HostName):
            targets = await self._resolved(target.name)
        else:
            targets = [target]
        changed = False
        for each in targets:
            changed |= self.bans.add(each) if ban else self.bans.remove(each)
        if changed:
            log.info(
                "{what} {target} ({addresses})",
                what="banned" if ban else "unbanned", target=text,
                addresses=", ".join(str(each) for each in targets),
            )
        if ban and changed:
            self._notify()

    async def _resolved(self, name: str) -> list[IPAddress | AddressBlock]:
        """
        The addresses C{name} resolves to, each checked.

        @raise InvalidBanError: it resolves to nothing, to something
            malformed, or to a loopback or wildcard address.
        """
        try:
            texts = await self._resolve(name)
        except Exception:
            log.failure("cannot resolve {name}", Failure(), name=name)
            raise InvalidBanError(name) from None
        if not texts:
            raise InvalidBanError(name)
        addresses: list[IPAddress | AddressBlock] = []
        for text in texts:
            try:
                address = ipaddress.ip_address(text.partition("%")[0])
            except ValueError:
                raise InvalidBanError(name) from None
            addresses.append(check_bannable(address, name))
        return addresses

    def ban_node(self, node_id: bytes) -> bool:
        """
        Ban a node id until L{unban_node} (or a restart: the configured
        bans are C{scoring.banned_peer_ids}); its connections are dropped at
        once.  Whether it was not banned already.
        """
        if node_id in self.banned_ids:
            return False
        self.banned_ids.add(node_id)
        log.info("banned node {node_id}", node_id=node_id.hex())
        self._notify()
        return True

    def unban_node(self, node_id: bytes) -> bool:
        """
        Lift a node id's ban (run-time or configured); whether there was one.
        """
        if node_id not in self.banned_ids:
            return False
        self.banned_ids.discard(node_id)
        log.info("unbanned node {node_id}", node_id=node_id.hex())
        return True

    def banned_nodes(self) -> list[str]:
        """
        The banned node ids, in hex, sorted.
        """
        return sorted(node_id.hex() for node_id in self.banned_ids)

    def trust_node(self, node_id: bytes, trusted: bool) -> bool:
        """
        Trust a node id (scored, never punished, reserved slots) or stop
        trusting it, until a restart; whether that changed anything.
        """
        if (node_id in self.trusted_ids) == trusted:
            return False
        if trusted:
            self.trusted_ids.add(node_id)
        else:
            self.trusted_ids.discard(node_id)
            self._allowed.clear()
        return True

    def banned_addresses(self) -> list[str]:
        """
        The banned single addresses, then the blocks as C{<address>/<bits>}.
        """
        return self.bans.listing()

    def peer_records(self) -> list[ScoringRecord]:
        """
        The records by node id (least recently used first), then by address.
        """
        now = self._now()
        records = [ScoringRecord.of("node", key.hex()[:8], score) for key, score in self.nodes.items(now)]
        records += [ScoringRecord.of("address", str(key), score) for key, score in self.addresses.items(now)]
        return records

    def clear_address_record(self, address: str) -> bool:
        """
        Forget an address's record; whether there was one.
        """
        return self.addresses.remove(self._address_key(address))

    def clear_node_records(self, prefix: str) -> int:
        """
        Forget the records of the node ids whose hex form starts with C{prefix}.
        """
        matching = [key for key in self.nodes.keys() if key.hex().startswith(prefix.lower())]
        for key in matching:
            self.nodes.remove(key)
        return len(matching)


def trusted_network(text: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    """
    One entry of C{scoring.trusted_peer_ips}: an address (a block of one)
    or a CIDR block; loopback may be trusted, unlike banned.

    @raise ValueError: not an address or block.
    """
    network = ipaddress.ip_network(text, strict=False)
    if isinstance(network, ipaddress.IPv6Network) and network.network_address.ipv4_mapped is not None:
        mapped = network.network_address.ipv4_mapped
        return ipaddress.ip_network(f"{mapped}/{max(0, network.prefixlen - 96)}", strict=False)
    return network


def configured_node_ids(texts: Iterable[str]) -> frozenset[bytes]:
    """
    The node ids of C{scoring.banned_peer_ids} (hex, already checked by the
    configuration).
    """
    return frozenset(bytes.fromhex(text.removeprefix("0x")) for text in texts)


__all__ = [
    "ReputationService",
    "ReputationSettings",
    "Resolve",
    "configured_node_ids",
    "host_resolver",
    "trusted_network",
]
