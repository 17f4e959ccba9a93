"""
Tests for L{nodex.services.tracing.TracingService} over a real chain service
and state service on a memory store (their threads replaced by
C{maybeDeferred}).
"""

from collections.abc import Sequence
from typing import Any

from twisted.internet.defer import Deferred, maybeDeferred
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase
from zope.interface.verify import verifyObject

from nodex.chain.aside import FILE
from nodex.chain.calls import CallRequest
from nodex.chain.tracing.limits import CALL_TRACER, TraceConfig, TraceError, TraceLimitError, TraceLimits, TraceQueryError
from nodex.api.chain import ImportResult
from nodex.api.errors import InsufficientFundsError
from nodex.api.tracing import ITracingService, TraceFilter
from nodex.services.chain import ChainService
from nodex.services.state import StateService
from nodex.services.tracing import TracingService
from nodex.state.overrides import AccountOverride, StateOverrides
from nodex.structures.blocks import Block
from tests.chain.test_processing import RECIPIENT, build_on, sample_rules
from tests.chain.tracing_world import ENTRY, SENDER, SIMPLE, STORER, World, signed


def import_blocks(chain: ChainService, blocks: Sequence[Block]) -> "Deferred[list[tuple[str, str | None]]]":
    """
    Import a run of blocks in one writer job; the result name and reason of each.
    """
    return chain.import_blocks(blocks, FILE).addCallback(
        lambda outcomes: [(outcome.result, outcome.reason) for outcome in outcomes]
    )


class SteppingClock(Clock):
    """
    A clock that moves on by C{step} seconds at every reading.
    """

    def __init__(self, step: float) -> None:
        super().__init__()
        self.step = step

    def seconds(self) -> float:
        self.advance(self.step)
        return super().seconds()


