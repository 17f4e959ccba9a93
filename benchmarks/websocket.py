"""
Measure JSON-RPC over WebSocket against a running regtest node.

Three figures:

  1. C{eth_blockNumber} requests per second over one WebSocket connection,
     pipelined (up to C{--window} requests in flight), beside the same
     request over one keep-alive HTTP connection, one at a time (what an
     HTTP client does; HTTP/1.1 pipelining is not used by clients);
  2. the latency from a block becoming the node's head to its C{newHeads}
     notification reaching each of 1, 100 and 1,000 subscribers (one
     connection each), as percentiles over C{--blocks} blocks;
  3. the node's resident memory with 1,000 idle WebSocket connections,
     beside its memory without them.

The node runs in its own process with manual mining (with C{--pin}, on
core 0, and the client on core 1: on a machine that other work loads,
pinning makes each side wait for its core, so it is off by default); the
clients run here on raw sockets with prebuilt frames, so that the client's
cost stays small.  For the latency the
node's script records, with the system-wide monotonic clock, when each block
is published to the chain's observers (before the subscription service
sends anything); the client stamps each notification with the time its
socket was reported readable.

Usage::

    python benchmarks/websocket.py [--seconds 2] [--rounds 5] [--window 64] [--blocks 30] [--subscribers 1,100,1000] [--pin]
"""

import argparse
import base64
import json
import os
import resource
import selectors
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NODE_SCRIPT = r"""
import sys, time
from twisted.internet import reactor
from nodex.config import load_config
from nodex.tap import compose
http_port, ws_port, datadir, publish_log = sys.argv[1:5]
config = load_config(None, {
    "datadir": datadir, "mining": {"mode": "manual"},
    "rpc": {"endpoint": "tcp:" + http_port + ":interface=127.0.0.1", "ws": "tcp:" + ws_port + ":interface=127.0.0.1"},
})
node = compose(config, reactor)
chain = node.getServiceNamed("chain")
log = open(publish_log, "w")
publish = chain._publish
def timed_publish(change):
    # The moment the head moves and the observers (the subscription
    # service among them) are told.
    if change.event is not None and change.event.adopted:
        log.write("%d %.9f\n" % (change.event.adopted[-1].header.number, time.monotonic()))
        log.flush()
    return publish(change)
chain._publish = timed_publish
node.startService()
reactor.addSystemEventTrigger("before", "shutdown", node.stopService)
reactor.run()
"""

MASK = b"\x11\x22\x33\x44"


def client_frame(payload: bytes) -> bytes:
    """
    A masked text frame (clients must mask), with a fixed key.
    """
    length = len(payload)
    if length < 126:
        head = bytes([0x81, 0x80 | length])
    else:
        head = bytes([0x81, 0x80 | 126]) + struct.pack("!H", length)
    masked = bytes(byte ^ MASK[index % 4] for index, byte in enumerate(payload))
    return head + MASK + masked


def free_port() -> int:
    """
    A TCP port nobody listens on now.
    """
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_listening(port: int, seconds: float = 30.0) -> None:
    """
    Wait until something accepts connections on C{port}.
    """
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"the node did not listen on port {port}")


