"""
Where a nodex process's time goes, by phase, from a py-spy recording.

py-spy (a sampling profiler, outside the project's dependencies: install it
in a virtualenv of its own) records the running node with the interpreter
lock's holder only, in its raw format::

    py-spy record --pid PID --rate 250 --gil --full-filenames --format raw -o node.txt

(C{benchmarks/openzeppelin.py run --py-spy node.txt} does that around a
suite).  Each sample is one stack of the thread that held the lock; this
script puts each in one phase, by the first rule below that one of its
frames matches, and prints the seconds and shares::

    python benchmarks/phases.py node.txt [--rate 250] [--wall SECONDS] [--top 10]

C{--wall} (the run's wall time) adds the time no thread held the lock: the
node idle (waiting for its client) or in system calls that release it.
C{--top N} lists each phase's N heaviest leaf functions.

The phases, in the order they are tested (a sample of the EVM running
inside a block's production counts as EVM, a trie read under the EVM as
state):
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

PHASES: tuple[tuple[str, str], ...] = (
    ("RocksDB (reads and writes)", r"/nodex/db/|rocksdict"),
    ("state and tries (accounts, storage, commit, roots)", r"/nodex/state/|/nodex/trie/"),
    ("EVM (interpreter, instructions, precompiles)", r"/nodex/evm/"),
    ("signatures (recovery, signing)", r"coincurve|recover_address|recover_public_key|sign_transaction|\(sign\) "),
    ("encode (result objects, JSON out)", r"/nodex/rpc/(encoders|objects)\.py|json/encoder\.py|encode_result"),
    ("parse (HTTP request, JSON in)", r"json/decoder\.py|/nodex/rpc/nesting\.py|^_parse \(.*/nodex/rpc/dispatch\.py|twisted/web/http\.py"),
    ("decode (parameters, raw transactions)", r"/nodex/rpc/decoders\.py|decode_transaction|/nodex/structures/"),
    ("block production and chain (build, seal, import, write batch)", r"/nodex/chain/"),
    ("services (pool, miner, state and chain services, dev chain)", r"/nodex/services/"),
)
"""(phase, pattern): the first phase one of whose frames matches takes the sample."""

INNERMOST: tuple[tuple[str, str], ...] = (
    ("HTTP (the channel: request parsing, answer writing)", r"/nodex/rpc/channel\.py"),
    ("RPC dispatch and methods", r"/nodex/rpc/"),
    ("reactor, Deferreds, sockets", r"twisted/"),
)
"""Samples no phase above took go by their innermost frame of nodex or Twisted."""

OTHER = "other"

__doc__ += "".join(f"\n  - {name}" for name, _ in PHASES + INNERMOST) + f"\n  - {OTHER}\n"


def read_samples(path: Path) -> Iterable[tuple[list[str], int]]:
    """
    The stacks of a py-spy raw file (C{frame;frame;... count}, root first).
    """
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack:
            yield stack.split(";"), int(count)


def phase_of(frames: Sequence[str]) -> str:
    """
    The phase a stack belongs to.
    """
    for name, pattern in COMPILED:
        if any(pattern.search(frame) for frame in frames):
            return name
    for frame in reversed(frames):
        if "/nodex/" in frame or "twisted/" in frame:
            for name, pattern in COMPILED_INNERMOST:
                if pattern.search(frame):
                    return name
            break
    return OTHER


COMPILED = tuple((name, re.compile(pattern)) for name, pattern in PHASES)
NAMES = [name for name, _ in PHASES + INNERMOST] + [OTHER]
COMPILED_INNERMOST = tuple((name, re.compile(pattern)) for name, pattern in INNERMOST)


def breakdown(path: Path, top: int) -> tuple[Counter[str], dict[str, Counter[str]]]:
    """
    Samples by phase, and by phase and leaf function.
    """
    phases: Counter[str] = Counter()
    leaves: dict[str, Counter[str]] = {}
    for frames, count in read_samples(path):
        phase = phase_of(frames)
        phases[phase] += count
        if top:
            leaf = re.sub(r" \((.*/)?([^/]+):\d+\)$", r" (\2)", frames[-1])
            leaves.setdefault(phase, Counter())[leaf] += count
    return phases, leaves


def main(argv: Sequence[str]) -> int:
    """
    Print the breakdown of one recording.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("recording", type=Path)
    parser.add_argument("--rate", type=float, default=250.0, help="py-spy's samples per second")
    parser.add_argument("--wall", type=float, help="the run's wall time, in seconds")
    parser.add_argument("--top", type=int, default=0, help="leaf functions listed per phase")
    options = parser.parse_args(argv)
    phases, leaves = breakdown(options.recording, options.top)
    total = sum(phases.values())
    busy = total / options.rate
    print(f"{total} samples holding the interpreter lock: {busy:.1f} s")
    print()
    print("| phase | seconds | share of busy |" + (" share of wall |" if options.wall else ""))
    print("|---|---:|---:|" + ("---:|" if options.wall else ""))
    for name in NAMES:
        seconds = phases[name] / options.rate
        row = f"| {name} | {seconds:.2f} | {100 * phases[name] / max(total, 1):.1f} % |"
        if options.wall:
            row += f" {100 * seconds / options.wall:.1f} % |"
        print(row)
    if options.wall:
        idle = max(options.wall - busy, 0.0)
        print(f"| no thread holding the lock (idle, waiting for the client, system calls) | {idle:.2f} | | "
              f"{100 * idle / options.wall:.1f} % |")
    for name in NAMES:
        if options.top and name in leaves:
            print(f"\n{name}:")
            for leaf, count in leaves[name].most_common(options.top):
                print(f"  {count / options.rate:7.2f} s  {leaf}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
