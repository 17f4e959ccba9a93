"""
Tests for L{nodex.chain.tracing}: struct logs checked against hand-computed
steps, call trees with every kind of call, Parity-style flat traces,
prestate and 4byte tracers, gas against the receipts, and the limits.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.chain.tracing.limits import (
    CALL_TRACER,
    FLAT_CALL_TRACER,
    FOUR_BYTE_TRACER,
    GETH_STRUCT_LOGGER,
    PRESTATE_TRACER,
    TraceBudget,
    TraceConfig,
    TraceLimitError,
    TraceLimits,
)
from nodex.crypto import sha256
from nodex.evm.instructions.system import compute_contract_address, compute_create2_contract_address
from tests.chain.test_processing import COINBASE, RECIPIENT
from tests.chain.tracing_world import (
    BENEFICIARY,
    DESTRUCTOR,
    ENTRY,
    INITCODE,
    FAILER,
    LOOPER,
    NESTING,
    PROXY,
    REFUNDER,
    REVERTER,
    SENDER,
    SHA256,
    SIMPLE,
    STORER,
    VIEW,
    World,
    signed,
)

WORD0 = "0" * 64


def word(value: int) -> str:
    """
    A word as the struct logger writes it.
    """
    return format(value, "064x")


def hexa(address: bytes) -> str:
    """
    An address as the JSON traces write it.
    """
    return "0x" + address.hex()


class StructLogTests(SynchronousTestCase):
    """
    The default tracer, step by step.
    """

    def setUp(self) -> None:
        self.world = World([signed(0, SIMPLE, gas=100_000), signed(1, REFUNDER, gas=100_000)])

    def test_hand_computed_steps(self) -> None:
        """
        Every step's pc, op, gas before, cost, depth, stack, memory,
        storage and refund are what the yellow paper's schedule gives.
        """
        [traced] = self.world.trace(only=0)
        steps = traced.trace["structLogs"]
        start = 100_000 - 21_000
        # MSTORE8 pays 3 and 3 for the first word of memory.
        costs = [3, 3, 3, 3, 22_100, 3, 3, 6, 0]
        gas = [start]
        for cost in costs[:-1]:
            gas.append(gas[-1] - cost)
        self.assertEqual([step["op"] for step in steps],
                         ["PUSH1", "PUSH1", "ADD", "PUSH1", "SSTORE", "PUSH1", "PUSH1", "MSTORE8", "STOP"])
        self.assertEqual([step["pc"] for step in steps], [0, 2, 4, 5, 7, 8, 10, 12, 13])
        self.assertEqual([step["gas"] for step in steps], gas)
        self.assertEqual([step["gasCost"] for step in steps], costs)
        self.assertEqual({step["depth"] for step in steps}, {0})
        self.assertEqual([step["stack"] for step in steps[:5]],
                         [[], [word(2)], [word(2), word(3)], [word(5)], [word(5), word(0)]])
        self.assertEqual(steps[7]["memory"], [])
        self.assertEqual(steps[8]["memory"], ["ab" + "0" * 62])
        self.assertEqual(steps[3]["storage"], {})
        self.assertEqual(steps[4]["storage"], {WORD0: word(5)})
        self.assertEqual(steps[8]["storage"], {WORD0: word(5)})
        self.assertEqual({step["refund"] for step in steps}, {0})
        self.assertEqual(start - gas[-1], self.world.receipt_gas(0) - 21_000)

    def test_transaction_members(self) -> None:
        """
        The transaction's object has the reference's members, in order.
        """
        [traced] = self.world.trace(only=0)
        trace = traced.trace
        self.assertEqual(
            list(trace),
            ["contractAddress", "initStorage", "structLogs", "result", "error", "reverted", "storageSize", "currentStorage"],
        )
        self.assertEqual(trace["contractAddress"], SIMPLE.hex())
        self.assertEqual(trace["initStorage"], {WORD0: WORD0})
        self.assertEqual(trace["currentStorage"], {WORD0: word(5)})
        self.assertEqual((trace["result"], trace["error"], trace["reverted"], trace["storageSize"]), ("", "", False, 1))

    def test_refund(self) -> None:
        """
        Clearing a slot earns 4,800 from the step after the SSTORE.
        """
        [traced] = self.world.trace(only=1)
        steps = traced.trace["structLogs"]
        self.assertEqual([step["op"] for step in steps], ["PUSH1", "PUSH1", "SSTORE", "STOP"])
        self.assertEqual(steps[2]["gasCost"], 2_100 + 2_900)
        self.assertEqual([step["refund"] for step in steps], [0, 0, 0, 4_800])
        self.assertEqual(traced.trace["initStorage"], {word(1): word(7)})

    def test_disable_options(self) -> None:
        """
        C{disableStack}, C{disableMemory} and C{disableStorage} leave those
        members out; C{enableReturnData} adds C{returnData}.
        """
        config = TraceConfig(disable_stack=True, disable_memory=True, disable_storage=True, enable_return_data=True)
        [traced] = self.world.trace(config, only=0)
        step = traced.trace["structLogs"][4]
        self.assertEqual(list(step), ["op", "depth", "pc", "gas", "gasCost", "refund", "returnData"])

    def test_disable_stack_keeps_storage(self) -> None:
        """
        Without the stack, the SSTORE's slot still shows in C{storage}.
        """
        [traced] = self.world.trace(TraceConfig(disable_stack=True), only=0)
        self.assertEqual(traced.trace["structLogs"][4]["storage"], {WORD0: word(5)})

    def test_limit_option(self) -> None:
        """
        C{limit} keeps the first entries only.
        """
        [traced] = self.world.trace(TraceConfig(limit=3), only=0)
        self.assertEqual(len(traced.trace["structLogs"]), 3)

    def test_step_limit(self) -> None:
        """
        Past the node's step limit the trace ends with an error naming it.
        """
        error = self.assertRaises(TraceLimitError, self.world.trace, None, 0, TraceLimits(max_steps=5))
        self.assertEqual(str(error), "trace exceeded the limit of 5 steps")

    def test_size_limit(self) -> None:
        """
        Past the node's output limit the trace ends with an error naming it.
        """
        error = self.assertRaises(TraceLimitError, self.world.trace, None, 0, TraceLimits(max_bytes=200))
        self.assertEqual(str(error), "trace exceeded the output limit of 200 bytes")

    def test_time_limit(self) -> None:
        """
        A trace whose clock passes the time limit ends with an error naming it.
        """
        times = iter([0.0, 10.0, 10.0, 10.0])
        budget = TraceBudget(TraceLimits(time_limit=2.0), lambda: next(times))
        error = self.assertRaises(TraceLimitError, budget.check_time)
        self.assertEqual(str(error), "trace exceeded the time limit of 2 seconds")

    def test_client_timeout_is_shorter(self) -> None:
        """
        The client's own timeout applies when it is the shorter.
        """
        self.assertEqual(TraceBudget(TraceLimits(time_limit=5.0), lambda: 0.0, 0.5).time_limit, 0.5)
        self.assertEqual(TraceBudget(TraceLimits(time_limit=5.0), lambda: 0.0, 50.0).time_limit, 5.0)


class GethStructLogTests(SynchronousTestCase):
    """
    geth's struct logger (the execution APIs' opcode tracer), step by step.
    """

    def setUp(self) -> None:
        self.world = World([signed(0, SIMPLE, gas=100_000), signed(1, REFUNDER, gas=100_000)])

    def test_steps(self) -> None:
        """
        The same steps as the reference's logger, in geth's format: depth
        from 1, 0x-prefixed stack quantities, storage only on SLOAD and
        SSTORE, no memory unless asked, a refund on every step.
        """
        [traced] = self.world.trace(TraceConfig(tracer=GETH_STRUCT_LOGGER), only=0)
        [reference] = self.world.trace(only=0)
        steps = traced.trace["structLogs"]
        self.assertEqual(
            [(step["pc"], step["op"], step["gas"], step["gasCost"]) for step in steps],
            [(step["pc"], step["op"], step["gas"], step["gasCost"]) for step in reference.trace["structLogs"]],
        )
        self.assertEqual(list(steps[4]), ["pc", "op", "gas", "gasCost", "depth", "stack", "storage", "refund"])
        self.assertEqual({step["depth"] for step in steps}, {1})
        self.assertEqual([step["stack"] for step in steps[:5]], [[], ["0x2"], ["0x2", "0x3"], ["0x5"], ["0x5", "0x0"]])
        self.assertEqual(steps[4]["storage"], {"0x" + WORD0: "0x" + word(5)})
        self.assertNotIn("storage", steps[3])
        self.assertNotIn("memory", steps[8])
        self.assertEqual({step["refund"] for step in steps}, {0})

    def test_result(self) -> None:
        """
        C{gas} is the receipt's, C{failed} false, C{returnValue} C{0x}.
        """
        [traced] = self.world.trace(TraceConfig(tracer=GETH_STRUCT_LOGGER), only=0)
        trace = traced.trace
        self.assertEqual(list(trace), ["gas", "failed", "returnValue", "structLogs"])
        self.assertEqual(
            (trace["gas"], trace["failed"], trace["returnValue"]), (self.world.receipt_gas(0), False, "0x")
        )

    def test_options(self) -> None:
        """
        C{enableMemory} adds 0x-prefixed words; C{disableStack} and
        C{disableStorage} leave theirs out; C{enableReturnData} adds C{returnData}.
        """
        config = TraceConfig(
            tracer=GETH_STRUCT_LOGGER, enable_memory=True, disable_stack=True, disable_storage=True,
            enable_return_data=True,
        )
        [traced] = self.world.trace(config, only=0)
        steps = traced.trace["structLogs"]
        self.assertEqual(steps[8]["memory"], ["0xab" + "0" * 62])
        self.assertEqual(list(steps[4]), ["pc", "op", "gas", "gasCost", "depth", "memory", "returnData", "refund"])

    def test_refund(self) -> None:
        """
        The refund counter as the reference's logger counts it.
        """
        [traced] = self.world.trace(TraceConfig(tracer=GETH_STRUCT_LOGGER), only=1)
        self.assertEqual([step["refund"] for step in traced.trace["structLogs"]], [0, 0, 0, 4_800])


class CallTreeTests(SynchronousTestCase):
    """
    The call tracer and the flat traces of one transaction that makes every kind of call.
    """

    def setUp(self) -> None:
        self.world = World(
            [
                signed(0, RECIPIENT, gas=30_000, value=7),
                signed(1, ENTRY, data=bytes.fromhex("12345678") + b"\x00" * 32),
            ]
        )

    def call_tree(self, **options: bool) -> dict:
        """
        The call tracer's answer for the transaction of ENTRY.
        """
        [traced] = self.world.trace(TraceConfig(tracer=CALL_TRACER, **options), only=1)
        return traced.trace

    def test_every_kind(self) -> None:
        """
        Each inner call appears with the instruction that made it, its
        callee and its outcome.
        """
        tree = self.call_tree()
        kinds = [(call["type"], call["to"]) for call in tree["calls"]]
        self.assertEqual(
            kinds,
            [
                ("CALL", hexa(STORER)),
                ("DELEGATECALL", hexa(STORER)),
                ("STATICCALL", hexa(VIEW)),
                ("CALLCODE", hexa(STORER)),
                ("CREATE", hexa(compute_contract_address(ENTRY, 0))),
                ("CREATE2", hexa(compute_create2_contract_address(ENTRY, 1, INITCODE))),
                ("CALL", hexa(REVERTER)),
                ("CALL", hexa(LOOPER)),
                ("CALL", hexa(SHA256)),
                ("CALL", hexa(DESTRUCTOR)),
            ],
        )
        self.assertEqual({call["from"] for call in tree["calls"]}, {hexa(ENTRY)})
        self.assertNotIn("value", tree["calls"][1])
        self.assertNotIn("value", tree["calls"][2])

    def test_outcomes(self) -> None:
        """
        Outputs, the created code, the revert and its reason, out of gas,
        the precompile's answer and the self-destruct.
        """
        calls = self.call_tree()["calls"]
        self.assertEqual(calls[0]["output"], "0x" + word(42))
        self.assertEqual(calls[0]["input"], "0x00000000")
        self.assertEqual(calls[4]["output"], "0x00")
        self.assertEqual(calls[4]["input"], "0x" + INITCODE.hex())
        self.assertEqual((calls[6]["error"], calls[6]["revertReason"]), ("execution reverted", "no"))
        self.assertEqual((calls[7]["error"], calls[7]["gasUsed"]), ("out of gas", hex(5_000)))
        # Each call's input is the first 4 bytes of memory, where the
        # previous call wrote its output: here the revert payload's selector.
        self.assertEqual(calls[8]["input"], "0x08c379a0")
        self.assertEqual(calls[8]["output"], "0x" + sha256(bytes.fromhex("08c379a0")).hex())
        [destruct] = calls[9]["calls"]
        self.assertEqual(
            destruct,
            {"type": "SELFDESTRUCT", "from": hexa(DESTRUCTOR), "to": hexa(BENEFICIARY), "value": "0x5",
             "gas": "0x0", "gasUsed": "0x0", "input": "0x"},
        )

    def test_gas_matches_receipt(self) -> None:
        """
        The top frame's gas is the transaction's and its gasUsed the receipt's.
        """
        tree = self.call_tree()
        self.assertEqual(tree["gas"], hex(1_000_000))
        self.assertEqual(tree["gasUsed"], hex(self.world.receipt_gas(1)))

    def test_only_top_call(self) -> None:
        """
        C{onlyTopCall} leaves out the inner calls.
        """
        self.assertNotIn("calls", self.call_tree(only_top_call=True))

    def test_with_log(self) -> None:
        """
        C{withLog} adds each frame's own logs; a reverted frame has none.
        """
        calls = self.call_tree(with_log=True)["calls"]
        self.assertEqual(
            calls[0]["logs"],
            [{"address": hexa(STORER), "topics": ["0x" + word(0xAA)], "data": "0x", "position": "0x0"}],
        )
        self.assertEqual(calls[1]["logs"][0]["address"], hexa(ENTRY))
        self.assertNotIn("logs", calls[6])
        self.assertNotIn("logs", self.call_tree()["calls"][0])

    def test_transfer(self) -> None:
        """
        A plain transfer is one frame with the value and the receipt's gas.
        """
        [traced] = self.world.trace(TraceConfig(tracer=CALL_TRACER), only=0)
        self.assertEqual(
            traced.trace,
            {"type": "CALL", "from": hexa(SENDER), "to": hexa(RECIPIENT), "value": "0x7", "gas": hex(30_000),
             "gasUsed": hex(21_000), "input": "0x"},
        )

    def test_flat_traces(self) -> None:
        """
        The flat traces walk the tree depth first with trace addresses,
        subtrace counts, the true input and gas of each call, C{Reverted}
        and C{suicide}.
        """
        [traced] = self.world.trace(TraceConfig(tracer=FLAT_CALL_TRACER), only=1)
        traces = traced.trace
        self.assertEqual(
            [(trace["type"], trace["traceAddress"], trace["subtraces"]) for trace in traces],
            [("call", [], 10)] + [("call", [i], 0) for i in range(4)]
            + [("create", [4], 0), ("create", [5], 0)] + [("call", [i], 0) for i in range(6, 9)]
            + [("call", [9], 1), ("suicide", [9, 0], 0)],
        )
        top = traces[0]
        self.assertEqual(list(top), ["action", "blockHash", "blockNumber", "transactionHash", "transactionPosition",
                                     "type", "subtraces", "traceAddress", "result"])
        self.assertEqual(top["result"]["gasUsed"], hex(self.world.receipt_gas(1)))
        self.assertEqual(top["action"]["gas"], hex(1_000_000 - 21_000 - 4 * 16 - 32 * 4))
        self.assertEqual(traces[1]["action"]["input"], "0x00000000")
        self.assertEqual(traces[1]["action"]["gas"], hex(50_000))
        self.assertEqual(traces[2]["action"]["callType"], "delegatecall")
        self.assertEqual(traces[5]["action"]["creationMethod"], "create")
        self.assertEqual(traces[6]["action"]["creationMethod"], "create2")
        self.assertEqual(traces[6]["result"]["code"], "0x00")
        self.assertEqual((traces[7]["error"], traces[7]["result"]), ("Reverted", None))
        self.assertEqual(traces[8]["error"], "out of gas")
        self.assertEqual(
            traces[-1]["action"], {"address": hexa(DESTRUCTOR), "refundAddress": hexa(BENEFICIARY), "balance": "0x5"}
        )

    def test_flat_transfer(self) -> None:
        """
        A transfer's trace shows its gas beyond the intrinsic gas, not 0x0.
        """
        [traced] = self.world.trace(TraceConfig(tracer=FLAT_CALL_TRACER), only=0)
        [trace] = traced.trace
        self.assertEqual(trace["action"]["gas"], hex(30_000 - 21_000))
        self.assertEqual(trace["result"], {"gasUsed": hex(21_000), "output": "0x"})

    def test_block_traces_every_transaction(self) -> None:
        """
        Without C{only}, every transaction of the block is traced, in order,
        and each top frame's gas is its receipt's.
        """
        traced = self.world.trace(TraceConfig(tracer=CALL_TRACER))
        self.assertEqual([item.index for item in traced], [0, 1])
        for item in traced:
            self.assertEqual(item.trace["gasUsed"], hex(self.world.receipt_gas(item.index)))

    def test_four_bytes(self) -> None:
        """
        The 4byte tracer counts selectors with the argument size; the
        precompile (called with 0x08c379a0 too) and the creations are left out.
        """
        [traced] = self.world.trace(TraceConfig(tracer=FOUR_BYTE_TRACER), only=1)
        sha256_selector = "0x" + sha256(bytes.fromhex("08c379a0"))[:4].hex() + "-0"
        self.assertEqual(
            traced.trace, {"0x12345678-32": 1, "0x00000000-0": 5, "0x08c379a0-0": 1, sha256_selector: 1}
        )


class NestedCallTests(SynchronousTestCase):
    """
    Calls two levels deep, logs of frames that failed above them, and a
    creation that fails at its code deposit.
    """

    def setUp(self) -> None:
        self.world = World([signed(0, NESTING)])

    def test_nested_tree_and_logs(self) -> None:
        """
        A call's own calls nest under it; a frame's own log comes after its
        child's (position 1); the logs under a reverted frame are gone.
        """
        [traced] = self.world.trace(TraceConfig(tracer=CALL_TRACER, with_log=True))
        proxy, failer, create = traced.trace["calls"]
        self.assertEqual(proxy["to"], hexa(PROXY))
        [inner] = proxy["calls"]
        self.assertEqual((inner["from"], inner["to"]), (hexa(PROXY), hexa(STORER)))
        self.assertEqual(inner["logs"][0]["position"], "0x0")
        self.assertEqual(proxy["logs"], [{"address": hexa(PROXY), "topics": ["0x" + word(0xBB)], "data": "0x", "position": "0x1"}])
        self.assertEqual(failer["error"], "execution reverted")
        self.assertNotIn("logs", failer)
        self.assertNotIn("logs", failer["calls"][0])
        self.assertEqual(create["type"], "CREATE")
        self.assertIn("error", create)
        self.assertEqual(create["gasUsed"], create["gas"])

    def test_nested_flat_traces(self) -> None:
        """
        The flat traces give the path of each frame.
        """
        [traced] = self.world.trace(TraceConfig(tracer=FLAT_CALL_TRACER))
        self.assertEqual(
            [(trace["traceAddress"], trace["subtraces"]) for trace in traced.trace],
            [([], 3), ([0], 1), ([0, 0], 0), ([1], 1), ([1, 0], 0), ([2], 0)],
        )
        self.assertEqual(traced.trace[5]["result"], None)


class ConsistencyTests(SynchronousTestCase):
    """
    The struct logs and the call tree of one transaction that makes every
    kind of call agree with each other and with the receipt.
    """

    def test_gas_flows(self) -> None:
        """
        Within a frame each step's gas is the previous one's less its cost;
        after a call or creation it is that less the cost plus what the
        child frame (as the call tracer saw it) gave back; the top frame's
        steps and the intrinsic gas add up to the receipt.
        """
        world = World([signed(0, ENTRY, data=b"\x01\x02\x03\x04")])
        [structs] = world.trace(TraceConfig(disable_memory=True))
        [tree] = world.trace(TraceConfig(tracer=CALL_TRACER))
        children = iter(tree.trace["calls"])
        top = [step for step in structs.trace["structLogs"] if step["depth"] == 0]
        returned = 0
        for step, following in zip(top, top[1:]):
            given_back = 0
            if step["op"] in ("CALL", "CALLCODE", "DELEGATECALL", "STATICCALL", "CREATE", "CREATE2"):
                child = next(children)
                given_back = int(child["gas"], 16) - int(child["gasUsed"], 16)
                returned += 1
            self.assertEqual(following["gas"], step["gas"] - step["gasCost"] + given_back, step)
        self.assertEqual(returned, 10)
        last = top[-1]
        used = 1_000_000 - last["gas"] + last["gasCost"]
        self.assertEqual(used, world.receipt_gas(0))
        self.assertEqual(tree.trace["gasUsed"], hex(used))


class PrestateTests(SynchronousTestCase):
    """
    The prestate tracer.
    """

    def setUp(self) -> None:
        self.world = World([signed(0, SIMPLE, gas=100_000), signed(1, ENTRY, data=b"\x01\x02\x03\x04")])

    def test_prestate(self) -> None:
        """
        The accounts and slots the transaction touched, as they were before it.
        """
        [traced] = self.world.trace(TraceConfig(tracer=PRESTATE_TRACER), only=0)
        trace = traced.trace
        self.assertEqual(set(trace), {hexa(SENDER), hexa(SIMPLE), hexa(COINBASE)})
        self.assertEqual(trace[hexa(SIMPLE)], {"balance": "0x0", "code": "0x" + traced.run.state.get_code(SIMPLE).hex()})
        self.assertEqual(trace[hexa(SENDER)], {"balance": hex(10**30)})

    def test_second_transaction_sees_first(self) -> None:
        """
        The prestate of a later transaction is the state after the earlier ones.
        """
        [traced] = self.world.trace(TraceConfig(tracer=PRESTATE_TRACER), only=1)
        sender = traced.trace[hexa(SENDER)]
        self.assertEqual(sender["nonce"], 1)
        self.assertEqual(int(sender["balance"], 16), 10**30 - self.world.receipt_gas(0))
        self.assertIn(hexa(BENEFICIARY), traced.trace)
        self.assertIn(hexa(LOOPER), traced.trace)

    def test_diff_mode(self) -> None:
        """
        C{diffMode} gives what changed: the new slot, nonce and balances.
        """
        [traced] = self.world.trace(TraceConfig(tracer=PRESTATE_TRACER, diff_mode=True), only=0)
        pre, post = traced.trace["pre"], traced.trace["post"]
        self.assertEqual(post[hexa(SIMPLE)], {"storage": {"0x" + WORD0: "0x" + word(5)}})
        self.assertEqual(post[hexa(SENDER)]["nonce"], 1)
        self.assertNotIn("storage", pre[hexa(SIMPLE)])
        gas = self.world.receipt_gas(0)
        self.assertEqual(int(pre[hexa(SENDER)]["balance"], 16) - int(post[hexa(SENDER)]["balance"], 16), gas)

    def test_prestate_reexecutes_to_receipt(self) -> None:
        """
        A state built from nothing but the prestate runs the transaction to
        the receipt's gas and the diff's post values.
        """
        from nodex.chain.execution import apply_transaction
        from nodex.chain.processing import block_environment
        from nodex.state.state import State
        from tests.chain.test_processing import CHAIN_ID

        [traced] = self.world.trace(TraceConfig(tracer=PRESTATE_TRACER), only=0)
        state = State({}.get, {}.get)
        for address, account in traced.trace.items():
            raw = bytes.fromhex(address[2:])
            state.set_balance(raw, int(account["balance"], 16))
            state.set_nonce(raw, account.get("nonce", 0))
            if "code" in account:
                state.set_code(raw, bytes.fromhex(account["code"][2:]))
            for slot, value in account.get("storage", {}).items():
                state.set_storage(raw, int(slot, 16), int(value, 16))
        state.commit()
        block = self.world.block
        environment = block_environment(block.header, CHAIN_ID, lambda number: None)
        transaction = block.transactions[0]
        result = apply_transaction(state, environment, transaction, SENDER)
        self.assertEqual(result.gas_used, self.world.receipt_gas(0))
        self.assertEqual(state.get_storage(SIMPLE, 0), 5)
