"""
The simulator's small scenarios (issue 28): real nodes, composed as
production composes them, on a simulated network and clock.  Each run is
a few seconds of CPU; the 200-node benchmark lives in C{benchmarks/}.
"""

import gc
from dataclasses import replace
from pathlib import Path
from typing import Any

from twisted.trial.unittest import SynchronousTestCase

from nodex.db.schema import read_canonical_hash
from nodex.p2p.messages import Transactions, encode_message
from nodex.p2p.network import PeerNetwork
from nodex.p2p.protocol import PeerProtocol
from nodex.services.chain import ChainService
from nodex.services.miner import Miner
from nodex.services.pool import TransactionPool
from nodex.services.reputation import ReputationService
from nodex.simulation.hostile import PUNISHING_ATTACKS
from nodex.simulation.runner import START, YOUNG_GENERATION, Simulation
from nodex.simulation.scenario import Event, Scenario

SMALL = Scenario(
    name="test", nodes=10, blocks=12, block_time=10.0, miners=10, transactions_per_block=1.0, warmup=20.0,
    settle=20.0,
)


class SimulationTestCase(SynchronousTestCase):
    """
    Runs scenarios in a temporary folder.
    """

    def simulate(self, scenario: Scenario) -> tuple[Simulation, dict[str, Any]]:
        """
        Run C{scenario}; return the simulation and its summary.
        """
        workdir = Path(self.mktemp())
        workdir.mkdir()
        simulation = Simulation(scenario, workdir)
        return simulation, simulation.run()


class DeterminismTests(SimulationTestCase):
    """
    One seed, one run.
    """

    def test_same_seed_same_digest(self) -> None:
        """
        The same scenario and seed twice give the same trace digest and the
        same summary (but for the wall time); another seed another digest.
        """
        scenario = replace(
            SMALL, events=(Event("crash", at=60, nodes=(4,)), Event("restart", at=90, nodes=(4,))),
            links=replace(SMALL.links, loss=0.01),
        )
        _, first = self.simulate(scenario)
        _, second = self.simulate(scenario)
        _, other = self.simulate(replace(scenario, seed=2))
        first.pop("wall_s")
        second.pop("wall_s")
        self.assertEqual(first, second)
        self.assertNotEqual(first["digest"], other["digest"])
        self.assertEqual((first["blocks"], first["converged"], first["errors"]), (12, True, 0))


class CompositionTests(SimulationTestCase):
    """
    The simulated nodes are the production services.
    """

    def test_production_services(self) -> None:
        """
        Each node runs the chain service, the pool, the miner, the
        reputation service and the peer network of the composition root,
        its peers connected by the production protocol.
        """
        thresholds = gc.get_threshold()
        during: list[tuple[int, ...]] = []
        scenario = replace(SMALL, nodes=4, blocks=2, transactions_per_block=0.0,
                           setup=lambda simulation: during.append(gc.get_threshold()))
        simulation, summary = self.simulate(scenario)
        self.assertTrue(summary["converged"])
        # The collector's young generation is larger during the run only.
        self.assertEqual(during, [(YOUNG_GENERATION, *thresholds[1:])])
        self.assertEqual(gc.get_threshold(), thresholds)
        for node in simulation.nodes:
            core = node.core
            assert core is not None
            self.assertIsInstance(core.chain, ChainService)
            self.assertIsInstance(core.making.pool, TransactionPool)
            self.assertIsInstance(core.making.miner, Miner)
            self.assertIsInstance(core.reputation, ReputationService)
            self.assertIsInstance(core.peers, PeerNetwork)
            peers = node.peers.established_peers()
            self.assertTrue(peers)
            self.assertTrue(all(type(peer) is PeerProtocol for peer in peers))
            self.assertEqual(core.chain.head.header.number, summary["height"])


    def test_clients_transactions_shared(self) -> None:
        """
        The clients' transactions are known to every node's peer network
        beyond its pool: a peer's copy of one is that object, its sender
        not recovered again.
        """
        scenario = replace(SMALL, nodes=3, blocks=3)
        simulation, summary = self.simulate(scenario)
        shared = simulation.shared_transactions
        self.assertTrue(shared)
        self.assertEqual(len(shared), summary["transactions"]["sent"])
        for transaction in shared.values():
            payload = encode_message(Transactions((transaction,)))
            for node in simulation.nodes:
                self.assertIs(node.peers.shared_transactions, shared)
                decoded = node.peers.decode(payload)
                assert isinstance(decoded, Transactions)
                self.assertIs(decoded.transactions[0], transaction)


