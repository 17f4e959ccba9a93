"""
Tests for L{nodex.config}.
"""

import tomllib
from pathlib import Path

from twisted.trial.unittest import SynchronousTestCase

from nodex.config import (
    NETWORKS,
    ConfigError,
    build,
    check_layer,
    dump_toml,
    effective,
    listens_on_loopback_only,
    load_config,
    load_preset,
    merge,
    split_endpoint,
)
from nodex.crypto import keccak256, private_key_to_address


class PresetTests(SynchronousTestCase):
    """
    Tests for the built-in network presets.
    """

    def test_ids_and_ports(self) -> None:
        """
        Each network has the chain id, P2P network id and port of reference §9-§10; a regtest
        node runs alone unless asked (its peers' port, 50501, is then the operator's to give).
        """
        expected = {
            "main": (30, 775, "tcp:5050"),
            "testnet": (31, 8100, "tcp:50505"),
            "devnet": (32, 44444444, "tcp:50503"),
            "regtest": (33, 7771, "none"),
        }
        for network, (chain_id, network_id, p2p) in expected.items():
            config = build(effective(None, {"network": network}))
            self.assertEqual((config.chain_id, config.p2p_network_id, config.p2p_endpoint), (chain_id, network_id, p2p))
            self.assertEqual(config.rpc.endpoint, "tcp:4444:interface=127.0.0.1")

    def test_modules(self) -> None:
        """
        Regtest and devnet enable every module; main and testnet keep evm, debug, trace, sco and
        mnr off, and the wallet off.
        """
        for network in ("regtest", "devnet"):
            config = build(effective(None, {"network": network}))
            self.assertTrue(all(module.enabled for module in config.rpc.modules.values()))
            self.assertTrue(config.wallet_enabled)
        for network in ("main", "testnet"):
            config = build(effective(None, {"network": network}))
            enabled = {name for name, module in config.rpc.modules.items() if module.enabled}
            self.assertEqual(enabled, {"eth", "net", "web3", "rpc", "txpool", "nodex", "personal"})
            self.assertFalse(config.wallet_enabled)

    def test_limits_and_mining(self) -> None:
        """
        Regtest has the generous limits and auto mining; main the reference's limits and no mining.
        """
        regtest = build(effective(None, {}))
        self.assertEqual((regtest.rpc.call_gas_cap, regtest.rpc.max_log_blocks, regtest.mining_mode), (50_000_000, 0, "auto"))
        main = build(effective(None, {"network": "main"}))
        self.assertEqual(
            (main.rpc.call_gas_cap, main.rpc.estimate_gas_cap, main.rpc.max_log_blocks, main.rpc.max_logs, main.mining_mode),
            (10_000_000, 6_800_000, 5000, 20000, "off"),
        )
        self.assertEqual((main.rpc.max_batch, main.rpc.max_body_bytes, main.rpc.timeout), (50, 5242880, 5.0))

    def test_regtest_genesis(self) -> None:
        """
        The regtest genesis funds the ten cow accounts with 10**30 wei and the bridge with
        21*10**24, at gas limit 30,000,000 and difficulty 1.
        """
        genesis = load_preset("regtest")["genesis"]
        cows = ["cow"] + [f"cow{index}" for index in range(1, 10)]
        addresses = {"0x" + private_key_to_address(keccak256(seed.encode())).hex() for seed in cows}
        alloc = genesis["alloc"]
        self.assertEqual({address for address in alloc if address in addresses}, addresses)
        self.assertTrue(all(alloc[address] == {"balance": str(10**30)} for address in addresses))
        self.assertEqual(alloc["0x0000000000000000000000000000000001000006"], {"balance": str(21 * 10**24)})
        self.assertEqual(len(alloc), 11)
        self.assertEqual(
            {key: genesis[key] for key in ("gas_limit", "difficulty", "timestamp", "extra_data", "minimum_gas_price")},
            {"gas_limit": 30_000_000, "difficulty": 1, "timestamp": 0, "extra_data": "0x686f727365", "minimum_gas_price": 0},
        )

    def test_other_geneses(self) -> None:
        """
        Other networks use gas limit 6,800,000, their minimum difficulty and no funded accounts.
        """
        difficulty = {"main": 7 * 10**15, "testnet": 131072, "devnet": 131072}
        for network, value in difficulty.items():
            genesis = load_preset(network)["genesis"]
            self.assertEqual((genesis["gas_limit"], genesis["difficulty"], genesis["alloc"]), (6_800_000, value, {}))

    def test_unknown_network(self) -> None:
        """
        A network without preset is an error naming the choices.
        """
        with self.assertRaises(ConfigError) as caught:
            load_preset("moon")
        self.assertIn("regtest", str(caught.exception))