class TracingServiceTests(SynchronousTestCase):
    """
    Tests for L{TracingService}.
    """

    def setUp(self) -> None:
        self.clock = Clock()
        self.world = World([signed(0, SIMPLE, gas=100_000), signed(1, ENTRY)])
        self.chain = ChainService(self.world.store, sample_rules(), self.clock)
        self.block = self.world.block
        self.assertEqual(self.successResultOf(import_blocks(self.chain, [self.block]))[0][0], ImportResult.IMPORTED_BEST)
        self.state = StateService(self.world.store, 33, maybeDeferred, self.clock, inline_call_gas=0)
        self.tracing = self.make_service(self.clock)

    def make_service(self, clock: Clock, limits: TraceLimits | None = None, **keywords: Any) -> TracingService:
        """
        A tracing service over the test chain.
        """
        return TracingService(self.chain, self.state, clock, limits, **keywords)

    def test_interface(self) -> None:
        """
        The service provides L{ITracingService}.
        """
        self.assertTrue(verifyObject(ITracingService, self.tracing))

    def test_trace_transaction(self) -> None:
        """
        A transaction of the chain is traced on its block's replayed state.
        """
        trace = self.successResultOf(self.tracing.trace_transaction(self.block.transactions[0].hash, TraceConfig()))
        self.assertEqual(trace["contractAddress"], SIMPLE.hex())
        self.assertEqual(len(trace["structLogs"]), 9)

    def test_unknown_transaction(self) -> None:
        """
        An unknown hash is an error that says so; C{trace_transaction} answers L{None}.
        """
        failure = self.failureResultOf(self.tracing.trace_transaction(b"\x01" * 32, TraceConfig()), TraceError)
        self.assertEqual(str(failure.value), "transaction 0x" + "01" * 32 + " not found")
        self.assertIsNone(self.successResultOf(self.tracing.parity_transaction(b"\x01" * 32)))

    def test_trace_block(self) -> None:
        """
        Every transaction of a block, each with its hash; the call trees' gas is the receipts'.
        """
        traces = self.successResultOf(self.tracing.trace_block(self.block.hash, TraceConfig(tracer=CALL_TRACER)))
        self.assertEqual([item["txHash"] for item in traces], ["0x" + tx.hash.hex() for tx in self.block.transactions])
        receipts = self.successResultOf(self.chain.get_block_receipts(self.block.hash))
        self.assertEqual([item["result"]["gasUsed"] for item in traces], [hex(view.gas_used) for view in receipts])

    def test_genesis_and_unknown_block(self) -> None:
        """
        The genesis block cannot be traced, and an unknown block is an error;
        its flat traces are none.
        """
        failure = self.failureResultOf(self.tracing.trace_block(self.world.genesis.hash, TraceConfig()), TraceError)
        self.assertIn("genesis", str(failure.value))
        self.failureResultOf(self.tracing.trace_block(b"\x02" * 32, TraceConfig()), TraceError)
        genesis = Block(self.world.genesis)
        self.assertEqual(self.successResultOf(self.tracing.parity_block(genesis)), [])

    def test_parity_block(self) -> None:
        """
        The flat traces of a block's transactions, in order.
        """
        traces = self.successResultOf(self.tracing.parity_block(self.block))
        self.assertEqual([trace["transactionPosition"] for trace in traces], [0] + [1] * 12)

    def test_time_limit(self) -> None:
        """
        A replay whose time runs out ends with an error naming the limit.
        """
        tracing = self.make_service(SteppingClock(3.0), TraceLimits(time_limit=2.0))
        failure = self.failureResultOf(tracing.trace_block(self.block.hash, TraceConfig()), TraceLimitError)
        self.assertEqual(str(failure.value), "trace exceeded the time limit of 2 seconds")

    def test_endless_call_stops_at_the_time_limit(self) -> None:
        """
        C{debug_traceCall} of an endless loop with the call tracer, which
        charges the budget nothing per step (so the budget never looked at
        the clock), with gas for hours: the EVM stops at the time limit and
        the answer names the limit (issue 26).
        """
        self.state.call_gas_cap = 10**15
        tracing = self.make_service(SteppingClock(1.0), TraceLimits(time_limit=5.0))
        overrides = StateOverrides({STORER: AccountOverride(code=b"\x5b\x5f\x56")})
        request = CallRequest(sender=SENDER, to=STORER)
        config = TraceConfig(tracer=CALL_TRACER, state_overrides=overrides)
        failure = self.failureResultOf(tracing.trace_call(self.block.header, request, config), TraceLimitError)
        self.assertEqual(str(failure.value), "trace exceeded the time limit of 5 seconds")

    def test_trace_call(self) -> None:
        """
        A call is traced on a block's state, with the state overrides.
        """
        overrides = StateOverrides({STORER: AccountOverride(code=bytes.fromhex("60016000f3"))})
        request = CallRequest(sender=SENDER, to=STORER, data=b"\x01")
        tree = self.successResultOf(
            self.tracing.trace_call(self.block.header, request, TraceConfig(tracer=CALL_TRACER, state_overrides=overrides))
        )
        self.assertEqual((tree["to"], tree["output"]), ("0x" + STORER.hex(), "0x00"))

    def test_trace_call_insufficient_funds(self) -> None:
        """
        A value the sender cannot pay is refused as C{eth_call} refuses it.
        """
        request = CallRequest(sender=b"\x99" * 20, to=STORER, value=1)
        self.failureResultOf(self.tracing.trace_call(self.block.header, request, TraceConfig()), InsufficientFundsError)


