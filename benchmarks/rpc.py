"""
Measure C{eth_chainId} requests per second over keep-alive HTTP.

The server runs in its own process pinned to one core (C{taskset -c 0});
the load generator is C{wrk} (Debian package C{wrk}), pinned to another core
so that it is not the bottleneck.  Besides the nodex server, two baselines
answer the same request with a constant body, to show what the HTTP stack
itself costs: a bare twisted.web resource and a bare Klein route; and
"routed" is the nodex server with C{POST /} going through Klein's router
too, to show what serving it directly saves.

Usage::

    python benchmarks/rpc.py [--seconds 5] [--servers nodex,routed,web,klein] [--connections 1,8]
    python benchmarks/rpc.py --dispatcher

Prints one line per server and connection count: requests per second of
wall-clock time, and requests per CPU-second that the server process used
(from C{/proc}), which other work on the machine disturbs much less.
"""

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REQUEST = '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}'
ANSWER = b'{"jsonrpc":"2.0","id":1,"result":"0x21"}'

WRK_SCRIPT = f"""
wrk.method = "POST"
wrk.body = '{REQUEST}'
wrk.headers["Content-Type"] = "application/json"
"""

SERVERS = {
    "nodex": """
import sys
from twisted.internet import reactor
from nodex.config import load_config
from nodex.tap import compose
config = load_config(None, {{"datadir": sys.argv[2], "rpc": {{"endpoint": "tcp:" + sys.argv[1] + ":interface=127.0.0.1", "ws": "none"}}}})
node = compose(config, reactor)
node.startService()
reactor.addSystemEventTrigger("before", "shutdown", node.stopService)
reactor.run()
""",
    "routed": """
import sys
from twisted.internet import reactor
from nodex.config import load_config
from nodex.rpc.server import RPCSite
from nodex.services.offline import OfflinePeerNetwork
from nodex.tap import build_rpc_server
config = load_config(None, {{"datadir": sys.argv[2]}})
server = build_rpc_server(config, reactor, OfflinePeerNetwork())
site = RPCSite(server.app.resource(), config.rpc.max_body_bytes)
reactor.listenTCP(int(sys.argv[1]), site, interface="127.0.0.1")
reactor.run()
""",
    "web": """
import sys
from twisted.internet import reactor
from twisted.web.resource import Resource
from twisted.web.server import Site
class Answer(Resource):
    isLeaf = True
    def render_POST(self, request):
        request.content.read()
        request.setHeader(b"content-type", b"application/json")
        return {answer!r}
reactor.listenTCP(int(sys.argv[1]), Site(Answer()), interface="127.0.0.1")
reactor.run()
""",
    "klein": """
import sys
from klein import Klein
from twisted.internet import reactor
from twisted.web.server import Site
app = Klein()
@app.route("/", methods=["POST"])
def answer(request):
    request.content.read()
    request.setHeader(b"content-type", b"application/json")
    return {answer!r}
reactor.listenTCP(int(sys.argv[1]), Site(app.resource()), interface="127.0.0.1")
reactor.run()
""",
}


def free_port() -> int:
    """
    A TCP port nobody listens on now.
    """
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_listening(port: int, seconds: float = 20.0) -> None:
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
    raise SystemExit(f"server did not listen on port {port}")


def cpu_seconds(pid: int) -> float:
    """
    User plus system CPU time that process C{pid} has used so far.
    """
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_wrk(port: int, connections: int, seconds: int, script: Path) -> float:
    """
    Requests per second that wrk measured.
    """
    command = ["taskset", "-c", "1", "wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "-s", str(script), f"http://127.0.0.1:{port}/"]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    if "Non-2xx" in output or "Socket errors" in output:
        raise SystemExit(f"wrk saw errors:\n{output}")
    match = re.search(r"Requests/sec:\s+([0-9.]+)", output)
    if match is None:
        raise SystemExit(f"no figure in wrk's output:\n{output}")
    return float(match.group(1))


def measure_dispatcher(calls: int = 50000) -> None:
    """
    The JSON-RPC dispatcher alone (no HTTP): C{eth_chainId} bodies answered
    per CPU-second with the per-call debug line off and on (written by a
    text observer to /dev/null, as twistd writes its log file).
    """
    from twisted.internet.task import Clock
    from twisted.logger import globalLogBeginner, textFileLogObserver

    from nodex.rpc.dispatch import Dispatcher
    from nodex.rpc.eth import EthIdentityMethods
    from nodex.rpc.registry import MethodRegistry, ModuleSettings

    sink = open(os.devnull, "w")
    globalLogBeginner.beginLoggingTo([textFileLogObserver(sink)], redirectStandardIO=False)
    registry = MethodRegistry({"eth": ModuleSettings(True)})
    registry.add(EthIdentityMethods(33, 62))
    body = REQUEST.encode()
    for debug in (False, True):
        dispatcher = Dispatcher(registry, Clock(), debug=debug)
        started = time.process_time()
        for _ in range(calls):
            dispatcher.handle(body)
        used = time.process_time() - started
        label = "on " if debug else "off"
        print(f"dispatcher, debug line {label}: {calls / used:9.0f} calls per CPU-second ({used / calls * 1e6:.1f} us)")


def main() -> None:
    """
    Run the benchmark and print the figures.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--servers", default="nodex,routed,web,klein")
    parser.add_argument("--connections", default="1,8")
    parser.add_argument("--dispatcher", action="store_true", help="measure the dispatcher alone, without HTTP")
    args = parser.parse_args()
    if args.dispatcher:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        measure_dispatcher()
        return
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (apt-get install wrk)")
    work = Path(tempfile.mkdtemp(prefix="nodex-bench-"))
    script = work / "chainid.lua"
    script.write_text(WRK_SCRIPT)
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, PYTHONPATH=str(root))
    for name in args.servers.split(","):
        source = work / f"server_{name}.py"
        source.write_text(SERVERS[name].format(answer=ANSWER))
        port = free_port()
        server = subprocess.Popen(
            ["taskset", "-c", "0", sys.executable, str(source), str(port), str(work / "data")], env=env
        )
        try:
            wait_listening(port)
            run_wrk(port, 1, 1, script)  # warm up
            for connections in (int(item) for item in args.connections.split(",")):
                before = cpu_seconds(server.pid)
                rate = run_wrk(port, connections, args.seconds, script)
                used = cpu_seconds(server.pid) - before
                per_cpu = rate * args.seconds / used if used else float("nan")
                print(
                    f"{name:6} {connections:2} connection(s): {rate:8.0f} requests/s, "
                    f"{per_cpu:8.0f} requests per CPU-second",
                    flush=True,
                )
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
