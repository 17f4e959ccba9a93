"""
A simulation: the nodes of a scenario on the simulated network and time,
its miners and transaction load, its events and hostile peers, what it
measures, and the summary (C{docs/simulation.md}).
"""

import gc
import hashlib
import math
import random
import time as wallclock
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from twisted.logger import Logger
from twisted.python.failure import Failure

from nodex.crypto import keccak256
from nodex.db.schema import read_body_rlp, read_canonical_hash
from nodex.api.chain import ChainEvent
from nodex.p2p.identity import NodeKey
from nodex.simulation.clock import SimulatedTime
from nodex.simulation.network import SimulatedNetwork
from nodex.simulation.node import P2P_PORT, SimulatedNode, node_key_of
from nodex.simulation.scenario import Event, Scenario, ScenarioError
from nodex.structures.blocks import Block, decode_body
from nodex.structures.transactions import LegacyTransaction, Transaction, sign_transaction

log = Logger()

START = 1_767_225_600.0
"""The simulated time at the start of every run: 2026-01-01 00:00:00 UTC."""

SHARES = (50, 90, 100)
"""The shares of the nodes (percent) whose propagation times are reported."""

SETTLING_BLOCKS = 3
"""The most blocks mined after the last one to settle a tie between heads."""

REGTEST_CHAIN_ID = 33

SENDER_KEYS = tuple(keccak256(b"cow" + (str(index).encode() if index else b"")) for index in range(10))
"""The regtest genesis's funded keys (the cow accounts, DESIGN §2): the transaction load's senders."""


def honest_address(index: int) -> str:
    """
    The IP address of honest node C{index}: in 198.18.0.0/15, the range
    set aside for benchmarks (RFC 2544), so that no simulated address is
    anyone's real one.
    """
    return f"198.18.{index // 250}.{index % 250 + 1}"


def hostile_address(index: int) -> str:
    """
    The IP address of hostile peer C{index}.
    """
    return f"198.19.{index // 250}.{index % 250 + 1}"


SHARED_TRANSACTIONS = 4096
"""
The clients' transactions the nodes' peer networks know beyond their pools
(the most recent; C{docs/simulation.md}, "Cost").
"""


YOUNG_GENERATION = 100_000
"""
The garbage collector's youngest generation during a run: a young
collection when the tracked objects grew by 100,000 since the last one,
instead of Python's 700.  A simulation's messages, Deferreds and
coroutines mostly live for one simulated turn; with 700 many of them are
still alive at a young collection, are promoted, and each full collection
walks the objects of every node in the process (200 nodes x 10 blocks:
7.4 of 60 CPU s in the collector, 2.7 s with 10,000).  With 10,000 the
middle collections still took 1.4 of 97 CPU s at 200 nodes x 30 blocks,
0.05 s with 100,000; the young ones 2.6 and 1.9 s (C{benchmarks/RESULTS.md},
session 11).
"""


class Trace:
    """
    The run's event trace and its digest: events are tuples of integers
    (a kind, node numbers, sizes, hash prefixes), stamped with the
    simulated time in microseconds; two runs with the same digest saw the
    same events at the same times.
    """

    def __init__(self, time: SimulatedTime, out: IO[str] | None = None) -> None:
        self._time = time
        self._hash = hashlib.sha256()
        self._batch: list[tuple[int, ...]] = []
        self._out = out
        self.events = 0

    def __call__(self, event: tuple[int, ...]) -> None:
        batch = self._batch
        batch.append((round((self._time.now - START) * 1_000_000),) + event)
        if len(batch) >= 8192:
            self.flush()

    def flush(self) -> None:
        """
        Hash the events recorded so far (and write them, one a line).
        """
        batch, self._batch = self._batch, []
        self.events += len(batch)
        if batch:
            self._hash.update(repr(batch).encode())
            if self._out is not None:
                self._out.write("".join(f"{event}\n" for event in batch))

    def digest(self) -> str:
        """
        The digest of every event so far.
        """
        self.flush()
        return self._hash.hexdigest()[:32]


