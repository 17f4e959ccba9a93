"""
C{nodex simulate} as a user runs it: a process, its progress on standard
error, its JSON summary as the last line of standard output.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

from twisted.trial.unittest import TestCase

import nodex

CHECKOUT = str(Path(nodex.__file__).resolve().parent.parent)

TINY = """
name = "tiny"
nodes = 5
blocks = 3
block_time = 10.0
miners = 5
warmup = 10.0
settle = 10.0
"""


def simulate(*argv: str) -> subprocess.CompletedProcess[str]:
    """
    Run C{nodex simulate ARGV} in a new process, from this checkout.
    """
    environment = dict(os.environ, PYTHONPATH=CHECKOUT)
    return subprocess.run(
        [sys.executable, "-c", "from nodex.cli import console_main; console_main()", "simulate", *argv],
        capture_output=True, text=True, env=environment, timeout=600,
    )


class CommandTests(TestCase):
    """
    The command line of C{nodex simulate}.
    """

    def test_run(self) -> None:
        """
        The last line is the summary with the issue's members; the options
        override the scenario; progress goes to standard error; --plot
        draws a PNG, --trace writes the events, --log the nodes' log.
        """
        folder = Path(self.mktemp())
        folder.mkdir()
        scenario = folder / "tiny.toml"
        scenario.write_text(TINY)
        plot, trace, log = folder / "curves.png", folder / "trace.txt", folder / "nodes.log"
        done = simulate(str(scenario), "--blocks", "4", "--seed", "7", "--plot", str(plot), "--trace", str(trace),
                        "--log", str(log))
        self.assertEqual(done.returncode, 0, done.stderr)
        summary = json.loads(done.stdout.strip().splitlines()[-1])
        for member in ("nodes", "blocks", "seed", "digest", "converged", "honest_punished", "propagation_ms",
                       "stale_rate", "bytes_per_node_per_block", "wall_s"):
            self.assertIn(member, summary)
        self.assertEqual((summary["nodes"], summary["blocks"], summary["seed"]), (5, 4, 7))
        self.assertEqual(sorted(summary["propagation_ms"]), ["p50", "p90", "p99"])
        self.assertTrue(summary["converged"])
        self.assertIn("simulate:", done.stderr)
        self.assertEqual(plot.read_bytes()[:8], b"\x89PNG\r\n\x1a\n")
        self.assertGreater(len(trace.read_text().splitlines()), 100)
        self.assertRegex(log.read_text(), r"\[node \d\] mined block 1 ")

    def test_bad_scenario(self) -> None:
        """
        A scenario with an unknown key: one line naming it, status 2.
        """
        path = Path(self.mktemp() + ".toml")
        path.write_text("nodes = 3\nspeed = 9\n")
        done = simulate(str(path))
        self.assertEqual(done.returncode, 2)
        self.assertEqual(done.stdout, "")
        self.assertIn("unknown key 'speed'", done.stderr)
        self.assertEqual(len(done.stderr.strip().splitlines()), 1)
