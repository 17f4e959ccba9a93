"""
Hostile peers (issue "Peer reputation and bans"): a node under attack on its
P2P port keeps answering RPC, its memory stays bounded, and the offenders
are punished.

1. A regtest node (C{twistd -n nodex}, its own process, pinned to core 0 when
   C{taskset} exists) with RPC and P2P on 127.0.0.1.
2. Baseline: C{eth_blockNumber} every 10 ms for 5 s, over one keep-alive
   connection; the node's VmRSS and VmHWM from C{/proc/<pid>/status}.
3. Attack: C{--connections} (300) connections to the P2P port spread evenly
   over C{--seconds} (30), in turn: garbage (a frame that is not RLP), an
   oversize length prefix (4 GiB), a half-open socket (connects, sends
   nothing, held for 12 s: beyond the handshake timeout), and a flood (a real
   handshake with a fresh node key, then 2,000 PINGs in one write).  Each
   runs in its own thread with socket timeouts, so the attack is bounded in
   time and count; all traffic goes to 127.0.0.1.  Meanwhile the RPC poll
   goes on and the node's VmRSS is sampled every 100 ms.
4. Report: C{eth_blockNumber} p50/p99/max during the attack against the
   baseline, peak RSS growth (the highest sampled VmRSS, and VmHWM, minus
   the baseline VmRSS), what the attackers saw (how each connection ended),
   and the punished records from C{sco_peerList} / C{sco_reputationSummary}.

Every connection comes from 127.0.0.1: after the first offence that punishes
the address record 127.0.0.1, every later connection is refused at accept
(BAD_REPUTATION), so the default run measures mostly refusals.  With
C{--no-punish} the node scores without punishing
(C{scoring.punishment_enabled = false}), so every attack runs into the P2P
layer's own limits instead.

Usage::

    python benchmarks/hostile_peers.py [--connections 300] [--seconds 30] [--no-punish]
"""

import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from p2p import Node, percentile  # noqa: E402

from nodex.interfaces import WIRE_PROTOCOL_VERSION  # noqa: E402
from nodex.p2p.errors import DisconnectReason  # noqa: E402
from nodex.p2p.identity import NodeKey  # noqa: E402
from nodex.p2p.messages import Auth, Disconnect, Hello, Ping, decode_message, encode_frame  # noqa: E402

KINDS = ("garbage", "oversize", "half-open", "flood")
HOLD_SECONDS = 12.0
REGTEST_NETWORK_ID = 7771


def status(pid: int) -> dict[str, int]:
    """
    VmRSS and VmHWM of a process, in KiB.
    """
    found = {}
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[key] = int(value.split()[0])
    return found


def read_frames(sock: socket.socket, until: float) -> tuple[list[object], bytes]:
    """
    Read frames until the node closes the connection or C{until} (monotonic) passes.
    """
    data = b""
    while time.monotonic() < until:
        sock.settimeout(max(0.01, until - time.monotonic()))
        try:
            chunk = sock.recv(65536)
        except (TimeoutError, socket.timeout):
            break
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    return split_frames(data), data


def split_frames(data: bytes) -> list[object]:
    """
    The whole frames of C{data} that decode.
    """
    found: list[object] = []
    while len(data) >= 4:
        length = int.from_bytes(data[:4], "big")
        if len(data) < 4 + length:
            break
        try:
            found.append(decode_message(data[4 : 4 + length]))
        except Exception:
            found.append("undecodable")
        data = data[4 + length :]
    return found


def ending(frames: list[object]) -> str:
    """
    How a connection ended, as the attacker saw it.
    """
    for frame in reversed(frames):
        if isinstance(frame, Disconnect):
            return DisconnectReason.describe(frame.reason)
    return "closed without a message"


