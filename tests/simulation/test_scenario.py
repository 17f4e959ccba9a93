"""
Tests of scenarios: the TOML reader, the shipped files, Python scenarios.
"""

from pathlib import Path

from twisted.trial.unittest import SynchronousTestCase

from nodex.simulation.network import Distribution
from nodex.simulation.scenario import (
    SCENARIO_DIRECTORY,
    Event,
    Scenario,
    ScenarioError,
    load_scenario,
    override,
    scenario_from_mapping,
)


def python_scenario() -> Scenario:
    """
    A Python scenario (named as C{tests.simulation.test_scenario:python_scenario}).
    """
    return Scenario(name="python", nodes=3, blocks=2)


def not_a_scenario() -> int:
    return 3


class ScenarioTests(SynchronousTestCase):
    """
    L{load_scenario} and L{scenario_from_mapping}.
    """

    def test_shipped(self) -> None:
        """
        Every shipped scenario reads; the default is the issue's benchmark.
        """
        for path in sorted(SCENARIO_DIRECTORY.glob("*.toml")):
            self.assertEqual(load_scenario(path.stem).name, path.stem)
        default = load_scenario(None)
        self.assertEqual((default.nodes, default.blocks, default.block_time), (200, 1000, 30.0))

    def test_file(self) -> None:
        """
        A TOML file's keys, tables and events.
        """
        path = Path(self.mktemp() + ".toml")
        path.write_text(
            'nodes = 12\nblocks = 5\nskew = 2\n'
            '[network]\nlatency_ms = { kind = "uniform", low = 10, high = 30 }\nbandwidth_mbit = 8\nloss = 0.01\n'
            '[node]\np2p = { max_outbound = 4 }\n'
            '[[event]]\nat = 10\naction = "crash"\nnodes = [1, 2]\n'
            '[[event]]\nat_block = 3\naction = "partition"\ngroups = [[0, 1], [2, 3]]\n'
        )
        scenario = load_scenario(str(path))
        self.assertEqual((scenario.nodes, scenario.blocks, scenario.name), (12, 5, path.stem))
        self.assertEqual(scenario.skew, Distribution("constant", 2.0))
        self.assertEqual(scenario.links.latency, Distribution("uniform", 0.0, 0.01, 0.03, 0.0))
        self.assertEqual((scenario.links.bandwidth.value, scenario.links.loss), (1e6, 0.01))
        self.assertEqual(scenario.node, {"p2p": {"max_outbound": 4}})
        self.assertEqual(scenario.events, (
            Event("crash", at=10, nodes=(1, 2)), Event("partition", at_block=3, groups=((0, 1), (2, 3))),
        ))

    def test_python(self) -> None:
        """
        C{module:function} names a function returning a scenario.
        """
        self.assertEqual(load_scenario("tests.simulation.test_scenario:python_scenario").name, "python")
        with self.assertRaises(ScenarioError):
            load_scenario("tests.simulation.test_scenario:not_a_scenario")
        with self.assertRaises(ScenarioError):
            load_scenario("tests.simulation.test_scenario:missing")

    def test_errors(self) -> None:
        """
        Unknown keys and bad values are errors naming them.
        """
        cases = [
            ({"nodez": 3}, "unknown key 'nodez'"),
            ({"nodes": 0}, "nodes must be at least 1"),
            ({"hostile": 1.5}, "hostile must be"),
            ({"topology": "ring"}, "topology must be"),
            ({"attacks": ["nuke"]}, "unknown attack 'nuke'"),
            ({"network": {"latency": 3}}, "unknown keys: latency"),
            ({"network": {"latency_ms": {"kind": "pareto"}}}, "unknown distribution kind"),
            ({"event": [{"action": "explode", "at": 1}]}, "unknown event action"),
            ({"event": [{"action": "heal"}]}, "needs one of at and at_block"),
            ({"blocks": "many"}, "bad value of blocks"),
            ({"miners": 2, "shares": [1.0]}, "shares names 1 miners"),
        ]
        for data, message in cases:
            with self.assertRaises(ScenarioError) as caught:
                scenario_from_mapping(data)
            self.assertIn(message, str(caught.exception))
        with self.assertRaises(ScenarioError):
            load_scenario(self.mktemp() + ".toml")
        with self.assertRaises(ScenarioError):
            load_scenario("no-such-scenario")

    def test_override(self) -> None:
        """
        The command line's values replace the scenario's; L{None} keeps them.
        """
        scenario = override(Scenario(), nodes=7, blocks=None, hostile=0.3)
        self.assertEqual((scenario.nodes, scenario.blocks, scenario.hostile_count, scenario.honest_count),
                         (7, 1000, 2, 5))
        with self.assertRaises(ScenarioError):
            override(Scenario(), nodes=-1)


class TopologyTests(SynchronousTestCase):
    """
    The bootstrap peers each topology gives the nodes.
    """

    def layers(self, scenario: Scenario) -> list[dict]:
        from nodex.simulation.runner import Simulation

        workdir = Path(self.mktemp())
        workdir.mkdir()
        simulation = Simulation(scenario, workdir)
        simulation.build()
        return [dict(node.layer["p2p"]) for node in simulation.nodes]

    def test_given(self) -> None:
        """
        A given graph: each node dials its listed nodes, and no more.
        """
        layers = self.layers(Scenario(nodes=3, topology="given", graph=((0, 1), (0, 2), (2, 1))))
        self.assertEqual([(layer["peers"], layer["max_outbound"]) for layer in layers], [
            (["198.18.0.2:50501", "198.18.0.3:50501"], 2), ([], 1), (["198.18.0.2:50501"], 1),
        ])

    def test_exchange(self) -> None:
        """
        Peer exchange: each node is given up to C{bootstrap} earlier nodes.
        """
        layers = self.layers(Scenario(nodes=5, bootstrap=2))
        self.assertEqual([len(layer["peers"]) for layer in layers], [0, 1, 2, 2, 2])
        self.assertTrue(all("max_outbound" not in layer for layer in layers))

    def test_bad_graph(self) -> None:
        """
        A dial to a node that does not exist, or to itself, is refused.
        """
        for graph in (((0, 3),), ((1, 1),)):
            with self.assertRaises(ScenarioError):
                Scenario(nodes=3, topology="given", graph=graph).check()
