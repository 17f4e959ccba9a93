"""
End-to-end tests of JSON-RPC over WebSocket: a regtest node from
L{makeService} (RocksDB under C{self.mktemp()}, HTTP and WebSocket on
127.0.0.1 port 0) driven by web3.py's C{AsyncWeb3(WebSocketProvider)} as a
dapp drives it (subscribe to new heads and logs, send transactions, receive
them; a reverted chain's logs come again with C{removed: true}), by ethers v6
when node and ethers are installed, and by 200 raw clients at once.

web3.py's WebSocket provider runs on asyncio, so each session runs in its
own thread with its own event loop while the node runs on the test's reactor.
"""

import asyncio
import json
import subprocess
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from twisted.internet import reactor
from twisted.internet.defer import Deferred, DeferredList
from twisted.internet.threads import deferToThread
from twisted.trial.unittest import SkipTest, TestCase

try:
    from web3 import AsyncWeb3, WebSocketProvider
except ImportError:  # pragma: no cover - the test extra is missing
    AsyncWeb3 = None

from nodex.node import NodeService
from nodex.tap import Options, makeService
from tests.e2e.ethers import node_with_ethers
from tests.e2e.test_web3_node import COW, COW1, TRANSFER_TOPIC, artifact
from tests.rpc.wsclient import RawWebSocket, connect_raw

T = TypeVar("T")

SESSION_TIMEOUT = 60.0
"""Seconds one web3.py session may take."""


def in_thread(url: str, script: Callable[["AsyncWeb3"], Awaitable[T]]) -> "Deferred[T]":
    """
    Run C{script} with a connected C{AsyncWeb3} in a thread of its own.
    """

    async def session() -> T:
        async with AsyncWeb3(WebSocketProvider(url)) as w3:
            return await asyncio.wait_for(script(w3), SESSION_TIMEOUT)

    return deferToThread(asyncio.run, session())


async def collect(w3: "AsyncWeb3", want: Callable[[list[dict[str, Any]]], bool]) -> list[dict[str, Any]]:
    """
    The subscription messages (C{subscription} and C{result}) that come
    until C{want} says there are enough.
    """
    messages: list[dict[str, Any]] = []
    if want(messages):
        return messages
    async for message in w3.socket.process_subscriptions():
        messages.append(message)
        if want(messages):
            break
    return messages


def plain(value: Any) -> Any:
    """
    web3's attribute dicts and bytes as plain JSON-like values.
    """
    if isinstance(value, dict) or hasattr(value, "items"):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, (bytes, bytearray)):
        return "0x" + bytes(value).hex()
    return value


