"""
Hostile peers (issues 13 and 24): a node under attack on its P2P port keeps
answering RPC and syncing, its memory stays bounded, and the offenders are
punished or dropped.

Per attack (C{--attack}, several allowed; default: all of issue 24's):

1. A source node (C{--mining off}, pinned to core 1) serves a chain of
   C{--blocks} empty blocks, built once.
2. Quiet: a fresh target node (pinned to core 0) dials the source and
   syncs, while this client polls its C{eth_blockNumber} every 10 ms over
   one keep-alive connection, its C{/health} every 100 ms, and samples its
   VmRSS every 100 ms.
3. Attack: the same with a fresh target, and the attack started as soon as
   the target answers RPC (the sync has just begun): the attacks of
   C{benchmarks/hostile_peer_attacks.py}, from loopback addresses 127.0.0.2 and up.
4. Report, per attack: RSS growth (peak VmRSS minus VmRSS when the target
   answered), eth_blockNumber p50/p99/max, the sync rate over the attack's
   window against the quiet run's same window, the seconds until the node
   dropped the attacker, the /health answers seen, and what the attacker saw.

C{--repository PATH} runs the target from another checkout (a worktree of
the base commit), so that before and after can be run in turn.

The older mixed attack (issue 13: 300 connections of garbage, oversize
prefixes, half-open sockets and floods from 127.0.0.1) is C{--attack mixed}
with C{--connections}, C{--seconds} and C{--no-punish}.

Usage::

    python benchmarks/hostile_peers.py [--attack NAME ...] [--blocks 20000] [--repository PATH]
    python benchmarks/hostile_peers.py --attack mixed [--connections 300] [--seconds 30] [--no-punish]
"""

import argparse
import http.client
import json
import os
import shutil
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

from hostile_peer_attacks import ATTACKS, NEEDS_HEAD, NEEDS_SIBLINGS, Outcome, make_siblings  # noqa: E402
from p2p import REPOSITORY, Node, build, free_port, percentile  # noqa: E402

from nodex.p2p.messages import WIRE_PROTOCOL_VERSION  # noqa: E402
from nodex.p2p.errors import DisconnectReason  # noqa: E402
from nodex.p2p.identity import NodeKey  # noqa: E402
from nodex.p2p.messages import Auth, Disconnect, Hello, Ping, decode_message, encode_frame  # noqa: E402
from tests.p2p.wire import SecureSocket  # noqa: E402

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


def read_frames(sock: SecureSocket, until: float) -> tuple[list[object], bytes]:
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
            sock = SecureSocket(socket.create_connection(("127.0.0.1", self.port), timeout=5))
        except OSError as exc:
            self.record(kind, f"connect failed: {exc.__class__.__name__}")
            return
        try:
            getattr(self, "_" + kind.replace("-", "_"))(sock)
        except OSError as exc:
            self.record(kind, f"socket error: {exc.__class__.__name__}")
        finally:
            sock.close()

    def _garbage(self, sock: SecureSocket) -> None:
        sock.sendall(b"\x00\x00\x00\x10" + b"\xff" * 16)
        frames, _ = read_frames(sock, time.monotonic() + 5)
        self.record("garbage", ending(frames))

    def _oversize(self, sock: SecureSocket) -> None:
        sock.sendall((2**32 - 1).to_bytes(4, "big") + b"\x00" * 1024)
        frames, _ = read_frames(sock, time.monotonic() + 5)
        self.record("oversize", ending(frames))

    def _half_open(self, sock: SecureSocket) -> None:
        frames, _ = read_frames(sock, time.monotonic() + HOLD_SECONDS)
        self.record("half-open", ending(frames))

    def _flood(self, sock: SecureSocket) -> None:
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
        sock.sendall(encode_frame(Auth(key.sign_challenge(hello.challenge, sock.session))))
        sock.sendall(encode_frame(Ping(1)) * 2000)
        frames, rest = read_frames(sock, time.monotonic() + 5)
        self.record("flood", ending(split_frames(data + rest)))


def run_mixed(args: argparse.Namespace) -> None:
    """
    Issue 13's mixed attack: run the node, the baseline and the attack; print the report as JSON.
    """
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


