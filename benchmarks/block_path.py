"""
The writer's half of an automined transaction, alone: one-transaction
blocks of ERC-20 C{transfer} calls made through
L{nodex.chain.importer.BlockImporter.make} on a RocksDB store, as the
miner's one-job path makes them (build, seal with the built-in solver,
one write batch, the log index), without RPC, pool or reactor.

Each run starts a regtest chain in a temporary directory, deploys the test
token (C{tests/data/contracts/Token.json}), makes 20 blocks to warm up, then
measures C{--count} blocks.  C{--rewind} rewinds the chain to the block
before the measured ones before each block and sends the same transfer
again: what a test suite's C{loadFixture} (C{evm_revert} and the test's
first transaction) costs the writer.

Usage::

    python benchmarks/block_path.py [--checkouts PATH,PATH] [--rounds 2] [--count 100] [--rewind] [--callgrind]

With C{--callgrind} each run executes under valgrind's callgrind,
collecting only while the measured blocks are made, and reports thousands
of machine instructions per block (the machine's load does not move
them; a run of 100 blocks takes some 30 seconds); otherwise the process's
CPU microseconds per block.  Several checkouts are alternated round by
round, each run with its own checkout on C{PYTHONPATH}.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from alternation import alternate  # noqa: E402

REPOSITORY = Path(__file__).resolve().parent.parent

RUN = r"""
import os, subprocess, sys, tempfile, time
checkout, count, rewind, callgrind, folder = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4] == "1", sys.argv[5]
sys.path[:0] = [checkout, os.path.join(checkout, "benchmarks")]
from nodex.chain.building.making import BlockTime, TransactionsBlock
from nodex.crypto import keccak256, private_key_to_address
from nodex.db.rocks import RocksStore
from nodex.structures.transactions import LegacyTransaction, sign_transaction
from tests.chain.chainmaker import regtest_importer
from transfers import CHAIN_ID, token_creation

key = keccak256(b"cow1")
sender = private_key_to_address(key)
coinbase = b"\x77" * 20
importer = regtest_importer(RocksStore.open(folder))

def make(transaction):
    tip = importer.tip.header
    step = importer.make(TransactionsBlock(coinbase, BlockTime(tip.timestamp + 1, tip.timestamp), (transaction,)))
    assert step.receipts[0].status == 1
    return step

make(sign_transaction(LegacyTransaction(0, 0, 3_000_000, b"", 0, token_creation()), key, CHAIN_ID))
token = keccak256(bytes([0xD6, 0x94]) + sender + b"\x80")[12:]
call = keccak256(b"transfer(address,uint256)")[:4] + coinbase.rjust(32, b"\0") + (1).to_bytes(32, "big")
transfers = [sign_transaction(LegacyTransaction(n, 0, 60_000, token, 0, call), key, CHAIN_ID) for n in range(1, count + 21)]
for transaction in transfers[:20]:
    make(transaction)
measured = [transfers[20]] * count if rewind else transfers[20:]
base = importer.tip.header.number
if callgrind:
    subprocess.run(["callgrind_control", "-i", "on", str(os.getpid())], check=True, capture_output=True)
started = time.process_time()
for transaction in measured:
    if rewind:
        importer.rewind(base)
    make(transaction)
elapsed = time.process_time() - started
if callgrind:
    subprocess.run(["callgrind_control", "-i", "off", str(os.getpid())], check=True, capture_output=True)
print(elapsed / count * 1e6)
"""


def run_once(checkout: Path, count: int, rewind: bool, callgrind: bool) -> float:
    """
    One run in a fresh process: CPU microseconds per block, or with
    C{callgrind} thousands of instructions per block.
    """
    with tempfile.TemporaryDirectory(prefix="block-path-") as folder:
        out = os.path.join(folder, "callgrind.out")
        command = [sys.executable, "-c", RUN, str(checkout), str(count), "1" if rewind else "0", "1" if callgrind else "0"]
        command.append(os.path.join(folder, "chaindata"))
        if callgrind:
            command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}", *command]
        environment = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONHASHSEED": "0"}
        finished = subprocess.run(command, cwd=checkout, env=environment, capture_output=True, text=True, check=True)
        if not callgrind:
            return float(finished.stdout.split()[-1])
        for line in Path(out).read_text().splitlines():
            if line.startswith("totals:"):
                return int(line.split()[1]) / count / 1000
        raise RuntimeError("no total in the callgrind dump")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--checkouts", default=str(REPOSITORY), help="comma-separated nodex checkout paths")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--rewind", action="store_true", help="rewind before each block (loadFixture's pattern)")
    parser.add_argument("--callgrind", action="store_true", help="thousands of instructions per block")
    options = parser.parse_args()
    checkouts = [Path(path).resolve() for path in options.checkouts.split(",")]
    unit = "thousand instructions/block" if options.callgrind else "CPU us/block"
    alternate(
        options.rounds, checkouts, lambda checkout: run_once(checkout, options.count, options.rewind, options.callgrind), unit
    )


if __name__ == "__main__":
    main()
