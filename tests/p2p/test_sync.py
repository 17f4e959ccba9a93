"""
The synchroniser's choices, with a fake chain and fake peers on a Clock:
which claims are judged, and when a run is not worth starting.
"""

from dataclasses import replace
from typing import Any

from twisted.internet.defer import Deferred, succeed
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase
from zope.interface import directlyProvides

from nodex.crypto import keccak256
from nodex.api.chain import ChainHead, ImportOutcome, ImportResult, IPeerChain
from nodex.p2p.sync import MAX_CLAIM_FAILURES, Synchroniser
from nodex.structures.blocks import Block
from nodex.structures.headers import Header
from nodex.structures.rlpcodec import encode_list_of_encoded
from tests.p2p.test_messages import sample_header


def chain_of(count: int, extra: bytes = b"x", parent: Header | None = None) -> list[Header]:
    """
    C{count} headers of difficulty 1, each the parent of the next (after C{parent}, if given).
    """
    headers: list[Header] = []
    for offset in range(count):
        number = 0 if parent is None and not headers else (headers[-1] if headers else parent).number + 1  # type: ignore[union-attr]
        header = replace(sample_header(number), difficulty=1, extra_data=extra)
        previous = headers[-1] if headers else parent
        if previous is not None:
            header = replace(header, parent_hash=previous.hash)
        headers.append(header)
    return headers


class FakeChain:
    """
    A canonical chain of headers (total difficulty: one per block and one
    for genesis); imports answer what C{answer} says.
    """

    def __init__(self, headers: list[Header]) -> None:
        self.headers = headers
        self.head = ChainHead(headers[-1], len(headers))
        self.imported: list[list[Block]] = []
        self.answer = ImportResult.IMPORTED_BEST
        self.due: int | None = None
        directlyProvides(self, IPeerChain)

    def get_headers_by_number(self, numbers: list[int]) -> Deferred[list[Header | None]]:
        return succeed([self.headers[n] if 0 <= n < len(self.headers) else None for n in numbers])

    def get_total_difficulty(self, block_hash: bytes) -> Deferred[int | None]:
        for header in self.headers:
            if header.hash == block_hash:
                return succeed(header.number + 1)
        return succeed(None)

    def import_blocks(self, blocks: list[Block], source: Any) -> Deferred[list[ImportOutcome]]:
        self.imported.append(blocks)
        return succeed([ImportOutcome(block.hash, self.answer, due=self.due) for block in blocks])


class FakePeer:
    """
    A peer serving C{headers} (its canonical chain) and empty bodies,
    claiming its last header as its head.
    """

    def __init__(self, headers: list[Header], total_difficulty: int) -> None:
        self.headers = headers
        head = headers[-1]
        self.head_hash, self.head_number, self.total_difficulty = head.hash, head.number, total_difficulty
        self.established = True
        self.claim_failures = 0
        self.shown_number = 0
        self.free_request_slots = 4
        self.short_id = "fake"
        self.node_id = b"\x07" * 32
        self.offences: list[str] = []
        self.header_requests = 0
        self.bodies: dict[bytes, tuple[Any, Any]] = {}
        self.on_request: Any = None

    def request_headers(self, origin: int, count: int, skip: int = 0, reverse: bool = False) -> Deferred[tuple[Header, ...]]:
        self.header_requests += 1
        if self.on_request is not None:
            self.on_request()
        step = -(skip + 1) if reverse else skip + 1
        numbers = [origin + step * index for index in range(count)]
        return succeed(tuple(self.headers[n] for n in numbers if 0 <= n < len(self.headers)))

    def request_bodies(self, hashes: tuple[bytes, ...]) -> Deferred[tuple[Any, ...]]:
        return succeed(tuple(self.bodies.get(block_hash, ((), ())) for block_hash in hashes))

    def offence(self, event: str, reason: Any, detail: str) -> None:
        self.offences.append(detail)
        self.established = False


