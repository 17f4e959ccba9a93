"""
OpenZeppelin Contracts v5.4.0's C{test/token/ERC20} suite (Hardhat 2, mocha,
ethers 6, hardhat-chai-matchers, the Network Helpers' C{loadFixture}) run
against a node: nodex, Anvil, Hardhat's in-process network, or any node
given by URL.  It prints each run's passing, failing and pending tests and
its wall time; several nodes in one call run alternated, round by round.

Nothing of OpenZeppelin is in this repository: C{setup} lays it out in a
work directory (default C{/work/oz}) from a git directory of
C{OpenZeppelin/openzeppelin-contracts} that holds the tag (a bare mirror
or a clone; the session's C{fetch} tool gives one), installs its test
dependencies from the npm registry at the versions of its own
C{package-lock.json}, plus solcjs 0.8.27 (the compiler OpenZeppelin's
config names; Hardhat would download a native one, which needs more than
the registries) and Anvil 1.7.1 (C{@foundry-rs/anvil-linux-amd64}, with
C{cast}), writes a Hardhat config of its own beside OpenZeppelin's and
compiles once (solcjs: several minutes; the artifacts stay).  The
contracts are compiled for Cancun, which every node here runs
(OpenZeppelin's default target is Prague).

Usage::

    # once (about 15 minutes on this machine: npm install, then solcjs)
    python benchmarks/openzeppelin.py setup --source /work/.mirror/OpenZeppelin+openzeppelin-contracts/repo

    # nodex (this checkout, or another with --nodex-checkout), Anvil and
    # Hardhat's own network, alternated twice
    python benchmarks/openzeppelin.py run --nodes nodex,anvil,hardhat --rounds 2

    # a node that is already running (the URL is used as given)
    python benchmarks/openzeppelin.py run --nodes http://127.0.0.1:4444

    # one test file, or mocha's --grep, and mocha's whole output
    python benchmarks/openzeppelin.py run --nodes nodex --files extensions/ERC20Permit.test.js --grep permit --verbose

Options of C{run}:

  - C{--nodes}: comma-separated; C{nodex}, C{nodex:PATH} (nodex from the
    checkout at PATH, e.g. a worktree of another commit), C{anvil},
    C{hardhat} (the in-process network: no node process), or a URL.
  - C{--rounds N}: run the list N times, in order (alternated).
  - C{--pin}: the node on core 0 and mocha on core 1 (C{taskset}).
  - C{--metrics}: nodex with its metrics port; after the run the per-method
    call counts and total seconds of the node's own histograms are printed
    (the node's time, by JSON-RPC method).
  - C{--profile FILE}: nodex under cProfile (the statistics written to
    C{FILE} when it stops; slower).
  - C{--py-spy FILE}: record nodex with py-spy (the interpreter lock's
    holder, 250 samples a second; C{--py-spy-bin} names the command) and
    print its time by phase (C{benchmarks/phases.py}).
  - C{--nodex-config FILE}: a TOML file whose keys are laid over the
    harness's own (which are: regtest, automining, C{rpc.client_version =
    "anvil/nodex"} so that the Network Helpers accept the node, a fresh
    data directory per run).
  - C{--keep}: keep the nodes' data directories and logs (printed).
  - C{--tests-json FILE}: each run's tests, with their states and seconds, as JSON.
  - C{--workdir}: where C{setup} put things (default C{/work/oz}).

The wall time is the C{hardhat test} process's, from its start to its exit
(mocha's own figure, which excludes Hardhat's start-up, is printed beside
it).  A reporter of the harness's (mocha's spec output, plus each test's
time from the end of the test before it, its hooks and C{loadFixture}
included) lets it also print, per round, each node's seconds over the tests
that passed on every node of the round: a failing test ends early, so a
node that fails tests (Anvil, below) does less of the suite's work than one
that passes them all, and only these sums compare the same work.  A run in which a test waited for mocha's timeout (40 s) is marked:
its time says nothing, and what it left in the node fails later tests.
Anvil mines an automined transaction just after answering
C{eth_sendTransaction}, so under load some tests that ask for the receipt
at once fail against it ("receipt should not be null"): they are counted
as failures, as they are.  Nodes are started fresh for each run, so every run begins at genesis.
The exit status is 0 when every run finished (failing tests included:
they are counted, not fatal), 1 when a node or mocha could not run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from nodeprocess import NODEX_SERVER, free_port, wait_for_rpc

REPOSITORY = Path(__file__).resolve().parent.parent
TAG = "v5.4.0"
SOLC_VERSION = "0.8.27"
FOUNDRY_VERSION = "1.7.1"
TREE = "openzeppelin-contracts"
TEST_DIR = "test/token/ERC20"
CONFIG_NAME = "hardhat.config.bench.js"
SPY_RATE = 250

# The packages the ERC-20 tests and OpenZeppelin's Hardhat tasks load; their
# versions come from OpenZeppelin's package-lock.json at the tag.
LOCKED_PACKAGES = (
    "hardhat",
    "@nomicfoundation/hardhat-chai-matchers",
    "@nomicfoundation/hardhat-ethers",
    "@nomicfoundation/hardhat-network-helpers",
    "chai",
    "ethers",
    "hardhat-exposed",
    "hardhat-ignore-warnings",
    "yargs",
    "glob",
    "@noble/curves",
    "solidity-ast",
    "lodash.startcase",
    "p-limit",
    "semver",
)
EXTRA_PACKAGES = {
    "solc": SOLC_VERSION,
    "@foundry-rs/anvil-linux-amd64": FOUNDRY_VERSION,
    "@foundry-rs/cast-linux-amd64": FOUNDRY_VERSION,
}

HARDHAT_CONFIG = """\
// Written by nodex's benchmarks/openzeppelin.py: OpenZeppelin's own config
// (hardhat.config.js) less the plugins the tests do not need (gas reporter,
// coverage, docs), with solcjs from node_modules and an external network.
const path = require('path');
const fs = require('fs');
const { subtask } = require('hardhat/config');
const {
  TASK_COMPILE_SOLIDITY_GET_SOLC_BUILD,
  TASK_COMPILE_SOLIDITY_MERGE_COMPILATION_JOBS,
} = require('hardhat/builtin-tasks/task-names');

