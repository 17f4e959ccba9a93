"""
Tests for L{nodex.tap} and the C{twistd nodex} plugin.
"""

import io
import tomllib
from pathlib import Path
from typing import Any

from twisted.application.service import IServiceMaker, Service
from twisted.internet.testing import MemoryReactorClock as _MemoryReactorClock
from twisted.plugin import getPlugins
from twisted.python import usage
from twisted.trial.unittest import SynchronousTestCase

from nodex.busypoll import BusyPollService
from nodex.config import NodeConfig
from nodex.db.schema import CHAIN_DIRECTORY
from nodex.node import SWITCH_INTERVAL, NodeService, compose, compose_wallet
from nodex.tap import Options, makeService



class MemoryReactorClock(_MemoryReactorClock):
    """
    A memory reactor whose thread results are dropped: the node's threads
    (reader pool, writer) run for real in these tests, and what they hand
    back to the reactor is not looked at.
    """

    def callFromThread(self, callable: object, *args: object, **kwargs: object) -> None:
        """
        Drop a result delivered from a thread.
        """

class OptionsTests(SynchronousTestCase):
    """
    Tests for L{Options}.
    """

    def parse(self, *argv: str) -> Options:
        """
        Parse C{argv} with a data directory under the test's temporary path.
        """
        options = Options(stdout=io.StringIO())
        options.parseOptions(["--datadir", self.mktemp(), *argv])
        return options

    def test_defaults(self) -> None:
        """
        Without options the node is regtest with RPC on 127.0.0.1:4444 and auto mining.
        """
        config = self.parse().config
        assert config is not None
        self.assertEqual((config.network, config.chain_id), ("regtest", 33))
        self.assertEqual(config.rpc.endpoint, "tcp:4444:interface=127.0.0.1")
        self.assertEqual((config.mining_mode, config.manhole_endpoint), ("auto", "none"))

    def test_flags(self) -> None:
        """
        Every flag lands in its configuration key; --peer repeats.
        """
        config = self.parse(
            "--network", "testnet", "--rpc", "none", "--p2p", "tcp:0", "--peer", "192.0.2.1:50505",
            "--peer", "[::1]:50505", "--mining", "interval:3", "--manhole", "tcp:2222:interface=127.0.0.1",
            "--log-level", "debug", "--compat", "ethereum",
        ).config
        assert config is not None
        self.assertEqual(
            (config.chain_id, config.rpc.endpoint, config.p2p_endpoint, config.peers, config.mining_mode,
             config.manhole_endpoint, config.log_level, config.compat),
            (31, "none", "tcp:0", ("192.0.2.1:50505", "[::1]:50505"), "interval:3",
             "tcp:2222:interface=127.0.0.1", "debug", "ethereum"),
        )
        self.assertRaises(usage.UsageError, self.parse, "--compat", "geth")

    def test_config_file(self) -> None:
        """
        --config lays a TOML file between the preset and the flags.
        """
        path = Path(self.mktemp())
        path.write_text('network = "devnet"\n[rpc]\nmax_batch = 9\ntimeout = 1.0\n')
        config = self.parse("--config", str(path), "--network", "main").config
        assert config is not None
        self.assertEqual((config.chain_id, config.rpc.max_batch, config.rpc.timeout), (30, 9, 1.0))

    def test_bad_values_are_usage_errors(self) -> None:
        """
        A bad flag value is a usage error naming the key.
        """
        for argv, key in (
            (["--network", "moon"], "network"),
            (["--mining", "sometimes"], "mining.mode"),
            (["--rpc", "tcp:x"], "rpc.endpoint"),
            (["--peer", "nowhere"], "p2p.peers"),
        ):
            with self.assertRaises(usage.UsageError) as caught:
                self.parse(*argv)
            self.assertIn(key, str(caught.exception))

    def test_datadir_created(self) -> None:
        """
        Parsing creates the data directory, private to the user.
        """
        path = Path(self.mktemp()) / "deep" / "data"
        Options(stdout=io.StringIO()).parseOptions(["--datadir", str(path)])
        self.assertTrue(path.is_dir())
        self.assertEqual(path.stat().st_mode & 0o777, 0o700)

    def test_datadir_not_creatable(self) -> None:
        """
        A data directory that cannot be created is a usage error.
        """
        blocker = Path(self.mktemp())
        blocker.write_text("")
        with self.assertRaises(usage.UsageError) as caught:
            Options(stdout=io.StringIO()).parseOptions(["--datadir", str(blocker / "data")])
        self.assertIn("data directory", str(caught.exception))

    def test_dump_config(self) -> None:
        """
        --dump-config prints the effective configuration as TOML and exits 0.
        """
        out = io.StringIO()
        options = Options(stdout=out)
        with self.assertRaises(SystemExit) as caught:
            options.parseOptions(["--dump-config", "--network", "main", "--mining", "manual", "--datadir", "/nonexistent/x"])
        self.assertEqual(caught.exception.code, 0)
        dumped = tomllib.loads(out.getvalue())
        self.assertEqual((dumped["network"], dumped["chain"]["chain_id"], dumped["mining"]["mode"]), ("main", 30, "manual"))
        self.assertFalse(Path("/nonexistent/x").exists())


    def test_dump_config_reloads(self) -> None:
        """
        The output of --dump-config, given back with --config, is the same configuration.
        """
        out = io.StringIO()
        argv = ["--dump-config", "--network", "testnet", "--peer", "192.0.2.9:50505", "--datadir", self.mktemp()]
        with self.assertRaises(SystemExit):
            Options(stdout=out).parseOptions(argv)
        dumped = Path(self.mktemp())
        dumped.write_text(out.getvalue())
        again = Options(stdout=io.StringIO())
        again.parseOptions(["--config", str(dumped)])
        assert again.config is not None
        self.assertEqual(again.config.raw, tomllib.loads(out.getvalue()))


