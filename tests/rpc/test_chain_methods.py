"""
Tests for L{nodex.rpc.chain_methods}, through the JSON-RPC envelope, with
a fake chain, the real pool, the regtest dev accounts and a fake miner.
"""

import json
from typing import Any

from twisted.internet.defer import Deferred, succeed
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase
from zope.interface import implementer
from zope.interface.verify import verifyObject

from nodex.api.conventions import REFERENCE_CONVENTIONS, Conventions
from nodex.api.mining import IMiner
from nodex.primitives import Address
from nodex.rpc.chain_methods import ChainMethods
from nodex.rpc.dispatch import Dispatcher
from nodex.rpc.evm_methods import EvmMethods
from nodex.rpc.registry import MODULES, MethodRegistry, ModuleSettings
from nodex.rpc.transaction_methods import TransactionMethods
from nodex.rpc.txpool import TxPoolMethods
from nodex.services.accounts import Wallet
from nodex.structures.blocks import Block
from nodex.structures.headers import Header
from nodex.structures.transactions import Transaction
from tests.services.test_pool import ADDRESSES, KEYS, RECIPIENT, PoolFixture, legacy, make_header

MINER_ADDRESS = Address(bytes.fromhex("ec4ddeb4380ad69b3e509baad9f158cdf4e4681d"))


@implementer(IMiner)
class FakeMiner:
    """
    A miner that puts every pending transaction of the pool into a block of
    the fake chain, in C{auto} mode when asked to.
    """

    def __init__(self, fixture: "RPCFixture", auto: bool) -> None:
        """
        A miner over the fixture's chain and pool.
        """
        self.fixture = fixture
        self.coinbase = MINER_ADDRESS
        self.mode = "auto" if auto else "manual"
        self.is_mining = auto
        self.offset = 0
        self.mined: list[Block] = []

    def mine(self, empty: bool = True) -> Deferred[Block]:
        """
        Adopt a block of every pending transaction (empty or not).
        """
        block = self.fixture.chain.adopt(tuple(self.fixture.pool.pending()))
        self.mined.append(block)
        return succeed(block)

    @property
    def due_now(self) -> bool:
        """
        The fake chain has no drift limit.
        """
        return True

    def mine_alone(self, transaction: Transaction, admission: Any) -> Deferred[tuple[int, int] | None]:
        """
        Adopt a block of C{transaction} (the fixture's transactions are valid).
        """
        block = self.fixture.chain.adopt((transaction,))
        self.mined.append(block)
        return succeed(None)

    def start(self) -> None:
        """
        Mine automatically.
        """
        self.is_mining = True

    def stop(self) -> None:
        """
        Stop mining automatically.
        """
        self.is_mining = False

    def increase_time(self, seconds: int) -> int:
        """
        Accumulate a time offset.
        """
        self.offset += seconds
        return self.offset

    def chain_time(self) -> int:
        """
        The fake clock reads 1000 plus the offset.
        """
        return 1000 + self.offset

    def set_chain_time(self, timestamp: int) -> None:
        """
        Put the fake clock's offset where C{timestamp} is now.
        """
        self.offset = timestamp - 1000

    def on_pending(self, transaction: Any) -> Deferred[Block] | None:
        """
        The pool observer of C{auto} mode.
        """
        return self.mine() if self.is_mining and self.mode == "auto" else None


