"""
Hostile clients (issue 26): what many filters, subscriptions, connections
and timed-out calls cost a node, and whether it keeps answering.

Scenarios (each starts its own regtest node, in a child process):

  - C{filters}: 10,000 installed log filters and C{logs} subscriptions (half
    each: the filters over HTTP, the subscriptions over 40 WebSocket
    connections whose client reads everything): one in a hundred matches
    every log, a third of the others an address (one of 100), a third an
    address and Transfer, a third Transfer and a recipient; then one block
    of 1,000 logs (ten transactions to ten contracts that emit 100 each).
    Reported: the longest time the node's reactor thread went without
    looking at its sockets (its I{hold}, measured inside the node between
    two of its polls; beside it the most CPU time the reactor thread used
    in one hold, which the machine's other load does not stretch, and the
    longest garbage collection), the latency
    of C{eth_blockNumber} (one keep-alive HTTP client asking one request
    after another) during the delivery, and how long the delivery took;
  - C{everything}: the hostile case of the issue: 1,000 filters and 1,000
    subscriptions that all match every log, and a block of 920 logs;
  - C{memory}: the node's resident memory per idle log filter (10,000 of
    them, each of its own address) and per idle C{logs} subscription;
  - C{idle}: 1,000 idle WebSocket and 1,000 idle HTTP connections (from 8
    loopback addresses, within the default per-address caps): the node's
    resident memory, and C{eth_blockNumber}'s latency with them open;
  - C{deadline}: C{eth_call}s of an endless loop (a state override) with
    a 1-second time limit: the CPU seconds the node spends after their
    answers (the deadline), for one call and for eight at once.

The EVM's cost of the cancellation check is measured on C{benchmarks/evm.py}
(C{--cancellable}), not here.

Usage::

    python benchmarks/hostile_clients.py [filters] [memory] [idle] [deadline] [--checkout PATH]

C{--checkout} runs the node from another checkout (the code before issue
26, say): scenarios and settings it does not know are left out.
"""

import argparse
import http.client
import json
import os
import selectors
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPOSITORY = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPOSITORY / "benchmarks"))

from websocket import free_port, wait_listening, ws_connect  # noqa: E402  (the sibling benchmark's helpers)

NODE_SCRIPT = r"""
import json, os, sys, time
if os.environ.get("NODEX_BENCH_INSTRUMENT"):
    sys.path.insert(0, os.path.dirname(os.environ["NODEX_BENCH_INSTRUMENT"]))
    __import__(os.path.basename(os.environ["NODEX_BENCH_INSTRUMENT"])[:-3])
from twisted.internet import reactor
from nodex.config import load_config
from nodex.tap import compose
layer = json.loads(sys.argv[1])
holds_path = sys.argv[2]
config = load_config(None, layer)
node = compose(config, reactor)
node.startService()
reactor.addSystemEventTrigger("before", "shutdown", node.stopService)

# The reactor's holds: from the return of one poll of its sockets to the
# start of the next, whatever it did in between (timed calls, results from
# threads, socket events).
holds = open(holds_path, "w")
def measure_holds():
    poller = reactor._poller
    last = [time.monotonic(), time.thread_time()]
    class Timed:
        def poll(self, *args, **kwargs):
            started, cpu = time.monotonic(), time.thread_time()
            hold = started - last[0]
            if hold > 0.001:
                # The hold in wall time, and the reactor thread's CPU time in it.
                holds.write("%.6f %.6f %.6f\n" % (last[0], hold, cpu - last[1]))
                holds.flush()
            try:
                return poller.poll(*args, **kwargs)
            finally:
                last[0], last[1] = time.monotonic(), time.thread_time()
        def __getattr__(self, name):
            return getattr(poller, name)
    reactor._poller = Timed()
reactor.callWhenRunning(measure_holds)

# Garbage collections, whose pauses are holds too.
import gc
collections = open(holds_path + ".gc", "w")
gc_started = [0.0]
def gc_callback(phase, info):
    if phase == "start":
        gc_started[0] = time.monotonic()
    else:
        took = time.monotonic() - gc_started[0]
        if took > 0.001:
            collections.write("%.6f %.6f %d\n" % (gc_started[0], took, info["generation"]))
            collections.flush()
gc.callbacks.append(gc_callback)
reactor.run()
"""

