"""
Tests for L{nodex.rpc.dispatch}: the JSON-RPC 2.0 envelope.
"""

import gc
import json
from collections.abc import Iterable
from typing import Any

from twisted.internet.defer import Deferred, fail, succeed
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from nodex.errors import NodexError
from nodex.rpc import decoders, encoders
from nodex.rpc.client import CURRENT_CLIENT
from nodex.rpc.dispatch import Dispatcher, EnvelopeLimits
from nodex.rpc.errors import ERROR_CODES, InvalidParamsError
from nodex.rpc.registry import Method, MethodRegistry, ModuleSettings, Param


class ExampleError(NodexError):
    """
    An error of a lower layer, mapped to a code for these tests.
    """


class ExampleMethods:
    """
    Methods that answer at once, later, with mapped and unexpected errors, and too much.
    """

    def __init__(self) -> None:
        """
        Record calls and pending Deferreds.
        """
        self.calls: list[str] = []
        self.pending: list[Deferred[int]] = []

    def rpc_methods(self) -> Iterable[Method]:
        """
        The test methods, all in module "test".
        """
        return [
            Method("test_echo", self.echo, (Param("value", decoders.quantity),), encoders.quantity),
            Method("test_later", self.later, (), encoders.quantity),
            Method("test_coroutine", self.coroutine, (), encoders.quantity),
            Method("test_awaiting", self.awaiting, (), encoders.quantity),
            Method("test_raising", self.raising, (), encoders.quantity),
            Method("test_ready", self.ready, (), encoders.quantity),
            Method("test_failed", self.failed),
            Method("test_paused", self.paused, (), encoders.quantity),
            Method("test_running", self.running, (), encoders.quantity),
            Method("test_mapped", self.mapped),
            Method("test_crash", self.crash),
            Method("test_big", self.big),
            Method("test_badresult", self.badresult, (), encoders.quantity),
            Method("off_method", self.echo),
        ]

    def echo(self, value: int) -> int:
        """
        Return C{value}.
        """
        self.calls.append(f"echo {value}")
        return value

    def later(self) -> Deferred[int]:
        """
        A Deferred that the test fires.
        """
        self.calls.append("later")
        waiting: Deferred[int] = Deferred()
        self.pending.append(waiting)
        return waiting

    def ready(self) -> Deferred[int]:
        """
        A Deferred that has fired with four already, as a cached read's does.
        """
        self.calls.append("ready")
        return succeed(4)

    def failed(self) -> Deferred[None]:
        """
        A Deferred that has failed already with an error of L{ERROR_CODES}.
        """
        return fail(ExampleError("known already"))

    def running(self) -> Deferred[int]:
        """
        The Deferred in C{self.running_now}: one whose callbacks are running
        (the test calls the method from one of them).
        """
        return self.running_now

    def paused(self) -> Deferred[int]:
        """
        A Deferred that has fired but waits, paused, for one that the test fires.
        """
        waiting: Deferred[int] = Deferred()
        self.pending.append(waiting)
        outer: Deferred[None] = succeed(None)
        return outer.addCallback(lambda _: waiting)

    async def coroutine(self) -> int:
        """
        Seven, from a coroutine.
        """
        return 7

    async def awaiting(self) -> int:
        """
        From a coroutine: four (awaited from a fired Deferred), then what
        the test fires, then the client seen after the wait, or an error.
        """
        self.calls.append(f"awaiting {CURRENT_CLIENT.get()}")
        ready = await succeed(4)
        waiting: Deferred[int] = Deferred()
        self.pending.append(waiting)
        later = await waiting
        self.calls.append(f"awaited {CURRENT_CLIENT.get()}")
        if later < 0:
            raise ExampleError("negative")
        return ready + later

    async def raising(self) -> int:
        """
        A coroutine that raises a mapped error before it waits.
        """
        await succeed(None)
        raise ExampleError("at once")

    def mapped(self) -> None:
        """
        Raise an error of L{ERROR_CODES}.
        """
        raise ExampleError("nonce too low")

    def crash(self) -> None:
        """
        Raise an unexpected error.
        """
        raise ZeroDivisionError("secret detail")

    def big(self) -> str:
        """
        A result over the size limit.
        """
        return "x" * 2000

    def badresult(self) -> int:
        """
        A result that QUANTITY cannot encode.
        """
        return -1


