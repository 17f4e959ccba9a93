"""
Automined transfers over RPC against nodex and Hardhat's node, alternated
in one invocation: native and ERC-20 transfers, lockstep and pipelined.

Each node runs in its own process pinned to core 0 (C{taskset -c 0}) and
its own session (so its own scheduling autogroup: the client's CPU does not
count against the node's share), this client on core 1, started fresh for
each round: nodex from one or more
checkouts (C{--checkouts}; regtest, automining), and Hardhat 2's
C{hardhat node} (C{--hardhat}, in a temporary project whose
C{hardhat.config.js} gives chain id 33, base fee 0, Cancun and the cow
accounts, so that the same signed transactions work on both).

Four workloads, each of C{--count} legacy transactions signed in advance
(gas price 0) and sent with C{eth_sendRawTransaction}:

- C{native-lockstep}: 1-wei transfers from cow1, over one keep-alive
  connection, each request after the previous answer;
- C{native-pipelined}: the same from C{--connections} senders (cow1...),
  one keep-alive connection per sender, all connections busy at once
  (each with one request in flight: many in flight in all, as a client
  firing C{Promise.all} of sends gets from Node's HTTP agent, which opens
  sockets rather than pipelining HTTP requests on one; each sender's
  nonces in order on its own connection, since Hardhat's automining
  refuses a nonce ahead);
- C{erc20-lockstep}, C{erc20-pipelined}: C{transfer(recipient, 1)} calls
  of the test token (C{tests/data/contracts/Token.json}, deployed by cow
  and shared out to the senders before the clock starts), the same way.

An answer of both nodes in automining mode comes after the transaction's
block (one block per transaction on both).  The clock stops at the last
answer; then every transaction's receipt is checked (status 1).  Reported:
transactions per second of wall-clock time and the node's CPU time per
transaction (user plus system time of all its threads, from C{/proc}), and
the ratio nodex / Hardhat of each round.

Usage::

    python benchmarks/automine_rpc.py [--checkouts PATH,PATH] [--rounds 2] [--count 2000]
        [--connections 8] [--workloads native-lockstep,...] [--no-hardhat] [--interleave 4]
        [--callgrind [--keep-dumps FOLDER]]

C{--interleave SLICES} starts every node of a round at once and cuts each
workload into that many consecutive slices, which the nodes take in turn
(A B B A...): the host's speed drifts by up to half within seconds on a
shared machine, and a node measured a few seconds after the other may meet
another host; slice by slice, both meet the same one.  A node's rate is
then its transactions over the summed time of its slices.

C{--callgrind} runs each nodex node under valgrind's callgrind instead,
collecting only while a workload runs, and reports the node's machine
instructions per transaction (the load of the machine does not move
them; use a few hundred transactions: the node runs about 50 times slower).
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from nodeprocess import NODEX_SERVER, free_port  # noqa: E402
from transfers import CHAIN_ID, Client, RawSender, stop_node, token_creation, wait_for_port  # noqa: E402

from nodex.crypto import keccak256, private_key_to_address  # noqa: E402
from nodex.structures.transactions import LegacyTransaction, sign_transaction  # noqa: E402

REPOSITORY = Path(__file__).resolve().parent.parent
NODE_MODULES = Path(os.environ.get("NODE_PATH", "/work/npm/node_modules").split(":")[0])
HARDHAT = str(NODE_MODULES / "hardhat" / "internal" / "cli" / "bootstrap.js")
DEPLOYER = keccak256(b"cow")
RECIPIENT = keccak256(b"automine_rpc recipient")[12:]
WORKLOADS = ("native-lockstep", "native-pipelined", "erc20-lockstep", "erc20-pipelined")

HARDHAT_CONFIG = """
module.exports = {
  networks: {
    hardhat: {
      chainId: %(chain_id)d,
      hardfork: "cancun",
      initialBaseFeePerGas: 0,
      mining: { auto: true },
      accounts: %(accounts)s,
    },
  },
};
"""


def sender_key(index: int) -> bytes:
    """
    The key of sender C{index} (0-based): cow1, cow2, ... (funded on regtest).
    """
    return keccak256(f"cow{index + 1}".encode())


class Plan:
    """
    Every transaction of one round, signed in advance, nonces counted per sender.
    """

    def __init__(self, count: int, connections: int, workloads: list[str]) -> None:
        self._nonces: dict[bytes, int] = {}
        deployer = private_key_to_address(DEPLOYER)
        self.token = keccak256(bytes([0xD6, 0x94]) + deployer + b"\x80")[12:]
        # Setup, untimed: the deployment, then a share of the tokens to each sender.
        self.setup = [self._sign(DEPLOYER, b"", token_creation(), gas=3_000_000)]
        for index in range(connections):
            self.setup.append(self._sign(DEPLOYER, self.token, self._transfer(private_key_to_address(sender_key(index)), 10**20), gas=100_000))
        self.workloads: dict[str, list[list[str]]] = {}
        for name in workloads:
            lanes = 1 if name.endswith("lockstep") else connections
            erc20 = name.startswith("erc20")
            self.workloads[name] = [
                [
                    self._sign(sender_key(lane), self.token, self._transfer(RECIPIENT, 1), gas=60_000)
                    if erc20 else self._sign(sender_key(lane), RECIPIENT, b"", value=1)
                    for _ in range(count // lanes)
                ]
                for lane in range(lanes)
            ]

    @staticmethod
    def _transfer(to: bytes, amount: int) -> bytes:
        return keccak256(b"transfer(address,uint256)")[:4] + to.rjust(32, b"\x00") + amount.to_bytes(32, "big")

    def _sign(self, key: bytes, to: bytes, data: bytes, gas: int = 21_000, value: int = 0) -> str:
        nonce = self._nonces.get(key, 0)
        self._nonces[key] = nonce + 1
        transaction = sign_transaction(LegacyTransaction(nonce, 0, gas, to, value, data), key, CHAIN_ID)
        return "0x" + transaction.encode().hex()


def scheduler_seconds(pid: int) -> tuple[float, float]:
    """
    The CPU time of the process (all its threads) so far and the time its
    threads waited for a CPU while runnable, in seconds (the scheduler's
    per-thread C{schedstat}, to the nanosecond).
    """
    running = waiting = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "schedstat").read_text().split()
        except OSError:
            continue
        running += int(fields[0])
        waiting += int(fields[1])
    return running / 1e9, waiting / 1e9


def answer_of(body: bytes) -> str:
    """
    The result of one C{eth_sendRawTransaction} answer, or L{RuntimeError}.
    """
    answer = json.loads(body)
    if "error" in answer:
        raise RuntimeError(f"refused: {answer['error']}")
    return str(answer["result"])


def take_answer(buffer: bytes) -> tuple[bytes | None, bytes]:
    """
    The body of the first whole HTTP answer in C{buffer} (C{Content-Length}
    or chunked, as Hardhat's node answers) and the bytes after it; L{None}
    while the answer is incomplete.
    """
    head, separator, rest = buffer.partition(b"\r\n\r\n")
    if not separator:
        return None, buffer
    lowered = head.lower()
    if b"content-length:" in lowered:
        length = int(lowered.split(b"content-length:")[1].split(b"\r\n")[0])
        if len(rest) < length:
            return None, buffer
        return rest[:length], rest[length:]
    body = b""
    while True:
        size_line, found, after = rest.partition(b"\r\n")
        if not found:
            return None, buffer
        size = int(size_line.split(b";")[0], 16)
        if len(after) < size + 2:
            return None, buffer
        if size == 0:
            return body, after[2:]
        body += after[:size]
        rest = after[size + 2:]


def run_lanes(port: int, lanes: list[list[str]]) -> tuple[float, list[str]]:
    """
    Send each lane's transactions in order over its own keep-alive
    connection, one request in flight per connection, all connections at
    once (one lane: lockstep).

    @return: the elapsed seconds to the last answer, and the hashes.
    """
    requests = [[RawSender.request(raw, index) for index, raw in enumerate(lane)] for lane in lanes]
    sockets = []
    for _ in lanes:
        connection = socket.create_connection(("127.0.0.1", port))
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sockets.append(connection)
    hashes: list[str] = []
    selector = selectors.DefaultSelector()
    try:
        buffers = [b""] * len(lanes)
        sent = [1] * len(lanes)
        for number, connection in enumerate(sockets):
            selector.register(connection, selectors.EVENT_READ, number)
        remaining = sum(len(lane) for lane in requests)
        started = time.perf_counter()
        for number, connection in enumerate(sockets):
            connection.sendall(requests[number][0])
        while remaining:
            for key, _ in selector.select():
                number = key.data
                data = sockets[number].recv(65536)
                if not data:
                    raise RuntimeError("the node closed a connection")
                buffers[number] += data
                while True:
                    body, buffers[number] = take_answer(buffers[number])
                    if body is None:
                        break
                    hashes.append(answer_of(body))
                    remaining -= 1
                    if sent[number] < len(requests[number]):
                        sockets[number].sendall(requests[number][sent[number]])
                        sent[number] += 1
        return time.perf_counter() - started, hashes
    finally:
        selector.close()
        for connection in sockets:
            connection.close()


def check_receipts(client: Client, hashes: list[str]) -> None:
    """
    Every transaction mined with status 1, each in a block of its own.
    """
    blocks = set()
    for transaction in hashes:
        receipt = client.call("eth_getTransactionReceipt", transaction)
        if receipt is None or receipt["status"] != "0x1":
            raise RuntimeError(f"transaction {transaction} not mined or failed: {receipt}")
        blocks.add(receipt["blockNumber"])
    if len(blocks) != len(hashes):
        raise RuntimeError(f"{len(hashes)} transactions in {len(blocks)} blocks")


def start_nodex(checkout: Path, port: int, datadir: str, callgrind: bool = False) -> subprocess.Popen[bytes]:
    """
    A nodex node of C{checkout} on core 0 (under callgrind, collecting
    nothing until told, with C{callgrind}).
    """
    tool = []
    if callgrind:
        tool = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={datadir}/callgrind.out"]
    command = ["taskset", "-c", "0", *tool, sys.executable, "-c", NODEX_SERVER, str(port), datadir, "", str(checkout), "0", ""]
    environment = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONHASHSEED": "0"}
    return subprocess.Popen(
        command, cwd=checkout, env=environment, stderr=subprocess.DEVNULL if callgrind else None, start_new_session=True
    )


def callgrind_instructions(pid: int, folder: str, run, keep: str | None = None) -> tuple[object, int]:
    """
    Run C{run()} with the node's callgrind collecting; the instructions it
    executed meanwhile (its dump's total).  With C{keep}, the dump is
    copied to that path (for C{callgrind_annotate}).
    """
    subprocess.run(["callgrind_control", "-z", str(pid)], check=True, capture_output=True)
    subprocess.run(["callgrind_control", "-i", "on", str(pid)], check=True, capture_output=True)
    result = run()
    subprocess.run(["callgrind_control", "-i", "off", str(pid)], check=True, capture_output=True)
    before = set(Path(folder).glob("callgrind.out*"))
    subprocess.run(["callgrind_control", "-d", str(pid)], check=True, capture_output=True)
    dumps = [path for path in Path(folder).glob("callgrind.out*") if path not in before]
    dump = max(dumps, key=lambda path: path.stat().st_mtime)
    if keep is not None:
        shutil.copyfile(dump, keep)
    for line in dump.read_text().splitlines():
        if line.startswith("totals:"):
            return result, int(line.split()[1])
    raise RuntimeError("no total in the callgrind dump")


def start_hardhat(port: int, project: str) -> subprocess.Popen[bytes]:
    """
    Hardhat's node on core 0, in a project whose config knows the senders.
    """
    accounts = [{"privateKey": "0x" + key.hex(), "balance": str(10**24)} for key in [DEPLOYER] + [sender_key(i) for i in range(9)]]
    # Hardhat refuses to run from an installation outside the project.
    Path(project, "node_modules").symlink_to(NODE_MODULES)
    Path(project, "package.json").write_text('{"name": "automine-rpc", "version": "1.0.0"}')
    Path(project, "hardhat.config.js").write_text(HARDHAT_CONFIG % {"chain_id": CHAIN_ID, "accounts": json.dumps(accounts)})
    command = ["taskset", "-c", "0", "node", HARDHAT, "node", "--hostname", "127.0.0.1", "--port", str(port)]
    return subprocess.Popen(
        command, cwd=project, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )


def set_up(label: str, process: subprocess.Popen[bytes], port: int, plan: Plan) -> Client:
    """
    Wait for a started node, deploy the token and share it out (untimed).

    @return: a client of the node.
    """
    wait_for_port(port, process, timeout=600)
    client = Client(port)
    for raw in plan.setup:
        client.send_raw(raw)
    if len(client.call("eth_getCode", "0x" + plan.token.hex(), "latest")) < 10:
        raise RuntimeError(f"{label}: the token was not deployed")
    return client


def run_node(
    label: str, start, plan: Plan, workloads: list[str], callgrind: bool = False, keep: str | None = None
) -> dict[str, tuple[float, float]]:
    """
    Start a node, set up the token, run the workloads, stop the node.

    @return: per workload, transactions per second and node CPU ms per
        transaction (with C{callgrind}: thousands of instructions per
        transaction, twice; with C{keep}, each workload's dump is copied
        into that folder).
    """
    folder = tempfile.mkdtemp(prefix="automine-rpc-")
    port = free_port()
    process = start(port, folder)
    figures: dict[str, tuple[float, float]] = {}
    try:
        client = set_up(label, process, port, plan)
        for name in workloads:
            lanes = plan.workloads[name]
            count = sum(len(lane) for lane in lanes)
            if callgrind:
                copy = None
                if keep is not None:
                    copy = str(Path(keep, f"callgrind.{Path(label.partition(':')[2]).name}.{name}.{time.time():.0f}"))
                (seconds, hashes), instructions = callgrind_instructions(
                    process.pid, folder, lambda: run_lanes(port, lanes), copy
                )
                client = Client(port)
                check_receipts(client, hashes)
                figures[name] = (instructions / count / 1000, instructions / count / 1000)
                print(f"  {label} {name}: {instructions / count / 1000:,.0f} thousand instructions per transaction", flush=True)
                continue
            cpu, waited = scheduler_seconds(process.pid)
            seconds, hashes = run_lanes(port, lanes)
            cpu_after, waited_after = scheduler_seconds(process.pid)
            cpu, waited = cpu_after - cpu, waited_after - waited
            # A fresh connection: Hardhat closes one idle for 5 s.
            client = Client(port)
            check_receipts(client, hashes)
            figures[name] = (count / seconds, 1000 * cpu / count)
            print(
                f"  {label} {name}: {count / seconds:,.0f} tx/s, node CPU {1000 * cpu / count:.3f} ms/tx"
                f" (busy {cpu / seconds:.0%} of the time, waiting for a CPU {waited / seconds:.0%})",
                flush=True,
            )
    finally:
        stop_node(process, folder)
    return figures


def run_interleaved(
    nodes: list[tuple[str, object]], plan: Plan, workloads: list[str], slices: int, round_number: int
) -> dict[str, dict[str, tuple[float, float]]]:
    """
    One round with every node running at once: each workload is cut into
    C{slices} consecutive slices (each sender's nonces in order), and the
    nodes take turns slice by slice, in the order A B B A A B... (reversed
    every other round), so that each node's slices sit within a second or
    two of the other's and a slow spell of the host falls on both alike.

    @return: per node, per workload, transactions per second over its
        slices (their summed time) and node CPU ms per transaction.
    """
    running = []
    try:
        for label, start in nodes:
            folder = tempfile.mkdtemp(prefix="automine-rpc-")
            port = free_port()
            running.append((label, start(port, folder), port, folder))
        for label, process, port, _ in running:
            set_up(label, process, port, plan)
        figures: dict[str, dict[str, tuple[float, float]]] = {label: {} for label, _, _, _ in running}
        for name in workloads:
            lanes = plan.workloads[name]
            count = sum(len(lane) for lane in lanes)
            spent = {label: [0.0, 0.0] for label, _, _, _ in running}
            hashes: dict[str, list[str]] = {label: [] for label, _, _, _ in running}
            for part in range(slices):
                order = running if (part + round_number) % 2 == 0 else running[::-1]
                for label, process, port, _ in order:
                    cut = [lane[len(lane) * part // slices : len(lane) * (part + 1) // slices] for lane in lanes]
                    cpu, _ = scheduler_seconds(process.pid)
                    seconds, answered = run_lanes(port, cut)
                    spent[label][0] += seconds
                    spent[label][1] += scheduler_seconds(process.pid)[0] - cpu
                    hashes[label] += answered
            for label, process, port, _ in running:
                check_receipts(Client(port), hashes[label])
                seconds, cpu = spent[label]
                figures[label][name] = (count / seconds, 1000 * cpu / count)
                print(f"  {label} {name}: {count / seconds:,.0f} tx/s, node CPU {1000 * cpu / count:.3f} ms/tx", flush=True)
        return figures
    finally:
        for _, process, _, folder in running:
            stop_node(process, folder)


def main() -> None:
    """
    Alternate the nodes round by round; print each round and a table of ranges.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkouts", default=str(REPOSITORY), help="comma-separated nodex checkout paths")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--connections", type=int, default=8, help="pipelined: connections (senders), at most 9")
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--no-hardhat", action="store_true")
    parser.add_argument(
        "--callgrind", action="store_true",
        help="run the nodex nodes under callgrind and report instructions per transaction (no Hardhat)",
    )
    parser.add_argument("--keep-dumps", metavar="FOLDER", help="with --callgrind: copy each workload's dump there")
    parser.add_argument(
        "--interleave", type=int, metavar="SLICES", default=0,
        help="run every node at once and alternate them slice by slice within each workload (timings only)",
    )
    options = parser.parse_args()
    workloads = options.workloads.split(",")
    if not 1 <= options.connections <= 9:
        parser.error("--connections: 1 to 9 (the funded cow accounts)")
    try:
        os.sched_setaffinity(0, {1})
    except (AttributeError, OSError):
        pass
    print(f"signing {options.count} transactions per workload in advance...", flush=True)
    plan = Plan(options.count, options.connections, workloads)
    nodes: list[tuple[str, object]] = []
    for path in options.checkouts.split(","):
        checkout = Path(path).resolve()
        nodes.append((f"nodex:{checkout}", lambda port, folder, checkout=checkout: start_nodex(checkout, port, folder)))
    if options.callgrind:
        options.no_hardhat = True
        nodes = [
            (label, lambda port, folder, checkout=Path(label.partition(":")[2]): start_nodex(checkout, port, folder, True))
            for label, _ in nodes
        ]
    if not options.no_hardhat:
        nodes.append(("hardhat", start_hardhat))
    results: dict[str, list[dict[str, tuple[float, float]]]] = {label: [] for label, _ in nodes}
    for round_number in range(options.rounds):
        order = nodes if round_number % 2 == 0 else nodes[::-1]
        load = os.getloadavg()[0]
        print(f"round {round_number + 1} (load {load:.1f})", flush=True)
        if options.interleave and not options.callgrind:
            figures = run_interleaved(nodes, plan, workloads, options.interleave, round_number)
            for label, _ in nodes:
                results[label].append(figures[label])
            continue
        for label, start in order:
            results[label].append(run_node(label, start, plan, workloads, options.callgrind, options.keep_dumps))
    print(f"\nload average now {os.getloadavg()[0]:.1f}; {options.count} transactions per workload,"
          f" pipelined over {options.connections} connections\n")
    unit = "thousand instructions/tx" if options.callgrind else "tx/s (CPU ms/tx)"
    print("| workload | " + " | ".join(f"{label} {unit}" for label, _ in nodes) + " |")
    print("|---|" + "---|" * len(nodes))
    for name in workloads:
        cells = []
        for label, _ in nodes:
            rates = [figures[name][0] for figures in results[label]]
            cpus = [figures[name][1] for figures in results[label]]
            if options.callgrind:
                cells.append(f"{min(rates):,.0f}–{max(rates):,.0f}")
            else:
                cells.append(f"{min(rates):,.0f}–{max(rates):,.0f} ({min(cpus):.2f}–{max(cpus):.2f})")
        print(f"| {name} | " + " | ".join(cells) + " |")
    if not options.no_hardhat:
        print("\nper round, nodex / Hardhat tx/s:")
        for label, _ in nodes[:-1]:
            for name in workloads:
                ratios = [ours[name][0] / theirs[name][0] for ours, theirs in zip(results[label], results["hardhat"])]
                print(f"  {label} {name}: " + ", ".join(f"{ratio:.2f}" for ratio in ratios))


if __name__ == "__main__":
    main()