TRANSFER = "0x" + "dd" * 32
EMITTERS = ["0x" + (0xE1 * 2**152 + n).to_bytes(20, "big").hex() for n in range(10)]
"""Ten contracts that emit the block's logs, a tenth each."""
SENDER = "0xcd2a3d9f938e13cd947ec05abc7fe734df8dd826"
MASK = b"\x11\x22\x33\x44"


def emitter_code() -> str:
    """
    Runtime code that emits C{calldataload(0)} logs LOG2(TRANSFER, i), i = 0, 1, ...
    """
    code = bytes.fromhex("5f35" "5f")  # n = calldataload(0); i = 0
    loop = len(code)
    code += bytes.fromhex("5b" "8181" "10" "15" "61") + b"\x00\x00" + bytes.fromhex("57")  # while i < n
    body = bytes.fromhex("80" "7f") + bytes.fromhex(TRANSFER[2:]) + bytes.fromhex("5f5f" "a2")  # LOG2(0, 0, T, i)
    body += bytes.fromhex("6001" "01" "61") + loop.to_bytes(2, "big") + bytes.fromhex("56")  # i += 1; jump loop
    end = len(code) + len(body)
    code = code[: loop + 6] + end.to_bytes(2, "big") + code[loop + 8 :] + body + bytes.fromhex("5b00")
    return "0x" + code.hex()


class Node:
    """
    A node in a child process, and what its script records.
    """

    def __init__(self, work: Path, checkout: Path, rpc: dict[str, Any], ws: bool = True) -> None:
        self.http_port = free_port()
        self.ws_port = free_port() if ws else None
        self.holds_path = work / f"holds-{self.http_port}"
        layer = {
            "datadir": str(work / f"node-{self.http_port}"),
            "mining": {"mode": "manual"},
            "rpc": {
                "endpoint": f"tcp:{self.http_port}:interface=127.0.0.1",
                "ws": f"tcp:{self.ws_port}:interface=127.0.0.1" if ws else "none",
                **rpc,
            },
        }
        env = {**os.environ, "PYTHONPATH": str(checkout)}
        self.process = subprocess.Popen(
            [sys.executable, "-c", NODE_SCRIPT, json.dumps(layer), str(self.holds_path)],
            stdout=subprocess.DEVNULL, env=env, cwd=str(checkout),
        )
        wait_listening(self.http_port)
        if self.ws_port is not None:
            wait_listening(self.ws_port)
        self.connection = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=600)

    def call(self, method: str, *params: Any) -> Any:
        """
        One request on the keep-alive connection; its result.
        """
        answer = self.send({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)})
        if "error" in answer:
            raise SystemExit(f"{method}: {answer['error']}")
        return answer["result"]

    def send(self, body: Any) -> Any:
        """
        One body on the keep-alive connection (again on a new one if the
        node closed it, idle for too long); the parsed answer.
        """
        data = json.dumps(body)
        try:
            self.connection.request("POST", "/", data, {"Content-Type": "application/json"})
            return json.loads(self.connection.getresponse().read())
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            self.connection.close()
            self.connection = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=600)
            self.connection.request("POST", "/", data, {"Content-Type": "application/json"})
            return json.loads(self.connection.getresponse().read())

    def holds(self, start: float, end: float, cpu: bool = False) -> list[float]:
        """
        The reactor's holds (seconds) that began between C{start} and C{end}
        (monotonic): their wall time, or with C{cpu} the reactor thread's
        CPU time in them (what the machine's other load does not stretch).
        """
        found = []
        for line in self.holds_path.read_text().split("\n"):
            if line:
                began, hold, used = (float(value) for value in line.split())
                if start <= began <= end:
                    found.append(used if cpu else hold)
        return found

    def collections(self, start: float, end: float) -> list[float]:
        """
        The garbage collections (seconds) over 1 ms that began between C{start} and C{end}.
        """
        found = []
        for line in Path(str(self.holds_path) + ".gc").read_text().split("\n"):
            if line:
                began, took, _ = line.split()
                if start <= float(began) <= end:
                    found.append(float(took))
        return found

    def rss_kib(self) -> int:
        """
        The node's resident memory.
        """
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise SystemExit("no VmRSS")

    def cpu_seconds(self) -> float:
        """
        The node's CPU time so far (user and system).
        """
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        """
        Stop the node.
        """
        self.process.terminate()
        self.process.wait()


