"""
End-to-end tests of the node skeleton: the service from L{makeService} on port 0, real HTTP
with treq and with txjsonrpc-ng's client, and C{twistd nodex} as a process.
"""

import json
import os
import signal
from pathlib import Path
from typing import Any

import treq
from twisted.internet import reactor
from twisted.trial.unittest import TestCase
from twisted.web.client import HTTPConnectionPool
from txjsonrpc_ng.jsonrpclib import VERSION_2, Fault
from txjsonrpc_ng.web.jsonrpc import Proxy

from nodex.node import NodeService
from nodex.tap import Options, makeService
from tests.e2e.processes import TWISTD, NodexProcess, spawn



class RunningNodeTests(TestCase):
    """
    A node started from L{makeService}, answering on an ephemeral port.
    """

    async def start_node(self, *argv: str) -> str:
        """
        Start a regtest node with RPC on port 0; return its URL.
        """
        options = Options()
        options.parseOptions(
            ["--datadir", self.mktemp(), "--rpc", "tcp:0:interface=127.0.0.1", "--ws", "none", "--p2p", "none", *argv]
        )
        node: NodeService = makeService(options)
        node.startService()
        self.addCleanup(node.stopService)
        port = await node.getServiceNamed("rpc").when_listening()
        pool = HTTPConnectionPool(reactor, persistent=False)
        self.addCleanup(pool.closeCachedConnections)
        self.pool = pool
        return f"http://127.0.0.1:{port.getHost().port}/"

    async def post(self, url: str, body: bytes, **headers: str) -> tuple[int, bytes]:
        """
        POST a body; return status and content.
        """
        all_headers = {"Content-Type": "application/json", **headers}
        response = await treq.post(url, data=body, headers=all_headers, pool=self.pool)
        return response.code, await response.content()

    async def test_identity_methods(self) -> None:
        """
        The seven methods of the skeleton answer over real HTTP.
        """
        url = await self.start_node()
        batch = [
            {"jsonrpc": "2.0", "id": index, "method": method, "params": params}
            for index, (method, params) in enumerate(
                [
                    ("web3_clientVersion", []),
                    ("web3_sha3", ["0x"]),
                    ("net_version", []),
                    ("net_listening", []),
                    ("eth_chainId", []),
                    ("eth_protocolVersion", []),
                    ("rpc_modules", []),
                ]
            )
        ]
        code, content = await self.post(url, json.dumps(batch).encode())
        self.assertEqual(code, 200)
        results = [item["result"] for item in json.loads(content)]
        self.assertTrue(results[0].startswith("nodex/0."))
        self.assertEqual(results[1], "0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470")
        self.assertEqual(results[2:6], ["33", False, "0x21", "0x3f"])
        self.assertLessEqual({"eth", "net", "rpc", "web3"}, set(results[6]))
        self.assertEqual(set(results[6].values()), {"1.0"})

    async def test_txjsonrpc_client(self) -> None:
        """
        txjsonrpc-ng's JSON-RPC 2.0 client calls the node, and sees errors as Faults with codes.
        """
        url = await self.start_node("--network", "main")
        proxy = Proxy(url, version=VERSION_2, pool=self.pool)
        self.assertEqual(await proxy.callRemote("eth_chainId"), "0x1e")
        self.assertEqual(await proxy.callRemote("net_version"), "30")
        try:
            await proxy.callRemote("evm_mine")
        except Fault as fault:
            self.assertEqual(fault.faultCode, -32601)
        else:
            self.fail("evm_mine answered on main")
        try:
            await proxy.callRemote("web3_sha3", "0x1")
        except Fault as fault:
            self.assertEqual((fault.faultCode, fault.faultString), (-32602, "invalid argument 0: hex string of odd length for data"))
        else:
            self.fail("web3_sha3 accepted odd hex")

    async def test_transport_rejections(self) -> None:
        """
        Over real HTTP: wrong method 405, wrong type 415, foreign Host 403, large body 413.
        """
        config = Path(self.mktemp())
        config.write_text("[rpc]\nmax_body_bytes = 2048\n")
        url = await self.start_node("--config", str(config))
        response = await treq.get(url, pool=self.pool)
        await response.content()
        self.assertEqual(response.code, 405)
        self.assertEqual((await self.post(url, b"{}", **{"Content-Type": "text/plain"}))[0], 415)
        self.assertEqual((await self.post(url, b"{}", Host="attacker.example"))[0], 403)
        code, _ = await self.post(url, b" " * 4096)
        self.assertEqual(code, 413)
        code, content = await self.post(url, b'{"jsonrpc":"2.0","id":"x","method":"eth_chainId"}')
        self.assertEqual((code, json.loads(content)["result"]), (200, "0x21"))

    async def test_keeps_serving_after_garbage(self) -> None:
        """
        Malformed bodies get JSON-RPC errors, and the node answers the next request.
        """
        url = await self.start_node()
        for body in (b"\x00\xff", b"[" * 50000, b"[1,2,3]", b'{"jsonrpc":"2.0","id":{},"method":"x"}'):
            code, content = await self.post(url, body)
            self.assertEqual(code, 200)
            answer = json.loads(content)
            for item in answer if isinstance(answer, list) else [answer]:
                self.assertIn(item["error"]["code"], (-32700, -32600))
        code, content = await self.post(url, b'{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}')
        self.assertEqual(json.loads(content)["result"], "0x21")