class MakeServiceTests(SynchronousTestCase):
    """
    Tests for L{compose} and L{makeService}.
    """

    def test_rpc_service_listens(self) -> None:
        """
        The node has an RPC service that listens on the configured endpoint when started.
        """
        options = Options(stdout=io.StringIO())
        options.parseOptions(["--datadir", self.mktemp(), "--rpc", "tcp:4545:interface=127.0.0.1", "--ws", "none"])
        assert options.config is not None
        reactor = MemoryReactorClock()
        node = compose(options.config, reactor)
        node.startService()
        self.addCleanup(node.stopService)
        self.assertEqual([(port, host) for port, _, _, host in reactor.tcpServers], [(4545, "127.0.0.1")])
        listening = self.successResultOf(node.getServiceNamed("rpc").when_listening())
        self.assertEqual(listening.getHost().port, 4545)

    def test_rpc_none(self) -> None:
        """
        --rpc none starts no RPC server.
        """
        options = Options(stdout=io.StringIO())
        options.parseOptions(["--datadir", self.mktemp(), "--rpc", "none"])
        assert options.config is not None
        node = compose(options.config, MemoryReactorClock())
        self.assertRaises(KeyError, node.getServiceNamed, "rpc")

    def test_busy_poll_service(self) -> None:
        """
        C{rpc.busy_poll} above 0 adds the service that busy-polls the
        reactor (docs/rpc.md, "Busy polling"), with its window in seconds;
        the default (0) adds none.
        """
        from dataclasses import replace

        options = Options(stdout=io.StringIO())
        options.parseOptions(["--datadir", self.mktemp(), "--rpc", "tcp:0:interface=127.0.0.1", "--ws", "none"])
        assert options.config is not None
        self.assertRaises(KeyError, compose(options.config, MemoryReactorClock()).getServiceNamed, "busy-poll")
        config = replace(options.config, rpc=replace(options.config.rpc, busy_poll=200))
        polling = compose(config, MemoryReactorClock()).getServiceNamed("busy-poll")
        self.assertIsInstance(polling, BusyPollService)
        self.assertEqual(polling._window, 0.0002)

    def test_trace_limits(self) -> None:
        """
        The tracing service takes its limits from the configuration.
        """
        options = Options(stdout=io.StringIO())
        options.parseOptions(["--datadir", self.mktemp(), "--rpc", "none"])
        assert options.config is not None
        from dataclasses import replace

        rpc = replace(options.config.rpc, trace_max_steps=77, trace_filter_max_blocks=8, trace_filter_max_traces=9)
        node = compose(replace(options.config, rpc=rpc), MemoryReactorClock())
        tracing = node.getServiceNamed("tracing")
        self.assertEqual((tracing.limits.max_steps, tracing.max_filter_blocks, tracing.max_traces), (77, 8, 9))

    def test_client_version(self) -> None:
        """
        web3_clientVersion answers nodex's own string, or C{rpc.client_version} when set.
        """
        import json
        from dataclasses import replace

        from twisted.internet.task import Clock

        from nodex.rpc.web3 import client_version
        from nodex.node import build_rpc_server

        options = Options(stdout=io.StringIO())
        options.parseOptions(["--datadir", self.mktemp(), "--rpc", "none"])
        assert options.config is not None
        request = b'{"jsonrpc": "2.0", "id": 1, "method": "web3_clientVersion"}'
        answers = []
        for chosen in ("", "anvil/nodex"):
            config = replace(options.config, rpc=replace(options.config.rpc, client_version=chosen))
            server = build_rpc_server(config, Clock(), None)  # type: ignore[arg-type]
            answer = self.successResultOf(server.dispatcher.handle(request))
            assert answer is not None
            answers.append(json.loads(answer)["result"])
        self.assertEqual(answers, [client_version(), "anvil/nodex"])
        ethereum = replace(options.config, compat="ethereum")
        server = build_rpc_server(ethereum, Clock(), None)  # type: ignore[arg-type]
        answer = json.loads(self.successResultOf(server.dispatcher.handle(request)))["result"]
        self.assertEqual(answer, "anvil/" + client_version())

    def test_conventions_line(self) -> None:
        """
        The start names the conventions; on a dev chain under the default
        ones it says how to switch, under the Ethereum ones it says so.
        """
        from dataclasses import replace

        from nodex.node import conventions_line

        config = self.parse_config()
        self.assertIn("start with --compat ethereum", conventions_line(config))
        self.assertNotIn("--compat", conventions_line(replace(config, network="main")))
        self.assertIn("RPC conventions: ethereum", conventions_line(replace(config, compat="ethereum")))

    def test_ethereum_conventions_composed(self) -> None:
        """
        C{--compat ethereum} reaches the services: the block clock's lasting time
        shift and the state service's call failures as errors.
        """
        options = Options(stdout=io.StringIO())
        options.parseOptions(["--datadir", self.mktemp(), "--rpc", "none", "--compat", "ethereum"])
        assert options.config is not None
        node = compose(options.config, MemoryReactorClock())
        self.assertTrue(node.miner.block_clock._lasting)  # type: ignore[union-attr]
        self.assertTrue(node.getServiceNamed("state")._call_failures_are_errors)
        plain = Options(stdout=io.StringIO())
        plain.parseOptions(["--datadir", self.mktemp(), "--rpc", "none"])
        assert plain.config is not None
        self.assertFalse(compose(plain.config, MemoryReactorClock()).miner.block_clock._lasting)  # type: ignore[union-attr]

    def parse_config(self) -> Any:
        """
        The configuration of no options but a data directory.
        """
        options = Options(stdout=io.StringIO())
        options.parseOptions(["--datadir", self.mktemp(), "--rpc", "none"])
        return options.config

    def test_make_service(self) -> None:
        """
        makeService composes the node of the parsed options.
        """
        options = Options(stdout=io.StringIO())
        options.parseOptions(["--datadir", self.mktemp(), "--rpc", "none"])
        self.assertEqual(makeService(options).config, options.config)

    def test_start_line(self) -> None:
        """
        Starting logs one line naming network, chain id, data dir and
        endpoints, and one naming the EVM.
        """
        from twisted.logger import globalLogPublisher

        events: list[dict[str, object]] = []
        globalLogPublisher.addObserver(events.append)
        self.addCleanup(globalLogPublisher.removeObserver, events.append)
        options = Options(stdout=io.StringIO())
        options.parseOptions(["--datadir", self.mktemp(), "--rpc", "none"])
        assert options.config is not None
        node = compose(options.config, MemoryReactorClock())
        node.startService()
        self.addCleanup(node.stopService)
        starts = [event for event in events if event.get("log_format", "").startswith("nodex starting")]
        self.assertEqual(len(starts), 1)
        self.assertEqual((starts[0]["network"], starts[0]["chain_id"], starts[0]["rpc"]), ("regtest", 33, "none"))
        # And one naming the EVM it runs: pure Python, or the compiled build (docs/evm.md).
        from nodex.evm.build import build_line

        lines = [event.get("line") for event in events if event.get("log_format") == "{line}"]
        self.assertIn(build_line(), lines)

    def test_start_freezes_the_heap(self) -> None:
        """
        Once started, the node's objects are out of the garbage collector's
        sight (full collections no longer walk them).
        """
        import gc

        self.addCleanup(gc.unfreeze)
        gc.unfreeze()
        options = Options(stdout=io.StringIO())
        options.parseOptions(["--datadir", self.mktemp(), "--rpc", "none"])
        assert options.config is not None
        node = compose(options.config, MemoryReactorClock())
        self.assertEqual(gc.get_freeze_count(), 0)
        node.startService()
        self.addCleanup(node.stopService)
        self.assertGreater(gc.get_freeze_count(), 0)


    def test_start_shortens_the_switch_interval(self) -> None:
        """
        A started node switches threads every L{SWITCH_INTERVAL} seconds, so
        that the reactor thread gets the interpreter lock soon while the
        writer imports.
        """
        import sys

        previous = sys.getswitchinterval()
        self.addCleanup(sys.setswitchinterval, previous)
        sys.setswitchinterval(0.005)
        options = Options(stdout=io.StringIO())
        options.parseOptions(["--datadir", self.mktemp(), "--rpc", "none", "--ws", "none"])
        assert options.config is not None
        node = compose(options.config, MemoryReactorClock())
        node.startService()
        self.addCleanup(node.stopService)
        self.assertAlmostEqual(sys.getswitchinterval(), SWITCH_INTERVAL)

    def test_nothing_opened_before_start(self) -> None:
        """
        Composing the node opens no database and starts no thread (twistd
        forks into the background between composing and starting); starting
        opens the chain database, and stopping closes it, so that another
        node can open the same data directory afterwards.
        """
        import threading

        options = Options(stdout=io.StringIO())
        datadir = self.mktemp()
        options.parseOptions(["--datadir", datadir, "--rpc", "none"])
        assert options.config is not None
        threads = threading.active_count()
        node = compose(options.config, MemoryReactorClock())
        self.assertEqual(threading.active_count(), threads)
        self.assertFalse((options.config.datadir / CHAIN_DIRECTORY).exists())
        node.startService()
        self.assertTrue((options.config.datadir / CHAIN_DIRECTORY / "CURRENT").exists())
        self.assertEqual(node.chain.head.header.number, 0)
        node.stopService()
        again = compose(options.config, MemoryReactorClock())
        again.startService()
        again.stopService()

    def test_store_in_use_is_one_line(self) -> None:
        """
        A data directory another node holds stops the start with one line
        naming it (a SystemExit with the message), not a traceback, and
        the children already started are stopped.
        """
        options = Options(stdout=io.StringIO())
        options.parseOptions(["--datadir", self.mktemp(), "--rpc", "none"])
        assert options.config is not None
        first = compose(options.config, MemoryReactorClock())
        first.startService()
        self.addCleanup(first.stopService)
        second = compose(options.config, MemoryReactorClock())
        error = self.assertRaises(SystemExit, second.startService)
        self.assertIn("nodex: cannot start:", str(error))
        self.assertIn("already open", str(error))
        self.assertFalse(second.running)


