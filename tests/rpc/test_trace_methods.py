"""
Tests for L{nodex.rpc.trace_methods}: the strict decoding of trace options
and of C{trace_filter}'s query, and the methods over a fake tracing service.
"""

from typing import Any

from twisted.internet.defer import Deferred, succeed
from twisted.trial.unittest import SynchronousTestCase

from nodex.api.tracing import TraceConfig, TraceFilter
from nodex.rpc.decoders import BlockTag, DecodeError
from nodex.rpc.trace_methods import TraceMethods, call_trace_options, duration, trace_filter, trace_options

ADDRESS = "0x" + "ab" * 20


class TraceOptionsTests(SynchronousTestCase):
    """
    Tests for L{trace_options}.
    """

    def test_default(self) -> None:
        """
        No tracer (or an empty name) is the struct logger with everything on.
        """
        self.assertEqual(trace_options({}), TraceConfig())
        self.assertEqual(trace_options({"tracer": ""}), TraceConfig())

    def test_default_under_ethereum_conventions(self) -> None:
        """
        The default tracer can be geth's struct logger (the Ethereum
        conventions); either struct logger is reachable by name, and both
        take the struct-log options.
        """
        self.assertEqual(trace_options({}, default="structLogger").tracer, "structLogger")
        self.assertEqual(trace_options({"tracer": "nodexTracer"}, default="structLogger").tracer, "nodexTracer")
        config = trace_options({"tracer": "structLogger", "enableMemory": True, "disableStack": True})
        self.assertEqual((config.tracer, config.enable_memory, config.disable_stack), ("structLogger", True, True))

    def test_struct_log_options(self) -> None:
        """
        The struct logger's options set their members; geth's C{enableMemory} is understood.
        """
        config = trace_options(
            {"disableStack": True, "disableStorage": True, "enableReturnData": True, "limit": 10, "enableMemory": False}
        )
        self.assertEqual(
            (config.disable_stack, config.disable_storage, config.enable_return_data, config.limit, config.disable_memory),
            (True, True, True, 10, True),
        )

    def test_named_tracers(self) -> None:
        """
        Tracer names are case-insensitive; tracerConfig sets their options,
        and the call tracer's may also come at the top level (as the reference takes them).
        """
        self.assertEqual(trace_options({"tracer": "CALLTRACER"}).tracer, "callTracer")
        config = trace_options({"tracer": "callTracer", "tracerConfig": {"onlyTopCall": True}, "withLog": True})
        self.assertEqual((config.only_top_call, config.with_log), (True, True))
        self.assertTrue(trace_options({"tracer": "prestateTracer", "tracerConfig": {"diffMode": True}}).diff_mode)
        self.assertEqual(trace_options({"tracer": "4byteTracer"}).tracer, "4byteTracer")

    def test_refused(self) -> None:
        """
        Unknown tracers, options and tracerConfig members, and options of
        another tracer, are errors that name them.
        """
        cases = [
            ({"tracer": "jsTracer"}, 'unknown tracer "jsTracer"'),
            ({"disableStak": True}, 'unknown trace option "disableStak"'),
            ({"tracer": "callTracer", "disableStack": True}, 'option "disableStack" applies only to the struct loggers'),
            ({"tracer": "callTracer", "tracerConfig": {"diffMode": True}}, 'unknown tracerConfig member "diffMode"'),
            ({"tracerConfig": {"onlyTopCall": True}}, 'unknown tracerConfig member "onlyTopCall" for nodexTracer'),
            ({"tracer": "callTracer", "tracerConfig": {"withLog": "yes"}}, "want a boolean"),
            ({"limit": -1}, "want a non-negative integer"),
            ({"stateOverrides": {}}, 'unknown trace option "stateOverrides"'),
            ({"tracerConfig": []}, "want an object"),
            ([], "want an object"),
        ]
        for value, message in cases:
            error = self.assertRaises(DecodeError, trace_options, value)
            self.assertIn(message, str(error))

    def test_call_options(self) -> None:
        """
        C{debug_traceCall} also takes C{stateOverrides}.
        """
        config = call_trace_options({"stateOverrides": {ADDRESS: {"balance": "0x1"}}})
        self.assertEqual(config.state_overrides.accounts[bytes.fromhex("ab" * 20)].balance, 1)

    def test_timeout(self) -> None:
        """
        C{timeout} is a Go duration.
        """
        self.assertEqual(duration("5s"), 5.0)
        self.assertEqual(duration("1m30s"), 90.0)
        self.assertAlmostEqual(duration("300ms"), 0.3)
        self.assertEqual(trace_options({"timeout": "2s"}).timeout, 2.0)
        for bad in ("", "5", "s", "5 s", "5x", 5):
            self.assertRaises(DecodeError, duration, bad)


