"""
Starting a nodex node in its own process for the benchmarks: the script the
process runs (from any checkout), a free port, and waiting for its answers.

The node is C{nodex.node.compose} of the given checkout (its folder first on
C{sys.path}), regtest with automining, its log in C{DATADIR/node.log};
the script's arguments are C{PORT DATADIR PROFILE CHECKOUT METRICS_PORT
CONFIG}: an empty C{PROFILE} runs it without cProfile, C{METRICS_PORT} 0
without a metrics port, an empty C{CONFIG} without a TOML file laid over
the settings (which also answer C{rpc.client_version = "anvil/nodex"}, so
that Hardhat's Network Helpers accept the node).
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.request

NODEX_SERVER = """
import cProfile, sys
sys.path.insert(0, sys.argv[4])
from twisted.internet import reactor
from twisted.logger import globalLogBeginner, textFileLogObserver
from nodex.config import load_config
from nodex.tap import compose
port, datadir, profile, checkout, metrics, extra = sys.argv[1:7]
log = open(datadir + "/node.log", "w")
globalLogBeginner.beginLoggingTo([textFileLogObserver(log)], redirectStandardIO=False)
overrides = {
    "datadir": datadir,
    "rpc": {"endpoint": "tcp:" + port + ":interface=127.0.0.1", "ws": "none", "client_version": "anvil/nodex"},
}
if metrics != "0":
    overrides["metrics"] = {"endpoint": "tcp:" + metrics + ":interface=127.0.0.1"}
while True:
    try:
        config = load_config(extra or None, overrides)
        break
    except Exception as error:
        # An older checkout lacks some keys (rpc.ws, rpc.client_version: the
        # Network Helpers then refuse it): drop what it does not know.
        unknown = str(error).partition('unknown configuration key "')[2].partition('"')[0]
        if not unknown.startswith("rpc."):
            raise
        del overrides["rpc"][unknown[4:]]
import os
stretched = os.environ.get("NODEX_BENCH_INLINE_ESTIMATE_TIME")
if stretched:
    # Under callgrind the node runs some fifty times slower: the inline
    # estimate's CPU deadline is stretched alike, so that an estimate takes
    # the path it takes natively (a checkout without the deadline ignores it).
    import nodex.services.state as state_module
    state_module.INLINE_ESTIMATE_TIME = float(stretched)
node = compose(config, reactor)
node.startService()
reactor.addSystemEventTrigger("before", "shutdown", node.stopService)
if profile:
    profiler = cProfile.Profile()
    profiler.runcall(reactor.run)
    profiler.dump_stats(profile)
else:
    reactor.run()
"""


def free_port() -> int:
    """
    A TCP port that nothing listens on now.
    """
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def rpc(url: str, method: str, params: list[object] | None = None) -> object:
    """
    One JSON-RPC call; its result, or L{RuntimeError}.
    """
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or []}).encode()
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        reply = json.load(answer)
    if "error" in reply:
        raise RuntimeError(f"{method}: {reply['error']}")
    return reply["result"]


def wait_for_rpc(url: str, process: subprocess.Popen[bytes] | None, timeout: float = 60.0) -> None:
    """
    Wait until the node answers C{eth_chainId}.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the node exited while starting (status {process.returncode})")
        try:
            rpc(url, "eth_chainId")
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer within {timeout} s")
