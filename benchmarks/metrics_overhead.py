"""
What the metrics cost: the dispatcher's time per C{eth_chainId} call without
a call observer and with L{nodex.metrics.NodeMetrics.observe_call}, and the
time of one C{/metrics} exposition with every method of a regtest node
labelled.

Usage::

    python benchmarks/metrics_overhead.py [--calls 100000] [--repeat 5]

Prints the best of C{--repeat} interleaved runs (microseconds per call, milliseconds per
exposition), which other load on the machine disturbs least.
"""

import argparse
import time
from dataclasses import dataclass, field
from typing import Any

from twisted.internet.task import Clock

from nodex.config import load_config
from nodex.api.chain import ChainHead
from nodex.metrics import NodeMetrics
from nodex.rpc.dispatch import Dispatcher
from nodex.rpc.eth import EthIdentityMethods
from nodex.rpc.registry import MethodRegistry, ModuleSettings
from nodex.structures.headers import Header

BODY = b'{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}'


@dataclass
class StaticChain:
    """
    A chain whose head never moves.
    """

    head: ChainHead = field(
        default_factory=lambda: ChainHead(
            Header(b"\0" * 32, b"\0" * 32, b"\0" * 20, b"\0" * 32, b"\0" * 32, b"\0" * 32, b"\0" * 256,
                   1, 100, 30_000_000, 0, 0, b"", 0, 0, 0),
            101,
        )
    )


class EmptyPool:
    """
    A pool without transactions.
    """

    def pending(self) -> list[Any]:
        """
        No pending transaction.
        """
        return []

    def queued(self) -> list[Any]:
        """
        No queued transaction.
        """
        return []


def per_call(dispatcher: Dispatcher, calls: int) -> float:
    """
    Microseconds per answered call.
    """
    answer = dispatcher.answer
    started = time.perf_counter()
    for _ in range(calls):
        answer(BODY)
    return (time.perf_counter() - started) / calls * 1e6


def main() -> None:
    """
    Run both measures and print them.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    registry = MethodRegistry({"eth": ModuleSettings(True)})
    registry.add(EthIdentityMethods(33, 62))
    clock = Clock()
    metrics = NodeMetrics(StaticChain(), EmptyPool(), lambda: 0, lambda: 0, clock, registry.names())
    plain = Dispatcher(registry, clock)
    observed = Dispatcher(registry, clock, call_observer=metrics.observe_call)
    runs: dict[str, list[float]] = {"plain": [], "observed": []}
    for _ in range(args.repeat):  # interleaved, so that a change of load hits both alike
        runs["plain"].append(per_call(plain, args.calls))
        runs["observed"].append(per_call(observed, args.calls))
    without, with_metrics = min(runs["plain"]), min(runs["observed"])
    print(f"dispatcher, eth_chainId: {without:.2f} us/call without metrics, {with_metrics:.2f} us/call with"
          f" (+{with_metrics - without:.2f} us)")
    config = load_config(None, {"datadir": "/nonexistent-nodex-benchmark"})
    names = sorted(module for module in config.rpc.modules)
    labelled = [f"{module}_method{index}" for module in names for index in range(15)]
    metrics.set_method_names(labelled)
    for name in labelled:
        metrics.observe_call(name, None, 0.001)
        metrics.observe_call(name, -32602, 0.002)
    best = min(_timed(metrics.exposition) for _ in range(args.repeat * 4))
    size = len(metrics.exposition())
    print(f"/metrics exposition with {len(labelled)} methods labelled: {best * 1e3:.2f} ms, {size} bytes")


def _timed(function: Any) -> float:
    """
    Seconds one call of C{function} takes.
    """
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