class TraceFilterDecoderTests(SynchronousTestCase):
    """
    Tests for L{trace_filter}.
    """

    def test_members(self) -> None:
        """
        Every member decodes; tags become bounds.
        """
        query = trace_filter(
            {"fromBlock": "earliest", "toBlock": "latest", "fromAddress": [ADDRESS], "toAddress": [], "after": "0x2",
             "count": "0x5"}
        )
        self.assertEqual(query, TraceFilter(0, None, frozenset({bytes.fromhex("ab" * 20)}), frozenset(), 2, 5))
        self.assertEqual(trace_filter({"fromBlock": "0x3", "toBlock": "0x4"}), TraceFilter(3, 4))

    def test_numbers(self) -> None:
        """
        C{after} and C{count} may be JSON integers, as Parity and Erigon take them.
        """
        self.assertEqual(trace_filter({"after": 2, "count": 5}), TraceFilter(0, None, frozenset(), frozenset(), 2, 5))

    def test_refused(self) -> None:
        """
        Unknown members, decimal block numbers, negative counts and bad addresses are refused.
        """
        cases = ({"fromblock": "0x1"}, {"fromBlock": 1}, {"toAddress": ["0x12"]}, {"count": "-1"}, {"count": -1},
                 {"after": True}, {"count": 1.5})
        for value in cases:
            self.assertRaises(DecodeError, trace_filter, value)


class FakeTracing:
    """
    A tracing service that records what it was asked.
    """

    def __init__(self) -> None:
        self.asked: list[tuple[str, Any]] = []

    def trace_block(self, block_hash: bytes, config: TraceConfig) -> Any:
        self.asked.append(("block", block_hash))
        return succeed([])

    def parity_block(self, block: Any) -> Any:
        self.asked.append(("parity", block))
        return succeed([])


class FakeChain:
    """
    A chain of one block (the head, number 4) and nothing else.
    """

    class head:
        class header:
            number = 4

    block = type("B", (), {"hash": b"\x04" * 32})()

    def get_block_by_number(self, number: int) -> Any:
        return succeed(self.block if number == 4 else None)

    def get_block_by_hash(self, block_hash: bytes) -> Any:
        return succeed(self.block if block_hash == b"\x04" * 32 else None)


class TraceMethodsTests(SynchronousTestCase):
    """
    Tests for L{TraceMethods}' block parameters.
    """

    def setUp(self) -> None:
        self.tracing = FakeTracing()
        self.methods = TraceMethods(FakeChain(), self.tracing)  # type: ignore[arg-type]

    def test_names(self) -> None:
        """
        The seven methods.
        """
        self.assertEqual(
            sorted(method.name for method in self.methods.rpc_methods()),
            ["debug_traceBlockByHash", "debug_traceBlockByNumber", "debug_traceCall", "debug_traceTransaction",
             "trace_block", "trace_filter", "trace_transaction"],
        )

    def test_trace_block_parameters(self) -> None:
        """
        C{trace_block} takes a hash, a number or a tag; an unknown block is C{null}.
        """
        for parameter in (b"\x04" * 32, 4, BlockTag.LATEST):
            self.assertEqual(self.successResultOf(Deferred.fromCoroutine(self.methods.trace_block(parameter))), [])
        self.assertIsNone(self.successResultOf(Deferred.fromCoroutine(self.methods.trace_block(b"\x05" * 32))))
        self.assertIsNone(self.successResultOf(Deferred.fromCoroutine(self.methods.trace_block(9))))
        self.assertEqual(len(self.tracing.asked), 3)

    def test_debug_block_by_number(self) -> None:
        """
        C{debug_traceBlockByNumber} traces the canonical block at the number.
        """
        coroutine = self.methods.debug_trace_block_by_number(BlockTag.LATEST, TraceConfig())
        self.assertEqual(self.successResultOf(Deferred.fromCoroutine(coroutine)), [])
        self.assertEqual(self.tracing.asked, [("block", b"\x04" * 32)])
