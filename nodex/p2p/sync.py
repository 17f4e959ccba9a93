"""
Sync: bring the chain up to the heaviest peer's, headers first, then
bodies from every peer that can serve them, imported in order through the
chain's import path (C{docs/p2p.md}, "Sync").

A sync run always starts from the local head: it finds the last block the
node shares with the peer, so a restart, a lost peer or a peer on another
fork all resume from wherever the chain stands.

A peer's head and total difficulty are claims: they choose whom to sync
from, and are judged after each run.  What the node reports of the
network's height (C{eth_syncing}, C{/health}, the progress line) comes only
from what peers have shown: headers that link to this node's chain.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from twisted.internet.defer import Deferred, DeferredList, ensureDeferred
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.internet.task import LoopingCall
from twisted.logger import Logger

from nodex.api.chain import ChainHead, ImportResult, IPeerChain, from_peer
from nodex.api.peers import PeerEvent, SyncStatus
from nodex.crypto import keccak256
from nodex.p2p.errors import DisconnectReason, P2PError
from nodex.p2p.protocol import PeerProtocol
from nodex.structures.blocks import Block
from nodex.structures.headers import Header
from nodex.structures.rlpcodec import encode_list_of_encoded

HEADER_BATCH = 192
"""Headers asked of the sync peer at once."""

BODY_BATCH = 48
"""Bodies asked of one peer at once."""

ANCESTOR_BATCH = 64
"""Headers looked at per step of the search for the common ancestor."""

MAX_FORK_DEPTH = 90_000
"""
How far below the head a peer's chain may fork and still be synced (the
depth geth's downloader allows); a deeper fork is an unbacked claim.
"""

MAX_UNCLE_PROOF_BLOCKS = 192
"""
The most blocks of a fork whose bodies a fork's proof of work fetches for
their uncles' difficulties (the headers alone do not show them).
"""

MAX_CLAIM_FAILURES = 3
"""
Sync runs in a row after which a peer that has not backed its claimed
chain is an offender (C{docs/p2p.md}, "Claims").
"""


class SyncAborted(P2PError):
    """
    The sync peer answered wrongly or went away; the run stops and the next starts afresh.

    @ivar unbacked: the peer failed to deliver what it claims to have (no
        shared block, its own headers' bodies).
    """

    def __init__(self, message: str, unbacked: bool = False) -> None:
        super().__init__(message)
        self.unbacked = unbacked


@dataclass(frozen=True)
class Claim:
    """
    A peer's claimed head when a run from it started.
    """

    head_hash: bytes
    head_number: int
    total_difficulty: int


def check_header_chain(headers: Sequence[Header], first_number: int, parent_hash: bytes) -> str | None:
    """
    Why C{headers} are not a chain of consecutive blocks on C{parent_hash}
    starting at C{first_number}, or L{None} when they are.
    """
    for offset, header in enumerate(headers):
        if header.number != first_number + offset:
            return f"header {offset} has number {header.number}, want {first_number + offset}"
        if header.parent_hash != parent_hash:
            return f"header {header.number} does not follow its predecessor"
        parent_hash = header.hash
    return None


class Synchroniser:
    """
    Runs syncs, one at a time, from the peer with the highest total difficulty.

    @ivar status: the L{SyncStatus} while a sync runs, else L{None}.
    """

    log = Logger()

    def __init__(
        self,
        chain: IPeerChain,
        peers: Callable[[], list[PeerProtocol]],
        clock: IReactorTime,
        progress_interval: float = 10.0,
        finished: Callable[[], None] = lambda: None,
    ) -> None:
        """
        @param peers: the established peers now.
        @param progress_interval: seconds between progress lines.
        @param finished: called after each run.
        """
        assert IPeerChain.providedBy(chain)
        self._chain = chain
        self._peers = peers
        self._finished_run = finished
        self._clock = clock
        self._progress_interval = progress_interval
        self._running: Deferred[None] | None = None
        self._again = False
        self.status: SyncStatus | None = None
        self._highest = 0
        self._progress: LoopingCall | None = None
        self._progress_mark: tuple[float, int] = (0.0, 0)
        self.importing = 0
        self.stopped = False
        self._next: IDelayedCall | None = None
        self._observers: list[Callable[[SyncStatus], None]] = []
        # Peers whose claimed head waits on a block held until it is due:
        # the claim and when the held block is due (local time).
        self._held: dict[PeerProtocol, tuple[bytes, float]] = {}
        self._held_call: IDelayedCall | None = None

    @property
    def syncing(self) -> bool:
        """
        Whether a sync run is in course.
        """
        return self._running is not None

    def best_peer(self, exclude: frozenset[PeerProtocol] = frozenset()) -> PeerProtocol | None:
        """
        The established peer with the highest claimed total difficulty
        above the head's, if any; peers that failed to back their claim
        come after those that did not.
        """
        own = self._chain.head.total_difficulty
        candidates = [
            peer for peer in self._peers()
            if peer.total_difficulty > own and peer not in exclude and not self.waits_for_due(peer)
        ]
        return min(candidates, key=lambda peer: (peer.claim_failures, -peer.total_difficulty), default=None)

    def held(self, peer: PeerProtocol, due: float) -> None:
        """
        A block of C{peer}'s is held by the chain until C{due} (local time):
        its claimed head waits on that block, so no run from it can attach
        more before then (a run would fetch the same blocks again and find
        them held; C{docs/p2p.md}, "Sync").  Until then, or until it claims
        another head, the peer is not a sync candidate; when the block is
        due, the sync looks again.
        """
        previous = self._held.get(peer)
        if previous is not None and previous[0] == peer.head_hash:
            due = max(due, previous[1])
        self._held[peer] = (peer.head_hash, due)
        call = self._held_call
        if call is not None and call.active():
            if call.getTime() <= due:
                return
            call.cancel()
        self._held_call = self._clock.callLater(max(0.0, due - self._clock.seconds()), self._held_due)

    def waits_for_due(self, peer: PeerProtocol) -> bool:
        """
        Whether C{peer}'s claimed head waits on a block not yet due (L{held}).
        """
        entry = self._held.get(peer)
        if entry is None:
            return False
        head_hash, due = entry
        if head_hash == peer.head_hash and self._clock.seconds() < due and peer.established:
            return True
        del self._held[peer]
        return False

    def _held_due(self) -> None:
        """
        The earliest held block came due: forget the waits that are over,
        wait for the next, and look for a sync.
        """
        self._held_call = None
        for peer in list(self._held):
            self.waits_for_due(peer)
        if self._held:
            due = min(due for _, due in self._held.values())
            self._held_call = self._clock.callLater(max(0.0, due - self._clock.seconds()), self._held_due)
        self.maybe_sync()

    def maybe_sync(self, peer: PeerProtocol | None = None) -> None:
        """
        Start a sync if a peer is heavier than the head (or C{peer}, whatever
        its difficulty: an orphan it sent needs its parents); when one runs,
        check again after it.
        """
        if self.stopped:
            return
        if self._running is not None:
            self._again = True
            return
        target = peer if peer is not None and peer.established and not self.waits_for_due(peer) else self.best_peer()
        if target is None:
            return
        self._start(target)

    def _start(self, peer: PeerProtocol) -> None:
        self._cancel_next()
        head = self._chain.head.header.number
        if self.status is None:
            self.status = SyncStatus(True, head, head, max(self._shown(), head))
            self._tell(self.status)
        self._progress_mark = (self._clock.seconds(), head)
        if self._progress is None:
            self._progress = LoopingCall(self._log_progress)
            self._progress.clock = self._clock
            self._progress.start(self._progress_interval, now=False)
        self._running = ensureDeferred(self._attempt(peer))
        self._running.addErrback(self._failed, peer).addBoth(self._finished, peer)

    def _failed(self, failure: Any, peer: PeerProtocol) -> None:
        self.log.failure("sync from peer {peer} failed", failure, peer=peer.short_id)

    async def _attempt(self, peer: PeerProtocol) -> None:
        """
        One run from C{peer}, then the judgement of its claim.
        """
        claim = Claim(peer.head_hash, peer.head_number, peer.total_difficulty)
        own = self._chain.head.total_difficulty
        unbacked = None
        try:
            await self._run(peer)
        except P2PError as exc:
            self.log.info("sync from peer {peer} stopped: {why}", peer=peer.short_id, why=str(exc))
            if isinstance(exc, SyncAborted) and exc.unbacked and claim.total_difficulty > max(own, self._chain.head.total_difficulty):
                # A peer that claimed no more work than the head had when
                # the run began (a run for its orphan: a competing block of
                # equal work, as two miners finding blocks at once make), or
                # than the chain holds now (its head caught up during the
                # run), claimed nothing it failed to back.
                unbacked = str(exc)
        if self.stopped or not peer.established:
            return
        if unbacked is None:
            unbacked = await self._judge(peer, claim)
        if unbacked is None:
            return
        peer.claim_failures += 1
        if peer.claim_failures >= MAX_CLAIM_FAILURES:
            peer.offence(
                PeerEvent.INVALID_MESSAGE, DisconnectReason.UNBACKED_CLAIM,
                f"claimed block {claim.head_number} and total difficulty {claim.total_difficulty}, {unbacked}",
            )
        else:
            self.log.info(
                "peer {peer} did not back its claimed chain ({why}; {count} of {limit})",
                peer=peer.short_id, why=unbacked, count=peer.claim_failures, limit=MAX_CLAIM_FAILURES,
            )

    async def _judge(self, peer: PeerProtocol, claim: Claim) -> str | None:
        """
        Whether a run backed the claim the peer made when it started: the
        chain now holds that much work, or the peer showed headers up to
        the claimed head (whose blocks this node may hold back, as blocks
        ahead of its clock); else why not.
        """
        if claim.total_difficulty <= self._chain.head.total_difficulty:
            peer.claim_failures = 0
            return None
        known = await self._chain.get_total_difficulty(claim.head_hash)
        if known is not None:
            return f"its head's total difficulty is {known}"
        if peer.shown_number >= claim.head_number:
            return None
        return f"it showed headers up to block {peer.shown_number} only"

    def _shown(self) -> int:
        """
        The highest block number the peers have shown.
        """
        return max((peer.shown_number for peer in self._peers()), default=0)

    def _finished(self, _: Any, peer: PeerProtocol) -> None:
        self._running = None
        self._finished_run()
        again, self._again = self._again, False
        best = self.best_peer()
        if not self.stopped and (again or best is not None):
            # Let the reactor breathe between runs (a peer that keeps
            # failing must not turn this into a busy loop); another peer's
            # turn comes sooner (one that failed to back its claim must
            # not hold up an honest one).
            self._cancel_next()
            self._next = self._clock.callLater(0.1 if again or best is not peer else 1.0, self._retry)
        if best is None:
            self._done()

    def _done(self) -> None:
        if self.status is not None:
            head = self._chain.head.header.number
            self.log.info("sync finished at block {number}", number=head)
            self._tell(SyncStatus(False))
        self.status = None
        self._highest = 0
        if self._progress is not None and self._progress.running:
            self._progress.stop()
        self._progress = None

    def add_observer(self, observer: Callable[[SyncStatus], None]) -> None:
        """
        Call C{observer} with the status when a sync starts, at each progress line, and when it ends.
        """
        self._observers.append(observer)

    def _tell(self, status: SyncStatus) -> None:
        for observer in list(self._observers):
            try:
                observer(status)
            except Exception:
                self.log.failure("sync status observer {observer!r} failed", observer=observer)

    def _retry(self) -> None:
        self._next = None
        self.maybe_sync()

    def stop(self) -> None:
        """
        Start no more runs (the node stops).
        """
        self.stopped = True
        self._cancel_next()
        if self._held_call is not None and self._held_call.active():
            self._held_call.cancel()
        self._held_call = None
        self._held.clear()
        self._done()

    def _cancel_next(self) -> None:
        """
        Forget the run planned for later (one starts now, or none will).
        """
        if self._next is not None and self._next.active():
            self._next.cancel()
        self._next = None

    def current_status(self) -> SyncStatus | None:
        """
        The sync status with the current head and the highest known peer block.
        """
        if self.status is None:
            return None
        head = self._chain.head.header.number
        self._highest = max(self._highest, head, self._shown())
        return SyncStatus(True, self.status.starting_block, head, self._highest)

    def _log_progress(self) -> None:
        status = self.current_status()
        if status is None:
            return
        then, number = self._progress_mark
        now = self._clock.seconds()
        rate = (status.current_block - number) / (now - then) if now > then else 0.0
        self._progress_mark = (now, status.current_block)
        self._tell(status)
        remaining = max(0, status.highest_block - status.current_block)
        eta = f"{remaining / rate:.0f} s" if rate > 0 else "unknown"
        self.log.info(
            "syncing: block {height} of {target}, {rate:.1f} blocks/s, ETA {eta}",
            height=status.current_block, target=status.highest_block, rate=rate, eta=eta,
        )

    # One run

    async def _run(self, peer: PeerProtocol) -> None:
        """
        Sync from C{peer} until its chain is exhausted.
        """
        ancestor = await self._find_ancestor(peer)
        head = self._chain.head
        if ancestor.hash != head.header.hash:
            await self._prove_fork(peer, ancestor, head)
        self.log.info(
            "syncing from peer {peer} (block {number}, total difficulty {td}) from block {ancestor}",
            peer=peer.short_id, number=peer.head_number, td=peer.total_difficulty, ancestor=ancestor.number,
        )
        next_number, parent_hash = ancestor.number + 1, ancestor.hash
        pending: Deferred[tuple[Header, ...]] | None = self._fetch_headers(peer, next_number)
        previous_import: Deferred[Any] | None = None
        try:
            while pending is not None:
                headers, pending = await pending, None
                if not headers:
                    break
                reason = check_header_chain(headers, next_number, parent_hash)
                if reason is not None:
                    peer.offence(PeerEvent.INVALID_HEADER, DisconnectReason.INVALID_HEADERS, reason)
                    raise SyncAborted(reason)
                peer.shown_number = max(peer.shown_number, headers[-1].number)
                next_number += len(headers)
                parent_hash = headers[-1].hash
                # The next headers travel while these bodies are fetched and imported.
                pending = self._fetch_headers(peer, next_number)
                blocks = await self._fetch_bodies(peer, headers)
                if previous_import is not None:
                    importing, previous_import = previous_import, None
                    await importing
                previous_import = ensureDeferred(self._import(peer, blocks))
            if previous_import is not None:
                importing, previous_import = previous_import, None
                await importing
        finally:
            # A run that stops early leaves requests in flight: their
            # failures (the peer is gone) are expected, not errors to log.
            for waiting in (pending, previous_import):
                if waiting is not None:
                    waiting.addErrback(lambda failure: None)

    async def _prove_fork(self, peer: PeerProtocol, ancestor: Header, head: ChainHead) -> None:
        """
        Before any block of a fork (the peer's chain leaves this node's
        below the head) is imported, the peer's headers from the fork
        point must show more work than the head's chain has above it (the
        sum of their difficulties, a lower bound of the fork's work: the
        uncles' are not in the headers; when the headers fall short, the
        bodies of up to L{MAX_UNCLE_PROOF_BLOCKS} of the fork's blocks that
        name uncles add their uncles' difficulties).  Only the running sum
        is kept; the run then fetches the headers again with their bodies.

        @raise SyncAborted: the fork branches more than L{MAX_FORK_DEPTH}
            blocks below the head, its headers break the chain, or they end
            (or pass L{MAX_FORK_DEPTH} more than its depth) before showing
            the work.
        """
        depth = head.header.number - ancestor.number
        if depth > MAX_FORK_DEPTH:
            raise SyncAborted(f"its chain forks {depth} blocks below the head, more than {MAX_FORK_DEPTH}", unbacked=True)
        ancestor_total_difficulty = await self._chain.get_total_difficulty(ancestor.hash)
        assert ancestor_total_difficulty is not None
        shortfall = head.total_difficulty - ancestor_total_difficulty
        work, next_number, parent_hash = 0, ancestor.number + 1, ancestor.hash
        with_uncles: list[Header] = []
        while work <= shortfall and next_number <= ancestor.number + depth + MAX_FORK_DEPTH:
            headers = await peer.request_headers(next_number, HEADER_BATCH)
            if not headers:
                break
            reason = check_header_chain(headers, next_number, parent_hash)
            if reason is not None:
                peer.offence(PeerEvent.INVALID_HEADER, DisconnectReason.INVALID_HEADERS, reason)
                raise SyncAborted(reason)
            work += sum(header.difficulty for header in headers)
            room = MAX_UNCLE_PROOF_BLOCKS - len(with_uncles)
            with_uncles.extend([header for header in headers if header.uncle_count][:room])
            next_number, parent_hash = next_number + len(headers), headers[-1].hash
            peer.shown_number = max(peer.shown_number, headers[-1].number)
        if work <= shortfall and with_uncles:
            # Uncles count in the fork choice (DESIGN §2): a short fork
            # whose blocks name uncles (stale blocks, which clock errors
            # and partitions make) may be heavier than its headers show.
            work += await self._uncle_work(peer, with_uncles)
        if work <= shortfall:
            raise SyncAborted(f"its fork shows {work} of the {shortfall + 1} work it needs", unbacked=True)

    async def _uncle_work(self, peer: PeerProtocol, headers: list[Header]) -> int:
        """
        The difficulties of the uncles of C{headers} (blocks of a fork
        being proven), from their bodies, which must match the headers.

        @raise SyncAborted: the peer does not serve the bodies, or they do
            not match (an unbacked claim).
        """
        work = 0
        for start in range(0, len(headers), BODY_BATCH):
            chunk = headers[start : start + BODY_BATCH]
            bodies = await peer.request_bodies(tuple(header.hash for header in chunk))
            if len(bodies) < len(chunk):
                raise SyncAborted("it did not serve the bodies of its fork's blocks", unbacked=True)
            for header, (_, uncles) in zip(chunk, bodies):
                if keccak256(encode_list_of_encoded([uncle.encode() for uncle in uncles])) != header.uncles_hash:
                    raise SyncAborted(f"the uncles it served for block {header.number} are not its header's", unbacked=True)
                work += sum(uncle.difficulty for uncle in uncles)
        return work

    def _fetch_headers(self, peer: PeerProtocol, first: int) -> Deferred[tuple[Header, ...]]:
        return peer.request_headers(first, HEADER_BATCH)

    async def _find_ancestor(self, peer: PeerProtocol) -> Header:
        """
        The highest block of the canonical chain that the peer also has.
        """
        top = min(self._chain.head.header.number, peer.head_number)
        step = ANCESTOR_BATCH
        while True:
            count = min(top + 1, ANCESTOR_BATCH)
            theirs = await peer.request_headers(top, count, 0, True)
            ours = await self._chain.get_headers_by_number([header.number for header in theirs])
            for their, our in zip(theirs, ours):
                if our is not None and our.hash == their.hash:
                    peer.shown_number = max(peer.shown_number, our.number)
                    return our
            if top == 0:
                raise SyncAborted(f"peer {peer.short_id} shares no block with this chain", unbacked=True)
            top = max(0, top - step)
            step *= 2

    async def _fetch_bodies(self, sync_peer: PeerProtocol, headers: Sequence[Header]) -> list[tuple[Block, PeerProtocol]]:
        """
        The blocks of C{headers}, their bodies asked of several peers at once
        (a peer that fails is dropped and its share goes to another).
        """
        chunks = [list(headers[start : start + BODY_BATCH]) for start in range(0, len(headers), BODY_BATCH)]
        results: dict[int, list[tuple[Block, PeerProtocol]]] = {}
        failed: set[PeerProtocol] = set()
        while len(results) < len(chunks):
            if not sync_peer.established or sync_peer in failed:
                raise SyncAborted(f"peer {sync_peer.short_id} did not serve the bodies of its own headers", unbacked=True)
            waiting = [index for index in range(len(chunks)) if index not in results]
            helpers = self._body_peers(chunks[waiting[-1]][-1].number, failed) or [sync_peer]
            requests = [
                self._fetch_chunk(helpers[slot % len(helpers)], chunks[index], index, results, failed)
                for slot, index in enumerate(waiting)
            ]
            await DeferredList(requests, consumeErrors=True)
        return [entry for index in range(len(chunks)) for entry in results[index]]

    def _body_peers(self, last_number: int, failed: set[PeerProtocol]) -> list[PeerProtocol]:
        return [
            peer for peer in self._peers()
            if peer.head_number >= last_number and peer not in failed and peer.free_request_slots > 0
        ]

    def _fetch_chunk(
        self,
        peer: PeerProtocol,
        chunk: list[Header],
        index: int,
        results: dict[int, list[tuple[Block, PeerProtocol]]],
        failed: set[PeerProtocol],
    ) -> Deferred[None]:
        """
        Ask C{peer} for one chunk of bodies; a short answer or a failure
        marks the peer as unable to help, and the chunk is asked again elsewhere.
        """

        def received(bodies: Any) -> None:
            if len(bodies) < len(chunk):
                failed.add(peer)
                return
            results[index] = [(Block(header, txs, uncles), peer) for header, (txs, uncles) in zip(chunk, bodies)]

        def lost(failure: Any) -> None:
            failed.add(peer)

        return peer.request_bodies(tuple(header.hash for header in chunk)).addCallbacks(received, lost)

    async def _import(self, sync_peer: PeerProtocol, blocks: list[tuple[Block, PeerProtocol]]) -> None:
        """
        Import fetched blocks in order; an invalid block drops the peer that
        sent its body, whose blocks are asked again of the sync peer.
        """
        self.importing += len(blocks)
        try:
            outcomes = await self._chain.import_blocks([block for block, _ in blocks], from_peer(sync_peer.node_id or b""))
        finally:
            self.importing -= len(blocks)
        dues = [outcome.due for outcome in outcomes if outcome.due is not None]
        if dues:
            self.held(sync_peer, max(dues))
        invalid = [outcome for outcome in outcomes if outcome.result is ImportResult.INVALID_BLOCK]
        if not invalid:
            return
        index = next((i for i, (block, _) in enumerate(blocks) if block.hash == invalid[0].block_hash), None)
        if index is None:
            # A block kept aside by the chain from earlier, not one of these.
            return
        block, supplier = blocks[index]
        supplier.offence(PeerEvent.INVALID_BLOCK, DisconnectReason.INVALID_BLOCK, f"block {block.number}: {invalid[0].reason}")
        if supplier is sync_peer:
            raise SyncAborted(f"invalid block {block.number} from the sync peer")
        rest = [candidate.header for candidate, _ in blocks[index:]]
        bodies = await sync_peer.request_bodies(tuple(header.hash for header in rest))
        again = [(Block(header, txs, uncles), sync_peer) for header, (txs, uncles) in zip(rest, bodies)]
        if len(again) < len(rest):
            raise SyncAborted(f"peer {sync_peer.short_id} lacks the bodies of its own headers", unbacked=True)
        await self._import(sync_peer, again)


__all__ = [
    "BODY_BATCH",
    "MAX_CLAIM_FAILURES",
    "MAX_FORK_DEPTH",
    "MAX_UNCLE_PROOF_BLOCKS",
    "Claim",
    "HEADER_BATCH",
    "SyncAborted",
    "Synchroniser",
    "check_header_chain",
]
