"""
Does the reactor ever wait?  The latency of C{eth_blockNumber} (p50, p99,
max; one keep-alive connection, one request after another) while the node
does heavy work elsewhere:

  - C{import}: the node imports a run of 10,000 blocks through its chain
    service (the door of every block), as peer-to-peer sync will;
  - C{call}: another client runs an C{eth_call} of about five seconds;
  - C{automine}: a devnet node (difficulty 131,072: the seal is searched for
    real) with C{--mining auto} under a stream of transactions.

Also the import rate of chain files (C{nodex import}: empty blocks and
blocks of ten native transfers) into a fresh data directory.

The node runs in a child process pinned to CPU 0, the clients on CPU 1
(when the machine has two).  Run from the checkout::

    python benchmarks/reactor_latency.py [import|call|automine|files ...]
"""

import http.client
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nodex.chaintool import run_export, run_import  # noqa: E402
from nodex.config import load_config  # noqa: E402
from nodex.crypto import private_key_to_address  # noqa: E402
from nodex.services.accounts import regtest_keys  # noqa: E402
from nodex.structures.transactions import LegacyTransaction, sign_transaction  # noqa: E402
from tests.test_chaintool import make_datadir  # noqa: E402

NODE = r"""
import json, sys, time
from twisted.internet import reactor
import nodex.node as node_composition
from nodex.config import load_config
from nodex.chain.aside import FILE
from nodex.chain.chainfile import read_blocks
layer = json.loads(sys.argv[2])
layer["datadir"] = sys.argv[1]
layer.setdefault("rpc", {})["endpoint"] = "tcp:0:interface=127.0.0.1"
layer["rpc"].setdefault("ws", "none")
config = load_config(None, layer)
node = node_composition.compose(config, reactor)
node.startService()

blocks = []
if len(sys.argv) > 3:
    # Read before the reactor runs: decoding the file is the benchmark's work, not the node's.
    with open(sys.argv[3], "rb") as source:
        blocks = [block for block, _ in read_blocks(source) if block.number > 0]

def start_import(path):
    started = time.perf_counter()
    done = node.chain.import_blocks(blocks, FILE)
    done.addCallback(lambda found: print("IMPORTED", len(found), time.perf_counter() - started, flush=True))

def listening(port):
    print("PORT", port.getHost().port, flush=True)
    if len(sys.argv) > 3:
        reactor.callLater(1.0, start_import, sys.argv[3])

node.getServiceNamed("rpc").when_listening().addCallback(listening)
reactor.run()
"""

CHAIN_ID_DEVNET = 32


def pin(cpu: int) -> None:
    """
    Keep this process on one CPU, when there are two.
    """
    if hasattr(os, "sched_setaffinity") and os.cpu_count() and os.cpu_count() > 1:
        os.sched_setaffinity(0, {cpu})


