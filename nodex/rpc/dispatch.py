"""
The JSON-RPC 2.0 envelope: parse a body, check each request object, route
it through the L{MethodRegistry}, and write the answers.

txjsonrpc-ng's server resource is not used for this: it answers only single
requests (a JSON array, a batch, is rejected), treats C{"id": null} as a
notification, and renders errors with an empty C{data} member, all of which
JSON-RPC 2.0 forbids.  Its error codes and error type are used
(L{nodex.rpc.errors}); the envelope is written here.
"""

import json
from collections.abc import Callable, Coroutine
from contextvars import copy_context
from dataclasses import dataclass
from itertools import count
from math import isfinite
from types import CoroutineType
from typing import Any

from twisted.internet.defer import Deferred, succeed
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger
from twisted.python.failure import Failure

from nodex.api.chain import IFollowUps
from nodex.rpc.errors import (
    InvalidRequestError,
    LimitExceededError,
    ParseError,
    RPCError,
    rpc_error_for,
)
from nodex.rpc.nesting import too_deep
from nodex.rpc.registry import Method, MethodRegistry

log = Logger()

Response = dict[str, Any]
"""One JSON-RPC response object."""

_ID_TYPES = (str, int, float)


def _bad_id(request_id: Any) -> bool:
    """
    Whether a request's C{id} is not one JSON-RPC allows: a string, a
    number or null.  A number Python reads as infinite (C{1e999}) is
    refused too: it cannot be echoed, since JSON has no infinity.
    """
    if request_id is None:
        return False
    kind = type(request_id)
    return kind not in _ID_TYPES or (kind is float and not isfinite(request_id))


_NO_PARAMS: list[Any] = []

_PLAIN_RESULTS = frozenset({str, int, bool, bytes, dict, list, type(None), Deferred})
"""What methods return besides coroutines: none is a coroutine."""

_NOT_DEFERRED = frozenset({str, int, bool, bytes, dict, list, type(None)})
"""Plain values, which L{_is_deferred} knows without C{isinstance}."""


def _is_deferred(value: Any) -> bool:
    """
    C{isinstance(value, Deferred)}, without the check of an abstract class
    for plain values: C{Deferred} is an C{Awaitable}, so that C{isinstance}
    of anything else runs C{ABCMeta.__instancecheck__} and its subclass hook
    (~0.7 µs against ~0.05 µs for a C{type} look-up, measured with timeit;
    several a request).
    """
    kind = type(value)
    return kind is Deferred or (kind not in _NOT_DEFERRED and isinstance(value, Deferred))


@dataclass(frozen=True)
class EnvelopeLimits:
    """
    The server-level limits of reference §1.3 (DESIGN §6).

    @ivar max_batch: the most requests in one batch.
    @ivar max_response_bytes: the largest answer body; a response that
        would pass it is replaced by a -32011 error.
    @ivar timeout: seconds one HTTP request (single or whole batch) may run.
    """

    max_batch: int = 50
    max_response_bytes: int = 10 * 1024 * 1024
    timeout: float = 5.0


def _reject_constant(name: str) -> Any:
    """
    Refuse C{NaN} and C{Infinity}, which Python's parser accepts but JSON
    does not have.
    """
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def _parse(body: bytes | str) -> Any:
    """
    The JSON value of a request body: what C{json.loads(body,
    parse_constant=_reject_constant)} gives (UTF-8, UTF-16 or UTF-32, with
    or without a byte-order mark), through one decoder made once, since
    C{json.loads} builds a new decoder on every call given an option (about
    1 % of an automined transfer's time).

    @raise ValueError: the body is not JSON or not text.
    """
    if isinstance(body, str):
        return json.loads(body, parse_constant=_reject_constant)
    if body[:1] == b"{" and body[1:2] != b"\x00":
        # What detect_encoding answers for a body opening an object (no
        # byte-order mark starts with "{", and only UTF-16's second byte
        # is NUL), without its five comparisons.
        return _DECODER.decode(body.decode("utf-8", "surrogatepass"))
    return _DECODER.decode(body.decode(json.detect_encoding(body), "surrogatepass"))


