"""
The peer network service: the listener, the dialed peers and their
reconnection, the limits, peer exchange, serving peers' requests, and the
propagation of blocks and transactions (C{docs/p2p.md}).

It sees the node only through L{nodex.interfaces}: the chain (which also
provides L{IBlockSource}), the transaction pool and the reputation record.
"""

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from twisted.application.service import Service
from twisted.internet.defer import Deferred, DeferredList, ensureDeferred, succeed
from twisted.internet.endpoints import connectProtocol
from twisted.internet.interfaces import (
    IDelayedCall,
    IListeningPort,
    IReactorTime,
    IStreamClientEndpoint,
    IStreamServerEndpoint,
)
from twisted.internet.protocol import Factory
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from nodex.interfaces import (
    ChainEvent,
    IPeerNetwork,
    IReputation,
    ImportResult,
    ITransactionPool,
    PeerEvent,
    PeerInfo,
    SyncStatus,
    TransactionRejectedError,
)
from nodex.p2p.errors import DisconnectReason, P2PError
from nodex.p2p.identity import NodeKey, load_or_create_node_key
from nodex.p2p.messages import (
    MAX_HEADERS_PER_MESSAGE,
    BlockBodies,
    BlockHeaders,
    GetBlockBodies,
    GetBlockHeaders,
    GetPeers,
    Message,
    NewBlock,
    NewBlockHashes,
    PeerAddress,
    Peers,
    Status,
    Transactions,
)
from nodex.p2p.protocol import ChainStatus, PeerProtocol, PeerSettings
from nodex.p2p.sync import Synchroniser, import_blocks
from nodex.structures.blocks import Block
from nodex.structures.transactions import Transaction

ANSWER_BYTES = 2 * 1024 * 1024
"""A body answer stops once it holds this many bytes (the asker asks again for the rest)."""

FAR_AHEAD = 32
"""A new block this many numbers above the head is fetched by a sync, not as an orphan."""


@dataclass(frozen=True)
class NetworkSettings:
    """
    The peer network's configuration.

    @ivar bootstrap: C{(host, port)} of the peers to dial and redial.
    @ivar reconnect_delay: the first delay before redialing a lost bootstrap peer, doubled per failure.
    @ivar max_reconnect_delay: the longest delay between redials.
    """

    network_id: int
    genesis_hash: bytes
    bootstrap: tuple[tuple[str, int], ...] = ()
    max_inbound: int = 25
    max_outbound: int = 10
    reconnect_delay: float = 1.0
    max_reconnect_delay: float = 60.0
    progress_interval: float = 10.0
    peer: PeerSettings = field(default_factory=PeerSettings)


class _PeerFactory(Factory):
    """
    Makes inbound peer protocols, refusing connections beyond the limits.
    """

    def __init__(self, network: "PeerNetwork") -> None:
        self._network = network

    def buildProtocol(self, addr: Any) -> PeerProtocol | None:
        if self._network.handshaking >= 2 * self._network.settings.max_inbound:
            return None
        return self._network.new_protocol(inbound=True)


