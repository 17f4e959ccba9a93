"""
What the peer network does with blocks and transactions: it answers
peers' header and body requests from the chain, imports the blocks peers
send or announce (an orphan or a far block starts a sync), offers peers'
transactions to the pool, and spreads new heads and pending transactions
to the peers that do not know them (C{docs/p2p.md}, "Propagation").
"""

import math
from collections import Counter
from collections.abc import Callable
from typing import Any

from twisted.internet.defer import Deferred
from twisted.logger import Logger

from nodex.interfaces import (
    ChainEvent,
    IReputation,
    ImportResult,
    from_peer,
    InvalidTransactionRejectedError,
    ITransactionPool,
    PeerEvent,
    TransactionRejectedError,
)
from nodex.p2p.errors import DisconnectReason
from nodex.p2p.messages import (
    MAX_HEADERS_PER_MESSAGE,
    BlockBodies,
    BlockHeaders,
    GetBlockBodies,
    GetBlockHeaders,
    NewBlock,
    NewBlockHashes,
    Status,
    Transactions,
)
from nodex.p2p.protocol import PeerProtocol
from nodex.p2p.sync import Synchroniser
from nodex.structures.blocks import Block
from nodex.structures.headers import Header
from nodex.structures.transactions import Transaction

ANSWER_BYTES = 2 * 1024 * 1024
"""A body answer stops once it holds this many bytes (the asker asks again for the rest)."""

FAR_AHEAD = 32
"""A new block this many numbers above the head is fetched by a sync, not as an orphan."""