def start_node(datadir: str, layer: dict, import_file: str | None = None) -> tuple[subprocess.Popen, int]:
    """
    Start a node on CPU 0; its process and RPC port.
    """
    argv = [sys.executable, "-c", NODE, datadir, json.dumps(layer)] + ([import_file] if import_file else [])
    prefix = ["taskset", "-c", "0"] if shutil.which("taskset") and (os.cpu_count() or 1) > 1 else []
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    process = subprocess.Popen(prefix + argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
    assert process.stdout is not None
    while True:
        line = process.stdout.readline()
        if not line:
            raise SystemExit("the node did not start")
        if line.startswith("PORT"):
            return process, int(line.split()[1])


def rpc(connection: http.client.HTTPConnection, method: str, params: list) -> object:
    """
    One JSON-RPC request on a keep-alive connection.
    """
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    connection.request("POST", "/", body, {"Content-Type": "application/json"})
    answer = json.loads(connection.getresponse().read())
    if "error" in answer:
        raise RuntimeError(answer["error"])
    return answer["result"]


def measure(port: int, until: threading.Event, latencies: list[float]) -> None:
    """
    eth_blockNumber one after another until C{until} is set.
    """
    connection = http.client.HTTPConnection("127.0.0.1", port)
    while not until.is_set():
        started = time.perf_counter()
        rpc(connection, "eth_blockNumber", [])
        latencies.append(time.perf_counter() - started)
    connection.close()


def summary(name: str, latencies: list[float]) -> str:
    """
    p50, p99 and max in milliseconds.
    """
    ordered = sorted(latencies)
    p50 = ordered[len(ordered) // 2] * 1000
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000
    return f"{name}: eth_blockNumber n={len(ordered)} p50 {p50:.2f} ms, p99 {p99:.2f} ms, max {ordered[-1] * 1000:.1f} ms"


def scenario_import(work: Path) -> str:
    """
    eth_blockNumber while the node imports 10,000 empty blocks.
    """
    source = work / "import-source"
    chain_file = work / "import.rlp"
    make_datadir(str(source), 10_000, 0)
    run_export([str(chain_file), "--datadir", str(source)], io.StringIO(), io.StringIO())
    process, port = start_node(str(work / "import-node"), {}, str(chain_file))
    latencies: list[float] = []
    until = threading.Event()
    client = threading.Thread(target=measure, args=(port, until, latencies))
    client.start()
    assert process.stdout is not None
    line = process.stdout.readline()
    until.set()
    client.join()
    process.kill()
    process.wait()
    _, count, seconds = line.split()
    rate = int(count) / float(seconds)
    return summary("import", latencies) + f" (import of {count} blocks: {rate:,.0f} blocks/s while serving)"


LOOP_CODE = "0x5b600056"  # JUMPDEST PUSH1 0 JUMP: runs until its gas is gone.


def scenario_call(work: Path) -> str:
    """
    eth_blockNumber while another client runs an eth_call of about five seconds.
    """
    layer = {"rpc": {"timeout": 60.0, "call_gas_cap": 1_000_000_000}}
    process, port = start_node(str(work / "call-node"), layer)
    latencies: list[float] = []
    until = threading.Event()
    client = threading.Thread(target=measure, args=(port, until, latencies))
    long_call = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    started = time.perf_counter()
    call = {"to": "0x" + "42" * 20, "gas": hex(150_000_000)}
    overrides = {"0x" + "42" * 20: {"code": LOOP_CODE}}
    client.start()
    time.sleep(0.2)
    rpc(long_call, "eth_call", [call, "latest", overrides])
    took = time.perf_counter() - started - 0.2
    time.sleep(0.2)
    until.set()
    client.join()
    process.kill()
    process.wait()
    return summary("call", latencies) + f" (the eth_call took {took:.1f} s)"


def scenario_automine(work: Path, seconds: float = 10.0) -> str:
    """
    eth_blockNumber on a devnet node (real seal search) automining a stream
    of transactions sent by a second client.
    """
    key = regtest_keys()[0]
    sender = "0x" + private_key_to_address(key).hex()
    layer = {
        "network": "devnet",
        "mining": {"mode": "auto"},
        "p2p": {"endpoint": "none"},
        # A genesis table replaces the preset's whole: the preset's, with a funded sender.
        "genesis": {**load_config(None, {"network": "devnet"}).genesis, "alloc": {sender: {"balance": str(10**30)}}},
    }
    process, port = start_node(str(work / "automine-node"), layer)
    latencies: list[float] = []
    until = threading.Event()
    client = threading.Thread(target=measure, args=(port, until, latencies))
    client.start()
    sending = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    deadline = time.perf_counter() + seconds
    nonce = 0
    while time.perf_counter() < deadline:
        unsigned = LegacyTransaction(nonce, 0, 21_000, b"\x55" * 20, 1, b"")
        raw = sign_transaction(unsigned, key, CHAIN_ID_DEVNET).encode()
        rpc(sending, "eth_sendRawTransaction", ["0x" + raw.hex()])
        nonce += 1
    blocks = int(rpc(sending, "eth_blockNumber", []), 16)
    until.set()
    client.join()
    process.kill()
    process.wait()
    return summary("automine", latencies) + f" ({nonce} transactions in {seconds:.0f} s, {blocks} blocks sealed)"


def scenario_files(work: Path) -> str:
    """
    C{nodex import} of 10,000 empty blocks and of 2,000 blocks of ten
    transfers into a fresh data directory, on one CPU.
    """
    pin(0)
    lines = []
    for count, transfers in ((10_000, 0), (2_000, 10)):
        source = work / f"files-{count}-{transfers}"
        chain_file = work / f"files-{count}-{transfers}.rlp"
        make_datadir(str(source), count, transfers)
        run_export([str(chain_file), "--datadir", str(source)], io.StringIO(), io.StringIO())
        target = work / f"files-target-{count}-{transfers}"
        started, cpu = time.perf_counter(), time.process_time()
        status = run_import([str(chain_file), "--datadir", str(target)], io.StringIO(), io.StringIO())
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        assert status == 0
        lines.append(
            f"import of {count} blocks of {transfers} transfers: {count / wall:,.0f} blocks/s"
            f" ({count / cpu:,.0f} blocks per CPU-second)"
        )
    return "\n".join(lines)


SCENARIOS = {"files": scenario_files, "import": scenario_import, "call": scenario_call, "automine": scenario_automine}


def main(names: list[str]) -> None:
    """
    Run the scenarios named (all by default).
    """
    work = Path(tempfile.mkdtemp(prefix="nodex-latency-"))
    try:
        for name in names or list(SCENARIOS):
            if name != "files":
                pin(1)
            print(SCENARIOS[name](work), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
