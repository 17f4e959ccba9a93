"""
What the peer network does with blocks and transactions: it answers
peers' header and body requests from the chain, imports the blocks peers
send or announce (an orphan or a far block starts a sync), offers peers'
transactions to the pool, and spreads new heads and pending transactions
to the peers that do not know them (C{docs/p2p.md}, "Propagation").

What a peer sends costs it: a repeat of what it sent before is dropped
and recorded, a block or transaction another peer brought first costs
nothing, a transaction that can never be valid counts towards an
offence, and peers' transactions reach the pool's checks a few at a time
(C{docs/p2p.md}, "Backpressure").
"""

import math
import os
from collections import Counter, OrderedDict, deque
from collections.abc import Callable
from typing import Any

from twisted.internet.defer import Deferred, DeferredSemaphore, maybeDeferred
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.logger import Logger

from nodex.api.chain import ChainEvent, ChainHead, ImportResult, IPeerChain, from_peer, SourceKind, Unused
from nodex.api.errors import InvalidTransactionRejectedError, TransactionRejectedError
from nodex.api.peers import PeerEvent
from nodex.api.pool import ITransactionPool
from nodex.p2p.errors import DisconnectReason, P2PError
from nodex.p2p.messages import (
    MAX_HEADERS_PER_MESSAGE,
    MAX_TRANSACTIONS_PER_MESSAGE,
    BlockBodies,
    BlockHeaders,
    GetBlockBodies,
    GetBlockHeaders,
    NewBlock,
    NewBlockHashes,
    Status,
    Transactions,
)
from nodex.p2p.inbound import KnownSet
from nodex.p2p.protocol import PeerProtocol
from nodex.p2p.sync import Synchroniser
from nodex.structures.blocks import Block
from nodex.structures.headers import Header
from nodex.structures.transactions import Transaction

ANSWER_BYTES = 2 * 1024 * 1024
"""A body answer stops once it holds this many bytes (the asker asks again for the rest)."""

FAR_AHEAD = 32
"""A new block this many numbers above the head is fetched by a sync, not as an orphan."""

TRANSACTION_CHECKS = 8
"""
Peers' transactions in the pool's checks at once, all peers together (the
checks run on the reader threads that also serve RPC): the bounded hand-off
to the pool.  Each peer's transactions wait in its own lane.
"""

SIDE_BLOCK_DEPTH = 7
"""
How far below the head a side block from gossip may branch, in blocks (and
in work: blocks at the head's difficulty): the uncle generations (DESIGN
§2), beyond which a block is no use as an uncle and far from catching up.
"""

MAX_UNUSED_ORPHANS = 8
"""
Blocks of one peer that the chain kept aside and dropped because their
parent never came (or the peer had no room left) before the peer is an
offender.
"""

UNUSED_ORPHAN_SENDERS = 1024
"""Peers whose unused orphans are counted (the least recent leave first)."""

MAX_ANNOUNCED_FETCHES = 16
"""Announced blocks waiting to be fetched from one peer; more announcements are ignored."""


def side_block_refusal(block: Block, parent_total_difficulty: int, head: ChainHead) -> str | None:
    """
    Why a side block from gossip (its parent known, not the head) may not
    be imported, or L{None}: its chain's work short of the head's by more
    than L{SIDE_BLOCK_DEPTH} blocks at the head's difficulty, so that it
    cannot catch up.  Deep forks come by sync, whose runs prove their work
    first (L{nodex.p2p.sync}).
    """
    # A block's work: its difficulty and its uncles' (DESIGN §2).
    total_difficulty = parent_total_difficulty + block.header.difficulty + sum(u.difficulty for u in block.uncles)
    shortfall = head.total_difficulty - total_difficulty
    if shortfall > SIDE_BLOCK_DEPTH * head.header.difficulty:
        return f"block {block.number}'s chain has {shortfall} less work than the head, more than {SIDE_BLOCK_DEPTH} blocks' worth"
    return None


