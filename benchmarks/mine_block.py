"""
Block production: the time of L{Miner.mine} for a block of one native
transfer, the path every automined transaction takes (build on the head,
execute once, seal, one atomic batch, head moved, observers told).

The chain service runs synchronously (no writer thread) so that only the
block's own work is timed, or with C{--threads} on its writer thread under a
running reactor, one block after another, as automining does (the thread
hand-offs included); the store is RocksDB in a temporary directory (or
memory with C{--memory}).  C{--profile} prints the cProfile table of the run.

    .venv/bin/python benchmarks/mine_block.py [--blocks 2000] [--memory] [--threads] [--profile] [--erc20]
"""

import argparse
import cProfile
import pstats
import resource
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from twisted.internet.task import Clock

from nodex.chain.genesis import genesis_spec_from_mapping, initialize_chain
from nodex.chain.networks import REGTEST_MINER_ADDRESS, chain_rules
from nodex.config import load_preset
from nodex.crypto import keccak256
from nodex.db.memory import MemoryStore
from nodex.db.rocks import RocksStore
from nodex.services.chain import ChainService
from nodex.services.blocktime import BlockClock
from nodex.services.miner import Miner
from nodex.services.threads import ChainThreads
from nodex.structures.transactions import LegacyTransaction, Transaction, sign_transaction


class OneShotPool:
    """
    A pool holding the next transaction to mine, dropped once mined.
    """

    def __init__(self) -> None:
        """
        Start empty.
        """
        self.next: list[Transaction] = []

    def pending(self) -> list[Transaction]:
        """
        The transaction to mine.
        """
        pending, self.next = self.next, []
        return pending

    def watch_for_miner(self, automining: object) -> None:
        """
        The benchmark mines by hand: no automining.
        """

    def remove(self, tx_hashes: Iterable[bytes]) -> None:
        """
        Nothing to remove: every transaction is valid.
        """


def transfers(count: int) -> list[Transaction]:
    """
    C{count} signed transfers of 1 wei from the first cow account (signed in advance).
    """
    key = keccak256(b"cow")
    return [
        sign_transaction(
            LegacyTransaction(nonce=n, gas_price=1, gas=21_000, to=bytes([0x42]) * 20, value=1, data=b""), key, 33
        )
        for n in range(count)
    ]


def token_transfers(count: int) -> tuple[Transaction, list[Transaction]]:
    """
    The test token's deployment by cow1 and C{count} C{transfer(to, 1)}
    calls after it, signed in advance.
    """
    import json

    artifact = json.loads((Path(__file__).resolve().parent.parent / "tests/data/contracts/Token.json").read_text())
    key = keccak256(b"cow1")
    arguments = (
        (96).to_bytes(32, "big") + (160).to_bytes(32, "big") + (10**24).to_bytes(32, "big")
        + (5).to_bytes(32, "big") + b"Token".ljust(32, b"\x00") + (3).to_bytes(32, "big") + b"TOK".ljust(32, b"\x00")
    )
    creation = bytes.fromhex(artifact["bytecode"][2:]) + arguments
    deploy = sign_transaction(LegacyTransaction(0, 1, 3_000_000, b"", 0, creation), key, 33)
    token = keccak256(bytes([0xD6, 0x94]) + deploy.sender + b"\x80")[12:]
    call = keccak256(b"transfer(address,uint256)")[:4] + (bytes([0x42]) * 20).rjust(32, b"\x00") + (1).to_bytes(32, "big")
    calls = [
        sign_transaction(LegacyTransaction(n, 1, 60_000, token, 0, call), key, 33) for n in range(1, count + 1)
    ]
    return deploy, calls


def mine_threaded(miner: Miner, pool: OneShotPool, signed: list[Transaction]) -> None:
    """
    Run the reactor and mine one block per transaction, each after the last.
    """
    from twisted.internet import reactor
    from twisted.internet.defer import ensureDeferred

    async def mine_all() -> None:
        for transaction in signed:
            pool.next = [transaction]
            await miner.mine()

    def done(result: object) -> object:
        reactor.stop()  # type: ignore[attr-defined]
        return result

    reactor.callWhenRunning(lambda: ensureDeferred(mine_all()).addBoth(done))  # type: ignore[attr-defined]
    reactor.run()  # type: ignore[attr-defined]


def run(blocks: int, memory: bool, profile: bool, threads: bool = False, erc20: bool = False) -> None:
    """
    Mine C{blocks} one-transfer blocks (native, or ERC-20 after a block
    that deploys the token) and print the time per block.
    """
    preset = load_preset("regtest")
    directory = tempfile.mkdtemp(prefix="nodex-mine-")
    store = MemoryStore() if memory else RocksStore.open(str(Path(directory) / "chaindata"))
    initialize_chain(store, "regtest", genesis_spec_from_mapping(preset["genesis"]))
    clock: Any = Clock()
    clock.advance(time.time())
    chain_threads = None
    if threads:
        from twisted.internet import reactor

        clock = reactor
        chain_threads = ChainThreads(reactor)
        chain_threads.start()
    chain = ChainService(store, chain_rules("regtest", 33), clock, threads=chain_threads)
    pool = OneShotPool()
    miner = Miner(chain, pool, REGTEST_MINER_ADDRESS, "manual", clock, BlockClock(clock, chain.rules))  # type: ignore[arg-type]
    if erc20:
        deploy, signed = token_transfers(blocks)
        pool.next = [deploy]
        miner.mine()
        first = 1
    else:
        signed = transfers(blocks)
        first = 0
    for transaction in signed:
        transaction.sender  # recovered when the pool admits it, not when mining
    profiler = cProfile.Profile() if profile else None
    start = time.perf_counter()
    cpu_start = time.process_time()
    if profiler is not None:
        profiler.enable()
    if threads:
        mine_threaded(miner, pool, signed)
    else:
        for transaction in signed:
            pool.next = [transaction]
            miner.mine()
    if profiler is not None:
        profiler.disable()
    seconds = time.perf_counter() - start
    cpu_seconds = time.process_time() - cpu_start
    if chain_threads is not None:
        chain_threads.stop()
    assert chain.head.header.number == blocks + first, chain.head.header.number
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{blocks} one-{'ERC-20-' if erc20 else ''}transfer blocks on {'memory' if memory else 'RocksDB'}"
        f"{' through the writer thread' if threads else ''}: "
        f"{seconds * 1e6 / blocks:.0f} us per block ({cpu_seconds * 1e6 / blocks:.0f} us of CPU),"
        f" {blocks / seconds:.0f} blocks/s, peak RSS {peak:.0f} MiB"
    )
    if profiler is not None:
        pstats.Stats(profiler, stream=sys.stdout).sort_stats("tottime").print_stats(30)
    store.close()


def main() -> None:
    """
    Parse the arguments and run.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=2000)
    parser.add_argument("--memory", action="store_true", help="MemoryStore instead of RocksDB")
    parser.add_argument("--threads", action="store_true", help="the writer thread under a running reactor")
    parser.add_argument("--profile", action="store_true", help="print the cProfile table")
    parser.add_argument("--erc20", action="store_true", help="token transfers instead of native ones")
    arguments = parser.parse_args()
    run(arguments.blocks, arguments.memory, arguments.profile, arguments.threads, arguments.erc20)


if __name__ == "__main__":
    main()
