"""
Peer-to-peer figures (issue 12): sync speed between two nodes, the
responsiveness of the syncing node's RPC, and the propagation latency of a
new block along a line of three nodes.

1. A chain of C{--blocks} blocks (empty, or with C{--transfers} native
   transfers each, from the ten cow accounts) is built into a data
   directory, timestamped one second apart from genesis so that it is all
   in the past.
2. Sync: a node serving that chain (C{twistd -n nodex}, pinned to core 0)
   and a fresh node dialing it (pinned to core 1).  This client polls the
   syncing node's C{eth_blockNumber} over one keep-alive connection as fast
   as it answers, recording each answer's latency, until the head is
   reached.  Blocks/s counts from the first synced block to the last.
3. Propagation: three fresh nodes in a line A - B - C (one outbound peer
   for B and C, none for A); C{evm_mine} on A, then B and C are polled until each has the
   block; the per-hop latency is B's arrival after A's answer, and C's after
   B's.

4. With C{--compare} (issue 25), the sync and the propagation run
   alternately over the encrypted transport (the default) and over the
   plain framing (C{p2p.encryption = false} on every node), C{--rounds}
   times each, and the ratios are printed; C{--transport} measures the
   transport alone, in this process: the key exchange and handshake
   digest, and sealing and opening frames of several sizes.

Usage::

    python benchmarks/p2p.py [--blocks 10000] [--transfers 0] [--hops 50]
    python benchmarks/p2p.py --compare [--rounds 3] [--blocks 10000] [--transfers 0] [--hops 50]
    python benchmarks/p2p.py --transport

Every node is a real C{twistd nodex} process with RocksDB under a
temporary directory; nothing is reused between runs.
"""

import argparse
import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPOSITORY = Path(__file__).resolve().parent.parent

BUILDER = """
import sys
from twisted.internet import reactor
from twisted.internet.defer import ensureDeferred
from nodex.config import load_config
from nodex.tap import compose
from nodex.chain.building.making import BlockTime, TransactionsBlock
from nodex.crypto import keccak256
from nodex.primitives import Address
from nodex.structures.transactions import LegacyTransaction, sign_transaction

datadir, count, transfers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
config = load_config(None, {"datadir": datadir, "rpc": {"endpoint": "none", "ws": "none"}, "p2p": {"endpoint": "none"},
                            "mining": {"mode": "manual"}})
node = compose(config, reactor)
keys = [keccak256(seed.encode()) for seed in ["cow"] + [f"cow{i}" for i in range(1, 10)]]
recipient = b"\\x77" * 20

def transactions(index):
    return [sign_transaction(LegacyTransaction(nonce=index, gas_price=0, gas=21000, to=recipient, value=1, data=b""),
                             keys[k], 33) for k in range(transfers)]

async def grow():
    chain = node.chain
    for index in range(count):
        txs = tuple(transactions(index))
        await chain.make(TransactionsBlock(Address(b"\\x42" * 20), BlockTime(0, 0), txs))

def run():
    node.startService()
    d = ensureDeferred(grow())
    d.addErrback(lambda f: (f.printTraceback(), None))
    d.addBoth(lambda _: node.stopService()).addBoth(lambda _: reactor.stop())

reactor.callWhenRunning(run)
reactor.run()
"""


