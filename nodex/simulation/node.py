"""
One simulated node: a machine on the simulated network (its address, its
clock, its disk) and, while it runs, the node the composition root makes
for it (L{nodex.node.compose_core}: the chain, the pool, the miner, the
reputation service and the peer network, the same services a node runs).
"""

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from twisted.internet.defer import Deferred, maybeDeferred

from nodex.config import NodeConfig, load_config, merge
from nodex.api.chain import ChainEvent
from nodex.p2p.identity import NODE_KEY_FILE
from nodex.p2p.network import PeerNetwork
from nodex.simulation.clock import NodeClock, SimulatedTime
from nodex.simulation.network import SimulatedHost, SimulatedNetwork
from nodex.simulation.platform import SimulatedPlatform
from nodex.structures.blocks import Block
from nodex.structures.transactions import Transaction
from nodex.node import NodeCore, compose_core

P2P_PORT = 50501
"""The port every simulated node listens on (the reference's regtest port)."""

UP, STOPPING, DOWN = "up", "stopping", "down"


class SimulatedNode:
    """
    One honest node of a simulation.

    @ivar index: the node's number (its place in the trace).
    @ivar address: its IP address on the simulated network.
    @ivar node_id: its node id (the public key of its node key).
    @ivar core: its services while it runs, else L{None}.
    @ivar state: C{"up"}, C{"stopping"} or C{"down"}.
    @ivar starts: how many times it started.
    """

    def __init__(
        self,
        time: SimulatedTime,
        network: SimulatedNetwork,
        index: int,
        address: str,
        private_key: bytes,
        node_id: bytes,
        skew: float,
        workdir: Path,
        layer: Mapping[str, Any],
        seed: str,
        drift_limit: int | None,
        writer_job_seconds: float,
        label: str = "",
    ) -> None:
        """
        @param layer: the configuration layer of this node (laid over the regtest preset).
        @param seed: the seed of the node's randomness.
        @param label: the node's name in the log.
        """
        self.index = index
        self.address = address
        self.node_id = node_id
        self.clock = NodeClock(time, skew, label)
        self.host: SimulatedHost = network.add_host(address, self.clock, index)
        self.platform = SimulatedPlatform(self.host, seed, drift_limit, writer_job_seconds)
        self.datadir = workdir / f"node-{index}"
        self.datadir.mkdir(parents=True, exist_ok=True)
        (self.datadir / NODE_KEY_FILE).write_text(private_key.hex() + "\n")
        self.layer = merge({"datadir": str(self.datadir)}, layer)
        self.core: NodeCore | None = None
        self.shared_transactions: Mapping[bytes, Transaction] | None = None
        """The simulation's clients' transactions, known to the node's peer network (C{docs/simulation.md}, "Cost")."""
        self.state = DOWN
        self.starts = 0
        self._config: NodeConfig | None = None

    @property
    def config(self) -> NodeConfig:
        """
        The node's configuration (the regtest preset, then its layer).
        """
        if self._config is None:
            self._config = load_config(None, dict(self.layer))
        return self._config

    @property
    def up(self) -> bool:
        """
        Whether the node runs.
        """
        return self.state == UP

    @property
    def peers(self) -> PeerNetwork:
        """
        The running node's peer network.
        """
        assert self.core is not None and isinstance(self.core.peers, PeerNetwork)
        return self.core.peers

    def start(
        self,
        adopted: Callable[["SimulatedNode", ChainEvent], None],
        side: Callable[["SimulatedNode", Block], None],
        punished: Callable[["SimulatedNode"], None],
    ) -> None:
        """
        Compose the node on its platform and start it (from its stores when it ran before).

        @param adopted: told of each change of its canonical chain.
        @param side: told of each block it stores off its canonical chain.
        @param punished: told when its reputation service punished a peer or banned an address.
        """
        assert self.state == DOWN
        self.host.restart(self.clock)
        core = compose_core(self.config, self.clock, self.platform)
        core.attach_peers()
        if isinstance(core.peers, PeerNetwork):
            core.peers.shared_transactions = self.shared_transactions
        core.chain.add_observer(lambda event: adopted(self, event))
        core.chain.add_side_observer(lambda block: side(self, block))
        core.reputation.add_ban_observer(lambda: punished(self))
        self.core = core
        self.state = UP
        self.starts += 1
        time = self.clock.simulated_time
        time.current = self.clock
        try:
            core.node.startService()
        finally:
            time.current = None

    def stop(self) -> "Deferred[None]":
        """
        Stop the node cleanly (its peers are told); once stopped, its
        machine is down (no more calls of this run of the node).
        """
        assert self.core is not None and self.state == UP
        self.state = STOPPING
        node = self.core.node

        def stopped(result: Any) -> Any:
            self._down()
            return result

        return maybeDeferred(node.stopService).addBoth(stopped)

    def crash(self) -> None:
        """
        Kill the node: nothing of it runs from now on, its connections are
        reset, its stores keep what was written.
        """
        if self.state == DOWN:
            return
        self._down()

    def _down(self) -> None:
        self.clock.kill()
        self.platform.fence()
        self.host.crash()
        self.core = None
        self.state = DOWN


def node_key_of(seed: int, index: int, kind: str = "node") -> bytes:
    """
    The private node key of a simulated node, from the seed and its number.
    """
    from nodex.crypto import SECP256K1_N, keccak256

    counter = 0
    while True:
        key = keccak256(f"nodex-simulation/{seed}/{kind}/{index}/{counter}".encode())
        if 0 < int.from_bytes(key, "big") < SECP256K1_N:
            return key
        counter += 1


__all__ = ["DOWN", "P2P_PORT", "SimulatedNode", "STOPPING", "UP", "node_key_of"]
