"""
End-to-end tests of C{--metrics}: a real node's C{/metrics} (parsed with
prometheus_client's own parser) and C{/health}.
"""

import json
from pathlib import Path
from typing import Any

import treq
from prometheus_client.parser import text_string_to_metric_families
from twisted.internet import reactor
from twisted.internet.task import deferLater
from twisted.trial.unittest import TestCase
from twisted.web.client import HTTPConnectionPool

from nodex.node import NodeService
from nodex.tap import Options, makeService

ALICE = "0xcd2a3d9f938e13cd947ec05abc7fe734df8dd826"
BOB = "0x7986b3df570230288501eea3d890bd66948c9b79"


class MetricsTests(TestCase):
    """
    A node with its metrics port on 127.0.0.1, port 0.
    """

    async def start_node(self, *argv: str) -> None:
        """
        Start a regtest node with RPC and metrics on ephemeral ports.
        """
        options = Options()
        options.parseOptions([
            "--datadir", self.mktemp(), "--rpc", "tcp:0:interface=127.0.0.1", "--ws", "none",
            "--metrics", "tcp:0:interface=127.0.0.1", *argv,
        ])
        node: NodeService = makeService(options)
        node.startService()
        self.addCleanup(node.stopService)
        rpc = await node.getServiceNamed("rpc").when_listening()
        metrics = await node.getServiceNamed("metrics").getServiceNamed("metrics-port").when_listening()
        self.pool = HTTPConnectionPool(reactor, persistent=False)
        self.rpc_url = f"http://127.0.0.1:{rpc.getHost().port}/"
        self.metrics_url = f"http://127.0.0.1:{metrics.getHost().port}"

    async def call(self, method: str, *params: Any) -> dict[str, Any]:
        """
        One JSON-RPC call.
        """
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}).encode()
        response = await treq.post(self.rpc_url, data=body, headers={"Content-Type": "application/json"}, pool=self.pool)
        return json.loads(await response.content())

    async def get(self, path: str) -> tuple[int, bytes, bytes]:
        """
        GET a path of the metrics port: status, content type, body.
        """
        response = await treq.get(self.metrics_url + path, pool=self.pool)
        body = await response.content()
        return response.code, response.headers.getRawHeaders(b"content-type", [b""])[0], body

    async def samples(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        """
        Every sample of C{/metrics}, by name and labels.
        """
        code, content_type, body = await self.get("/metrics")
        self.assertEqual(code, 200)
        self.assertTrue(content_type.startswith(b"text/plain"), content_type)
        return {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(body.decode())
            for sample in family.samples
        }

    async def test_metrics(self) -> None:
        """
        After a transfer (mined at once) and a bad call, the metrics show the
        head, the mined and adopted block, the pool, the calls by method with
        their error codes and latencies, the database size and the reactor lag.
        """
        await self.start_node()
        self.assertIn("result", await self.call("eth_sendTransaction", {"from": ALICE, "to": BOB, "value": "0x1"}))
        self.assertEqual((await self.call("web3_sha3", "0x1"))["error"]["code"], -32602)
        await self.call("no_suchMethod")
        for _ in range(100):  # the first size measure runs in a thread
            samples = await self.samples()
            if samples.get(("nodex_database_bytes", ()), 0) > 0:
                break
            await deferLater(reactor, 0.05, lambda: None)
        self.assertEqual(samples[("nodex_head_block_number", ())], 1)
        self.assertEqual(samples[("nodex_blocks_mined_total", ())], 1)
        self.assertEqual(samples[("nodex_blocks_adopted_total", ())], 1)
        self.assertEqual(samples[("nodex_reorganisations_total", ())], 0)
        self.assertEqual(samples[("nodex_peers", ())], 0)
        self.assertEqual(samples[("nodex_pool_transactions", (("state", "pending"),))], 0)
        self.assertEqual(samples[("nodex_rpc_requests_total", (("method", "eth_sendTransaction"),))], 1)
        self.assertEqual(samples[("nodex_rpc_errors_total", (("code", "-32602"), ("method", "web3_sha3")))], 1)
        self.assertEqual(samples[("nodex_rpc_errors_total", (("code", "-32601"), ("method", "other")))], 1)
        self.assertEqual(samples[("nodex_rpc_latency_seconds_count", (("method", "web3_sha3"),))], 1)
        self.assertEqual(samples[("nodex_rpc_latency_seconds_bucket", (("le", "+Inf"), ("method", "eth_sendTransaction")))], 1)
        self.assertGreater(samples[("nodex_database_bytes", ())], 0)
        self.assertGreaterEqual(samples[("nodex_reactor_lag_seconds", ())], 0)
        self.assertGreater(samples[("nodex_head_age_seconds", ())], 0)

    async def test_health(self) -> None:
        """
        On regtest (no head-age limit) C{/health} is 200 with the head; other
        paths are 404.
        """
        await self.start_node()
        code, content_type, body = await self.get("/health")
        self.assertEqual((code, content_type), (200, b"application/json"))
        answer = json.loads(body)
        self.assertEqual((answer["head"], answer["peers"], answer["syncing"], answer["healthy"]), (0, 0, False, True))
        self.assertEqual(answer["problems"], [])
        self.assertEqual((await self.get("/"))[0], 404)

    async def test_stale_head_is_503(self) -> None:
        """
        With C{metrics.max_head_age} set, a head older than it (regtest's
        genesis is from 1970) makes C{/health} answer 503 with the reason.
        """
        config = Path(self.mktemp())
        config.write_text("[metrics]\nmax_head_age = 60\n")
        await self.start_node("--config", str(config))
        code, _, body = await self.get("/health")
        answer = json.loads(body)
        self.assertEqual((code, answer["healthy"]), (503, False))
        self.assertIn("more than 60 s", answer["problems"][0])