def client_frame(payload: bytes) -> bytes:
    """
    A masked text frame with a fixed key.
    """
    length = len(payload)
    if length < 126:
        head = bytes([0x81, 0x80 | length])
    elif length < 65536:
        head = bytes([0x81, 0x80 | 126]) + struct.pack("!H", length)
    else:
        head = bytes([0x81, 0x80 | 127]) + struct.pack("!Q", length)
    return head + MASK + bytes(byte ^ MASK[index % 4] for index, byte in enumerate(payload))


def server_frames(buffer: bytearray, payloads: bool = True) -> list[bytes]:
    """
    Take the whole server frames off the front of C{buffer}; their payloads
    (with C{payloads} false, empty ones: only their number counts).
    """
    found = []
    position, size = 0, len(buffer)
    while size - position >= 2:
        length, offset = buffer[position + 1] & 0x7F, 2
        if length == 126:
            if size - position < 4:
                break
            length, offset = struct.unpack_from("!H", buffer, position + 2)[0], 4
        elif length == 127:
            if size - position < 10:
                break
            length, offset = struct.unpack_from("!Q", buffer, position + 2)[0], 10
        if size - position < offset + length:
            break
        found.append(bytes(buffer[position + offset : position + offset + length]) if payloads else b"")
        position += offset + length
    del buffer[:position]
    return found


def ws_ask(sock: socket.socket, buffer: bytearray, body: Any) -> Any:
    """
    Send one body, read until its answer (blocking socket).
    """
    sock.sendall(client_frame(json.dumps(body).encode()))
    while True:
        payloads = server_frames(buffer)
        if payloads:
            return json.loads(payloads[0])
        buffer.extend(sock.recv(1 << 16))


def address(index: int) -> str:
    """
    One of 100 addresses, ten of them the emitters'.
    """
    number = index % 100
    return EMITTERS[number] if number < 10 else "0x" + (number + 1).to_bytes(20, "big").hex()


