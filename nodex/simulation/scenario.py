"""
Scenarios: what a simulation runs.  A scenario is a L{Scenario} value,
read from a small TOML file (L{load_scenario}) or made by a Python
function (C{module:function}); C{docs/simulation.md} lists every key.
"""

import importlib
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from nodex.errors import NodexError
from nodex.simulation.network import Distribution, LinkModel

SCENARIO_DIRECTORY = Path(__file__).parent / "scenarios"
"""The scenarios shipped with nodex, by file name (C{default.toml} ...)."""

ACTIONS = ("partition", "heal", "crash", "restart", "stop", "start", "join", "skew")
"""What an event may do."""


class ScenarioError(NodexError):
    """
    A scenario that cannot be run: an unknown key, a bad value.
    """


@dataclass(frozen=True)
class Event:
    """
    Something that happens during a run.

    @ivar action: one of L{ACTIONS}: C{partition} (the network splits:
        C{groups} lists the nodes of each side, or C{fraction} puts that
        share of the honest nodes on one side), C{heal}, C{crash} (the
        nodes' processes die: no goodbye, their stores kept), C{restart}
        (crashed or stopped nodes start again from their stores), C{stop}
        (a clean stop: the nodes leave), C{start} (the same as restart),
        C{join} (C{count} new nodes start with empty stores), C{skew}
        (the nodes' clocks jump by C{seconds}).
    @ivar at: seconds after the start of the run; or
    @ivar at_block: when this many blocks have been mined.
    @ivar nodes: the honest nodes it applies to, by number; or
    @ivar count: how many (drawn from the seed among those it may apply to).
    """

    action: str
    at: float | None = None
    at_block: int | None = None
    nodes: tuple[int, ...] = ()
    count: int = 0
    fraction: float = 0.0
    groups: tuple[tuple[int, ...], ...] = ()
    seconds: float = 0.0


@dataclass(frozen=True)
class Scenario:
    """
    A simulation's inputs.

    @ivar nodes: nodes in the network at the start (hostile ones included).
    @ivar blocks: blocks to mine, after which mining stops and the network settles.
    @ivar seed: the seed of every random draw.
    @ivar block_time: the mean seconds between blocks of the whole network.
    @ivar miners: how many honest nodes mine (the first ones).
    @ivar shares: each miner's share of the hash power, in the miners'
        order (empty: equal shares); normalised.
    @ivar transactions_per_block: the mean transactions sent per block time.
    @ivar senders: how many funded accounts send them.
    @ivar links: the links' model (latency, bandwidth, loss).
    @ivar topology: C{"exchange"}: each node is given C{bootstrap} earlier
        nodes to dial and finds the rest by peer exchange, as in
        production; C{"random"}: each node dials C{degree} nodes drawn from
        the seed (its C{p2p.max_outbound} becomes C{degree}); C{"given"}:
        each node dials the nodes C{graph} names for it (its
        C{p2p.max_outbound} becomes their number).
    @ivar graph: the dials of the C{"given"} topology, as C{(from, to)} node numbers.
    @ivar bootstrap: bootstrap peers per node (exchange).
    @ivar degree: outbound peers per node (random).
    @ivar skew: the distribution of the nodes' clock errors, in seconds
        (a C{"normal"} kind: mean C{value}, deviation C{sigma}).
    @ivar drift_limit: the simulated network's drift limit in seconds (0: none).
    @ivar writer_job_ms: the simulated time each job of a node's chain writer takes.
    @ivar warmup: seconds before mining starts (the peers find each other).
    @ivar settle: seconds without mining after the last block before the
        end (and between settling blocks, when the heads still differ).
    @ivar hostile: the share of the network's nodes that are scripted hostile peers.
    @ivar attacks: the attacks the hostile peers run, given out in turn.
    @ivar hostile_targets: how many honest nodes each hostile peer attacks.
    @ivar node: a configuration layer laid over every honest node's
        (C{docs/configuration.md}; e.g. C{{"p2p": {"max_outbound": 8}}}).
    @ivar events: what happens during the run.
    @ivar setup: a Python scenario's own code, called with the
        L{nodex.simulation.runner.Simulation} before the run (it may
        schedule anything through it).
    """

    name: str = "default"
    nodes: int = 200
    blocks: int = 1000
    seed: int = 1
    block_time: float = 30.0
    miners: int = 20
    shares: tuple[float, ...] = ()
    transactions_per_block: float = 2.0
    senders: int = 10
    links: LinkModel = field(default_factory=LinkModel)
    topology: str = "exchange"
    bootstrap: int = 2
    degree: int = 8
    graph: tuple[tuple[int, int], ...] = ()
    skew: Distribution = Distribution("normal", 0.0, sigma=1.0)
    drift_limit: int = 15
    writer_job_ms: float = 5.0
    warmup: float = 60.0
    settle: float = 60.0
    hostile: float = 0.0
    attacks: tuple[str, ...] = ()
    hostile_targets: int = 4
    node: Mapping[str, Any] = field(default_factory=dict)
    events: tuple[Event, ...] = ()
    setup: Callable[[Any], None] | None = None

    def check(self) -> "Scenario":
        """
        The scenario itself, once its values are checked.

        @raise ScenarioError: a value out of range.
        """
        if self.nodes < 1:
            raise ScenarioError(f"nodes must be at least 1, not {self.nodes}")
        if self.blocks < 0:
            raise ScenarioError(f"blocks must not be negative, not {self.blocks}")
        if self.block_time <= 0:
            raise ScenarioError(f"block_time must be positive, not {self.block_time}")
        if not 0 <= self.hostile < 1:
            raise ScenarioError(f"hostile must be at least 0 and below 1, not {self.hostile}")
        if self.topology not in ("exchange", "random", "given"):
            raise ScenarioError(f'topology must be "exchange", "random" or "given", not {self.topology!r}')
        for dial in self.graph:
            if len(dial) != 2 or dial[0] == dial[1] or not all(0 <= node < self.nodes for node in dial):
                raise ScenarioError(f"graph: {list(dial)} is not a dial between two of the nodes")
        if self.shares and len(self.shares) != self.miners:
            raise ScenarioError(f"shares names {len(self.shares)} miners, miners is {self.miners}")
        if any(share < 0 for share in self.shares) or (self.shares and not sum(self.shares)):
            raise ScenarioError("shares must be positive")
        for event in self.events:
            if event.action not in ACTIONS:
                raise ScenarioError(f"unknown event action {event.action!r}: want one of {', '.join(ACTIONS)}")
            if (event.at is None) == (event.at_block is None):
                raise ScenarioError(f"the {event.action} event needs one of at and at_block")
        from nodex.simulation.hostile import ATTACKS

        for attack in self.attacks:
            if attack not in ATTACKS:
                raise ScenarioError(f"unknown attack {attack!r}: want one of {', '.join(ATTACKS)}")
        return self

    @property
    def hostile_count(self) -> int:
        """
        How many of the nodes are hostile.
        """
        return round(self.nodes * self.hostile)

    @property
    def honest_count(self) -> int:
        """
        How many of the nodes are honest.
        """
        return self.nodes - self.hostile_count


