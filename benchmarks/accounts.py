"""
Measure the local wallet's key derivation and what it does to the reactor.

1. One unlock with the default scrypt parameters (n = 2**18, r = 8, p = 1):
   the derivation alone, in this process (median of C{--repeat}), and one
   C{personal_unlockAccount} answered by a node.
2. C{eth_blockNumber} latency (median, 99th percentile, maximum) on one
   keep-alive connection, first alone, then while ten
   C{personal_unlockAccount} requests (each on its own connection) run
   their derivations on the wallet's thread pool.  The reactor must not
   stall: the target is a 99th percentile of at most 5 ms.

The node runs in its own process (regtest, default wallet settings, RPC
time limit raised so that ten derivations on two threads can finish).

Usage::

    python benchmarks/accounts.py [--repeat 3] [--unlocks 10] [--baseline-seconds 3]
"""

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPOSITORY = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPOSITORY))

NODE = """
import sys
from twisted.internet import reactor
from nodex.config import load_config
from nodex.tap import compose
layer = {"datadir": sys.argv[2], "rpc": {"endpoint": "tcp:" + sys.argv[1] + ":interface=127.0.0.1", "timeout": 600}}
node = compose(load_config(None, layer), reactor)
node.startService()
reactor.addSystemEventTrigger("before", "shutdown", node.stopService)
reactor.run()
"""

KEY = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
PASSPHRASE = "benchmark passphrase"


def free_port() -> int:
    """
    A TCP port that nothing listens on now.
    """
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Client:
    """
    JSON-RPC over one keep-alive HTTP connection.
    """

    def __init__(self, port: int) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        self.next_id = 0

    def call(self, method: str, *params: Any) -> Any:
        """
        The result of one request; raises on an error answer.
        """
        self.next_id += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": list(params)})
        self.connection.request("POST", "/", body, {"Content-Type": "application/json"})
        answer = json.loads(self.connection.getresponse().read())
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]


def start_node(datadir: str) -> tuple[subprocess.Popen[bytes], int]:
    """
    Start a regtest node; its process and port once it answers.
    """
    port = free_port()
    process = subprocess.Popen([sys.executable, "-c", NODE, str(port), datadir], cwd=REPOSITORY)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            Client(port).call("eth_blockNumber")
            return process, port
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit("the node did not start")


def derivation_seconds(repeat: int) -> float:
    """
    The median time of opening a standard-scrypt keyfile, in this process.
    """
    from nodex.wallet.keyfile import decrypt_keyfile, encrypt_key

    keyfile = encrypt_key(bytes.fromhex(KEY), PASSPHRASE)
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        decrypt_keyfile(keyfile, PASSPHRASE)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def latencies(client: Client, until: threading.Event | None, seconds: float) -> list[float]:
    """
    eth_blockNumber round trips, back to back, until C{until} is set (or for C{seconds}).
    """
    measured = []
    deadline = time.monotonic() + seconds
    while (until is None and time.monotonic() < deadline) or (until is not None and not until.is_set()):
        started = time.perf_counter()
        client.call("eth_blockNumber")
        measured.append(time.perf_counter() - started)
    return measured


def summary(samples: list[float]) -> str:
    """
    Median, 99th percentile and maximum in milliseconds.
    """
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (
        f"{len(ordered)} requests, median {statistics.median(ordered) * 1000:.2f} ms, "
        f"p99 {p99 * 1000:.2f} ms, max {ordered[-1] * 1000:.2f} ms"
    )


def main() -> None:
    """
    Run both measurements and print them.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--unlocks", type=int, default=10)
    parser.add_argument("--baseline-seconds", type=float, default=3.0)
    args = parser.parse_args()
    print(f"scrypt derivation (n=2**18, r=8, p=1), in process: {derivation_seconds(args.repeat):.3f} s (median of {args.repeat})")
    with tempfile.TemporaryDirectory() as datadir:
        process, port = start_node(datadir)
        try:
            client = Client(port)
            started = time.perf_counter()
            address = client.call("personal_importRawKey", KEY, PASSPHRASE)
            print(f"personal_importRawKey (encrypt and write): {time.perf_counter() - started:.3f} s")
            client.call("personal_lockAccount", address)
            started = time.perf_counter()
            client.call("personal_unlockAccount", address, PASSPHRASE, None)
            print(f"one personal_unlockAccount: {time.perf_counter() - started:.3f} s")
            print("eth_blockNumber alone:", summary(latencies(client, None, args.baseline_seconds)))
            done = threading.Event()
            durations: list[float] = []

            def unlock() -> None:
                own = Client(port)
                began = time.perf_counter()
                own.call("personal_unlockAccount", address, PASSPHRASE, None)
                durations.append(time.perf_counter() - began)

            workers = [threading.Thread(target=unlock) for _ in range(args.unlocks)]
            for worker in workers:
                worker.start()
            watcher = threading.Thread(target=lambda: ([w.join() for w in workers], done.set()))
            watcher.start()
            during = latencies(client, done, 0)
            watcher.join()
            print(f"{args.unlocks} concurrent unlocks: all done in {max(durations):.2f} s")
            print(f"eth_blockNumber during the {args.unlocks} unlocks:", summary(during))
        finally:
            process.terminate()
            process.wait(30)
    print(f"load average: {' '.join(f'{value:.2f}' for value in os.getloadavg())}")


if __name__ == "__main__":
    main()