class RPCFixture(PoolFixture):
    """
    A dispatcher serving the issue-5 providers over a fake chain.
    """

    def make_node(
        self, auto: bool = True, impersonation: Any = None, conventions: Conventions = REFERENCE_CONVENTIONS,
        **options: Any,
    ) -> None:
        """
        Build C{self.pool}, C{self.chain}, C{self.miner}, C{self.accounts}, C{self.dispatcher}.

        @param impersonation: a dev chain's impersonated accounts, if any.
        """
        if impersonation is not None:
            options["impersonating"] = impersonation.is_impersonated
        self.pool = self.make_pool(**options)
        self.miner = FakeMiner(self, auto)
        self.pool.add_observer(self.miner.on_pending)
        self.accounts = Wallet.regtest(33, Clock(), announce=False)
        registry = MethodRegistry({name: ModuleSettings(True) for name in MODULES})
        registry.add(ChainMethods(self.chain, self.pool))
        registry.add(TransactionMethods(self.chain, self.pool, self.accounts, self.miner, None, impersonation))
        registry.add(TxPoolMethods(self.pool, conventions))
        registry.add(EvmMethods(self.chain, self.pool, self.miner, conventions))
        self.dispatcher = Dispatcher(registry, Clock())

    def request(self, method: str, *params: Any) -> dict[str, Any]:
        """
        The whole response to one request.
        """
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}).encode()
        answer = self.successResultOf(self.dispatcher.handle(body))  # type: ignore[attr-defined]
        return json.loads(answer)

    def call(self, method: str, *params: Any) -> Any:
        """
        The result of a request that must succeed.
        """
        response = self.request(method, *params)
        if "error" in response:
            raise AssertionError(f"{method} failed: {response['error']}")
        return response["result"]

    def error(self, method: str, *params: Any) -> tuple[int, str]:
        """
        The code and message of a request that must fail.
        """
        response = self.request(method, *params)
        if "error" not in response:
            raise AssertionError(f"{method} succeeded: {response['result']}")
        return response["error"]["code"], response["error"]["message"]


def hexed(value: bytes) -> str:
    """
    C{0x} and the hex of C{value}.
    """
    return "0x" + value.hex()


