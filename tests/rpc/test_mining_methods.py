"""
Tests for L{nodex.rpc.mining_methods} (and C{eth_coinbase}/C{eth_mining} of
L{nodex.rpc.transaction_methods}) through the dispatcher, over a real work
service and chain on a memory store.
"""

import json
from typing import Any

from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from nodex.chain.seal.pow import search
from nodex.config import MODULES
from nodex.api.chain import ImportResult
from nodex.rpc.dispatch import Dispatcher
from nodex.rpc.mining_methods import MiningMethods
from nodex.rpc.registry import MethodRegistry, ModuleSettings
from nodex.rpc.transaction_methods import TransactionMethods
from nodex.services.chain import ChainService
from tests.chain import bitcoin_blocks as bb
from tests.chain.test_processing import sample_rules, sample_store
from tests.services.test_miner import FakePool
from tests.services.test_work import COINBASE, work_service


class ModeMiner:
    """
    The little of L{nodex.api.mining.IMiner} that C{eth_coinbase} and C{eth_mining} read.
    """

    coinbase = COINBASE

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.is_mining = mode in ("auto", "interval")


class MiningMethodsTests(SynchronousTestCase):
    """
    The C{mnr} methods and the C{eth} work and hash-rate methods.
    """

    def setUp(self) -> None:
        """
        A dispatcher over the mining methods of a chain at genesis.
        """
        self.clock = Clock()
        self.clock.advance(1000)
        store, self.genesis = sample_store()
        self.chain = ChainService(store, sample_rules(), self.clock)
        self.work = work_service(self.chain)
        self.miner = ModeMiner("off")
        registry = MethodRegistry({name: ModuleSettings(True) for name in MODULES})
        registry.add(MiningMethods(self.work))
        registry.add(TransactionMethods(self.chain, FakePool(), None, self.miner, self.work))  # type: ignore[arg-type]
        self.dispatcher = Dispatcher(registry, self.clock)

    def request(self, method: str, *params: Any) -> dict[str, Any]:
        """
        The whole response to one request.
        """
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}).encode()
        return json.loads(self.successResultOf(self.dispatcher.handle(body)))  # type: ignore[attr-defined]

    def call(self, method: str, *params: Any) -> Any:
        """
        The result of a request that must succeed.
        """
        response = self.request(method, *params)
        self.assertNotIn("error", response)
        return response["result"]

    def error(self, method: str, *params: Any) -> tuple[int, str]:
        """
        The code and message of a request that must fail.
        """
        response = self.request(method, *params)
        self.assertIn("error", response, f"{method} succeeded")
        return response["error"]["code"], response["error"]["message"]

    def work_block(self, others: int = 2) -> tuple[bytes, bytes, bytes, list[bytes]]:
        """
        A Bitcoin block sealing the current mnr work: the block, header, coinbase and ids.
        """
        work = self.call("mnr_getWork")
        coinbase = bb.tagged_coinbase(bytes.fromhex(work["blockHashForMergedMining"][2:]))
        raw, header, ids = bb.mined_block(coinbase, others, int(work["target"], 16))
        return raw, header, coinbase, ids

    def test_get_work_object(self) -> None:
        """
        mnr_getWork: the reference's members in its order; target of 64 digits, fees in decimal.
        """
        work = self.call("mnr_getWork")
        self.assertEqual(
            list(work), ["blockHashForMergedMining", "target", "feesPaidToMiner", "notify", "parentBlockHash"]
        )
        self.assertEqual(work["target"], "0x" + "55" * 32)
        self.assertEqual(work["feesPaidToMiner"], "0")
        self.assertIs(work["notify"], True)
        self.assertEqual(work["parentBlockHash"], "0x" + self.genesis.hash.hex())
        self.assertIs(self.call("mnr_getWork")["notify"], False)

    def test_submit_bitcoin_block(self) -> None:
        """
        A whole block in bare hex: the import outcome as hex ASCII, the block's hash and height.
        """
        raw, _header, _coinbase, _ids = self.work_block()
        answer = self.call("mnr_submitBitcoinBlock", raw.hex())
        self.assertEqual(list(answer), ["blockImportedResult", "blockHash", "blockIncludedHeight"])
        self.assertEqual(answer["blockImportedResult"], "0x494d504f525445445f42455354")
        self.assertEqual(answer["blockHash"], "0x" + self.chain.head.header.hash.hex())
        self.assertEqual(answer["blockIncludedHeight"], "0x1")
        again = self.call("mnr_submitBitcoinBlock", raw.hex())
        self.assertEqual(bytes.fromhex(again["blockImportedResult"][2:]).decode(), ImportResult.EXIST.value)

    def test_submit_transactions(self) -> None:
        """
        Header, coinbase and whitespace-separated display-order ids; the first argument is ignored.
        """
        _raw, header, coinbase, ids = self.work_block(4)
        answer = self.call(
            "mnr_submitBitcoinBlockTransactions", "ignored", header.hex(), coinbase.hex(),
            " ".join(txid[::-1].hex() for txid in ids),
        )
        self.assertEqual(answer["blockIncludedHeight"], "0x1")

    def test_submit_partial_merkle(self) -> None:
        """
        Header, coinbase, internal-order coinbase id and branch, and the count in bare hex.
        """
        _raw, header, coinbase, ids = self.work_block(10)
        hashes = " ".join(entry.hex() for entry in [ids[0]] + bb.branch(ids))
        answer = self.call(
            "mnr_submitBitcoinBlockPartialMerkle", "", header.hex(), coinbase.hex(), hashes, "b"
        )
        self.assertEqual(answer["blockIncludedHeight"], "0x1")

    def test_malformed_arguments(self) -> None:
        """
        A 0x prefix, odd or non-hex digits, a non-string: -32603 naming the argument.
        """
        raw, header, coinbase, ids = self.work_block()
        code, message = self.error("mnr_submitBitcoinBlock", "0x" + raw.hex())
        self.assertEqual(code, -32603)
        self.assertIn("without the 0x prefix", message)
        self.assertEqual(self.error("mnr_submitBitcoinBlock", raw.hex()[:-1])[0], -32603)
        self.assertEqual(self.error("mnr_submitBitcoinBlock", "zz")[0], -32603)
        self.assertEqual(self.error("mnr_submitBitcoinBlock", 5)[0], -32603)
        hashes = " ".join(entry.hex() for entry in [ids[0]] + bb.branch(ids))
        code, message = self.error(
            "mnr_submitBitcoinBlockPartialMerkle", "", header.hex(), coinbase.hex(), hashes, "0x3"
        )
        self.assertEqual((code, "blockTxnCountHex" in message), (-32603, True))
        self.assertEqual(self.error("mnr_submitBitcoinBlock")[0], -32602)

    def test_refused_submissions(self) -> None:
        """
        Truncated data, an empty merkle list and unknown work answer -33000.
        """
        raw, header, coinbase, _ids = self.work_block()
        self.assertEqual(self.error("mnr_submitBitcoinBlock", raw[:-5].hex())[0], -33000)
        self.assertEqual(
            self.error("mnr_submitBitcoinBlockPartialMerkle", "", header.hex(), coinbase.hex(), "  ", "1"),
            (-33000, "The list of merkle hashes can't be empty"),
        )
        stranger = bb.tagged_coinbase(b"\x42" * 32)
        raw, _header, _ids = bb.mined_block(stranger, 0, 2**255)
        code, message = self.error("mnr_submitBitcoinBlock", raw.hex())
        self.assertEqual(code, -33000)
        self.assertEqual(message, "Cannot publish block, could not find hash 0x" + "42" * 32 + " in the cache")

    def test_eth_work(self) -> None:
        """
        eth_getWork's three values; eth_submitWork true for a seal, false otherwise; wrong nonce size -32602.
        """
        pow_hash, seed, target = self.call("eth_getWork")
        self.assertEqual(seed, "0x" + "00" * 32)
        self.assertEqual(target, "0x" + "55" * 32)
        seal, _tried = search(bytes.fromhex(pow_hash[2:]), 1, 0, 1000)
        assert seal is not None
        nonce = "0x" + (seal.bitcoin_header[68:72] + seal.bitcoin_header[76:80]).hex()
        self.assertIs(self.call("eth_submitWork", nonce, "0x" + "11" * 32, "0x" + "00" * 32), False)
        self.assertIs(self.call("eth_submitWork", nonce, pow_hash, "0x" + "00" * 32), True)
        self.assertEqual(self.chain.head.header.number, 1)
        self.assertEqual(self.error("eth_submitWork", "0x00", pow_hash, "0x" + "00" * 32)[0], -32602)

    def test_hashrates(self) -> None:
        """
        eth_submitHashrate adds to eth_hashrate; eth_netHashrate is a JSON number.
        """
        self.assertEqual(self.call("eth_hashrate"), "0x0")
        self.assertIs(self.call("eth_submitHashrate", "0x" + "00" * 31 + "64", "0x" + "ab" * 32), True)
        self.assertEqual(self.call("eth_hashrate"), "0x64")
        self.assertEqual(self.error("eth_submitHashrate", "0x" + "00" * 33, "0x" + "ab" * 32)[0], -32602)
        self.assertEqual(self.call("eth_netHashrate"), 0)

    def test_coinbase_and_mining(self) -> None:
        """
        A node that does not mine answers the zero address and false; one that does, its coinbase.
        """
        self.assertEqual(self.call("eth_coinbase"), "0x" + "00" * 20)
        self.assertIs(self.call("eth_mining"), False)
        self.miner.mode, self.miner.is_mining = "auto", True
        self.assertEqual(self.call("eth_coinbase"), "0x" + COINBASE.hex())
        self.assertIs(self.call("eth_mining"), True)
        self.miner.mode, self.miner.is_mining = "off", False
        self.work.cpu_mining = lambda: True
        self.assertEqual(self.call("eth_coinbase"), "0x" + COINBASE.hex())
        self.assertIs(self.call("eth_mining"), True)