class LayerTests(SynchronousTestCase):
    """
    Tests for checking and merging the layers.
    """

    def test_unknown_key_named(self) -> None:
        """
        An unknown key stops with its dotted name and its source.
        """
        with self.assertRaises(ConfigError) as caught:
            check_layer({"rpc": {"max_batchh": 5}}, "node.toml")
        self.assertEqual(str(caught.exception), 'unknown configuration key "rpc.max_batchh" (in node.toml)')
        self.assertRaises(ConfigError, check_layer, {"rpc": {"modules": {"shh": {"enabled": True}}}}, "x")

    def test_bad_values_named(self) -> None:
        """
        Bad values stop with the key, the expectation and the value.
        """
        cases = [
            ({"network": "moon"}, '"network"'),
            ({"rpc": {"max_batch": 0}}, '"rpc.max_batch"'),
            ({"rpc": {"max_batch": True}}, '"rpc.max_batch"'),
            ({"rpc": {"timeout": -1}}, '"rpc.timeout"'),
            ({"rpc": {"endpoint": "tcp:notaport"}}, '"rpc.endpoint"'),
            ({"rpc": {"endpoint": "bogus:1"}}, '"rpc.endpoint"'),
            ({"rpc": {"endpoint": "tcp:24499:interface=127.0.0.1:interface=0.0.0.0"}}, '"rpc.endpoint"'),
            ({"rpc": {"ws": "tcp:0:interface=127.0.0.1:backlog=5:interface=::"}}, '"rpc.ws"'),
            ({"metrics": {"endpoint": "tcp:0:interface=127.0.0.1:interface=0.0.0.0"}}, '"metrics.endpoint"'),
            ({"manhole": {"endpoint": "ssh:0:interface=127.0.0.1:interface=0.0.0.0"}}, '"manhole.endpoint"'),
            ({"rpc": {"hosts": "localhost"}}, '"rpc.hosts"'),
            ({"rpc": {"modules": {"eth": {"enabled": "yes"}}}}, '"rpc.modules.eth.enabled"'),
            ({"rpc": "x"}, '"rpc"'),
            ({"p2p": {"peers": ["example.com"]}}, '"p2p.peers"'),
            ({"p2p": {"peers": ["example.com:70000"]}}, '"p2p.peers"'),
            ({"p2p": {"peers": ["[::zz]:5050"]}}, '"p2p.peers"'),
            ({"p2p": {"peers": ["nodex://abcd@192.0.2.1:5050"]}}, '"p2p.peers"'),
            ({"p2p": {"static_peers": ["nodex://" + "zz" * 64 + "@192.0.2.1:5050"]}}, '"p2p.static_peers"'),
            ({"p2p": {"encryption": "yes"}}, '"p2p.encryption"'),
            ({"p2p": {"transaction_delay": -1}}, '"p2p.transaction_delay"'),
            ({"p2p": {"transaction_delay": 61}}, '"p2p.transaction_delay"'),
            ({"p2p": {"transaction_delay": "1s"}}, '"p2p.transaction_delay"'),
            ({"rpc": {"admin_allow_remote": 1}}, '"rpc.admin_allow_remote"'),
            ({"mining": {"mode": "interval:0"}}, '"mining.mode"'),
            ({"mining": {"mode": "sometimes"}}, '"mining.mode"'),
            ({"log_level": "verbose"}, '"log_level"'),
            ({"genesis": 5}, '"genesis"'),
            ({"chain": {"chain_id": 0}}, '"chain.chain_id"'),
            ({"wallet": {"network_name": ""}}, '"wallet.network_name"'),
            ({"wallet": {"network_name": "two\nlines"}}, '"wallet.network_name"'),
            ({"wallet": {"allow_insecure_unlock": "yes"}}, '"wallet.allow_insecure_unlock"'),
            ({"wallet": {"light_kdf": 1}}, '"wallet.light_kdf"'),
        ]
        for layer, key in cases:
            with self.assertRaises(ConfigError, msg=str(layer)) as caught:
                check_layer(layer, "node.toml")
            self.assertIn(key, str(caught.exception))
            self.assertIn("node.toml", str(caught.exception))

    def test_good_values(self) -> None:
        """
        Valid endpoints, peers and mining modes pass unchanged.
        """
        layer = {
            "rpc": {"endpoint": "unix:/tmp/nodex.sock"},
            "p2p": {"endpoint": "none", "peers": ["192.0.2.1:5050", "[::1]:5050", "node.example:50501"],
                    "static_peers": ["nodex://" + "ab" * 64 + "@192.0.2.2:5050"], "encryption": False},
            "mining": {"mode": "interval:2.5"},
            "manhole": {"endpoint": "tcp:2222:interface=127.0.0.1"},
        }
        self.assertEqual(check_layer(layer, "x"), layer)

    def test_datadir_must_be_a_directory(self) -> None:
        """
        A data directory that is a file is refused; "~" is expanded.
        """
        path = Path(self.mktemp())
        path.write_text("")
        self.assertRaises(ConfigError, check_layer, {"datadir": str(path)}, "x")
        self.assertNotIn("~", check_layer({"datadir": "~/somewhere"}, "x")["datadir"])

    def test_merge(self) -> None:
        """
        Tables merge key by key; arrays and the genesis table replace.
        """
        base = {"rpc": {"hosts": ["a"], "max_batch": 5}, "genesis": {"alloc": {"x": 1}, "difficulty": 1}}
        merged = merge(base, {"rpc": {"hosts": ["b"]}, "genesis": {"difficulty": 2}})
        self.assertEqual(merged, {"rpc": {"hosts": ["b"], "max_batch": 5}, "genesis": {"difficulty": 2}})

    def test_precedence(self) -> None:
        """
        The file chooses the network unless a flag does; flags win over the file.
        """
        file_layer = {"network": "testnet", "rpc": {"max_batch": 7, "timeout": 2.0}}
        self.assertEqual(build(effective(file_layer, {})).chain_id, 31)
        config = build(effective(file_layer, {"network": "main", "rpc": {"max_batch": 9}}))
        self.assertEqual((config.chain_id, config.rpc.max_batch, config.rpc.timeout), (30, 9, 2.0))

    def test_default_datadir(self) -> None:
        """
        The data directory defaults to ~/.nodex/<network>.
        """
        config = build(effective(None, {"network": "devnet"}))
        self.assertEqual(config.datadir, Path("~/.nodex/devnet").expanduser())