def selection(index: int, everything: bool = False) -> dict[str, Any]:
    """
    The filter of the C{index}th filter or subscription: one in a hundred
    matches every log; a third of the others one of 100 addresses (a
    tenth of them an emitter's), a third such an address and Transfer, a
    third Transfer and one of 10,000 recipients (topic 1).  With
    C{everything}, every one matches every log (the hostile case).
    """
    if everything or index % 100 == 0:
        return {}
    kind = index % 3
    if kind == 0:
        return {"address": address(index // 3)}
    if kind == 1:
        return {"address": address(index // 3), "topics": [TRANSFER]}
    return {"topics": [TRANSFER, "0x" + (index % 10_000).to_bytes(32, "big").hex()]}


def expected_logs(index: int, logs: int, everything: bool = False) -> int:
    """
    How many of a block's C{logs} logs (a tenth from each emitter, topic 1
    counting from 0 in each) the C{index}th selection takes.
    """
    if everything or index % 100 == 0:
        return logs
    kind = index % 3
    each = logs // len(EMITTERS)
    if kind in (0, 1):
        return each if (index // 3) % 100 < 10 else 0
    return len(EMITTERS) if index % 10_000 < each else 0


def latencies_while(node: Node, stop: threading.Event, out: list[tuple[float, float]]) -> None:
    """
    Ask C{eth_blockNumber} one request after another on a keep-alive
    connection until C{stop}; note (start, seconds) of each.
    """
    connection = http.client.HTTPConnection("127.0.0.1", node.http_port, timeout=60)
    body = b'{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}'
    while not stop.is_set():
        started = time.monotonic()
        connection.request("POST", "/", body, {"Content-Type": "application/json"})
        connection.getresponse().read()
        out.append((started, time.monotonic() - started))


def percentile(values: list[float], fraction: float) -> float:
    """
    The value at C{fraction} of the sorted values.
    """
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def many_filters_node(work: Path, checkout: Path, new_code: bool) -> Node:
    """
    A node that takes batches of 1,000 and, where the setting exists, 10,000 filters from one client.
    """
    rpc: dict[str, Any] = {"max_batch": 1000}
    if new_code:
        rpc["max_filters_per_client"] = 10_000
    return Node(work, checkout, rpc)


def scenario_filters(
    work: Path, checkout: Path, new_code: bool, count: int = 10_000, logs: int = 1000, everything: bool = False
) -> str:
    """
    See the module's docstring.
    """
    node = many_filters_node(work, checkout, new_code)
    try:
        for emitter in EMITTERS:
            node.call("hardhat_setCode", emitter, emitter_code())
        note = lambda text: print(f"  {time.strftime('%H:%M:%S')} {text}", file=sys.stderr, flush=True)
        half = count // 2
        filters = []
        for first in range(0, half, 500):
            batch = [
                {"jsonrpc": "2.0", "id": index, "method": "eth_newFilter", "params": [selection(index, everything)]}
                for index in range(first, min(first + 500, half))
            ]
            filters += [answer["result"] for answer in node.send(batch)]
        note(f"{len(filters)} filters installed")
        sockets = []
        per_connection = 125
        for first in range(0, half, per_connection):
            sock = ws_connect(node.ws_port)
            buffer = bytearray()
            batch = [
                {"jsonrpc": "2.0", "id": index, "method": "eth_subscribe",
                 "params": ["logs", selection(index, everything)]}
                for index in range(first, min(first + per_connection, half))
            ]
            answers = ws_ask(sock, buffer, batch)
            if any("error" in answer for answer in answers):
                raise SystemExit(f"eth_subscribe: {answers[0]}")
            sock.setblocking(False)
            sockets.append((sock, buffer))
        note(f"{len(sockets) * per_connection} subscriptions made")
        expected = sum(expected_logs(index, logs, everything) for index in range(half))
        rss_before = node.rss_kib()
        received = [0]
        done = threading.Event()

        def read_notifications() -> None:
            selector = selectors.DefaultSelector()
            for sock, buffer in sockets:
                selector.register(sock, selectors.EVENT_READ, buffer)
            while received[0] < expected and not done.is_set():
                for key, _ in selector.select(timeout=0.5):
                    try:
                        data = key.fileobj.recv(1 << 20)
                    except BlockingIOError:
                        continue
                    key.data.extend(data)
                    received[0] += len(server_frames(key.data, payloads=False))
            done.set()

        reader = threading.Thread(target=read_notifications)
        reader.start()
        latencies: list[tuple[float, float]] = []
        stop = threading.Event()
        asker = threading.Thread(target=latencies_while, args=(node, stop, latencies))
        for emitter in EMITTERS:
            each = (logs // len(EMITTERS)).to_bytes(32, "big").hex()
            node.call("eth_sendTransaction", {"from": SENDER, "to": emitter, "data": "0x" + each, "gas": hex(1_000_000)})
        asker.start()
        time.sleep(0.5)
        mined_at = time.monotonic()
        node.call("evm_mine")
        done.wait(timeout=600)
        delivered_at = time.monotonic()
        time.sleep(0.5)
        stop.set()
        asker.join()
        reader.join()
        rss_after = node.rss_kib()
        window = [seconds for started, seconds in latencies if mined_at - 0.1 <= started <= delivered_at]
        holds = node.holds(mined_at - 0.1, delivered_at + 0.5)
        cpu_holds = node.holds(mined_at - 0.1, delivered_at + 0.5, cpu=True)
        collections = node.collections(mined_at - 0.1, delivered_at + 0.5)
        polled = 0
        for first in range(0, len(filters), 10):
            batch = [
                {"jsonrpc": "2.0", "id": n, "method": "eth_getFilterChanges", "params": [filter_id]}
                for n, filter_id in enumerate(filters[first : first + 10])
            ]
            polled += sum(len(answer.get("result", [])) for answer in node.send(batch))
        for sock, _ in sockets:
            sock.close()
        return (
            f"{half:,} filters + {half:,} subscriptions{' (all matching everything)' if everything else ''}, "
            f"a block of {logs:,} logs: "
            f"notifications {received[0]:,} of {expected:,} in {delivered_at - mined_at:.2f} s after evm_mine's call, "
            f"filter changes {polled:,} of {expected:,}; "
            f"longest reactor hold {max(holds, default=0) * 1000:.1f} ms "
            f"({len([hold for hold in holds if hold > 0.020])} over 20 ms; its CPU time at most "
            f"{max(cpu_holds, default=0) * 1000:.1f} ms; longest garbage collection "
            f"{max(collections, default=0) * 1000:.1f} ms); "
            f"eth_blockNumber meanwhile: {len(window)} answers, p50 {percentile(window, 0.5) * 1000:.1f} ms, "
            f"p99 {percentile(window, 0.99) * 1000:.1f} ms, max {max(window) * 1000:.1f} ms; "
            f"RSS {rss_before / 1024:.0f} -> {rss_after / 1024:.0f} MiB"
        )
    finally:
        node.stop()


def scenario_memory(work: Path, checkout: Path, new_code: bool, count: int = 10_000) -> str:
    """
    See the module's docstring.
    """
    node = many_filters_node(work, checkout, new_code)
    try:
        node.call("eth_blockNumber")
        time.sleep(1)
        before = node.rss_kib()
        for first in range(0, count, 1000):
            batch = [
                {"jsonrpc": "2.0", "id": index, "method": "eth_newFilter",
                 "params": [{"address": "0x" + (index + 1).to_bytes(20, "big").hex(), "topics": [TRANSFER]}]}
                for index in range(first, first + 1000)
            ]
            answers = node.send(batch)
            if "error" in answers[0]:
                raise SystemExit(f"eth_newFilter: {answers[0]}")
        time.sleep(1)
        filters = node.rss_kib()
        sockets = []
        for first in range(0, count, 125):
            sock = ws_connect(node.ws_port, f"127.0.2.{first // 125 % 200 + 1}")
            batch = [
                {"jsonrpc": "2.0", "id": index, "method": "eth_subscribe",
                 "params": ["logs", {"address": "0x" + (index + 1).to_bytes(20, "big").hex(), "topics": [TRANSFER]}]}
                for index in range(first, first + 125)
            ]
            ws_ask(sock, bytearray(), batch)
            sockets.append(sock)
        time.sleep(1)
        subscriptions = node.rss_kib()
        connections = len(sockets)
        for sock in sockets:
            sock.close()
        return (
            f"RSS {before / 1024:.1f} MiB; with {count:,} idle log filters {filters / 1024:.1f} MiB "
            f"({(filters - before) * 1024 / count:,.0f} bytes each); with {count:,} idle logs subscriptions on "
            f"{connections} connections {subscriptions / 1024:.1f} MiB "
            f"({(subscriptions - filters) * 1024 / count:,.0f} bytes each, connections included)"
        )
    finally:
        node.stop()


def scenario_idle(work: Path, checkout: Path, new_code: bool, count: int = 1000) -> str:
    """
    See the module's docstring.
    """
    node = Node(work, checkout, {})
    try:
        node.call("eth_blockNumber")

        def p99(seconds: float = 3.0) -> tuple[float, float]:
            latencies: list[tuple[float, float]] = []
            stop = threading.Event()
            asker = threading.Thread(target=latencies_while, args=(node, stop, latencies))
            asker.start()
            time.sleep(seconds)
            stop.set()
            asker.join()
            values = [value for _, value in latencies]
            return percentile(values, 0.5) * 1000, percentile(values, 0.99) * 1000

        time.sleep(1)
        before = node.rss_kib()
        quiet = p99()
        sources = [f"127.0.1.{n}" for n in range(1, 9)]
        websockets = [ws_connect(node.ws_port, sources[n % 8]) for n in range(count)]
        with_ws = node.rss_kib()
        plain = []
        for n in range(count):
            sock = socket.create_connection(("127.0.0.1", node.http_port), source_address=(sources[n % 8], 0))
            plain.append(sock)
        time.sleep(1)
        with_both = node.rss_kib()
        loaded = p99()
        for sock in websockets + plain:
            sock.close()
        return (
            f"RSS {before / 1024:.1f} MiB; {count:,} idle WebSocket connections {with_ws / 1024:.1f} MiB "
            f"({(with_ws - before) / count:.1f} KiB each); and {count:,} idle HTTP connections {with_both / 1024:.1f} MiB "
            f"({(with_both - with_ws) / count:.1f} KiB each); eth_blockNumber p50/p99 {quiet[0]:.2f}/{quiet[1]:.2f} ms "
            f"without them, {loaded[0]:.2f}/{loaded[1]:.2f} ms with them"
        )
    finally:
        node.stop()


def scenario_deadline(work: Path, checkout: Path, new_code: bool) -> str:
    """
    See the module's docstring.
    """
    node = Node(work, checkout, {"timeout": 1.0}, ws=False)
    try:
        node.call("eth_blockNumber")
        lines = []
        for calls in (1, 8):
            answers: list[Any] = []

            def endless() -> None:
                connection = http.client.HTTPConnection("127.0.0.1", node.http_port, timeout=60)
                body = {"jsonrpc": "2.0", "id": 1, "method": "eth_call",
                        "params": [{"to": "0x" + "42" * 20}, "latest", {"0x" + "42" * 20: {"code": "0x5b5f56"}}]}
                connection.request("POST", "/", json.dumps(body), {"Content-Type": "application/json"})
                answers.append(json.loads(connection.getresponse().read()))

            threads = [threading.Thread(target=endless) for _ in range(calls)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            at_answers = node.cpu_seconds()
            answered = time.monotonic()
            # Until the node is idle again: no CPU time for two seconds.
            last, quiet = at_answers, 0
            while quiet < 4 and time.monotonic() - answered < 120:
                time.sleep(0.5)
                now = node.cpu_seconds()
                quiet = quiet + 1 if now - last < 0.02 else 0
                last = now
            after = last - at_answers
            codes = {answer.get("error", {}).get("code") for answer in answers}
            lines.append(
                f"{calls} call(s), answers {sorted(codes)}: {after:.2f} CPU s after the answers "
                f"(idle again {time.monotonic() - answered - 2:.1f} s after them)"
            )
        return "; ".join(lines)
    finally:
        node.stop()


def scenario_everything(work: Path, checkout: Path, new_code: bool) -> str:
    """
    The hostile case of the issue's table: 1,000 filters and 1,000
    subscriptions that match every log, and a block of 920 logs.
    """
    return scenario_filters(work, checkout, new_code, count=2000, logs=920, everything=True)


SCENARIOS = {
    "filters": scenario_filters,
    "everything": scenario_everything,
    "memory": scenario_memory,
    "idle": scenario_idle,
    "deadline": scenario_deadline,
}


def main() -> None:
    """
    Run the chosen scenarios; one line each.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenarios", nargs="*", default=list(SCENARIOS))
    parser.add_argument("--checkout", type=Path, default=REPOSITORY, help="the checkout whose node runs")
    arguments = parser.parse_args()
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 16384), hard))
    new_code = (arguments.checkout / "nodex" / "descriptors.py").exists()
    with tempfile.TemporaryDirectory(prefix="nodex-hostile-") as folder:
        for name in arguments.scenarios:
            print(f"{name}: {SCENARIOS[name](Path(folder), arguments.checkout.resolve(), new_code)}", flush=True)
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
