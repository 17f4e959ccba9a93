"""
End-to-end tests of the C{debug} and C{trace} methods (issue 15): a real
regtest node (RocksDB under a temporary directory, HTTP on 127.0.0.1) with
contracts deployed and called through web3.py, traced over JSON-RPC.

The node's C{rpc.max_response_bytes} is lowered to 100,000 so that the
output limit of a trace can be reached by a token transfer's full struct log.
"""

from typing import Any

from twisted.trial.unittest import SynchronousTestCase

from tests.e2e.test_state_e2e import COW, NodeProcess, deploy, shared_node, web3_for

RECIPIENT = "0x" + "11" * 20


class TracingEndToEndTests(SynchronousTestCase):
    """
    Traces of a token transfer, a revert and calls, and the errors of bad requests.
    """

    node: NodeProcess
    facts: dict[str, Any] = {}

    def setUp(self) -> None:
        self.node = shared_node("tracing", {"rpc": {"max_response_bytes": 100_000}})
        if not self.facts:
            w3 = web3_for(self.node)
            sender = w3.to_checksum_address(COW)
            token = deploy(w3, "Token", "T", "T", 10**24)
            reverter = deploy(w3, "Reverter")
            transfer = token.functions.transfer(RECIPIENT, 5).transact({"from": sender})
            failed = reverter.functions.revertWithReason().transact({"from": sender, "gas": 100_000})
            self.facts.update(
                token=token.address.lower(),
                reverter=reverter.address.lower(),
                transfer="0x" + bytes(transfer).hex(),
                failed="0x" + bytes(failed).hex(),
            )

    def receipt(self, tx_hash: str) -> dict[str, Any]:
        """
        A transaction's receipt.
        """
        return self.node.call("eth_getTransactionReceipt", tx_hash)  # type: ignore[no-any-return]

    def test_struct_log(self) -> None:
        """
        The default tracer's answer for a token transfer, without memory and stack.
        """
        trace = self.node.call("debug_traceTransaction", self.facts["transfer"], {"disableMemory": True, "disableStack": True})
        self.assertEqual(trace["contractAddress"], self.facts["token"][2:])
        self.assertEqual((trace["error"], trace["reverted"]), ("", False))
        self.assertEqual(trace["result"], "0" * 63 + "1")
        steps = trace["structLogs"]
        self.assertEqual((steps[0]["op"], steps[0]["pc"], steps[0]["depth"]), ("PUSH1", 0, 0))
        self.assertEqual(steps[-1]["op"], "RETURN")
        self.assertNotIn("stack", steps[0])
        receipt = self.receipt(self.facts["transfer"])
        transaction = self.node.call("eth_getTransactionByHash", self.facts["transfer"])
        executed = steps[0]["gas"] - steps[-1]["gas"] + steps[-1]["gasCost"]
        intrinsic = int(transaction["gas"], 16) - steps[0]["gas"]
        self.assertEqual(intrinsic + executed, int(receipt["gasUsed"], 16))

    def test_gas_equals_receipt(self) -> None:
        """
        The call tree's and the flat trace's gas used are the receipt's.
        """
        for tx_hash in (self.facts["transfer"], self.facts["failed"]):
            gas = self.receipt(tx_hash)["gasUsed"]
            self.assertEqual(self.node.call("debug_traceTransaction", tx_hash, {"tracer": "callTracer"})["gasUsed"], gas)
        gas = self.receipt(self.facts["transfer"])["gasUsed"]
        self.assertEqual(self.node.call("trace_transaction", self.facts["transfer"])[0]["result"]["gasUsed"], gas)

    def test_revert(self) -> None:
        """
        A reverted transaction's call tree carries the error and the reason;
        its flat trace says C{Reverted}.
        """
        tree = self.node.call("debug_traceTransaction", self.facts["failed"], {"tracer": "callTracer"})
        self.assertEqual((tree["error"], tree["revertReason"]), ("execution reverted", "Reverter: always fails"))
        [flat] = self.node.call("trace_transaction", self.facts["failed"])
        self.assertEqual((flat["error"], flat["result"]), ("Reverted", None))

    def test_blocks(self) -> None:
        """
        A block traced by number and by hash gives one entry per transaction.
        """
        receipt = self.receipt(self.facts["transfer"])
        by_number = self.node.call("debug_traceBlockByNumber", receipt["blockNumber"], {"tracer": "callTracer"})
        by_hash = self.node.call("debug_traceBlockByHash", receipt["blockHash"], {"tracer": "callTracer"})
        self.assertEqual(by_number, by_hash)
        self.assertEqual([item["txHash"] for item in by_number], [self.facts["transfer"]])
        flat = self.node.call("trace_block", receipt["blockNumber"])
        self.assertEqual(flat, self.node.call("trace_block", receipt["blockHash"]))
        self.assertEqual(flat[0]["transactionHash"], self.facts["transfer"])

    def test_prestate_and_four_bytes(self) -> None:
        """
        The prestate tracer shows the token's touched slots; the 4byte tracer
        counts C{transfer(address,uint256)}.
        """
        prestate = self.node.call("debug_traceTransaction", self.facts["transfer"], {"tracer": "prestateTracer"})
        self.assertIn("storage", prestate[self.facts["token"]])
        diff = self.node.call(
            "debug_traceTransaction", self.facts["transfer"], {"tracer": "prestateTracer", "tracerConfig": {"diffMode": True}}
        )
        self.assertEqual(set(diff), {"pre", "post"})
        counts = self.node.call("debug_traceTransaction", self.facts["transfer"], {"tracer": "4byteTracer"})
        self.assertEqual(counts, {"0xa9059cbb-64": 1})

    def test_trace_call(self) -> None:
        """
        C{debug_traceCall} traces a call at a block, with state overrides.
        """
        call = {"from": COW, "to": self.facts["token"], "data": "0x18160ddd"}
        tree = self.node.call("debug_traceCall", call, "latest", {"tracer": "callTracer"})
        self.assertEqual(int(tree["output"], 16), 10**24)
        overridden = self.node.call(
            "debug_traceCall", call, "latest",
            {"tracer": "callTracer", "stateOverrides": {self.facts["token"]: {"stateDiff": {"0x" + "00" * 31 + "02": "0x" + "00" * 31 + "07"}}}},
        )
        self.assertEqual(int(overridden["output"], 16), 7)

    def test_trace_filter(self) -> None:
        """
        C{trace_filter} finds the transfer by its sender and recipient, and pages.
        """
        traces = self.node.call("trace_filter", {"fromBlock": "0x1", "toAddress": [self.facts["token"]]})
        self.assertIn(self.facts["transfer"], [trace["transactionHash"] for trace in traces])
        everything = self.node.call("trace_filter", {})
        self.assertEqual(self.node.call("trace_filter", {"after": "0x1", "count": "0x1"}), everything[1:2])

    def test_output_limit(self) -> None:
        """
        A struct log with memory and stack beyond the response limit is an
        error that names the limit; without them it fits.
        """
        error = self.node.error("debug_traceTransaction", self.facts["transfer"])
        self.assertEqual((error["code"], error["message"]), (-32000, "trace exceeded the output limit of 100000 bytes"))

    def test_bad_inputs(self) -> None:
        """
        Unknown transactions and blocks, the genesis block, bad options and
        out-of-range queries get errors that say what is wrong.
        """
        unknown = "0x" + "00" * 32
        cases = [
            (("debug_traceTransaction", unknown), -32000, f"transaction {unknown} not found"),
            (("debug_traceBlockByHash", unknown), -32600, f"Block with hash {unknown} not found"),
            (("debug_traceBlockByNumber", "0x0"), -32000, "the genesis block cannot be traced: it has no parent state"),
            (("debug_traceBlockByNumber", "0x999"), -32600, "Block 0x999 not found"),
            (("debug_traceTransaction", self.facts["transfer"], {"tracer": "jsTracer"}), -32602, 'invalid argument 1: unknown tracer "jsTracer"'),
            (("debug_traceTransaction", self.facts["transfer"], {"enableMemry": True}), -32602, 'invalid argument 1: unknown trace option "enableMemry"'),
            (("debug_traceTransaction", "0x1234"), -32602, "invalid argument 0"),
            (("trace_filter", {"count": hex(10_001)}), -32602, "Count value too big. Maximum 10000 traces allowed."),
            (("trace_filter", {"fromBlock": "0x2", "toBlock": "0x1"}), -32602, "fromBlock cannot be greater than toBlock"),
            (("trace_filter", {"fromblock": "0x1"}), -32602, 'invalid argument 0: unknown field "fromblock"'),
        ]
        for params, code, message in cases:
            error = self.node.error(*params)
            self.assertEqual(error["code"], code, params)
            self.assertTrue(error["message"].startswith(message), (params, error["message"]))
        self.assertIsNone(self.node.call("trace_transaction", unknown))
        self.assertIsNone(self.node.call("trace_block", unknown))
        self.assertEqual(self.node.call("trace_block", "0x0"), [])
