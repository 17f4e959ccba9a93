"""
Tests for L{nodex.rpc.state_methods} and L{nodex.rpc.fee_methods}, through the
JSON-RPC envelope, with the real state service over a memory store and a
fake chain.
"""

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from twisted.internet.defer import Deferred, maybeDeferred, succeed
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from nodex.api.chain import ChainEvent, ChainHead, ReceiptView, TransactionLocation
from nodex.api.conventions import ETHEREUM_CONVENTIONS
from nodex.rpc.dispatch import Dispatcher
from nodex.rpc.fee_methods import FeeMethods, rewards
from nodex.rpc.registry import MODULES, MethodRegistry, ModuleSettings
from nodex.rpc.state_methods import StateMethods
from nodex.services.state import StateService
from nodex.structures.blocks import Block
from nodex.structures.receipts import Receipt
from tests.chain.test_calls import PANIC_SELECTOR, REVERTER, STORAGE, runtime, selector, word
from tests.services.test_state import ALICE, build_store

PRECOMPILE = "0x" + "00" * 19 + "01"


def hexed(value: bytes) -> str:
    """
    C{0x} and the hex of C{value}.
    """
    return "0x" + value.hex()


class FakeChain:
    """
    The reads of L{nodex.api.chain.IChainService} the state, fee and filter
    methods use, over a list of canonical blocks and their receipts.
    """

    chain_id = 33

    def __init__(self, blocks: list[Block], receipts: list[tuple[Receipt, ...]] | None = None) -> None:
        """
        Make C{blocks} the canonical chain (the last one the head).
        """
        self.blocks = blocks
        self.receipts = receipts or [() for _ in blocks]
        self.by_hash = {block.hash: index for index, block in enumerate(blocks)}
        self.observers: list[Callable[[ChainEvent], None]] = []

    @property
    def head(self) -> ChainHead:
        """
        The last block.
        """
        return ChainHead(self.blocks[-1].header, len(self.blocks))

    def get_block_by_hash(self, block_hash: bytes) -> Deferred[Block | None]:
        """
        A block by hash.
        """
        index = self.by_hash.get(block_hash)
        return succeed(None if index is None else self.blocks[index])

    def get_block_by_number(self, number: int) -> Deferred[Block | None]:
        """
        A block by number.
        """
        return succeed(self.blocks[number] if number < len(self.blocks) else None)

    def is_canonical(self, block_hash: bytes) -> Deferred[bool]:
        """
        Every known block is canonical.
        """
        return succeed(block_hash in self.by_hash)

    def get_block_receipts(self, block_hash: bytes) -> Deferred[list[ReceiptView] | None]:
        """
        The receipt views of a block (gas used and price from the transactions).
        """
        index = self.by_hash.get(block_hash)
        if index is None:
            return succeed(None)
        block = self.blocks[index]
        views = []
        previous = 0
        for position, (transaction, receipt) in enumerate(zip(block.transactions, self.receipts[index])):
            location = TransactionLocation(transaction, block.hash, block.number, position)
            used = receipt.cumulative_gas_used - previous
            previous = receipt.cumulative_gas_used
            views.append(ReceiptView(receipt, location, used, 0, None, transaction.effective_gas_price))
        return succeed(views)

    def get_block_fees(self, block_hash: bytes) -> Deferred[list[tuple[int, int]] | None]:
        """
        The price and gas of each transaction of a block, from its views.
        """
        return self.get_block_receipts(block_hash).addCallback(
            lambda views: None if views is None else [(view.effective_gas_price, view.gas_used) for view in views]
        )

    def add_observer(self, observer: Callable[[ChainEvent], None]) -> None:
        """
        Remember an observer.
        """
        self.observers.append(observer)