class DispatcherTests(SynchronousTestCase):
    """
    Tests for L{Dispatcher}.
    """

    def setUp(self) -> None:
        """
        A dispatcher over the example methods, with small limits and a fake clock.
        """
        self.clock = Clock()
        self.methods = ExampleMethods()
        registry = MethodRegistry({"test": ModuleSettings(True)})
        registry.add(self.methods)
        limits = EnvelopeLimits(max_batch=3, max_response_bytes=1500, timeout=5.0)
        self.dispatcher = Dispatcher(registry, self.clock, limits)
        ERROR_CODES[ExampleError] = -32010
        self.addCleanup(ERROR_CODES.pop, ExampleError)

    def answer(self, payload: Any) -> Any:
        """
        Dispatch a body (bytes, or a value to serialise) and parse the answer.
        """
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        raw = self.successResultOf(self.dispatcher.handle(body))
        return None if raw is None else json.loads(raw)

    def test_answer_at_once(self) -> None:
        """
        L{Dispatcher.answer} gives the body itself when it is known at once
        (a plain method, a Deferred already fired, a notification, a parse
        error), and a Deferred only for a method still waiting; L{handle}
        always gives a Deferred.
        """
        def body(method: str, **extra: Any) -> bytes:
            return json.dumps({"jsonrpc": "2.0", "method": method, "params": [], **extra}).encode()

        ready = self.dispatcher.answer(body("test_ready", id=1))
        self.assertEqual(json.loads(ready)["result"], "0x4")  # type: ignore[arg-type]
        self.assertIsNone(self.dispatcher.answer(body("test_ready")))
        self.assertIn(b"-32700", self.dispatcher.answer(b"{"))  # type: ignore[operator]
        waiting = self.dispatcher.answer(body("test_later", id=2))
        self.assertIsInstance(waiting, Deferred)
        self.methods.pending[0].callback(7)
        self.assertEqual(json.loads(self.successResultOf(waiting))["result"], "0x7")  # type: ignore[arg-type]
        self.assertIsInstance(self.dispatcher.handle(body("test_ready", id=3)), Deferred)

    def test_single(self) -> None:
        """
        A request is answered with jsonrpc, id and result, in that order.
        """
        raw = self.successResultOf(
            self.dispatcher.handle(b'{"jsonrpc":"2.0","id":1,"method":"test_echo","params":["0x21"]}')
        )
        self.assertEqual(raw, b'{"jsonrpc":"2.0","id":1,"result":"0x21"}')

    def test_ids_echoed_with_their_type(self) -> None:
        """
        String, integer, float, large and null ids come back as they were.
        """
        for request_id in ("a", 0, 2.5, 10**30, None, ""):
            answer = self.answer({"jsonrpc": "2.0", "id": request_id, "method": "test_echo", "params": ["0x1"]})
            self.assertEqual(answer["id"], request_id)
            self.assertIs(type(answer["id"]), type(request_id))

    def test_notification_runs_without_answer(self) -> None:
        """
        A request without id runs but gets no answer, even when it fails.
        """
        self.assertIsNone(self.answer({"jsonrpc": "2.0", "method": "test_echo", "params": ["0x5"]}))
        self.assertIsNone(self.answer({"jsonrpc": "2.0", "method": "test_echo", "params": ["5"]}))
        self.assertEqual(self.methods.calls, ["echo 5"])

    def test_parse_error(self) -> None:
        """
        A body that is not JSON (or uses NaN, or is not UTF-8) is -32700 with id null.
        """
        for body in (b"{", b'{"jsonrpc":"2.0","id":NaN}', b"\xff\xfe{", b""):
            answer = self.answer(body)
            self.assertEqual(answer["error"]["code"], -32700)
            self.assertIsNone(answer["id"])

    def test_encodings(self) -> None:
        """
        A body in UTF-8 with a byte-order mark, UTF-16 or UTF-32 (JSON's
        encodings that Python's parser detects) is read like its UTF-8.
        """
        text = '{"jsonrpc":"2.0","id":7,"method":"test_echo","params":["0x5"]}'
        expected = self.answer(text.encode())
        self.assertEqual(expected["result"], "0x5")
        for body in (b"\xef\xbb\xbf" + text.encode(), text.encode("utf-16"), text.encode("utf-32-le")):
            self.assertEqual(self.answer(body), expected)

    def test_deep_nesting(self) -> None:
        """
        A body nested beyond what the parser can take is -32600, not a crash.
        """
        answer = self.answer(b"[" * 100000)
        self.assertIn(answer["error"]["code"], (-32600, -32700))

    def test_invalid_requests(self) -> None:
        """
        Objects that are not valid requests are -32600; a valid id is echoed, a bad one is null.
        """
        cases = [
            ({"jsonrpc": "2.0", "id": 1, "method": 5}, 1),
            ({"jsonrpc": "1.0", "id": 2, "method": "test_echo"}, 2),
            ({"jsonrpc": None, "id": 3, "method": "test_echo"}, 3),
            ({"jsonrpc": "2.0", "id": 4, "method": "test_echo", "params": "0x1"}, 4),
            ({"jsonrpc": "2.0", "id": True, "method": "test_echo"}, None),
            ({"jsonrpc": "2.0", "id": [1], "method": "test_echo"}, None),
            ({"jsonrpc": "2.0", "method": 1}, None),
            (5, None),
            ("request", None),
        ]
        for request, expected_id in cases:
            answer = self.answer(request)
            self.assertEqual(answer["error"]["code"], -32600, request)
            self.assertEqual(answer["id"], expected_id, request)

    def test_missing_jsonrpc(self) -> None:
        """
        A request without C{"jsonrpc"} is answered, as the reference node
        answers it; the answer says C{"2.0"}.
        """
        answer = self.answer({"id": 3, "method": "test_echo", "params": ["0x21"]})
        self.assertEqual(answer, {"jsonrpc": "2.0", "id": 3, "result": "0x21"})

    def test_infinite_id_refused(self) -> None:
        """
        An C{id} that Python's parser reads as an infinite number (C{1e999},
        C{-1e999}) is -32600 with C{"id": null}, so that the answer is JSON
        (issue 26: it was echoed as C{Infinity}); the largest finite float
        is still echoed.
        """
        for body in (b'{"jsonrpc":"2.0","id":1e999,"method":"test_echo","params":["0x1"]}',
                     b'{"jsonrpc":"2.0","id":-1e999,"method":"test_echo","params":["0x1"]}'):
            raw = self.successResultOf(self.dispatcher.handle(body))
            answer = json.loads(raw, parse_constant=lambda name: self.fail(f"{name} in {raw!r}"))
            self.assertEqual(answer["error"]["code"], -32600)
            self.assertIsNone(answer["id"])
        batch = b'[{"jsonrpc":"2.0","id":1e999,"method":"test_echo","params":["0x1"]}]'
        self.assertEqual(json.loads(self.successResultOf(self.dispatcher.handle(batch)))[0]["id"], None)
        largest = self.answer(b'{"jsonrpc":"2.0","id":1.7976931348623157e308,"method":"test_echo","params":["0x1"]}')
        self.assertEqual(largest["id"], 1.7976931348623157e308)

    def test_null_params(self) -> None:
        """
        Null params count as none.
        """
        answer = self.answer({"jsonrpc": "2.0", "id": 1, "method": "test_coroutine", "params": None})
        self.assertEqual(answer["result"], "0x7")

    def test_method_errors(self) -> None:
        """
        Unknown method -32601, bad params -32602, mapped exceptions their code, anything else
        -32603 without detail, a result that cannot be encoded -32603.
        """
        cases = {
            "test_nothing": (-32601, "method not found"),
            "off_method": (-32601, "the method off_method does not exist/is not available"),
            "test_mapped": (-32010, "nonce too low"),
            "test_crash": (-32603, "internal error"),
            "test_badresult": (-32603, "internal error"),
        }
        for method, (code, message) in cases.items():
            answer = self.answer({"jsonrpc": "2.0", "id": 1, "method": method})
            self.assertEqual(answer["error"], {"code": code, "message": message}, method)
        self.assertEqual(len(self.flushLoggedErrors(ZeroDivisionError)), 1)
        self.flushLoggedErrors()
        answer = self.answer({"jsonrpc": "2.0", "id": 1, "method": "test_echo", "params": ["1"]})
        self.assertEqual(answer["error"]["code"], -32602)
        self.assertIn("invalid argument 0", answer["error"]["message"])

    def test_batch_in_order_without_notifications(self) -> None:
        """
        A batch is answered in order; notifications have no entry; an all-notification batch has
        no body.
        """
        batch = [
            {"jsonrpc": "2.0", "id": "b", "method": "test_echo", "params": ["0x2"]},
            {"jsonrpc": "2.0", "method": "test_echo", "params": ["0x3"]},
            {"jsonrpc": "2.0", "id": "a", "method": "test_echo", "params": ["0x1"]},
            7,
        ][:3]
        answer = self.answer(batch)
        self.assertEqual([item["id"] for item in answer], ["b", "a"])
        self.assertEqual([item["result"] for item in answer], ["0x2", "0x1"])
        self.assertIsNone(self.answer([{"jsonrpc": "2.0", "method": "test_echo", "params": ["0x3"]}]))

    def test_batch_with_invalid_elements(self) -> None:
        """
        Invalid elements of a batch get their own -32600 entries; the others are unaffected.
        """
        answer = self.answer([1, {"jsonrpc": "2.0", "id": 1, "method": "test_echo", "params": ["0x1"]}])
        self.assertEqual(answer[0]["error"]["code"], -32600)
        self.assertEqual(answer[1]["result"], "0x1")

    def test_batch_limits(self) -> None:
        """
        An empty batch and a batch over the limit are one -32600 error with id null.
        """
        self.assertEqual(self.answer([])["error"]["code"], -32600)
        request = {"jsonrpc": "2.0", "id": 1, "method": "test_echo", "params": ["0x1"]}
        answer = self.answer([request] * 4)
        self.assertEqual(answer["error"]["code"], -32600)
        self.assertIn("batch of 4 requests exceeds the limit of 3", answer["error"]["message"])
        self.assertIsNone(answer["id"])

    def test_batch_runs_sequentially(self) -> None:
        """
        A batch element starts only after the one before it has finished.
        """
        batch = [
            {"jsonrpc": "2.0", "id": 1, "method": "test_later"},
            {"jsonrpc": "2.0", "id": 2, "method": "test_echo", "params": ["0x9"]},
        ]
        result = self.dispatcher.handle(json.dumps(batch).encode())
        self.assertNoResult(result)
        self.assertEqual(self.methods.calls, ["later"])
        self.methods.pending[0].callback(8)
        answer = json.loads(self.successResultOf(result))
        self.assertEqual([item["result"] for item in answer], ["0x8", "0x9"])

    def test_asynchronous_and_coroutine(self) -> None:
        """
        Methods that return Deferreds or coroutines are answered when they finish.
        """
        result = self.dispatcher.handle(b'{"jsonrpc":"2.0","id":1,"method":"test_later"}')
        self.assertNoResult(result)
        self.methods.pending[0].callback(3)
        self.assertEqual(json.loads(self.successResultOf(result))["result"], "0x3")
        self.assertEqual(self.answer({"jsonrpc": "2.0", "id": 1, "method": "test_coroutine"})["result"], "0x7")

    def test_coroutine_answered_at_once(self) -> None:
        """
        A coroutine that awaits only fired Deferreds is answered at once,
        without a Deferred (L{Dispatcher.answer}); one that raises before
        waiting answers its error.
        """
        answer = self.dispatcher.answer(b'{"jsonrpc":"2.0","id":1,"method":"test_coroutine"}')
        self.assertEqual(json.loads(answer)["result"], "0x7")  # type: ignore[arg-type]
        answer = self.dispatcher.answer(b'{"jsonrpc":"2.0","id":1,"method":"test_raising"}')
        self.assertEqual(json.loads(answer)["error"], {"code": -32010, "message": "at once"})  # type: ignore[arg-type]
        self.assertEqual(self.clock.getDelayedCalls(), [])

    def test_coroutine_waiting(self) -> None:
        """
        A coroutine that waits on a Deferred is answered when it finishes,
        sees the context it started in after the wait (the client, for the
        quotas), fails with its error, and is cancelled at the time limit.
        """
        token = CURRENT_CLIENT.set("client-1")  # type: ignore[arg-type]
        try:
            result = self.dispatcher.answer(b'{"jsonrpc":"2.0","id":1,"method":"test_awaiting"}')
        finally:
            CURRENT_CLIENT.reset(token)
        self.assertIsInstance(result, Deferred)
        self.assertNoResult(result)
        self.methods.pending.pop().callback(3)
        self.assertEqual(json.loads(self.successResultOf(result))["result"], "0x7")
        self.assertEqual(self.methods.calls, ["awaiting client-1", "awaited client-1"])
        result = self.dispatcher.handle(b'{"jsonrpc":"2.0","id":2,"method":"test_awaiting"}')
        self.methods.pending.pop().callback(-1)
        self.assertEqual(json.loads(self.successResultOf(result))["error"], {"code": -32010, "message": "negative"})
        result = self.dispatcher.handle(b'{"jsonrpc":"2.0","id":3,"method":"test_awaiting"}')
        waiting = self.methods.pending.pop()
        self.clock.advance(5.1)
        self.assertEqual(json.loads(self.successResultOf(result))["error"]["code"], -32011)
        self.assertTrue(waiting.called)
        self.assertEqual(len(self.methods.calls), 5)

    def test_fired_deferred_answered_at_once(self) -> None:
        """
        A Deferred that has fired already is answered at once, alone or in a
        batch, and leaves no timer behind.
        """
        self.assertEqual(self.answer({"jsonrpc": "2.0", "id": 1, "method": "test_ready"})["result"], "0x4")
        batch = [{"jsonrpc": "2.0", "id": index, "method": "test_ready"} for index in range(3)]
        self.assertEqual([item["result"] for item in self.answer(batch)], ["0x4"] * 3)
        self.assertEqual(self.clock.getDelayedCalls(), [])

    def test_failed_deferred_answered_at_once(self) -> None:
        """
        A Deferred that has failed already answers its error's code, and its
        Failure is not left unhandled.
        """
        answer = self.answer({"jsonrpc": "2.0", "id": 1, "method": "test_failed"})
        self.assertEqual(answer["error"], {"code": -32010, "message": "known already"})
        gc.collect()
        self.assertEqual(self.flushLoggedErrors(), [])

    def test_paused_deferred_waited_for(self) -> None:
        """
        A Deferred that has fired but is paused, waiting for another, is
        answered when that one fires.
        """
        result = self.dispatcher.handle(b'{"jsonrpc":"2.0","id":1,"method":"test_paused"}')
        self.assertNoResult(result)
        self.methods.pending[0].callback(6)
        self.assertEqual(json.loads(self.successResultOf(result))["result"], "0x6")

    def test_result_of_a_running_deferred(self) -> None:
        """
        A Deferred whose callbacks are running (the method is called from
        one of them) has no final result yet: it is answered with the result
        its callbacks end with, not the one it holds meanwhile.
        """
        running: Deferred[int] = Deferred()
        answers: list[Any] = []

        def during(value: int) -> int:
            answers.append(self.dispatcher.handle(b'{"jsonrpc":"2.0","id":1,"method":"test_running"}'))
            return value + 1

        self.methods.running_now = running
        running.addCallback(during)
        running.callback(1)
        self.assertEqual(json.loads(self.successResultOf(answers[0]))["result"], "0x2")

    def test_batch_waits_midway(self) -> None:
        """
        A batch whose middle element has to wait answers the ones before it,
        starts the ones after it only once it has finished, and keeps the order.
        """
        batch = [
            {"jsonrpc": "2.0", "id": 1, "method": "test_ready"},
            {"jsonrpc": "2.0", "id": 2, "method": "test_later"},
            {"jsonrpc": "2.0", "id": 3, "method": "test_echo", "params": ["0x9"]},
        ]
        result = self.dispatcher.handle(json.dumps(batch).encode())
        self.assertNoResult(result)
        self.assertEqual(self.methods.calls, ["ready", "later"])
        self.methods.pending[0].callback(8)
        answer = json.loads(self.successResultOf(result))
        self.assertEqual([(item["id"], item["result"]) for item in answer], [(1, "0x4"), (2, "0x8"), (3, "0x9")])

    def test_asynchronous_failure(self) -> None:
        """
        A Deferred that fails with a mapped error answers its code.
        """
        result = self.dispatcher.handle(b'{"jsonrpc":"2.0","id":1,"method":"test_later"}')
        self.methods.pending[0].errback(InvalidParamsError("bad"))
        self.assertEqual(json.loads(self.successResultOf(result))["error"], {"code": -32602, "message": "bad"})

    def test_timeout(self) -> None:
        """
        A method still running at the time limit is answered -32011, and cancelled.
        """
        result = self.dispatcher.handle(b'{"jsonrpc":"2.0","id":9,"method":"test_later"}')
        self.clock.advance(4.9)
        self.assertNoResult(result)
        self.clock.advance(0.2)
        answer = json.loads(self.successResultOf(result))
        self.assertEqual(answer["id"], 9)
        self.assertEqual(answer["error"], {"code": -32011, "message": "request timed out after 5 seconds"})

    def test_batch_deadline(self) -> None:
        """
        The time limit covers a whole batch: elements reached after it are answered -32011
        without running.
        """
        batch = [
            {"jsonrpc": "2.0", "id": 1, "method": "test_later"},
            {"jsonrpc": "2.0", "id": 2, "method": "test_echo", "params": ["0x1"]},
            {"jsonrpc": "2.0", "method": "test_echo", "params": ["0x1"]},
        ]
        result = self.dispatcher.handle(json.dumps(batch).encode())
        self.clock.advance(6)
        answer = json.loads(self.successResultOf(result))
        self.assertEqual([item["error"]["code"] for item in answer], [-32011, -32011])
        self.assertEqual(self.methods.calls, ["later"])

    def test_response_size_limit(self) -> None:
        """
        An answer over the size limit is replaced by -32011 with its id, in a batch too.
        """
        answer = self.answer({"jsonrpc": "2.0", "id": 5, "method": "test_big"})
        self.assertEqual(answer["id"], 5)
        self.assertEqual(answer["error"]["code"], -32011)
        self.assertIn("exceeds the limit of 1500 bytes", answer["error"]["message"])
        small = {"jsonrpc": "2.0", "id": 1, "method": "test_echo", "params": ["0x1"]}
        big = {"jsonrpc": "2.0", "id": 2, "method": "test_big"}
        answer = self.answer([small, big])
        self.assertEqual(answer[0]["result"], "0x1")
        self.assertEqual(answer[1]["error"]["code"], -32011)

    def test_debug_log_line(self) -> None:
        """
        With debug on, each call logs its request id, method and duration.
        """
        from twisted.logger import globalLogPublisher

        events: list[dict[str, Any]] = []
        globalLogPublisher.addObserver(events.append)
        self.addCleanup(globalLogPublisher.removeObserver, events.append)
        registry = MethodRegistry({"test": ModuleSettings(True)})
        registry.add(ExampleMethods())
        dispatcher = Dispatcher(registry, self.clock, debug=True)
        self.successResultOf(dispatcher.handle(b'{"jsonrpc":"2.0","id":1,"method":"test_echo","params":["0x1"]}'))
        lines = [event for event in events if event.get("method") == "test_echo"]
        self.assertEqual(len(lines), 1)
        self.assertEqual(lines[0]["call_id"], 1)
        self.assertEqual(lines[0]["duration"], 0.0)
        self.assertEqual(lines[0]["log_level"].name, "debug")


