"""
End-to-end test of the peer-to-peer network: three C{twistd nodex}
processes in a line, blocks mined on the first, the others following, all
seen over JSON-RPC as a client would.
"""

import json
import os
import re
import signal
import sys
import time
from pathlib import Path
from typing import Any

import treq
from twisted.internet import reactor
from twisted.internet.defer import Deferred
from twisted.internet.protocol import ProcessProtocol
from twisted.internet.task import deferLater
from twisted.python.failure import Failure
from twisted.trial.unittest import TestCase
from twisted.web.client import HTTPConnectionPool

REPOSITORY = Path(__file__).resolve().parent.parent.parent

_PORTS = {
    "rpc": re.compile(rb"RPC server listening on 127\.0\.0\.1:(\d+)\s"),
    "p2p": re.compile(rb"P2P server listening on 127\.0\.0\.1:(\d+)\s"),
}


class _Node(ProcessProtocol):
    """
    One twistd process: its output, and its RPC and P2P ports once its log names them.
    """

    def __init__(self) -> None:
        self.output = b""
        self.ports: dict[str, int] = {}
        self.ready: Deferred[None] = Deferred()
        self.ended: Deferred[Any] = Deferred()

    def outReceived(self, data: bytes) -> None:
        self.output += data
        for name, pattern in _PORTS.items():
            match = pattern.search(self.output)
            if match and name not in self.ports:
                self.ports[name] = int(match.group(1))
        if len(self.ports) == 2 and not self.ready.called:
            self.ready.callback(None)

    errReceived = outReceived

    def processEnded(self, reason: Failure) -> None:
        if not self.ready.called:
            self.ready.errback(Exception(self.output.decode(errors="replace")))
        self.ended.callback(reason.value.exitCode)


class ProcessNodesTestCase(TestCase):
    """
    Nodes started as an operator starts them (C{twistd -n nodex}), and
    JSON-RPC calls to them.
    """

    timeout = 180

    def setUp(self) -> None:
        self.pool = HTTPConnectionPool(reactor, persistent=False)
        self.addCleanup(self.pool.closeCachedConnections)

    async def spawn(self, *argv: str) -> _Node:
        """
        Start a regtest node with RPC and P2P on loopback port 0; wait until both listen.
        """
        node = _Node()
        datadir = str(Path(self.mktemp()).resolve())
        command = [
            sys.executable, "-c", "from twisted.scripts.twistd import run; run()", "-n", "--pidfile=", "nodex",
            "--datadir", datadir, "--rpc", "tcp:0:interface=127.0.0.1", "--p2p", "tcp:0:interface=127.0.0.1", "--ws", "none", *argv,
        ]
        env = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
        reactor.spawnProcess(node, sys.executable, command, env=env, path=str(REPOSITORY))
        self.addCleanup(self.stop, node)
        await node.ready
        return node

    async def stop(self, node: _Node) -> None:
        """
        Stop a node with SIGTERM (SIGKILL if it does not end) and wait for its end.
        """
        if node.ended.called or node.transport.pid is None:  # type: ignore[attr-defined]
            return
        os.kill(node.transport.pid, signal.SIGTERM)  # type: ignore[attr-defined]
        killer = reactor.callLater(30, node.transport.signalProcess, "KILL")  # type: ignore[attr-defined]
        await node.ended
        if killer.active():
            killer.cancel()

    async def call(self, node: _Node, method: str, *params: Any) -> Any:
        """
        A JSON-RPC call to a node; its result.
        """
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}).encode()
        response = await treq.post(
            f"http://127.0.0.1:{node.ports['rpc']}/", data=body, headers={"Content-Type": "application/json"},
            pool=self.pool,
        )
        answer = json.loads(await response.content())
        self.assertNotIn("error", answer, method)
        return answer["result"]

    async def until(self, node: _Node, method: str, expected: Any, *params: Any, seconds: float = 60.0) -> None:
        """
        Poll a method until it answers C{expected} (at most C{seconds}).
        """
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if await self.call(node, method, *params) == expected:
                return
            await deferLater(reactor, 0.1, lambda: None)
        self.fail(f"{method} never answered {expected!r}: {await self.call(node, method, *params)!r}")



class ThreeNodesTests(ProcessNodesTestCase):
    """
    Three nodes started as an operator starts them.
    """

    async def test_line_of_three(self) -> None:
        """
        A - B - C: blocks mined on A reach B and C; the peer methods show the line.
        """
        # One outbound peer for B and C, none for A, so that peer exchange does not close the line.
        config, alone = Path(self.mktemp()).resolve(), Path(self.mktemp()).resolve()
        config.write_text("[p2p]\nmax_outbound = 1\n")
        alone.write_text("[p2p]\nmax_outbound = 0\n")
        a = await self.spawn("--mining", "manual", "--config", str(alone))
        b = await self.spawn("--mining", "off", "--config", str(config), "--peer", f"127.0.0.1:{a.ports['p2p']}")
        c = await self.spawn("--mining", "off", "--config", str(config), "--peer", f"127.0.0.1:{b.ports['p2p']}")
        await self.until(b, "net_peerCount", "0x2")
        await self.until(c, "net_peerCount", "0x1")
        for _ in range(5):
            await self.call(a, "evm_mine")
        await self.until(b, "eth_blockNumber", "0x5")
        await self.until(c, "eth_blockNumber", "0x5")
        head = await self.call(a, "eth_getBlockByNumber", "latest", False)
        self.assertEqual((await self.call(c, "eth_getBlockByNumber", "0x5", False))["hash"], head["hash"])
        [line] = await self.call(c, "net_peerList")
        self.assertRegex(line, rf"^[0-9a-f]{{8}} \| 127\.0\.0\.1/127\.0\.0\.1:{b.ports['p2p']}$")
        self.assertIs(await self.call(c, "net_listening"), True)
        self.assertIs(await self.call(c, "eth_syncing"), False)
        self.assertEqual(await self.call(c, "eth_protocolVersion"), "0x3f")
        self.assertIn(b"P2P node id ", c.output)
