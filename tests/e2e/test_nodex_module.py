"""
End-to-end tests of the C{nodex} RPC module and C{eth_bridgeState} on a
real node (RocksDB, HTTP on port 0), each answer checked by an independent
computation: eth_utils' Keccak, pyrlp and py-trie.
"""

import json
from pathlib import Path
from typing import Any

import rlp
import treq
from eth_utils import keccak
from trie import HexaryTrie as ReferenceTrie
from twisted.internet import reactor
from twisted.trial.unittest import TestCase
from twisted.web.client import HTTPConnectionPool

from nodex.node import NodeService
from nodex.tap import Options, makeService

ALICE = "0xcd2a3d9f938e13cd947ec05abc7fe734df8dd826"
BOB = "0x7986b3df570230288501eea3d890bd66948c9b79"


class NodexModuleTests(TestCase):
    """
    The C{nodex} methods against a node that has mined a block of several
    transactions.
    """

    async def start_node(self, *argv: str) -> None:
        """
        Start a regtest node with RPC on port 0.
        """
        options = Options()
        options.parseOptions(["--datadir", self.mktemp(), "--rpc", "tcp:0:interface=127.0.0.1", "--ws", "none", *argv])
        node: NodeService = makeService(options)
        node.startService()
        self.addCleanup(node.stopService)
        port = await node.getServiceNamed("rpc").when_listening()
        self.pool = HTTPConnectionPool(reactor, persistent=False)
        self.url = f"http://127.0.0.1:{port.getHost().port}/"

    async def call(self, method: str, *params: Any) -> dict[str, Any]:
        """
        One JSON-RPC call; the whole answer.
        """
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}).encode()
        response = await treq.post(self.url, data=body, headers={"Content-Type": "application/json"}, pool=self.pool)
        return json.loads(await response.content())

    async def result(self, method: str, *params: Any) -> Any:
        """
        One JSON-RPC call's result (the test fails on an error).
        """
        answer = await self.call(method, *params)
        self.assertNotIn("error", answer, f"{method}: {answer}")
        return answer["result"]

    async def mine_block_of_transfers(self, count: int) -> tuple[dict[str, Any], list[str]]:
        """
        Send C{count} transfers (legacy and EIP-1559) with mining manual,
        mine them into one block; return the block and the hashes.
        """
        hashes = []
        for index in range(count):
            tx: dict[str, Any] = {"from": ALICE, "to": BOB, "value": hex(index + 1), "gas": "0x5208"}
            if index % 2:
                tx.update(maxFeePerGas="0x1", maxPriorityFeePerGas="0x1")
            hashes.append(await self.result("eth_sendTransaction", tx))
        await self.result("evm_mine")
        block = await self.result("eth_getBlockByNumber", "latest", False)
        self.assertEqual(block["transactions"], hashes)
        return block, hashes

    async def test_protocol_version(self) -> None:
        """
        nodex_protocolVersion is eth_protocolVersion's answer.
        """
        await self.start_node()
        self.assertEqual(await self.result("nodex_protocolVersion"), await self.result("eth_protocolVersion"))
        self.assertEqual(await self.result("nodex_protocolVersion"), "0x3f")

    async def test_raw_headers(self) -> None:
        """
        The raw header's Keccak-256 is the block hash, by hash, number, tag
        and hash-as-block; its fields decode to the block's; unknown → null.
        """
        await self.start_node()
        await self.result("eth_sendTransaction", {"from": ALICE, "to": BOB, "value": "0x1"})
        block = await self.result("eth_getBlockByNumber", "latest", False)
        for method, argument in (
            ("nodex_getRawBlockHeaderByHash", block["hash"]),
            ("nodex_getRawBlockHeaderByNumber", block["number"]),
            ("nodex_getRawBlockHeaderByNumber", "latest"),
            ("nodex_getRawBlockHeaderByNumber", block["hash"]),
        ):
            raw = bytes.fromhex((await self.result(method, argument))[2:])
            self.assertEqual("0x" + keccak(raw).hex(), block["hash"], (method, argument))
            fields = rlp.decode(raw)
            self.assertEqual(len(fields), 17)
            self.assertEqual("0x" + fields[0].hex(), block["parentHash"])
            self.assertEqual("0x" + fields[3].hex(), block["stateRoot"])
            self.assertEqual(int.from_bytes(fields[8], "big"), int(block["number"], 16))
        genesis = await self.result("eth_getBlockByNumber", "earliest", False)
        raw = await self.result("nodex_getRawBlockHeaderByNumber", "earliest")
        self.assertEqual("0x" + keccak(bytes.fromhex(raw[2:])).hex(), genesis["hash"])
        self.assertIsNone(await self.result("nodex_getRawBlockHeaderByHash", "0x" + "11" * 32))
        self.assertIsNone(await self.result("nodex_getRawBlockHeaderByNumber", "0x999999"))
        bad = await self.call("nodex_getRawBlockHeaderByHash", "0x1234")
        self.assertEqual(bad["error"]["code"], -32602)

    async def test_raw_receipts_and_trie_nodes(self) -> None:
        """
        In a block of five transfers, each raw receipt decodes to the
        receipt's status and cumulative gas (with the type byte for typed
        transactions), and each receipt's nodes prove it under the block's
        receiptsRoot (py-trie); leaf first, root last.
        """
        await self.start_node("--mining", "manual")
        block, hashes = await self.mine_block_of_transfers(5)
        root = bytes.fromhex(block["receiptsRoot"][2:])
        for index, tx_hash in enumerate(hashes):
            receipt = await self.result("eth_getTransactionReceipt", tx_hash)
            raw = bytes.fromhex((await self.result("nodex_getRawTransactionReceiptByHash", tx_hash))[2:])
            payload = raw[1:] if index % 2 else raw
            if index % 2:
                self.assertEqual(raw[0], 2)
            status, cumulative, bloom, logs = rlp.decode(payload)
            self.assertEqual(int.from_bytes(status, "big"), int(receipt["status"], 16))
            self.assertEqual(int.from_bytes(cumulative, "big"), int(receipt["cumulativeGasUsed"], 16))
            self.assertEqual((len(bloom), logs), (256, []))
            nodes = [bytes.fromhex(node[2:]) for node in
                     await self.result("nodex_getTransactionReceiptNodesByHash", block["hash"], tx_hash)]
            self.assertEqual(keccak(nodes[-1]), root)
            proof = tuple(rlp.decode(node) for node in reversed(nodes))
            self.assertEqual(ReferenceTrie.get_from_proof(root, rlp.encode(index), proof), raw)

    async def test_debug_raw_getters(self) -> None:
        """
        debug_getRawBlock decodes (pyrlp) to the block's header, transactions
        and uncles; debug_getRawHeader is that header; each transaction's
        raw bytes hash to its hash; the raw receipts are the nodex module's;
        a pooled transaction is found; unknown → null or -32600.
        """
        await self.start_node("--mining", "manual")
        block, hashes = await self.mine_block_of_transfers(3)
        for selector in (block["number"], block["hash"], "latest"):
            raw_block = bytes.fromhex((await self.result("debug_getRawBlock", selector))[2:])
            header, transactions, uncles = rlp.decode(raw_block)
            self.assertEqual((len(header), len(transactions), uncles), (19, 3, []))
            raw_header = await self.result("debug_getRawHeader", selector)
            self.assertEqual(bytes.fromhex(raw_header[2:]), rlp.encode(header))
            self.assertEqual("0x" + keccak(rlp.encode(header[:17])).hex(), block["hash"])
        for tx_hash in hashes:
            raw = bytes.fromhex((await self.result("debug_getRawTransaction", tx_hash))[2:])
            self.assertEqual("0x" + keccak(raw).hex(), tx_hash)
        receipts = await self.result("debug_getRawReceipts", block["number"])
        self.assertEqual(receipts, [await self.result("nodex_getRawTransactionReceiptByHash", h) for h in hashes])
        self.assertEqual(await self.result("debug_getRawReceipts", "earliest"), [])
        pooled = await self.result("eth_sendTransaction", {"from": ALICE, "to": BOB, "value": "0x9"})
        raw = bytes.fromhex((await self.result("debug_getRawTransaction", pooled))[2:])
        self.assertEqual("0x" + keccak(raw).hex(), pooled)
        self.assertIsNone(await self.result("debug_getRawTransaction", "0x" + "11" * 32))
        for method in ("debug_getRawHeader", "debug_getRawBlock", "debug_getRawReceipts"):
            unknown = await self.call(method, "0x999999")
            self.assertEqual(unknown["error"]["code"], -32600, method)
            bad = await self.call(method, "0xzz")
            self.assertEqual(bad["error"]["code"], -32602, method)

    async def test_receipt_lookups_of_the_unknown(self) -> None:
        """
        A transaction not in the block → null; an unknown block → -32600;
        an unknown transaction's raw receipt → null.
        """
        await self.start_node()
        first = await self.result("eth_sendTransaction", {"from": ALICE, "to": BOB, "value": "0x1"})
        second = await self.result("eth_sendTransaction", {"from": ALICE, "to": BOB, "value": "0x2"})
        block = await self.result("eth_getBlockByNumber", "latest", False)
        self.assertEqual(block["transactions"], [second])
        self.assertIsNone(await self.result("nodex_getTransactionReceiptNodesByHash", block["hash"], first))
        unknown = await self.call("nodex_getTransactionReceiptNodesByHash", "0x" + "22" * 32, first)
        self.assertEqual(unknown["error"]["code"], -32600)
        self.assertIsNone(await self.result("nodex_getRawTransactionReceiptByHash", "0x" + "33" * 32))


