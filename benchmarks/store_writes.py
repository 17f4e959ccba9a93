"""
The RocksDB write of automined blocks, alone: batches shaped like one
block's (a header, a body, receipts, a total difficulty, a canonical hash,
a transaction lookup, the head pointer and nine trie nodes: 16 puts into 8
column families) written through L{nodex.db.rocks.RocksStore}, one block
per write or C{--group} blocks per write, and optionally without the
write-ahead log (for comparison only: the node always writes through it).

Reported: the process's CPU microseconds per block spent in
C{RocksStore.write} (RocksDB's background threads included), each variant
in a fresh process and store, alternated round by round.  Session 14 used
it to weigh a group commit of consecutive automined blocks
(C{docs/chain-service.md}).

Usage::

    python benchmarks/store_writes.py [--blocks 8000] [--rounds 3] [--variants 1,8,1-nowal]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from alternation import alternate  # noqa: E402

REPOSITORY = Path(__file__).resolve().parent.parent

RUN = r"""
import os, sys, tempfile, time
from nodex.crypto import keccak256
from nodex.db import schema
from nodex.db.rocks import RocksStore
blocks, group, wal = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
with tempfile.TemporaryDirectory(prefix="store-writes-") as folder:
    store = RocksStore.open(os.path.join(folder, "chaindata"))
    database = store._database
    if not wal:
        from rocksdict import WriteOptions
        options = WriteOptions()
        options.disable_wal = True
        class Unlogged:
            def write(self, batch):
                return database.write(batch, options)
        store._database = Unlogged()
    def fill(batch, number):
        block_hash = keccak256(number.to_bytes(8, "big"))
        batch.put(schema.HEADERS, block_hash, os.urandom(560))
        batch.put(schema.BODIES, block_hash, os.urandom(180))
        batch.put(schema.RECEIPTS, block_hash, os.urandom(300))
        batch.put(schema.TOTAL_DIFFICULTY, block_hash, b"\x01\x02")
        batch.put(schema.CANONICAL, number.to_bytes(8, "big"), block_hash)
        batch.put(schema.TX_LOOKUP, keccak256(block_hash), block_hash + b"\0")
        batch.put(schema.METADATA, b"head", block_hash)
        for index in range(9):
            batch.put(schema.TRIE_NODES, keccak256(block_hash + bytes([index])), os.urandom(200 if index % 2 else 532))
    spent = 0.0
    for first in range(0, blocks, group):
        batch = store.batch()
        for number in range(first, first + group):
            fill(batch, number)
        started = time.process_time()
        store.write(batch)
        spent += time.process_time() - started
    store._database = database
    store.close()
print(spent / blocks * 1e6)
"""


def run_once(blocks: int, group: int, wal: bool) -> float:
    """
    One variant in a fresh process: CPU microseconds per block in the writes.
    """
    command = [sys.executable, "-c", RUN, str(blocks), str(group), "1" if wal else "0"]
    environment = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    finished = subprocess.run(command, env=environment, capture_output=True, text=True, check=True)
    return float(finished.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--blocks", type=int, default=8000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--variants", default="1,8,1-nowal", help="blocks per write, '-nowal' without the log")
    options = parser.parse_args()
    def run_variant(variant: str) -> float:
        group, _, flag = variant.partition("-")
        return run_once(options.blocks, int(group), flag != "nowal")

    alternate(options.rounds, options.variants.split(","), run_variant, "CPU us/block", digits=1)


if __name__ == "__main__":
    main()
