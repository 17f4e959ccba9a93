"""
C{nodex simulate [SCENARIO] --nodes N --blocks B --seed S [--hostile FRACTION] [--plot FILE.png]}:
run a scenario and print its summary, one JSON object, as the last line
(C{docs/simulation.md}).
"""

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import IO, Any

from twisted.logger import (
    FilteringLogObserver,
    ILogObserver,
    LogLevel,
    PredicateResult,
    formatEvent,
    globalLogBeginner,
)
from zope.interface import implementer

from nodex.simulation.clock import SimulatedTime
from nodex.simulation.runner import START, Simulation
from nodex.simulation.scenario import ScenarioError, load_scenario, override

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def parser() -> argparse.ArgumentParser:
    """
    The command line of C{nodex simulate}.
    """
    arguments = argparse.ArgumentParser(
        prog="nodex simulate",
        description=(
            "Run N complete nodes in one process on a simulated network and clock, and print a JSON "
            "summary as the last line. SCENARIO is a TOML file, a shipped scenario (default, small, "
            "partition, churn, hostile) or module:function; the options override its values."
        ),
    )
    arguments.add_argument("scenario", nargs="?", help="the scenario [default: default]")
    arguments.add_argument("--nodes", type=int, help="nodes at the start, hostile ones included")
    arguments.add_argument("--blocks", type=int, help="blocks to mine")
    arguments.add_argument("--seed", type=int, help="the seed of every random draw")
    arguments.add_argument("--hostile", type=float, help="the share of the nodes that are hostile peers (0 to 1)")
    arguments.add_argument("--block-time", type=float, help="mean seconds between blocks")
    arguments.add_argument("--plot", metavar="FILE.png", help="draw the propagation curves (needs matplotlib)")
    arguments.add_argument("--trace", metavar="FILE", help="write the event trace, one event a line")
    arguments.add_argument("--log", metavar="FILE", help="write the nodes' log (simulated times) to FILE")
    arguments.add_argument("--quiet", action="store_true", help="no progress line on standard error")
    return arguments


@implementer(ILogObserver)
class SimulatedLog:
    """
    Writes log events with the simulated time and the node they came from.
    """

    def __init__(self, time: SimulatedTime, out: IO[str]) -> None:
        self._time = time
        self._out = out

    def __call__(self, event: dict[str, Any]) -> None:
        clock = self._time.current
        who = clock.label if clock is not None and clock.label else "simulation"
        text = formatEvent(event)
        failure = event.get("log_failure")
        if failure is not None:
            text += "\n" + failure.getTraceback()
        self._out.write(f"{self._time.now - START:12.6f} [{who}] {text}\n")


def important(event: dict[str, Any]) -> PredicateResult:
    """
    Whether a log event goes to standard error: an error of anything, or a
    warning of the simulation itself.
    """
    level = event.get("log_level")
    if level is not None and level >= LogLevel.error:
        return PredicateResult.yes
    if level is not None and level >= LogLevel.warn and str(event.get("log_namespace", "")).startswith("nodex.simulation"):
        return PredicateResult.yes
    return PredicateResult.no


def run_simulate(argv: list[str], stdout: IO[str] | None = None, stderr: IO[str] | None = None) -> int:
    """
    C{nodex simulate}.

    @return: 0 when the run ended well; 1 when an honest node was
        punished, a node failed unexpectedly, the run timed out, or the
        nodes had not converged on one head at the end while the network
        was whole; 2 for bad arguments or a bad scenario.
    """
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    try:
        options = parser().parse_args(argv)
    except SystemExit as exc:
        return EXIT_OK if exc.code == 0 else EXIT_USAGE
    try:
        scenario = override(
            load_scenario(options.scenario), nodes=options.nodes, blocks=options.blocks, seed=options.seed,
            hostile=options.hostile, block_time=options.block_time,
        )
    except ScenarioError as exc:
        err.write(f"nodex simulate: {exc}\n")
        return EXIT_USAGE
    plot = Path(options.plot) if options.plot else None
    if plot is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            err.write("nodex simulate: --plot needs matplotlib, an optional extra: pip install 'nodex[plot]'\n")
            return EXIT_USAGE
    files: list[IO[str]] = []
    try:
        trace = open(options.trace, "w") if options.trace else None  # noqa: SIM115
        if trace is not None:
            files.append(trace)
        log_file = open(options.log, "w") if options.log else None  # noqa: SIM115
        if log_file is not None:
            files.append(log_file)
    except OSError as exc:
        err.write(f"nodex simulate: cannot write {exc.filename}: {exc.strerror}\n")
        return EXIT_USAGE
    try:
        with tempfile.TemporaryDirectory(prefix="nodex-simulate-") as workdir:
            progress = None if options.quiet else (lambda line: (err.write(line + "\n"), err.flush()))
            simulation = Simulation(scenario, Path(workdir), progress, trace)
            observers: list[Any] = []
            if log_file is not None:
                observers.append(SimulatedLog(simulation.time, log_file))
            # The simulation's own warnings (an honest node punished) and
            # every error (a failure in a node) always reach standard error;
            # the nodes' warnings (a hostile peer's invalid block) only the log.
            observers.append(FilteringLogObserver(SimulatedLog(simulation.time, err), [important]))
            globalLogBeginner.beginLoggingTo(observers, discardBuffer=True, redirectStandardIO=False)
            summary = simulation.run()
            if plot is not None:
                from nodex.simulation.plot import plot_propagation

                plot_propagation(simulation.propagation_curves(), summary, plot)
    finally:
        for handle in files:
            handle.close()
    out.write(json.dumps(summary) + "\n")
    out.flush()
    failed = (
        summary["honest_punished"] or summary["errors"] or summary["timed_out"]
        or (not summary["converged"] and not summary.get("partitioned_at_end"))
    )
    return EXIT_FAILED if failed else EXIT_OK


__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "SimulatedLog", "parser", "run_simulate"]