class BridgeStateTests(TestCase):
    """
    C{eth_bridgeState} reads the bridge account's storage at the head.
    """

    start_node = NodexModuleTests.start_node
    call = NodexModuleTests.call
    result = NodexModuleTests.result

    async def test_fresh_regtest(self) -> None:
        """
        A fresh regtest chain: height 0, nothing waiting.
        """
        await self.start_node()
        self.assertEqual(
            await self.result("eth_bridgeState"),
            {"btcBlockchainBestChainHeight": 0, "nodexTxsWaitingForSignatures": []},
        )

    async def test_from_genesis_storage(self) -> None:
        """
        A genesis that writes the bridge's slots: the height and the waiting
        keys come back (keys as hex without 0x), at the slots of the layout.
        """
        base = int.from_bytes(keccak((1).to_bytes(32, "big")), "big")
        first, second = "ab" * 32, "0c" * 32
        config = Path(self.mktemp())
        config.write_text(
            "[genesis]\ntimestamp = 0\nextra_data = \"0x\"\ngas_limit = 30000000\ndifficulty = 1\n"
            "coinbase = \"0x3333333333333333333333333333333333333333\"\nminimum_gas_price = 0\n"
            "[genesis.alloc.\"0x0000000000000000000000000000000001000006\"]\nbalance = \"1\"\n"
            "[genesis.alloc.\"0x0000000000000000000000000000000001000006\".storage]\n"
            f"\"0x{0:064x}\" = \"0x{812345:064x}\"\n\"0x{1:064x}\" = \"0x{2:064x}\"\n"
            f"\"0x{base:064x}\" = \"0x{first}\"\n\"0x{base + 1:064x}\" = \"0x{second}\"\n"
        )
        await self.start_node("--config", str(config))
        self.assertEqual(
            await self.result("eth_bridgeState"),
            {"btcBlockchainBestChainHeight": 812345, "nodexTxsWaitingForSignatures": [first, second]},
        )
        extra = await self.call("eth_bridgeState", 1)
        self.assertEqual(extra["error"]["code"], -32602)
