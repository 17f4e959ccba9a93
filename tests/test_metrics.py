"""
Tests for L{nodex.metrics}, with fakes and a fake clock.
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families
from twisted.internet.defer import maybeDeferred
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from nodex.api.chain import ChainEvent, ChainHead
from nodex.metrics import HealthLimits, MetricsService, NodeMetrics, directory_size, health
from nodex.structures.headers import Header


def header(number: int, timestamp: int) -> Header:
    """
    A header with C{number} and C{timestamp}, zeros elsewhere.
    """
    zero = b"\x00" * 32
    return Header(zero, zero, b"\x00" * 20, zero, zero, zero, b"\x00" * 256, 1, number, 30_000_000, 0, timestamp,
                  b"", 0, 0, 0)


@dataclass
class FakeChain:
    """
    A chain with a settable head.
    """

    head: ChainHead = field(default_factory=lambda: ChainHead(header(5, 1000), 6))


@dataclass
class FakePool:
    """
    A pool with fixed contents.
    """

    pending_transactions: list[Any] = field(default_factory=lambda: ["a", "b"])
    queued_transactions: list[Any] = field(default_factory=lambda: ["c"])

    def pending(self) -> list[Any]:
        """
        The pending transactions.
        """
        return self.pending_transactions

    def queued(self) -> list[Any]:
        """
        The queued transactions.
        """
        return self.queued_transactions


class NodeMetricsTests(SynchronousTestCase):
    """
    Tests for L{NodeMetrics} and L{health}.
    """

    def setUp(self) -> None:
        """
        Metrics over a head 30 seconds old, two pending and one queued transaction.
        """
        self.clock = Clock()
        self.clock.advance(1030)
        self.chain = FakeChain()
        self.metrics = NodeMetrics(self.chain, FakePool(), lambda: 3, lambda: 4, self.clock, ["eth_call"])

    def samples(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        """
        The exposition, parsed.
        """
        text = self.metrics.exposition().decode()
        return {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        }

    def test_read_when_scraped(self) -> None:
        """
        The head, its age, peers, pool sizes and mined blocks are read at
        each scrape.
        """
        samples = self.samples()
        self.assertEqual(samples[("nodex_head_block_number", ())], 5)
        self.assertEqual(samples[("nodex_head_age_seconds", ())], 30)
        self.assertEqual(samples[("nodex_peers", ())], 3)
        self.assertEqual(samples[("nodex_pool_transactions", (("state", "pending"),))], 2)
        self.assertEqual(samples[("nodex_pool_transactions", (("state", "queued"),))], 1)
        self.assertEqual(samples[("nodex_blocks_mined_total", ())], 4)
        self.chain.head = ChainHead(header(9, 2000), 10)
        samples = self.samples()
        self.assertEqual((samples[("nodex_head_block_number", ())], samples[("nodex_head_age_seconds", ())]), (9, 0))

    def test_calls(self) -> None:
        """
        Calls count by method, errors by method and code; names that are not
        methods share one label, so that clients cannot grow the label set.
        """
        self.metrics.observe_call("eth_call", None, 0.002)
        self.metrics.observe_call("eth_call", -32015, 0.2)
        for index in range(50):
            self.metrics.observe_call(f"junk_{index}", -32601, 0.0001)
        samples = self.samples()
        self.assertEqual(samples[("nodex_rpc_requests_total", (("method", "eth_call"),))], 2)
        self.assertEqual(samples[("nodex_rpc_errors_total", (("code", "-32015"), ("method", "eth_call")))], 1)
        self.assertEqual(samples[("nodex_rpc_requests_total", (("method", "other"),))], 50)
        self.assertEqual(samples[("nodex_rpc_latency_seconds_bucket", (("le", "0.0025"), ("method", "eth_call")))], 1)
        self.assertAlmostEqual(samples[("nodex_rpc_latency_seconds_sum", (("method", "eth_call"),))], 0.202)
        self.assertFalse(any("junk" in str(key) for key in samples))

    def test_chain_events(self) -> None:
        """
        Adopted blocks count; a reorganisation counts once with its abandoned blocks.
        """
        one, two, three = (object() for _ in range(3))
        self.metrics.chain_changed(ChainEvent(adopted=(one,)))  # type: ignore[arg-type]
        self.metrics.chain_changed(ChainEvent(adopted=(two, three), abandoned=(one,)))  # type: ignore[arg-type]
        samples = self.samples()
        self.assertEqual(samples[("nodex_blocks_adopted_total", ())], 3)
        self.assertEqual(samples[("nodex_blocks_abandoned_total", ())], 1)
        self.assertEqual(samples[("nodex_reorganisations_total", ())], 1)

    def test_health(self) -> None:
        """
        Healthy within the limits; 503 with a reason for a stale head or a
        sync far behind; a head-age limit of 0 never fires.
        """
        limits = HealthLimits(max_head_age=60, max_blocks_behind=10)
        status, answer = health(self.metrics, self.chain, lambda: 3, lambda: None, limits)
        self.assertEqual((status, answer["head"], answer["headAgeSeconds"], answer["peers"]), (200, 5, 30, 3))
        self.assertEqual((answer["syncing"], answer["healthy"], answer["problems"]), (False, True, []))
        self.assertEqual(answer["headHash"], "0x" + self.chain.head.header.hash.hex())
        status, answer = health(self.metrics, self.chain, lambda: 3, lambda: (5, 15), limits)
        self.assertEqual((status, answer["syncing"], answer["highestBlock"]), (200, True, 15))
        status, answer = health(self.metrics, self.chain, lambda: 3, lambda: (5, 16), limits)
        self.assertEqual(status, 503)
        self.assertEqual(answer["problems"], ["syncing, 11 blocks behind (more than 10)"])
        self.clock.advance(31)
        status, answer = health(self.metrics, self.chain, lambda: 3, lambda: None, limits)
        self.assertEqual((status, answer["problems"]), (503, ["head is 61 s old, more than 60 s"]))
        status, _ = health(self.metrics, self.chain, lambda: 3, lambda: None, HealthLimits(0, 10))
        self.assertEqual(status, 200)


class MetricsServiceTests(SynchronousTestCase):
    """
    Tests for L{MetricsService}: the probes.
    """

    def test_reactor_lag_and_database_size(self) -> None:
        """
        The lag is how late the probe's timer fires; the database size is
        measured at start and every interval; both stop with the service.
        """
        database = Path(self.mktemp())
        database.mkdir()
        (database / "000001.sst").write_bytes(b"x" * 1000)
        (database / "sub").mkdir()
        (database / "sub" / "LOG").write_bytes(b"y" * 24)
        reactor = Clock()
        metrics = NodeMetrics(FakeChain(), FakePool(), lambda: 0, lambda: 0, reactor)
        service = MetricsService(metrics, reactor, database, maybeDeferred)
        service.startService()
        self.assertEqual(metrics.database_size._value.get(), 1024)
        reactor.advance(1.25)
        self.assertEqual(metrics.reactor_lag._value.get(), 0.25)
        reactor.advance(1.0)
        self.assertEqual(metrics.reactor_lag._value.get(), 0.0)
        service.stopService()
        self.assertEqual(reactor.getDelayedCalls(), [])

    def test_directory_size_of_nothing(self) -> None:
        """
        A database directory that does not exist (yet) is 0 bytes.
        """
        self.assertEqual(directory_size(Path(self.mktemp())), 0)


class OperatorPortConfigTests(SynchronousTestCase):
    """
    The configuration of the metrics and manhole ports: loopback unless allowed.
    """

    def test_loopback_detection(self) -> None:
        """
        UNIX sockets and loopback interfaces are local; no interface means all.
        """
        from nodex.config import listens_on_loopback_only

        for description, local in (
            ("tcp:9100", False),
            ("tcp:9100:interface=127.0.0.1", True),
            ("tcp:9100:interface=0.0.0.0", False),
            ("tcp:9100:interface=192.0.2.1", False),
            ("tcp6:9100:interface=\\:\\:1", True),
            ("tcp6:9100:interface=\\:\\:", False),
            ("tcp:9100:interface=localhost", True),
            ("unix:/run/nodex/metrics.sock", True),
        ):
            self.assertEqual(listens_on_loopback_only(description), local, description)

    def test_remote_refused_unless_allowed(self) -> None:
        """
        A metrics or manhole endpoint beyond loopback is a configuration
        error naming the key, unless C{allow_remote} is set.
        """
        from nodex.config import ConfigError, load_config

        for section in ("metrics", "manhole"):
            layer = {"datadir": self.mktemp(), section: {"endpoint": "tcp:9100"}}
            error = self.assertRaises(ConfigError, load_config, None, layer)
            self.assertIn(f'"{section}.endpoint"', str(error))
            self.assertIn(f"{section}.allow_remote = true", str(error))
            layer[section]["allow_remote"] = True
            load_config(None, layer)

    def test_keys(self) -> None:
        """
        The metrics keys reach the configuration; every preset has them.
        """
        from nodex.config import NETWORKS, load_config

        config = load_config(None, {"datadir": self.mktemp(), "metrics": {"max_head_age": 90, "max_blocks_behind": 5}})
        self.assertEqual((config.metrics.endpoint, config.metrics.max_head_age, config.metrics.max_blocks_behind),
                         ("none", 90.0, 5))
        for network in NETWORKS:
            config = load_config(None, {"network": network, "datadir": self.mktemp()})
            self.assertEqual(config.metrics.endpoint, "none")
            self.assertEqual((config.manhole.allow_remote, config.manhole.authorized_keys), (False, ""))