class DispatchFixture:
    """
    Requests through a dispatcher, for test cases that set C{self.dispatcher}.
    """

    dispatcher: Dispatcher

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
        if "error" in response:
            raise AssertionError(f"{method} failed: {response['error']}")
        return response["result"]

    def error(self, method: str, *params: Any) -> dict[str, Any]:
        """
        The error of a request that must fail.
        """
        response = self.request(method, *params)
        if "error" not in response:
            raise AssertionError(f"{method} succeeded: {response['result']}")
        return response["error"]


class StateMethodsTests(DispatchFixture, SynchronousTestCase):
    """
    The state methods over blocks 0 (ALICE has 1 wei) and 1 (contracts deployed).
    """

    def setUp(self) -> None:
        """
        Serve the state and fee methods over the two-state store.
        """
        self.store, before, after = build_store()
        self.blocks = [Block(replace(before, number=0)), Block(replace(after, number=1))]
        self.chain = FakeChain(self.blocks)
        state = StateService(self.store, 33, maybeDeferred, Clock())
        registry = MethodRegistry({name: ModuleSettings(True) for name in MODULES})
        registry.add(StateMethods(self.chain, state))  # type: ignore[arg-type]
        registry.add(FeeMethods(self.chain))  # type: ignore[arg-type]
        self.dispatcher = Dispatcher(registry, Clock())
        self.alice = hexed(ALICE)
        self.storage = hexed(STORAGE)

    def test_balance_at_blocks(self) -> None:
        """
        eth_getBalance answers for numbers, tags, EIP-1898 objects; latest by default.
        """
        self.assertEqual(self.call("eth_getBalance", self.alice, "0x0"), "0x1")
        self.assertEqual(self.call("eth_getBalance", self.alice, "earliest"), "0x1")
        self.assertEqual(self.call("eth_getBalance", self.alice), hex(10**18))
        self.assertEqual(self.call("eth_getBalance", self.alice, "pending"), hex(10**18))
        self.assertEqual(self.call("eth_getBalance", self.alice, {"blockNumber": "0x0"}), "0x1")
        selector_ = {"blockHash": hexed(self.blocks[0].hash), "requireCanonical": True}
        self.assertEqual(self.call("eth_getBalance", self.alice, selector_), "0x1")

    def test_unknown_blocks(self) -> None:
        """
        Unknown numbers and hashes answer -32600 naming the block, in every
        state read (eth_getCode too, and the EIP-1898 object).
        """
        for method, params in (
            ("eth_getBalance", (self.alice,)), ("eth_getCode", (self.storage,)),
            ("eth_getTransactionCount", (self.alice,)), ("eth_getStorageAt", (self.storage, "0x0")),
        ):
            error = self.error(method, *params, "0x99")
            self.assertEqual((error["code"], error["message"]), (-32600, "Block 0x99 not found"), method)
            error = self.error(method, *params, {"blockHash": "0x" + "11" * 32})
            self.assertEqual(
                (error["code"], error["message"]), (-32600, f"Block with hash 0x{'11' * 32} not found"), method
            )

    def test_pending_nonce(self) -> None:
        """
        With a pool, the pending transaction count is the pool's next nonce.
        """

        class Pool:
            """
            The nonce counting of a pool holding two transactions of ALICE.
            """

            def next_nonce(self, address: bytes) -> Deferred[int]:
                """
                The state nonce (3) plus two pending.
                """
                return succeed(5 if address == ALICE else 0)

        registry = MethodRegistry({name: ModuleSettings(True) for name in MODULES})
        state = StateService(self.store, 33, maybeDeferred, Clock())
        registry.add(StateMethods(self.chain, state, Pool()))  # type: ignore[arg-type]
        self.dispatcher = Dispatcher(registry, Clock())
        self.assertEqual(self.call("eth_getTransactionCount", self.alice, "pending"), "0x5")
        self.assertEqual(self.call("eth_getTransactionCount", self.alice, "latest"), "0x3")

    def test_nonce_storage_code(self) -> None:
        """
        Nonce, 32-byte storage words (zero when absent) and code.
        """
        self.assertEqual(self.call("eth_getTransactionCount", self.alice, "latest"), "0x3")
        self.assertEqual(self.call("eth_getStorageAt", self.storage, "0x0", "latest"), hexed(word(5)))
        self.assertEqual(self.call("eth_getStorageAt", self.storage, "0x" + "00" * 31 + "07"), hexed(word(2**255)))
        self.assertEqual(self.call("eth_getStorageAt", self.storage, "0x1", "latest"), hexed(word(0)))
        self.assertEqual(self.call("eth_getCode", self.storage, "latest"), hexed(runtime("Storage")))
        self.assertEqual(self.call("eth_getCode", self.storage, "0x0"), "0x")

    def test_get_code_refuses_pending(self) -> None:
        """
        eth_getCode is one of the five methods that refuse pending.
        """
        error = self.error("eth_getCode", self.storage, "pending")
        self.assertEqual(error["code"], -32201)

    def test_call(self) -> None:
        """
        eth_call returns the data; the block parameter matters.
        """
        request = {"from": self.alice, "to": self.storage, "data": hexed(selector("get()"))}
        self.assertEqual(self.call("eth_call", request, "latest"), hexed(word(5)))
        self.assertEqual(self.call("eth_call", request, "0x0"), "0x")
        request = {"to": self.storage, "input": hexed(selector("get()")), "data": "0x"}
        self.assertEqual(self.call("eth_call", request), hexed(word(5)))

    def test_overrides_of_each_kind(self) -> None:
        """
        balance, nonce, code, state and stateDiff change what a call sees.
        """
        request = {"to": self.storage, "data": hexed(selector("get()"))}
        diff = {self.storage: {"stateDiff": {hexed(word(0)): hexed(word(8))}}}
        self.assertEqual(self.call("eth_call", request, "latest", diff), hexed(word(8)))
        state = {self.storage: {"state": {hexed(word(1)): hexed(word(8))}}}
        self.assertEqual(self.call("eth_call", request, "latest", state), hexed(word(0)))
        other = "0x" + "99" * 20
        code = {other: {"code": hexed(runtime("Storage")), "stateDiff": {hexed(word(0)): hexed(word(4))}}}
        self.assertEqual(self.call("eth_call", {"to": other, "data": hexed(selector("get()"))}, "latest", code), hexed(word(4)))
        poor = "0x" + "77" * 20
        send = {"from": poor, "to": self.alice, "value": "0x10"}
        self.assertEqual(self.error("eth_call", send, "latest")["message"], "insufficient funds for transfer")
        self.assertEqual(self.call("eth_call", send, "latest", {poor: {"balance": "0x10", "nonce": "0x5"}}), "0x")

    def test_bad_overrides(self) -> None:
        """
        movePrecompileToAddress, state with stateDiff, oversized fields and
        unknown members are refused with -32602.
        """
        request = {"to": self.storage}
        cases = [
            ({PRECOMPILE: {"movePrecompileToAddress": self.alice}}, "movePrecompileToAddress is not supported yet"),
            ({self.storage: {"state": {}, "stateDiff": {}}}, "both 'state' and 'stateDiff'"),
            ({self.storage: {"balance": "0x1" + "0" * 64}}, "256 bits"),
            ({self.storage: {"nonce": "0x1" + "0" * 16}}, "64 bits"),
            ({self.storage: {"colour": "0x1"}}, "unknown field"),
            ({"0x12": {}}, "account 0x12"),
        ]
        for overrides, words in cases:
            error = self.error("eth_call", request, "latest", overrides)
            self.assertEqual(error["code"], -32602, overrides)
            self.assertIn(words, error["message"])

    def test_reverts(self) -> None:
        """
        Reverts answer -32015 with the payload as data and the DESIGN wording.
        """
        reason = self.error("eth_call", {"to": hexed(REVERTER), "data": hexed(selector("revertWithReason()"))})
        self.assertEqual(reason["code"], -32015)
        self.assertEqual(reason["message"], "VM Exception while processing transaction: revert Reverter: always fails")
        self.assertTrue(reason["data"].startswith("0x08c379a0"))
        bare = self.error("eth_call", {"to": hexed(REVERTER), "data": hexed(selector("revertWithoutReason()"))})
        self.assertEqual((bare["message"], bare["data"]), ("VM Exception while processing transaction: execution reverted", "0x"))
        panic = self.error("eth_estimateGas", {"to": hexed(REVERTER), "data": hexed(selector("divide(uint256,uint256)") + word(1) + word(0))})
        self.assertEqual((panic["code"], panic["data"]), (-32015, hexed(PANIC_SELECTOR + word(0x12))))

    def test_reverts_with_geth_code(self) -> None:
        """
        With C{revert_error_code=3}, reverts of eth_call and eth_estimateGas answer code 3, same message and data.
        """
        registry = MethodRegistry({name: ModuleSettings(True) for name in MODULES})
        state = StateService(self.store, 33, maybeDeferred, Clock())
        registry.add(StateMethods(self.chain, state, revert_error_code=3))  # type: ignore[arg-type]
        self.dispatcher = Dispatcher(registry, Clock())
        reason = self.error("eth_call", {"to": hexed(REVERTER), "data": hexed(selector("revertWithReason()"))})
        self.assertEqual(reason["code"], 3)
        self.assertEqual(reason["message"], "VM Exception while processing transaction: revert Reverter: always fails")
        self.assertTrue(reason["data"].startswith("0x08c379a0"))
        panic = self.error("eth_estimateGas", {"to": hexed(REVERTER), "data": hexed(selector("divide(uint256,uint256)") + word(1) + word(0))})
        self.assertEqual((panic["code"], panic["data"]), (3, hexed(PANIC_SELECTOR + word(0x12))))

    def test_ethereum_conventions(self) -> None:
        """
        Under the Ethereum conventions a revert answers geth's code 3 and
        message (payload kept as data), whatever C{revert_error_code}
        says, and a call that runs out of gas is -32000 C{out of gas}.
        """
        registry = MethodRegistry({name: ModuleSettings(True) for name in MODULES})
        state = StateService(self.store, 33, maybeDeferred, Clock(), call_failures_are_errors=True)
        registry.add(StateMethods(self.chain, state, conventions=ETHEREUM_CONVENTIONS))  # type: ignore[arg-type]
        self.dispatcher = Dispatcher(registry, Clock())
        reason = self.error("eth_call", {"to": hexed(REVERTER), "data": hexed(selector("revertWithReason()"))})
        self.assertEqual((reason["code"], reason["message"]), (3, "execution reverted: Reverter: always fails"))
        self.assertTrue(reason["data"].startswith("0x08c379a0"))
        panic = self.error("eth_estimateGas", {"to": hexed(REVERTER), "data": hexed(selector("divide(uint256,uint256)") + word(1) + word(0))})
        self.assertEqual(
            (panic["code"], panic["message"], panic["data"]),
            (3, "execution reverted: division or modulo by zero", hexed(PANIC_SELECTOR + word(0x12))),
        )
        starved = self.error("eth_call", {"to": self.storage, "data": hexed(selector("set(uint256)") + word(7)), "gas": hex(25_000)})
        self.assertEqual((starved["code"], starved["message"]), (-32000, "out of gas"))
        # pending is accepted where the specification lets it be refused.
        self.assertEqual(self.call("eth_getCode", self.storage, "pending"), self.call("eth_getCode", self.storage, "latest"))

    def test_estimate(self) -> None:
        """
        eth_estimateGas: 21000 for a transfer, the insufficient-funds error.
        """
        self.assertEqual(self.call("eth_estimateGas", {"from": self.alice, "to": "0x" + "01" * 20, "value": "0x1"}), "0x5208")
        error = self.error("eth_estimateGas", {"from": self.alice, "to": self.storage, "value": hex(10**20)})
        self.assertEqual((error["code"], error["message"]), (-32000, "insufficient funds for transfer"))

    def test_pending_block_at_once(self) -> None:
        """
        At C{pending}, reads, calls and estimates run on the pending block's
        header: the one L{IPendingBlock.header_now} gives at once (no
        Deferred asked for), else the one L{IPendingBlock.header} fires with.
        """
        genesis = self.blocks[0].header

        class Pending:
            """
            A pending block known at once (or not), whose Deferred is not to be asked for when it is.
            """

            def __init__(self, now: Any, later: Any) -> None:
                self.now, self.later = now, later

            def header_now(self) -> Any:
                return self.now

            def header(self) -> Deferred[Any]:
                assert self.later is not None, "the header was known at once"
                return succeed(self.later)

        for now, later in ((genesis, None), (None, genesis)):
            registry = MethodRegistry({name: ModuleSettings(True) for name in MODULES})
            state = StateService(self.store, 33, maybeDeferred, Clock())
            registry.add(StateMethods(self.chain, state, pending=Pending(now, later)))  # type: ignore[arg-type]
            self.dispatcher = Dispatcher(registry, Clock())
            self.assertEqual(self.call("eth_getBalance", self.alice, "pending"), "0x1")
            self.assertEqual(self.call("eth_getBalance", self.alice, "latest"), hex(10**18))
            transfer = {"from": self.alice, "to": "0x" + "01" * 20, "value": "0x2"}
            self.assertEqual(self.call("eth_estimateGas", transfer), "0x5208")
            error = self.error("eth_estimateGas", transfer, "pending")
            self.assertEqual((error["code"], error["message"]), (-32000, "insufficient funds for transfer"))
            self.assertEqual(self.error("eth_call", transfer, "pending")["code"], -32000)

    def test_create_access_list(self) -> None:
        """
        eth_createAccessList answers the list, the gas and, for a failed
        call, its error; the block defaults to latest; errors as eth_call's.
        """
        transfer = self.call("eth_createAccessList", {"from": self.alice, "to": "0x" + "01" * 20, "value": "0x1"})
        self.assertEqual(transfer, {"accessList": [], "gasUsed": "0x5208"})
        at_genesis = self.error("eth_createAccessList", {"from": self.alice, "to": self.storage, "value": "0x2"}, "0x0")
        self.assertEqual((at_genesis["code"], at_genesis["message"]), (-32000, "insufficient funds for transfer"))
        self.assertEqual(self.error("eth_createAccessList", {"to": "0x12"})["code"], -32602)
        self.assertEqual(self.error("eth_createAccessList", {}, "0x99")["code"], -32600)
        failed = self.call("eth_createAccessList", {"from": self.alice, "to": self.storage})
        self.assertEqual(failed["error"], "execution reverted")

    def test_malformed_call_object(self) -> None:
        """
        A malformed call object is -32602 naming the field.
        """
        error = self.error("eth_call", {"to": "0x12"})
        self.assertEqual(error["code"], -32602)
        self.assertIn('"to"', error["message"])

    def test_proof(self) -> None:
        """
        eth_getProof answers the EIP-1186 object with the asked slots.
        """
        proof = self.call("eth_getProof", self.storage, [hexed(word(0)), "0x1"], "latest")
        self.assertEqual(list(proof), ["address", "accountProof", "balance", "codeHash", "nonce", "storageHash", "storageProof"])
        self.assertEqual([(entry["key"], entry["value"]) for entry in proof["storageProof"]], [("0x0", "0x5"), ("0x1", "0x0")])
        self.assertTrue(all(node.startswith("0x") for node in proof["accountProof"]))

    def test_fee_history(self) -> None:
        """
        eth_feeHistory: zero base fees, one more than the blocks; rewards when asked.
        """
        history = self.call("eth_feeHistory", "0x5", "latest", [25, 75])
        self.assertEqual(history["oldestBlock"], "0x0")
        self.assertEqual(history["baseFeePerGas"], ["0x0", "0x0", "0x0"])
        self.assertEqual(history["gasUsedRatio"], [0.0, 0.0])
        self.assertEqual(history["reward"], [["0x0", "0x0"], ["0x0", "0x0"]])
        self.assertNotIn("reward", self.call("eth_feeHistory", 1, "latest"))
        self.assertEqual(self.error("eth_feeHistory", "0x0", "latest")["code"], -32602)
        self.assertEqual(self.error("eth_feeHistory", "0x1", "latest", [50, 10])["code"], -32602)