class ChainMethodsTests(RPCFixture, SynchronousTestCase):
    """
    The block, transaction and receipt lookups.
    """

    def setUp(self) -> None:
        """
        A node in manual mode with one block of two transfers.
        """
        self.make_node(auto=False)
        self.first, self.second = legacy(0), legacy(0, key=KEYS[1], value=5)
        self.block = self.chain.adopt((self.first, self.second))

    def test_miner_fake_interface(self) -> None:
        """
        The fake miner provides L{IMiner}, so the tests' miner is faithful.
        """
        self.assertTrue(verifyObject(IMiner, self.miner))

    def test_block_number(self) -> None:
        """
        eth_blockNumber is the head's number.
        """
        self.assertEqual(self.call("eth_blockNumber"), "0x1")

    def test_syncing(self) -> None:
        """
        eth_syncing is false.
        """
        self.assertIs(self.call("eth_syncing"), False)

    def test_block_by_number_member_order(self) -> None:
        """
        The block object has the specification's members in order, then the reference's extras.
        """
        block = self.call("eth_getBlockByNumber", "0x1", False)
        self.assertEqual(
            list(block),
            [
                "number", "hash", "parentHash", "nonce", "sha3Uncles", "logsBloom", "transactionsRoot",
                "stateRoot", "receiptsRoot", "miner", "difficulty", "cumulativeDifficulty", "totalDifficulty",
                "extraData", "size", "gasLimit", "gasUsed", "timestamp", "transactions", "uncles", "mixHash",
                "minimumGasPrice", "bitcoinMergedMiningHeader", "bitcoinMergedMiningCoinbaseTransaction",
                "bitcoinMergedMiningMerkleProof", "hashForMergedMining", "paidFees", "baseFeePerGas",
            ],
        )
        self.assertEqual(block["hash"], hexed(self.block.hash))
        self.assertEqual(block["nonce"], "0x0000000000000000")
        self.assertEqual(block["mixHash"], "0x" + "00" * 32)
        self.assertEqual(block["transactions"], [hexed(self.first.hash), hexed(self.second.hash)])
        self.assertEqual(block["totalDifficulty"], "0x2")
        self.assertEqual(block["size"], hex(len(self.block.encode())))
        self.assertEqual(block["gasUsed"], hex(42000))

    def test_block_tags_and_unknown(self) -> None:
        """
        latest and earliest resolve; a number above the head and an unknown hash answer null.
        """
        self.assertEqual(self.call("eth_getBlockByNumber", "latest", False)["number"], "0x1")
        self.assertEqual(self.call("eth_getBlockByNumber", "earliest", False)["number"], "0x0")
        self.assertIsNone(self.call("eth_getBlockByNumber", "0x999999", False))
        self.assertIsNone(self.call("eth_getBlockByHash", "0x" + "ab" * 32, True))

    def test_pending_refused(self) -> None:
        """
        The partially supported methods refuse pending with -32201.
        """
        message = "The method doesn't support 'pending' as a parameter yet"
        for method, params in [
            ("eth_getBlockByNumber", ["pending", False]),
            ("eth_getUncleCountByBlockNumber", ["pending"]),
            ("eth_getTransactionByBlockNumberAndIndex", ["pending", "0x0"]),
            ("eth_getUncleByBlockNumberAndIndex", ["pending", "0x0"]),
        ]:
            self.assertEqual(self.error(method, *params), (-32201, message))

    def test_full_transactions(self) -> None:
        """
        With true, the block lists transaction objects with their positions.
        """
        block = self.call("eth_getBlockByHash", hexed(self.block.hash), True)
        second = block["transactions"][1]
        self.assertEqual(second["hash"], hexed(self.second.hash))
        self.assertEqual(second["transactionIndex"], "0x1")
        self.assertEqual(second["blockHash"], hexed(self.block.hash))
        self.assertEqual(second["from"], hexed(ADDRESSES[1]))

    def test_bad_params(self) -> None:
        """
        Missing, extra and malformed parameters answer -32602 naming the argument.
        """
        self.assertEqual(self.error("eth_getBlockByNumber", "0x1"), (-32602, "missing value for required argument 1"))
        self.assertEqual(self.error("eth_blockNumber", 1)[0], -32602)
        code, message = self.error("eth_getBlockByHash", "0x1234", False)
        self.assertEqual((code, message), (-32602, "invalid argument 0: hex string has length 4, want 64 for hash"))
        code, message = self.error("eth_getBlockByNumber", "0x1", "yes")
        self.assertEqual((code, message), (-32602, "invalid argument 1: want a boolean, got a string"))

    def test_transaction_counts(self) -> None:
        """
        The counts by hash and number; null for an unknown block, by hash or by number.
        """
        self.assertEqual(self.call("eth_getBlockTransactionCountByHash", hexed(self.block.hash)), "0x2")
        self.assertIsNone(self.call("eth_getBlockTransactionCountByHash", "0x" + "ab" * 32))
        self.assertEqual(self.call("eth_getBlockTransactionCountByNumber", "0x1"), "0x2")
        self.assertEqual(self.call("eth_getBlockTransactionCountByNumber", "0x0"), "0x0")
        self.assertIsNone(self.call("eth_getBlockTransactionCountByNumber", "0x5"))

    def test_pending_transaction_count(self) -> None:
        """
        The count of the pending block is the pool's pending transactions.
        """
        self.successResultOf(self.pool.add(legacy(0, key=KEYS[2])))
        self.assertEqual(self.call("eth_getBlockTransactionCountByNumber", "pending"), "0x1")

    def test_uncle_counts(self) -> None:
        """
        Uncle counts; null for an unknown block, as the other methods that
        answer a block or a part of one.
        """
        self.assertEqual(self.call("eth_getUncleCountByBlockHash", hexed(self.block.hash)), "0x0")
        self.assertEqual(self.call("eth_getUncleCountByBlockNumber", "latest"), "0x0")
        self.assertIsNone(self.call("eth_getUncleCountByBlockHash", "0x" + "ab" * 32))
        self.assertIsNone(self.call("eth_getUncleCountByBlockNumber", "0x7"))

    def test_uncles(self) -> None:
        """
        An uncle lookup answers the uncle's header as a block without transactions; out of range is null.
        """
        uncle = make_header(1, self.chain.canonical[0], extra_data=b"uncle")
        parent = self.chain.head.header
        header = make_header(2, parent.hash, uncles_hash=b"\x11" * 32, uncle_count=1)
        block = Block(header, (), (uncle,))
        self.chain.blocks[block.hash] = block
        self.chain.canonical.append(block.hash)
        found = self.call("eth_getUncleByBlockHashAndIndex", hexed(block.hash), "0x0")
        self.assertEqual((found["hash"], found["transactions"], found["uncles"]), (hexed(uncle.hash), [], []))
        self.assertEqual(found["extraData"], hexed(b"uncle"))
        self.assertEqual(self.call("eth_getUncleByBlockNumberAndIndex", "0x2", "0x0")["hash"], hexed(uncle.hash))
        self.assertIsNone(self.call("eth_getUncleByBlockNumberAndIndex", "0x2", "0x1"))
        self.assertIsNone(self.call("eth_getUncleByBlockHashAndIndex", "0x" + "ab" * 32, "0x0"))
        self.assertEqual(self.call("eth_getUncleCountByBlockHash", hexed(block.hash)), "0x1")
        self.assertEqual(self.call("eth_getBlockByHash", hexed(block.hash), False)["uncles"], [hexed(uncle.hash)])

    def test_transaction_by_hash(self) -> None:
        """
        A mined transaction with its block; a pooled one with null block members; unknown is null.
        """
        mined = self.call("eth_getTransactionByHash", hexed(self.first.hash))
        self.assertEqual(
            list(mined),
            [
                "blockHash", "blockNumber", "from", "gas", "gasPrice", "hash", "input", "nonce", "to",
                "transactionIndex", "value", "v", "r", "s", "type", "chainId",
            ],
        )
        self.assertEqual((mined["blockNumber"], mined["transactionIndex"]), ("0x1", "0x0"))
        self.assertIn(mined["v"], ("0x65", "0x66"))
        pooled_tx = legacy(1)
        self.successResultOf(self.pool.add(pooled_tx))
        pooled = self.call("eth_getTransactionByHash", hexed(pooled_tx.hash))
        self.assertEqual((pooled["blockHash"], pooled["blockNumber"], pooled["transactionIndex"]), (None, None, None))
        self.assertIsNone(self.call("eth_getTransactionByHash", "0x" + "ab" * 32))

    def test_transaction_by_position(self) -> None:
        """
        Transactions by block hash or number and index; out of range is null.
        """
        by_hash = self.call("eth_getTransactionByBlockHashAndIndex", hexed(self.block.hash), "0x1")
        self.assertEqual(by_hash["hash"], hexed(self.second.hash))
        by_number = self.call("eth_getTransactionByBlockNumberAndIndex", "latest", "0x0")
        self.assertEqual(by_number["hash"], hexed(self.first.hash))
        self.assertIsNone(self.call("eth_getTransactionByBlockNumberAndIndex", "0x1", "0x2"))
        self.assertIsNone(self.call("eth_getTransactionByBlockHashAndIndex", "0x" + "ab" * 32, "0x0"))
        self.assertEqual(self.error("eth_getTransactionByBlockHashAndIndex", hexed(self.block.hash), "1")[0], -32602)

    def test_receipt(self) -> None:
        """
        The receipt has the specification's members in order, then type; unknown is null.
        """
        receipt = self.call("eth_getTransactionReceipt", hexed(self.second.hash))
        self.assertEqual(
            list(receipt),
            [
                "transactionHash", "transactionIndex", "blockHash", "blockNumber", "from", "to",
                "cumulativeGasUsed", "gasUsed", "contractAddress", "logs", "logsBloom", "effectiveGasPrice",
                "status", "type",
            ],
        )
        self.assertEqual((receipt["cumulativeGasUsed"], receipt["gasUsed"]), (hex(42000), hex(21000)))
        self.assertEqual((receipt["status"], receipt["to"], receipt["contractAddress"]), ("0x1", hexed(RECIPIENT), None))
        self.assertIsNone(self.call("eth_getTransactionReceipt", "0x" + "ab" * 32))

    def test_block_receipts(self) -> None:
        """
        eth_getBlockReceipts by number, tag or hash; null for an unknown block.
        """
        by_number = self.call("eth_getBlockReceipts", "0x1")
        self.assertEqual([r["transactionHash"] for r in by_number], [hexed(self.first.hash), hexed(self.second.hash)])
        self.assertEqual(self.call("eth_getBlockReceipts", hexed(self.block.hash)), by_number)
        self.assertEqual(self.call("eth_getBlockReceipts", "latest"), by_number)
        self.assertIsNone(self.call("eth_getBlockReceipts", "0x9"))
        self.assertIsNone(self.call("eth_getBlockReceipts", "0x" + "ab" * 32))