class EncodeAnswerTests(SynchronousTestCase):
    """
    Tests for the dispatcher's writing of answers: the short way for the
    common results writes what the JSON encoder writes.
    """

    def test_same_as_encoder(self) -> None:
        """
        Every result and id, short way or not, gives the compact JSON
        encoder's bytes.
        """
        from nodex.rpc.dispatch import _encode_answer

        encode = json.JSONEncoder(separators=(",", ":")).encode
        results: list[Any] = [
            "0x0", "0x", "0xdeadBEEF", "0x" + "ab" * 5000, "", "abc", "a b", 'a"b', "a\\b", "\u00e9", "\u0661",
            "a\x7f", "a\x00", "0x1\n", True, False, None, 0, 1, 1.5, [], {}, ["0x1"], {"a": "0x1"},
        ]
        ids: list[Any] = [0, 1, -1, 2**70, "1", "é", None, 1.0]
        for request_id in ids:
            for result in results:
                response = {"jsonrpc": "2.0", "id": request_id, "result": result}
                self.assertEqual(_encode_answer(response), encode(response).encode(), (request_id, result))
            error = {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32000, "message": "x"}}
            self.assertEqual(_encode_answer(error), encode(error).encode())


class ParseTests(SynchronousTestCase):
    """
    Tests for the dispatcher's reading of bodies.
    """

    def test_same_as_loads(self) -> None:
        """
        Bodies opening an object, short or in JSON's other encodings, read as
        C{json.loads} reads them, or fail as it fails.
        """
        from nodex.rpc.dispatch import _parse

        text = '{"a":"\\u00e9\u00e9"}'
        bodies = [
            b"{", b"{}", b"{\x00", b"{\x00}\x00", b'{"a":1}', text.encode(), text.encode("utf-16-le"),
            text.encode("utf-32-le"), b'{"a":"\xff"}', b'{"a":"\xed\xa0\x80"}', b"[1]",
        ]
        for body in bodies:
            try:
                expected: Any = json.loads(body)
            except ValueError as exc:
                expected = type(exc)
            try:
                got: Any = _parse(body)
            except ValueError as exc:
                got = type(exc)
            self.assertEqual(got, expected, body)


class _Countdown:
    """
    A coroutine that is not Python's native kind: it waits on nothing twice,
    then returns 5.
    """

    def __init__(self) -> None:
        self.left = 2

    def send(self, value: Any) -> Any:
        if self.left:
            self.left -= 1
            return None
        raise StopIteration(5)

    def throw(self, *args: Any) -> Any:
        raise args[0]

    def close(self) -> None:
        pass

    def __await__(self) -> Any:
        return self


class OtherCoroutineTests(SynchronousTestCase):
    """
    A method may return a coroutine object of another kind than
    C{async def}'s (the C{Coroutine} ABC): it is run like one.
    """

    def test_answered(self) -> None:
        from collections.abc import Coroutine

        Coroutine.register(_Countdown)
        registry = MethodRegistry({"test": ModuleSettings(enabled=True)})
        registry.register(Method("test_countdown", _Countdown, (), encoders.quantity))
        dispatcher = Dispatcher(registry, Clock())
        answer = dispatcher.answer(b'{"jsonrpc":"2.0","id":1,"method":"test_countdown"}')
        self.assertEqual(json.loads(answer), {"jsonrpc": "2.0", "id": 1, "result": "0x5"})
