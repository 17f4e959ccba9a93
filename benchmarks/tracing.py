"""
Tracing benchmark (issue 15).

1. In process: one transaction of about 1,000,000 gas (a loop of 11
   instructions that counts, writes the counter to memory and jumps back)
   run through C{apply_transaction}, as a trace replays it: untraced, with
   the default tracer (struct logs) with C{disableMemory} and
   C{disableStack}, with every member, and with C{callTracer}.  Reported:
   structured-log steps per second, and each run's time against the
   untraced one.  Times are CPU seconds of this process
   (C{time.process_time}), best of C{--repeat} runs, which other work on
   the machine disturbs much less than wall-clock time.
2. Over HTTP: a regtest node (its own process, C{manual} mining) mines a
   block of 100 ERC-20 transfers (ten senders, ten each, since the pool
   keeps 16 per account); C{debug_traceBlockByNumber} of that block
   is timed (wall clock, best of C{--repeat}) with the default tracer
   without memory and stack, with C{callTracer}, and with C{prestateTracer}.

Usage::

    python benchmarks/tracing.py [--repeat 5] [--skip-node]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from nodex.chain.execution import apply_transaction
from nodex.chain.tracing.calltree import CallTracer
from nodex.chain.tracing.limits import TraceBudget, TraceConfig, TraceLimits
from nodex.chain.tracing.structlog import StructLogTracer
from nodex.crypto import keccak256, private_key_to_address
from nodex.evm.environment import BlockEnvironment
from nodex.primitives import Address
from nodex.state.state import State
from nodex.structures.transactions import LegacyTransaction, sign_transaction

sys.path.insert(0, str(Path(__file__).resolve().parent))
from transfers import Client, free_port, signed, token_workload, wait_for_port  # noqa: E402

REPOSITORY = Path(__file__).resolve().parent.parent
KEY = keccak256(b"cow")
SENDER = Address(private_key_to_address(KEY))
LOOP = Address(b"\x10" * 20)
ITERATIONS = 25_000


def loop_code(iterations: int) -> bytes:
    """
    PUSH1 0; loop: JUMPDEST, +1, MSTORE(0, counter), JUMPI back while
    counter < iterations; STOP.  38 gas and 11 steps an iteration.
    """
    return (
        bytes.fromhex("6000" "5b" "600101" "80600052" "80")
        + b"\x61" + iterations.to_bytes(2, "big")
        + bytes.fromhex("11" "600257" "00")
    )


def run_once(tracer: Any) -> float:
    """
    The CPU seconds of one run of the loop transaction with C{tracer}.
    """
    state = State({}.get, {}.get)
    state.set_balance(SENDER, 10**20)
    state.set_code(LOOP, loop_code(ITERATIONS))
    state.commit()
    block = BlockEnvironment(coinbase=Address(b"\x33" * 20), number=1, timestamp=1, gas_limit=30_000_000)
    transaction = sign_transaction(LegacyTransaction(0, 0, 1_000_000, LOOP, 0, b""), KEY, 33)
    started = time.process_time()
    result = apply_transaction(state, block, transaction, SENDER, tracer=tracer)
    seconds = time.process_time() - started
    if result.error is not None or result.gas_used < 900_000:
        raise RuntimeError(f"the loop did not run as planned: {result}")
    return seconds


def budget() -> TraceBudget:
    """
    A budget large enough for the loop.
    """
    return TraceBudget(TraceLimits(max_steps=10**7, max_bytes=10**10, time_limit=600), time.monotonic)


def in_process(repeat: int) -> None:
    """
    Print the in-process figures.
    """
    steps = 0

    def struct_logger(**options: bool) -> StructLogTracer:
        return StructLogTracer(TraceConfig(**options), budget())

    runs = {
        "untraced": lambda: None,
        "struct logs, disableMemory + disableStack": lambda: struct_logger(disable_memory=True, disable_stack=True),
        "struct logs, every member": lambda: struct_logger(),
        "callTracer": lambda: CallTracer(TraceConfig(tracer="callTracer"), budget()),
    }
    best: dict[str, float] = {}
    for _ in range(repeat):
        for name, make in runs.items():
            tracer = make()
            best[name] = min(best.get(name, float("inf")), run_once(tracer))
            if isinstance(tracer, StructLogTracer):
                steps = len(tracer.struct_logs)
    untraced = best["untraced"]
    print(f"loop transaction: {steps} steps, best of {repeat} (CPU seconds)")
    print("| run | seconds | steps/s | × untraced |")
    print("|---|---:|---:|---:|")
    for name, seconds in best.items():
        print(f"| {name} | {seconds:.3f} | {steps / seconds:,.0f} | {seconds / untraced:.2f} |")


NODE = """
import sys
from twisted.internet import reactor
from nodex.config import load_config
from nodex.tap import compose
port, datadir = sys.argv[1], sys.argv[2]
config = load_config(None, {"datadir": datadir, "mining": {"mode": "manual"},
                            "rpc": {"endpoint": "tcp:" + port + ":interface=127.0.0.1", "timeout": 60.0,
                                    "ws": "none"}})