_encode = json.JSONEncoder(separators=(",", ":")).encode
"""Compact JSON; one encoder for all answers (C{json.dumps} builds one per call
when given separators)."""


def _dumps(response: Response) -> bytes:
    """
    Serialise one response compactly.
    """
    return _encode(response).encode()


_CONSTANT_RESULTS = {True: "true", False: "false", None: "null"}


def _encode_answer(response: Response) -> bytes:
    """
    Serialise one response; a result that JSON cannot hold answers the
    error it raises.

    Most answers are a success to an integer C{id} whose result is a
    QUANTITY or DATA string (letters and digits only, which JSON writes as
    they are), a boolean or null: those are written by one formatting
    operation, the bytes C{_dumps} writes, instead of the encoder's walk
    (the response objects of L{Dispatcher._success} have their three
    members in this order).
    """
    if type(response.get("id")) is int and "result" in response:
        result = response["result"]
        kind = type(result)
        if kind is str:
            if result.isalnum() and result.isascii():
                return ('{"jsonrpc":"2.0","id":%d,"result":"%s"}' % (response["id"], result)).encode()
        elif kind is bool or result is None:
            return ('{"jsonrpc":"2.0","id":%d,"result":%s}' % (response["id"], _CONSTANT_RESULTS[result])).encode()
    try:
        return _dumps(response)
    except (TypeError, ValueError) as exc:
        return _dumps(_error(rpc_error_for(exc), response["id"]))


def _too_large(size: int, limit: int) -> LimitExceededError:
    """
    The error that replaces an answer over the size limit.
    """
    return LimitExceededError(f"response of {size} bytes exceeds the limit of {limit} bytes")


def _ignore(failure: Failure) -> None:
    """
    End a Deferred's chain on a failure that the dispatcher answers.
    """


def _result_now(result: Deferred[Any]) -> list[Any]:
    """
    The result of a Deferred that has fired already (a cached read, a
    coroutine that never waited, an automined transaction's block made at
    once), taken without a timer or callbacks of the dispatcher's own.

    It reads the Deferred's C{result}, as Twisted's own C{await} of a fired
    Deferred does, when the Deferred has fired, waits for no other
    (C{paused}) and is not running its callbacks above this call
    (C{_runningCallbacks}, Twisted's attribute, read and never written):
    its callbacks have then all run, and its result is final.  (It used to
    add a callback that recorded the result: one more run of the
    Deferred's callback loop for every such request.)
    tests.rpc.test_dispatch's C{test_result_of_a_running_deferred} breaks if
    the attribute stops meaning that.  (Not C{Deferred.callbacks}: Twisted
    25.5 deprecated it, and each read then issues a warning.)

    @return: a list holding the result or L{Failure} when the Deferred has
        fired (a Failure then ends there: the caller answers it); an empty
        list when the result is still to come (the Deferred not fired, or
        paused in a chain of Deferreds), which the Deferred then still
        carries to later callbacks.
    """
    if not result.called or result.paused or result._runningCallbacks:
        return []
    value = result.result
    if isinstance(value, Failure):
        # The caller answers the error: end the chain here.
        result.addErrback(_ignore)
    return [value]


