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

    # machine instructions per gas instead of time (valgrind's callgrind)
    python benchmarks/evm_compare.py --base 7668fcd --instructions

The baseline (C{benchmarks/evm_baseline.json}) names a commit and the
figures measured for it (the date, the load, each workload's range): the
figures are for reading, the commit is what is run again, since figures
from another hour of this machine do not compare.  The exit status is 1
when a workload's median ratio head / base is below C{1 - --tolerance}
(default 0.05), else 0.

C{--instructions} counts machine instructions instead (callgrind, one
run of each side at two scales, L{INSTRUCTION_SCALES}, run two at a
time): a workload's instructions per gas are the difference of the two
runs' instructions over the difference of their gas, so that the start
(imports, genesis) cancels out.  The counts do not move with the load,
so a change of 1 % shows, where CPU-timed rounds on this machine vary
by a third (session 15: the compute workload's +2.7 % from a change of
the instruction loop was found this way after the timed rounds had
flagged it and, wrongly, the storage workload too).  The exit status is
1 when a workload takes more than C{1 + --tolerance} (default 0.01 here)
times the base's instructions per gas.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent
REPOSITORY = BENCHMARKS.parent
BASELINE = BENCHMARKS / "evm_baseline.json"
WORKLOADS = ("compute", "erc20", "storage")
INSTRUCTION_SCALES = (0.3, 0.75)
"""The two scales of C{--instructions}: one and two blocks of compute and storage, one and three of ERC-20."""


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


def instructions_once(path: Path, workload: str, scale: float, folder: Path) -> tuple[int, float]:
    """
    One run of one workload with nodex from C{path} under callgrind.

    @return: the machine instructions of the whole process and the gas of
        the workload's blocks (million).
    """
    env = dict(os.environ, PYTHONPATH=str(path))
    out = folder / f"callgrind.{abs(hash((str(path), workload, scale)))}"
    command = [
        "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
        sys.executable, str(BENCHMARKS / "evm.py"), "--only", "nodex", "--workload", workload, "--scale", str(scale),
    ]
    done = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    collected = re.search(r"Collected : (\d+)", done.stderr)
    if collected is None:
        raise RuntimeError(f"no instruction count for {workload} in:\n{done.stderr[-2000:]}")
    for line in done.stdout.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 7 and cells[0] == workload and cells[1] == "nodex":
            return int(collected.group(1)), float(cells[3])
    raise RuntimeError(f"no figure for {workload} in:\n{done.stdout}")


def count_instructions(sides: list[tuple[Path, str]], options: argparse.Namespace, folder: Path) -> int:
    """
    Instructions per gas of every workload on both sides; print them and the ratios.

    @return: 1 if the head takes more than C{1 + tolerance} times the base's, else 0.
    """
    jobs = [(path, label, workload, scale) for workload in options.workloads for path, label in sides for scale in INSTRUCTION_SCALES]
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        runs = dict(zip(jobs, pool.map(lambda job: instructions_once(job[0], job[2], job[3], folder), jobs)))
    (_, base), (_, head) = sides
    tolerance = 0.01 if options.tolerance is None else options.tolerance
    status = 0
    print(f"| workload | {base} instructions a gas | {head} instructions a gas | head / base |")
    print("|---|---:|---:|---:|")
    for workload in options.workloads:
        per_gas = {}
        for path, label in sides:
            (small, small_gas), (large, large_gas) = (runs[(path, label, workload, scale)] for scale in INSTRUCTION_SCALES)
            per_gas[label] = (large - small) / ((large_gas - small_gas) * 1e6)
        ratio = per_gas[head] / per_gas[base]
        print(f"| {workload} | {per_gas[base]:.1f} | {per_gas[head]:.1f} | {ratio:.3f} |")
        if ratio > 1 + tolerance:
            status = 1
            print(f"REGRESSION: {workload} takes {ratio:.3f} times the base's instructions")
    return status


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
            if options.instructions:
                return count_instructions(sides, options, scratch)
            figures = measure(sides, options)
        finally:
            for path, _label in sides:
                if scratch in path.parents:
                    subprocess.run(["git", "-C", str(REPOSITORY), "worktree", "remove", "--force", str(path)])
    if options.record:
        path, label = sides[-1]
        record(label, figures[label], options)
        return 0
    return verdict(sides, figures, 0.05 if options.tolerance is None else options.tolerance)


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
    parser.add_argument("--tolerance", type=float, help="default 0.05 (timed), 0.01 (--instructions)")
    parser.add_argument("--record", action="store_true", help="measure the head alone and record it as the baseline")
    parser.add_argument("--instructions", action="store_true", help="count machine instructions per gas (callgrind)")
    options = parser.parse_args()
    if options.instructions and options.record:
        parser.error("--record keeps timed figures; it does not go with --instructions")
    return compare(options)


if __name__ == "__main__":
    sys.exit(main())