class TwistdTests(TestCase):
    """
    C{twistd nodex} as an operator runs it.
    """

    def spawn(self, *argv: str) -> NodexProcess:
        """
        Run twistd with C{argv} from the repository root (where the plugin is found).
        """
        return spawn(self, TWISTD, argv)

    async def test_runs_and_stops_on_sigterm(self) -> None:
        """
        twistd -n nodex starts, logs its start line, serves eth_chainId, and on SIGTERM shuts
        down cleanly (twistd then ends itself with that signal, so that its parent sees why).
        """
        datadir = str(Path(self.mktemp()).resolve())
        process = self.spawn(
            "-n", "--pidfile=", "nodex", "--datadir", datadir, "--rpc", "tcp:0:interface=127.0.0.1", "--ws", "none"
        )
        port = await process.listening
        pool = HTTPConnectionPool(reactor, persistent=False)
        response = await treq.post(
            f"http://127.0.0.1:{port}/",
            data=b'{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}',
            headers={"Content-Type": "application/json"},
            pool=pool,
        )
        self.assertEqual(json.loads(await response.content())["result"], "0x21")
        self.assertIn(b"nodex starting: network regtest, chain id 33, data dir " + datadir.encode(), process.output)
        self.assertRegex(process.output, rb"EVM: (pure Python|compiled with Cython|partly compiled)")
        self.assertTrue(Path(datadir).is_dir())
        os.kill(process.transport.pid, signal.SIGTERM)  # type: ignore[attr-defined]
        await process.ended
        self.assertEqual(process.signal, signal.SIGTERM)
        self.assertIn(b"Server Shut Down.", process.output)

    async def test_port_in_use_exits_non_zero(self) -> None:
        """
        When the RPC port is taken, the node says so and exits 1 (instead of running deaf or
        hanging on the threads of the services that did start).
        """
        from twisted.internet.protocol import Factory

        taken = reactor.listenTCP(0, Factory(), interface="127.0.0.1")
        self.addCleanup(taken.stopListening)
        datadir = str(Path(self.mktemp()).resolve())
        process = self.spawn(
            "-n", "--pidfile=", "nodex", "--datadir", datadir, "--rpc", f"tcp:{taken.getHost().port}:interface=127.0.0.1", "--ws", "none"
        )
        process.listening.addErrback(lambda failure: None)
        self.assertEqual(await process.ended, 1)
        self.assertIn(b"RPC server cannot listen", process.output)

    async def test_bad_option_exits_non_zero(self) -> None:
        """
        A bad option value prints a message naming the key and exits non-zero.
        """
        process = self.spawn("nodex", "--mining", "sometimes")
        process.listening.addErrback(lambda failure: None)
        code: Any = await process.ended
        self.assertNotEqual(code, 0)
        self.assertIn(b'"mining.mode"', process.output)