@implementer(IPeerNetwork)
class PeerNetwork(Service):
    """
    The node's peers.

    @ivar node_key: the node's key (read or created when the service starts).
    @ivar unfinished_handshakes: how many outbound connections ended before their handshake, by C{host:port}.
    @ivar answered: how many requests of peers were answered, by kind (C{headers}, C{bodies}).
    @ivar pool: where peers' transactions go and whose new ones are spread
        (may be set after construction, since the pool is composed later).
    """

    log = Logger()

    def __init__(
        self,
        chain: Any,
        reputation: IReputation,
        clock: IReactorTime,
        datadir: Path,
        settings: NetworkSettings,
        listen: IStreamServerEndpoint | None,
        connect: Callable[[str, int], IStreamClientEndpoint],
        pool: ITransactionPool | None = None,
    ) -> None:
        """
        @param chain: provides L{nodex.interfaces.IChainService} and L{nodex.interfaces.IBlockSource}.
        @param datadir: where the node key lives.
        @param listen: where to accept peers (L{None}: only dial).
        @param connect: the client endpoint to a peer's host and port (TCP or TLS).
        """
        self.chain = chain
        self.reputation = reputation
        self.settings = settings
        self.pool = pool
        self._clock = clock
        self._datadir = datadir
        self._listen = listen
        self._connect = connect
        self.node_key: NodeKey | None = None  # type: ignore[assignment]
        self._port: IListeningPort | None = None
        self._peers: dict[bytes, PeerProtocol] = {}
        self._connections: set[PeerProtocol] = set()
        self._dialing: dict[tuple[str, int], PeerProtocol | None] = {}
        self._failures: dict[tuple[str, int], int] = {}
        self._redials: dict[tuple[str, int], IDelayedCall] = {}
        self._handling = 0
        self.answered: Counter[str] = Counter()
        self.unfinished_handshakes: Counter[str] = Counter()
        self._attempts: dict[PeerProtocol, Deferred[Any]] = {}
        self._closing: list[Deferred[None]] = []
        self.sync = Synchroniser(chain, self.established_peers, clock, settings.progress_interval, self._synced)
        chain.add_observer(self._chain_changed)
        reputation.add_ban_observer(self._bans_changed)
        if pool is not None:
            self.use_pool(pool)

    def use_pool(self, pool: ITransactionPool) -> None:
        """
        Send peers' transactions to C{pool}, and the pool's new pending transactions to peers.
        """
        self.pool = pool
        pool.add_observer(self.transaction_pending)

    @property
    def peer_settings(self) -> PeerSettings:
        """
        The limits of each connection.
        """
        return self.settings.peer

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
        Peer messages being handled: blocks waiting for import, requests being answered.
        """
        return self._handling + self.sync.importing

    def sync_status(self) -> SyncStatus | None:
        """
        The sync in course, if any.
        """
        return self.sync.current_status()

    # Service

    def startService(self) -> None:
        """
        Read or create the node key, listen, and dial the bootstrap peers.

        @raise Exception: the listener cannot listen (a port in use), or the
            node key is unusable.
        """
        self.node_key = load_or_create_node_key(self._datadir)
        self.sync.stopped = False
        super().startService()
        self.log.info("P2P node id {node_id}", node_id=self.node_key.node_id.hex())
        if self._listen is not None:
            failures: list[Failure] = []
            self._listen.listen(_PeerFactory(self)).addCallbacks(self._listening, failures.append)
            if failures:
                self.running = False
                self.log.critical("P2P server cannot listen: {error}", error=failures[0].getErrorMessage())
                failures[0].raiseException()
        for host, port in self.settings.bootstrap:
            self.dial(host, port, redial=True)

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
        port, self._port = self._port, None
        if port is not None:
            stopped = port.stopListening()
            if stopped is not None:
                waiting.append(stopped)
        return DeferredList(waiting).addCallback(lambda _: None) if waiting else None

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
        peer = PeerProtocol(self, self._clock, inbound, dialed_host)
        self._connections.add(peer)
        return peer

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
        if not self.running or target in self._dialing:
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
        self._connections.discard(peer)
        if self._dialing.get(target) is peer:
            del self._dialing[target]
        self._schedule_redial(target)
        self._maybe_closed()

    def _schedule_redial(self, target: tuple[str, int]) -> None:
        if target not in self._failures or not self.running or target in self._redials:
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
        Tell the reputation record.
        """
        self.reputation.record_event(event, peer.node_id, peer.address)

    def peer_ready(self, peer: PeerProtocol) -> DisconnectReason | None:
        """
        Adopt a peer after its handshake, within the limits.
        """
        assert peer.node_id is not None
        if peer.node_id in self._peers:
            return DisconnectReason.ALREADY_CONNECTED
        same_side = sum(1 for other in self._peers.values() if other.inbound == peer.inbound)
        if same_side >= (self.settings.max_inbound if peer.inbound else self.settings.max_outbound):
            return DisconnectReason.TOO_MANY_PEERS
        self._peers[peer.node_id] = peer
        target = peer.dial_target
        if target is not None and target in self._failures:
            self._failures[target] = 0
        self.log.info(
            "peer {peer} connected ({direction}, {address}:{port}, block {number})",
            peer=peer.short_id, direction="inbound" if peer.inbound else "outbound",
            address=peer.address, port=peer.port, number=peer.head_number,
        )
        peer.send(GetPeers())
        self.sync.maybe_sync()
        return None

    def peer_lost(self, peer: PeerProtocol) -> None:
        """
        Forget a connection; redial a bootstrap peer.
        """
        self._connections.discard(peer)
        if peer.node_id is not None and self._peers.get(peer.node_id) is peer:
            del self._peers[peer.node_id]
            self.reputation.record_event(PeerEvent.DISCONNECTION, peer.node_id, peer.address)
            self.log.info("peer {peer} disconnected", peer=peer.short_id)
        target = peer.dial_target
        if target is not None and not peer.was_established and peer.disconnect_reason is None and self.running:
            why = peer.lost_reason.getErrorMessage() if peer.lost_reason is not None else "closed"
            if peer.received_disconnect is not None:
                why = f"refused: {DisconnectReason.describe(peer.received_disconnect)}"
            self.unfinished_handshakes[f"{target[0]}:{target[1]}"] += 1
            self.log.info("connection to peer {host}:{port} ended before its handshake: {why}", host=target[0], port=target[1], why=why)
        if target is not None and self._dialing.get(target) is peer:
            del self._dialing[target]
            self._schedule_redial(target)
        self._maybe_closed()

    def established_peers(self) -> list[PeerProtocol]:
        """
        The adopted peers whose connection is open.
        """
        return [peer for peer in self._peers.values() if peer.established]

    def _bans_changed(self) -> None:
        for peer in self.established_peers():
            if not self.reputation.is_allowed(peer.node_id, peer.address):
                peer.disconnect(DisconnectReason.BAD_REPUTATION)

    # Messages

    def peer_message(self, peer: PeerProtocol, message: Message) -> None:
        """
        Handle a message of an established peer.
        """
        if isinstance(message, (GetBlockHeaders, GetBlockBodies)):
            if peer.begin_serving():
                self._track(self._serve(peer, message)).addBoth(lambda _: peer.end_serving())
        elif isinstance(message, NewBlock):
            self._track(self._new_block(peer, message))
        elif isinstance(message, NewBlockHashes):
            self._track(self._announced(peer, message))
        elif isinstance(message, Transactions):
            self._track(self._transactions(peer, message))
        elif isinstance(message, Status):
            self._heard_head(peer, message.head_hash, message.head_number, message.total_difficulty)
            self.sync.maybe_sync()
        elif isinstance(message, GetPeers):
            peer.send(Peers(tuple(self._addresses(exclude=peer))))
        elif isinstance(message, Peers):
            self._discovered(message.peers)

    def _track(self, coroutine: Any) -> Deferred[None]:
        """
        Run a message's handling, counted in L{queue_size}; log what fails unexpectedly.
        """
        self._handling += 1

        def done(result: Any) -> None:
            self._handling -= 1
            if isinstance(result, Failure) and not result.check(P2PError):
                self.log.failure("handling a peer message failed", result)

        return ensureDeferred(coroutine).addBoth(done)

    async def _serve(self, peer: PeerProtocol, request: GetBlockHeaders | GetBlockBodies) -> None:
        """
        Answer a request for headers or bodies from the chain.
        """
        if isinstance(request, GetBlockBodies):
            blocks = await self.chain.get_blocks_by_hash(request.hashes)
            bodies, size = [], 0
            for block in blocks:
                if block is None or size > ANSWER_BYTES:
                    break
                bodies.append((block.transactions, block.uncles))
                size += block.size
            peer.send(BlockBodies(request.request_id, tuple(bodies)))
            self.answered["bodies"] += 1
            return
        origin = request.origin
        if isinstance(origin, bytes):
            header = await self.chain.get_header_by_hash(origin)
            if header is None:
                peer.send(BlockHeaders(request.request_id, ()))
                return
            if request.count == 1:
                peer.send(BlockHeaders(request.request_id, (header,)))
                return
            origin = header.number
        step = (request.skip + 1) * (-1 if request.reverse else 1)
        head = self.chain.head.header.number
        numbers = [origin + step * index for index in range(min(request.count, MAX_HEADERS_PER_MESSAGE))]
        numbers = [number for number in numbers if 0 <= number <= head]
        headers = []
        for header in await self.chain.get_headers_by_number(numbers):
            if header is None:
                break
            headers.append(header)
        peer.send(BlockHeaders(request.request_id, tuple(headers)))
        self.answered["headers"] += 1

    def _heard_head(self, peer: PeerProtocol, head_hash: bytes, number: int, total_difficulty: int) -> None:
        peer.known_blocks.add(head_hash)
        if total_difficulty > peer.total_difficulty:
            peer.head_hash, peer.head_number, peer.total_difficulty = head_hash, number, total_difficulty

    async def _new_block(self, peer: PeerProtocol, message: NewBlock) -> None:
        """
        Import a block a peer sent whole; an orphan makes this node fetch its parents.
        """
        block = message.block
        peer.known_blocks.add(block.hash)
        self._heard_head(peer, block.hash, block.number, message.total_difficulty)
        if block.number > self.chain.head.header.number + FAR_AHEAD:
            self.sync.maybe_sync(peer)
            return
        await self._import_one(peer, block)

    async def _import_one(self, peer: PeerProtocol, block: Block) -> None:
        outcome = (await import_blocks(self.chain, [block]))[0]
        if outcome.result == ImportResult.INVALID_BLOCK:
            peer.offence(PeerEvent.INVALID_BLOCK, DisconnectReason.INVALID_BLOCK, f"block {block.number}: {outcome.reason}")
        elif outcome.result == ImportResult.NO_PARENT:
            self.sync.maybe_sync(peer)
        elif outcome.result != ImportResult.EXIST:
            self.reputation.record_event(PeerEvent.VALID_BLOCK, peer.node_id, peer.address)

    async def _announced(self, peer: PeerProtocol, message: NewBlockHashes) -> None:
        """
        Fetch the announced blocks this node lacks (a sync when they are far ahead).
        """
        for block_hash, number in message.entries:
            peer.known_blocks.add(block_hash)
            if number > peer.head_number:
                peer.head_hash, peer.head_number = block_hash, number
        head = self.chain.head.header.number
        for block_hash, number in message.entries:
            if number > head + FAR_AHEAD:
                self.sync.maybe_sync(peer)
                return
            if await self.chain.get_header_by_hash(block_hash) is not None:
                continue
            headers = await peer.request_headers(block_hash, 1)
            if not headers or headers[0].hash != block_hash:
                peer.offence(PeerEvent.INVALID_MESSAGE, DisconnectReason.PROTOCOL_ERROR, "announced a block it cannot serve")
                return
            bodies = await peer.request_bodies((block_hash,))
            if not bodies:
                peer.offence(PeerEvent.INVALID_MESSAGE, DisconnectReason.PROTOCOL_ERROR, "announced a block it cannot serve")
                return
            await self._import_one(peer, Block(headers[0], *bodies[0]))

    async def _transactions(self, peer: PeerProtocol, message: Transactions) -> None:
        """
        Offer a peer's transactions to the pool.
        """
        for transaction in message.transactions:
            peer.known_transactions.add(transaction.hash)
        if self.pool is None:
            return
        for transaction in message.transactions:
            if self.pool.get(transaction.hash) is not None:
                continue
            try:
                await self.pool.add(transaction)
            except TransactionRejectedError as exc:
                self.log.debug("peer {peer}'s transaction refused: {why}", peer=peer.short_id, why=str(exc))
                self.reputation.record_event(PeerEvent.INVALID_TRANSACTION, peer.node_id, peer.address)
            else:
                self.reputation.record_event(PeerEvent.VALID_TRANSACTION, peer.node_id, peer.address)

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

    # Propagation

    def _chain_changed(self, event: ChainEvent) -> None:
        """
        Spread a new head: whole to a few peers, announced to the rest.
        """
        if event.rewound or not event.adopted or not self.running:
            return
        head = self.chain.head
        block = event.adopted[-1]
        if block.hash != head.header.hash:
            return
        if self.sync.syncing:
            # Peers that sync from this node learn its head from a status
            # now and then, and when the sync ends.
            if block.number % 64 == 0:
                self._send_status()
            return
        unaware = [peer for peer in self.established_peers() if block.hash not in peer.known_blocks]
        whole = max(1, int(math.sqrt(len(unaware))))
        for index, peer in enumerate(unaware):
            peer.known_blocks.add(block.hash)
            if index < whole:
                peer.send(NewBlock(block, head.total_difficulty))
            else:
                peer.send(NewBlockHashes(((block.hash, block.number),)))
                peer.send(Status(block.hash, block.number, head.total_difficulty))

    def _send_status(self) -> None:
        """
        Tell every peer this node's head.
        """
        head = self.chain.head
        for peer in self.established_peers():
            peer.send(Status(head.header.hash, head.header.number, head.total_difficulty))

    def _synced(self) -> None:
        """
        A sync run ended: tell the peers where the head is now.
        """
        if self.running:
            self._send_status()

    def transaction_pending(self, transaction: Transaction) -> None:
        """
        Send a transaction that became pending to the peers that have not seen it.
        """
        for peer in self.established_peers():
            if transaction.hash not in peer.known_transactions:
                peer.known_transactions.add(transaction.hash)
                peer.send(Transactions((transaction,)))


__all__ = ["ANSWER_BYTES", "NetworkSettings", "PeerNetwork"]