class PartitionTests(SimulationTestCase):
    """
    A partition heals to the heaviest side.
    """

    def test_heals_to_heaviest_side(self) -> None:
        """
        Split 8 miners from 4 for 150 s: each side grows its own chain; after
        the heal every node follows the heavier side's chain (the lighter
        side's blocks of the partition become stale).
        """
        heads: dict[str, tuple[int, bytes, int]] = {}

        def setup(simulation: Simulation) -> None:
            def record() -> None:
                for side, node in (("heavy", simulation.nodes[0]), ("light", simulation.nodes[11])):
                    assert node.core is not None
                    head = node.core.chain.head
                    heads[side] = (head.header.number, head.header.hash, head.total_difficulty)

            simulation.time.at(START + 189.9, record)

        scenario = replace(
            SMALL, nodes=12, miners=12, blocks=25, setup=setup,
            events=(
                Event("partition", at=40, groups=(tuple(range(8)), tuple(range(8, 12)))),
                Event("heal", at=190),
            ),
        )
        simulation, summary = self.simulate(scenario)
        self.assertTrue(summary["converged"])
        self.assertEqual(len(summary["heal_converge_s"]), 1)
        self.assertGreater(summary["stale_rate"], 0)
        self.assertGreater(heads["heavy"][2], heads["light"][2])
        self.assertNotEqual(heads["heavy"][1], heads["light"][1])
        for node in simulation.nodes:
            assert node.core is not None
            store = node.core.chain.store
            self.assertEqual(read_canonical_hash(store, heads["heavy"][0]), heads["heavy"][1])
            self.assertNotEqual(read_canonical_hash(store, heads["light"][0]), heads["light"][1])
        self.assertEqual(summary["honest_punished"], 0)


class HostileTests(SimulationTestCase):
    """
    Hostile peers are punished; honest nodes are not.
    """

    def test_hostile_fraction_punished(self) -> None:
        """
        A quarter of the network runs the punishing attacks (an invalid
        block, garbage, a flood, a huge frame before the hello, a liar's
        claims, never-valid transactions, repeated blocks): every hostile
        peer is punished by the honest nodes it attacked, no honest node is
        punished, and the honest nodes agree on one chain.
        """
        scenario = replace(SMALL, nodes=28, hostile=0.25, blocks=8)
        _, summary = self.simulate(scenario)
        self.assertEqual((summary["hostile_peers"], summary["honest_nodes"]), (7, 21))
        self.assertEqual(summary["hostile_punished"], 7)
        self.assertEqual(summary["honest_punished"], 0)
        self.assertTrue(summary["converged"])
        self.assertEqual(sorted(summary["attacks"]), sorted(PUNISHING_ATTACKS))
        for attack in summary["attacks"].values():
            self.assertEqual(attack["punished"], attack["peers"])


class RestartTests(SimulationTestCase):
    """
    A node that crashed and restarts catches up from its kept store.
    """

    def test_crash_and_restart_catches_up(self) -> None:
        """
        Node 2 crashes (no goodbye), blocks are mined without it, it
        restarts from the store it had, and catches up with the network.
        """
        seen: dict[str, int] = {}

        def setup(simulation: Simulation) -> None:
            node = simulation.nodes[2]

            def before() -> None:
                assert node.core is not None
                seen["at crash"] = node.core.chain.head.header.number

            def after() -> None:
                assert node.core is not None
                seen["at restart"] = node.core.chain.head.header.number
                seen["network at restart"] = max(
                    other.core.chain.head.header.number for other in simulation.nodes if other.core is not None
                )

            simulation.time.at(START + 79.9, before)
            simulation.time.at(START + 160.0001, after)

        scenario = replace(
            SMALL, blocks=16, setup=setup,
            events=(Event("crash", at=80, nodes=(2,)), Event("restart", at=160, nodes=(2,))),
        )
        simulation, summary = self.simulate(scenario)
        self.assertGreater(seen["at crash"], 0)
        self.assertEqual(seen["at restart"], seen["at crash"])
        self.assertGreater(seen["network at restart"], seen["at restart"])
        self.assertEqual(len(summary["restart_catch_up_s"]), 1)
        self.assertEqual(simulation.nodes[2].starts, 2)
        self.assertTrue(summary["converged"])
        self.assertEqual(summary["still_catching_up"], [])