class TraceFilterTests(SynchronousTestCase):
    """
    Tests for L{TracingService.parity_filter}, and traces after a reorganisation.
    """

    def setUp(self) -> None:
        self.clock = Clock()
        self.world = World([signed(0, ENTRY)])
        store = self.world.store
        self.chain = ChainService(store, sample_rules(), self.clock)
        first = self.world.block
        results = self.successResultOf(import_blocks(self.chain, [first]))
        second = build_on(store, first.header, [signed(1, RECIPIENT, value=3)]).block
        self.blocks = [first, second]
        results += self.successResultOf(import_blocks(self.chain, [second]))
        third = build_on(store, second.header, [signed(2, STORER, key=0), signed(0, SIMPLE, key=1)]).block
        results += self.successResultOf(import_blocks(self.chain, [third]))
        self.blocks.append(third)
        self.assertEqual({result for result, _ in results}, {ImportResult.IMPORTED_BEST})
        self.state = StateService(store, 33, maybeDeferred, self.clock, inline_call_gas=0)
        self.tracing = TracingService(self.chain, self.state, self.clock, max_filter_blocks=10)

    def filter(self, **fields: Any) -> list[dict[str, Any]]:
        """
        The traces of a query.
        """
        return self.successResultOf(self.tracing.parity_filter(TraceFilter(**fields)))  # type: ignore[no-any-return]

    def test_whole_range(self) -> None:
        """
        Without bounds, every trace of the chain in order.
        """
        traces = self.filter()
        self.assertEqual([trace["blockNumber"] for trace in traces], [1] * 12 + [2, 3, 3])

    def test_range(self) -> None:
        """
        The bounds select blocks; a range above the head gives nothing.
        """
        self.assertEqual([trace["blockNumber"] for trace in self.filter(from_block=2, to_block=2)], [2])
        self.assertEqual(self.filter(from_block=9, to_block=12), [])

    def test_addresses(self) -> None:
        """
        C{fromAddress} and C{toAddress} select traces by their own sender and recipient.
        """
        from_entry = self.filter(from_addresses=frozenset({ENTRY}))
        self.assertEqual(len(from_entry), 10)
        to_storer = self.filter(to_addresses=frozenset({STORER}))
        self.assertEqual([(trace["blockNumber"], trace["traceAddress"]) for trace in to_storer],
                         [(1, [0]), (1, [1]), (1, [3]), (3, [])])
        both = self.filter(from_addresses=frozenset({SENDER}), to_addresses=frozenset({RECIPIENT}))
        self.assertEqual([trace["blockNumber"] for trace in both], [2])

    def test_paging(self) -> None:
        """
        C{after} skips matching traces and C{count} caps the answer.
        """
        everything = self.filter()
        self.assertEqual(self.filter(after=12, count=3), everything[12:15])
        self.assertEqual(self.filter(after=16, count=3), [])

    def test_limits(self) -> None:
        """
        A count or after beyond the limit, a reversed range and a range too
        large are errors that say which.
        """
        cases = [
            (TraceFilter(count=10_001), "Count value too big. Maximum 10000 traces allowed."),
            (TraceFilter(after=10_001), "After value too big. Maximum 10000 traces allowed."),
            (TraceFilter(from_block=3, to_block=2), "fromBlock cannot be greater than toBlock"),
            (TraceFilter(from_block=0, to_block=200), "trace_filter covers 4 blocks, more than the limit of 10"),
        ]
        tracing = TracingService(self.chain, self.state, self.clock, max_filter_blocks=3)
        cases[3] = (TraceFilter(from_block=0, to_block=200), "trace_filter covers 4 blocks, more than the limit of 3")
        for query, message in cases:
            failure = self.failureResultOf(tracing.parity_filter(query), TraceQueryError)
            self.assertEqual(str(failure.value), message)

    def test_reorganisation(self) -> None:
        """
        After a reorganisation the new canonical blocks' transactions are
        traced, and an abandoned block can still be traced by its hash.
        """
        store = self.world.store
        genesis = self.world.genesis
        side = [build_on(store, genesis, [signed(0, SIMPLE, key=2)], timestamp=5).block]
        self.successResultOf(import_blocks(self.chain, side))
        for _ in range(3):
            side.append(build_on(store, side[-1].header, []).block)
            self.successResultOf(import_blocks(self.chain, side[-1:]))
        self.assertEqual(self.chain.head.header.hash, side[-1].hash)
        self.assertEqual([trace["blockHash"] for trace in self.filter()], ["0x" + side[0].hash.hex()])
        abandoned = self.successResultOf(self.tracing.trace_block(self.blocks[2].hash, TraceConfig(tracer=CALL_TRACER)))
        self.assertEqual(len(abandoned), 2)
        moved = self.successResultOf(self.tracing.trace_transaction(side[0].transactions[0].hash, TraceConfig()))
        self.assertEqual(moved["contractAddress"], SIMPLE.hex())
        self.assertIsNone(self.successResultOf(self.tracing.parity_transaction(self.blocks[1].transactions[0].hash)))