def _run_coroutine(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """
    Run a method's coroutine as far as it goes without waiting: its result
    when it finishes at once (every Deferred it awaited had fired: cached
    reads, work done on this thread), else a Deferred of its result, with
    Twisted running the rest of it.

    What C{ensureDeferred} does, without its Deferred and its callbacks
    when the coroutine never waits (about a tenth of a request's time): the
    coroutine runs in a copy of the current context, as Twisted runs it, and
    a value it yields that is not a Deferred is sent back to it, as
    Twisted's loop sends it; from its first wait on a Deferred not yet
    fired, C{Deferred.fromCoroutine} (in that context) drives it, resending
    it nothing but a wake-up: an awaited Deferred reads its own result.

    @raise Exception: what the coroutine raised before it first waited.
    """
    context = copy_context()
    try:
        waiting = context.run(coroutine.send, None)
        while not isinstance(waiting, Deferred):
            waiting = context.run(coroutine.send, waiting)
    except StopIteration as stop:
        return stop.value
    return context.run(Deferred.fromCoroutine, coroutine)


def _error(error: RPCError, request_id: Any = None) -> Response:
    """
    An error response object.
    """
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_json()}


class _BatchBody:
    """
    The answers of a batch, serialised as they come, within the
    response-size limit.
    """

    def __init__(self, limit: int) -> None:
        """
        @param limit: the largest body, in bytes.
        """
        self._limit = limit
        self._parts: list[bytes] = []
        self._size = 2

    def add(self, answer: Response | None) -> None:
        """
        Append one answer (nothing for a notification); past the size
        limit, its -32011 error instead.
        """
        if answer is None:
            return
        encoded = _encode_answer(answer)
        self._size += len(encoded) + 1
        if self._size > self._limit:
            encoded = _dumps(_error(_too_large(self._size, self._limit), answer["id"]))
        self._parts.append(encoded)

    def finish(self) -> bytes | None:
        """
        The batch's body, or L{None} when every element was a notification.
        """
        if not self._parts:
            return None
        return b"[" + b",".join(self._parts) + b"]"


CallObserver = Callable[[str, "int | None", float], None]
"""Told of each call: the method name, the error code of the answer (L{None} on success), the seconds it took."""


