"""
Where the reactor of a syncing node is held (session 5): the reactor
callbacks of a node syncing a chain from a peer, timed one by one and
grouped by kind, so that the long ones (the cause of a high 99th
percentile of C{eth_blockNumber} in C{benchmarks/p2p.py}) have a name.

1. A chain of C{--blocks} empty blocks is built into a data directory (as
   C{benchmarks/p2p.py} builds it) and served by a C{twistd nodex} process
   pinned to core 0.
2. This script runs a fresh node in its own process, pinned to core 1,
   dialing the first, with every reactor callback wrapped in a timer:
   socket events (by protocol class), results delivered from threads
   (C{callFromThread}, by function) and timed calls (C{callLater}).  With
   C{--profile} the callbacks also run under cProfile, and the heaviest
   functions of each group are printed (the profiler slows them down by
   about two).
3. When the node reaches the peer's head it prints, per group: how many
   callbacks, their total, p50, p99 and longest time, and how many took
   more than 2 ms.

Usage::

    python benchmarks/sync_holds.py [--blocks 10000] [--profile]
"""

import argparse
import collections
import cProfile
import functools
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPOSITORY = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPOSITORY / "benchmarks"))

import p2p  # noqa: E402  (the sibling benchmark's chain builder and node process)

LONG_SECONDS = 0.002
"""A callback longer than this is counted as a long hold."""


def follow(port: int, blocks: int, datadir: str, profile: bool) -> None:
    """
    Run a node that syncs from 127.0.0.1:C{port} until it holds C{blocks}
    blocks, timing every reactor callback; print the table and exit.
    """
    from twisted.internet import reactor

    from nodex.node import compose
    from nodex.tap import Options

    durations: dict[str, list[float]] = collections.defaultdict(list)
    profilers: dict[str, cProfile.Profile] = collections.defaultdict(cProfile.Profile)

    def timed(group: str, function: Any) -> Any:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            profiler = profilers[group] if profile else None
            started = time.perf_counter()
            if profiler is not None:
                profiler.enable()
            try:
                return function(*args, **kwargs)
            finally:
                if profiler is not None:
                    profiler.disable()
                durations[group].append(time.perf_counter() - started)

        return wrapper

    def name(function: Any) -> str:
        return str(getattr(function, "__qualname__", None) or type(function).__name__)

    call_from_thread, call_later, read_or_write = reactor.callFromThread, reactor.callLater, reactor._doReadOrWrite
    reactor.callFromThread = lambda f, *a, **kw: call_from_thread(timed("thread: " + name(f), f), *a, **kw)
    reactor.callLater = lambda delay, f, *a, **kw: call_later(delay, timed("later: " + name(f), f), *a, **kw)

    def socket_event(selectable: Any, fd: int, event: int) -> Any:
        protocol = getattr(selectable, "protocol", None) or selectable
        return timed("socket: " + type(protocol).__name__, read_or_write)(selectable, fd, event)

    reactor._doReadOrWrite = socket_event
    options = Options()
    options.parseOptions(
        ["--datadir", datadir, "--rpc", "none", "--ws", "none", "--mining", "off",
         "--p2p", "tcp:0:interface=127.0.0.1", "--peer", f"127.0.0.1:{port}"]
    )
    assert options.config is not None
    node = compose(options.config, reactor)
    marks: list[float] = []

    def check() -> None:
        assert node.chain is not None
        if node.chain.head.header.number >= blocks:
            marks.append(time.perf_counter())
            reactor.stop()
        else:
            call_later(0.05, check)

    def start() -> None:
        node.startService()
        marks.append(time.perf_counter())
        call_later(0.05, check)

    reactor.callWhenRunning(start)
    reactor.run(installSignalHandlers=False)
    print(f"synced {blocks} blocks in {marks[-1] - marks[0]:.2f} s")
    print(f"{'callbacks':60s} {'count':>6s} {'total':>9s} {'p50':>7s} {'p99':>7s} {'max':>7s} {'> 2 ms':>6s}")
    rows = sorted(durations.items(), key=lambda item: -sum(item[1]))
    for group, values in rows:
        values.sort()
        print(
            f"{group[:60]:60s} {len(values):6d} {sum(values) * 1000:7.1f}ms {values[len(values) // 2] * 1000:5.2f}ms"
            f" {values[int(len(values) * 0.99)] * 1000:5.2f}ms {values[-1] * 1000:5.2f}ms"
            f" {sum(1 for value in values if value > LONG_SECONDS):6d}"
        )
    if profile:
        for group, _ in rows[:3]:
            print(f"\n--- {group}: heaviest functions (cumulative) ---")
            pstats.Stats(profilers[group], stream=sys.stdout).sort_stats("cumulative").print_stats(20)
    sys.stdout.flush()
    # The node's threads are not stopped: the figures are printed, the process ends here.
    os._exit(0)


def main() -> None:
    """
    Build and serve the chain, then run the timed follower in its own process.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=10_000)
    parser.add_argument("--profile", action="store_true", help="also profile the callbacks (slower)")
    parser.add_argument("--follow", nargs=2, metavar=("PORT", "DATADIR"), help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.follow:
        follow(int(options.follow[0]), options.blocks, options.follow[1], options.profile)
        return
    work = Path(tempfile.mkdtemp(prefix="nodex-sync-holds-"))
    try:
        source = work / "source"
        print(f"built {options.blocks} blocks in {p2p.build(source, options.blocks, 0):.1f} s", flush=True)
        server = p2p.Node(source, 0, "--mining", "off")
        try:
            command = [sys.executable, __file__, "--blocks", str(options.blocks),
                       "--follow", str(server.p2p_port), str(work / "follower")]
            if options.profile:
                command.append("--profile")
            if shutil.which("taskset"):
                command = ["taskset", "-c", "1", *command]
            env = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
            subprocess.run(command, check=True, env=env, cwd=REPOSITORY, timeout=600)
        finally:
            server.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