class WebSocketNodeTestCase(TestCase):
    """
    Start a node with HTTP and WebSocket on ports of their own.
    """

    async def start_node(self, *argv: str) -> str:
        """
        Start a regtest node; keep it in C{self.node}, its HTTP URL in
        C{self.http_url}, and return its WebSocket URL.
        """
        if AsyncWeb3 is None:
            raise SkipTest("web3.py (the test extra) is not installed")
        options = Options()
        options.parseOptions(
            ["--datadir", self.mktemp(), "--rpc", "tcp:0:interface=127.0.0.1", "--ws", "tcp:0:interface=127.0.0.1", *argv]
        )
        node: NodeService = makeService(options)
        node.startService()
        self.node = node
        self.addCleanup(self.stop_node)
        http = await node.getServiceNamed("rpc").when_listening()
        ws = await node.getServiceNamed("ws").when_listening()
        self.http_url = f"http://127.0.0.1:{http.getHost().port}/"
        self.ws_port = ws.getHost().port
        return f"ws://127.0.0.1:{self.ws_port}/"

    async def stop_node(self) -> None:
        """
        Stop the node (its WebSocket connections close with it).
        """
        node, self.node = getattr(self, "node", None), None
        if node is not None and node.running:
            await node.stopService()

    def http(self, method: str, *params: Any) -> "Deferred[dict[str, Any]]":
        """
        One JSON-RPC call over HTTP, in a thread; the whole response.
        """
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}).encode()

        def call() -> dict[str, Any]:
            request = urllib.request.Request(self.http_url, body, {"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.loads(response.read())

        return deferToThread(call)


class Web3WebSocketTests(WebSocketNodeTestCase):
    """
    web3.py's C{AsyncWeb3(WebSocketProvider)} against the node.
    """

    async def test_new_heads_and_logs(self) -> None:
        """
        Subscribed to newHeads and to the token's Transfer logs, a client that
        deploys the token and transfers gets both blocks' heads, in order,
        each readable over RPC, and both Transfer logs with their place.
        """
        url = await self.start_node()
        token = artifact("Token")

        async def script(w3: "AsyncWeb3") -> dict[str, Any]:
            heads_id = await w3.eth.subscribe("newHeads")
            logs_id = await w3.eth.subscribe("logs", {"topics": ["0x" + TRANSFER_TOPIC]})
            factory = w3.eth.contract(abi=token["abi"], bytecode=token["bytecode"])
            deploy_hash = await factory.constructor("Token", "TOK", 10**24).transact({"from": COW, "gas": 3_000_000})
            deployed = await w3.eth.get_transaction_receipt(deploy_hash)
            contract = w3.eth.contract(address=deployed["contractAddress"], abi=token["abi"])
            transfer_hash = await contract.functions.transfer(COW1, 5).transact({"from": COW, "gas": 100_000})
            messages = await collect(w3, lambda got: len(got) >= 4)
            blocks = [plain(await w3.eth.get_block(number)) for number in (1, 2)]
            return {
                "ids": (heads_id, logs_id),
                "messages": [plain(message) for message in messages],
                "blocks": blocks,
                "hashes": ("0x" + bytes(deploy_hash).hex(), "0x" + bytes(transfer_hash).hex()),
                "token": deployed["contractAddress"],
            }

        outcome = await in_thread(url, script)
        heads_id, logs_id = outcome["ids"]
        self.assertRegex(heads_id, "^0x[0-9a-f]{32}$")
        heads = [m["result"] for m in outcome["messages"] if m["subscription"] == heads_id]
        logs = [m["result"] for m in outcome["messages"] if m["subscription"] == logs_id]
        self.assertEqual([head["number"] for head in heads], [1, 2])
        self.assertEqual([head["hash"] for head in heads], [block["hash"] for block in outcome["blocks"]])
        for head, block in zip(heads, outcome["blocks"]):
            self.assertEqual(head, {name: block[name] for name in head})
        self.assertEqual([entry["transactionHash"] for entry in logs], list(outcome["hashes"]))
        self.assertEqual([entry["blockNumber"] for entry in logs], [1, 2])
        self.assertEqual([entry["removed"] for entry in logs], [False, False])
        self.assertEqual({entry["address"] for entry in logs}, {outcome["token"]})

    async def test_reverted_logs_come_again_removed(self) -> None:
        """
        After C{evm_revert} the reverted block's logs come again with
        C{removed: true}; the next block is announced as the new head.
        """
        url = await self.start_node()
        token = artifact("Token")

        async def script(w3: "AsyncWeb3") -> list[dict[str, Any]]:
            factory = w3.eth.contract(abi=token["abi"], bytecode=token["bytecode"])
            deployed = await w3.eth.get_transaction_receipt(
                await factory.constructor("Token", "TOK", 10**24).transact({"from": COW, "gas": 3_000_000})
            )
            contract = w3.eth.contract(address=deployed["contractAddress"], abi=token["abi"])
            await w3.eth.subscribe("logs", {"address": deployed["contractAddress"]})
            await w3.eth.subscribe("newHeads")
            snapshot = (await w3.provider.make_request("evm_snapshot", []))["result"]
            await contract.functions.transfer(COW1, 5).transact({"from": COW, "gas": 100_000})
            reverted = await w3.provider.make_request("evm_revert", [snapshot])
            assert reverted["result"] is True, reverted
            await w3.provider.make_request("evm_mine", [])
            messages = await collect(w3, lambda got: len(got) >= 4)
            return [plain(message["result"]) for message in messages]

        results = await in_thread(url, script)
        shapes = [
            ("log", entry["blockNumber"], entry["removed"]) if "logIndex" in entry else ("head", entry["number"])
            for entry in results
        ]
        self.assertEqual(shapes, [("head", 2), ("log", 2, False), ("log", 2, True), ("head", 2)])
        self.assertEqual(results[1]["transactionHash"], results[2]["transactionHash"])
        self.assertNotEqual(results[0]["hash"], results[3]["hash"])

    async def test_pending_transactions(self) -> None:
        """
        newPendingTransactions gives hashes, or whole transactions with the
        C{true} flag.
        """
        url = await self.start_node("--mining", "manual")

        async def script(w3: "AsyncWeb3") -> tuple[Any, list[dict[str, Any]]]:
            hashes_id = await w3.eth.subscribe("newPendingTransactions")
            await w3.eth.subscribe("newPendingTransactions", True)
            tx_hash = await w3.eth.send_transaction({"from": COW, "to": COW1, "value": 7, "gas": 21000})
            messages = await collect(w3, lambda got: len(got) >= 2)
            return ("0x" + bytes(tx_hash).hex(), hashes_id), [plain(message) for message in messages]

        (tx_hash, hashes_id), messages = await in_thread(url, script)
        by_kind = {message["subscription"] == hashes_id: message["result"] for message in messages}
        self.assertEqual(by_kind[True], tx_hash)
        self.assertEqual((by_kind[False]["hash"], by_kind[False]["value"], by_kind[False]["blockHash"]), (tx_hash, 7, None))

    async def test_subscribe_over_http(self) -> None:
        """
        Over HTTP, eth_subscribe answers -32601 saying it needs a WebSocket.
        """
        await self.start_node()
        answer = await self.http("eth_subscribe", "newHeads")
        self.assertEqual(answer["error"]["code"], -32601)
        self.assertIn("needs a WebSocket connection", answer["error"]["message"])


class ManySubscribersTests(WebSocketNodeTestCase):
    """
    Many connections on one node.
    """

    async def test_two_hundred_subscribers_get_every_head(self) -> None:
        """
        200 connections subscribed to newHeads each get every new head, once,
        in order; closing them ends their subscriptions.
        """
        await self.start_node("--mining", "manual")
        clients: list[RawWebSocket] = []
        for _ in range(200):
            client = await connect_raw(reactor, self.ws_port)
            clients.append(client)
            client.send_json({"jsonrpc": "2.0", "id": 1, "method": "eth_subscribe", "params": ["newHeads"]})
        await DeferredList([client.wait_texts(1) for client in clients])
        for _ in range(3):
            answer = await self.http("evm_mine")
            self.assertNotIn("error", answer)
        await DeferredList([client.wait_texts(4) for client in clients])
        for client in clients:
            texts = client.texts()
            subscription = texts[0]["result"]
            self.assertEqual([text["params"]["subscription"] for text in texts[1:]], [subscription] * 3)
            self.assertEqual([text["params"]["result"]["number"] for text in texts[1:]], ["0x1", "0x2", "0x3"])
        factory = self.node.getServiceNamed("ws")._factory
        self.assertEqual(factory.connection_count(), 200)
        for client in clients:
            client.transport.loseConnection()
        await DeferredList([client.closed for client in clients])


ETHERS_SCRIPT = r"""
const { WebSocketProvider, Wallet, ContractFactory, Contract } = require("ethers");
const [url, artifactPath, key] = process.argv.slice(2);
const artifact = JSON.parse(require("fs").readFileSync(artifactPath, "utf8"));
(async () => {
  const provider = new WebSocketProvider(url);
  const wallet = new Wallet(key, provider);
  const heads = [];
  provider.on("block", (number) => heads.push(number));
  const factory = new ContractFactory(artifact.abi, artifact.bytecode, wallet);
  const token = await factory.deploy("Token", "TOK", 1000n, { gasLimit: 3000000 });
  await token.waitForDeployment();
  const events = [];
  const seen = new Promise((resolve) => {
    token.on("Transfer", (from, to, value, event) => {
      events.push({ to, value: value.toString(), block: event.log.blockNumber });
      resolve();
    });
  });
  await new Promise((resolve) => setTimeout(resolve, 500));
  const tx = await token.transfer("0x7986b3df570230288501eea3d890bd66948c9b79", 5n, { gasLimit: 100000 });
  await tx.wait();
  await seen;
  await new Promise((resolve) => setTimeout(resolve, 300));
  console.log(JSON.stringify({ events, heads }));
  await provider.destroy();
})().catch((error) => { console.error(error); process.exit(1); });
"""


class EthersWebSocketTests(WebSocketNodeTestCase):
    """
    ethers v6's C{WebSocketProvider} against the node.
    """

    async def test_contract_events(self) -> None:
        """
        ethers deploys the token through the node's WebSocket and gets its
        Transfer event through C{contract.on} and new blocks through
        C{provider.on("block")}.
        """
        node = node_with_ethers()
        url = await self.start_node()
        script = Path(self.mktemp())
        script.write_text(ETHERS_SCRIPT)
        key = "0x" + __import__("nodex.crypto", fromlist=["keccak256"]).keccak256(b"cow").hex()
        token = Path(__file__).resolve().parent.parent / "data" / "contracts" / "Token.json"

        def run() -> subprocess.CompletedProcess[bytes]:
            return subprocess.run(
                [node.binary, str(script), url, str(token), key], capture_output=True, timeout=60, env=node.environment
            )

        done = await deferToThread(run)
        self.assertEqual(done.returncode, 0, done.stderr.decode()[-2000:])
        outcome = json.loads(done.stdout.decode().strip().splitlines()[-1])
        self.assertEqual([(event["to"].lower(), event["value"]) for event in outcome["events"]], [(COW1.lower(), "5")])
        self.assertIn(2, outcome["heads"])