class Client:
    """
    A keep-alive HTTP connection of its own (one per polling thread).
    """

    def __init__(self, port: int) -> None:
        self.port = port
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def call(self, method: str, *params: object) -> object:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)})
        self.connection.request("POST", "/", body, {"Content-Type": "application/json"})
        return json.loads(self.connection.getresponse().read())["result"]

    def get(self, path: str) -> tuple[int, dict[str, object]]:
        self.connection.request("GET", path)
        response = self.connection.getresponse()
        return response.status, json.loads(response.read())


class Watch:
    """
    The pollers of one phase: eth_blockNumber every 10 ms (latency, and the
    head over time), /health every 100 ms, VmRSS every 100 ms.
    """

    def __init__(self, node: Node, metrics_port: int) -> None:
        self.node = node
        self.metrics_port = metrics_port
        self.latencies: list[float] = []
        self.heads: list[tuple[float, int]] = []
        self.health: list[tuple[float, int]] = []
        self.highest = 0
        self.rss_start = status(node.process.pid)["VmRSS"]
        self.rss_peak = self.rss_start
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=target, daemon=True) for target in (self._poll, self._sample)]
        for thread in self.threads:
            thread.start()

    def _poll(self) -> None:
        client = Client(self.node.rpc_port)
        while not self.stop.is_set():
            started = time.perf_counter()
            try:
                number = int(str(client.call("eth_blockNumber")), 16)
            except (OSError, http.client.HTTPException):
                # Unanswered within the client's 30 s: counted at that latency.
                client = Client(self.node.rpc_port)
                number = self.head()
            now = time.perf_counter()
            self.latencies.append((now - started) * 1000)
            self.heads.append((time.monotonic(), number))
            time.sleep(0.01)

    def _sample(self) -> None:
        health = Client(self.metrics_port)
        while not self.stop.is_set():
            self.rss_peak = max(self.rss_peak, status(self.node.process.pid)["VmRSS"])
            try:
                code, answer = health.get("/health")
            except (OSError, http.client.HTTPException):
                health = Client(self.metrics_port)
                code, answer = 0, {}
            self.health.append((time.monotonic(), code))
            self.highest = max(self.highest, int(str(answer.get("highestBlock", 0))))
            time.sleep(0.1)

    def head(self) -> int:
        return self.heads[-1][1] if self.heads else 0

    def finish(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join()

    def rate(self, start: float, seconds: float) -> float:
        """
        Blocks per second synced from C{start} over C{seconds}.
        """
        window = [(when, number) for when, number in self.heads if start <= when <= start + seconds]
        if len(window) < 2 or window[-1][0] == window[0][0]:
            return 0.0
        return (window[-1][1] - window[0][1]) / (window[-1][0] - window[0][0])


def phase(work: Path, name: str, source: Node, blocks: int, repository: Path, attack: str | None,
          siblings: Path | None = None) -> dict[str, object]:
    """
    One target syncing from the source, attacked or not.
    """
    metrics_port = free_port()
    datadir = work / name
    datadir.mkdir()
    target = Node(
        datadir, 0, "--mining", "off", "--peer", f"127.0.0.1:{source.p2p_port}",
        "--metrics", f"tcp:{metrics_port}:interface=127.0.0.1", repository=repository,
    )
    try:
        genesis = bytes.fromhex(str(target.call("eth_getBlockByNumber", "0x0", False)["hash"])[2:])  # type: ignore[index]
        watch = Watch(target, metrics_port)
        start = time.monotonic()
        outcome: list[Outcome] = []
        thread = None
        if attack is not None:
            function = ATTACKS[attack]
            extra: dict[str, object] = {"head": watch.head} if attack in NEEDS_HEAD else {}
            if attack in NEEDS_SIBLINGS:
                extra["siblings"] = siblings
            thread = threading.Thread(
                target=lambda: outcome.append(function(target.p2p_port, genesis, start, start + 40, **extra)),  # type: ignore[operator]
                daemon=True,
            )
            thread.start()
        deadline = start + 180
        while time.monotonic() < deadline and (watch.head() < blocks or (thread is not None and thread.is_alive())):
            time.sleep(0.1)
        synced_at = next((when for when, number in watch.heads if number >= blocks), None)
        ended = time.monotonic()
        watch.finish()
        try:
            records = target.call("sco_peerList")
        except (OSError, RuntimeError):
            records = [{"id": "(the node did not answer sco_peerList)", "punishments": 1}]
    finally:
        target.stop()
    return {
        "start": start,
        "watch": watch,
        "outcome": outcome[0] if outcome else None,
        "sync_seconds": None if synced_at is None else synced_at - start,
        "duration": ended - start,
        "punished": [record["id"] for record in records if record["punishments"]],  # type: ignore[union-attr, index]
    }


def run_attacks(args: argparse.Namespace) -> None:
    """
    Each attack of issue 24 against a syncing target, after a quiet run; print the report as JSON lines.
    """
    repository = Path(args.repository).resolve() if args.repository else REPOSITORY
    work = Path(tempfile.mkdtemp(prefix="nodex-hostile-"))
    try:
        chain = work / "chain"
        seconds = build(chain, args.blocks, 0)
        print(json.dumps({"built_blocks": args.blocks, "seconds": round(seconds, 1), "repository": str(repository),
                          "load": os.getloadavg()}), flush=True)
        siblings = make_siblings(work, args.side_blocks) if NEEDS_SIBLINGS & set(args.attack) else None
        source = Node(chain, 1, "--mining", "off")
        try:
            for index, attack in enumerate(args.attack):
                quiet = phase(work, f"quiet-{index}", source, args.blocks, repository, None)
                attacked = phase(work, f"attack-{index}", source, args.blocks, repository, attack, siblings)
                print(json.dumps(report(attack, quiet, attacked)), flush=True)
        finally:
            source.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(attack: str, quiet: dict[str, object], attacked: dict[str, object]) -> dict[str, object]:
    """
    The figures of one attack against its quiet run.
    """
    q, a = quiet["watch"], attacked["watch"]
    assert isinstance(q, Watch) and isinstance(a, Watch)
    outcome = attacked["outcome"]
    assert isinstance(outcome, Outcome)
    window = min(float(attacked["duration"]), float(quiet["sync_seconds"] or quiet["duration"]))  # type: ignore[arg-type]
    quiet_rate = q.rate(float(quiet["start"]), window)  # type: ignore[arg-type]
    synced = None if attacked["sync_seconds"] is None else float(attacked["start"]) + float(attacked["sync_seconds"])  # type: ignore[arg-type]
    attack_rate = a.rate(float(attacked["start"]), window)  # type: ignore[arg-type]
    return {
        "attack": attack,
        "load": [round(value, 2) for value in os.getloadavg()],
        "rss_growth_mib": {"attack": round((a.rss_peak - a.rss_start) / 1024, 1),
                           "quiet": round((q.rss_peak - q.rss_start) / 1024, 1)},
        "eth_blockNumber_ms": {
            "attack": {"p50": round(statistics.median(a.latencies), 2), "p99": round(percentile(a.latencies, 0.99), 2),
                       "max": round(max(a.latencies), 2), "calls": len(a.latencies)},
            "quiet": {"p50": round(statistics.median(q.latencies), 2), "p99": round(percentile(q.latencies, 0.99), 2)},
        },
        "sync_blocks_per_second": {"attack": round(attack_rate), "quiet": round(quiet_rate), "window_s": round(window, 1),
                                   "ratio": round(attack_rate / quiet_rate, 2) if quiet_rate else None},
        "dropped_after_s": None if outcome.dropped_after is None else round(outcome.dropped_after, 2),
        "attacker_saw": outcome.reason,
        "health": {"while_syncing": dict(Counter(code for when, code in a.health if synced is None or when < synced)),
                   "synced": dict(Counter(code for when, code in a.health if synced is not None and when >= synced)),
                   "highest_block_max": a.highest},
        "punished_records": attacked["punished"],
        **outcome.extra,
    }


def main() -> None:
    """
    Parse the arguments; run the mixed attack or issue 24's attacks.
    """
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--attack", action="append", choices=[*ATTACKS, "mixed"])
    parser.add_argument("--blocks", type=int, default=20_000)
    parser.add_argument("--repository", help="the nodex checkout the target runs (default: this one)")
    parser.add_argument("--side-blocks", type=int, default=1000, help="sealed blocks at height 1 (side-blocks)")
    parser.add_argument("--connections", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--no-punish", action="store_true", help="score without punishing (mixed)")
    args = parser.parse_args()
    if args.attack == ["mixed"]:
        run_mixed(args)
        return
    args.attack = args.attack or list(ATTACKS)
    run_attacks(args)


if __name__ == "__main__":
    main()