class FileTests(SynchronousTestCase):
    """
    Tests for reading configuration files.
    """

    def write(self, text: str) -> str:
        """
        Write a configuration file; return its path.
        """
        path = Path(self.mktemp())
        path.write_text(text)
        return str(path)

    def test_file_over_preset(self) -> None:
        """
        A file's keys lie over the preset.
        """
        path = self.write('network = "devnet"\n[rpc]\ncors_origins = ["http://localhost:3000"]\n')
        config = load_config(path, {})
        self.assertEqual((config.network, config.rpc.cors_origins), ("devnet", ("http://localhost:3000",)))

    def test_bad_files(self) -> None:
        """
        A missing file, bad TOML and an unknown key are errors naming the file.
        """
        missing = str(Path(self.mktemp()))
        for path in (missing, self.write("[rpc\n"), self.write("colour = 1\n")):
            with self.assertRaises(ConfigError) as caught:
                load_config(path, {})
            self.assertIn(path, str(caught.exception))

    def test_sample_files_load(self) -> None:
        """
        The commented samples in conf/ load and match the presets they document.
        """
        conf = Path(__file__).resolve().parent.parent / "conf"
        for network in NETWORKS:
            config = load_config(str(conf / f"{network}.toml"), {})
            preset = build(effective(None, {"network": network}))
            self.assertEqual(config.raw, preset.raw, network)


