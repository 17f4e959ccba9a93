"""
The EVM benchmark's workloads, alternated between two commits, against a
recorded baseline: run it whenever the EVM, the state or the block path
changes.

Each side is a commit (a worktree of it is made under a temporary folder
and removed at the end) or the path of a checkout (a worktree of yours, the
working tree included).  Both sides run the same benchmark code, this
checkout's C{benchmarks/evm.py} (nodex only), with C{PYTHONPATH} naming the
side's checkout, so only nodex's code differs.  The rounds alternate the
sides and swap their order every round, so that the machine's drift falls
on both.  Blocks are timed by CPU time (C{--clock cpu}), which a shared
machine disturbs far less than wall time; C{--clock wall} is there too.

Usage::

    # this checkout against the recorded baseline's commit
    python benchmarks/evm_compare.py

    # two given sides, five rounds, ERC-20 only
    python benchmarks/evm_compare.py --base 46240c3 --head /work/wt/perf --rounds 5 --workloads erc20

    # record this checkout's commit and figures as the new baseline (or --head's)
    python benchmarks/evm_compare.py --record

The baseline (C{benchmarks/evm_baseline.json}) names a commit and the
figures measured for it (the date, the load, each workload's range): the
figures are for reading, the commit is what is run again, since figures
from another hour of this machine do not compare.  The exit status is 1
when a workload's median ratio head / base is below C{1 - --tolerance}
(default 0.05), else 0.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent
REPOSITORY = BENCHMARKS.parent
BASELINE = BENCHMARKS / "evm_baseline.json"
WORKLOADS = ("compute", "erc20", "storage")


def checkout(side: str, scratch: Path) -> tuple[Path, str]:
    """
    The checkout of a side: a directory as given, or a new worktree of a commit.

    @return: the path and a label (the commit's short hash, or the path).
    """
    path = Path(side)
    if path.is_dir():
        return path.resolve(), side
    commit = subprocess.run(
        ["git", "-C", str(REPOSITORY), "rev-parse", "--short", side], check=True, capture_output=True, text=True
    ).stdout.strip()
    target = scratch / commit
    subprocess.run(
        ["git", "-C", str(REPOSITORY), "worktree", "add", "--detach", str(target), commit],
        check=True, capture_output=True,
    )
    return target, commit


def run_once(path: Path, workload: str, scale: float, clock: str) -> tuple[float, float]:
    """
    One run of one workload with nodex from C{path}.

    @return: Mgas/s and transactions/s.
    """
    env = dict(os.environ, PYTHONPATH=str(path))
    command = [
        sys.executable, str(BENCHMARKS / "evm.py"), "--only", "nodex", "--workload", workload,
        "--scale", str(scale), "--clock", clock,
    ]
    output = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
    for line in output.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 7 and cells[0] == workload and cells[1] == "nodex":
            return float(cells[5]), float(cells[6])
    raise RuntimeError(f"no figure for {workload} in:\n{output}")


def compare(options: argparse.Namespace) -> int:
    """
    Alternate the two sides; print the figures and the ratios.
    """
    baseline = json.loads(BASELINE.read_text()) if BASELINE.exists() else {}
    base_side = options.base or baseline.get("commit")
    if base_side is None and not options.record:
        raise SystemExit("no --base and no recorded baseline")
    with tempfile.TemporaryDirectory(prefix="evm-compare-") as folder:
        scratch = Path(folder)
        sides = [] if options.record else [checkout(base_side, scratch)]
        sides.append(checkout(options.head, scratch))
        try:
            figures = measure(sides, options)
        finally:
            for path, _label in sides:
                if scratch in path.parents:
                    subprocess.run(["git", "-C", str(REPOSITORY), "worktree", "remove", "--force", str(path)])
    if options.record:
        path, label = sides[-1]
        record(label, figures[label], options)
        return 0
    return verdict(sides, figures, options.tolerance)


def measure(sides: list[tuple[Path, str]], options: argparse.Namespace) -> dict[str, dict[str, list[float]]]:
    """
    Every round: every workload on every side, the sides' order swapped each round.

    @return: Mgas/s by side label and workload.
    """
    figures: dict[str, dict[str, list[float]]] = {label: {} for _path, label in sides}
    for round_number in range(options.rounds):
        order = sides if round_number % 2 == 0 else sides[::-1]
        for workload in options.workloads:
            for path, label in order:
                mgas, tps = run_once(path, workload, options.scale, options.clock)
                figures[label].setdefault(workload, []).append(mgas)
                load = os.getloadavg()[0]
                print(f"round {round_number + 1} {workload:8} {label:>20}: {mgas:8.2f} Mgas/s {tps:9.1f} tx/s"
                      f"  (load {load:.2f})", flush=True)
    return figures


def verdict(sides: list[tuple[Path, str]], figures: dict[str, dict[str, list[float]]], tolerance: float) -> int:
    """
    Print the ranges and the median ratios; 1 if the head fell behind.
    """
    (_, base), (_, head) = sides
    status = 0
    print()
    print(f"| workload | {base} Mgas/s | {head} Mgas/s | head / base (median of the rounds' ratios) |")
    print("|---|---|---|---:|")
    for workload in figures[base]:
        before, after = figures[base][workload], figures[head][workload]
        ratio = statistics.median(a / b for a, b in zip(after, before))
        print(f"| {workload} | {min(before):.2f}–{max(before):.2f} | {min(after):.2f}–{max(after):.2f} | {ratio:.3f} |")
        if ratio < 1 - tolerance:
            status = 1
            print(f"REGRESSION: {workload} at {ratio:.3f} of the base")
    return status


def record(label: str, figures: dict[str, list[float]], options: argparse.Namespace) -> None:
    """
    Write the baseline file: the commit and its figures.
    """
    in_checkout = Path(label).is_dir()
    commit = subprocess.run(
        ["git", "-C", label if in_checkout else str(REPOSITORY), "rev-parse", "--short", "HEAD" if in_checkout else label],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    baseline = {
        "commit": commit,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "load": round(os.getloadavg()[0], 2),
        "clock": options.clock,
        "scale": options.scale,
        "mgas_per_second": {w: [round(min(v), 2), round(max(v), 2)] for w, v in figures.items()},
    }
    BASELINE.write_text(json.dumps(baseline, indent=2) + "\n")
    print(f"recorded {commit} in {BASELINE}")


def main() -> int:
    """
    Parse the command line and compare.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", help="a commit or a checkout (default: the recorded baseline's commit)")
    parser.add_argument("--head", default=str(REPOSITORY), help="a commit or a checkout (default: this one)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workloads", type=lambda text: text.split(","), default=list(WORKLOADS))
    parser.add_argument("--scale", type=float, default=0.5)
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    parser.add_argument("--tolerance", type=float, default=0.05)
    parser.add_argument("--record", action="store_true", help="measure the head alone and record it as the baseline")
    options = parser.parse_args()
    return compare(options)


if __name__ == "__main__":
    sys.exit(main())