class SyncTests(SynchronousTestCase):
    """
    Which claims the synchroniser holds against a peer, and when it runs.
    """

    def setUp(self) -> None:
        self.clock = Clock()
        self.clock.advance(1_000)
        self.ours = chain_of(11)
        self.chain = FakeChain(self.ours)
        self.peers: list[FakePeer] = []
        self.sync = Synchroniser(self.chain, lambda: list(self.peers), self.clock)  # type: ignore[arg-type]

    def test_equal_work_fork_is_no_unbacked_claim(self) -> None:
        """
        A peer whose head is a competing block of the same height and work
        as this node's (two miners found a block at once) claims no more
        than the head: the runs its block starts (an orphan's) cannot show
        more work, and that is no offence however often it happens.
        """
        theirs = self.ours[:10] + chain_of(1, b"theirs", self.ours[9])
        peer = FakePeer(theirs, self.chain.head.total_difficulty)
        self.peers.append(peer)
        for _ in range(MAX_CLAIM_FAILURES + 1):
            self.sync.maybe_sync(peer)  # type: ignore[arg-type]
            self.clock.advance(2)
        self.assertEqual((peer.offences, peer.claim_failures), ([], 0))
        self.assertEqual(self.chain.imported, [])

    def test_claim_reached_during_the_run(self) -> None:
        """
        A peer that claimed more work than the head, whose fork shows less
        because this node's head reached the claimed work while the run
        looked (another block came by gossip), claimed nothing unbacked.
        """
        theirs = self.ours[:10] + chain_of(1, b"theirs", self.ours[9])
        peer = FakePeer(theirs, self.chain.head.total_difficulty + 1)
        self.peers.append(peer)
        grown = chain_of(1, b"ours", self.ours[-1])[0]

        def head_grows() -> None:
            self.chain.head = ChainHead(grown, self.chain.head.total_difficulty + 1)

        peer.on_request = head_grows
        for _ in range(MAX_CLAIM_FAILURES + 1):
            self.sync.maybe_sync(peer)  # type: ignore[arg-type]
            self.clock.advance(2)
            self.chain.head = ChainHead(self.ours[-1], len(self.ours))
        self.assertEqual((peer.offences, peer.claim_failures), ([], 0))

    def test_lighter_fork_claimed_heavy_is_unbacked(self) -> None:
        """
        The same fork from a peer that claims more work than the head is
        an unbacked claim, an offence after L{MAX_CLAIM_FAILURES} runs.
        """
        theirs = self.ours[:10] + chain_of(1, b"theirs", self.ours[9])
        peer = FakePeer(theirs, self.chain.head.total_difficulty + 5)
        self.peers.append(peer)
        for _ in range(MAX_CLAIM_FAILURES):
            self.sync.maybe_sync(peer)  # type: ignore[arg-type]
            self.clock.advance(2)
        self.assertEqual(len(peer.offences), 1)
        self.assertIn("work it needs", peer.offences[0])

    def test_fork_heavier_by_its_uncles(self) -> None:
        """
        A fork whose headers show less work than the head's chain above
        the fork point, but whose blocks' uncles (in their bodies, matching
        the headers' uncle hashes) make it heavier, is proven and synced:
        uncles count in the fork choice.  Uncles that do not match the
        header prove nothing.
        """
        uncles = tuple(replace(header, extra_data=b"uncle") for header in chain_of(2, b"uncle", self.ours[7]))
        [fork] = chain_of(1, b"theirs", self.ours[8])
        fork = replace(
            fork, uncle_count=2,
            uncles_hash=keccak256(encode_list_of_encoded([uncle.encode() for uncle in uncles])),
        )
        peer = FakePeer(self.ours[:9] + [fork], self.chain.head.total_difficulty + 1)
        self.peers.append(peer)
        peer.bodies[fork.hash] = ((), uncles[:1])
        self.sync.maybe_sync(peer)  # type: ignore[arg-type]
        self.assertEqual((self.chain.imported, peer.claim_failures), ([], 1))
        peer.bodies[fork.hash] = ((), uncles)
        self.clock.advance(2)
        self.assertEqual([[block.hash for block in blocks] for blocks in self.chain.imported], [[fork.hash]])
        self.assertEqual(peer.offences, [])

    def held_peer(self) -> tuple[list[Header], FakePeer]:
        """
        A peer two blocks ahead, synced once: the chain holds its blocks
        for 30 s.
        """
        theirs = self.ours + chain_of(2, b"ahead", self.ours[-1])
        peer = FakePeer(theirs, self.chain.head.total_difficulty + 2)
        self.peers.append(peer)
        self.chain.answer = ImportResult.FUTURE_BLOCK
        self.chain.due = int(self.clock.seconds()) + 30
        self.sync.maybe_sync()
        return theirs, peer

    def test_held_block_waits_until_due(self) -> None:
        """
        A run whose blocks the chain holds until they are due (stamped
        ahead of this node's clock) is not repeated before the earliest
        is due; then the sync looks again.
        """
        self.held_peer()
        self.assertEqual(len(self.chain.imported), 1)
        for _ in range(29):
            self.clock.advance(1)
        self.assertEqual(len(self.chain.imported), 1)
        self.assertFalse(self.sync.syncing)
        self.sync.maybe_sync()
        self.assertEqual(len(self.chain.imported), 1)
        self.chain.due = None
        self.chain.answer = ImportResult.IMPORTED_BEST
        self.clock.advance(1)
        self.assertEqual(len(self.chain.imported), 2)

    def test_held_wait_ends_with_a_new_claim(self) -> None:
        """
        A peer that claims another head meanwhile is a candidate again.
        """
        theirs, peer = self.held_peer()
        self.clock.advance(2)
        self.assertEqual(len(self.chain.imported), 1)
        peer.headers = theirs + chain_of(1, b"more", theirs[-1])
        peer.head_hash, peer.head_number = peer.headers[-1].hash, peer.headers[-1].number
        peer.total_difficulty += 1
        self.sync.maybe_sync()
        self.assertEqual(len(self.chain.imported), 2)
