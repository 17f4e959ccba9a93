"""
What test suites call most, one call at a time as mocha and ethers send
them: the node's CPU time and the client's wall time per call, for one or
several checkouts of nodex, alternated round by round.

The node runs in its own process (on core 0 with C{--pin}, this client on
core 1), started fresh for each checkout and round, with the harness
settings of C{benchmarks/openzeppelin.py} (regtest, automining).  Before the
figures, the token (C{tests/data/contracts/Token.json}) is deployed.  Each
scenario repeats one step C{--count} times; a step's CPU time is the node
process's user and system time (from C{/proc}) over the repeats, divided by
their number (from the scheduler's per-thread C{schedstat}, to the
nanosecond), which other work on the machine disturbs much less than wall
time.

Scenarios:

  - C{chain_id}: C{eth_chainId} (the request path alone: HTTP, parse,
    dispatch, encode);
  - C{chain_id_split}: the same with the head and the body written apart,
    a millisecond between them (20 under callgrind), so that the node reads
    them apart (as
    Python's C{http.client}, and so web3.py, writes a request);
  - C{chain_id_pipelined}: the same ten at a time in one write (HTTP
    pipelining), the figures per request;
  - C{block_number}: C{eth_blockNumber};
  - C{fee_history}: C{eth_feeHistory} of the latest block at the 50th
    percentile, as Hardhat asks it before every C{eth_sendTransaction};
  - C{estimate_transfer}: C{eth_estimateGas} of an ERC-20 C{transfer};
  - C{estimate_pending}: the same at C{pending}, as hardhat-ethers asks it
    (the pending block's look-up included);
  - C{estimate_deploy}: C{eth_estimateGas} of the token's deployment;
  - C{estimate_forward}: C{eth_estimateGas} of a C{transfer} made through a
    forwarding contract (deployed first, with tokens of its own): it CALLs
    the token with its call data and all its gas (Solidity's C{GAS CALL}),
    then counts the call in its own storage, as contracts that call other
    contracts do (ERC-4626 vaults, wrappers, ERC-1363 callbacks);
  - C{estimate_send}: C{eth_estimateGas} of a C{transfer}, then its
    C{eth_sendTransaction} with that gas (Hardhat's pair), timed together;
  - C{send_transfer}: C{eth_sendTransaction} of an ERC-20 C{transfer}
    (gas given; automined: the answer follows the block);
  - C{lookups}: after one C{send_transfer} (not counted), what ethers and
    hardhat-chai-matchers ask next: C{eth_getTransactionByHash},
    C{eth_getTransactionReceipt}, C{eth_getBlockByNumber latest},
    C{eth_getBlockByHash} (each timed on its own);
  - C{snapshot_revert}: C{evm_snapshot}, one C{send_transfer}, C{evm_revert}
    (what C{loadFixture} costs a test), at the chain's length, then again
    after C{hardhat_mine} of C{--long} blocks;
  - C{call}: C{eth_call} of C{balanceOf} a different holder each time;
  - C{call_parent}: the same at the block below the head (as
    hardhat-chai-matchers' C{changeTokenBalance} asks, before and after a
    transaction's block).

Usage::

    python benchmarks/suite_calls.py [--checkouts /work/wt/perf-base,/work/wt/perf] [--rounds 3]
        [--count 200] [--scenarios estimate_transfer,lookups] [--pin] [--long 10000] [--callgrind]

With C{--callgrind} each node runs under valgrind's callgrind, collecting
from the end of the deployment, and the figures are thousands of machine
instructions per call (user space; the machine's load does not move them;
the node runs some fifty times slower: use a C{--count} of a few dozen).

The table gives, per scenario and checkout, the range over the rounds of
the node's CPU milliseconds per call (and of the client's wall
milliseconds per call).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parent
REPOSITORY = BENCHMARKS.parent
sys.path.insert(0, str(BENCHMARKS))

from nodeprocess import NODEX_SERVER, free_port, wait_for_rpc  # noqa: E402
from transfers import RawSender  # noqa: E402

TOKEN = REPOSITORY / "tests" / "data" / "contracts" / "Token.json"
SCENARIOS = (
    "chain_id", "chain_id_split", "chain_id_pipelined", "block_number", "fee_history", "estimate_transfer", "estimate_pending", "estimate_deploy", "estimate_forward", "estimate_send", "send_transfer", "lookups",
    "snapshot_revert", "call", "call_parent",
)


def cpu_seconds(pid: int) -> float:
    """
    The CPU time all the process's threads have used so far, to the
    nanosecond (the scheduler's C{schedstat}; C{/proc/PID/stat} counts in
    10 ms ticks).
    """
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            continue  # a thread that ended meanwhile
    return total / 1e9


class Client:
    """
    JSON-RPC over one keep-alive HTTP connection, each request written in
    one piece as Node's HTTP client writes it (or, with L{call_split}, its
    head and body apart, as Python's C{http.client} writes them).
    """

    HEAD = b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"

    def __init__(self, port: int, split_pause: float = 0.001) -> None:
        self._sender = RawSender(port)
        self._ids = 0
        self._split_pause = split_pause

    def _body(self, method: str, params: tuple[Any, ...]) -> bytes:
        self._ids += 1
        return json.dumps({"jsonrpc": "2.0", "id": self._ids, "method": method, "params": list(params)}).encode()

    @staticmethod
    def _result(method: str, answer: bytes) -> Any:
        decoded = json.loads(answer)
        if "error" in decoded:
            raise RuntimeError(f"{method}: {decoded['error']}")
        return decoded["result"]

    def call(self, method: str, *params: Any) -> Any:
        """
        One request; its result, or L{RuntimeError}.
        """
        body = self._body(method, params)
        return self._result(method, self._sender.exchange(self.HEAD % len(body) + body))

    def call_split(self, method: str, *params: Any) -> Any:
        """
        One request, its head and its body written apart (a pause between).
        """
        body = self._body(method, params)
        self._sender._socket.sendall(self.HEAD % len(body))
        time.sleep(self._split_pause)
        return self._result(method, self._sender.exchange(body))

    def call_pipelined(self, method: str, count: int) -> list[Any]:
        """
        C{count} requests without parameters in one write; their results.
        """
        bodies = [self._body(method, ()) for _ in range(count)]
        self._sender._socket.sendall(b"".join(self.HEAD % len(body) + body for body in bodies))
        return [self._result(method, self._sender.exchange(b"")) for _ in bodies]


class CallgrindMeter:
    """
    The instructions of a node run under callgrind (C{--callgrind}), in
    millions, since the last reading: each reading dumps its counters
    (which zeroes them), so that a step's figure is the second of two
    readings, and the load of the machine does not move it.
    """

    def __init__(self, pid: int, folder: Path) -> None:
        self.pid = pid
        self.folder = folder

    def start(self) -> None:
        """
        Start collecting (after the deployment).
        """
        subprocess.run(["callgrind_control", "-i", "on", str(self.pid)], check=True, capture_output=True)
        self()

    def __call__(self) -> float:
        before = set(self.folder.glob("callgrind.out*"))
        subprocess.run(["callgrind_control", "-d", str(self.pid)], check=True, capture_output=True)
        dumps = [path for path in self.folder.glob("callgrind.out*") if path not in before]
        newest = max(dumps, key=lambda path: path.stat().st_mtime)
        for line in newest.read_text().splitlines():
            if line.startswith("totals:"):
                newest.unlink()
                # Each reading is relative to the previous one: the callers
                # subtract the reading before from the one after.
                self.total = getattr(self, "total", 0.0) + int(line.split()[1]) / 1e6
                return self.total
        raise RuntimeError("no total in the callgrind dump")


def word(value: int | str) -> str:
    """
    A 32-byte ABI word in hex (an address, or a number).
    """
    if isinstance(value, str):
        return value[2:].rjust(64, "0")
    return f"{value:064x}"


class Scenarios:
    """
    The scenarios against one started node.
    """

    def __init__(self, client: Client, meter: Callable[[], float], count: int, long: int) -> None:
        """
        @param meter: the node's work so far: its CPU seconds, or (under
            callgrind) a millionth of its instructions since it last read.
        """
        self.client = client
        self.meter = meter
        self.count = count
        self.long = long
        self.sender = client.call("eth_accounts")[0]
        artifact = json.loads(TOKEN.read_text())
        arguments = (
            word(96) + word(160) + word(10**24) + word(5) + b"Token".hex().ljust(64, "0")
            + word(3) + b"TOK".hex().ljust(64, "0")
        )
        self.deploy = {"from": self.sender, "data": artifact["bytecode"] + arguments, "gas": hex(3_000_000)}
        receipt = client.call("eth_getTransactionReceipt", client.call("eth_sendTransaction", self.deploy))
        self.token = receipt["contractAddress"]
        self.recipients = 0

    def transfer(self) -> dict[str, str]:
        """
        An ERC-20 transfer of 1 to a new recipient.
        """
        self.recipients += 1
        recipient = "0x" + f"{0xBEEF0000 + self.recipients:040x}"
        data = "0xa9059cbb" + word(recipient) + word(1)
        return {"from": self.sender, "to": self.token, "data": data}

    def timed(self, step: Callable[[], Any], setup: Callable[[], Any] | None = None) -> tuple[float, float]:
        """
        Repeat C{step} C{count} times (after C{setup}, untimed, each time).

        @return: node CPU ms and client wall ms per step.
        """
        cpu = wall = 0.0
        for _ in range(self.count):
            if setup is not None:
                setup()
            before_cpu, before_wall = self.meter(), time.perf_counter()
            step()
            wall += time.perf_counter() - before_wall
            cpu += self.meter() - before_cpu
        return 1000 * cpu / self.count, 1000 * wall / self.count

    def timed_batch(self, step: Callable[[], Any]) -> tuple[float, float]:
        """
        Repeat C{step} C{count} times, timing all of them together (the
        CPU counter's tick, 10 ms, is too coarse for one cheap call).
        """
        before_cpu, before_wall = self.meter(), time.perf_counter()
        for _ in range(self.count):
            step()
        wall = time.perf_counter() - before_wall
        cpu = self.meter() - before_cpu
        return 1000 * cpu / self.count, 1000 * wall / self.count

    def run(self, name: str) -> dict[str, tuple[float, float]]:
        """
        One scenario; its figures by row label.
        """
        call = self.client.call
        if name == "chain_id":
            return {"eth_chainId": self.timed_batch(lambda: call("eth_chainId"))}
        if name == "chain_id_split":
            return {"eth_chainId, head and body apart": self.timed_batch(lambda: self.client.call_split("eth_chainId"))}
        if name == "chain_id_pipelined":
            cpu, wall = self.timed_batch(lambda: self.client.call_pipelined("eth_chainId", 10))
            return {"eth_chainId, pipelined by ten (per request)": (cpu / 10, wall / 10)}
        if name == "block_number":
            return {"eth_blockNumber": self.timed_batch(lambda: call("eth_blockNumber"))}
        if name == "fee_history":
            return {"eth_feeHistory": self.timed_batch(lambda: call("eth_feeHistory", "0x1", "latest", [50]))}
        if name == "estimate_transfer":
            return {"eth_estimateGas transfer": self.timed_batch(lambda: call("eth_estimateGas", self.transfer()))}
        if name == "estimate_pending":
            return {"eth_estimateGas transfer at pending": self.timed_batch(lambda: call("eth_estimateGas", self.transfer(), "pending"))}
        if name == "estimate_deploy":
            deploy = {key: value for key, value in self.deploy.items() if key != "gas"}
            return {"eth_estimateGas deploy": self.timed_batch(lambda: call("eth_estimateGas", deploy))}
        if name == "estimate_forward":
            forwarder = self.forwarder()

            def forwarded() -> None:
                call("eth_estimateGas", dict(self.transfer(), to=forwarder))
            return {"eth_estimateGas transfer through a forwarder": self.timed_batch(forwarded)}
        if name == "send_transfer":
            return {"eth_sendTransaction transfer": self.timed_batch(lambda: call("eth_sendTransaction", self.send()))}
        if name == "estimate_send":
            def estimate_then_send() -> None:
                transfer = self.transfer()
                gas = call("eth_estimateGas", transfer)
                call("eth_sendTransaction", dict(transfer, gas=gas))
            return {"eth_estimateGas then eth_sendTransaction (the pair)": self.timed_batch(estimate_then_send)}
        if name == "lookups":
            return self.lookups()
        if name == "snapshot_revert":
            short = self.snapshot_revert()
            call("hardhat_mine", hex(self.long))
            long = self.snapshot_revert()
            return {
                **{label: figures for label, figures in short.items()},
                **{f"{label}, {self.long} blocks later": figures for label, figures in long.items()},
            }
        if name == "call":
            def balance() -> None:
                self.recipients += 1
                call("eth_call", {"to": self.token, "data": "0x70a08231" + word(self.recipients)}, "latest")
            return {"eth_call balanceOf": self.timed_batch(balance)}
        if name == "call_parent":
            # A block on the deployment's, so that the parent is a recent block too.
            call("eth_sendTransaction", self.send())
            parent = hex(int(call("eth_blockNumber"), 16) - 1)

            def balance_before() -> None:
                self.recipients += 1
                call("eth_call", {"to": self.token, "data": "0x70a08231" + word(self.recipients)}, parent)
            return {"eth_call balanceOf at the head's parent": self.timed_batch(balance_before)}
        raise SystemExit(f"unknown scenario {name}")

    def forwarder(self) -> str:
        """
        Deploy a contract that forwards its call data to the token with all
        its gas, reverts if the call failed, else adds one to its storage
        slot 0; give it tokens; return its address.
        """
        call = self.client.call
        # CALLDATACOPY, then CALL(GAS, token, 0, the input, no output).
        calling = "365f5f37" "5f5f365f5f73" + self.token[2:] + "5af1"
        ok = len(calling) // 2 + 6
        runtime = (
            calling + f"60{ok:02x}" "57" "5f5ffd"  # JUMPI to ok, else REVERT(0, 0)
            "5b" "60015f54015f55" "00"  # ok: JUMPDEST, SSTORE(0, SLOAD(0) + 1), STOP
        )
        size = len(runtime) // 2
        initcode = f"60{size:02x}" "80" "6009" "5f" "39" "5f" "f3" + runtime  # CODECOPY the runtime, RETURN it
        receipt = call("eth_getTransactionReceipt", call("eth_sendTransaction", {"from": self.sender, "data": "0x" + initcode, "gas": hex(500_000)}))
        address: str = receipt["contractAddress"]
        call("eth_sendTransaction", {"from": self.sender, "to": self.token, "data": "0xa9059cbb" + word(address) + word(10**20), "gas": hex(100_000)})
        return address

    def send(self) -> dict[str, str]:
        """
        A transfer with its gas given (no estimate in the node).
        """
        return dict(self.transfer(), gas=hex(80_000))

    def snapshot_revert(self) -> dict[str, tuple[float, float]]:
        """
        What loadFixture does around a test: snapshot, a transaction, revert;
        each step timed on its own.
        """
        call = self.client.call
        snapshot = call("evm_snapshot")
        steps = (
            ("evm_snapshot", lambda: call("evm_snapshot")),
            ("eth_sendTransaction after a revert", lambda: call("eth_sendTransaction", self.send())),
            ("evm_revert of one block", lambda: call("evm_revert", snapshot)),
        )
        return self.steps(steps)

    def steps(self, steps: tuple[tuple[str, Callable[[], Any]], ...]) -> dict[str, tuple[float, float]]:
        """
        Run the steps in order C{count} times, timing each on its own.

        @return: node CPU ms and client wall ms per step, by label.
        """
        rows: dict[str, list[tuple[float, float]]] = {}
        for _ in range(self.count):
            for label, step in steps:
                before_cpu, before_wall = self.meter(), time.perf_counter()
                result = step()
                rows.setdefault(label, []).append(
                    (self.meter() - before_cpu, time.perf_counter() - before_wall)
                )
                if result is False:
                    raise RuntimeError(f"{label} answered false")
        return {
            label: (1000 * sum(c for c, _ in values) / len(values), 1000 * sum(w for _, w in values) / len(values))
            for label, values in rows.items()
        }

    def lookups(self) -> dict[str, tuple[float, float]]:
        """
        The look-ups right after a mined transaction, each timed alone.
        """
        rows: dict[str, list[tuple[float, float]]] = {}
        call = self.client.call
        for _ in range(self.count):
            transaction = call("eth_sendTransaction", self.send())
            steps = (
                ("eth_getTransactionByHash", lambda: call("eth_getTransactionByHash", transaction)),
                ("eth_getTransactionReceipt", lambda: call("eth_getTransactionReceipt", transaction)),
                ("eth_getBlockByNumber latest", lambda: call("eth_getBlockByNumber", "latest", False)),
            )
            block_hash = None
            for label, step in steps:
                before_cpu, before_wall = self.meter(), time.perf_counter()
                result = step()
                rows.setdefault(label, []).append(
                    (self.meter() - before_cpu, time.perf_counter() - before_wall)
                )
                block_hash = block_hash or (result or {}).get("blockHash")
            before_cpu, before_wall = self.meter(), time.perf_counter()
            call("eth_getBlockByHash", block_hash, False)
            rows.setdefault("eth_getBlockByHash", []).append(
                (self.meter() - before_cpu, time.perf_counter() - before_wall)
            )
        return {
            label: (1000 * sum(c for c, _ in values) / len(values), 1000 * sum(w for _, w in values) / len(values))
            for label, values in rows.items()
        }


def run_checkout(checkout: Path, options: argparse.Namespace) -> dict[str, tuple[float, float]]:
    """
    Start a node from C{checkout}, run every scenario, stop it.
    """
    port = free_port()
    datadir = Path(tempfile.mkdtemp(prefix="suite-calls-"))
    pin = ["taskset", "-c", "0"] if options.pin else []
    tool = []
    if options.callgrind:
        tool = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={datadir}/callgrind.out"]
    command = [*pin, *tool, sys.executable, "-c", NODEX_SERVER, str(port), str(datadir), "", str(checkout), "0", ""]
    environment = {**os.environ, "PYTHONHASHSEED": "0"}
    if options.callgrind:
        # The inline estimate's 10 ms of CPU, stretched as callgrind slows the node.
        environment["NODEX_BENCH_INLINE_ESTIMATE_TIME"] = "0.5"
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, cwd=datadir, env=environment)
    recorder = None
    try:
        url = f"http://127.0.0.1:{port}/"
        wait_for_rpc(url, process, 600.0 if options.callgrind else 60.0)
        client = Client(port, 0.02 if options.callgrind else 0.001)
        if options.callgrind:
            meter: Callable[[], float] = CallgrindMeter(process.pid, datadir)
        else:
            meter = lambda: cpu_seconds(process.pid)  # noqa: E731
        scenarios = Scenarios(client, meter, options.count, options.long)
        if options.callgrind:
            meter.start()  # type: ignore[attr-defined]
        if options.py_spy:
            recorder = subprocess.Popen(
                [options.py_spy_bin, "record", "--pid", str(process.pid), "--rate", "250", "--gil",
                 "--full-filenames", "--format", "raw", "-o", f"{options.py_spy}.{checkout.name}"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
        figures: dict[str, tuple[float, float]] = {}
        for name in options.scenarios:
            figures.update(scenarios.run(name))
        return figures
    finally:
        if recorder is not None:
            recorder.send_signal(signal.SIGINT)
            recorder.wait(60)
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
        shutil.rmtree(datadir, ignore_errors=True)


def main() -> int:
    """
    Alternate the checkouts; print the table.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkouts", default=str(REPOSITORY), help="comma-separated checkout paths")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--long", type=int, default=10_000, help="blocks mined before the second snapshot figure")
    parser.add_argument("--scenarios", type=lambda text: text.split(","), default=list(SCENARIOS))
    parser.add_argument("--pin", action="store_true", help="the node on core 0, this client on core 1")
    parser.add_argument("--py-spy", help="record each node with py-spy into FILE.<checkout name> (after the deployment)")
    parser.add_argument("--py-spy-bin", default="py-spy", help="the py-spy command")
    parser.add_argument(
        "--callgrind", action="store_true",
        help="run the nodes under callgrind: thousands of instructions per call instead of CPU ms (use a small --count)",
    )
    options = parser.parse_args()
    if options.pin:
        os.sched_setaffinity(0, {1})
    checkouts = [Path(path).resolve() for path in options.checkouts.split(",")]
    results: dict[Path, list[dict[str, tuple[float, float]]]] = {path: [] for path in checkouts}
    for round_number in range(options.rounds):
        order = checkouts if round_number % 2 == 0 else checkouts[::-1]
        for path in order:
            figures = run_checkout(path, options)
            results[path].append(figures)
            print(f"round {round_number + 1} {path} (load {os.getloadavg()[0]:.2f}):", flush=True)
            for label, (cpu, wall) in figures.items():
                print(f"  {label:<40} {cpu:8.3f} ms CPU {wall:8.3f} ms wall", flush=True)
    labels = list(results[checkouts[0]][0])
    print()
    unit = "thousand instructions" if options.callgrind else "CPU ms"
    print("| call | " + " | ".join(f"{path.name} {unit} (wall ms)" for path in checkouts) + " |")
    print("|---|" + "---|" * len(checkouts))
    for label in labels:
        cells = []
        for path in checkouts:
            cpus = [run[label][0] for run in results[path]]
            walls = [run[label][1] for run in results[path]]
            cells.append(f"{min(cpus):.2f}–{max(cpus):.2f} ({min(walls):.2f}–{max(walls):.2f})")
        print(f"| {label} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
