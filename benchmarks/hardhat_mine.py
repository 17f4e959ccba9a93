"""
Benchmark of C{hardhat_mine}: a regtest node in a child process (RocksDB
under a temporary directory, HTTP on 127.0.0.1) asked over JSON-RPC to mine
a run of empty blocks, as a test fixture does to move time.

What is timed is the one request, from sending it to its answer: building
and sealing every block, checking each header and seal in the importer, the
batched RocksDB writes, and the event published to the node's observers.
The script then checks the head and one block in the middle, and prints the
CPU time the node used for the request (what the wall time would be on a
core of its own) and the node's peak memory.  Run by hand from the repository root::

    .venv/bin/python benchmarks/hardhat_mine.py [--blocks 100000] [--interval 1]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

REPOSITORY = Path(__file__).resolve().parent.parent

NODE_SCRIPT = """
import sys
from twisted.internet import reactor
import nodex.node as node_composition
from nodex.config import load_config
config = load_config(None, {"datadir": sys.argv[1], "rpc": {"endpoint": "tcp:0:interface=127.0.0.1", "ws": "none"}})
node = node_composition.compose(config, reactor)
node.startService()
node.getServiceNamed("rpc").when_listening().addCallback(
    lambda port: print("PORT", port.getHost().port, flush=True))
reactor.run()
"""


def request(url: str, method: str, *params: Any) -> Any:
    """
    The result of one JSON-RPC request (an error raises).
    """
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}).encode()
    message = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(message, timeout=3600) as response:
        answer = json.loads(response.read())
    if "error" in answer:
        raise RuntimeError(f"{method}: {answer['error']}")
    return answer["result"]


def cpu_seconds(pid: int) -> float:
    """
    The CPU time (user and system) process C{pid} has used so far (Linux).
    """
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_memory_mib(pid: int) -> float:
    """
    The peak resident memory of process C{pid} (Linux), in MiB.
    """
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    """
    Start a node, mine, check, report.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=100_000)
    parser.add_argument("--interval", type=int, default=1)
    arguments = parser.parse_args()
    datadir = tempfile.mkdtemp(prefix="nodex-hardhat-mine-")
    child = subprocess.Popen(
        [sys.executable, "-c", NODE_SCRIPT, datadir],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=REPOSITORY,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        if not line.startswith("PORT "):
            raise SystemExit(f"the node did not start: {line!r}")
        url = f"http://127.0.0.1:{int(line.split()[1])}/"
        start_head = int(request(url, "eth_blockNumber"), 16)
        cpu_before = cpu_seconds(child.pid)
        started = time.perf_counter()
        request(url, "hardhat_mine", hex(arguments.blocks), hex(arguments.interval))
        seconds = time.perf_counter() - started
        cpu = cpu_seconds(child.pid) - cpu_before
        head = int(request(url, "eth_blockNumber"), 16)
        assert head == start_head + arguments.blocks, (head, start_head)
        middle = request(url, "eth_getBlockByNumber", hex(start_head + arguments.blocks // 2), False)
        before = request(url, "eth_getBlockByNumber", hex(start_head + arguments.blocks // 2 - 1), False)
        assert middle["parentHash"] == before["hash"]
        assert int(middle["timestamp"], 16) - int(before["timestamp"], 16) == arguments.interval
        print(
            f"hardhat_mine of {arguments.blocks} empty blocks: {seconds:.2f} s"
            f" ({seconds * 1e6 / arguments.blocks:.0f} us per block,"
            f" {arguments.blocks / seconds:.0f} blocks/s), {cpu:.2f} s of the node's CPU;"
            f" node peak RSS {peak_memory_mib(child.pid):.0f} MiB; load average {os.getloadavg()[0]:.1f}"
        )
    finally:
        child.kill()
        child.wait()
        shutil.rmtree(datadir, ignore_errors=True)


if __name__ == "__main__":
    main()