class HeaderForTests(SynchronousTestCase):
    """
    The fixture's headers are real headers.
    """

    def test_header(self) -> None:
        """
        L{make_header} builds a L{Header} that encodes and decodes.
        """
        header = make_header(3, b"\x01" * 32)
        self.assertEqual(Header.decode(header.encode()), header)


class BadInputPropertyTests(RPCFixture, SynchronousTestCase):
    """
    No parameters, however wrong, make an issue-5 method crash.
    """

    def test_never_internal_error(self) -> None:
        """
        Random JSON parameters to every method answer a result or a
        deliberate error, never -32603.
        """
        from hypothesis import HealthCheck, given, settings
        from hypothesis import strategies as st

        self.make_node(auto=True)
        names = sorted(
            method.name
            for provider in (
                ChainMethods(self.chain, self.pool),
                TransactionMethods(self.chain, self.pool, self.accounts, self.miner),
                TxPoolMethods(self.pool),
                EvmMethods(self.chain, self.pool, self.miner),
            )
            for method in provider.rpc_methods()
        )
        scalars = st.one_of(
            st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.text(max_size=70),
            st.sampled_from(["0x", "0x0", "0x1", "latest", "pending", "earliest", "0x" + "ab" * 32, "0x" + "cd" * 20, "0xc0", "0x03c0"]),
        )
        values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["from", "to", "gas", "value", "data", "nonce", "type", "accessList", "blockHash"]), inner, max_size=3), max_leaves=6)

        @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
        @given(st.sampled_from(names), st.lists(values, max_size=3))
        def check(name: str, params: list) -> None:
            response = self.request(name, *params)
            if "error" in response:
                self.assertNotEqual(response["error"]["code"], -32603, (name, params, response))

        check()