require('@nomicfoundation/hardhat-chai-matchers');
require('@nomicfoundation/hardhat-ethers');
require('hardhat-exposed');
require('hardhat-ignore-warnings');
for (const f of fs.readdirSync(path.join(__dirname, 'hardhat'))) {
  require(path.join(__dirname, 'hardhat', f));
}

// The compiler from the npm package solc (solcjs), not a download.
subtask(TASK_COMPILE_SOLIDITY_GET_SOLC_BUILD, async (args, hre, runSuper) => {
  const solc = require('solc');
  if (args.solcVersion === '%(solc)s') {
    return {
      compilerPath: require.resolve('solc/soljson.js'),
      isSolcJs: true,
      version: args.solcVersion,
      longVersion: solc.version().replace(/\\.Emscripten.*$/, ''),
    };
  }
  return runSuper();
});

// One solcjs job for the whole tree runs out of WebAssembly memory: compile
// it in jobs of at most CHUNK files to emit (each with its dependencies).
const CHUNK = 40;
subtask(TASK_COMPILE_SOLIDITY_MERGE_COMPILATION_JOBS, async ({ compilationJobs }) => {
  const byConfig = new Map();
  for (const job of compilationJobs) {
    const list = byConfig.get(job.getSolcConfig()) || [];
    list.push(job);
    byConfig.set(job.getSolcConfig(), list);
  }
  const merged = [];
  for (const jobs of byConfig.values()) {
    const name = job => job.getResolvedFiles().filter(f => job.emitsArtifacts(f)).map(f => f.sourceName)[0] || '';
    jobs.sort((a, b) => name(a).localeCompare(name(b)));
    for (let i = 0; i < jobs.length; i += CHUNK) {
      merged.push(jobs.slice(i, i + CHUNK).reduce((a, b) => a.merge(b)));
    }
  }
  return merged;
});

module.exports = {
  solidity: {
    version: '%(solc)s',
    settings: {
      optimizer: { enabled: true, runs: 200 },
      evmVersion: 'cancun',
      outputSelection: { '*': { '*': ['storageLayout'] } },
    },
  },
  warnings: {
    'contracts-exposed/**/*': { 'code-size': 'off', 'initcode-size': 'off' },
    '*': { 'unused-param': true, 'transient-storage': false, default: 'error' },
  },
  networks: {
    hardhat: { hardfork: 'cancun', allowUnlimitedContractSize: true },
    external: { url: process.env.OZ_BENCH_URL || 'http://127.0.0.1:8545', timeout: 600000 },
  },
  exposed: {
    imports: true,
    initializers: true,
    exclude: ['vendor/**/*', '**/*WithInit.sol'],
  },
  // The harness's reporter (mocha's spec output, plus each test's time).
  mocha: process.env.OZ_BENCH_REPORTER ? { reporter: process.env.OZ_BENCH_REPORTER } : {},
};
"""

# A mocha reporter: the spec reporter's output, and for each test its full
# title, its state and the time from the end of the test before it (its
# hooks, loadFixture's evm_revert included) to its own end, written as JSON
# to OZ_BENCH_TIMES when the run ends.
REPORTER = """\
// Written by nodex's benchmarks/openzeppelin.py.
const fs = require('fs');
const Spec = require('mocha/lib/reporters/spec');