class _Recorder(Service):
    """
    A child service that records its start and stop, or fails to start.
    """

    def __init__(self, log: list[str], name: str, fail: bool = False) -> None:
        """
        @param log: where to record.
        @param fail: raise from C{startService}.
        """
        self.log, self.label, self.fail = log, name, fail

    def startService(self) -> None:
        """
        Record the start, or fail.
        """
        if self.fail:
            raise OSError("port in use")
        super().startService()
        self.log.append(f"start {self.label}")

    def stopService(self) -> None:
        """
        Record the stop.
        """
        super().stopService()
        self.log.append(f"stop {self.label}")


class NodeServiceTests(SynchronousTestCase):
    """
    Tests for L{NodeService}.
    """

    def test_failed_start_stops_started_children(self) -> None:
        """
        When a child cannot start, the children already started are stopped (so that their
        threads do not keep the process alive) and the error propagates.
        """
        options = Options(stdout=io.StringIO())
        options.parseOptions(["--datadir", self.mktemp(), "--rpc", "none"])
        assert options.config is not None
        node = NodeService(options.config)
        log: list[str] = []
        _Recorder(log, "a").setServiceParent(node)
        _Recorder(log, "b").setServiceParent(node)
        _Recorder(log, "rpc", fail=True).setServiceParent(node)
        self.assertRaises(OSError, node.startService)
        self.assertEqual(log, ["start a", "start b", "stop b", "stop a"])
        self.assertFalse(node.running)