class Attack:
    """
    The attacking connections and what each saw.
    """

    def __init__(self, port: int, genesis: bytes) -> None:
        self.port = port
        self.genesis = genesis
        self.outcomes: Counter[tuple[str, str]] = Counter()
        self.lock = threading.Lock()

    def record(self, kind: str, outcome: str) -> None:
        """
        Count how one connection of C{kind} ended.
        """
        with self.lock:
            self.outcomes[(kind, outcome)] += 1

    def run_one(self, kind: str) -> None:
        """
        Open one connection and attack with C{kind}.
        """
        try:
            sock = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        except OSError as exc:
            self.record(kind, f"connect failed: {exc.__class__.__name__}")
            return
        try:
            getattr(self, "_" + kind.replace("-", "_"))(sock)
        except OSError as exc:
            self.record(kind, f"socket error: {exc.__class__.__name__}")
        finally:
            sock.close()

    def _garbage(self, sock: socket.socket) -> None:
        sock.sendall(b"\x00\x00\x00\x10" + b"\xff" * 16)
        frames, _ = read_frames(sock, time.monotonic() + 5)
        self.record("garbage", ending(frames))

    def _oversize(self, sock: socket.socket) -> None:
        sock.sendall((2**32 - 1).to_bytes(4, "big") + b"\x00" * 1024)
        frames, _ = read_frames(sock, time.monotonic() + 5)
        self.record("oversize", ending(frames))

    def _half_open(self, sock: socket.socket) -> None:
        frames, _ = read_frames(sock, time.monotonic() + HOLD_SECONDS)
        self.record("half-open", ending(frames))

    def _flood(self, sock: socket.socket) -> None:
        key = NodeKey.generate()
        challenge = os.urandom(32)
        sock.sendall(encode_frame(Hello(WIRE_PROTOCOL_VERSION, REGTEST_NETWORK_ID, self.genesis, self.genesis, 0, 0,
                                        key.node_id, challenge, 0)))
        data = b""
        deadline = time.monotonic() + 5
        hello = None
        while hello is None and time.monotonic() < deadline:
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
            frames = split_frames(data)
            hello = next((frame for frame in frames if isinstance(frame, Hello)), None)
            if any(isinstance(frame, Disconnect) for frame in frames):
                self.record("flood", ending(frames))
                return
        if hello is None:
            self.record("flood", "no hello")
            return
        sock.sendall(encode_frame(Auth(key.sign_challenge(hello.challenge))))
        sock.sendall(encode_frame(Ping(1)) * 2000)
        frames, rest = read_frames(sock, time.monotonic() + 5)
        self.record("flood", ending(split_frames(data + rest)))


def main() -> None:
    """
    Run the node, the baseline and the attack; print the report as JSON.
    """
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--no-punish", action="store_true", help="score without punishing")
    args = parser.parse_args()
    connections = max(1, min(args.connections, 5000))
    seconds = max(1.0, min(args.seconds, 600.0))

    with tempfile.TemporaryDirectory() as temp:
        datadir = Path(temp) / "node"
        datadir.mkdir()
        argv = ["--mining", "manual"]
        if args.no_punish:
            config = Path(temp) / "lenient.toml"
            config.write_text("[scoring]\npunishment_enabled = false\n")
            argv += ["--config", str(config)]
        node = Node(datadir, 0, *argv)
        try:
            pid = node.process.pid
            genesis = bytes.fromhex(node.call("eth_getBlockByNumber", "0x0", False)["hash"][2:])

            def poll(duration: float) -> list[float]:
                latencies = []
                end = time.monotonic() + duration
                while time.monotonic() < end:
                    started = time.perf_counter()
                    node.call("eth_blockNumber")
                    latencies.append((time.perf_counter() - started) * 1000)
                    time.sleep(0.01)
                return latencies

            poll(1.0)
            baseline = poll(5.0)
            before = status(pid)

            attack = Attack(node.p2p_port, genesis)
            threads: list[threading.Thread] = []
            peak = [before["VmRSS"]]
            stop = threading.Event()

            def sample() -> None:
                while not stop.is_set():
                    peak[0] = max(peak[0], status(pid)["VmRSS"])
                    time.sleep(0.1)

            def launch() -> None:
                interval = seconds / connections
                start = time.monotonic()
                for index in range(connections):
                    delay = start + index * interval - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
                    thread = threading.Thread(target=attack.run_one, args=(KINDS[index % len(KINDS)],), daemon=True)
                    thread.start()
                    threads.append(thread)

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            launcher = threading.Thread(target=launch, daemon=True)
            launcher.start()
            during = poll(seconds)
            launcher.join()
            for thread in threads:
                thread.join(HOLD_SECONDS + 10)
            stop.set()
            sampler.join()
            after = status(pid)
            records = node.call("sco_peerList")
            summary = node.call("sco_reputationSummary")
        finally:
            node.stop()

    punished = [record for record in records if record["punishments"] > 0]
    report = {
        "punishment": not args.no_punish,
        "connections": connections,
        "seconds": seconds,
        "eth_blockNumber_ms": {
            "baseline": {"calls": len(baseline), "p50": round(statistics.median(baseline), 2),
                         "p99": round(percentile(baseline, 0.99), 2)},
            "attack": {"calls": len(during), "p50": round(statistics.median(during), 2),
                       "p99": round(percentile(during, 0.99), 2), "max": round(max(during), 2)},
        },
        "rss_kib": {"before": before["VmRSS"], "peak_sampled": peak[0], "hwm_before": before["VmHWM"],
                    "hwm_after": after["VmHWM"], "after": after["VmRSS"]},
        "rss_growth_mib": round((max(peak[0], after["VmHWM"]) - before["VmRSS"]) / 1024, 1),
        "outcomes": {f"{kind}: {outcome}": count for (kind, outcome), count in sorted(attack.outcomes.items())},
        "punished_records": {
            "node": sum(1 for record in punished if record["type"] == "node"),
            "address": [record["id"] for record in punished if record["type"] == "address"],
        },
        "summary": summary,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