class TimedSpec extends Spec {
  constructor(runner, options) {
    super(runner, options);
    const tests = [];
    let last = process.hrtime.bigint();
    runner.on('start', () => { last = process.hrtime.bigint(); });
    runner.on('test end', test => {
      const now = process.hrtime.bigint();
      tests.push({ title: test.fullTitle(), state: test.state || 'pending', seconds: Number(now - last) / 1e9 });
      last = now;
    });
    runner.on('fail', (runnable) => {
      // A failing hook ends its tests without a 'test end': its time goes to no test.
      if (runnable.type === 'hook') { last = process.hrtime.bigint(); }
    });
    runner.once('end', () => {
      if (process.env.OZ_BENCH_TIMES) { fs.writeFileSync(process.env.OZ_BENCH_TIMES, JSON.stringify(tests)); }
    });
  }
}
module.exports = TimedSpec;
"""
REPORTER_NAME = "bench-reporter.js"

def run_command(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    """
    Run a set-up step, showing it; fail loudly.
    """
    print("$", " ".join(command), flush=True)
    subprocess.run(command, cwd=cwd, env=env, check=True)


def setup(workdir: Path, source: Path, compile_only: bool) -> None:
    """
    Lay out OpenZeppelin at the tag, install its test dependencies, compile.
    """
    tree = workdir / TREE
    if not compile_only:
        if not (tree / "package.oz.json").exists():
            if tree.exists():
                shutil.rmtree(tree)
            tree.mkdir(parents=True)
            archive = subprocess.run(
                ["git", f"--git-dir={source}", "archive", TAG], check=True, stdout=subprocess.PIPE
            ).stdout
            subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
            # OpenZeppelin's package.json lists its whole tool chain (linters,
            # docs, changesets, coverage) and a husky install script; keep it
            # aside and install only what the tests load.
            (tree / "package.json").rename(tree / "package.oz.json")
        lock = json.loads((tree / "package-lock.json").read_text())["packages"]
        pinned = {name: lock[f"node_modules/{name}"]["version"] for name in LOCKED_PACKAGES}
        pinned.update(EXTRA_PACKAGES)
        package = {"name": "openzeppelin-bench", "private": True, "devDependencies": pinned}
        (tree / "package.json").write_text(json.dumps(package, indent=2) + "\n")
        (tree / "package-lock.json").rename(tree / "package-lock.oz.json")
        run_command(["npm", "install", "--no-audit", "--no-fund"], tree)
    (tree / CONFIG_NAME).write_text(HARDHAT_CONFIG % {"solc": SOLC_VERSION})
    env = dict(os.environ, NODE_OPTIONS="--max-old-space-size=8192")
    run_command(["npx", "hardhat", "--config", CONFIG_NAME, "compile"], tree, env)


@dataclass
class Outcome:
    """
    One run of the suite.
    """

    node: str
    passing: int
    failing: int
    pending: int
    wall: float
    mocha: str
    note: str = ""
    tests: tuple[tuple[str, str, float], ...] = ()
    cpu: float | None = None


class Node:
    """
    A node the suite runs against: started here (nodex, Anvil) or given.
    """

    def __init__(self, spec: str, options: argparse.Namespace) -> None:
        self.spec = spec
        self.options = options
        self.process: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.metrics_port = 0
        self.datadir: Path | None = None
        self.recorder: subprocess.Popen[bytes] | None = None

    @property
    def network(self) -> str:
        """
        The Hardhat network name mocha runs on.
        """
        return "hardhat" if self.spec == "hardhat" else "external"

    def start(self) -> None:
        """
        Start the node (nothing for C{hardhat} or a URL) and wait for it.
        """
        if self.spec == "hardhat":
            return
        if self.spec.startswith("http"):
            self.url = self.spec
            wait_for_rpc(self.url, None)
            return
        port = free_port()
        self.url = f"http://127.0.0.1:{port}/"
        self.datadir = Path(tempfile.mkdtemp(prefix="oz-bench-"))
        pin = ["taskset", "-c", "0"] if self.options.pin else []
        log = open(self.datadir / "stdout.log", "wb")
        if self.spec == "anvil":
            anvil = self.options.workdir / TREE / "node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil"
            command = [*pin, str(anvil), "--port", str(port), "--host", "127.0.0.1"]
        elif self.spec == "nodex" or self.spec.startswith("nodex:"):
            checkout = Path(self.spec.partition(":")[2] or REPOSITORY).resolve()
            self.metrics_port = free_port() if self.options.metrics else 0
            command = [
                *pin,
                sys.executable,
                "-c",
                NODEX_SERVER,
                str(port),
                str(self.datadir),
                self.options.profile or "",
                str(checkout),
                str(self.metrics_port),
                str(self.options.nodex_config or ""),
            ]
        else:
            raise SystemExit(f"unknown node {self.spec!r}: nodex, nodex:PATH, anvil, hardhat or a URL")
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=self.datadir)
        wait_for_rpc(self.url, self.process)
        if self.options.py_spy and self.spec.startswith("nodex"):
            self.recorder = subprocess.Popen(
                [self.options.py_spy_bin, "record", "--pid", str(self.process.pid), "--rate", str(SPY_RATE),
                 "--gil", "--full-filenames", "--format", "raw", "-o", self.options.py_spy],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )

    def method_times(self) -> list[tuple[str, int, float]]:
        """
        nodex's per-method call counts and seconds, from its metrics port.
        """
        if not self.metrics_port:
            return []
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=30) as answer:
            text = answer.read().decode()
        counts: dict[str, int] = {}
        seconds: dict[str, float] = {}
        pattern = re.compile(r'^nodex_rpc_latency_seconds_(count|sum)\{[^}]*method="([^"]+)"[^}]*\} (\S+)$')
        for line in text.splitlines():
            match = pattern.match(line)
            if match:
                kind, method, value = match.groups()
                if kind == "count":
                    counts[method] = counts.get(method, 0) + int(float(value))
                else:
                    seconds[method] = seconds.get(method, 0.0) + float(value)
        return sorted(((m, counts[m], seconds.get(m, 0.0)) for m in counts), key=lambda row: -row[2])

    def cpu_seconds(self) -> float | None:
        """
        The CPU time all the threads of a node started here have used so
        far, to the nanosecond (the scheduler's C{schedstat}): less moved
        by the machine's other work than wall time.  L{None} for a node
        given by URL or run in-process.
        """
        if self.process is None:
            return None
        total = 0
        try:
            tasks = list(Path(f"/proc/{self.process.pid}/task").iterdir())
        except FileNotFoundError:
            return None
        for task in tasks:
            try:
                total += int((task / "schedstat").read_text().split()[0])
            except (FileNotFoundError, ProcessLookupError):
                continue  # a thread that ended meanwhile
        return total / 1e9

    def stop(self) -> None:
        """
        Stop a node started here; remove its data unless kept.
        """
        if self.recorder is not None:
            self.recorder.send_signal(signal.SIGINT)
            self.recorder.wait(60)
            self.recorder = None
        if self.process is not None:
            self.process.send_signal(signal.SIGINT if self.spec == "anvil" else signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None
        if self.datadir is not None:
            if self.options.keep:
                print(f"  kept {self.datadir}")
            else:
                shutil.rmtree(self.datadir, ignore_errors=True)
            self.datadir = None


SUMMARY = re.compile(r"^\s*(\d+) (passing|failing|pending)(?: \(([^)]*)\))?", re.MULTILINE)
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def run_suite(node: Node, options: argparse.Namespace) -> Outcome:
    """
    Run the suite once against C{node}, started fresh.
    """
    tree = options.workdir / TREE
    files = [f"{TEST_DIR}/{name}" for name in options.files] if options.files else [TEST_DIR]
    command = ["npx", "hardhat", "--config", CONFIG_NAME, "--network", node.network, "test", "--no-compile"]
    if options.grep:
        command += ["--grep", options.grep]
    if options.pin:
        command = ["taskset", "-c", "1", *command]
    try:
        # Inside the try: a node that started but never answered (the wait
        # gave up) is stopped too, not left running.
        node.start()
        times_file = tempfile.NamedTemporaryFile(prefix="oz-times-", suffix=".json", delete=False)
        times_file.close()
        env = dict(
            os.environ,
            OZ_BENCH_URL=node.url,
            FORCE_COLOR="0",
            OZ_BENCH_REPORTER=str(tree / REPORTER_NAME),
            OZ_BENCH_TIMES=times_file.name,
        )
        env.pop("NODE_PATH", None)  # the tree's own node_modules, not another install's
        paths = []
        for name in files:
            path = tree / name
            found = sorted(path.rglob("*.test.js")) if path.is_dir() else [path]
            paths += [str(p.relative_to(tree)) for p in found]
        cpu_before = node.cpu_seconds()
        started = time.monotonic()
        result = subprocess.run([*command, *paths], cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        wall = time.monotonic() - started
        cpu_after = node.cpu_seconds()
        cpu = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
        output = ANSI.sub("", result.stdout.decode(errors="replace"))
        times = node.method_times()
        tests = read_test_times(Path(times_file.name))
        os.unlink(times_file.name)
    finally:
        node.stop()
    if options.verbose:
        print(output)
    counts = {"passing": 0, "failing": 0, "pending": 0}
    mocha = ""
    for number, kind, duration in SUMMARY.findall(output):
        counts[kind] = int(number)
        if kind == "passing":
            mocha = duration
    note = "" if counts["passing"] or counts["failing"] else output.strip()[-2000:]
    timeouts = output.count("Error: Timeout of ")
    if timeouts:
        # A test that waited for mocha's timeout (40 s) makes the wall time
        # meaningless, and what it left in the node fails the tests after it.
        note = f"{timeouts} timeout(s): this run's time is not comparable"
    if times:
        print(f"  nodex time by method ({node.spec}):")
        print(f"    {'method':<32} {'calls':>7} {'seconds':>9} {'ms/call':>8}")
        for method, count, seconds in times:
            print(f"    {method:<32} {count:>7} {seconds:>9.3f} {1000 * seconds / max(count, 1):>8.3f}")
    if options.py_spy and node.spec.startswith("nodex"):
        # The node's time by phase, from the recording (benchmarks/phases.py).
        sys.path.insert(0, str(Path(__file__).parent))
        import phases

        phases.main([options.py_spy, "--rate", str(SPY_RATE), "--wall", f"{wall:.3f}", "--top", "8"])
    if counts["failing"] and not options.verbose:
        failures = output[output.find(f"{counts['failing']} failing") :]
        print("\n".join(failures.splitlines()[: options.show_failures]))
    return Outcome(node.spec, counts["passing"], counts["failing"], counts["pending"], wall, mocha, note, tests, cpu)


def read_test_times(path: Path) -> tuple[tuple[str, str, float], ...]:
    """
    The reporter's (title, state, seconds) of each test, a repeated title
    numbered by its occurrence; nothing when the run wrote none.
    """
    try:
        entries = json.loads(path.read_text() or "[]")
    except (OSError, ValueError):
        return ()
    seen: dict[str, int] = {}
    tests = []
    for entry in entries:
        title = entry["title"]
        seen[title] = seen.get(title, 0) + 1
        if seen[title] > 1:
            title = f"{title} #{seen[title]}"
        tests.append((title, entry["state"], float(entry["seconds"])))
    return tuple(tests)


def common_passing(outcomes: list[Outcome]) -> list[str]:
    """
    Per round, each node's seconds over the tests that passed on every node
    of the round (a test that fails ends early, so a node failing more
    tests does less work; these sums compare the same work).
    """
    lines = []
    nodes = len({o.node for o in outcomes})
    for start in range(0, len(outcomes), max(nodes, 1)):
        group = [o for o in outcomes[start : start + nodes] if o.tests]
        if len(group) < 2:
            continue
        passed = set.intersection(*({t for t, state, _ in o.tests if state == "passed"} for o in group))
        sums = [sum(seconds for t, _, seconds in o.tests if t in passed) for o in group]
        base = sums[-1]
        parts = ", ".join(f"{o.node} {total:.1f} s ({total / base:.2f})" for o, total in zip(group, sums))
        lines.append(f"round {start // nodes + 1}: {len(passed)} tests passed on every node: {parts}")
    return lines


def run(options: argparse.Namespace) -> int:
    """
    Run the suite against each node, alternated for C{--rounds}.
    """
    tree = options.workdir / TREE
    if not (tree / CONFIG_NAME).exists():
        raise SystemExit(f"{tree} is not set up: run `python {sys.argv[0]} setup` first")
    # This harness's config and reporter (a tree set up by an older harness gets them too).
    (tree / CONFIG_NAME).write_text(HARDHAT_CONFIG % {"solc": SOLC_VERSION})
    (tree / REPORTER_NAME).write_text(REPORTER)
    outcomes: list[Outcome] = []
    status = 0
    for round_number in range(1, options.rounds + 1):
        for spec in options.nodes.split(","):
            load = os.getloadavg()[0]
            try:
                outcome = run_suite(Node(spec, options), options)
            except (RuntimeError, OSError) as exc:
                print(f"round {round_number} {spec}: could not run: {exc}")
                status = 1
                continue
            outcomes.append(outcome)
            print(
                f"round {round_number} {spec}: {outcome.passing} passing, {outcome.failing} failing, "
                f"{outcome.pending} pending; {outcome.wall:.1f} s wall (mocha {outcome.mocha or '?'}); "
                + ("" if outcome.cpu is None else f"node CPU {outcome.cpu:.1f} s; ")
                + f"load {load:.2f}",
                flush=True,
            )
            if outcome.note:
                print(outcome.note)
                if not (outcome.passing or outcome.failing):
                    status = 1
    print()
    for line in common_passing(outcomes):
        print(line)
    if options.tests_json:
        rows = [{"node": o.node, "run": index, "tests": o.tests} for index, o in enumerate(outcomes)]
        Path(options.tests_json).write_text(json.dumps(rows))
    print()
    print("| node | passing | failing | pending | wall s | node CPU s | mocha | note |")
    print("|---|---:|---:|---:|---:|---:|---|---|")
    for o in outcomes:
        note = o.note if len(o.note) < 80 else "no summary"
        cpu = "" if o.cpu is None else f"{o.cpu:.1f}"
        print(f"| {o.node} | {o.passing} | {o.failing} | {o.pending} | {o.wall:.1f} | {cpu} | {o.mocha} | {note} |")
    return status


def main() -> int:
    """
    Parse the command line and do it.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    setup_parser = commands.add_parser("setup", help="lay out OpenZeppelin, install, compile")
    setup_parser.add_argument("--workdir", type=Path, default=Path("/work/oz"))
    setup_parser.add_argument(
        "--source",
        type=Path,
        default=Path("/work/.mirror/OpenZeppelin+openzeppelin-contracts/repo"),
        help="a git directory of OpenZeppelin/openzeppelin-contracts holding the tag",
    )
    setup_parser.add_argument("--compile-only", action="store_true", help="only write the config and compile")
    run_parser = commands.add_parser("run", help="run the ERC-20 suite against nodes")
    run_parser.add_argument("--workdir", type=Path, default=Path("/work/oz"))
    run_parser.add_argument("--nodes", default="nodex,anvil")
    run_parser.add_argument("--rounds", type=int, default=1)
    run_parser.add_argument("--files", nargs="*", help=f"test files or folders under {TEST_DIR}")
    run_parser.add_argument("--grep", help="mocha's --grep")
    run_parser.add_argument("--pin", action="store_true", help="node on core 0, mocha on core 1")
    run_parser.add_argument("--metrics", action="store_true", help="print nodex's time by method")
    run_parser.add_argument("--profile", help="run nodex under cProfile, statistics to this file")
    run_parser.add_argument("--py-spy", help="record nodex with py-spy into this file; print its phases")
    run_parser.add_argument("--py-spy-bin", default="py-spy", help="the py-spy command")
    run_parser.add_argument("--nodex-config", type=Path, help="a TOML file laid over the harness's settings")
    run_parser.add_argument("--keep", action="store_true", help="keep the nodes' data directories")
    run_parser.add_argument("--verbose", action="store_true", help="print mocha's whole output")
    run_parser.add_argument("--tests-json", help="write each run's (title, state, seconds) per test to this file")
    run_parser.add_argument("--show-failures", type=int, default=60, help="lines of mocha's failures to print")
    options = parser.parse_args()
    # A SIGTERM stops the nodes and mocha as Ctrl-C does (the finally blocks run).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    if options.command == "setup":
        setup(options.workdir, options.source, options.compile_only)
        return 0
    if options.profile:
        options.profile = str(Path(options.profile).resolve())
    if options.py_spy:
        options.py_spy = str(Path(options.py_spy).resolve())
    return run(options)


if __name__ == "__main__":
    sys.exit(main())
