"""
Prometheus metrics and a health answer (L6): C{--metrics ENDPOINT} serves
C{GET /metrics} in Prometheus' text format (with C{prometheus_client}, the
maintained library) and C{GET /health} on a port of its own, loopback only
unless the configuration allows otherwise (docs/operating.md).

What is measured: the head (number, age), peers, pool sizes, blocks that
became canonical and blocks mined, reorganisations, RPC calls and errors by
method with latency histograms, the size of the chain database, and the
reactor's lag (how late a timer fires: what every answer waits on top of its
own work).
"""

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily
from twisted.application.service import MultiService
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IReactorTime
from twisted.internet.task import LoopingCall
from twisted.logger import Logger
from twisted.web.iweb import IRequest
from twisted.web.resource import Resource
from twisted.web.server import NOT_DONE_YET, Site

from nodex.api.chain import ChainEvent, IChainService
from nodex.api.pool import ITransactionPool

LAG_INTERVAL = 1.0
"""Seconds between two probes of the reactor's lag."""

SIZE_INTERVAL = 30.0
"""Seconds between two measures of the database's size (a directory walk, off the reactor thread)."""

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""RPC latency buckets, in seconds: a cache hit answers in well under a millisecond, a long call in seconds."""

OTHER_METHOD = "other"
"""The label of calls to names that are not methods, so that clients cannot grow the label set."""


@dataclass(frozen=True)
class HealthLimits:
    """
    When C{/health} answers 503.

    @ivar max_head_age: seconds after which a head is stale (0: never).
    @ivar max_blocks_behind: how far behind the best known block a syncing
        node may be and still be healthy.
    """

    max_head_age: float
    max_blocks_behind: int


SyncStatus = Callable[[], "tuple[int, int] | None"]
"""The sync progress: C{(current, highest)} block while syncing, else L{None}."""


def directory_size(path: Path) -> int:
    """
    The bytes of the files under C{path} (0 if it does not exist).
    """
    total = 0
    for folder, _dirs, names in os.walk(path):
        for name in names:
            try:
                total += os.stat(os.path.join(folder, name), follow_symlinks=False).st_size
            except OSError:
                continue  # a file that a compaction removed meanwhile
    return total


class CallableCounter:
    """
    A counter whose value another object keeps (a collector of one sample,
    read when scraped).
    """

    def __init__(self, name: str, documentation: str, value: Callable[[], int]) -> None:
        """
        @param name: the family name (exposed with C{_total}).
        @param value: returns the count.
        """
        self._name = name
        self._documentation = documentation
        self._value = value

    def collect(self) -> Iterable[CounterMetricFamily]:
        """
        The one sample.
        """
        yield CounterMetricFamily(self._name, self._documentation, value=self._value())

    def describe(self) -> Iterable[CounterMetricFamily]:
        """
        The family, without reading the value.
        """
        yield CounterMetricFamily(self._name, self._documentation)


class NodeMetrics:
    """
    The node's metrics in a registry of their own.

    The values that other objects hold (head, peers, pool, blocks mined) are
    copied into the registry by L{refresh}, on the reactor thread, before
    each exposition; the exposition itself (tens of milliseconds of string
    formatting with many labelled histograms) may then run in a thread,
    while the reactor keeps counting (the client library's values are locked).
    """

    def __init__(
        self,
        chain: IChainService,
        pool: ITransactionPool,
        peer_count: Callable[[], int],
        blocks_mined: Callable[[], int],
        clock: IReactorTime,
        method_names: Iterable[str] = (),
    ) -> None:
        """
        @param chain: the head.
        @param pool: the pending and queued transactions.
        @param peer_count: how many peers are connected.
        @param blocks_mined: how many blocks this node has mined.
        @param method_names: the RPC methods that get a label of their own.
        @param clock: the time, for the head's age.
        """
        self.registry = CollectorRegistry(auto_describe=True)
        self._chain = chain
        self._pool = pool
        self._peer_count = peer_count
        self._blocks_mined = blocks_mined
        self._mined_snapshot = 0
        self._clock = clock
        self._methods = frozenset(method_names)
        self._by_method: dict[str, tuple[Any, Any]] = {}
        registry = self.registry
        self.head_number = Gauge("nodex_head_block_number", "The number of the head block.", registry=registry)
        self.head_age_seconds = Gauge(
            "nodex_head_age_seconds", "Seconds since the head block's timestamp.", registry=registry
        )
        self.peers = Gauge("nodex_peers", "Connected peers.", registry=registry)
        sizes = Gauge("nodex_pool_transactions", "Transactions in the pool.", ["state"], registry=registry)
        self._pending, self._queued = sizes.labels("pending"), sizes.labels("queued")
        registry.register(CallableCounter("nodex_blocks_mined", "Blocks this node mined.", lambda: self._mined_snapshot))
        self.blocks_adopted = Counter(
            "nodex_blocks_adopted", "Blocks that became canonical, from any source (mined included).", registry=registry
        )
        self.blocks_abandoned = Counter(
            "nodex_blocks_abandoned", "Blocks that left the canonical chain in a reorganisation.", registry=registry
        )
        self.reorganisations = Counter("nodex_reorganisations", "Reorganisations of the canonical chain.", registry=registry)
        self.rpc_requests = Counter("nodex_rpc_requests", "JSON-RPC calls, by method.", ["method"], registry=registry)
        self.rpc_errors = Counter(
            "nodex_rpc_errors", "JSON-RPC calls answered with an error, by method and code.", ["method", "code"],
            registry=registry,
        )
        self.rpc_latency = Histogram(
            "nodex_rpc_latency_seconds", "Seconds from a call's start to its answer, by method.", ["method"],
            buckets=LATENCY_BUCKETS, registry=registry,
        )
        self.database_size = Gauge("nodex_database_bytes", "Bytes of the chain database on disk.", registry=registry)
        self.reactor_lag = Gauge(
            "nodex_reactor_lag_seconds", "How late the last lag probe's timer fired.", registry=registry
        )
        self.reactor_lag_histogram = Histogram(
            "nodex_reactor_lag_probe_seconds", "How late the lag probe's timers fire.",
            buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0), registry=registry,
        )

    def set_method_names(self, names: Iterable[str]) -> None:
        """
        The RPC methods whose calls get a label of their own (the others
        count under L{OTHER_METHOD}).
        """
        self._methods = frozenset(names)
        self._by_method.clear()

    def refresh(self) -> None:
        """
        Copy the values other objects hold into the registry (on the
        reactor thread, where they change).
        """
        self.head_number.set(self._chain.head.header.number)
        self.head_age_seconds.set(self.head_age())
        self.peers.set(self._peer_count())
        self._pending.set(len(self._pool.pending()))
        self._queued.set(len(self._pool.queued()))
        self._mined_snapshot = self._blocks_mined()

    def head_age(self) -> float:
        """
        Seconds since the head's timestamp (negative never: a head from the
        future is 0 seconds old).
        """
        return max(0.0, self._clock.seconds() - self._chain.head.header.timestamp)

    def observe_call(self, method: str, error_code: int | None, seconds: float) -> None:
        """
        Count one RPC call (the dispatcher's call observer).

        @param method: the method name the client sent.
        @param error_code: the JSON-RPC error code of the answer, or L{None}.
        @param seconds: how long the call took.
        """
        children = self._by_method.get(method)
        if children is None:
            children = self._children(method)
        requests, latency = children
        requests.inc()
        latency.observe(seconds)
        if error_code is not None:
            label = method if method in self._methods else OTHER_METHOD
            self.rpc_errors.labels(label, str(error_code)).inc()

    def _children(self, method: str) -> tuple[Any, Any]:
        """
        The request counter and latency histogram of a method's label,
        kept for the methods (a client's junk names are not kept: they all
        share L{OTHER_METHOD}'s).
        """
        label = method if method in self._methods else OTHER_METHOD
        children = (self.rpc_requests.labels(label), self.rpc_latency.labels(label))
        if label != OTHER_METHOD:
            self._by_method[method] = children
        return children

    def chain_changed(self, event: ChainEvent) -> None:
        """
        Count the blocks a change of the canonical chain adopted and abandoned
        (the chain service's observer).
        """
        self.blocks_adopted.inc(len(event.adopted))
        if event.abandoned:
            self.blocks_abandoned.inc(len(event.abandoned))
            self.reorganisations.inc()

    def exposition(self) -> bytes:
        """
        The metrics in Prometheus' text format (L{refresh}, then the
        formatting, all on the calling thread).
        """
        self.refresh()
        return generate_latest(self.registry)


def health(metrics: NodeMetrics, chain: IChainService, peer_count: Callable[[], int], sync_status: SyncStatus,
           limits: HealthLimits) -> tuple[int, dict[str, Any]]:
    """
    The node's health: 200, or 503 with the reasons.

    @return: the HTTP status and the JSON object: C{head}, C{headHash},
        C{headAgeSeconds}, C{peers}, C{syncing} (with C{highestBlock} while
        syncing), C{healthy} and C{problems}.
    """
    header = chain.head.header
    age = metrics.head_age()
    status = sync_status()
    problems = []
    if limits.max_head_age and age > limits.max_head_age:
        problems.append(f"head is {age:.0f} s old, more than {limits.max_head_age:g} s")
    answer: dict[str, Any] = {
        "head": header.number,
        "headHash": "0x" + bytes(header.hash).hex(),
        "headAgeSeconds": round(age, 3),
        "peers": peer_count(),
        "syncing": status is not None,
    }
    if status is not None:
        current, highest = status
        answer["highestBlock"] = highest
        if highest - current > limits.max_blocks_behind:
            problems.append(f"syncing, {highest - current} blocks behind (more than {limits.max_blocks_behind})")
    answer["healthy"] = not problems
    answer["problems"] = problems
    return (503 if problems else 200), answer


class MetricsResource(Resource):
    """
    C{GET /metrics} and C{GET /health}; other paths 404, other methods 405.
    """

    isLeaf = True

    log = Logger()

    def __init__(
        self,
        metrics: NodeMetrics,
        health_check: Callable[[], tuple[int, dict[str, Any]]],
        run_in_thread: Callable[..., Deferred[Any]],
    ) -> None:
        """
        @param health_check: returns the status and body of C{/health}.
        @param run_in_thread: runs the exposition's formatting off the
            reactor thread (tests pass C{maybeDeferred}).
        """
        super().__init__()
        self._metrics = metrics
        self._health = health_check
        self._run_in_thread = run_in_thread

    def render_GET(self, request: IRequest) -> bytes | int:
        """
        The metrics, the health, or 404.
        """
        if request.path == b"/metrics":
            request.setHeader(b"Content-Type", CONTENT_TYPE_LATEST.encode())
            self._metrics.refresh()
            finished: list[bool] = []
            request.notifyFinish().addBoth(finished.append)
            formatted = self._run_in_thread(generate_latest, self._metrics.registry)
            formatted.addCallbacks(
                lambda body: None if finished else (request.write(body), request.finish()),
                lambda failure: self._failed(failure, request, finished),
            )
            return NOT_DONE_YET
        if request.path == b"/health":
            status, answer = self._health()
            request.setResponseCode(status)
            request.setHeader(b"Content-Type", b"application/json")
            return json.dumps(answer).encode() + b"\n"
        request.setResponseCode(404)
        request.setHeader(b"Content-Type", b"text/plain")
        return b"not found: try /metrics or /health\n"

    def _failed(self, failure: Any, request: IRequest, finished: list[bool]) -> None:
        """
        Log a failed exposition and answer 500, unless the client has gone.
        """
        self.log.failure("cannot format the metrics", failure)
        if not finished:
            request.setResponseCode(500)
            request.write(b"cannot format the metrics\n")
            request.finish()


class MetricsService(MultiService):
    """
    While running: probe the reactor's lag, measure the database's size off
    the reactor thread; the listening port is a child service.
    """

    log = Logger()

    def __init__(
        self, metrics: NodeMetrics, clock: IReactorTime, database: Path, run_in_thread: Callable[..., Deferred[Any]]
    ) -> None:
        """
        @param clock: times the probes.
        @param database: the chain database's directory.
        @param run_in_thread: runs a function off the reactor thread (tests
            pass C{maybeDeferred}).
        """
        super().__init__()
        self.metrics = metrics
        self._clock = clock
        self._database = database
        self._run_in_thread = run_in_thread
        self._expected: float | None = None
        self._lag_probe = LoopingCall(self._probe_lag)
        self._lag_probe.clock = clock
        self._size_probe = LoopingCall(self._measure_size)
        self._size_probe.clock = clock

    def startService(self) -> None:
        """
        Start the probes (and the children).
        """
        super().startService()
        self._expected = self._clock.seconds() + LAG_INTERVAL
        self._lag_probe.start(LAG_INTERVAL, now=False)
        self._size_probe.start(SIZE_INTERVAL, now=True)

    def stopService(self) -> Any:
        """
        Stop the probes and the children.
        """
        for probe in (self._lag_probe, self._size_probe):
            if probe.running:
                probe.stop()
        return super().stopService()

    def _probe_lag(self) -> None:
        """
        Record how late this timer fired.
        """
        now = self._clock.seconds()
        if self._expected is not None:
            lag = max(0.0, now - self._expected)
            self.metrics.reactor_lag.set(lag)
            self.metrics.reactor_lag_histogram.observe(lag)
        self._expected = now + LAG_INTERVAL

    def _measure_size(self) -> Any:
        """
        Walk the database directory in a thread and record its size.
        """
        walked = self._run_in_thread(directory_size, self._database)
        walked.addCallback(self.metrics.database_size.set)
        walked.addErrback(lambda failure: self.log.failure("cannot measure the database size", failure))
        return None


def metrics_site(resource: MetricsResource) -> Site:
    """
    The HTTP site of the metrics port, without an access log (a scraper
    calls every few seconds).
    """
    site = Site(resource)
    site.log = lambda request: None  # type: ignore[method-assign]
    return site


__all__ = [
    "CallableCounter",
    "HealthLimits",
    "MetricsResource",
    "MetricsService",
    "NodeMetrics",
    "SyncStatus",
    "directory_size",
    "health",
    "metrics_site",
]