def ws_connect(port: int, source: str = "127.0.0.1") -> socket.socket:
    """
    A WebSocket connection from C{source} after its opening handshake (blocking socket).
    """
    sock = socket.create_connection(("127.0.0.1", port), source_address=(source, 0))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(
        (
            f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            raise SystemExit("the node closed the WebSocket handshake")
        head += chunk
    if not head.startswith(b"HTTP/1.1 101"):
        raise SystemExit(f"handshake refused: {head[:80]!r}")
    return sock


class FrameReader:
    """
    Splits the bytes of one connection into server frames (unmasked).
    """

    def __init__(self) -> None:
        self.buffer = b""

    def feed(self, data: bytes) -> list[bytes]:
        """
        The payloads of the whole frames now buffered.
        """
        self.buffer += data
        payloads = []
        while len(self.buffer) >= 2:
            length = self.buffer[1] & 0x7F
            offset = 2
            if length == 126:
                if len(self.buffer) < 4:
                    break
                length, offset = struct.unpack("!H", self.buffer[2:4])[0], 4
            elif length == 127:
                if len(self.buffer) < 10:
                    break
                length, offset = struct.unpack("!Q", self.buffer[2:10])[0], 10
            if len(self.buffer) < offset + length:
                break
            if self.buffer[0] & 0x0F == 0x1:
                payloads.append(self.buffer[offset : offset + length])
            self.buffer = self.buffer[offset + length :]
        return payloads


def pipelined_ws(port: int, seconds: float, window: int) -> float:
    """
    eth_blockNumber requests per second over one WebSocket, C{window} in flight.
    """
    sock = ws_connect(port)
    request = client_frame(b'{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}')
    reader = FrameReader()
    sock.sendall(request * window)
    in_flight, answered = window, 0
    started = time.monotonic()
    deadline = started + seconds
    while True:
        answers = len(reader.feed(sock.recv(1 << 20)))
        answered += answers
        in_flight -= answers
        now = time.monotonic()
        if now >= deadline:
            break
        if in_flight <= window // 2:
            sock.sendall(request * (window - in_flight))
            in_flight = window
    elapsed = time.monotonic() - started
    sock.close()
    return answered / elapsed


def sequential_http(port: int, seconds: float) -> float:
    """
    eth_blockNumber requests per second over one keep-alive HTTP connection,
    one request at a time.
    """
    body = b'{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}'
    request = (
        b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
        % (len(body), body)
    )
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    answered = 0
    started = time.monotonic()
    deadline = started + seconds
    while time.monotonic() < deadline:
        sock.sendall(request)
        data = b""
        while True:
            data += sock.recv(65536)
            end = data.find(b"\r\n\r\n")
            if end < 0:
                continue
            length = int(data[: end].lower().split(b"content-length:")[1].split(b"\r\n")[0])
            if len(data) >= end + 4 + length:
                break
        answered += 1
    elapsed = time.monotonic() - started
    sock.close()
    return answered / elapsed


def http_call(port: int, method: str) -> dict:
    """
    One JSON-RPC call over a fresh HTTP connection.
    """
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": []}).encode()
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(
            b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nConnection: close\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return json.loads(data.split(b"\r\n\r\n", 1)[1])


def subscribers(port: int, count: int) -> list[tuple[socket.socket, FrameReader]]:
    """
    C{count} connections, each subscribed to newHeads (answer read).
    """
    connections = []
    subscribe = client_frame(b'{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}')
    for _ in range(count):
        sock = ws_connect(port)
        sock.sendall(subscribe)
        reader = FrameReader()
        while not reader.feed(sock.recv(4096)):
            pass
        sock.setblocking(False)
        connections.append((sock, reader))
    return connections


def head_latencies(http_port: int, ws_port: int, count: int, blocks: int, publish_log: Path) -> list[float]:
    """
    Seconds from each block's publication to each subscriber's notification.
    """
    connections = subscribers(ws_port, count)
    selector = selectors.DefaultSelector()
    for sock, reader in connections:
        selector.register(sock, selectors.EVENT_READ, reader)
    received: list[tuple[int, float]] = []
    for _ in range(blocks):
        answer = http_call(http_port, "evm_mine")
        if "error" in answer:
            raise SystemExit(f"evm_mine failed: {answer}")
        # Read first, parse afterwards: the client's own work between two
        # selects would delay the stamps of the sockets it reads next.
        chunks: list[tuple[FrameReader, bytes, float]] = []
        pending = {reader for _, reader in connections}
        deadline = time.monotonic() + 30
        while pending and time.monotonic() < deadline:
            events = selector.select(timeout=1)
            stamp = time.monotonic()
            for key, _ in events:
                chunks.append((key.data, key.fileobj.recv(1 << 16), stamp))
                pending.discard(key.data)
        before = len(received)
        for reader, data, stamp in chunks:
            for payload in reader.feed(data):
                received.append((int(json.loads(payload)["params"]["result"]["number"], 16), stamp))
        if pending or len(received) - before != count:
            raise SystemExit(f"only {len(received) - before} of {count} notifications came")
        time.sleep(0.02)
    published = {}
    for line in publish_log.read_text().split("\n"):
        if line:
            number, stamp = line.split()
            published[int(number)] = float(stamp)
    for sock, _ in connections:
        selector.unregister(sock)
        sock.close()
    return [stamp - published[number] for number, stamp in received]


def cpu_seconds(pid: int) -> float:
    """
    User plus system CPU time that process C{pid} has used so far.
    """
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def alternating(pid: int, rounds: int, seconds: float, window: int, ws_port: int, http_port: int) -> dict[str, list[tuple[float, float]]]:
    """
    WebSocket and HTTP runs taken in turn (so that the machine's other
    load falls on both alike): per run, requests per second and requests
    per CPU-second of the node.
    """
    figures: dict[str, list[tuple[float, float]]] = {"ws": [], "http": []}
    for _ in range(rounds):
        for name in ("ws", "http"):
            cpu = cpu_seconds(pid)
            started = time.monotonic()
            rate = pipelined_ws(ws_port, seconds, window) if name == "ws" else sequential_http(http_port, seconds)
            elapsed = time.monotonic() - started
            used = cpu_seconds(pid) - cpu
            figures[name].append((rate, rate * elapsed / used if used else float("inf")))
    return figures


def rss_kib(pid: int) -> int:
    """
    The resident set of process C{pid}, in KiB.
    """
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise SystemExit("no VmRSS")


def idle_rss(pid: int, ws_port: int, count: int) -> tuple[int, int]:
    """
    The node's RSS before and with C{count} idle WebSocket connections.
    """
    before = rss_kib(pid)
    connections = [ws_connect(ws_port) for _ in range(count)]
    time.sleep(1.0)
    during = rss_kib(pid)
    for sock in connections:
        sock.close()
    return before, during


def percentile(values: list[float], fraction: float) -> float:
    """
    The value at C{fraction} of the sorted values.
    """
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> None:
    """
    Start the node, measure, print one line per figure.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="length of each request-rate run")
    parser.add_argument("--rounds", type=int, default=5, help="WebSocket and HTTP runs, taken in turn")
    parser.add_argument("--window", type=int, default=64)
    parser.add_argument("--blocks", type=int, default=30)
    parser.add_argument("--subscribers", default="1,100,1000")
    parser.add_argument("--idle", type=int, default=1000)
    parser.add_argument("--pin", action="store_true", help="pin the node to core 0 and the client to core 1")
    arguments = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
    pin: list[str] = []
    if arguments.pin:
        os.sched_setaffinity(0, {1})
        pin = ["taskset", "-c", "0"]
    with tempfile.TemporaryDirectory() as datadir:
        http_port, ws_port = free_port(), free_port()
        publish_log = Path(datadir) / "published"
        node = subprocess.Popen(
            [*pin, sys.executable, "-c", NODE_SCRIPT, str(http_port), str(ws_port), datadir + "/node", str(publish_log)],
            stdout=subprocess.DEVNULL,
        )
        try:
            wait_listening(http_port)
            wait_listening(ws_port)
            for _ in range(3):
                pipelined_ws(ws_port, 0.5, arguments.window)
                sequential_http(http_port, 0.5)
            figures = alternating(node.pid, arguments.rounds, arguments.seconds, arguments.window, ws_port, http_port)
            for name, label in (
                ("ws", f"1 WebSocket connection, {arguments.window} in flight"),
                ("http", "1 HTTP keep-alive connection, one at a time"),
            ):
                rates = [rate for rate, _ in figures[name]]
                per_cpu = [value for _, value in figures[name]]
                print(
                    f"eth_blockNumber, {label}: median {statistics.median(rates):,.0f} req/s "
                    f"({min(rates):,.0f} - {max(rates):,.0f}), median {statistics.median(per_cpu):,.0f} per node CPU-second"
                )
            for count in [int(value) for value in arguments.subscribers.split(",")]:
                latencies = head_latencies(http_port, ws_port, count, arguments.blocks, publish_log)
                print(
                    f"newHeads latency, {count} subscribers, {arguments.blocks} blocks: "
                    f"p50 {percentile(latencies, 0.5) * 1000:.2f} ms, p90 {percentile(latencies, 0.9) * 1000:.2f} ms, "
                    f"p99 {percentile(latencies, 0.99) * 1000:.2f} ms, max {max(latencies) * 1000:.2f} ms"
                )
            before, during = idle_rss(node.pid, ws_port, arguments.idle)
            print(
                f"RSS: {before / 1024:.1f} MiB without WebSocket clients, {during / 1024:.1f} MiB with "
                f"{arguments.idle} idle connections ({(during - before) / arguments.idle:.1f} KiB each)"
            )
        finally:
            node.terminate()
            node.wait()


if __name__ == "__main__":
    main()