class PluginTests(SynchronousTestCase):
    """
    Tests for C{twisted/plugins/nodex_plugin.py}.
    """

    def test_plugin_found(self) -> None:
        """
        twistd finds a service maker called nodex that points at L{nodex.tap}.
        """
        import twisted.plugins

        makers = {maker.tapname: maker for maker in getPlugins(IServiceMaker, twisted.plugins)}
        self.assertIn("nodex", makers)
        self.assertIsInstance(makers["nodex"].options(), Options)


class WebSocketCompositionTests(SynchronousTestCase):
    """
    The WebSocket server's options and composition.
    """

    def parse(self, *argv: str) -> Options:
        """
        Parse C{argv} with a data directory under the test's temporary path.
        """
        options = Options(stdout=io.StringIO())
        options.parseOptions(["--datadir", self.mktemp(), *argv])
        return options

    def test_defaults_per_network(self) -> None:
        """
        WebSocket is on by default on regtest only, at 127.0.0.1:4445; --ws
        sets it on any network.
        """
        expected = {"regtest": "tcp:4445:interface=127.0.0.1", "devnet": "none", "testnet": "none", "main": "none"}
        for network, endpoint in expected.items():
            config = self.parse("--network", network).config
            assert config is not None
            self.assertEqual((config.rpc.ws, config.rpc.ws_max_subscriptions), (endpoint, 128))
        config = self.parse("--network", "main", "--ws", "tcp:8546").config
        assert config is not None
        self.assertEqual(config.rpc.ws, "tcp:8546")
        self.assertRaises(usage.UsageError, self.parse, "--ws", "tcp:x")

    def test_composed_with_the_http_dispatcher(self) -> None:
        """
        The WebSocket listener serves the HTTP server's dispatcher and rules,
        even with HTTP off; --ws none composes none.
        """
        from nodex.rpc.websocket import RPCWebSocketFactory

        options = self.parse("--rpc", "none", "--ws", "tcp:0:interface=127.0.0.1")
        assert options.config is not None
        node = compose(options.config, MemoryReactorClock())
        self.assertRaises(KeyError, node.getServiceNamed, "rpc")
        factory = node.getServiceNamed("ws")._factory
        self.assertIsInstance(factory, RPCWebSocketFactory)
        body = b'{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}'
        self.assertEqual(factory.dispatcher.answer(body), b'{"jsonrpc":"2.0","id":1,"result":"0x21"}')
        options = self.parse("--ws", "none")
        assert options.config is not None
        node = compose(options.config, MemoryReactorClock())
        self.assertRaises(KeyError, node.getServiceNamed, "ws")