class ChainRelay:
    """
    Blocks and transactions between the chain, the pool and the peers.

    @ivar answered: how many requests of peers were answered, by kind (C{headers}, C{bodies}).
    @ivar pool: where peers' transactions go (L{None} until composed).
    """

    log = Logger()

    def __init__(
        self,
        chain: Any,
        reputation: IReputation,
        sync: Synchroniser,
        peers: Callable[[], list[PeerProtocol]],
        running: Callable[[], bool],
    ) -> None:
        """
        @param chain: provides L{nodex.interfaces.IChainService} and L{nodex.interfaces.IBlockSource}.
        @param sync: the synchroniser that orphans and far blocks hand over to.
        @param peers: the established peers now.
        @param running: whether the peer network runs (nothing is spread otherwise).
        """
        self.chain = chain
        self.reputation = reputation
        self.sync = sync
        self.pool: ITransactionPool | None = None
        self.answered: Counter[str] = Counter()
        self._peers = peers
        self._running = running

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
        Note a peer's head (from a status or a new block) when it is heavier than the last heard.
        """
        peer.known_blocks.add(head_hash)
        if total_difficulty > peer.total_difficulty:
            peer.head_hash, peer.head_number, peer.total_difficulty = head_hash, number, total_difficulty

    async def new_block(self, peer: PeerProtocol, message: NewBlock) -> None:
        """
        Import a block a peer sent whole; an orphan makes this node fetch its parents.
        """
        block = message.block
        peer.known_blocks.add(block.hash)
        self.heard_head(peer, block.hash, block.number, message.total_difficulty)
        if block.number > self.chain.head.header.number + FAR_AHEAD:
            self.sync.maybe_sync(peer)
            return
        await self.import_one(peer, block)

    async def import_one(self, peer: PeerProtocol, block: Block) -> None:
        """
        Import one block a peer sent or announced; an invalid one costs the
        peer its connection, an orphan starts a sync with it.
        """
        outcome = (await self.chain.import_blocks([block], from_peer(peer.node_id or b"")))[0]
        result = outcome.result
        if result is ImportResult.INVALID_BLOCK:
            peer.offence(
                PeerEvent.INVALID_BLOCK, DisconnectReason.INVALID_BLOCK, f"block {block.number}: {outcome.reason}"
            )
        elif result is ImportResult.NO_PARENT:
            # The chain keeps the orphan aside; a sync brings its parents.
            self.sync.maybe_sync(peer)
        elif result.stored:
            self.reputation.record_event(PeerEvent.VALID_BLOCK, peer.node_id, peer.address)
        # A block ahead of the clock (held until due, or dropped when hours
        # ahead) costs its sender nothing: its clock may be wrong, or ours
        # (docs/chain-service.md, "Time").

    async def announced(self, peer: PeerProtocol, message: NewBlockHashes) -> None:
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
            await self.import_one(peer, Block(headers[0], *bodies[0]))

    async def transactions(self, peer: PeerProtocol, message: Transactions) -> None:
        """
        Offer a peer's transactions to the pool.
        """
        for transaction in message.transactions:
            peer.known_transactions.add(transaction.hash)
        if self.pool is None:
            return
        for transaction in message.transactions:
            if transaction.impersonated:
                # A dev chain's impersonation marker stands for a signature
                # only for the node's own users: from a peer it is a forged
                # one, whoever this node impersonates (docs/devchain.md).
                self.reputation.record_event(PeerEvent.INVALID_TRANSACTION, peer.node_id, peer.address)
                continue
            if self.pool.get(transaction.hash) is not None:
                continue
            try:
                await self.pool.add(transaction, relayed=True)
            except InvalidTransactionRejectedError as exc:
                # Its signature, chain id, size or intrinsic gas: never valid.
                self.log.debug("peer {peer}'s transaction is invalid: {why}", peer=peer.short_id, why=str(exc))
                self.reputation.record_event(PeerEvent.INVALID_TRANSACTION, peer.node_id, peer.address)
            except TransactionRejectedError as exc:
                # Refusals of the moment (nonce too low, underpriced, pool
                # full) reach honest peers through gossip all the time: no
                # offence (docs/reputation.md).
                self.log.debug("peer {peer}'s transaction refused: {why}", peer=peer.short_id, why=str(exc))
            else:
                self.reputation.record_event(PeerEvent.VALID_TRANSACTION, peer.node_id, peer.address)

    def chain_changed(self, event: ChainEvent) -> None:
        """
        Spread a new head: whole to a few peers, announced to the rest.
        """
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
        self._spread(block, head.total_difficulty, unaware, head=True)

    def side_block(self, block: Block) -> None:
        """
        Spread a valid block stored off the canonical chain (a competing
        block): whole to a few of the peers that lack it, announced to the
        rest, so that the network's miners can name it as an uncle (uncles
        count in the fork choice, DESIGN §2).  Its total difficulty is below
        the head's, so no peer takes it for this node's head.
        """
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
            self._spread(block, total_difficulty, unaware, head=False)

    def _spread(self, block: Block, total_difficulty: int, unaware: list[PeerProtocol], head: bool) -> None:
        """
        Send C{block} whole to the first square root of the C{unaware}
        peers, and announce it to the rest (with a STATUS when it is the
        head); skip a peer that learnt of it meanwhile.
        """
        whole = max(1, int(math.sqrt(len(unaware))))
        for index, peer in enumerate(unaware):
            if block.hash in peer.known_blocks:
                continue
            peer.known_blocks.add(block.hash)
            if index < whole:
                peer.send(NewBlock(block, total_difficulty))
            else:
                peer.send(NewBlockHashes(((block.hash, block.number),)))
                if head:
                    peer.send(Status(block.hash, block.number, total_difficulty))

    def send_status(self) -> None:
        """
        Tell every peer this node's head.
        """
        head = self.chain.head
        for peer in self._peers():
            peer.send(Status(head.header.hash, head.header.number, head.total_difficulty))

    def transaction_pending(self, transaction: Transaction) -> None:
        """
        Send a transaction that became pending to the peers that have not
        seen it; not an impersonated sender's, which only this dev node
        accepts (C{docs/devchain.md}).
        """
        if transaction.impersonated:
            return
        for peer in self._peers():
            if transaction.hash not in peer.known_transactions:
                peer.known_transactions.add(transaction.hash)
                peer.send(Transactions((transaction,)))


__all__ = ["ANSWER_BYTES", "ChainRelay", "FAR_AHEAD"]