class DumpTests(SynchronousTestCase):
    """
    Tests for L{dump_toml}.
    """

    def test_round_trip(self) -> None:
        """
        Every effective configuration written as TOML reads back equal.
        """
        for network in NETWORKS:
            raw = effective(None, {"network": network, "p2p": {"peers": ["[::1]:1"]}})
            self.assertEqual(tomllib.loads(dump_toml(raw)), raw)

    def test_quoting(self) -> None:
        """
        Keys that are not bare and strings with quotes are escaped.
        """
        text = dump_toml({"a": {'we"ird key': 'say "hi"\n', "n": 1.5, "b": False}})
        self.assertEqual(tomllib.loads(text), {"a": {'we"ird key': 'say "hi"\n', "n": 1.5, "b": False}})
        self.assertRaises(ConfigError, dump_toml, {"a": None})


class ForkScheduleConfigTests(SynchronousTestCase):
    """
    Tests for the C{chain.forks} table (the EVM rule set from each block on).
    """

    def test_presets_run_cancun_clz(self) -> None:
        """
        Every preset runs Cancun plus CLZ from genesis.
        """
        for network in NETWORKS:
            self.assertEqual(build(effective(None, {"network": network})).forks, {0: "Cancun+CLZ"})

    def test_file_adds_activation(self) -> None:
        """
        A file's entries lie over the preset's, block by block.
        """
        config = build(effective({"chain": {"forks": {"100": "Cancun"}}}, {}))
        self.assertEqual(config.forks, {0: "Cancun+CLZ", 100: "Cancun"})
        config = build(effective({"chain": {"forks": {"0": "Cancun"}}}, {}))
        self.assertEqual(config.forks, {0: "Cancun"})

    def test_bad_schedules(self) -> None:
        """
        Unknown forks, non-numeric blocks, a missing block 0 and a non-table are refused with the key.
        """
        cases = [
            ({"0": "Prague"}, "unknown fork 'Prague'"),
            ({"0": "Cancun", "ten": "Cancun"}, "not a decimal block number"),
            ({"0": "Cancun", "010": "Cancun"}, "not a decimal block number"),
            ({"5": "Cancun"}, "want the fork of block 0"),
            ({}, "want a table"),
            ("Cancun", "want a table"),
        ]
        for forks, message in cases:
            with self.assertRaises(ConfigError, msg=str(forks)) as caught:
                check_layer({"chain": {"forks": forks}}, "node.toml")
            self.assertIn('"chain.forks"', str(caught.exception))
            self.assertIn(message, str(caught.exception))


class WorkerNicenessConfigTests(SynchronousTestCase):
    """
    Tests for C{worker_niceness}.
    """

    def test_default_and_range(self) -> None:
        """
        Every preset has 10; 0 to 19 may be chosen; anything else is refused.
        """
        for network in NETWORKS:
            self.assertEqual(build(effective(None, {"network": network})).worker_niceness, 10)
        self.assertEqual(build(effective({"worker_niceness": 0}, {})).worker_niceness, 0)
        for bad in (-1, 20, "5", True):
            with self.assertRaises(ConfigError) as caught:
                check_layer({"worker_niceness": bad}, "node.toml")
            self.assertIn('"worker_niceness"', str(caught.exception))


