"""
End-to-end tests of blocks and transactions: a regtest node from
L{makeService} (RocksDB under C{self.mktemp()}, HTTP on 127.0.0.1 port 0)
driven by web3.py as a developer drives it: deploy and use the test token,
send every transaction type, replace a pending transaction, mine in each
mode, snapshot and revert, shift time, and get refused with the pool's
messages.

web3.py is blocking, so each of its calls runs in a thread
(C{deferToThread}) while the node runs on the test's reactor.
"""

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThread
from twisted.trial.unittest import SkipTest, TestCase

try:
    from eth_account import Account as EthAccount
    from web3 import Web3
    from web3.exceptions import TransactionNotFound, Web3RPCError
except ImportError:  # pragma: no cover - the test extra is missing
    Web3 = None

from nodex.crypto import keccak256
from nodex.node import NodeService
from nodex.tap import Options, makeService
from nodex.api.chain import ImportResult
from tests.chain.chainmaker import import_one

T = TypeVar("T")

CONTRACTS = Path(__file__).resolve().parent.parent / "data" / "contracts"
COW_KEYS = ["0x" + keccak256(seed.encode()).hex() for seed in ("cow", "cow1", "cow2", "cow3")]


def checksummed(address: str) -> str:
    """
    An address in EIP-55 mixed case, as web3.py returns addresses.
    """
    digits = address.lower().removeprefix("0x")
    mask = keccak256(digits.encode()).hex()
    return "0x" + "".join(c.upper() if int(m, 16) >= 8 else c for c, m in zip(digits, mask))


COW = checksummed("cd2a3d9f938e13cd947ec05abc7fe734df8dd826")
COW1 = checksummed("7986b3df570230288501eea3d890bd66948c9b79")
COW2 = checksummed("0a3aa774752ec2042c46548456c094a76c7f3a79")
MINER = checksummed("ec4ddeb4380ad69b3e509baad9f158cdf4e4681d")
NOBODY_KEY = "0x" + keccak256(b"nobody with funds").hex()
TRANSFER_TOPIC = "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"


