"""
The peer network service: the listener, the dialed peers and their
reconnection, the limits, peer exchange, serving peers' requests, and the
messages of established peers, handed to the L{ChainRelay} (C{docs/p2p.md}).

It sees the node only through L{nodex.api}: the chain (an L{IPeerChain}),
the transaction pool and the reputation record.
"""

import ipaddress
import os
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from twisted.application.service import Service
from twisted.internet.defer import Deferred, DeferredList, maybeDeferred, succeed
from twisted.internet.endpoints import connectProtocol
from twisted.internet.interfaces import (
    IDelayedCall,
    IListeningPort,
    IReactorTime,
    IStreamClientEndpoint,
    IStreamServerEndpoint,
)
from twisted.internet.protocol import Factory
from twisted.internet.threads import deferToThreadPool
from twisted.logger import Logger
from twisted.python.failure import Failure
from twisted.python.threadpool import ThreadPool
from zope.interface import implementer

from nodex.api.chain import IPeerChain
from nodex.api.peers import (
    IPeerAdmin,
    IPeerNetwork,
    IReputation,
    NodeInfo,
    PeerDetail,
    PeerEvent,
    PeerInfo,
    PeerURL,
    SyncStatus,
)
from nodex.api.pool import ITransactionPool
from nodex.p2p.messages import WIRE_PROTOCOL_VERSION
from nodex.p2p.admission import Gatekeeper
from nodex.p2p.errors import DisconnectReason, P2PError
from nodex.p2p.identity import NodeKey, load_or_create_node_key
from nodex.p2p.messages import (
    GetBlockBodies,
    GetBlockHeaders,
    GetPeers,
    Message,
    MessageCode,
    NewBlock,
    NewBlockHashes,
    PeerAddress,
    Peers,
    RecentMessages,
    Status,
    Transactions,
    decode_and_hash,
)
from nodex.p2p.host import ChainStatus, NetworkSettings, PeerSettings
from nodex.p2p.peerstore import PEER_STORE_FILE, PeerStore
from nodex.p2p.protocol import PeerProtocol
from nodex.p2p.relay import ChainRelay
from nodex.p2p.sync import Synchroniser
from nodex.structures.transactions import Transaction

TEND_SECONDS = 30.0
"""How often the peer store is saved (when changed) and stored peers are dialed while outbound peers are lacking."""


SORTED_AT_ONCE = 16
"""A peer's TRANSACTIONS message of at most this many, finding its lane idle, is sorted as it arrives."""


class _PeerFactory(Factory):
    """
    Makes inbound peer protocols, refusing connections beyond the limits.
    """

    def __init__(self, network: "PeerNetwork") -> None:
        self._network = network

    def buildProtocol(self, addr: Any) -> PeerProtocol | None:
        """
        A protocol for an inbound connection, or L{None} (the connection is
        closed at once) beyond the node's or the address's limits.
        """
        network = self._network
        if not network.admit(str(getattr(addr, "host", ""))):
            return None
        return network.new_protocol(inbound=True)


