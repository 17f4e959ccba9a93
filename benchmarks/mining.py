"""
Mining speed (issue 16), two figures:

1. Hashes per second of the built-in CPU miner's batch
   (L{nodex.chain.seal.pow.search}: double SHA-256 of the canonical template's
   80-byte header, one core), against the ceiling of a plain C{hashlib} loop
   that double-hashes an 80-byte header per nonce.  Target: within 1.5x.
2. The time from C{mnr_submitBitcoinBlock} to the new head over JSON-RPC:
   a regtest node in its own process (RocksDB in a temporary directory,
   mining mode C{manual} so that nothing else makes blocks), a merged miner
   that asks C{mnr_getWork}, builds a Bitcoin block of three transactions
   sealing it, and times the submission, whose answer comes once the block is
   imported and the head moved (C{IMPORTED_BEST}, checked).  Target: p50 <= 20 ms.
   At most about 60 blocks per run: each block's timestamp must follow its
   parent's by a second, and no block may be more than 60 s ahead of the clock.

    .venv/bin/python benchmarks/mining.py [--nonces 400000] [--blocks 50]
"""

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

REPOSITORY = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPOSITORY))

from nodex.chain.seal.pow import search  # noqa: E402
from nodex.crypto import keccak256  # noqa: E402
from tests.chain import bitcoin_blocks as bb  # noqa: E402
from tests.e2e.test_state_e2e import NODE_SCRIPT  # noqa: E402


def plain_rate(nonces: int) -> float:
    """
    Double SHA-256 of an 80-byte header per nonce, with nothing else: the ceiling.
    """
    prefix = b"\x01" * 76
    sha256 = hashlib.sha256
    began = time.perf_counter()
    for nonce in range(nonces):
        sha256(sha256(prefix + nonce.to_bytes(4, "little")).digest()).digest()
    return nonces / (time.perf_counter() - began)


def miner_rate(nonces: int) -> float:
    """
    The built-in miner's batch over nonces that never meet the (impossible) target.
    """
    began = time.perf_counter()
    _seal, tried = search(keccak256(b"bench"), 2**250, 0, nonces)
    return tried / (time.perf_counter() - began)


class Node:
    """
    A regtest node in a child process.
    """

    def __init__(self) -> None:
        self.datadir = tempfile.mkdtemp(prefix="nodex-bench-")
        layer = {"mining": {"mode": "manual"}}
        self.process = subprocess.Popen(
            [sys.executable, "-c", NODE_SCRIPT, self.datadir, json.dumps(layer)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=REPOSITORY,
            env={**os.environ, "PYTHONPATH": str(REPOSITORY)},
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        self.url = f"http://127.0.0.1:{int(line.split()[1])}/"

    def call(self, method: str, *params: Any) -> Any:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}).encode()
        request = urllib.request.Request(self.url, body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            answer = json.loads(response.read())
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()
        subprocess.run(["rm", "-rf", self.datadir], check=False)


def submit_latencies(blocks: int) -> list[float]:
    """
    Seconds from sending mnr_submitBitcoinBlock to its IMPORTED_BEST answer, per block.
    """
    node = Node()
    try:
        latencies = []
        for height in range(1, blocks + 1):
            work = node.call("mnr_getWork")
            coinbase = bb.tagged_coinbase(bytes.fromhex(work["blockHashForMergedMining"][2:]))
            raw, _header, _ids = bb.mined_block(coinbase, 2, int(work["target"], 16))
            began = time.perf_counter()
            answer = node.call("mnr_submitBitcoinBlock", raw.hex())
            latencies.append(time.perf_counter() - began)
            assert bytes.fromhex(answer["blockImportedResult"][2:]) == b"IMPORTED_BEST", answer
            assert int(answer["blockIncludedHeight"], 16) == height
        return latencies
    finally:
        node.stop()


def main() -> None:
    """
    Run both measurements and print the figures.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--nonces", type=int, default=400_000)
    parser.add_argument("--blocks", type=int, default=50)
    options = parser.parse_args()
    ceiling = max(plain_rate(options.nonces) for _ in range(3))
    miner = max(miner_rate(options.nonces) for _ in range(3))
    print(f"plain hashlib loop : {ceiling:,.0f} double SHA-256/s")
    print(f"built-in miner     : {miner:,.0f} double SHA-256/s ({ceiling / miner:.2f}x below the ceiling)")
    latencies = sorted(submit_latencies(options.blocks))
    print(
        f"mnr_submitBitcoinBlock -> new head over RPC, {len(latencies)} blocks: "
        f"p50 {statistics.median(latencies) * 1000:.1f} ms, "
        f"p90 {latencies[int(len(latencies) * 0.9)] * 1000:.1f} ms, "
        f"max {latencies[-1] * 1000:.1f} ms"
    )


if __name__ == "__main__":
    main()
