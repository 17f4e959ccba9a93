"""
The issue-5 providers over the real services, run synchronously: the
regtest genesis in a L{MemoryStore}, L{ChainService} without threads, the
real L{Miner} (manual mode) and L{TransactionPool}.  The same requests as
the fake-chain tests, where the fake cannot be faithful: real blocks,
receipts with logs, contract addresses, block sizes and roots.
"""

import json
from pathlib import Path
from typing import Any

from twisted.internet.defer import maybeDeferred
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from nodex.chain.genesis import genesis_spec_from_mapping, initialize_chain
from nodex.chain.networks import REGTEST_MINER_ADDRESS, chain_rules
from nodex.config import load_config
from nodex.crypto import keccak256
from nodex.db.memory import MemoryStore
from nodex.rpc.chain_methods import ChainMethods
from nodex.rpc.dispatch import Dispatcher
from nodex.rpc.evm_methods import EvmMethods
from nodex.rpc.registry import MODULES, MethodRegistry, ModuleSettings
from nodex.rpc.transaction_methods import TransactionMethods
from nodex.rpc.txpool import TxPoolMethods
from nodex.services.accounts import Wallet
from nodex.services.chain import ChainService
from nodex.services.blocktime import BlockClock
from nodex.services.miner import Miner
from nodex.services.pool import TransactionPool
from nodex.structures.transactions import LegacyTransaction, sign_transaction

CONTRACTS = Path(__file__).resolve().parent.parent / "data" / "contracts"
TRANSFER_TOPIC = "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"

COW_KEY = keccak256(b"cow")
COW = "0xcd2a3d9f938e13cd947ec05abc7fe734df8dd826"
COW1 = bytes.fromhex("7986b3df570230288501eea3d890bd66948c9b79")


def token_creation() -> bytes:
    """
    The test token's creation code with the constructor arguments ("Token", "TOK", 1000).
    """
    artifact = json.loads((CONTRACTS / "Token.json").read_text())
    arguments = (
        (96).to_bytes(32, "big") + (160).to_bytes(32, "big") + (1000).to_bytes(32, "big")
        + (5).to_bytes(32, "big") + b"Token".ljust(32, b"\x00")
        + (3).to_bytes(32, "big") + b"TOK".ljust(32, b"\x00")
    )
    return bytes.fromhex(artifact["bytecode"][2:]) + arguments