def free_port() -> int:
    """
    A TCP port free on 127.0.0.1 now.
    """
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Node:
    """
    A C{twistd nodex} process with RPC and P2P on known loopback ports.
    """

    def __init__(self, datadir: Path, core: int | None, *argv: str, repository: Path = REPOSITORY) -> None:
        """
        @param repository: the nodex checkout the process runs (another
            worktree, to measure a base commit).
        """
        self.rpc_port, self.p2p_port = free_port(), free_port()
        self.log = open(datadir.parent / f"{datadir.name}.log", "w")
        command = [
            sys.executable, "-c", "from twisted.scripts.twistd import run; run()", "-n", "--pidfile=", "nodex",
            "--datadir", str(datadir), "--rpc", f"tcp:{self.rpc_port}:interface=127.0.0.1",
            "--p2p", f"tcp:{self.p2p_port}:interface=127.0.0.1", "--ws", "none", *argv,
        ]
        if core is not None and shutil.which("taskset"):
            command = ["taskset", "-c", str(core), *command]
        env = {**os.environ, "PYTHONPATH": str(repository)}
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT, env=env, cwd=repository)
        self.connection: http.client.HTTPConnection | None = None
        deadline = time.monotonic() + 60
        while True:
            try:
                self.call("eth_chainId")
                break
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError(f"node did not start; see {self.log.name}") from None
                time.sleep(0.1)

    def call(self, method: str, *params: Any) -> Any:
        """
        A JSON-RPC call over a keep-alive connection; its result.
        """
        if self.connection is None:
            self.connection = http.client.HTTPConnection("127.0.0.1", self.rpc_port, timeout=60)
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)})
        try:
            self.connection.request("POST", "/", body, {"Content-Type": "application/json"})
            answer = json.loads(self.connection.getresponse().read())
        except (OSError, http.client.HTTPException):
            self.connection.close()
            self.connection = None
            raise OSError(f"{method} failed")
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]

    def cpu_seconds(self) -> float:
        """
        The CPU time (user and system) the process has used: on a loaded
        machine a steadier measure of the work than the wall clock.
        """
        with open(f"/proc/{self.process.pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        """
        Stop the process and wait for it.
        """
        self.process.terminate()
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


def percentile(values: list[float], fraction: float) -> float:
    """
    The value below which C{fraction} of C{values} lie.
    """
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def build(datadir: Path, blocks: int, transfers: int) -> float:
    """
    Build the source chain; return the seconds it took.
    """
    started = time.monotonic()
    env = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    subprocess.run([sys.executable, "-c", BUILDER, str(datadir), str(blocks), str(transfers)], check=True, env=env)
    return time.monotonic() - started


def sync(work: Path, source_dir: Path, blocks: int, *argv: str, poll: float = 0.0) -> dict[str, float]:
    """
    Sync a fresh node from the source (both with the options C{argv}); return the figures.

    @param poll: seconds between the client's calls (0: as fast as the node answers).
    """
    source = Node(source_dir, 0, "--mining", "off", *argv)
    follower = None
    shutil.rmtree(work / "follower", ignore_errors=True)
    try:
        follower = Node(work / "follower", 1, "--mining", "off", "--peer", f"127.0.0.1:{source.p2p_port}", *argv)
        cpu_before = source.cpu_seconds() + follower.cpu_seconds()
        latencies, first, number = [], None, 0
        deadline = time.monotonic() + 3600
        while number < blocks and time.monotonic() < deadline:
            if poll:
                time.sleep(poll)
            asked = time.perf_counter()
            number = int(follower.call("eth_blockNumber"), 16)
            now = time.perf_counter()
            latencies.append(now - asked)
            if number and first is None:
                first = (now, number)
        assert first is not None
        seconds = time.perf_counter() - first[0]
        cpu = source.cpu_seconds() + follower.cpu_seconds() - cpu_before
        return {
            "cpu_seconds": cpu,
            "blocks_per_second": (blocks - first[1]) / seconds if seconds else float("inf"),
            "seconds": seconds,
            "rpc_p50_ms": percentile(latencies, 0.5) * 1000,
            "rpc_p99_ms": percentile(latencies, 0.99) * 1000,
            "rpc_calls": len(latencies),
        }
    finally:
        if follower is not None:
            follower.stop()
        source.stop()


def propagation(work: Path, hops: int, encryption: bool = True) -> dict[str, float]:
    """
    Mine C{hops} blocks on A of a line A - B - C; return the per-hop latencies.
    """
    config, alone = work / "line.toml", work / "alone.toml"
    switch = "" if encryption else "encryption = false\n"
    config.write_text("[p2p]\nmax_outbound = 1\n" + switch)
    alone.write_text("[p2p]\nmax_outbound = 0\n" + switch)
    for name in ("a", "b", "c"):
        shutil.rmtree(work / name, ignore_errors=True)
    a = Node(work / "a", 0, "--mining", "manual", "--config", str(alone))
    b = c = None
    try:
        b = Node(work / "b", 1, "--mining", "off", "--config", str(config), "--peer", f"127.0.0.1:{a.p2p_port}")
        c = Node(work / "c", 1, "--mining", "off", "--config", str(config), "--peer", f"127.0.0.1:{b.p2p_port}")
        while int(b.call("net_peerCount"), 16) < 2 or int(c.call("net_peerCount"), 16) < 1:
            time.sleep(0.05)
        first_hop, second_hop = [], []
        for number in range(1, hops + 1):
            a.call("evm_mine")
            mined = time.perf_counter()
            arrived: dict[str, float] = {}
            while len(arrived) < 2:
                for name, node in (("b", b), ("c", c)):
                    if name not in arrived and int(node.call("eth_blockNumber"), 16) >= number:
                        arrived[name] = time.perf_counter()
            first_hop.append(arrived["b"] - mined)
            second_hop.append(arrived["c"] - arrived["b"])
        hop = first_hop + second_hop
        return {
            "hop_p50_ms": statistics.median(hop) * 1000,
            "hop_p90_ms": percentile(hop, 0.9) * 1000,
            "first_hop_p50_ms": statistics.median(first_hop) * 1000,
            "second_hop_p50_ms": statistics.median(second_hop) * 1000,
        }
    finally:
        for node in (c, b, a):
            if node is not None:
                node.stop()


def transport() -> None:
    """
    The transport alone: a key exchange and handshake digest, then sealing
    and opening frames of several sizes (median of repeated runs).
    """
    sys.path.insert(0, str(REPOSITORY))
    from nodex.p2p.identity import NodeKey
    from nodex.p2p.secure import SecureFraming

    key = NodeKey.generate()

    def exchange() -> None:
        initiator, responder = SecureFraming(initiator=True), SecureFraming(initiator=False)
        initiator.feed(responder.preamble)
        responder.feed(initiator.preamble)
        initiator.exchange()
        responder.exchange()
        assert initiator.session is not None
        key.sign_challenge(b"\x01" * 32, initiator.session)

    def timed(function: Any, repeat: int) -> float:
        samples = []
        for _ in range(5):
            started = time.perf_counter()
            for _ in range(repeat):
                function()
            samples.append((time.perf_counter() - started) / repeat)
        return statistics.median(samples)

    print(f"key exchange of both sides and one AUTH signature: {timed(exchange, 200) * 1e6:.0f} us", flush=True)
    for size in (16, 1024, 64 * 1024, 1024 * 1024):
        initiator, responder = SecureFraming(initiator=True, limit=1 << 24), SecureFraming(initiator=False, limit=1 << 24)
        initiator.feed(responder.preamble)
        responder.feed(initiator.preamble)
        initiator.exchange()
        responder.exchange()
        payload = os.urandom(size)
        repeat = max(20, 2_000_000 // (size + 200))

        def round_trip() -> None:
            responder.feed(initiator.frame(payload))
            responder.next_frame()

        seconds = timed(round_trip, repeat)
        print(f"seal and open a frame of {size:,} bytes: {seconds * 1e6:.1f} us ({size / seconds / 2**20:.0f} MiB/s)", flush=True)


def compare(work: Path, options: argparse.Namespace) -> None:
    """
    Sync and propagation over the encrypted transport and the plain framing, alternately.
    """
    plain = work / "plain.toml"
    plain.write_text("[p2p]\nencryption = false\n")
    rates: dict[bool, list[float]] = {True: [], False: []}
    hops: dict[bool, list[float]] = {True: [], False: []}
    cpu: dict[bool, list[float]] = {True: [], False: []}
    if not options.skip_sync:
        source = work / "source"
        seconds = build(source, options.blocks, options.transfers)
        print(f"built {options.blocks} blocks of {options.transfers} transfers in {seconds:.1f} s", flush=True)
    for round_ in range(options.rounds):
        for encryption in (round_ % 2 == 0, round_ % 2 != 0):
            name = "encrypted" if encryption else "plain"
            if not options.skip_sync:
                figures = sync(work, work / "source", options.blocks, *(() if encryption else ("--config", str(plain))),
                               poll=options.poll)
                rates[encryption].append(figures["blocks_per_second"])
                cpu[encryption].append(figures["cpu_seconds"])
                print(f"round {round_ + 1} {name}: sync {figures['blocks_per_second']:.0f} blocks/s "
                      f"({figures['seconds']:.2f} s, {figures['cpu_seconds']:.2f} CPU s in both nodes), "
                      f"eth_blockNumber p99 {figures['rpc_p99_ms']:.2f} ms", flush=True)
            if options.hops:
                figures = propagation(work, options.hops, encryption)
                hops[encryption].append(figures["hop_p50_ms"])
                print(f"round {round_ + 1} {name}: propagation per hop p50 {figures['hop_p50_ms']:.2f} ms, "
                      f"p90 {figures['hop_p90_ms']:.2f} ms", flush=True)
    if rates[True]:
        ratio = statistics.median(rates[True]) / statistics.median(rates[False])
        print(f"sync: encrypted {min(rates[True]):.0f}-{max(rates[True]):.0f} blocks/s, plain "
              f"{min(rates[False]):.0f}-{max(rates[False]):.0f}; median ratio {ratio:.1%}", flush=True)
        ratio = statistics.median(cpu[True]) / statistics.median(cpu[False])
        print(f"sync CPU seconds (both nodes): encrypted {min(cpu[True]):.2f}-{max(cpu[True]):.2f}, plain "
              f"{min(cpu[False]):.2f}-{max(cpu[False]):.2f}; median ratio {ratio:.1%}", flush=True)
    if hops[True]:
        ratio = statistics.median(hops[True]) / statistics.median(hops[False])
        print(f"propagation p50 per hop: encrypted {min(hops[True]):.2f}-{max(hops[True]):.2f} ms, plain "
              f"{min(hops[False]):.2f}-{max(hops[False]):.2f} ms; median ratio {ratio:.2f}x", flush=True)


def main() -> None:
    """
    Run the benchmarks and print their figures.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=10_000)
    parser.add_argument("--transfers", type=int, default=0, help="native transfers per block (at most 10)")
    parser.add_argument("--hops", type=int, default=50, help="blocks mined for the propagation figure (0: skip)")
    parser.add_argument("--skip-sync", action="store_true")
    parser.add_argument("--compare", action="store_true", help="encrypted against plain, alternately")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each with --compare")
    parser.add_argument("--poll", type=float, default=0.0,
                        help="seconds between eth_blockNumber calls during a --compare sync (0: without pause); "
                             "a pause keeps the answers' CPU out of the sync's")
    parser.add_argument("--transport", action="store_true", help="the transport's own costs, in this process")
    options = parser.parse_args()
    if options.transport:
        transport()
        return
    work = Path(tempfile.mkdtemp(prefix="nodex-p2p-bench-"))
    try:
        if options.compare:
            compare(work, options)
            return
        if not options.skip_sync:
            source = work / "source"
            seconds = build(source, options.blocks, options.transfers)
            print(f"built {options.blocks} blocks of {options.transfers} transfers in {seconds:.1f} s", flush=True)
            figures = sync(work, source, options.blocks)
            print(
                f"sync of {options.blocks} blocks ({options.transfers} transfers each): "
                f"{figures['blocks_per_second']:.0f} blocks/s ({figures['seconds']:.1f} s); "
                f"eth_blockNumber on the syncing node p50 {figures['rpc_p50_ms']:.2f} ms, "
                f"p99 {figures['rpc_p99_ms']:.2f} ms over {figures['rpc_calls']:.0f} calls",
                flush=True,
            )
        if options.hops:
            figures = propagation(work, options.hops)
            print(
                f"propagation along A - B - C, {options.hops} blocks: per hop p50 {figures['hop_p50_ms']:.1f} ms, "
                f"p90 {figures['hop_p90_ms']:.1f} ms (A→B p50 {figures['first_hop_p50_ms']:.1f} ms, "
                f"B→C p50 {figures['second_hop_p50_ms']:.1f} ms)",
                flush=True,
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