class TraceLimitConfigTests(SynchronousTestCase):
    """
    Tests for C{rpc.trace_max_steps}, C{rpc.trace_filter_max_blocks} and
    C{rpc.trace_filter_max_traces}.
    """

    def test_defaults_and_choices(self) -> None:
        """
        Every preset has the same limits; each may be chosen; zero, negative
        and non-integer values are refused naming the key.
        """
        for network in NETWORKS:
            rpc = build(effective(None, {"network": network})).rpc
            self.assertEqual(
                (rpc.trace_max_steps, rpc.trace_filter_max_blocks, rpc.trace_filter_max_traces),
                (1_000_000, 5_000, 10_000),
            )
        chosen = build(effective({"rpc": {"trace_max_steps": 50, "trace_filter_max_blocks": 7}}, {})).rpc
        self.assertEqual((chosen.trace_max_steps, chosen.trace_filter_max_blocks), (50, 7))
        for key in ("trace_max_steps", "trace_filter_max_blocks", "trace_filter_max_traces"):
            for bad in (0, -1, "10", 1.5, True):
                with self.assertRaises(ConfigError) as caught:
                    check_layer({"rpc": {key: bad}}, "node.toml")
                self.assertIn(f'"rpc.{key}"', str(caught.exception))


class DevChainRPCConfigTests(SynchronousTestCase):
    """
    Tests for the dev-chain batch limit and C{rpc.revert_error_code}.
    """

    def test_batch_limits(self) -> None:
        """
        Regtest and devnet take batches of 1,000; main and testnet keep 50.
        """
        limits = {network: build(effective(None, {"network": network})).rpc.max_batch for network in NETWORKS}
        self.assertEqual(limits, {"regtest": 1000, "devnet": 1000, "testnet": 50, "main": 50})

    def test_revert_error_code(self) -> None:
        """
        Every preset answers reverts with -32015; 3 may be chosen; nothing else.
        """
        for network in NETWORKS:
            self.assertEqual(build(effective(None, {"network": network})).rpc.revert_error_code, -32015)
        self.assertEqual(build(effective({"rpc": {"revert_error_code": 3}}, {})).rpc.revert_error_code, 3)
        for bad in (0, -32000, "3", True):
            with self.assertRaises(ConfigError) as caught:
                check_layer({"rpc": {"revert_error_code": bad}}, "node.toml")
            self.assertIn('"rpc.revert_error_code"', str(caught.exception))
            self.assertIn("want -32015 or 3", str(caught.exception))

    def test_compat(self) -> None:
        """
        Every preset has the reference conventions; C{compat = "ethereum"}
        chooses the others; nothing else is taken.
        """
        for network in NETWORKS:
            self.assertEqual(build(effective(None, {"network": network})).compat, "reference")
        self.assertEqual(build(effective({"compat": "ethereum"}, {})).compat, "ethereum")
        for bad in ("geth", 1, ""):
            with self.assertRaises(ConfigError) as caught:
                check_layer({"compat": bad}, "node.toml")
            self.assertIn('"compat"', str(caught.exception))

    def test_client_version(self) -> None:
        """
        Every preset answers nodex's own version string (empty key); a
        printable ASCII string of up to 200 characters replaces it; nothing else.
        """
        for network in NETWORKS:
            self.assertEqual(build(effective(None, {"network": network})).rpc.client_version, "")
        chosen = build(effective({"rpc": {"client_version": "anvil/nodex"}}, {}))
        self.assertEqual(chosen.rpc.client_version, "anvil/nodex")
        for bad in (3, None, "x" * 201, "anvil\nnodex", "nodé"):
            with self.assertRaises(ConfigError) as caught:
                check_layer({"rpc": {"client_version": bad}}, "node.toml")
            self.assertIn('"rpc.client_version"', str(caught.exception))