def _distribution(value: Any, where: str, scale: float = 1.0) -> Distribution:
    """
    A distribution from a number (a constant) or a table
    (C{{kind = "lognormal", median = 50, sigma = 0.5}} ...), scaled.
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return Distribution("constant", float(value) * scale)
    if not isinstance(value, Mapping):
        raise ScenarioError(f"{where} must be a number or a table")
    table = dict(value)
    kind = table.pop("kind", "constant")
    known = {"value", "median", "mean", "low", "high", "sigma"}
    unknown = set(table) - known
    if unknown:
        raise ScenarioError(f"{where} has unknown keys: {', '.join(sorted(unknown))}")
    central = table.get("median", table.get("mean", table.get("value", 0.0)))
    if kind not in ("constant", "uniform", "lognormal", "exponential", "normal"):
        raise ScenarioError(f"{where}: unknown distribution kind {kind!r}")
    return Distribution(
        kind, float(central) * scale, float(table.get("low", 0.0)) * scale,
        float(table.get("high", 0.0)) * scale, float(table.get("sigma", 0.0)) * (scale if kind == "normal" else 1.0),
    )


_LINK_KEYS = {
    "latency_ms", "jitter", "bandwidth_mbit", "loss", "min_retransmit_ms", "window_kib", "connect_timeout",
}


def _links(table: Mapping[str, Any]) -> LinkModel:
    unknown = set(table) - _LINK_KEYS
    if unknown:
        raise ScenarioError(f"[network] has unknown keys: {', '.join(sorted(unknown))}")
    base = LinkModel()
    return LinkModel(
        latency=_distribution(table["latency_ms"], "network.latency_ms", 0.001) if "latency_ms" in table else base.latency,
        jitter=float(table.get("jitter", base.jitter)),
        bandwidth=(
            _distribution(table["bandwidth_mbit"], "network.bandwidth_mbit", 1e6 / 8)
            if "bandwidth_mbit" in table else base.bandwidth
        ),
        loss=float(table.get("loss", base.loss)),
        min_retransmit=float(table.get("min_retransmit_ms", base.min_retransmit * 1000)) / 1000,
        window=int(table.get("window_kib", base.window // 1024)) * 1024,
        connect_timeout=float(table.get("connect_timeout", base.connect_timeout)),
    )


def _event(table: Mapping[str, Any]) -> Event:
    known = {field.name for field in fields(Event)}
    unknown = set(table) - known
    if unknown:
        raise ScenarioError(f"an event has unknown keys: {', '.join(sorted(unknown))}")
    values = dict(table)
    if "nodes" in values:
        values["nodes"] = tuple(int(node) for node in values["nodes"])
    if "groups" in values:
        values["groups"] = tuple(tuple(int(node) for node in group) for group in values["groups"])
    return Event(**values)


_SIMPLE = {
    "name": str, "nodes": int, "blocks": int, "seed": int, "block_time": float, "miners": int,
    "transactions_per_block": float, "senders": int, "topology": str, "bootstrap": int, "degree": int,
    "drift_limit": int, "writer_job_ms": float, "warmup": float, "settle": float, "hostile": float,
    "hostile_targets": int,
}


def scenario_from_mapping(data: Mapping[str, Any], where: str = "the scenario") -> Scenario:
    """
    A scenario from the tables of a TOML file.

    @raise ScenarioError: an unknown key or a bad value.
    """
    values: dict[str, Any] = {}
    for key, value in data.items():
        try:
            if key in _SIMPLE:
                values[key] = _SIMPLE[key](value)
            elif key == "shares":
                values[key] = tuple(float(share) for share in value)
            elif key == "graph":
                values[key] = tuple((int(dial[0]), int(dial[1])) for dial in value)
            elif key == "attacks":
                values[key] = tuple(str(attack) for attack in value)
            elif key == "network":
                values["links"] = _links(value)
            elif key == "skew":
                values["skew"] = _distribution(value, "skew")
            elif key == "node":
                if not isinstance(value, Mapping):
                    raise ScenarioError("node must be a table (a configuration layer)")
                values["node"] = dict(value)
            elif key == "event":
                values["events"] = tuple(_event(event) for event in value)
            else:
                raise ScenarioError(f"unknown key {key!r}")
        except (TypeError, ValueError) as exc:
            raise ScenarioError(f"{where}: bad value of {key}: {exc}") from None
        except ScenarioError as exc:
            raise ScenarioError(f"{where}: {exc}") from None
    return Scenario(**values).check()


def load_scenario(reference: str | None) -> Scenario:
    """
    The scenario a command line names: a TOML file's path, the name of a
    shipped scenario (C{default}, C{small} ...: a file of
    L{SCENARIO_DIRECTORY}), or C{module:function} (a Python function
    returning a L{Scenario}); none: the default scenario.

    @raise ScenarioError: it cannot be found or read.
    """
    if reference is None:
        reference = "default"
    path = Path(reference)
    if not path.suffix and ":" not in reference and (SCENARIO_DIRECTORY / f"{reference}.toml").exists():
        path = SCENARIO_DIRECTORY / f"{reference}.toml"
    if path.suffix == ".toml" or path.exists():
        try:
            data = tomllib.loads(path.read_text())
        except OSError as exc:
            raise ScenarioError(f"cannot read the scenario {reference}: {exc.strerror}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ScenarioError(f"the scenario {reference} is not TOML: {exc}") from None
        data.setdefault("name", path.stem)
        return scenario_from_mapping(data, f"the scenario {reference}")
    module_name, _, function_name = reference.partition(":")
    if not function_name:
        raise ScenarioError(f"no scenario {reference!r}: want a .toml file, a shipped name or module:function")
    try:
        module = importlib.import_module(module_name)
        function = getattr(module, function_name)
    except (ImportError, AttributeError) as exc:
        raise ScenarioError(f"cannot find the scenario function {reference}: {exc}") from None
    scenario = function()
    if not isinstance(scenario, Scenario):
        raise ScenarioError(f"{reference} returned {type(scenario).__name__}, not a Scenario")
    return scenario.check()


def override(scenario: Scenario, **values: Any) -> Scenario:
    """
    The scenario with the given values (the command line's), those not L{None}.
    """
    given = {key: value for key, value in values.items() if value is not None}
    return replace(scenario, **given).check() if given else scenario


__all__ = [
    "ACTIONS",
    "Event",
    "SCENARIO_DIRECTORY",
    "Scenario",
    "ScenarioError",
    "load_scenario",
    "override",
    "scenario_from_mapping",
]
