"""
End-to-end tests of the log methods (issue 6): C{eth_getLogs} and filters
against a real regtest node in its own process, driven by web3.py and raw
JSON-RPC.  The node runs with small log limits (50 blocks, 100 logs) so that
the limit errors can be reached.
"""

from typing import Any

from twisted.trial.unittest import SynchronousTestCase

from nodex.crypto import keccak256
from tests.e2e.test_state_e2e import deploy, shared_node, web3_for

LIMITS = {"rpc": {"max_log_blocks": 50, "max_logs": 100}}


def topic(value: int) -> str:
    """
    A uint256 as a topic.
    """
    return "0x" + value.to_bytes(32, "big").hex()


def event_topic(signature: str) -> str:
    """
    The first topic of an event.
    """
    return "0x" + keccak256(signature.encode()).hex()


THREE = event_topic("ThreeIndexed(uint256,bytes32,address,uint256)")


class LogsEndToEndTests(SynchronousTestCase):
    """
    eth_getLogs and filters over logs emitted by the Events contract.
    """

    def setUp(self) -> None:
        """
        Reach the module's node; deploy two Events contracts once and emit
        ThreeIndexed(a, b, c, d) logs with (a, b) = (1, 2), (2, 1), (1, 1)
        from the first and (1, 2) from the second, one transaction each.
        """
        self.node = shared_node(__name__, LIMITS)
        self.w3 = web3_for(self.node)
        self.sender = self.w3.eth.accounts[0]
        fixture = getattr(self.node, "logs_fixture", None)
        if fixture is None:
            first, second = deploy(self.w3, "Events"), deploy(self.w3, "Events")
            start = self.w3.eth.block_number + 1
            for contract, a, b in ((first, 1, 2), (first, 2, 1), (first, 1, 1), (second, 1, 2)):
                self.transact(contract.functions.emitThreeIndexed(a, b.to_bytes(32, "big"), self.sender, 7))
            fixture = self.node.logs_fixture = (first, second, start, self.w3.eth.block_number)  # type: ignore[attr-defined]
        self.first, self.second, self.start, self.end = fixture
        self.range = {"fromBlock": hex(self.start), "toBlock": hex(self.end)}

    def transact(self, function: Any) -> Any:
        """
        Send a contract transaction and wait for its receipt.
        """
        return self.w3.eth.wait_for_transaction_receipt(function.transact({"from": self.sender, "gas": 500_000}))

    def pairs(self, query: dict[str, Any]) -> list[tuple[int, int]]:
        """
        The (a, b) topics of the logs eth_getLogs answers.
        """
        logs = self.node.call("eth_getLogs", query)
        return [(int(log["topics"][1], 16), int(log["topics"][2], 16)) for log in logs]

    def test_topic_table(self) -> None:
        """
        Every row of the specification's topic table.
        """
        rows = [
            ([], [(1, 2), (2, 1), (1, 1), (1, 2)]),
            ([THREE], [(1, 2), (2, 1), (1, 1), (1, 2)]),
            ([None, topic(2)], [(2, 1)]),
            ([THREE, topic(1), topic(2)], [(1, 2), (1, 2)]),
            ([None, [topic(1), topic(2)], [topic(1), topic(2)]], [(1, 2), (2, 1), (1, 1), (1, 2)]),
            ([None, [topic(2)], []], [(2, 1)]),
        ]
        for topics, expected in rows:
            self.assertEqual(self.pairs({**self.range, "topics": topics}), expected, topics)

    def test_addresses(self) -> None:
        """
        One address, an array of addresses.
        """
        self.assertEqual(len(self.pairs({**self.range, "address": self.second.address})), 1)
        self.assertEqual(len(self.pairs({**self.range, "address": [self.first.address, self.second.address]})), 4)
        self.assertEqual(self.pairs({**self.range, "address": ["0x" + "00" * 20]}), [])

    def test_ranges_and_block_hash(self) -> None:
        """
        Ranges select blocks; blockHash selects one; the default is the head.
        """
        self.assertEqual(self.pairs({"fromBlock": hex(self.start + 1), "toBlock": hex(self.start + 2)}), [(2, 1), (1, 1)])
        block = self.node.call("eth_getBlockByNumber", hex(self.start), False)
        self.assertEqual(self.pairs({"blockHash": block["hash"]}), [(1, 2)])
        log = self.node.call("eth_getLogs", {"blockHash": block["hash"]})[0]
        self.assertEqual(list(log)[0], "removed")
        self.assertEqual((log["removed"], log["blockHash"]), (False, block["hash"]))

    def test_web3_get_logs(self) -> None:
        """
        web3.py's event helpers decode the logs.
        """
        events = self.first.events.ThreeIndexed().get_logs(from_block=self.start, to_block=self.end)
        self.assertEqual([(event.args.a, event.args.d) for event in events], [(1, 7), (2, 7), (1, 7)])

    def test_errors(self) -> None:
        """
        Malformed filters, reversed and oversized ranges, too many logs,
        unknown block hashes and unknown filter ids get clear errors.
        """
        while int(self.node.call("eth_blockNumber"), 16) < 55:
            self.node.call("evm_mine")
        cases = [
            ({"fromBlock": "0x5", "toBlock": "0x3"}, -32602, "greater than toBlock"),
            ({"blockHash": "0x" + "00" * 32, "fromBlock": "0x1"}, -32602, "Cannot specify both"),
            ({"topics": ["0x1234"]}, -32602, "topic"),
            ({"address": "0x12"}, -32602, "address"),
            ({"blockHash": "0x" + "ab" * 32}, -32600, "not found"),
            ({"fromBlock": "0x0", "toBlock": "0x33"}, -32012, "Cannot query more than 50 blocks at once"),
        ]
        for query, code, words in cases:
            error = self.node.error("eth_getLogs", query)
            self.assertEqual(error["code"], code, query)
            self.assertIn(words, error["message"])
        error = self.node.error("eth_getFilterChanges", "0x1234567890abcdef")
        self.assertEqual((error["code"], error["message"]), (-32000, "filter not found"))

    def test_too_many_logs(self) -> None:
        """
        More matching logs than the limit answer -32012.
        """
        function = self.second.functions.emitMany(120)
        receipt = self.w3.eth.wait_for_transaction_receipt(function.transact({"from": self.sender, "gas": 5_000_000}))
        query = {"fromBlock": hex(receipt.blockNumber), "toBlock": hex(receipt.blockNumber)}
        error = self.node.error("eth_getLogs", query)
        self.assertEqual((error["code"], error["message"]), (-32012, "Filter returned more than 100 logs."))

    def test_filters(self) -> None:
        """
        A log filter gathers new logs between polls; a block filter the new
        hashes; uninstall answers true then false.
        """
        log_filter = self.node.call("eth_newFilter", {"address": self.first.address, "topics": [THREE]})
        block_filter = self.node.call("eth_newBlockFilter")
        pending_filter = self.node.call("eth_newPendingTransactionFilter")
        self.assertTrue(int(log_filter, 16) > 2**32)
        first = self.transact(self.first.functions.emitThreeIndexed(5, b"\x05" * 32, self.sender, 1))
        self.transact(self.second.functions.emitThreeIndexed(6, b"\x06" * 32, self.sender, 1))
        second = self.transact(self.first.functions.emitThreeIndexed(7, b"\x07" * 32, self.sender, 1))
        changes = self.node.call("eth_getFilterChanges", log_filter)
        self.assertEqual([int(log["topics"][1], 16) for log in changes], [5, 7])
        self.assertEqual(self.node.call("eth_getFilterChanges", log_filter), [])
        hashes = self.node.call("eth_getFilterChanges", block_filter)
        self.assertEqual(hashes[0], "0x" + bytes(first.blockHash).hex())
        self.assertEqual(hashes[-1], "0x" + bytes(second.blockHash).hex())
        self.assertEqual(len(self.node.call("eth_getFilterChanges", pending_filter)), 3)
        for filter_id in (log_filter, block_filter, pending_filter):
            self.assertIs(self.node.call("eth_uninstallFilter", filter_id), True)
            self.assertIs(self.node.call("eth_uninstallFilter", filter_id), False)

    def test_web3_filter(self) -> None:
        """
        web3.py's filter objects poll the node.
        """
        event_filter = self.first.events.ThreeIndexed().create_filter(from_block="latest")
        self.transact(self.first.functions.emitThreeIndexed(9, b"\x09" * 32, self.sender, 3))
        entries = event_filter.get_new_entries()
        self.assertEqual([(entry.args.a, entry.args.d) for entry in entries], [(9, 3)])

    def test_removed_logs_after_revert(self) -> None:
        """
        Blocks taken back by evm_revert deliver their logs again with removed true.
        """
        log_filter = self.node.call("eth_newFilter", {"address": self.second.address})
        snapshot = self.node.call("evm_snapshot")
        receipt = self.transact(self.second.functions.emitThreeIndexed(11, b"\x0b" * 32, self.sender, 1))
        self.assertTrue(self.node.call("evm_revert", snapshot))
        self.transact(self.second.functions.emitThreeIndexed(12, b"\x0c" * 32, self.sender, 1))
        changes = self.node.call("eth_getFilterChanges", log_filter)
        summary = [(int(log["topics"][1], 16), log["removed"]) for log in changes]
        self.assertEqual(summary, [(11, False), (11, True), (12, False)])
        self.assertEqual(changes[1]["blockHash"], "0x" + bytes(receipt.blockHash).hex())