class EndpointGrammarTests(SynchronousTestCase):
    """
    Tests for L{split_endpoint} and L{listens_on_loopback_only}, the one reader of the endpoint
    grammar that the configuration's checks and the composition root's wallet rule share.
    """

    def test_split(self) -> None:
        """
        The kind comes in lower case; each argument with its name, or L{None} for a positional one,
        and its escaped colons unescaped.
        """
        self.assertEqual(
            split_endpoint("TCP6:8545:interface=\\:\\:1"), ("tcp6", [(None, "8545"), ("interface", "::1")]))
        self.assertEqual(split_endpoint("unix:/run/nodex.sock"), ("unix", [(None, "/run/nodex.sock")]))

    def test_loopback(self) -> None:
        """
        Loopback addresses, localhost, UNIX sockets and C{none} (it listens nowhere) are local; no
        interface, or a public one, is not.
        """
        local = ["none", "tcp:4444:interface=127.0.0.1", "tcp:port=1:interface=\\:\\:1", "unix:/tmp/s",
                 "tcp:1:interface=localhost", "tcp6:9100:interface=\\:\\:1"]
        remote = ["tcp:4444", "tcp:4444:interface=0.0.0.0", "tcp:1:interface=192.0.2.1", "ssl:1:interface=\\:\\:",
                  "tcp:1:interface=example.com", "tcp:1:backlog=5"]
        for description in local:
            self.assertTrue(listens_on_loopback_only(description), description)
        for description in remote:
            self.assertFalse(listens_on_loopback_only(description), description)

    def test_kind_in_any_case(self) -> None:
        """
        Upper-case kinds are read as their lower-case names (the composition root once read
        C{UNIX:} as a TCP port without an interface, and the configuration as a UNIX socket).
        """
        self.assertTrue(listens_on_loopback_only("UNIX:/tmp/s"))
        self.assertTrue(listens_on_loopback_only("TCP6:1:interface=\\:\\:1"))
        self.assertFalse(listens_on_loopback_only("TCP:1"))

    def test_none_in_an_operator_section(self) -> None:
        """
        C{none} passes the operator ports' loopback check without C{allow_remote}, as it passes the
        wallet's.
        """
        config = load_config(None, {"network": "regtest", "metrics": {"endpoint": "none", "allow_remote": False}})
        self.assertEqual(config.metrics.endpoint, "none")


class TypedSectionTests(SynchronousTestCase):
    """
    Tests of the typed C{[p2p]} and C{[scoring]} sections of L{NodeConfig}: the node reads
    these, never C{config.raw}.
    """

    def test_p2p_section(self) -> None:
        """
        Every key of the preset's C{[p2p]} but the endpoint, network id and peers (configured
        and static: C{config.peers} holds both) is a field of C{config.p2p}, with the value
        the layers give it.
        """
        config = load_config(None, {"network": "regtest", "p2p": {"max_inbound": 3, "tls": True}})
        self.assertEqual(config.p2p.max_inbound, 3)
        self.assertTrue(config.p2p.tls)
        self.assertEqual(
            {name for name in config.raw["p2p"]} - {"endpoint", "network_id", "peers", "static_peers"},
            {name for name in vars(config.p2p)},
        )

    def test_transaction_delay(self) -> None:
        """
        Pending transactions go to peers at once on regtest (a developer's
        network of a few nodes) and after a random wait of mean 1 s on the
        public networks (C{docs/p2p.md}, "Propagation"); a layer sets it.
        """
        delays = {network: load_config(None, {"network": network}).p2p.transaction_delay
                  for network in ("regtest", "devnet", "testnet", "main")}
        self.assertEqual(delays, {"regtest": 0.0, "devnet": 1.0, "testnet": 1.0, "main": 1.0})
        config = load_config(None, {"network": "regtest", "p2p": {"transaction_delay": 2}})
        self.assertEqual(config.p2p.transaction_delay, 2.0)

    def test_scoring_section(self) -> None:
        """
        C{config.scoring} holds the C{[scoring]} table, its punishments typed.
        """
        config = load_config(None, {"network": "regtest"})
        self.assertEqual(config.scoring.node.duration, config.raw["scoring"]["node"]["duration"])
        self.assertEqual(config.scoring.punishment_enabled, config.raw["scoring"]["punishment_enabled"])