class FeeHistoryTests(DispatchFixture, SynchronousTestCase):
    """
    eth_feeHistory over blocks with transactions.
    """

    def test_ratios_and_rewards(self) -> None:
        """
        Gas-used ratios come from the headers, rewards from the prices paid.
        """
        from nodex.structures.transactions import LegacyTransaction
        from tests.chain.logs.test_search import make_block

        blocks, receipts = [], []
        for number in range(3):
            block, block_receipts = make_block(number, [[]] * number)
            transactions = tuple(
                LegacyTransaction(nonce=i, gas_price=10 * (i + 1), gas=21000, to=b"\x03" * 20, value=0, data=b"", v=27, r=1, s=1)
                for i in range(number)
            )
            header = replace(block.header, gas_used=21000 * number)
            blocks.append(Block(header, transactions))
            receipts.append(block_receipts)
        registry = MethodRegistry({name: ModuleSettings(True) for name in MODULES})
        registry.add(FeeMethods(FakeChain(blocks, receipts)))  # type: ignore[arg-type]
        self.dispatcher = Dispatcher(registry, Clock())
        history = self.call("eth_feeHistory", "0x2", "latest", [0, 100])
        self.assertEqual(history["oldestBlock"], "0x1")
        self.assertEqual(history["gasUsedRatio"], [21000 / 30_000_000, 42000 / 30_000_000])
        self.assertEqual(history["reward"], [["0xa", "0xa"], ["0xa", "0x14"]])
        self.assertEqual(history["baseFeePerGas"], ["0x0"] * 3)


    def test_newest_read_once(self) -> None:
        """
        The newest block, read to resolve the parameter, is not read again:
        each block of the history is read once.
        """
        from tests.chain.logs.test_search import make_block

        blocks = [make_block(number, [])[0] for number in range(4)]
        chain = FakeChain(blocks)
        numbers: list[int] = []
        read = chain.get_block_by_number
        chain.get_block_by_number = lambda number: numbers.append(number) or read(number)  # type: ignore[method-assign]
        registry = MethodRegistry({name: ModuleSettings(True) for name in MODULES})
        registry.add(FeeMethods(chain))  # type: ignore[arg-type]
        self.dispatcher = Dispatcher(registry, Clock())
        history = self.call("eth_feeHistory", "0x3", "latest", [50])
        self.assertEqual((history["oldestBlock"], history["reward"]), ("0x1", [["0x0"]] * 3))
        self.assertEqual(sorted(numbers), [1, 2, 3])
        numbers.clear()
        self.assertEqual(self.call("eth_feeHistory", "0x2", "0x2")["oldestBlock"], "0x1")
        self.assertEqual(sorted(numbers), [1, 2])


class RewardsTests(SynchronousTestCase):
    """
    Tests for L{rewards}.
    """

    def test_weighted_by_gas(self) -> None:
        """
        Percentiles are taken over the gas used, cheapest first.
        """
        self.assertEqual(rewards([(5, 10), (1, 90)], [0, 50, 90, 91, 100]), [1, 1, 1, 5, 5])


__all__ = ["DispatchFixture", "FakeChain", "hexed"]