class Dispatcher:
    """
    Answers JSON-RPC 2.0 bodies: single requests, notifications and batches.
    """

    def __init__(
        self,
        registry: MethodRegistry,
        clock: IReactorTime,
        limits: EnvelopeLimits = EnvelopeLimits(),
        debug: bool = False,
        call_observer: CallObserver | None = None,
        follow_ups: IFollowUps | None = None,
    ) -> None:
        """
        @param registry: the methods clients may call.
        @param clock: measures durations and enforces the time limit.
        @param limits: the envelope's limits.
        @param debug: log one debug line per call (request id, method,
            duration); off, the hot path pays nothing for it.
        @param call_observer: told of every call that had a method name:
            the name, the answer's error code (or L{None}) and the duration
            (the metrics); without one, the hot path pays nothing for it.
        @param follow_ups: the services' work put off until an answer is
            sent (L{IFollowUps}), which the HTTP edge holds while it answers;
            this runs it before each element of a batch, so that an element
            sees what the elements before it caused.
        """
        self._registry = registry
        self._clock = clock
        self._limits = limits
        self._debug = debug
        self._observer = call_observer
        self._timed = debug or call_observer is not None
        self._request_ids = count(1)
        self.follow_ups = follow_ups

    @property
    def registry(self) -> MethodRegistry:
        """
        The methods clients may call.
        """
        return self._registry

    def handle(self, body: bytes) -> Deferred[bytes | None]:
        """
        Answer one HTTP body.

        @return: a Deferred firing with the response body, or with L{None}
            when nothing is to be written (a notification, or a batch of
            notifications only).  It never fails: every problem is a
            JSON-RPC error inside the body.
        """
        answer = self.answer(body)
        return answer if isinstance(answer, Deferred) else succeed(answer)

    def answer(self, body: bytes) -> bytes | None | Deferred[bytes | None]:
        """
        Like L{handle}, but the body (or L{None}) itself when it is known at
        once, as it is for most requests: the HTTP edge then writes it without
        a Deferred.
        """
        if too_deep(body):
            return _dumps(_error(InvalidRequestError("the request is nested too deeply")))
        try:
            payload = _parse(body)
        except RecursionError:
            return _dumps(_error(InvalidRequestError("the request is nested too deeply")))
        except ValueError as exc:
            return _dumps(_error(ParseError(f"parse error: {_first_line(exc)}")))
        if isinstance(payload, list):
            return self._batch(payload)
        deadline = self._clock.seconds() + self._limits.timeout
        answer = self._start(payload, deadline)
        if answer is None or type(answer) is dict:
            return self._serialise_single(answer)
        return answer.addCallback(self._serialise_single)

    def _serialise_single(self, response: Response | None) -> bytes | None:
        """
        The body of a single answer, within the response-size limit.
        """
        if response is None:
            return None
        encoded = _encode_answer(response)
        limit = self._limits.max_response_bytes
        if len(encoded) > limit:
            return _dumps(_error(_too_large(len(encoded), limit), response["id"]))
        return encoded

    def _batch(self, batch: list[Any]) -> bytes | None | Deferred[bytes | None]:
        """
        Answer a batch: its requests run one after the other, in order (so
        that a transaction sent early in a batch is visible to later
        requests), and the answers come in the same order.

        Elements answered at once are answered in this loop; from the first
        that has to wait, the rest of the batch runs in L{_batch_after}.

        @return: the body, L{None} for notifications only, or a Deferred
            firing with either.
        """
        limits = self._limits
        if not batch:
            return _dumps(_error(InvalidRequestError("empty batch")))
        if len(batch) > limits.max_batch:
            message = f"batch of {len(batch)} requests exceeds the limit of {limits.max_batch}"
            return _dumps(_error(InvalidRequestError(message)))
        deadline = self._clock.seconds() + limits.timeout
        body = _BatchBody(limits.max_response_bytes)
        for index, request in enumerate(batch):
            answer = self._element(request, deadline)
            if answer is not None and type(answer) is not dict:
                return Deferred.fromCoroutine(self._batch_after(answer, batch[index + 1 :], body, deadline))
            body.add(answer)
        return body.finish()

    async def _batch_after(
        self, pending: Deferred[Response | None], rest: list[Any], body: _BatchBody, deadline: float
    ) -> bytes | None:
        """
        Wait for the batch element C{pending}, then answer the C{rest} of the
        batch in order, waiting for each that has to.
        """
        body.add(await pending)
        for request in rest:
            answer = self._element(request, deadline)
            if answer is not None and type(answer) is not dict:
                answer = await answer
            body.add(answer)
        return body.finish()

    def _element(self, request: Any, deadline: float) -> Response | None | Deferred[Response | None]:
        """
        Start one batch element, or answer it -32011 if the batch's deadline
        has passed; first, run what the elements before it put off until the
        answer (L{IFollowUps}): the batch's answer is not sent yet.
        """
        if self.follow_ups is not None:
            self.follow_ups.run_now()
        if self._clock.seconds() >= deadline:
            return self._expired(request)
        return self._start(request, deadline)

    def _expired(self, request: Any) -> Response | None:
        """
        The answer to a batch element reached after the batch's deadline: it
        is not run.
        """
        if type(request) is not dict or "id" not in request:
            return None
        request_id = request["id"]
        if _bad_id(request_id):
            request_id = None
        message = f"batch ran out of its time limit of {self._limits.timeout:g} seconds"
        return _error(LimitExceededError(message), request_id)

    def _start(self, request: Any, deadline: float) -> Response | None | Deferred[Response | None]:
        """
        Check one request object and start its method.

        @return: the response object, L{None} for a notification, or a
            Deferred firing with either when the method is asynchronous.
        """
        if type(request) is not dict:
            return _error(InvalidRequestError("a request must be a JSON object"))
        has_id = "id" in request
        request_id = request.get("id")
        if request_id is not None and type(request_id) is not int and _bad_id(request_id):
            return _error(InvalidRequestError('"id" must be a string, a finite number or null'))
        name = request.get("method")
        params = request.get("params", _NO_PARAMS)
        # A request without "jsonrpc" is answered, as the reference node
        # answers it (old clients and hand-written scripts leave it out);
        # one that names another version is refused.
        if request.get("jsonrpc", "2.0") != "2.0":
            problem = '"jsonrpc" must be exactly "2.0"'
        elif type(name) is not str:
            problem = '"method" must be a string'
        elif params is None:
            params, problem = _NO_PARAMS, None
        elif type(params) is not list and type(params) is not dict:
            problem = '"params" must be an array or an object'
        else:
            problem = None
        if problem is not None:
            return _error(InvalidRequestError(problem), request_id)
        call_id = next(self._request_ids)
        started = self._clock.seconds() if self._timed else 0.0
        try:
            method = self._registry.lookup(name)
            result = method.function(*method.decode_params(params))
            kind = type(result)
            # An async method's coroutine is the native type; the ABC's
            # check (~10 times the cost) only for other kinds of object.
            if kind is CoroutineType or (kind not in _PLAIN_RESULTS and isinstance(result, Coroutine)):
                result = _run_coroutine(result)
        except Exception as exc:
            response = _error(rpc_error_for(exc), request_id)
            return self._finish(call_id, name, started, response, has_id)
        if _is_deferred(result):
            outcome = _result_now(result)
            if not outcome:
                return self._await(result, method, request_id, has_id, call_id, started, deadline)
            result = outcome[0]
            if isinstance(result, Failure):
                response = _error(rpc_error_for(result.value), request_id)
                return self._finish(call_id, name, started, response, has_id)
        return self._finish(call_id, name, started, self._success(method, result, request_id), has_id)

    def _success(self, method: Method, result: Any, request_id: Any) -> Response:
        """
        The response object for a method's result, encoded on the way.
        """
        try:
            return {"jsonrpc": "2.0", "id": request_id, "result": method.result(result)}
        except Exception as exc:
            return _error(rpc_error_for(exc), request_id)

    def _await(
        self,
        result: Deferred[Any],
        method: Method,
        request_id: Any,
        has_id: bool,
        call_id: int,
        started: float,
        deadline: float,
    ) -> Deferred[Response | None]:
        """
        Wait for an asynchronous method, at most until the request's
        deadline (unless the method is unbounded), then build its response.
        """
        remaining = deadline - self._clock.seconds()
        timer = None if method.unbounded else self._clock.callLater(max(remaining, 0.0), result.cancel)

        def answer(value: Any) -> Response | None:
            # One callback for the outcome, the timer and the response: a
            # transaction in auto mode comes through here on every request.
            if timer is None or timer.active():
                if timer is not None:
                    timer.cancel()
                if isinstance(value, Failure):
                    response = _error(rpc_error_for(value.value), request_id)
                else:
                    response = self._success(method, value, request_id)
            else:
                message = f"request timed out after {self._limits.timeout:g} seconds"
                response = _error(LimitExceededError(message), request_id)
            return self._finish(call_id, method.name, started, response, has_id)

        return result.addBoth(answer)

    def _finish(
        self, call_id: int, name: str, started: float, response: Response, has_id: bool
    ) -> Response | None:
        """
        Log the call (at debug level), tell the call observer, and drop the
        answer to a notification.
        """
        if self._observer is not None:
            error = response.get("error")
            self._observer(name, None if error is None else error["code"], self._clock.seconds() - started)
        if self._debug:
            outcome = "error " + str(response["error"]["code"]) if "error" in response else "ok"
            log.debug(
                "RPC call {call_id}: {method} {outcome} in {duration:.6f} s",
                call_id=call_id,
                method=name,
                outcome=outcome,
                duration=self._clock.seconds() - started,
            )
        return response if has_id else None


def _first_line(exc: BaseException) -> str:
    """
    The first line of an exception's message, for a parse error.
    """
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


__all__ = ["CallObserver", "Dispatcher", "EnvelopeLimits", "Response"]