class RealServicesTests(SynchronousTestCase):
    """
    The providers over the real chain service, miner and pool.
    """

    def setUp(self) -> None:
        """
        A regtest chain in memory with a manual miner and the dev accounts.
        """
        config = load_config(None, {"datadir": self.mktemp()})
        store = MemoryStore()
        initialize_chain(store, "regtest", genesis_spec_from_mapping(config.genesis))
        clock = Clock()
        clock.advance(1_700_000_000)
        self.chain = ChainService(store, chain_rules("regtest", 33), clock)
        self.pool = TransactionPool(self.chain, store, maybeDeferred)
        self.miner = Miner(self.chain, self.pool, REGTEST_MINER_ADDRESS, "manual", clock, BlockClock(clock, self.chain.rules))
        accounts = Wallet.regtest(33, Clock(), announce=False)
        registry = MethodRegistry({name: ModuleSettings(True) for name in MODULES})
        registry.add(ChainMethods(self.chain, self.pool))
        registry.add(TransactionMethods(self.chain, self.pool, accounts, self.miner))
        registry.add(TxPoolMethods(self.pool))
        registry.add(EvmMethods(self.chain, self.pool, self.miner))
        self.dispatcher = Dispatcher(registry, clock)

    def call(self, method: str, *params: Any) -> Any:
        """
        The result of a request that must succeed.
        """
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}).encode()
        response = json.loads(self.successResultOf(self.dispatcher.handle(body)))
        self.assertNotIn("error", response)
        return response["result"]

    def test_token_deploy_and_transfer(self) -> None:
        """
        A deployment and a transfer mined together: contract address, logs
        with block-wide indexes, gas used, and a block whose size is its encoding's.
        """
        deploy = sign_transaction(LegacyTransaction(0, 0, 3_000_000, b"", 0, token_creation()), COW_KEY, 33)
        sender = bytes.fromhex(COW[2:])
        token = keccak256(bytes([0xD6, 0x94]) + sender + b"\x80")[12:]
        selector = keccak256(b"transfer(address,uint256)")[:4]
        call = selector + COW1.rjust(32, b"\x00") + (7).to_bytes(32, "big")
        transfer = sign_transaction(LegacyTransaction(1, 0, 100_000, token, 0, call), COW_KEY, 33)
        for tx in (deploy, transfer):
            self.call("eth_sendRawTransaction", "0x" + tx.encode().hex())
        self.assertEqual(self.call("txpool_status"), {"pending": 2, "queued": 0})
        self.assertIsNone(self.call("evm_mine"))
        self.assertEqual(self.call("txpool_status"), {"pending": 0, "queued": 0})
        created = self.call("eth_getTransactionReceipt", "0x" + deploy.hash.hex())
        self.assertEqual((created["contractAddress"], created["to"], created["status"]), ("0x" + token.hex(), None, "0x1"))
        moved = self.call("eth_getTransactionReceipt", "0x" + transfer.hash.hex())
        self.assertEqual(moved["status"], "0x1")
        self.assertEqual(int(moved["cumulativeGasUsed"], 16), int(created["gasUsed"], 16) + int(moved["gasUsed"], 16))
        self.assertEqual([log["logIndex"] for log in created["logs"] + moved["logs"]], ["0x0", "0x1"])
        log = moved["logs"][0]
        self.assertEqual(
            (log["removed"], log["address"], log["topics"][0], log["transactionIndex"], log["data"]),
            (False, "0x" + token.hex(), "0x" + TRANSFER_TOPIC, "0x1", "0x" + (7).to_bytes(32, "big").hex()),
        )
        block = self.chain.head
        encoded = self.call("eth_getBlockByNumber", "latest", True)
        self.assertEqual(encoded["hash"], "0x" + block.header.hash.hex())
        self.assertEqual(encoded["transactionsRoot"], "0x" + block.header.transactions_root.hex())
        self.assertEqual(encoded["totalDifficulty"], hex(block.total_difficulty))
        stored = self.successResultOf(self.chain.get_block_by_number(1))
        self.assertEqual(encoded["size"], hex(len(stored.encode())))
        self.assertEqual(encoded["bitcoinMergedMiningHeader"], "0x" + stored.header.bitcoin_merged_mining_header.hex())
        self.assertEqual(len(bytes.fromhex(encoded["bitcoinMergedMiningHeader"][2:])), 80)
        self.assertEqual([r["transactionHash"] for r in self.call("eth_getBlockReceipts", "latest")], [created["transactionHash"], moved["transactionHash"]])

    def test_send_transaction_and_revert(self) -> None:
        """
        eth_sendTransaction from a cow, mined, then undone by evm_revert.
        """
        snapshot = self.call("evm_snapshot")
        tx_hash = self.call("eth_sendTransaction", {"from": COW, "to": "0x" + COW1.hex(), "value": "0x1"})
        self.assertEqual(self.call("eth_getTransactionByHash", tx_hash)["blockHash"], None)
        self.call("evm_mine")
        self.assertEqual(self.call("eth_getTransactionByHash", tx_hash)["blockNumber"], "0x1")
        self.assertIs(self.call("evm_revert", snapshot), True)
        self.assertEqual(self.call("eth_blockNumber"), "0x0")
        self.assertIsNone(self.call("eth_getTransactionReceipt", tx_hash))
        self.assertIsNone(self.call("eth_getTransactionByHash", tx_hash))
        again = self.call("eth_sendTransaction", {"from": COW, "to": "0x" + COW1.hex(), "value": "0x1"})
        self.assertEqual(again, tx_hash)

    def test_increase_time(self) -> None:
        """
        The next block's timestamp carries the accumulated shift.
        """
        before = int(self.call("eth_getBlockByNumber", "latest", False)["timestamp"], 16)
        self.call("evm_increaseTime", "0x100")
        self.call("evm_mine")
        after = int(self.call("eth_getBlockByNumber", "latest", False)["timestamp"], 16)
        self.assertGreaterEqual(after, max(before + 1, 1_700_000_000 + 0x100))