class WalletCompositionTests(SynchronousTestCase):
    """
    Tests for L{compose_wallet}.
    """

    def config(self, *argv: str, text: str = "") -> NodeConfig:
        """
        The configuration of a command line (and an optional file's text).
        """
        arguments = ["--datadir", self.mktemp(), *argv]
        if text:
            path = Path(self.mktemp())
            path.write_text(text)
            arguments += ["--config", str(path)]
        options = Options(stdout=io.StringIO())
        options.parseOptions(arguments)
        assert options.config is not None
        return options.config

    def test_regtest_wallet(self) -> None:
        """
        Regtest: the wallet is on with the eleven development accounts, and a
        keystore under the data directory, created 0700 at start.
        """
        config = self.config("--rpc", "none")
        node = compose(config, MemoryReactorClock())
        wallet = node.getServiceNamed("accounts")
        self.assertTrue(wallet.enabled)
        self.assertEqual(len(wallet.addresses()), 11)
        wallet.startService()
        self.addCleanup(wallet.stopService)
        keystore = config.datadir / "keystore"
        self.assertEqual(keystore.stat().st_mode & 0o777, 0o700)

    def test_main_wallet_off(self) -> None:
        """
        Main: the wallet is off and holds nothing.
        """
        wallet = compose_wallet(self.config("--network", "main", "--rpc", "none"), MemoryReactorClock())
        self.assertFalse(wallet.enabled)
        self.assertEqual(wallet.addresses(), [])

    def test_unlock_permission(self) -> None:
        """
        Unlocking is allowed on loopback, refused when HTTP or WebSocket listens on every interface unless
        wallet.allow_insecure_unlock; the network name comes from the configuration.
        """
        reactor = MemoryReactorClock()
        self.assertTrue(compose_wallet(self.config(), reactor)._allow_unlock)
        self.assertFalse(compose_wallet(self.config("--rpc", "tcp:4444"), reactor)._allow_unlock)
        self.assertFalse(compose_wallet(self.config("--ws", "tcp:4445"), reactor)._allow_unlock)
        insecure = self.config("--rpc", "tcp:4444", text="[wallet]\nallow_insecure_unlock = true\nnetwork_name = \"Nodex\"\n")
        wallet = compose_wallet(insecure, reactor)
        self.assertTrue(wallet._allow_unlock)
        self.assertEqual(wallet._network_name, "Nodex")