node = compose(config, reactor)
node.startService()
reactor.addSystemEventTrigger("before", "shutdown", node.stopService)
reactor.run()
"""


def over_http(repeat: int) -> None:
    """
    Print the C{debug_traceBlockByNumber} figures.
    """
    deploy, token, _ = token_workload(0)
    keys = [keccak256(seed.encode()) for seed in ["cow"] + [f"cow{index}" for index in range(1, 10)]]
    selector = keccak256(b"transfer(address,uint256)")[:4]

    def transfer(key: bytes, nonce: int, to: bytes, amount: int) -> str:
        data = selector + to.rjust(32, b"\x00") + amount.to_bytes(32, "big")
        return "0x" + signed(key, nonce, bytes.fromhex(token[2:]), data, gas=60_000).encode().hex()

    # The deployer (cow1) funds the nine others, in one block; then each of
    # the ten sends ten transfers (the pool takes 16 per account), in another.
    funding = [transfer(keys[1], 1 + index, private_key_to_address(key), 10**20)
               for index, key in enumerate(keys[:1] + keys[2:])]
    nonces = {key: 0 for key in keys}
    nonces[keys[1]] = 1 + len(funding)
    calls = []
    for round_ in range(10):
        for key in keys:
            calls.append(transfer(key, nonces[key], private_key_to_address(keccak256(b"sink")), 1 + round_))
            nonces[key] += 1
    datadir = tempfile.mkdtemp(prefix="nodex-tracing-")
    port = free_port()
    process = subprocess.Popen([sys.executable, "-c", NODE, str(port), datadir], cwd=REPOSITORY)
    try:
        wait_for_port(port, process)
        client = Client(port)
        client.send_raw(deploy)
        client.call("evm_mine")
        for raw in funding:
            client.send_raw(raw)
        client.call("evm_mine")
        for raw in calls:
            client.send_raw(raw)
        client.call("evm_mine")
        block = client.call("eth_getBlockByNumber", "latest", False)
        if len(block["transactions"]) != 100:
            raise RuntimeError(f"the block holds {len(block['transactions'])} transactions, not 100")
        number = block["number"]
        options = {
            "default tracer, disableMemory + disableStack": {"disableMemory": True, "disableStack": True},
            "callTracer": {"tracer": "callTracer"},
            "prestateTracer": {"tracer": "prestateTracer"},
        }
        print(f"debug_traceBlockByNumber of a block of 100 ERC-20 transfers, best of {repeat} (wall seconds)")
        print("| tracer | seconds | answer bytes |")
        print("|---|---:|---:|")
        for name, option in options.items():
            best = float("inf")
            for _ in range(repeat):
                started = time.perf_counter()
                result = client.call("debug_traceBlockByNumber", number, option)
                best = min(best, time.perf_counter() - started)
            print(f"| {name} | {best:.3f} | {len(json.dumps(result)):,} |")
    finally:
        process.terminate()
        process.wait()
        shutil.rmtree(datadir, ignore_errors=True)


def main() -> None:
    """
    Run both parts.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip-node", action="store_true")
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.1f}")
    in_process(args.repeat)
    if not args.skip_node:
        print()
        over_http(args.repeat)


if __name__ == "__main__":
    main()