@implementer(IPeerNetwork, IPeerAdmin)
class PeerNetwork(Service):
    """
    The node's peers.

    @ivar node_key: the node's key (read or created when the service starts).
    @ivar unfinished_handshakes: how many outbound connections ended before their handshake, by C{host:port}.
    @ivar relay: what is done with peers' blocks and transactions, and how new ones spread.
    @ivar pool: where peers' transactions go and whose new ones are spread
        (may be set after construction, since the pool is composed later).
    @ivar peer_settings: the limits of each connection (C{settings.peer}).
    """

    log = Logger()
    peer_settings: PeerSettings

    def __init__(
        self,
        chain: IPeerChain,
        reputation: IReputation,
        clock: IReactorTime,
        datadir: Path,
        settings: NetworkSettings,
        listen: IStreamServerEndpoint | None,
        connect: Callable[[str, int], IStreamClientEndpoint],
        pool: ITransactionPool | None = None,
        decoder_pool: Callable[[], ThreadPool] | None = None,
        entropy: Callable[[int], bytes] = os.urandom,
    ) -> None:
        """
        @param datadir: where the node key lives.
        @param listen: where to accept peers (L{None}: only dial).
        @param connect: the client endpoint to a peer's host and port (TCP or TLS).
        @param decoder_pool: makes the one-thread pool of the decoder thread
            when the service starts (the node passes one whose thread runs
            at the workers' lower priority); by default a plain
            L{ThreadPool}.
        @param entropy: returns that many random bytes (the connections'
            challenges and ping nonces); the network simulator gives a
            seeded one, so that a run replays exactly.
        """
        self.chain = chain
        self.reputation = reputation
        self.settings = settings
        self.pool = pool
        self._clock = clock
        self._datadir = datadir
        self._listen = listen
        self._connect = connect
        self._entropy = entropy
        self.node_key: NodeKey | None = None  # type: ignore[assignment]
        self._port: IListeningPort | None = None
        self._peers: dict[bytes, PeerProtocol] = {}
        # Insertion-ordered (a dict, not a set): a stop or a ban sweep closes
        # connections in the order they were made, the same in every run (the
        # network simulator replays a run exactly).
        self._connections: dict[PeerProtocol, None] = {}
        self._dialing: dict[tuple[str, int], PeerProtocol | None] = {}
        self._failures: dict[tuple[str, int], int] = {}
        self._redials: dict[tuple[str, int], IDelayedCall] = {}
        self._target_ids: dict[tuple[str, int], bytes] = {}
        self._covered: dict[bytes, tuple[str, int]] = {}
        self._last_addresses: dict[bytes, str] = {}
        self.gatekeeper = Gatekeeper(
            settings, reputation, clock, lambda: self._connections, lambda: self._peers.values(), self._configured_ids
        )
        self.unfinished_handshakes: Counter[str] = Counter()
        self.peer_store = PeerStore(datadir / PEER_STORE_FILE, clock)
        self._static: set[tuple[str, int]] = set(settings.bootstrap)
        self._expected_ids: dict[tuple[str, int], bytes] = dict(settings.expected_ids)
        self._tending: IDelayedCall | None = None
        self._attempts: dict[PeerProtocol, Deferred[Any]] = {}
        self._closing: list[Deferred[None]] = []
        self._decoder: ThreadPool | None = None
        self.shared_transactions: Mapping[bytes, Transaction] | None = None
        """
        Transactions known beyond this node's pool, by hash, found by
        L{known_transaction} when the pool lacks them: L{None} in a node; the
        simulator's clients' transactions, shared by its nodes
        (C{docs/simulation.md}, "Cost").
        """
        self._recent_messages = RecentMessages(self.known_transaction)
        self._make_decoder = decoder_pool or (lambda: ThreadPool(1, 1, "nodex-p2p-decode"))
        self.sync = Synchroniser(chain, self.established_peers, clock, settings.progress_interval, self._synced)
        self.relay = ChainRelay(
            chain, self.sync, self.established_peers, lambda: self.running,
            lambda event, node_id: reputation.record_event(event, node_id, self._last_addresses.get(node_id, "")),
            clock=clock, entropy=entropy, transaction_delay=settings.transaction_delay,
            fetch_delay=settings.fetch_delay,
        )
        chain.add_observer(self.relay.chain_changed)
        chain.add_side_observer(self.relay.side_block)
        chain.add_unused_observer(self.relay.unused)
        reputation.add_ban_observer(self._bans_changed)
        if pool is not None:
            self.use_pool(pool)

    def use_pool(self, pool: ITransactionPool) -> None:
        """
        Send peers' transactions to C{pool}, and the pool's new pending transactions to peers.
        """
        self.pool = self.relay.pool = pool
        pool.add_observer(self.relay.transaction_pending)

    @property
    def settings(self) -> NetworkSettings:
        """
        The network's settings; C{peer_settings}, the limits of each
        connection, follows them (a plain attribute: every message reads
        it, some more than once).
        """
        return self._settings

    @settings.setter
    def settings(self, settings: NetworkSettings) -> None:
        self._settings = settings
        self.peer_settings = settings.peer

    # IPeerNetwork

    def is_listening(self) -> Deferred[bool]:
        """
        Whether the peer server listens.
        """
        return succeed(self._port is not None)

    def peers(self) -> list[PeerInfo]:
        """
        The established peers.
        """
        return [
            PeerInfo(peer.node_id or b"", peer.dialed_host or "", peer.address, peer.port)
            for peer in self._peers.values()
        ]

    def queue_size(self) -> int:
        """
        Peer messages received and not handled yet (blocks waiting for
        import, transactions for the pool, requests being answered), and
        blocks of a sync waiting for import.
        """
        return sum(peer.queued for peer in self._connections) + self.sync.importing

    def sync_status(self) -> SyncStatus | None:
        """
        The sync in course, if any.
        """
        return self.sync.current_status()

    # IPeerAdmin

    def node_info(self) -> NodeInfo | None:
        """
        This node on the peer network (L{None} before it started).
        """
        if self.node_key is None:
            return None
        status = self.chain_status()
        host = str(getattr(self._port.getHost(), "host", "")) if self._port is not None else ""  # type: ignore[attr-defined]
        return NodeInfo(
            self.node_key.node_id, host, self.listening_port, status.network_id, status.genesis_hash,
            status.head_hash, status.head_number, status.total_difficulty, WIRE_PROTOCOL_VERSION,
            self.peer_settings.encryption,
        )

    def peer_details(self) -> list[PeerDetail]:
        """
        The established peers, in detail.
        """
        now = self._clock.seconds()
        return [
            PeerDetail(
                peer.node_id or b"", peer.dialed_host or "", peer.address, peer.port,
                peer.hello.listen_port if peer.hello is not None else 0, peer.inbound,
                peer.hello.protocol_version if peer.hello is not None else 0,
                peer.head_hash, peer.head_number, peer.total_difficulty, peer.shown_number, peer.latency,
                now - peer.connected_at, peer.dial_target in self._static,
            )
            for peer in self.established_peers()
        ]

    def add_peer(self, url: PeerURL) -> bool:
        """
        Keep a static peer: dial it now, and redial it with backoff.
        """
        if not self.running:
            return False
        target = (url.host, url.port)
        self._static.add(target)
        if url.node_id is not None:
            self._expected_ids[target] = url.node_id
        self.log.info("static peer added: {url}", url=str(url))
        self.dial(url.host, url.port, redial=True)
        return True

    def remove_peer(self, url: PeerURL) -> bool:
        """
        Stop keeping a peer; close its connection; forget it from the peer store.
        """
        target = (url.host, url.port)
        removed = target in self._static or target in self._failures
        self._static.discard(target)
        self._failures.pop(target, None)
        self._expected_ids.pop(target, None)
        call = self._redials.pop(target, None)
        if call is not None and call.active():
            call.cancel()
        removed |= self.peer_store.remove(*target)
        node_id = url.node_id or self._target_ids.get(target)
        for peer in list(self._connections):
            if peer.closed:
                continue
            if (node_id is not None and peer.node_id == node_id and peer.established) or peer.dial_target == target:
                peer.disconnect(DisconnectReason.REQUESTED)
                removed = True
        if removed:
            self.log.info("peer removed: {url}", url=str(url))
        return removed

    # Service

    def startService(self) -> None:
        """
        Read or create the node key, listen, and dial the bootstrap peers.

        @raise Exception: the listener cannot listen (a port in use), or the
            node key is unusable.
        """
        self.node_key = load_or_create_node_key(self._datadir)
        self.sync.stopped = False
        self._decoder = self._make_decoder()
        self._decoder.start()
        super().startService()
        self.log.info("P2P node id {node_id}", node_id=self.node_key.node_id.hex())
        if self._listen is not None:
            failures: list[Failure] = []
            self._listen.listen(_PeerFactory(self)).addCallbacks(self._listening, failures.append)
            if failures:
                self.running = False
                self.log.critical("P2P server cannot listen: {error}", error=failures[0].getErrorMessage())
                self._stop_decoder()
                failures[0].raiseException()
        for host, port in self.settings.bootstrap:
            self.dial(host, port, redial=True)
        self.peer_store.load()
        self._dial_stored()
        self._tending = self._clock.callLater(TEND_SECONDS, self._tend)

    def _dial_stored(self) -> None:
        """
        Dial stored peers (once each) while outbound peers and dials in
        flight are fewer than C{max_outbound}: at start, so that a node
        whose configured peers are down reaches the others it knew, and
        whenever peers are lacking.
        """
        assert self.node_key is not None
        own = self.node_key.node_id.hex()
        connected = {node_id.hex() for node_id in self._peers}
        room = self.settings.max_outbound - len(self._dialing) - sum(1 for peer in self._peers.values() if not peer.inbound)
        for entry in self.peer_store.candidates():
            if room <= 0:
                return
            target = (entry.host, entry.port)
            if entry.node_id == own or entry.node_id in connected:
                continue
            if target in self._dialing or target in self.settings.bootstrap:
                continue
            self.dial(entry.host, entry.port)
            room -= 1

    def _tend(self) -> None:
        """
        Save the peer store if it changed; dial stored peers if peers are lacking.
        """
        self._tending = None
        if not self.running:
            return
        if self.peer_store.dirty:
            self.peer_store.save()
        self._dial_stored()
        self._tending = self._clock.callLater(TEND_SECONDS, self._tend)

    def _listening(self, port: IListeningPort) -> None:
        self._port = port
        address = port.getHost()
        self.log.info("P2P server listening on {host}:{port}", host=address.host, port=address.port)  # type: ignore[attr-defined]

    @property
    def listening_port(self) -> int:
        """
        The port the peer server listens on (0 when it does not).
        """
        return int(self._port.getHost().port) if self._port is not None else 0  # type: ignore[attr-defined]

    def stopService(self) -> Deferred[None] | None:
        """
        Stop dialing, say goodbye to every peer, and stop listening.
        """
        super().stopService()
        self.sync.stop()
        self.relay.stop()
        if self._tending is not None and self._tending.active():
            self._tending.cancel()
        self._tending = None
        self.peer_store.save()
        for call in self._redials.values():
            if call.active():
                call.cancel()
        self._redials.clear()
        for attempt in list(self._attempts.values()):
            attempt.cancel()
        for peer in list(self._connections):
            if peer.transport is not None:
                peer.disconnect(DisconnectReason.SHUTTING_DOWN)
        waiting: list[Deferred[Any]] = []
        if self._connections:
            closed: Deferred[None] = Deferred()
            self._closing.append(closed)
            waiting.append(closed)
        self._stop_decoder()
        port, self._port = self._port, None
        if port is not None:
            stopped = port.stopListening()
            if stopped is not None:
                waiting.append(stopped)
        return DeferredList(waiting).addCallback(lambda _: None) if waiting else None

    def _stop_decoder(self) -> None:
        """
        Stop the decoder thread after the frame it is decoding; frames of
        connections still closing are decoded on the reactor thread.
        """
        decoder, self._decoder = self._decoder, None
        if decoder is not None:
            decoder.stop()

    def known_transaction(self, tx_hash: bytes) -> Transaction | None:
        """
        A transaction of this node's pool, by hash (a peer's copy of it is
        not decoded again), else one of L{shared_transactions}.
        """
        pool = self.pool
        held = pool.get(tx_hash) if pool is not None else None
        if held is None and self.shared_transactions is not None:
            return self.shared_transactions.get(tx_hash)
        return held

    def decode(self, payload: bytes) -> Message:
        """
        Decode a small frame's payload: gossip that another peer sent byte
        for byte lately is decoded once (L{RecentMessages}).

        @raise nodex.p2p.errors.MessageError: the payload is not a message.
        """
        return self._recent_messages.decode(payload)

    def decode_in_thread(self, payload: bytes) -> Deferred[Message]:
        """
        Decode a large frame's payload, and hash the headers it carries, on
        the decoder thread (at once when the service is not running).

        @return: a Deferred firing with the message, or failing with
            L{nodex.p2p.errors.MessageError}.
        """
        decoder = self._decoder
        if decoder is None:
            return maybeDeferred(decode_and_hash, payload)
        return deferToThreadPool(self._clock, decoder, decode_and_hash, payload)  # type: ignore[arg-type]

    def _maybe_closed(self) -> None:
        """
        Fire the stop's waiter once the last connection has ended.
        """
        if not self.running and not self._connections:
            closing, self._closing = self._closing, []
            for waiter in closing:
                waiter.callback(None)

    # Connections

    def new_protocol(self, inbound: bool, dialed_host: str | None = None) -> PeerProtocol:
        """
        A protocol for a new connection, tracked until it ends.
        """
        peer = PeerProtocol(self, self._clock, inbound, dialed_host, entropy=self._entropy)
        self._connections[peer] = None
        return peer

    def admit(self, host: str) -> bool:
        """
        Whether an inbound connection from C{host} gets a slot (L{Gatekeeper.admit}).
        """
        return self.gatekeeper.admit(host)

    def _configured_ids(self) -> set[bytes]:
        """
        The node ids of the configured and static peers this node has reached.
        """
        return {node_id for target, node_id in self._target_ids.items() if target in self._static}

    @property
    def handshaking(self) -> int:
        """
        Connections whose handshake is not finished.
        """
        return len(self._connections) - len(self._peers)

    def dial(self, host: str, port: int, redial: bool = False) -> None:
        """
        Connect to a peer unless a connection to it is open or being made.

        @param redial: dial it again (with backoff) whenever the connection fails or ends.
        """
        target = (host, port)
        if not self.running or target in self._dialing or self._connected_target(target):
            return
        if _is_ip(host) and not self.reputation.is_allowed(None, host):
            self.log.info("not dialing peer {host}:{port}: refused by its reputation", host=host, port=port)
            return
        self._dialing[target] = None
        if redial:
            self._failures.setdefault(target, 0)
        peer = self.new_protocol(inbound=False, dialed_host=host)
        peer.dial_target = target
        self._dialing[target] = peer
        attempt = connectProtocol(self._connect(host, port), peer)
        self._attempts[peer] = attempt
        attempt.addBoth(self._dial_ended, peer, target)

    def _dial_ended(self, result: Any, peer: PeerProtocol, target: tuple[str, int]) -> None:
        """
        Forget a finished connection attempt; a failed one is redialed later.
        """
        self._attempts.pop(peer, None)
        if not isinstance(result, Failure):
            return
        if self.running:
            self.log.info(
                "cannot connect to peer {host}:{port}: {error}", host=target[0], port=target[1], error=result.getErrorMessage()
            )
        self._connections.pop(peer, None)
        self.peer_store.failed(*target)
        if self._dialing.get(target) is peer:
            del self._dialing[target]
        self._schedule_redial(target)
        self._maybe_closed()

    def _connected_target(self, target: tuple[str, int]) -> bool:
        """
        Whether the node a target led to before is connected now (over
        another connection, such as the one it dialed to this node): it is
        not dialed again until that connection ends.
        """
        node_id = self._target_ids.get(target)
        if node_id is None or node_id not in self._peers:
            return False
        if target in self._failures:
            self._covered[node_id] = target
        return True

    def _schedule_redial(self, target: tuple[str, int]) -> None:
        if target not in self._failures or not self.running or target in self._redials:
            return
        if self._connected_target(target):
            return
        failures = self._failures[target]
        self._failures[target] = failures + 1
        delay = min(self.settings.max_reconnect_delay, self.settings.reconnect_delay * 2**failures)

        def redial() -> None:
            self._redials.pop(target, None)
            self.dial(*target, redial=True)

        self._redials[target] = self._clock.callLater(delay, redial)

    # PeerHost

    def chain_status(self) -> ChainStatus:
        """
        This node's side of a hello.
        """
        head = self.chain.head
        return ChainStatus(
            self.settings.network_id, self.settings.genesis_hash, head.header.hash, head.header.number,
            head.total_difficulty, self.listening_port,
        )

    def is_allowed(self, node_id: bytes | None, address: str) -> bool:
        """
        Ask the reputation record.
        """
        return self.reputation.is_allowed(node_id, address)

    def record_event(self, peer: PeerProtocol, event: str) -> None:
        """
        Tell the reputation record: against the node id once the handshake
        proved it, else against the address (C{docs/reputation.md}).
        """
        self.reputation.record_event(event, peer.proven_node_id, peer.address)

    def handshake_failed(self, peer: PeerProtocol, why: str) -> None:
        """
        Count a failed handshake against the peer's address (L{Gatekeeper.handshake_failed}).
        """
        self.gatekeeper.handshake_failed(peer.address, why)

    def peer_ready(self, peer: PeerProtocol) -> DisconnectReason | None:
        """
        Adopt a peer after its handshake, within the limits.  Of two
        connections between the same nodes (both dialed at once), both
        sides keep the one dialed by the node with the smaller id.
        """
        assert peer.node_id is not None
        expected = self._expected_ids.get(peer.dial_target) if peer.dial_target is not None else None
        if expected is not None and expected != peer.node_id:
            self.log.info(
                "peer at {host}:{port} proved node id {found}, not the {expected} of its URL",
                host=peer.dial_target[0], port=peer.dial_target[1],  # type: ignore[index]
                found=peer.node_id.hex()[:8], expected=expected.hex()[:8],
            )
            return DisconnectReason.BAD_HANDSHAKE
        if peer.dial_target is not None:
            self._target_ids[peer.dial_target] = peer.node_id
        self._last_addresses[peer.node_id] = peer.address
        if len(self._last_addresses) > 4096:
            self._last_addresses.pop(next(iter(self._last_addresses)))
        existing = self._peers.get(peer.node_id)
        if existing is not None and not self._replaces(peer, existing):
            return DisconnectReason.ALREADY_CONNECTED
        same_side = sum(1 for other in self._peers.values() if other.inbound == peer.inbound and other is not existing)
        limit = self.settings.max_inbound if peer.inbound else self.settings.max_outbound
        if peer.inbound and self.gatekeeper.privileged(peer.node_id, peer.address):
            limit += self.settings.reserved_slots
        if same_side >= limit:
            return DisconnectReason.TOO_MANY_PEERS
        if existing is not None:
            del self._peers[peer.node_id]
            existing.disconnect(DisconnectReason.ALREADY_CONNECTED)
        self._peers[peer.node_id] = peer
        target = peer.dial_target
        if target is not None and target in self._failures:
            self._failures[target] = 0
        if target is not None:
            self.peer_store.succeeded(*target, peer.node_id)
        elif peer.hello is not None and peer.hello.listen_port:
            self.peer_store.succeeded(peer.address, peer.hello.listen_port, peer.node_id)
        self.log.info(
            "peer {peer} connected ({direction}, {address}:{port}, block {number})",
            peer=peer.short_id, direction="inbound" if peer.inbound else "outbound",
            address=peer.address, port=peer.port, number=peer.head_number,
        )
        peer.send(GetPeers())
        self.sync.maybe_sync()
        return None

    def _replaces(self, peer: PeerProtocol, existing: PeerProtocol) -> bool:
        """
        Whether a new connection to an already connected node replaces the
        existing one: only when they were dialed by different sides and
        the new one by the node with the smaller id.
        """
        assert self.node_key is not None and peer.node_id is not None
        if peer.inbound == existing.inbound:
            return False
        dialer = peer.node_id if peer.inbound else self.node_key.node_id
        other = existing.node_id if existing.inbound else self.node_key.node_id
        assert other is not None
        return dialer < other

    def peer_lost(self, peer: PeerProtocol) -> None:
        """
        Forget a connection; redial a bootstrap peer.
        """
        self._connections.pop(peer, None)
        self.gatekeeper.peer_lost(peer)
        if peer.node_id is not None and self._peers.get(peer.node_id) is peer:
            del self._peers[peer.node_id]
            self.record_event(peer, PeerEvent.DISCONNECTION)
            self.log.info("peer {peer} disconnected", peer=peer.short_id)
            covered = self._covered.pop(peer.node_id, None)
            if covered is not None and covered not in self._dialing:
                self._schedule_redial(covered)
        target = peer.dial_target
        if target is not None and not peer.was_established and peer.disconnect_reason is None and self.running:
            why = peer.lost_reason.getErrorMessage() if peer.lost_reason is not None else "closed"
            if peer.received_disconnect is not None:
                why = f"refused: {DisconnectReason.describe(peer.received_disconnect)}"
            self.unfinished_handshakes[f"{target[0]}:{target[1]}"] += 1
            self.peer_store.failed(*target)
            self.log.info("connection to peer {host}:{port} ended before its handshake: {why}", host=target[0], port=target[1], why=why)
        if target is not None and self._dialing.get(target) is peer:
            del self._dialing[target]
            self._schedule_redial(target)
        self._maybe_closed()

    def _synced(self) -> None:
        """
        A sync run ended: tell the peers where the head is now.
        """
        if self.running:
            self.relay.send_status()

    def established_peers(self) -> list[PeerProtocol]:
        """
        The adopted peers whose connection is open.
        """
        return [peer for peer in self._peers.values() if peer.established]

    def _bans_changed(self) -> None:
        """
        Disconnect every open connection the reputation service now refuses:
        established peers by node id and address, connections still in their
        handshake (whose node id is not proven) by address.
        """
        for peer in list(self._connections):
            if peer.closed or peer.transport is None:
                continue
            node_id = peer.node_id if peer.established else None
            if not self.reputation.is_allowed(node_id, peer.address):
                peer.disconnect(DisconnectReason.BAD_REPUTATION)

    # Messages

    def peer_message(self, peer: PeerProtocol, message: Message) -> Deferred[Any] | None:
        """
        Handle a message of an established peer, by the table of message
        codes: requests are answered concurrently (within the peer's limit
        of requests in flight), blocks and transactions wait in the peer's
        lane (blocks and transactions each in their own, so that a backlog
        of transactions does not stall blocks: both are bounded by the
        connection's inbound queue), the rest is handled at once.

        @return: L{None} when handled, else a Deferred that fires when it is.
        """
        return _MESSAGE_HANDLERS[message.code](self, peer, message)

    def _serve(self, peer: PeerProtocol, message: GetBlockHeaders | GetBlockBodies) -> Deferred[Any] | None:
        if not peer.begin_serving():
            return None
        serving = self._logged(Deferred.fromCoroutine(self.relay.serve(peer, message)))
        return serving.addBoth(lambda _: peer.end_serving())

    def _new_block(self, peer: PeerProtocol, message: NewBlock) -> Deferred[Any] | None:
        # As a small TRANSACTIONS message: finding the lane idle, a block is
        # sorted at once (nothing is ahead of it), and takes the lane only
        # to be imported; most NEW_BLOCKs of a gossiping network bring a
        # block this node has, and cost no lane, coroutine or Deferred.
        if not peer.lane:
            if not self.relay.sort_new_block(peer, message):
                return None
            return self._logged(peer.lane.submit(lambda: self.relay.import_one(peer, message.block)))
        return self._logged(peer.lane.submit(lambda: self.relay.new_block(peer, message)))

    def _transactions(self, peer: PeerProtocol, message: Transactions) -> Deferred[Any] | None:
        # Sorted in the lane too, not as it arrives: a message of 4,096
        # transactions takes milliseconds to sort, and the messages behind
        # an offender's first are never sorted once it is dropped.  A small
        # message that finds the lane idle is sorted at once (in the same
        # order, nothing being ahead of it), and takes the lane only if the
        # pool must check some of it: most messages of a gossiping network
        # bring what this node has, and cost no lane, coroutine or Deferred.
        if len(message.transactions) <= SORTED_AT_ONCE and not peer.transaction_lane:
            fresh = self.relay.sort_transactions(peer, message)
            if not fresh:
                return None
            return self._logged(peer.transaction_lane.submit(lambda: self.relay.check_transactions(peer, fresh)))
        return self._logged(peer.transaction_lane.submit(lambda: self.relay.transactions(peer, message)))

    def _announced(self, peer: PeerProtocol, message: NewBlockHashes) -> None:
        self.relay.announced(peer, message)

    def _status(self, peer: PeerProtocol, message: Status) -> None:
        self.relay.status(peer, message)

    def _get_peers(self, peer: PeerProtocol, message: GetPeers) -> None:
        peer.send(Peers(tuple(self._addresses(exclude=peer))))

    def _peers_message(self, peer: PeerProtocol, message: Peers) -> None:
        self._discovered(message.peers)

    def _logged(self, handling: Deferred[Any]) -> Deferred[None]:
        """
        Log what fails unexpectedly in a message's handling.
        """

        def done(result: Any) -> None:
            if isinstance(result, Failure) and not result.check(P2PError):
                self.log.failure("handling a peer message failed", result)

        return handling.addBoth(done)

    def _addresses(self, exclude: PeerProtocol) -> list[PeerAddress]:
        """
        Where the other established peers accept connections.
        """
        return [
            PeerAddress(peer.address, peer.hello.listen_port, peer.node_id or b"")
            for peer in self.established_peers()
            if peer is not exclude and peer.hello is not None and peer.hello.listen_port and peer.address
        ][:64]

    def _discovered(self, addresses: tuple[PeerAddress, ...]) -> None:
        """
        Dial peers learned by peer exchange while there is room for outbound peers.
        """
        outbound = sum(1 for peer in self._peers.values() if not peer.inbound)
        assert self.node_key is not None
        for address in addresses:
            if outbound >= self.settings.max_outbound:
                return
            if address.node_id == self.node_key.node_id or address.node_id in self._peers:
                continue
            self.dial(address.host, address.port)
            outbound += 1


_MESSAGE_HANDLERS: dict[int, Callable[[PeerNetwork, PeerProtocol, Any], Deferred[Any] | None]] = {
    MessageCode.GET_BLOCK_HEADERS: PeerNetwork._serve,
    MessageCode.GET_BLOCK_BODIES: PeerNetwork._serve,
    MessageCode.NEW_BLOCK: PeerNetwork._new_block,
    MessageCode.NEW_BLOCK_HASHES: PeerNetwork._announced,
    MessageCode.TRANSACTIONS: PeerNetwork._transactions,
    MessageCode.STATUS: PeerNetwork._status,
    MessageCode.GET_PEERS: PeerNetwork._get_peers,
    MessageCode.PEERS: PeerNetwork._peers_message,
}
"""
The messages of established peers that the node handles (the connection
handles the others: L{nodex.p2p.protocol}), by code.
"""


def _is_ip(host: str) -> bool:
    """
    Whether C{host} is an IP address (not a name to resolve).
    """
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


__all__ = ["PeerNetwork"]