class ConcurrentSendTests(RPCFixture, SynchronousTestCase):
    """
    Sends from one account that overlap (C{Promise.all} in a Hardhat
    fixture) each get their own nonce (issue 27).
    """

    def setUp(self) -> None:
        """
        A manually mined node whose pool reads and checks wait until the test runs them.
        """
        from tests.services.test_pool import QueuedThread

        self.make_node(auto=False)
        self.checks = QueuedThread()
        self.pool._run_in_thread = self.checks.run  # type: ignore[method-assign]

    def send(self, method: str, *params: Any) -> Deferred[bytes]:
        """
        Start one request; its Deferred fires with the response body.
        """
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}).encode()
        return self.dispatcher.handle(body)  # type: ignore[no-any-return]

    def test_overlapping_sends_get_consecutive_nonces(self) -> None:
        """
        Three identical sends started together are three transactions with
        nonces 0, 1 and 2, all pending: none is refused as a duplicate.
        """
        sender = "0x" + ADDRESSES[0].hex()
        request = {"from": sender, "to": "0x" + RECIPIENT.hex(), "value": "0x1"}
        sending = [self.send("eth_sendTransaction", request) for _ in range(3)]
        while self.checks.jobs:
            self.checks.flush()
        answers = [json.loads(self.successResultOf(deferred)) for deferred in sending]
        self.assertEqual([answer.get("error") for answer in answers], [None, None, None])
        self.assertEqual(sorted(tx.nonce for tx in self.pool.pending()), [0, 1, 2])
        self.assertEqual(self.successResultOf(self.pool.next_nonce(ADDRESSES[0])), 3)


