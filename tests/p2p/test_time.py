"""
Time at the P2P edge: a peer's block stamped ahead of the local clock is
held until it is due, never an offence (C{docs/chain-service.md}, "Time").
The relay over a real chain service on a memory store and a L{Clock}.
"""

from dataclasses import replace
from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.logger import Logger
from twisted.trial.unittest import SynchronousTestCase

from nodex.chain.importer import HOLD_SECONDS
from nodex.chain.rules import DRIFT_LIMIT_SECONDS
from nodex.p2p.messages import NewBlock
from nodex.p2p.relay import ChainRelay
from nodex.services.chain import ChainService
from nodex.structures.blocks import Block
from tests.chain.test_processing import build_on, sample_rules, sample_store
from nodex.p2p.errors import DisconnectReason
from tests.p2p.test_protocol import FakeHost, established_peer


class NoSync:
    """
    A synchroniser that is never needed here.
    """

    syncing = False

    def __init__(self) -> None:
        self.held_until: list[float] = []

    def maybe_sync(self, peer: Any) -> None:
        raise AssertionError("no sync expected")

    def held(self, peer: Any, due: float) -> None:
        self.held_until.append(due)


class FutureBlockTests(SynchronousTestCase):
    """
    Blocks from a peer whose clock runs ahead of this node's.
    """

    def setUp(self) -> None:
        """
        A chain service with the drift limit of the networks with real
        clocks, a clock at 1000, and a relay in front of it.
        """
        self.clock = Clock()
        self.clock.advance(1000)
        self.store, self.genesis = sample_store()
        rules = replace(sample_rules(), max_seconds_in_future=DRIFT_LIMIT_SECONDS)
        self.chain = ChainService(self.store, rules, self.clock)
        self.chain.startService()
        self.addCleanup(self.chain.stopService)
        self.host = FakeHost()
        self.relay = ChainRelay(self.chain, NoSync(), list, lambda: True)  # type: ignore[arg-type]
        self.peer, _ = established_peer(self.host)

    def send(self, block: Block) -> None:
        """
        The peer sends C{block} whole.
        """
        done = Deferred.fromCoroutine(self.relay.new_block(self.peer, NewBlock(block, 10**6)))
        self.successResultOf(done)

    def test_thirty_seconds_ahead_held_then_imported(self) -> None:
        """
        A block 30 s ahead is held, not refused, and becomes the head when
        its time comes; its sender is charged nothing, and is no sync
        candidate until then.
        """
        block = build_on(self.store, self.genesis, timestamp=1030).block
        self.send(block)
        self.assertEqual(self.chain.head.header, self.genesis)
        # The sender's claimed head waits on the held block: no sync from it before it is due.
        self.assertEqual(self.relay.sync.held_until, [1030 - DRIFT_LIMIT_SECONDS])
        self.clock.advance(30 - DRIFT_LIMIT_SECONDS - 1)
        self.assertEqual(self.chain.head.header, self.genesis)
        self.clock.advance(1)
        self.assertEqual(self.chain.head.header, block.header)
        self.assertFalse(self.peer.offended)
        self.assertNotIn("INVALID_BLOCK", self.host.events)

    def test_ten_minutes_fast_not_punished(self) -> None:
        """
        A peer whose clock runs ten minutes fast is not punished for its
        blocks: they are held until due; the chain takes them ten minutes on.
        """
        first = build_on(self.store, self.genesis, timestamp=1600).block
        second = build_on(self.store, first.header, timestamp=1601).block
        self.send(first)
        self.send(second)
        self.assertFalse(self.peer.offended)
        self.clock.advance(600 - DRIFT_LIMIT_SECONDS + 1)
        self.assertEqual(self.chain.head.header, second.header)
        self.assertFalse(self.peer.offended)

    def test_hours_ahead_dropped_not_punished(self) -> None:
        """
        A block further ahead than any plausible drift is dropped, not
        stored and not held, and still costs its sender nothing.
        """
        block = build_on(self.store, self.genesis, timestamp=1000 + HOLD_SECONDS + 1).block
        self.send(block)
        self.clock.advance(HOLD_SECONDS)
        self.assertEqual(self.chain.head.header, self.genesis)
        self.assertFalse(self.peer.offended)

    def test_ahead_and_invalid_punished(self) -> None:
        """
        A block ahead of the clock that breaks another rule is refused at
        once and counts against its sender.
        """
        block = build_on(self.store, self.genesis, timestamp=1030).block
        forged = Block(replace(block.header, gas_used=5))
        self.send(forged)
        self.assertEqual(self.peer.disconnect_reason, DisconnectReason.INVALID_BLOCK)
        self.assertEqual(self.host.events, ["INVALID_BLOCK"])

    def test_slow_clock_warned_once(self) -> None:
        """
        When most peers' new blocks arrive beyond the drift limit, the node
        warns once that its own clock looks slow.
        """
        warnings: list[dict[str, Any]] = []
        self.chain._clock_check.log = Logger(observer=warnings.append)  # type: ignore[misc]
        parent = self.genesis
        for index in range(6):
            block = build_on(self.store, parent, timestamp=1100 + index).block
            self.send(block)
            parent = block.header
        self.assertEqual(len([event for event in warnings if "clock looks slow" in event["log_format"]]), 1)
