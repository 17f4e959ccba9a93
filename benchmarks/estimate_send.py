"""
The OpenZeppelin-style round trip: estimate at C{pending}, then send with
the estimate, as hardhat-ethers does for every transaction, against a
contract that writes one checkpoint per block (the ERC20Votes pattern: its
cost depends on C{block.number}).

A regtest node in C{auto} mining mode runs in its own process pinned to
core 0 (C{taskset -c 0}), this client on core 1. Each round is
C{eth_estimateGas} at C{pending}, then C{eth_sendRawTransaction} of a
transaction signed with that gas (the answer follows its block), then its
receipt. The figures: rounds per second, and how many transactions ran out
of gas (status 0: the estimate was not enough for the block they were
mined in). Run it from the checkout whose node it measures.

Usage::

    python benchmarks/estimate_send.py [--rounds 500]
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.transfers import SENDERS, SERVER, Client, free_port, signed, wait_for_port  # noqa: E402
from nodex.crypto import keccak256, private_key_to_address  # noqa: E402

REPOSITORY = Path(__file__).resolve().parent.parent

# NUMBER PUSH1 0 SLOAD EQ PUSH1 same JUMPI; NUMBER PUSH1 0 SSTORE; PUSH1 1
# NUMBER PUSH1 2 ADD SSTORE STOP; same: JUMPDEST STOP (tests/e2e/test_time_e2e.py).
CHECKPOINTS = bytes.fromhex("6016600c60003960166000f3" + "43600054146014574360005560014360020155005b00")


def main() -> None:
    """
    Start the node, run the rounds, print the figures.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=500)
    args = parser.parse_args()
    datadir = tempfile.mkdtemp(prefix="nodex-estimate-")
    port = free_port()
    node = subprocess.Popen(
        ["taskset", "-c", "0", sys.executable, "-c", SERVER, str(port), datadir, ""],
        cwd=REPOSITORY, env={**os.environ, "PYTHONPATH": str(REPOSITORY)},
    )
    try:
        wait_for_port(port, node)
        client = Client(port)
        key = SENDERS[0]
        sender = "0x" + private_key_to_address(key).hex()
        deploy = signed(key, 0, b"", CHECKPOINTS, gas=200_000)
        client.call("eth_sendRawTransaction", "0x" + deploy.encode().hex())
        contract = keccak256(bytes([0xD6, 0x94]) + private_key_to_address(key) + b"\x80")[12:]
        failed = 0
        started = time.perf_counter()
        for nonce in range(1, args.rounds + 1):
            gas = int(client.call("eth_estimateGas", {"from": sender, "to": "0x" + contract.hex()}, "pending"), 16)
            transaction = signed(key, nonce, contract, gas=gas)
            tx_hash = client.call("eth_sendRawTransaction", "0x" + transaction.encode().hex())
            if client.call("eth_getTransactionReceipt", tx_hash)["status"] != "0x1":
                failed += 1
        elapsed = time.perf_counter() - started
        print(
            f"estimate-then-send: {args.rounds} rounds in {elapsed:.2f} s = {args.rounds / elapsed:.0f} rounds/s;"
            f" {failed} ran out of gas"
        )
    finally:
        node.send_signal(signal.SIGTERM)
        node.wait(timeout=60)
        shutil.rmtree(datadir, ignore_errors=True)


if __name__ == "__main__":
    main()
