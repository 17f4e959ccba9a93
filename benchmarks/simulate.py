"""
The network simulator's benchmark (issue 28): C{nodex simulate} of the
default scenario — 200 nodes, 1,000 blocks at a 30 s block time, a light
transaction load — and the same with 10 % hostile peers.

Each run is its own process (C{nodex simulate ... --quiet}), from this
checkout or another (C{--repository}); the figures are its summary (the
last line it prints) and the CPU time the process used (user + system,
from C{wait4}), beside its wall time: on a shared machine the wall time
grows with the load, the CPU time much less.  The load average is
printed before and after.

Usage::

    python benchmarks/simulate.py [--nodes 200] [--blocks 1000] [--seed 1] [--hostile 0 0.1]
                                  [--scenario default] [--repository PATH] [--plot-prefix PATH]
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

KEYS = (
    "nodes", "honest_nodes", "hostile_peers", "blocks", "seed", "digest", "converged", "honest_punished",
    "hostile_punished", "propagation_ms", "propagation_ms_by_share", "stale_rate", "uncle_rate",
    "bytes_per_node_per_block", "height", "connections", "calls", "errors", "simulated_s", "wall_s",
)


def run(repository: Path, arguments: list[str]) -> tuple[dict, float, float]:
    """
    Run C{nodex simulate ARGUMENTS} from C{repository}; return its summary,
    its CPU seconds and its wall seconds.
    """
    # The process starts in the checkout: with "-c", Python puts the current
    # directory before PYTHONPATH, so a run started elsewhere would import
    # that directory's nodex instead.
    environment = dict(os.environ, PYTHONPATH=str(repository))
    command = [sys.executable, "-c", "from nodex.cli import console_main; console_main()", "simulate", *arguments]
    started = time.monotonic()
    process = subprocess.Popen(command, env=environment, cwd=repository, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.monotonic() - started
    lines = output.strip().splitlines()
    if not lines:
        raise SystemExit(f"nodex simulate {' '.join(arguments)} printed nothing (status {status})")
    return json.loads(lines[-1]), usage.ru_utime + usage.ru_stime, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", default="default")
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--blocks", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--hostile", type=float, nargs="+", default=[0.0, 0.1])
    parser.add_argument("--repository", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--plot-prefix", help="draw each run's propagation curves to PREFIX-<hostile>.png")
    options = parser.parse_args()
    print(f"load average before: {os.getloadavg()}", flush=True)
    for hostile in options.hostile:
        arguments = [options.scenario, "--nodes", str(options.nodes), "--blocks", str(options.blocks),
                     "--seed", str(options.seed), "--hostile", str(hostile), "--quiet"]
        if options.plot_prefix:
            arguments += ["--plot", f"{options.plot_prefix}-{hostile}.png"]
        summary, cpu, wall = run(options.repository, arguments)
        figures = {key: summary.get(key) for key in KEYS}
        figures["cpu_s"] = round(cpu, 1)
        figures["process_wall_s"] = round(wall, 1)
        if "attacks" in summary:
            figures["attacks"] = summary["attacks"]
        print(json.dumps({"hostile": hostile, **figures}), flush=True)
        print(f"load average after: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