class EstimatedGasTests(RPCFixture, SynchronousTestCase):
    """
    Under the Ethereum conventions a request without gas is sent with the
    estimate (Anvil's rule), and a request whose estimate reverts answers
    geth's revert error.
    """

    def setUp(self) -> None:
        """
        A manually mined node whose sends are estimated by C{self.estimate}.
        """
        from nodex.rpc.transaction_methods import TransactionSending

        self.make_node(auto=False)
        self.estimates: list[Any] = []
        sending = TransactionSending(self.pool, 33, self.estimate)
        registry = MethodRegistry({name: ModuleSettings(True) for name in MODULES})
        registry.add(TransactionMethods(self.chain, self.pool, self.accounts, self.miner, sending=sending))
        self.dispatcher = Dispatcher(registry, Clock())
        self.answer: Any = 30_123

    def estimate(self, request: Any) -> Deferred[int]:
        """
        Record the request; answer C{self.answer} (or fail with it).
        """
        from twisted.internet.defer import fail

        self.estimates.append(request)
        if isinstance(self.answer, Exception):
            return fail(self.answer)
        return succeed(self.answer)

    def test_gas_estimated(self) -> None:
        """
        Without gas, the transaction carries the estimate; with gas, no estimate is made.
        """
        sender = "0x" + ADDRESSES[0].hex()
        self.call("eth_sendTransaction", {"from": sender, "to": "0x" + RECIPIENT.hex(), "value": "0x1"})
        self.assertEqual(self.pool.pending()[0].gas, 30_123)
        self.assertEqual(self.estimates[0].sender, ADDRESSES[0])
        self.call("eth_sendTransaction", {"from": sender, "to": "0x" + RECIPIENT.hex(), "gas": "0x5208"})
        self.assertEqual((len(self.estimates), self.pool.pending()[1].gas), (1, 21000))

    def test_revert(self) -> None:
        """
        A reverting estimate is geth's code 3 with the reason and the payload.
        """
        from nodex.api.errors import ExecutionRevertedError

        payload = bytes.fromhex("08c379a0") + (32).to_bytes(32, "big") + (4).to_bytes(32, "big") + b"nope".ljust(32, b"\0")
        self.answer = ExecutionRevertedError(payload)
        error = self.request("eth_sendTransaction", {"from": "0x" + ADDRESSES[0].hex(), "to": "0x" + RECIPIENT.hex()})["error"]
        self.assertEqual((error["code"], error["message"], error["data"]), (3, "execution reverted: nope", "0x" + payload.hex()))
        self.assertEqual(len(self.pool), 0)


class PendingBlockTests(RPCFixture, SynchronousTestCase):
    """
    The methods the specification lets refuse C{pending}: refused by the
    reference's conventions, the pending block under the Ethereum ones.
    """

    def setUp(self) -> None:
        """
        A node whose pending block holds one transaction.
        """
        from nodex.structures.blocks import Block as PlainBlock

        self.make_node(auto=False)
        head = self.chain.head.header
        self.transaction = legacy(0)
        self.block = PlainBlock(make_header(head.number + 1, head.hash, difficulty=1), (self.transaction,))

        class Pending:
            def __init__(self, block: Any) -> None:
                self.kept = block

            def block(self) -> Deferred[Any]:
                return succeed(type("PendingBlock", (), {"block": self.kept})())

            def header(self) -> Deferred[Any]:
                return succeed(self.kept.header)

        self.pending = Pending(self.block)

    def serve(self, conventions: Conventions) -> None:
        """
        Serve the chain methods with the pending block and C{conventions}.
        """
        registry = MethodRegistry({name: ModuleSettings(True) for name in MODULES})
        registry.add(ChainMethods(self.chain, self.pool, None, self.pending, conventions))  # type: ignore[arg-type]
        self.dispatcher = Dispatcher(registry, Clock())

    def test_refused_by_the_reference_conventions(self) -> None:
        """
        -32201 from the four chain methods.
        """
        self.serve(REFERENCE_CONVENTIONS)
        for method, params in (
            ("eth_getBlockByNumber", ("pending", False)), ("eth_getUncleCountByBlockNumber", ("pending",)),
            ("eth_getUncleByBlockNumberAndIndex", ("pending", "0x0")),
            ("eth_getTransactionByBlockNumberAndIndex", ("pending", "0x0")),
        ):
            self.assertEqual(self.error(method, *params)[0], -32201, method)

    def test_pending_block_under_ethereum_conventions(self) -> None:
        """
        The pending block: the next number, its transactions, its uncles.
        """
        from nodex.api.conventions import ETHEREUM_CONVENTIONS

        self.serve(ETHEREUM_CONVENTIONS)
        block = self.call("eth_getBlockByNumber", "pending", False)
        self.assertEqual(
            (block["number"], block["transactions"], block["parentHash"]),
            (hex(self.block.number), [hexed(self.transaction.hash)], hexed(self.chain.head.header.hash)),
        )
        self.assertEqual(self.call("eth_getUncleCountByBlockNumber", "pending"), "0x0")
        self.assertIsNone(self.call("eth_getUncleByBlockNumberAndIndex", "pending", "0x0"))
        found = self.call("eth_getTransactionByBlockNumberAndIndex", "pending", "0x0")
        self.assertEqual(found["hash"], hexed(self.transaction.hash))