# Trace event kinds (the network's are 1-4: connected, segment, closed, reset).
MINED, STORED, PUNISHED, ACTION, TRANSACTION = 10, 11, 12, 13, 14


@dataclass
class BlockRecord:
    """
    One block seen by the honest nodes.

    @ivar first_at: the simulated time it was first stored by any node.
    @ivar mined_by: the honest node that mined it (L{None}: another source).
    @ivar population: the honest nodes running when it was mined.
    @ivar arrivals: when each honest node first stored it.
    """

    number: int
    first_at: float
    mined_by: int | None = None
    settling: bool = False
    population: tuple[int, ...] = ()
    arrivals: dict[int, float] = field(default_factory=dict)


@dataclass
class Punishment:
    """
    An honest node's punishment of a peer, as its reputation service recorded it.
    """

    at: float
    by: int
    kind: str
    target: str
    role: str
    index: int
    counters: dict[str, int]


class Simulation:
    """
    One run of a scenario.

    @ivar time: the simulated time.
    @ivar network: the simulated network.
    @ivar nodes: the honest nodes, by number (joined ones after the first).
    @ivar hostile: the hostile peers.
    """

    def __init__(
        self,
        scenario: Scenario,
        workdir: Path,
        progress: Callable[[str], None] | None = None,
        trace_out: IO[str] | None = None,
    ) -> None:
        """
        @param workdir: a folder for the nodes' data directories (their node keys).
        @param progress: told a progress line every few wall-clock seconds.
        @param trace_out: where to write the event trace, one event a line.
        """
        self.scenario = scenario.check()
        self.workdir = workdir
        self._progress = progress
        self.time = SimulatedTime(START)
        self.trace = Trace(self.time, trace_out)
        seed = scenario.seed
        self.network = SimulatedNetwork(self.time, scenario.links, seed, self.trace)
        self._rng_topology = random.Random(f"{seed}/topology")
        self._rng_mining = random.Random(f"{seed}/mining")
        self._rng_load = random.Random(f"{seed}/load")
        self._rng_events = random.Random(f"{seed}/events")
        self._rng_skew = random.Random(f"{seed}/skew")
        self.nodes: list[SimulatedNode] = []
        self.hostile: list[Any] = []
        self.blocks: dict[bytes, BlockRecord] = {}
        self.punishments: list[Punishment] = []
        self._punished_seen: set[tuple[int, str, str]] = set()
        self._identities: dict[str, tuple[str, int]] = {}
        self._heads: dict[int, bytes] = {}
        self._head_counts: Counter[bytes] = Counter()
        self._catching_up: dict[int, tuple[str, float, int]] = {}
        self.catch_up: dict[str, list[float]] = {"join": [], "restart": []}
        self.heal_converge: list[float] = []
        self._healed_at: float | None = None
        self._partitioned = False
        self._mining = False
        self._mined = 0
        self._mining_pending = 0
        self.mine_failures = 0
        self._settling = 0
        self._finished = False
        self.timed_out = False
        self._block_events: dict[int, list[Event]] = {}
        self.transactions = Counter[str]()
        # The clients' transactions (the last SHARED_TRANSACTIONS), which
        # every node's peer network finds by hash instead of decoding its
        # peers' copies and recovering their senders again.
        self.shared_transactions: OrderedDict[bytes, Transaction] = OrderedDict()
        self._nonces: dict[bytes, int] = {}
        self._mining_started_at: float | None = None
        self._bytes_at_start: int = 0
        self._wall_started = 0.0
        self._last_progress = 0.0
        self.summary: dict[str, Any] | None = None
        self._miner_weights: list[float] = []

    # Building the network

    def _honest_layer(self, index: int, bootstrap: list[int]) -> dict[str, Any]:
        """
        The configuration layer of honest node C{index}.
        """
        from nodex.config import merge

        coinbase = keccak256(b"nodex-simulation/coinbase/" + str(index).encode())[:20]
        layer: dict[str, Any] = {
            "network": "regtest",
            "rpc": {"endpoint": "none", "ws": "none"},
            "p2p": {
                "endpoint": f"tcp:{P2P_PORT}",
                "peers": [f"{honest_address(peer)}:{P2P_PORT}" for peer in bootstrap],
                # The public networks' relay waits (regtest's preset sends
                # transactions and fetches announced blocks at once).
                "transaction_delay": 1.0,
                "fetch_delay": 0.5,
            },
            "mining": {"mode": "manual", "coinbase": "0x" + coinbase.hex()},
        }
        if self.scenario.topology in ("random", "given"):
            layer["p2p"]["max_outbound"] = max(1, len(bootstrap))
        return merge(layer, self.scenario.node)

    def _bootstrap(self, index: int, existing: list[int]) -> list[int]:
        """
        The peers node C{index} is told to dial.
        """
        scenario = self.scenario
        if scenario.topology == "given":
            return [to for source, to in scenario.graph if source == index]
        candidates = [peer for peer in existing if peer != index]
        if scenario.topology == "random":
            return self._rng_topology.sample(candidates, min(scenario.degree, len(candidates)))
        return self._rng_topology.sample(candidates, min(scenario.bootstrap, len(candidates)))

    def add_node(self, existing: list[int] | None = None) -> SimulatedNode:
        """
        A new honest node (not started), bootstrapped from C{existing} nodes
        (by default the nodes made so far).
        """
        scenario = self.scenario
        index = len(self.nodes)
        peers = self._bootstrap(index, existing if existing is not None else [node.index for node in self.nodes])
        key = node_key_of(scenario.seed, index)
        node_id = NodeKey.from_private_key(key).node_id
        skew = scenario.skew.sample(self._rng_skew)
        node = SimulatedNode(
            self.time, self.network, index, honest_address(index), key, node_id, skew, self.workdir,
            self._honest_layer(index, peers), f"{scenario.seed}/node/{index}",
            scenario.drift_limit or None, scenario.writer_job_ms / 1000, f"node {index}",
        )
        node.shared_transactions = self.shared_transactions
        self.nodes.append(node)
        self._identities[node_id.hex()[:8]] = ("honest", index)
        self._identities[node.address] = ("honest", index)
        return node

    def build(self) -> None:
        """
        Make the honest nodes and the hostile peers of the scenario.
        """
        scenario = self.scenario
        for _ in range(scenario.honest_count):
            self.add_node()
        miners = min(scenario.miners, scenario.honest_count)
        shares = list(scenario.shares) if scenario.shares else [1.0] * miners
        self._miner_weights = shares[:miners]
        if scenario.hostile_count:
            from nodex.simulation.hostile import make_hostile_peers

            self.hostile = make_hostile_peers(self, scenario.hostile_count)
            for peer in self.hostile:
                self._identities[peer.node_id.hex()[:8]] = ("hostile", peer.index)
                self._identities[peer.address] = ("hostile", peer.index)

    # Node lifecycle

    def start_node(self, node: SimulatedNode, why: str = "start") -> None:
        """
        Start an honest node; a node that joins or restarts is timed until it catches up.
        """
        self.trace((ACTION, 1, node.index))
        node.start(self._adopted, self._side, self._punished)
        assert node.core is not None
        head = node.core.chain.head
        self._set_head(node.index, head.header.hash)
        if why in ("join", "restart"):
            target = max(
                (other.core.chain.head.total_difficulty for other in self.nodes if other.up and other is not node
                 and other.core is not None),
                default=0,
            )
            if head.total_difficulty < target:
                self._catching_up[node.index] = (why, self.time.now, target)
            else:
                self.catch_up[why].append(0.0)

    def _node_down(self, node: SimulatedNode) -> None:
        old = self._heads.pop(node.index, None)
        if old is not None:
            self._head_counts[old] -= 1
            if not self._head_counts[old]:
                del self._head_counts[old]
        self._catching_up.pop(node.index, None)

    def crash_node(self, node: SimulatedNode) -> None:
        """
        Kill an honest node (its stores kept).
        """
        if node.state == "down":
            return
        self.trace((ACTION, 2, node.index))
        self._node_down(node)
        node.crash()

    def stop_node(self, node: SimulatedNode) -> None:
        """
        Stop an honest node cleanly.
        """
        if not node.up:
            return
        self.trace((ACTION, 3, node.index))
        self._node_down(node)
        node.stop().addErrback(lambda failure: log.failure("stopping node {index} failed", failure, index=node.index))

    def live_nodes(self) -> list[SimulatedNode]:
        """
        The honest nodes that run now.
        """
        return [node for node in self.nodes if node.up]

    # Instruments (observers of the nodes' public interfaces)

    def _set_head(self, index: int, head: bytes) -> None:
        old = self._heads.get(index)
        if old == head:
            return
        if old is not None:
            self._head_counts[old] -= 1
            if not self._head_counts[old]:
                del self._head_counts[old]
        self._heads[index] = head
        self._head_counts[head] += 1

    @property
    def converged(self) -> bool:
        """
        Whether every running honest node has the same head.
        """
        return len(self._head_counts) == 1

    def _arrived(self, node: SimulatedNode, block: Block) -> None:
        record = self.blocks.get(block.hash)
        now = self.time.now
        if record is None:
            population = tuple(other.index for other in self.nodes if other.up)
            record = self.blocks[block.hash] = BlockRecord(block.number, now, population=population)
        if node.index not in record.arrivals:
            record.arrivals[node.index] = now
            self.trace((STORED, node.index, int.from_bytes(block.hash[:4], "big")))

    def _adopted(self, node: SimulatedNode, event: ChainEvent) -> None:
        for block in event.adopted:
            self._arrived(node, block)
        if node.core is None:
            return
        head = node.core.chain.head
        self._set_head(node.index, head.header.hash)
        catching = self._catching_up.get(node.index)
        if catching is not None and head.total_difficulty >= catching[2]:
            del self._catching_up[node.index]
            self.catch_up[catching[0]].append(self.time.now - catching[1])
        if self._healed_at is not None and self.converged:
            self.heal_converge.append(self.time.now - self._healed_at)
            self._healed_at = None

    def _side(self, node: SimulatedNode, block: Block) -> None:
        self._arrived(node, block)

    def _punished(self, node: SimulatedNode) -> None:
        """
        A node's reputation service punished someone or banned an address:
        note every record of a simulated peer punished so far.
        """
        if node.core is None:
            return
        for record in node.core.reputation.peer_records():
            if not record.punishments:
                continue
            key = (node.index, record.kind, record.id)
            if key in self._punished_seen:
                continue
            self._punished_seen.add(key)
            role, index = self._identities.get(record.id, ("unknown", -1))
            counters = {name: count for name, count in record.counters.items() if count}
            self.punishments.append(Punishment(self.time.now, node.index, record.kind, record.id, role, index, counters))
            self.trace((PUNISHED, node.index, index, 1 if role == "honest" else 0))
            if role == "honest":
                log.warn(
                    "honest node {target} ({kind} {id}) punished by node {by}: {counters}",
                    target=index, kind=record.kind, id=record.id, by=node.index, counters=counters,
                )

    # Mining

    def _start_mining(self) -> None:
        self._mining = True
        self._mining_started_at = self.time.now
        self._bytes_at_start = sum(node.host.counters.sent for node in self.nodes)
        self._schedule_find()
        self._schedule_transaction()

    def _schedule_find(self) -> None:
        self.time.later(self._rng_mining.expovariate(1.0 / self.scenario.block_time), self._find)

    def _find(self) -> None:
        """
        The lottery: some miner found a block (a share's chance); if it runs, it mines.
        """
        if not self._mining:
            return
        if self._mined + self._mining_pending >= self.scenario.blocks:
            self._mining = False
            return
        weights = self._miner_weights
        miner = self.nodes[self._rng_mining.choices(range(len(weights)), weights)[0]] if weights else None
        self._schedule_find()
        if miner is None or not miner.up:
            return
        self._mine(miner, settling=False)

    def _mine(self, miner: SimulatedNode, settling: bool) -> None:
        assert miner.core is not None
        self._mining_pending += 1
        miner.core.making.miner.mine().addBoth(self._mined_one, miner, settling)

    def _mined_one(self, result: Any, miner: SimulatedNode, settling: bool) -> None:
        self._mining_pending -= 1
        if isinstance(result, Failure) or result is None:
            self.mine_failures += 1
            if isinstance(result, Failure):
                log.info("node {index} could not mine: {why}", index=miner.index, why=result.getErrorMessage())
            if settling:
                self.time.later(self.scenario.settle, self._settle)
            elif not self._mining and self._mined + self._mining_pending < self.scenario.blocks:
                # The lottery stopped counting on this block: it goes on.
                self._mining = True
                self._schedule_find()
            return
        record = self.blocks.get(result.hash)
        if record is not None:
            record.mined_by = miner.index
            record.settling = settling
        self.trace((MINED, miner.index, result.number, int.from_bytes(result.hash[:4], "big")))
        if settling:
            self.time.later(self.scenario.settle, self._settle)
            return
        self._mined += 1
        for event in self._block_events.pop(self._mined, []):
            self._apply(event)
        if self._mined >= self.scenario.blocks and not self._mining_pending:
            self._mining = False
            self.time.later(self.scenario.settle, self._settle)

    def _settle(self) -> None:
        """
        Mining is over: end when the heads agree; otherwise (a tie between
        heads) let the biggest running miner mine one more block, at most
        L{SETTLING_BLOCKS} times.
        """
        if self.converged or self._settling >= SETTLING_BLOCKS or self._partitioned:
            self.finish()
            return
        live = [node for node in self.nodes[: len(self._miner_weights)] if node.up]
        candidates = live or self.live_nodes()
        if not candidates:
            self.finish()
            return
        miner = max(candidates, key=lambda node: (self._weight(node.index), -node.index))
        self._settling += 1
        self._mine(miner, settling=True)

    def _weight(self, index: int) -> float:
        return self._miner_weights[index] if index < len(self._miner_weights) else 0.0

    # Transactions

    def _schedule_transaction(self) -> None:
        rate = self.scenario.transactions_per_block / self.scenario.block_time
        if rate > 0 and self._mining:
            self.time.later(self._rng_load.expovariate(rate), self._send_transaction)

    def _send_transaction(self) -> None:
        """
        A client sends a transfer to a running honest node (as
        C{eth_sendRawTransaction} would hand it to the pool).
        """
        if not self._mining:
            return
        self._schedule_transaction()
        live = self.live_nodes()
        if not live:
            return
        senders = SENDER_KEYS[: max(1, min(self.scenario.senders, len(SENDER_KEYS)))]
        key = senders[self._rng_load.randrange(len(senders))]
        node = live[self._rng_load.randrange(len(live))]
        nonce = self._nonces.get(key, 0)
        self._nonces[key] = nonce + 1
        recipient = keccak256(b"nodex-simulation/recipient/" + str(self._rng_load.randrange(1000)).encode())[:20]
        transaction = sign_transaction(
            LegacyTransaction(nonce=nonce, gas_price=1, gas=21_000, to=recipient, value=1, data=b""),
            key, REGTEST_CHAIN_ID,
        )
        assert node.core is not None
        shared = self.shared_transactions
        shared[transaction.hash] = transaction
        if len(shared) > SHARED_TRANSACTIONS:
            shared.popitem(last=False)
        self.transactions["sent"] += 1
        self.trace((TRANSACTION, node.index, int.from_bytes(transaction.hash[:4], "big")))

        def refused(failure: Failure) -> None:
            self.transactions["refused"] += 1
            log.info("node {index} refused a transaction: {why}", index=node.index, why=failure.getErrorMessage())

        node.core.making.pool.add(transaction).addCallbacks(lambda _: self.transactions.update(["accepted"]), refused)

    # Events

    def _schedule_events(self) -> None:
        for event in self.scenario.events:
            if event.at is not None:
                self.time.at(START + event.at, self._apply, event)
            else:
                assert event.at_block is not None
                self._block_events.setdefault(event.at_block, []).append(event)

    def _targets(self, event: Event, candidates: list[SimulatedNode]) -> list[SimulatedNode]:
        if event.nodes:
            try:
                return [self.nodes[index] for index in event.nodes]
            except IndexError:
                raise ScenarioError(f"the {event.action} event names a node that does not exist") from None
        count = event.count or (round(event.fraction * len(candidates)) if event.fraction else 0)
        return sorted(self._rng_events.sample(candidates, min(count, len(candidates))), key=lambda node: node.index)

    def _apply(self, event: Event) -> None:
        """
        Carry out a scenario event.
        """
        action = event.action
        self.trace((ACTION, 10 + ACTIONS_ORDER.index(action)))
        log.info("simulation event: {action}", action=action)
        if action == "partition":
            self._partition(event)
        elif action == "heal":
            self.network.heal()
            self._partitioned = False
            self._healed_at = self.time.now
            if self.converged:
                self.heal_converge.append(0.0)
                self._healed_at = None
        elif action == "crash":
            for node in self._targets(event, self.live_nodes()):
                self.crash_node(node)
        elif action == "stop":
            for node in self._targets(event, self.live_nodes()):
                self.stop_node(node)
        elif action in ("restart", "start"):
            for node in self._targets(event, [node for node in self.nodes if node.state == "down"]):
                if node.state == "down":
                    self.start_node(node, "restart")
        elif action == "join":
            existing = [node.index for node in self.live_nodes()]
            for _ in range(event.count or len(event.nodes) or 1):
                self.start_node(self.add_node(existing), "join")
        elif action == "skew":
            for node in self._targets(event, self.live_nodes()):
                node.clock.skew += event.seconds

    def _partition(self, event: Event) -> None:
        if event.groups:
            groups = [[self.nodes[index].address for index in group] for group in event.groups]
        else:
            side = self._targets(Event("partition", at=0, fraction=event.fraction or 0.5, count=event.count),
                                 list(self.nodes))
            chosen = {node.index for node in side}
            groups = [
                [node.address for node in self.nodes if node.index in chosen],
                [node.address for node in self.nodes if node.index not in chosen],
            ]
        # Hostile peers stay with the larger side.
        groups.sort(key=len, reverse=True)
        groups[0] = groups[0] + [peer.address for peer in self.hostile]
        self.network.partition(groups)
        self._partitioned = True
        self._healed_at = None

    # Running

    def run(self) -> dict[str, Any]:
        """
        Build the network, run the scenario to its end, and return the
        summary; with the garbage collector's youngest generation at
        L{YOUNG_GENERATION} objects for the run (C{docs/simulation.md},
        "Cost").
        """
        thresholds = gc.get_threshold()
        gc.set_threshold(YOUNG_GENERATION, *thresholds[1:])
        try:
            return self._run()
        finally:
            gc.set_threshold(*thresholds)

    def _run(self) -> dict[str, Any]:
        self._wall_started = wallclock.monotonic()
        self._last_progress = self._wall_started
        self.build()
        for node in list(self.nodes):
            self.start_node(node)
        for peer in self.hostile:
            self.time.later(self.scenario.warmup / 2, peer.start)
        self._schedule_events()
        if self.scenario.setup is not None:
            self.scenario.setup(self)
        if self.scenario.blocks:
            self.time.later(self.scenario.warmup, self._start_mining)
        else:
            self.time.later(self.scenario.warmup + self.scenario.settle, self.finish)
        scenario = self.scenario
        deadline = START + scenario.warmup + scenario.blocks * scenario.block_time * 5 + 3600 + scenario.settle * 5
        step = 10.0
        while not self._finished:
            if self.time.now >= deadline:
                self.timed_out = True
                self.finish()
                break
            self.time.run(until=min(self.time.now + step, deadline))
            if not self.time.pending and not self._finished:
                self.finish()
            self._report_progress()
        assert self.summary is not None
        return self.summary

    def _report_progress(self, force: bool = False) -> None:
        now = wallclock.monotonic()
        if self._progress is None or (not force and now - self._last_progress < 2.0):
            return
        self._last_progress = now
        heads = [node.core.chain.head.header.number for node in self.nodes if node.up and node.core is not None]
        self._progress(
            f"simulate: {self.time.now - START:9.0f} s simulated, {self._mined}/{self.scenario.blocks} blocks, "
            f"heads {min(heads, default=0)}-{max(heads, default=0)}, {len(heads)} nodes up, "
            f"{self.time.calls_run} calls, {now - self._wall_started:.0f} s wall"
        )

    def finish(self) -> None:
        """
        End the run: compute the summary, stop the time.
        """
        if self._finished:
            return
        self._finished = True
        self._punished_all()
        self.summary = self._summarise()
        self.time.stop()
        self._report_progress(force=True)

    def _punished_all(self) -> None:
        for node in self.live_nodes():
            self._punished(node)

    # The summary

    def _reference(self) -> SimulatedNode | None:
        """
        The running honest node whose head is the heaviest (the most
        common such head, then the lowest number).
        """
        live = [node for node in self.live_nodes() if node.core is not None]
        if not live:
            return None
        def weight(node: SimulatedNode) -> tuple[int, int, int]:
            assert node.core is not None
            head = node.core.chain.head
            return (head.total_difficulty, self._head_counts[head.header.hash], -node.index)
        return max(live, key=weight)

    def _canonical(self, node: SimulatedNode) -> tuple[set[bytes], set[bytes]]:
        """
        The hashes of C{node}'s canonical chain and of the uncles it names.
        """
        assert node.core is not None
        store = node.core.chain.store
        canonical: set[bytes] = set()
        uncles: set[bytes] = set()
        for number in range(1, node.core.chain.head.header.number + 1):
            block_hash = read_canonical_hash(store, number)
            if block_hash is None:
                break
            canonical.add(block_hash)
            body = read_body_rlp(store, block_hash)
            if body is not None:
                _, block_uncles = decode_body(body)
                uncles.update(uncle.hash for uncle in block_uncles)
        return canonical, uncles

    def _propagation(self) -> dict[str, dict[str, float | None]]:
        measured = [record for record in self.blocks.values() if record.mined_by is not None and not record.settling]
        delays: dict[int, list[float]] = {share: [] for share in SHARES}
        for record in measured:
            population = record.population
            if not population:
                continue
            times = sorted(record.arrivals[index] - record.first_at for index in population if index in record.arrivals)
            for share in SHARES:
                needed = max(1, math.ceil(share / 100 * len(population)))
                if len(times) >= needed:
                    delays[share].append(times[needed - 1] * 1000)
        return {str(share): percentiles(values) for share, values in delays.items()}

    def propagation_curves(self) -> list[tuple[int, list[float]]]:
        """
        For each measured block, the number of nodes that ran when it was
        mined, and the seconds after it was mined at which each of them
        stored it, in order.
        """
        curves = []
        for record in self.blocks.values():
            if record.mined_by is None or record.settling or not record.population:
                continue
            curves.append((len(record.population), sorted(
                record.arrivals[index] - record.first_at for index in record.population if index in record.arrivals
            )))
        return curves

    def _summarise(self) -> dict[str, Any]:
        scenario = self.scenario
        reference = self._reference()
        canonical, uncles = self._canonical(reference) if reference is not None else (set(), set())
        measured = [record for record in self.blocks.values() if record.mined_by is not None and not record.settling]
        stale = [record for hash_, record in self.blocks.items() if record.mined_by is not None and hash_ not in canonical]
        stale_measured = [hash_ for hash_, record in self.blocks.items()
                          if record.mined_by is not None and not record.settling and hash_ not in canonical]
        uncled = [hash_ for hash_ in stale_measured if hash_ in uncles]
        honest = len(self.nodes)
        sent = sum(node.host.counters.sent for node in self.nodes) - self._bytes_at_start
        canonical_mined = sum(1 for record in self.blocks.values() if record.mined_by is not None) - len(stale)
        punished_honest = sorted({p.index for p in self.punishments if p.role == "honest"})
        propagation = self._propagation()
        hostile_punished = sorted({p.index for p in self.punishments if p.role == "hostile"})
        heads = Counter(self._heads.values())
        summary: dict[str, Any] = {
            "nodes": scenario.nodes,
            "blocks": self._mined,
            "seed": scenario.seed,
            "digest": self.trace.digest(),
            "converged": bool(self.converged and not self.timed_out),
            "honest_punished": len(punished_honest),
            "propagation_ms": propagation["90"],
            "stale_rate": round(len(stale_measured) / len(measured), 4) if measured else 0.0,
            "bytes_per_node_per_block": round(sent / honest / max(1, canonical_mined)) if honest else 0,
            "wall_s": round(wallclock.monotonic() - self._wall_started, 1),
            "scenario": scenario.name,
            "honest_nodes": honest,
            "hostile_peers": len(self.hostile),
            "hostile_punished": len(hostile_punished),
            "propagation_ms_by_share": propagation,
            "uncle_rate": round(len(uncled) / len(measured), 4) if measured else 0.0,
            "block_time_s": scenario.block_time,
            "settling_blocks": self._settling,
            "mine_failures": self.mine_failures,
            "height": reference.core.chain.head.header.number if reference is not None and reference.core else 0,
            "heads": len(heads),
            "nodes_up": sum(heads.values()),
            "heal_converge_s": [round(value, 3) for value in self.heal_converge],
            "newcomer_sync_s": [round(value, 3) for value in self.catch_up["join"]],
            "restart_catch_up_s": [round(value, 3) for value in self.catch_up["restart"]],
            "still_catching_up": sorted(self._catching_up),
            "transactions": dict(sorted(self.transactions.items())),
            "punished_honest_nodes": punished_honest,
            "punishments": len(self.punishments),
            "connections": self.network.connections_made,
            "simulated_s": round(self.time.now - START, 3),
            "calls": self.time.calls_run,
            "errors": self.time.errors,
            "timed_out": self.timed_out,
            "partitioned_at_end": self._partitioned,
        }
        if self.hostile:
            from nodex.simulation.hostile import attack_outcomes

            summary["attacks"] = attack_outcomes(self.hostile, set(hostile_punished))
        return summary


ACTIONS_ORDER = ("partition", "heal", "crash", "restart", "stop", "start", "join", "skew")


def percentiles(values: list[float]) -> dict[str, float | None]:
    """
    The 50th, 90th and 99th percentiles (nearest rank) of C{values}, rounded to 0.1.
    """
    if not values:
        return {"p50": None, "p90": None, "p99": None}
    ordered = sorted(values)

    def rank(percent: float) -> float:
        return round(ordered[max(0, math.ceil(percent / 100 * len(ordered)) - 1)], 1)

    return {"p50": rank(50), "p90": rank(90), "p99": rank(99)}


__all__ = ["BlockRecord", "Punishment", "START", "Simulation", "Trace", "honest_address", "hostile_address", "percentiles"]