class Web3NodeTestCase(TestCase):
    """
    Start a node and give the test a connected L{Web3}.
    """

    async def start_node(self, *argv: str, datadir: str | None = None) -> "Web3":
        """
        Start a regtest node with RPC on port 0 and extra options C{argv};
        keep it in C{self.node} and its data directory in C{self.datadir}.
        """
        if Web3 is None:
            raise SkipTest("web3.py (the test extra) is not installed")
        self.datadir = datadir or self.mktemp()
        options = Options()
        options.parseOptions(["--datadir", self.datadir, "--rpc", "tcp:0:interface=127.0.0.1", "--ws", "none", *argv])
        node: NodeService = makeService(options)
        node.startService()
        self.node = node
        self.addCleanup(self.stop_node)
        port = await node.getServiceNamed("rpc").when_listening()
        url = f"http://127.0.0.1:{port.getHost().port}/"
        # Each request on its own connection, closed by the server after
        # its answer, so that no connection outlives the test.
        self.w3 = Web3(Web3.HTTPProvider(url, request_kwargs={"timeout": 60, "headers": {"Content-Type": "application/json", "Connection": "close"}}))
        return self.w3

    async def stop_node(self) -> None:
        """
        Stop the running node, if any.
        """
        node, self.node = getattr(self, "node", None), None
        if node is not None and node.running:
            await node.stopService()

    def blocking(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> "Deferred[T]":
        """
        Run a blocking web3 call in a thread.
        """
        return deferToThread(function, *args, **kwargs)

    async def rpc(self, method: str, *params: Any) -> Any:
        """
        A raw request through web3's provider; the whole response.
        """
        return await self.blocking(self.w3.provider.make_request, method, list(params))

    async def receipt(self, tx_hash: Any) -> Any:
        """
        The receipt of a transaction, or L{None} while it has none.
        """
        try:
            return await self.blocking(self.w3.eth.get_transaction_receipt, tx_hash)
        except TransactionNotFound:
            return None

    async def send_raw(self, transaction: dict[str, Any], key: str = COW_KEYS[0]) -> Any:
        """
        Sign C{transaction} with C{key} (chain 33) and send it raw; the hash.
        """
        signed = EthAccount.sign_transaction({"chainId": 33, **transaction}, key)
        return await self.blocking(self.w3.eth.send_raw_transaction, signed.raw_transaction)

    async def rejection(self, transaction: dict[str, Any], key: str = COW_KEYS[0]) -> tuple[int, str]:
        """
        Send a transaction that must be refused; the error's code and message.
        """
        signed = EthAccount.sign_transaction({"chainId": 33, **transaction}, key)
        response = await self.rpc("eth_sendRawTransaction", "0x" + bytes(signed.raw_transaction).hex())
        self.assertIn("error", response, f"accepted: {response}")
        return response["error"]["code"], response["error"]["message"]


def artifact(name: str) -> dict[str, Any]:
    """
    A compiled test contract (C{tests/data/contracts/<name>.json}).
    """
    return json.loads((CONTRACTS / f"{name}.json").read_text())


class AutoMiningTests(Web3NodeTestCase):
    """
    The regtest default: every accepted transaction is mined before the answer.
    """

    async def test_deploy_and_use_token(self) -> None:
        """
        Deploy the ERC-20 token, transfer, and read the receipts, the event and the blocks.
        """
        w3 = await self.start_node()
        token = artifact("Token")
        factory = w3.eth.contract(abi=token["abi"], bytecode=token["bytecode"])
        deploy_hash = await self.blocking(
            factory.constructor("Token", "TOK", 10**24).transact, {"from": COW, "gas": 3_000_000}
        )
        deployed = await self.receipt(deploy_hash)
        self.assertIsNotNone(deployed, "the deployment was not mined before the answer")
        self.assertEqual(deployed["status"], 1)
        address = deployed["contractAddress"]
        code = await self.blocking(w3.eth.get_code, address)
        self.assertEqual("0x" + bytes(code).hex(), token["deployedBytecode"])
        contract = w3.eth.contract(address=address, abi=token["abi"])
        tx_hash = await self.blocking(contract.functions.transfer(COW1, 5).transact, {"from": COW, "gas": 100_000})
        receipt = await self.receipt(tx_hash)
        self.assertEqual((receipt["status"], receipt["to"], receipt["from"]), (1, address, COW))
        events = contract.events.Transfer().process_receipt(receipt)
        self.assertEqual([(e["args"]["from"], e["args"]["to"], e["args"]["value"]) for e in events], [(COW, COW1, 5)])
        self.assertEqual(receipt["logs"][0]["topics"][0].hex().removeprefix("0x"), TRANSFER_TOPIC)
        block = await self.blocking(w3.eth.get_block, receipt["blockNumber"], True)
        self.assertEqual([tx["hash"] for tx in block["transactions"]], [tx_hash])
        self.assertEqual(block["miner"], MINER)
        self.assertEqual(await self.blocking(lambda: w3.eth.block_number), receipt["blockNumber"])
        fetched = await self.blocking(w3.eth.get_transaction, tx_hash)
        self.assertEqual((fetched["blockHash"], fetched["transactionIndex"]), (block["hash"], 0))
        by_block = await self.rpc("eth_getBlockReceipts", hex(receipt["blockNumber"]))
        self.assertEqual(by_block["result"][0]["transactionHash"], "0x" + bytes(tx_hash).hex())

    async def test_failed_call_has_status_zero(self) -> None:
        """
        A transfer beyond the balance is mined with status 0 (the send itself succeeds).
        """
        w3 = await self.start_node()
        token = artifact("Token")
        factory = w3.eth.contract(abi=token["abi"], bytecode=token["bytecode"])
        deployed = await self.receipt(
            await self.blocking(factory.constructor("Token", "TOK", 100).transact, {"from": COW, "gas": 3_000_000})
        )
        contract = w3.eth.contract(address=deployed["contractAddress"], abi=token["abi"])
        tx_hash = await self.blocking(contract.functions.transfer(COW1, 101).transact, {"from": COW, "gas": 100_000})
        self.assertEqual((await self.receipt(tx_hash))["status"], 0)

    async def test_every_transaction_type(self) -> None:
        """
        Types 0 (with and without EIP-155), 1 and 2, raw and through the node's accounts.
        """
        w3 = await self.start_node()
        sent = [
            await self.send_raw({"nonce": 0, "gasPrice": 0, "gas": 21000, "to": COW1, "value": 1}),
            await self.send_raw({"nonce": 1, "gasPrice": 0, "gas": 30000, "to": COW1, "value": 1, "accessList": [{"address": COW2, "storageKeys": ["0x" + "00" * 32]}]}),
            await self.send_raw({"nonce": 2, "maxFeePerGas": 10, "maxPriorityFeePerGas": 1, "gas": 21000, "to": COW1, "value": 1}),
            await self.blocking(w3.eth.send_transaction, {"from": COW1, "to": COW2, "value": 7, "gas": 21000}),
            await self.blocking(w3.eth.send_transaction, {"from": COW1, "to": COW2, "value": 7, "gas": 21000, "maxFeePerGas": 5, "maxPriorityFeePerGas": 2}),
            await self.blocking(w3.eth.send_transaction, {"from": COW1, "to": COW2, "value": 7}),
        ]
        receipts = [await self.receipt(tx_hash) for tx_hash in sent]
        self.assertEqual([r["type"] for r in receipts], [0, 1, 2, 0, 2, 0])
        self.assertEqual([r["status"] for r in receipts], [1] * 6)
        self.assertEqual(receipts[2]["effectiveGasPrice"], 1)
        typed = await self.blocking(w3.eth.get_transaction, sent[1])
        self.assertEqual(typed["accessList"][0]["address"], COW2)
        legacy = EthAccount.sign_transaction({"nonce": 0, "gasPrice": 0, "gas": 21000, "to": COW1, "value": 1}, COW_KEYS[2])
        unprotected = await self.blocking(w3.eth.send_raw_transaction, legacy.raw_transaction)
        self.assertEqual((await self.receipt(unprotected))["status"], 1)
        self.assertEqual((await self.blocking(w3.eth.get_transaction, unprotected))["v"], 27 + legacy.v - 27)
        self.assertEqual(await self.blocking(w3.eth.get_transaction_count, COW), 3)

    async def test_accounts_and_identity(self) -> None:
        """
        The dev accounts, the coinbase, mining, gas price and syncing.
        """
        w3 = await self.start_node()
        accounts = await self.blocking(lambda: w3.eth.accounts)
        self.assertEqual((len(accounts), accounts[0], accounts[1]), (11, COW, COW1))
        self.assertEqual((await self.rpc("eth_coinbase"))["result"], MINER.lower())
        self.assertIs((await self.rpc("eth_mining"))["result"], True)
        self.assertEqual(await self.blocking(lambda: w3.eth.gas_price), 0)
        self.assertIs(await self.blocking(lambda: w3.eth.syncing), False)

    async def test_refusals(self) -> None:
        """
        Bad signature, wrong chain id, low nonce and too little balance answer
        -32010 with the pool's message, and nothing is stored or mined.
        """
        w3 = await self.start_node()
        await self.send_raw({"nonce": 0, "gasPrice": 0, "gas": 21000, "to": COW1, "value": 1})
        signed = EthAccount.sign_transaction({"chainId": 33, "nonce": 1, "gasPrice": 0, "gas": 21000, "to": COW1, "value": 1}, COW_KEYS[0])
        raw = bytearray(signed.raw_transaction)
        raw[-40] ^= 0xFF
        response = await self.rpc("eth_sendRawTransaction", "0x" + bytes(raw).hex())
        self.assertIn(response["error"]["code"], (-32010,))
        self.assertEqual(
            await self.rejection({"chainId": 31, "nonce": 1, "gasPrice": 0, "gas": 21000, "to": COW1, "value": 1}),
            (-32010, "Invalid chainId: 31"),
        )
        self.assertEqual(
            await self.rejection({"nonce": 0, "gasPrice": 0, "gas": 21000, "to": COW1, "value": 1}),
            (-32010, "transaction nonce too low"),
        )
        self.assertEqual(
            await self.rejection({"nonce": 0, "gasPrice": 1, "gas": 21000, "to": COW1, "value": 0}, NOBODY_KEY),
            (-32010, "insufficient funds"),
        )
        self.assertEqual(
            await self.rejection({"nonce": 1, "gasPrice": 0, "gas": 20000, "to": COW1, "value": 0}),
            (-32010, "transaction's basic cost is above the gas limit"),
        )
        self.assertEqual(await self.blocking(lambda: w3.eth.block_number), 1)
        self.assertEqual((await self.rpc("txpool_status"))["result"], {"pending": 0, "queued": 0})
        self.assertEqual((await self.rpc("eth_sendRawTransaction", "0x03c0"))["error"]["code"], -32602)
        self.assertEqual((await self.rpc("eth_getBlockByNumber", "0x1"))["error"]["code"], -32602)
        self.assertIsNone((await self.rpc("eth_getBlockByNumber", "0x99", False))["result"])
        self.assertIsNone((await self.rpc("eth_getTransactionByHash", "0x" + "ab" * 32))["result"])

    async def test_snapshot_revert_and_time(self) -> None:
        """
        A revert forgets the blocks mined since the snapshot; increaseTime
        shifts the next block's timestamp.
        """
        w3 = await self.start_node()
        snapshot = (await self.rpc("evm_snapshot"))["result"]
        tx_hash = await self.blocking(w3.eth.send_transaction, {"from": COW, "to": COW1, "value": 1, "gas": 21000})
        self.assertEqual(await self.blocking(lambda: w3.eth.block_number), 1)
        self.assertIs((await self.rpc("evm_revert", snapshot))["result"], True)
        self.assertEqual(await self.blocking(lambda: w3.eth.block_number), 0)
        self.assertIsNone(await self.receipt(tx_hash))
        self.assertEqual(await self.blocking(w3.eth.get_transaction_count, COW), 0)
        before = (await self.blocking(w3.eth.get_block, "latest"))["timestamp"]
        self.assertEqual((await self.rpc("evm_increaseTime", 3600))["result"], hex(3600))
        await self.rpc("evm_mine")
        after = (await self.blocking(w3.eth.get_block, "latest"))["timestamp"]
        self.assertGreaterEqual(after - before, 3600)
        self.assertIsNone((await self.rpc("evm_reset"))["result"])
        self.assertEqual(await self.blocking(lambda: w3.eth.block_number), 0)


class MiningModesTests(Web3NodeTestCase):
    """
    Nodes in the other mining modes: C{manual} (only C{evm_mine}), C{off},
    C{interval:N}, and C{auto} switched off and on.
    """

    async def test_replace_pending_transaction(self) -> None:
        """
        A pending transaction is replaced by one with the same nonce and a
        40 % higher price; the pool shows it, and evm_mine mines only it.
        """
        w3 = await self.start_node("--mining", "manual")
        first = await self.send_raw({"nonce": 0, "gasPrice": 10**9, "gas": 21000, "to": COW1, "value": 1})
        self.assertIsNone(await self.receipt(first))
        pending = await self.blocking(w3.eth.get_transaction, first)
        self.assertIsNone(pending["blockNumber"])
        code, message = await self.rejection({"nonce": 0, "gasPrice": 13 * 10**8, "gas": 21000, "to": COW1, "value": 2})
        self.assertEqual((code, message), (-32010, "gas price not enough to bump transaction"))
        second = await self.send_raw({"nonce": 0, "gasPrice": 14 * 10**8, "gas": 21000, "to": COW1, "value": 2})
        content = (await self.rpc("txpool_content"))["result"]
        listed = content["pending"][COW.lower()[2:]]["0"]
        self.assertEqual([tx["hash"] for tx in listed], ["0x" + bytes(second).hex()])
        self.assertEqual((await self.rpc("eth_pendingTransactions"))["result"][0]["hash"], "0x" + bytes(second).hex())
        self.assertIsNone((await self.rpc("evm_mine"))["result"])
        self.assertEqual((await self.receipt(second))["blockNumber"], 1)
        self.assertIsNone(await self.receipt(first))
        self.assertEqual((await self.rpc("txpool_status"))["result"], {"pending": 0, "queued": 0})

    async def test_gap_then_fill(self) -> None:
        """
        A transaction after a gap is queued; once the gap is filled both are mined in one block.
        """
        w3 = await self.start_node("--mining", "manual")
        later = await self.send_raw({"nonce": 1, "gasPrice": 0, "gas": 21000, "to": COW1, "value": 1})
        self.assertEqual((await self.rpc("txpool_status"))["result"], {"pending": 0, "queued": 1})
        first = await self.send_raw({"nonce": 0, "gasPrice": 0, "gas": 21000, "to": COW1, "value": 1})
        self.assertEqual((await self.rpc("txpool_status"))["result"], {"pending": 2, "queued": 0})
        await self.rpc("evm_mine")
        block = await self.blocking(w3.eth.get_block, "latest")
        self.assertEqual(block["transactions"], [first, later])

    async def test_pool_survives_restart(self) -> None:
        """
        Pending transactions are still in the pool after a restart on the same data.
        """
        await self.start_node("--mining", "manual")
        tx_hash = await self.send_raw({"nonce": 0, "gasPrice": 0, "gas": 21000, "to": COW1, "value": 1})
        datadir = self.datadir
        await self.stop_node()
        w3 = await self.start_node("--mining", "manual", datadir=datadir)
        for _ in range(100):
            status = (await self.rpc("txpool_status"))["result"]
            if status["pending"]:
                break
        self.assertEqual(status, {"pending": 1, "queued": 0})
        await self.rpc("evm_mine")
        self.assertEqual((await self.receipt(tx_hash))["status"], 1)
        self.assertEqual(await self.blocking(lambda: w3.eth.block_number), 1)

    async def test_stop_and_start_auto_mining(self) -> None:
        """
        In auto mode, evm_stopMining leaves new transactions pending; evm_mine still mines.
        """
        w3 = await self.start_node()
        await self.rpc("evm_stopMining")
        self.assertIs((await self.rpc("eth_mining"))["result"], False)
        tx_hash = await self.send_raw({"nonce": 0, "gasPrice": 0, "gas": 21000, "to": COW1, "value": 1})
        self.assertIsNone(await self.receipt(tx_hash))
        await self.rpc("evm_startMining")
        self.assertIs((await self.rpc("eth_mining"))["result"], True)
        await self.rpc("evm_mine")
        self.assertEqual((await self.receipt(tx_hash))["blockNumber"], 1)
        again = await self.send_raw({"nonce": 1, "gasPrice": 0, "gas": 21000, "to": COW1, "value": 1})
        self.assertEqual((await self.receipt(again))["blockNumber"], 2)

    async def test_off_mode(self) -> None:
        """
        A node with mining off accepts transactions and produces no blocks by itself.
        """
        w3 = await self.start_node("--mining", "off")
        self.assertIs((await self.rpc("eth_mining"))["result"], False)
        tx_hash = await self.send_raw({"nonce": 0, "gasPrice": 0, "gas": 21000, "to": COW1, "value": 1})
        self.assertIsNone(await self.receipt(tx_hash))
        self.assertEqual(await self.blocking(lambda: w3.eth.block_number), 0)

    async def test_interval_mode(self) -> None:
        """
        In interval mode the answer comes before the block; a later block mines the transaction.
        """
        from twisted.internet import reactor
        from twisted.internet.task import deferLater

        await self.start_node("--mining", "interval:0.2")
        self.assertIs((await self.rpc("eth_mining"))["result"], True)
        tx_hash = await self.send_raw({"nonce": 0, "gasPrice": 0, "gas": 21000, "to": COW1, "value": 1})
        receipt = None
        for _ in range(600):
            receipt = await self.receipt(tx_hash)
            if receipt is not None:
                break
            await deferLater(reactor, 0.05, lambda: None)
        self.assertIsNotNone(receipt, "no interval block mined the transaction")
        self.assertEqual(receipt["status"], 1)

    async def test_reorganisation(self) -> None:
        """
        A heavier side chain imported through the chain service becomes
        canonical: the canonical index and the receipts follow it, and the
        transaction only the abandoned block held is back in the pool, then
        mined again.
        """
        from nodex.structures.transactions import decode_transaction
        from tests.chain.test_processing import build_on

        w3 = await self.start_node("--mining", "manual")
        lost = await self.send_raw({"nonce": 0, "gasPrice": 0, "gas": 21000, "to": COW2, "value": 1})
        kept_signed = EthAccount.sign_transaction(
            {"chainId": 33, "nonce": 0, "gasPrice": 0, "gas": 21000, "to": COW2, "value": 2}, COW_KEYS[1]
        )
        kept = await self.blocking(w3.eth.send_raw_transaction, kept_signed.raw_transaction)
        await self.rpc("evm_mine")
        abandoned = await self.blocking(w3.eth.get_block, 1)
        self.assertEqual(set(abandoned["transactions"]), {lost, kept})

        chain = self.node.getServiceNamed("chain")
        genesis = (await chain.get_block_by_number(0)).header
        side = build_on(chain.store, genesis, [decode_transaction(bytes(kept_signed.raw_transaction))], chain.rules, extra_data=b"side")
        self.assertEqual(await import_one(chain, side.block), ImportResult.IMPORTED_NOT_BEST)
        heavier = build_on(chain.store, side.block.header, [], chain.rules, block_hashes={0: genesis.hash, 1: side.block.hash}.get)
        self.assertEqual(await import_one(chain, heavier.block), ImportResult.IMPORTED_BEST)

        self.assertEqual(await self.blocking(lambda: w3.eth.block_number), 2)
        self.assertEqual(bytes((await self.blocking(w3.eth.get_block, 1))["hash"]), side.block.hash)
        self.assertEqual(bytes((await self.receipt(kept))["blockHash"]), side.block.hash)
        self.assertIsNone(await self.receipt(lost))
        still_stored = (await self.rpc("eth_getBlockByHash", "0x" + bytes(abandoned["hash"]).hex(), False))["result"]
        self.assertEqual(still_stored["number"], "0x1")
        pooled = await self.blocking(w3.eth.get_transaction, lost)
        self.assertIsNone(pooled["blockHash"])
        self.assertEqual((await self.rpc("txpool_status"))["result"], {"pending": 1, "queued": 0})
        await self.rpc("evm_mine")
        self.assertEqual((await self.receipt(lost))["blockNumber"], 3)