class ChainRelay:
    """
    Blocks and transactions between the chain, the pool and the peers.

    @ivar answered: how many requests of peers were answered, by kind (C{headers}, C{bodies}).
    @ivar pool: where peers' transactions go (L{None} until composed).
    @ivar recent_blocks: hashes of blocks this node stored or found known
        lately: a peer's copy of one is not imported again.
    @ivar invalid_transactions: hashes of transactions found never valid:
        whoever sends one again is not checked again.
    @ivar refused_transactions: hashes of transactions the pool refused for
        now (nonce too low, underpriced, pool full), forgotten when the head moves.
    """

    log = Logger()

    def __init__(
        self,
        chain: IPeerChain,
        sync: Synchroniser,
        peers: Callable[[], list[PeerProtocol]],
        running: Callable[[], bool],
        record: Callable[[str, bytes], None] = lambda event, node_id: None,
        clock: IReactorTime | None = None,
        entropy: Callable[[int], bytes] = os.urandom,
        transaction_delay: float = 0.0,
        fetch_delay: float = 0.0,
    ) -> None:
        """
        @param sync: the synchroniser that orphans and far blocks hand over to.
        @param peers: the established peers now.
        @param running: whether the peer network runs (nothing is spread otherwise).
        @param record: records an event against a node id that is no longer connected.
        @param clock: times the relay of pending transactions (needed when
            C{transaction_delay} is not 0).
        @param entropy: random bytes, for the relay's random delays.
        @param transaction_delay: the mean delay before pending transactions
            go to peers (L{nodex.p2p.host.NetworkSettings.transaction_delay}).
        @param fetch_delay: how long an announced block waits for a peer to
            send it whole before it is fetched
            (L{nodex.p2p.host.NetworkSettings.fetch_delay}; needs C{clock}).
        """
        self.chain = chain
        self.sync = sync
        self.pool: ITransactionPool | None = None
        self.answered: Counter[str] = Counter()
        self.recent_blocks = KnownSet(4096)
        self.invalid_transactions = KnownSet(16384)
        self.refused_transactions = KnownSet(16384)
        self._importing: set[bytes] = set()
        self._intake = DeferredSemaphore(TRANSACTION_CHECKS)
        self._fetching: dict[PeerProtocol, deque[bytes]] = {}
        # Announced blocks being fetched, each with the fetches of the
        # other peers that announced it, waiting for it to end.
        self._in_flight: dict[bytes, list[Deferred[None]]] = {}
        self._peers = peers
        self._running = running
        self._record = record
        self._unused_orphans: OrderedDict[bytes, int] = OrderedDict()
        self._clock = clock
        self._entropy = entropy
        self._transaction_delay = transaction_delay if clock is not None else 0.0
        self._fetch_delay = fetch_delay if clock is not None else 0.0
        # The waits of announced blocks' fetches: each timed call with what
        # it does (done at once when the relay stops).
        self._pauses: dict[IDelayedCall, Callable[[], None]] = {}
        self._outgoing: dict[bytes, Transaction] = {}
        self._relaying: IDelayedCall | None = None

    async def serve(self, peer: PeerProtocol, request: GetBlockHeaders | GetBlockBodies) -> None:
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
        peer.send(BlockHeaders(request.request_id, tuple(await self._headers(request))))
        self.answered["headers"] += 1

    async def _headers(self, request: GetBlockHeaders) -> list[Header]:
        """
        The headers a request asks for that the chain has.
        """
        origin = request.origin
        if isinstance(origin, bytes):
            header = await self.chain.get_header_by_hash(origin)
            if header is None or request.count == 1:
                return [] if header is None else [header]
            origin = header.number
        step = (request.skip + 1) * (-1 if request.reverse else 1)
        head = self.chain.head.header.number
        numbers = [origin + step * index for index in range(min(request.count, MAX_HEADERS_PER_MESSAGE))]
        headers = []
        for header in await self.chain.get_headers_by_number([number for number in numbers if 0 <= number <= head]):
            if header is None:
                break
            headers.append(header)
        return headers

    def heard_head(self, peer: PeerProtocol, head_hash: bytes, number: int, total_difficulty: int) -> None:
        """
        Note a peer's claimed head from a new block, when it is heavier than the last claimed.
        """
        peer.known_blocks.add(head_hash)
        if total_difficulty > peer.total_difficulty:
            peer.head_hash, peer.head_number, peer.total_difficulty = head_hash, number, total_difficulty

    def status(self, peer: PeerProtocol, message: Status) -> None:
        """
        A peer's status names its head now, lighter or not than before (a
        dev node may have rewound): it replaces the claim.  It does not
        clear the peer's unbacked claims: only a backed run does (else a
        liar would clear them with a status before each run).
        """
        peer.known_blocks.add(message.head_hash)
        peer.head_hash, peer.head_number, peer.total_difficulty = (
            message.head_hash, message.head_number, message.total_difficulty,
        )
        if self._arriving(message.head_hash):
            # The head of a block announcement (which a status follows): it
            # is imported from the announcement; a sync runs only if it
            # cannot be attached (an orphan), or after it, if the peer is
            # still heavier then.
            return
        self.sync.maybe_sync()

    def _arriving(self, block_hash: bytes) -> bool:
        """
        Whether C{block_hash} is a block this node has just imported, is
        importing, or is fetching from an announcement.
        """
        if block_hash in self.recent_blocks or block_hash in self._importing:
            return True
        return any(block_hash in waiting for waiting in self._fetching.values())

    async def new_block(self, peer: PeerProtocol, message: NewBlock) -> None:
        """
        Import a block a peer sent whole; an orphan makes this node fetch
        its parents.  A block the peer sent before is a repeat; one this
        node has is not imported again.
        """
        if self.sort_new_block(peer, message):
            await self.import_one(peer, message.block)

    def sort_new_block(self, peer: PeerProtocol, message: NewBlock) -> bool:
        """
        A block a peer sent whole, as it arrives: a repeat, a block this
        node has or is importing, and one far ahead (a sync) cost nothing
        more.

        @return: whether it must go through L{import_one}.
        """
        block = message.block
        if peer.known_blocks.note_received(block.hash):
            peer.repeated("a block")
            return False
        self.heard_head(peer, block.hash, block.number, message.total_difficulty)
        if block.number > self.chain.head.header.number + FAR_AHEAD:
            self.sync.maybe_sync(peer)
            return False
        return not (block.hash in self.recent_blocks or block.hash in self._importing)

    async def import_one(self, peer: PeerProtocol, block: Block) -> None:
        """
        Import one block a peer sent or announced; an invalid one costs the
        peer its connection, an orphan starts a sync with it.  A block off
        the canonical chain (a side block) must be within reach of the head
        (L{side_block_refusal}) and within the peer's quota of side blocks.
        """
        if block.hash in self.recent_blocks or block.hash in self._importing:
            return
        if block.header.parent_hash != self.chain.head.header.hash and not await self._side_block_admitted(peer, block):
            return
        self._importing.add(block.hash)
        try:
            outcome = (await self.chain.import_blocks([block], from_peer(peer.node_id or b"")))[0]
        finally:
            self._importing.discard(block.hash)
        result = outcome.result
        if result is ImportResult.INVALID_BLOCK:
            peer.offence(
                PeerEvent.INVALID_BLOCK, DisconnectReason.INVALID_BLOCK, f"block {block.number}: {outcome.reason}"
            )
            return
        if result is ImportResult.NO_PARENT:
            # The chain keeps the orphan aside; a sync brings its parents.
            self.sync.maybe_sync(peer)
            return
        # A block ahead of the clock (held until due, or dropped when hours
        # ahead) costs its sender nothing: its clock may be wrong, or ours
        # (docs/chain-service.md, "Time").
        if outcome.due is not None and block.hash == peer.head_hash:
            # Its claimed head waits on this block: no sync from it before it is due.
            self.sync.held(peer, outcome.due)
        if result.stored or result is ImportResult.EXIST or outcome.due is not None:
            # (A held block is imported by the chain when due: nothing to fetch again.)
            self.recent_blocks.add(block.hash)
            peer.shown_number = max(peer.shown_number, block.number)
        if result.stored:
            # It extends the best chain, or (a side block within reach of
            # the head) could become it.
            peer.record(PeerEvent.VALID_BLOCK)
            head = self.chain.head
            if head.header.hash == block.hash:
                # The peer has this node's head now: its work, which an
                # announcement (unlike a whole block) does not say.
                self.heard_head(peer, block.hash, block.number, head.total_difficulty)

    async def _side_block_admitted(self, peer: PeerProtocol, block: Block) -> bool:
        """
        Whether a block from gossip whose parent is not the head may be
        imported: a block of unknown parent may (the chain checks its seal
        and keeps it aside; L{nodex.p2p.network} counts it against its
        sender if the parent never comes); a side block (its parent known)
        counts against the peer's quota and must be within reach of the
        head (L{side_block_refusal}).
        """
        head = self.chain.head
        refusal = None
        if block.number + SIDE_BLOCK_DEPTH < head.header.number:
            refusal = f"block {block.number} branches more than {SIDE_BLOCK_DEPTH} blocks below the head {head.header.number}"
        else:
            parent_total_difficulty = await self.chain.get_total_difficulty(block.header.parent_hash)
            if parent_total_difficulty is None:
                return True
            refusal = side_block_refusal(block, parent_total_difficulty, self.chain.head)
        if not peer.side_block(refusal or f"block {block.number}"):
            return False
        if refusal is not None:
            self.log.debug("peer {peer}'s side block refused: {why}", peer=peer.short_id, why=refusal)
        return refusal is None

    def unused(self, unused: Unused) -> None:
        """
        A block a peer sent that the chain kept aside and dropped unused:
        invalid once it could be checked (its parent came, or its time), an
        invalid block of its sender; its parent never came, or its sender
        had no room left, one of the sender's orphans that led nowhere:
        past L{MAX_UNUSED_ORPHANS} of them, an offence (the peer claimed
        parents it never delivered).
        """
        source = unused.source
        if source.kind is not SourceKind.PEER or not source.peer:
            return
        node_id = bytes(source.peer)
        if unused.reason.startswith("invalid"):
            self._charge(node_id, PeerEvent.INVALID_BLOCK, DisconnectReason.INVALID_BLOCK, f"a block kept aside: {unused.reason}")
            return
        count = self._unused_orphans.pop(node_id, 0) + 1
        if count > MAX_UNUSED_ORPHANS:
            self._charge(
                node_id, PeerEvent.INVALID_MESSAGE, DisconnectReason.UNBACKED_CLAIM,
                f"{count} of its blocks waited for parents it never delivered",
            )
            return
        self._unused_orphans[node_id] = count
        if len(self._unused_orphans) > UNUSED_ORPHAN_SENDERS:
            self._unused_orphans.popitem(last=False)

    def _charge(self, node_id: bytes, event: str, reason: DisconnectReason, detail: str) -> None:
        """
        An offence of the node C{node_id}: its connection ends if it is connected.
        """
        peer = next((peer for peer in self._peers() if peer.node_id == node_id), None)
        if peer is not None:
            peer.offence(event, reason, detail)
        else:
            self.log.info("peer {peer}: {detail}", peer=node_id.hex()[:8], detail=detail)
            self._record(event, node_id)

    def announced(self, peer: PeerProtocol, message: NewBlockHashes) -> None:
        """
        Note the blocks a peer announces, and fetch those this node lacks
        (a sync when they are far ahead), a few at a time, apart from the
        peer's lane (the fetch waits for answers that may sit behind the
        peer's next messages).
        """
        fresh = []
        for block_hash, number in message.entries:
            if peer.known_blocks.note_received(block_hash):
                continue
            fresh.append((block_hash, number))
            if number > peer.head_number:
                peer.head_hash, peer.head_number = block_hash, number
        if len(fresh) < len(message.entries):
            peer.repeated("block announcements")
        head = self.chain.head.header.number
        waiting = self._fetching.get(peer)
        for block_hash, number in fresh:
            if number > head + FAR_AHEAD:
                self.sync.maybe_sync(peer)
                break
            if block_hash in self.recent_blocks:
                continue
            if waiting is None:
                # The hash goes in before the fetch starts: the fetch runs
                # at once up to its first wait, and ends on an empty queue
                # (which left every announced block to a sync run).
                waiting = self._fetching[peer] = deque((block_hash,))
                if self._fetch_delay > 0:
                    # A few of the peers that have the block send it whole (to
                    # about the square root of their peers), the others
                    # announce it, and an announcement often comes first: the
                    # fetch waits a moment for a whole copy, as geth's block
                    # fetcher does (500 ms), rather than ask for the header
                    # and the body of a block already on its way.
                    self._after(self._fetch_delay, self._announced_due, peer, waiting)
                else:
                    self._start_fetch(peer, waiting)
            elif len(waiting) < MAX_ANNOUNCED_FETCHES:
                waiting.append(block_hash)

    def _announced_due(self, peer: PeerProtocol, waiting: deque[bytes]) -> None:
        """
        The wait for whole copies of a peer's announced blocks is over: drop
        those that came meanwhile (most often all of them, then without a
        coroutine or a Deferred), fetch the rest (L{_fetch_announced}).
        """
        recent = self.recent_blocks
        while waiting and waiting[0] in recent and not peer.closed and self._running():
            waiting.popleft()
        if waiting and not peer.closed and self._running():
            self._start_fetch(peer, waiting)
        elif self._fetching.get(peer) is waiting:
            del self._fetching[peer]

    def _start_fetch(self, peer: PeerProtocol, waiting: deque[bytes]) -> None:
        fetching = Deferred.fromCoroutine(self._fetch_announced(peer, waiting))
        fetching.addErrback(self._fetch_failed, peer)

    async def _fetch_announced(self, peer: PeerProtocol, waiting: deque[bytes]) -> None:
        """
        Fetch and import the announced blocks of one peer, one after the other.
        """
        try:
            while waiting and not peer.closed and self._running():
                block_hash = waiting[0]
                while block_hash not in self.recent_blocks:
                    others = self._in_flight.get(block_hash)
                    if others is None:
                        if await self.chain.get_header_by_hash(block_hash) is not None:
                            break
                        # The look-up took a turn: another peer's fetch may have started meanwhile.
                        others = self._in_flight.get(block_hash)
                        if others is None:
                            await self._fetch_from(peer, block_hash)
                            break
                    # Another peer's fetch of it is under way: wait for it
                    # (no look-up in the store first: the block is not
                    # there yet), and fetch from this peer only if that one
                    # failed.
                    waiter: Deferred[None] = Deferred()
                    others.append(waiter)
                    await waiter
                    if peer.closed:
                        return
                waiting.popleft()
        finally:
            if self._fetching.get(peer) is waiting:
                del self._fetching[peer]

    def _after(self, seconds: float, action: Callable[..., None], *args: Any) -> None:
        """
        Call C{action(*args)} C{seconds} from now, or when the relay stops.
        """
        assert self._clock is not None

        def due() -> None:
            del self._pauses[call]
            action(*args)

        call = self._clock.callLater(seconds, due)
        self._pauses[call] = lambda: action(*args)

    async def _fetch_from(self, peer: PeerProtocol, block_hash: bytes) -> None:
        """
        Fetch an announced block from C{peer}; the fetches of other peers
        that announced it wait for this one.
        """
        waiters: list[Deferred[None]] = []
        self._in_flight[block_hash] = waiters
        try:
            await self._fetch_one(peer, block_hash)
        finally:
            del self._in_flight[block_hash]
            for waiter in waiters:
                waiter.callback(None)

    async def _fetch_one(self, peer: PeerProtocol, block_hash: bytes) -> None:
        headers = await peer.request_headers(block_hash, 1)
        if not headers or headers[0].hash != block_hash:
            peer.offence(PeerEvent.INVALID_MESSAGE, DisconnectReason.PROTOCOL_ERROR, "announced a block it cannot serve")
            return
        bodies = await peer.request_bodies((block_hash,))
        if not bodies:
            peer.offence(PeerEvent.INVALID_MESSAGE, DisconnectReason.PROTOCOL_ERROR, "announced a block it cannot serve")
            return
        await self.import_one(peer, Block(headers[0], *bodies[0]))

    def _fetch_failed(self, failure: Any, peer: PeerProtocol) -> None:
        if not failure.check(P2PError):
            self.log.failure("fetching blocks announced by peer {peer} failed", failure, peer=peer.short_id)

    async def transactions(self, peer: PeerProtocol, message: Transactions) -> None:
        """
        L{sort_transactions}, then L{check_transactions} (what the peer
        network does in two steps, the second in the peer's lane).
        """
        await self.check_transactions(peer, self.sort_transactions(peer, message))

    def sort_transactions(self, peer: PeerProtocol, message: Transactions) -> list[Transaction]:
        """
        A peer's transactions as they arrive: what the peer sent before (a
        repeated message), what is known to be invalid (an offence each),
        what the pool holds and what it refused lately cost nothing.

        @return: those that the pool must check.
        """
        fresh = [tx for tx in message.transactions if not peer.known_transactions.note_received(tx.hash)]
        if len(fresh) < len(message.transactions):
            peer.repeated("transactions")
        if self.pool is None:
            return []
        return [transaction for transaction in fresh if self._worth_checking(peer, transaction)]

    def _worth_checking(self, peer: PeerProtocol, transaction: Transaction) -> bool:
        assert self.pool is not None
        if peer.closed:
            return False
        tx_hash = transaction.hash
        if tx_hash in self.invalid_transactions:
            peer.invalid_transaction("a transaction known to be invalid")
            return False
        if transaction.impersonated:
            # A dev chain's impersonation marker stands for a signature
            # only for the node's own users: from a peer it is a forged
            # one, whoever this node impersonates (docs/devchain.md).
            self.invalid_transactions.add(tx_hash)
            peer.invalid_transaction("an impersonation marker")
            return False
        return self.pool.get(tx_hash) is None and tx_hash not in self.refused_transactions

    async def check_transactions(self, peer: PeerProtocol, transactions: list[Transaction]) -> None:
        """
        Offer a peer's sorted transactions to the pool, one at a time,
        through the bounded hand-off (sorted again: another peer may have
        brought one meanwhile).
        """
        for transaction in transactions:
            if self._worth_checking(peer, transaction):
                await self._offer(peer, transaction)

    async def _offer(self, peer: PeerProtocol, transaction: Transaction) -> None:
        """
        One transaction of a peer through the pool's checks.
        """
        assert self.pool is not None
        # The bounded hand-off, without DeferredSemaphore.run's Deferreds:
        # a free token is taken at once (acquire's Deferred has fired), the
        # pool's own Deferred is awaited, and the token goes back before
        # anything else of this offer, as run's release did (a waiting
        # offer starts then: the same order).
        intake = self._intake
        acquired = intake.acquire()
        if not acquired.called:
            await acquired
        try:
            try:
                await maybeDeferred(self.pool.add, transaction, relayed=True)
            finally:
                intake.release()
        except InvalidTransactionRejectedError as exc:
            # Its signature, chain id, size or intrinsic gas: never valid.
            self.log.debug("peer {peer}'s transaction is invalid: {why}", peer=peer.short_id, why=str(exc))
            self.invalid_transactions.add(transaction.hash)
            peer.invalid_transaction(str(exc))
        except TransactionRejectedError as exc:
            # Refusals of the moment (nonce too low, underpriced, pool
            # full) reach honest peers through gossip all the time: no
            # offence (docs/reputation.md).
            self.log.debug("peer {peer}'s transaction refused: {why}", peer=peer.short_id, why=str(exc))
            self.refused_transactions.add(transaction.hash)
        else:
            peer.record(PeerEvent.VALID_TRANSACTION)

    def chain_changed(self, event: ChainEvent) -> None:
        """
        Spread a new head: whole to a few peers, announced to the rest.
        """
        if event.rewound:
            self.recent_blocks = KnownSet(4096)
        for adopted in event.adopted:
            self.recent_blocks.add(adopted.hash)
        self.refused_transactions = KnownSet(16384)
        if event.rewound or not event.adopted or not self._running():
            return
        head = self.chain.head
        block = event.adopted[-1]
        if block.hash != head.header.hash:
            return
        if self.sync.syncing:
            # Peers that sync from this node learn its head from a status
            # now and then, and when the sync ends.
            if block.number % 64 == 0:
                self.send_status()
            return
        unaware = [peer for peer in self._peers() if block.hash not in peer.known_blocks]
        self._spread(block, head.total_difficulty, unaware)

    def side_block(self, block: Block) -> None:
        """
        Spread a valid block stored off the canonical chain (a competing
        block): whole to a few of the peers that lack it, announced to the
        rest, so that the network's miners can name it as an uncle (uncles
        count in the fork choice, DESIGN §2).  Its total difficulty is below
        the head's, so no peer takes it for this node's head.
        """
        self.recent_blocks.add(block.hash)
        if not self._running() or self.sync.syncing:
            return
        unaware = [peer for peer in self._peers() if block.hash not in peer.known_blocks]
        if not unaware:
            return
        spreading = Deferred.fromCoroutine(self._spread_side_block(block, unaware))
        spreading.addErrback(lambda failure: self.log.failure("cannot spread side block", failure))

    async def _spread_side_block(self, block: Block, unaware: list[PeerProtocol]) -> None:
        """
        Send the side block with its total difficulty.
        """
        total_difficulty = await self.chain.get_total_difficulty(block.hash)
        if total_difficulty is not None:
            self._spread(block, total_difficulty, unaware)

    def _spread(self, block: Block, total_difficulty: int, unaware: list[PeerProtocol]) -> None:
        """
        Send C{block} whole to the first square root of the C{unaware}
        peers, and announce it to the rest; skip a peer that learnt of it
        meanwhile.  An announced head goes without a STATUS (as geth's
        announcements): a peer that fetches it learns this node's work from
        the block (L{import_one}), and the work decides nothing before that.
        """
        whole = max(1, int(math.sqrt(len(unaware))))
        # One message object each, encoded once for all the peers (encode_message).
        new_block = NewBlock(block, total_difficulty)
        announcement = NewBlockHashes(((block.hash, block.number),))
        for index, peer in enumerate(unaware):
            if block.hash in peer.known_blocks:
                continue
            peer.known_blocks.add(block.hash)
            peer.send(new_block if index < whole else announcement)

    def send_status(self) -> None:
        """
        Tell every peer this node's head.
        """
        head = self.chain.head
        status = Status(head.header.hash, head.header.number, head.total_difficulty)
        for peer in self._peers():
            peer.send(status)

    def transaction_pending(self, transaction: Transaction) -> None:
        """
        A transaction became pending: it goes to the peers that have not
        seen it after a random delay (L{relay_transactions}); not an
        impersonated sender's, which only this dev node accepts
        (C{docs/devchain.md}).
        """
        if transaction.impersonated:
            return
        self._outgoing[transaction.hash] = transaction
        if self._transaction_delay <= 0 or len(self._outgoing) >= MAX_TRANSACTIONS_PER_MESSAGE:
            self.relay_transactions()
        elif self._relaying is None:
            assert self._clock is not None
            self._relaying = self._clock.callLater(self._relay_delay(), self.relay_transactions)

    def _relay_delay(self) -> float:
        """
        A random delay of mean C{transaction_delay}, exponential (as Bitcoin
        Core's trickle of announcements), at most four times the mean.
        """
        fraction = int.from_bytes(self._entropy(4), "big") / 2**32
        return min(-self._transaction_delay * math.log1p(-fraction), 4 * self._transaction_delay)

    def relay_transactions(self) -> None:
        """
        Send the transactions that became pending since the last time, and
        are pending still, to each peer not known to have them, in one
        message per peer.  Waiting a random while lets a peer that got a
        transaction at the same time as this node send it here first,
        rather than both sending it across the connection at once: a
        transaction crosses most connections once instead of nearly twice.
        """
        if self._relaying is not None and self._relaying.active():
            self._relaying.cancel()
        self._relaying = None
        outgoing, self._outgoing = self._outgoing, {}
        if not outgoing or not self._running():
            return
        transactions = [
            transaction for transaction in outgoing.values()
            if self.pool is None or self.pool.get(transaction.hash) is not None
        ]
        # The peers that lack all of them (most often all peers) get the
        # same message object, encoded once (encode_message).
        hashes = [transaction.hash for transaction in transactions]
        every: Transactions | None = None
        for peer in self._peers():
            known = peer.known_transactions
            fresh = [transaction for transaction, tx_hash in zip(transactions, hashes) if tx_hash not in known]
            if not fresh:
                continue
            for transaction in fresh:
                known.add(transaction.hash)
            if len(fresh) < len(transactions):
                peer.send(Transactions(tuple(fresh)))
                continue
            if every is None:
                every = Transactions(tuple(transactions))
            peer.send(every)

    def stop(self) -> None:
        """
        Drop the transactions waiting to be relayed, and end the waits of
        announced blocks' fetches (the network stops: they fetch nothing).
        """
        if self._relaying is not None and self._relaying.active():
            self._relaying.cancel()
        self._relaying = None
        self._outgoing = {}
        pauses, self._pauses = self._pauses, {}
        for call, action in pauses.items():
            call.cancel()
            action()


__all__ = [
    "ANSWER_BYTES",
    "ChainRelay",
    "FAR_AHEAD",
    "MAX_UNUSED_ORPHANS",
    "SIDE_BLOCK_DEPTH",
    "TRANSACTION_CHECKS",
    "side_block_refusal",
]
