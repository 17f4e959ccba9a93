"""
Tests for L{nodex.rpc.filter_methods}, through the JSON-RPC envelope, with
the real filter service over a memory store and a fake chain.
"""

from twisted.internet.defer import maybeDeferred
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from nodex.db.memory import MemoryStore
from nodex.api.chain import ChainEvent
from nodex.primitives import Address, Hash32
from nodex.rpc.dispatch import Dispatcher
from nodex.rpc.filter_methods import FilterMethods
from nodex.rpc.registry import MODULES, MethodRegistry, ModuleSettings
from nodex.services.filters import FILTER_EXPIRY, FilterService
from nodex.structures.logs import Log
from tests.chain.logs.test_search import make_block, store_block
from tests.rpc.test_state_methods import DispatchFixture, FakeChain, hexed

A = Hash32(b"\xa1" * 32)
B = Hash32(b"\xb2" * 32)
C = Hash32(b"\xc3" * 32)
ONE = Address(b"\x01" * 20)
TWO = Address(b"\x02" * 20)


class FilterMethodsTests(DispatchFixture, SynchronousTestCase):
    """
    eth_getLogs and the filters over six blocks: block n has one log of ONE
    with topics [A, B] (n even) or [B, A] (n odd), and block 3 also a log of
    TWO with topics [C].
    """

    def setUp(self) -> None:
        """
        Store the blocks and serve the filter methods.
        """
        self.store = MemoryStore()
        blocks = []
        for number in range(6):
            logs = [[Log(ONE, (A, B) if number % 2 == 0 else (B, A), bytes([number]))]]
            if number == 3:
                logs.append([Log(TWO, (C,), b"two")])
            block, receipts = make_block(number, logs)
            store_block(self.store, block, receipts)
            blocks.append(block)
        self.blocks = blocks
        self.chain = FakeChain(blocks)
        self.clock = Clock()
        self.filters = FilterService(self.store, self.chain, None, maybeDeferred, self.clock, max_block_range=1000, max_logs=3)  # type: ignore[arg-type]
        registry = MethodRegistry({name: ModuleSettings(True) for name in MODULES})
        registry.add(FilterMethods(self.filters))
        self.dispatcher = Dispatcher(registry, Clock())

    def numbers(self, query: dict) -> list[tuple[int, str]]:
        """
        The (block number, data) of the logs eth_getLogs answers.
        """
        return [(int(log["blockNumber"], 16), log["data"]) for log in self.call("eth_getLogs", query)]

    def test_topic_table(self) -> None:
        """
        Every row of the specification's topic table, over blocks 0 to 2.
        """
        query = {"fromBlock": "0x0", "toBlock": "0x2"}
        rows = [
            ([], [0, 1, 2]),
            ([hexed(A)], [0, 2]),
            ([None, hexed(A)], [1]),
            ([hexed(A), hexed(B)], [0, 2]),
            ([[hexed(A), hexed(B)], [hexed(A), hexed(B)]], [0, 1, 2]),
            ([[hexed(A), hexed(C)], []], [0, 2]),
        ]
        for topics, expected in rows:
            found = [number for number, _ in self.numbers({**query, "topics": topics})]
            self.assertEqual(found, expected, topics)

    def test_addresses(self) -> None:
        """
        One address, an array of addresses, and no address.
        """
        query = {"fromBlock": "0x3", "toBlock": "0x3"}
        self.assertEqual(self.numbers({**query, "address": hexed(TWO)}), [(3, "0x74776f")])
        self.assertEqual(len(self.numbers({**query, "address": [hexed(ONE), hexed(TWO)]})), 2)
        self.assertEqual(len(self.numbers(query)), 2)

    def test_log_object(self) -> None:
        """
        The log object's members, in order, with removed false.
        """
        log = self.call("eth_getLogs", {"fromBlock": "0x3", "toBlock": "0x3", "topics": [hexed(C)]})[0]
        self.assertEqual(
            list(log),
            ["removed", "logIndex", "transactionIndex", "transactionHash", "blockHash", "blockNumber", "address", "data", "topics"],
        )
        self.assertEqual((log["removed"], log["logIndex"], log["transactionIndex"]), (False, "0x1", "0x1"))
        self.assertEqual(log["blockHash"], hexed(self.blocks[3].hash))
        self.assertEqual(log["transactionHash"], hexed(self.blocks[3].transactions[1].hash))

    def test_default_range_is_latest(self) -> None:
        """
        Without bounds only the head block is searched.
        """
        self.assertEqual(self.numbers({}), [(5, "0x05")])
        self.assertEqual(self.numbers({"fromBlock": "earliest", "toBlock": "0x0"}), [(0, "0x00")])

    def test_block_hash(self) -> None:
        """
        blockHash selects one block; with a bound it is refused; an unknown hash is an error.
        """
        self.assertEqual(self.numbers({"blockHash": hexed(self.blocks[1].hash)}), [(1, "0x01")])
        error = self.error("eth_getLogs", {"blockHash": hexed(self.blocks[1].hash), "fromBlock": "0x1"})
        self.assertEqual(error["code"], -32602)
        self.assertIn("Cannot specify both blockHash and fromBlock/toBlock", error["message"])
        error = self.error("eth_getLogs", {"blockHash": "0x" + "42" * 32})
        self.assertEqual(error["code"], -32600)
        self.assertIn("not found", error["message"])
        self.assertEqual(self.error("eth_newFilter", {"blockHash": hexed(self.blocks[1].hash)})["code"], -32602)

    def test_blockhash_spelling(self) -> None:
        """
        The specification's field list spells the member C{blockhash}: it
        selects the block as C{blockHash} does, with the same rules.
        """
        self.assertEqual(self.numbers({"blockhash": hexed(self.blocks[1].hash)}), [(1, "0x01")])
        both = {"blockhash": hexed(self.blocks[1].hash), "blockHash": hexed(self.blocks[1].hash)}
        self.assertEqual(self.numbers(both), [(1, "0x01")])
        both["blockHash"] = hexed(self.blocks[2].hash)
        self.assertEqual(self.error("eth_getLogs", both)["code"], -32602)
        bounded = {"blockhash": hexed(self.blocks[1].hash), "toBlock": "0x1"}
        self.assertIn("Cannot specify both", self.error("eth_getLogs", bounded)["message"])
        self.assertEqual(self.error("eth_newFilter", {"blockhash": hexed(self.blocks[1].hash)})["code"], -32602)

    def test_bad_filters(self) -> None:
        """
        Malformed objects, reversed and oversized ranges and too many logs are clear errors.
        """
        cases = [
            ({"fromBlock": "0x3", "toBlock": "0x1"}, -32602, "fromBlock 3 is greater than toBlock 1"),
            ({"address": "0x1234"}, -32602, '"address"'),
            ({"topics": ["0x12"]}, -32602, "topic position 0"),
            ({"topics": [None] * 5}, -32602, "at most 4"),
            ({"fromblock": "0x1"}, -32602, "unknown field"),
            ({"fromBlock": "0x0", "toBlock": "0x5"}, -32012, "Filter returned more than 3 logs."),
            ("latest", -32602, "want an object"),
        ]
        for query, code, words in cases:
            error = self.error("eth_getLogs", query)
            self.assertEqual(error["code"], code, query)
            self.assertIn(words, error["message"])

    def test_range_limit(self) -> None:
        """
        A range beyond the preset's limit answers -32012 with the reference message.
        """
        filters = FilterService(self.store, self.chain, None, maybeDeferred, self.clock, max_block_range=2)  # type: ignore[arg-type]
        registry = MethodRegistry({name: ModuleSettings(True) for name in MODULES})
        registry.add(FilterMethods(filters))
        self.dispatcher = Dispatcher(registry, Clock())
        error = self.error("eth_getLogs", {"fromBlock": "0x0", "toBlock": "0x3"})
        self.assertEqual((error["code"], error["message"]), (-32012, "Cannot query more than 2 blocks at once"))
        self.assertEqual(len(self.numbers({"fromBlock": "0x0", "toBlock": "0x2"})), 3)

    def test_log_filter_with_reorg(self) -> None:
        """
        eth_newFilter returns a QUANTITY id; polls give new logs, then the
        abandoned ones with removed true.
        """
        filter_id = self.call("eth_newFilter", {"topics": [hexed(A)]})
        self.assertTrue(filter_id.startswith("0x"))
        block, receipts = make_block(6, [[Log(ONE, (A,), b"\x06")]])
        store_block(self.store, block, receipts)
        for observer in self.chain.observers:
            observer(ChainEvent((block,), adopted_receipts=(receipts,)))
        replacement, new_receipts = make_block(6, [[Log(ONE, (B,), b"\x07")]], salt=9)
        for observer in self.chain.observers:
            observer(ChainEvent((replacement,), (block,), (new_receipts,), (receipts,)))
        changes = self.call("eth_getFilterChanges", filter_id)
        self.assertEqual([(log["data"], log["removed"]) for log in changes], [("0x06", False), ("0x06", True)])
        self.assertEqual(self.call("eth_getFilterChanges", filter_id), [])

    def test_filter_logs_and_uninstall(self) -> None:
        """
        eth_getFilterLogs searches the filter's range; uninstall answers true then false.
        """
        filter_id = self.call("eth_newFilter", {"fromBlock": "0x0", "toBlock": "0x2", "topics": [None, hexed(A)]})
        self.assertEqual([log["blockNumber"] for log in self.call("eth_getFilterLogs", filter_id)], ["0x1"])
        self.assertIs(self.call("eth_uninstallFilter", filter_id), True)
        self.assertIs(self.call("eth_uninstallFilter", filter_id), False)

    def test_block_and_pending_filters(self) -> None:
        """
        Block filters answer block hashes; a pending filter starts empty.
        """
        blocks = self.call("eth_newBlockFilter")
        pending = self.call("eth_newPendingTransactionFilter")
        block, receipts = make_block(6, [])
        for observer in self.chain.observers:
            observer(ChainEvent((block,), adopted_receipts=(receipts,)))
        self.assertEqual(self.call("eth_getFilterChanges", blocks), [hexed(block.hash)])
        self.assertEqual(self.call("eth_getFilterChanges", pending), [])

    def test_unknown_and_expired_ids(self) -> None:
        """
        Unknown and expired ids answer -32000 filter not found; a malformed id -32602.
        """
        error = self.error("eth_getFilterChanges", "0x1234")
        self.assertEqual((error["code"], error["message"]), (-32000, "filter not found"))
        filter_id = self.call("eth_newBlockFilter")
        self.clock.advance(FILTER_EXPIRY)
        self.assertEqual(self.error("eth_getFilterChanges", filter_id)["code"], -32000)
        self.assertEqual(self.error("eth_getFilterLogs", filter_id)["code"], -32000)
        self.assertEqual(self.error("eth_getFilterChanges", "banana")["code"], -32602)
