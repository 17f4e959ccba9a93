"""
Tests for L{nodex.chain.calls}.
"""

import json
from collections.abc import Callable
from pathlib import Path

from twisted.trial.unittest import SynchronousTestCase

from nodex.chain import calls
from nodex.chain.calls import (
    ERROR_SELECTOR,
    PANIC_SELECTOR,
    CallError,
    CallFailedError,
    CallRequest,
    ExecutionRevertedError,
    InsufficientFundsError,
    call_within,
    decode_revert_reason,
    estimate_gas,
    execute_call,
)
from nodex.chain.execution import CallResult, run_call
from nodex.crypto import keccak256
from nodex.db.memory import MemoryStore
from nodex.db.schema import write_code, write_trie_nodes
from nodex.evm.environment import BlockEnvironment
from nodex.primitives import Address
from nodex.state.overrides import AccountOverride, StateOverrideError, StateOverrides
from nodex.state.state import State
from tests.evm.test_instructions import push

CONTRACTS = Path(__file__).parent.parent / "data" / "contracts"
ALICE = Address(b"\xaa" * 20)
REVERTER = Address(b"\x0e" * 20)
STORAGE = Address(b"\x05" * 20)
BLOCK = BlockEnvironment(coinbase=Address(b"\xcc" * 20), number=1, timestamp=1_700_000_000, gas_limit=30_000_000)
NO_OVERRIDES = StateOverrides()


def runtime(name: str) -> bytes:
    """
    The deployed bytecode of a test contract.
    """
    compiled = json.loads((CONTRACTS / f"{name}.json").read_text())
    return bytes.fromhex(compiled["deployedBytecode"].removeprefix("0x"))


def selector(signature: str) -> bytes:
    """
    The 4-byte ABI selector of a function signature.
    """
    return keccak256(signature.encode())[:4]


def word(value: int) -> bytes:
    """
    An ABI-encoded uint256.
    """
    return value.to_bytes(32, "big")


def stored_world(build: Callable[[State], None]) -> Callable[[], State]:
    """
    A memory store holding the state C{build} makes from an empty one;
    return a function that opens a fresh state over it.
    """
    store = MemoryStore()
    state = State.from_store(store)
    build(state)
    root, nodes = state.commit()
    batch = store.batch()
    write_trie_nodes(batch, nodes)
    for code_hash, code in state.new_codes.items():
        write_code(batch, code_hash, code)
    store.write(batch)
    return lambda: State.from_store(store, root)


FORWARDER = Address(b"\x0f" * 20)
FORWARDER_CODE = (
    # Copy the call data to memory, CALL the Storage contract with it and all
    # the gas left (GAS: all but a 64th is forwarded), revert if it failed.
    bytes.fromhex("365f5f37" "5f5f365f5f73") + STORAGE + bytes.fromhex("5af1" "602657" "5f5ffd" "5b00")
)


def make_world() -> Callable[[], State]:
    """
    A store with ALICE funded, the Reverter, the Storage contract (value 5)
    and a forwarder to it; return a function that opens a fresh state over it.
    """

    def build(state: State) -> None:
        state.set_balance(ALICE, 10**18)
        state.set_code(REVERTER, runtime("Reverter"))
        state.set_code(STORAGE, runtime("Storage"))
        state.set_storage(STORAGE, 0, 5)
        state.set_code(FORWARDER, FORWARDER_CODE)

    return stored_world(build)


class RevertReasonTests(SynchronousTestCase):
    """
    Tests for L{decode_revert_reason}.
    """

    def test_error_string(self) -> None:
        """
        An C{Error(string)} payload gives its string.
        """
        payload = ERROR_SELECTOR + word(32) + word(2) + b"hi".ljust(32, b"\0")
        self.assertEqual(decode_revert_reason(payload), "hi")

    def test_other_payloads(self) -> None:
        """
        Empty, panic, custom and truncated payloads have no reason.
        """
        for payload in (b"", PANIC_SELECTOR + word(1), b"\x12\x34\x56\x78", ERROR_SELECTOR + word(32) + word(99)):
            self.assertIsNone(decode_revert_reason(payload))


class ExecuteCallTests(SynchronousTestCase):
    """
    Tests for L{execute_call}.
    """

    def setUp(self) -> None:
        """
        Build the world.
        """
        self.open_state = make_world()

    def call(self, to: Address, data: bytes, overrides: StateOverrides = NO_OVERRIDES, **kwargs: object) -> bytes:
        """
        Call and return the output.
        """
        request = CallRequest(sender=ALICE, to=to, data=data, **kwargs)  # type: ignore[arg-type]
        return execute_call(self.open_state, BLOCK, request, overrides, 50_000_000).output

    def reverted(self, data: bytes) -> ExecutionRevertedError:
        """
        Call the Reverter with C{data}, expecting a revert.
        """
        return self.assertRaises(ExecutionRevertedError, self.call, REVERTER, data)

    def test_output(self) -> None:
        """
        A successful call returns its output.
        """
        self.assertEqual(self.call(STORAGE, selector("get()")), word(5))

    def test_revert_with_reason(self) -> None:
        """
        C{Error(string)} gives the reason in the message and the payload as data.
        """
        error = self.reverted(selector("revertWithReason()"))
        self.assertEqual(str(error), "VM Exception while processing transaction: revert Reverter: always fails")
        self.assertEqual(error.geth_message, "execution reverted: Reverter: always fails")
        self.assertEqual(error.data[:4], ERROR_SELECTOR)
        self.assertEqual(error.reason, "Reverter: always fails")

    def test_revert_without_reason(self) -> None:
        """
        A bare revert says "execution reverted" and has empty data.
        """
        error = self.reverted(selector("revertWithoutReason()"))
        self.assertEqual(str(error), "VM Exception while processing transaction: execution reverted")
        self.assertEqual(error.geth_message, "execution reverted")
        self.assertEqual(error.data, b"")

    def test_custom_error_and_panic(self) -> None:
        """
        Custom errors and panics keep their payload as data.
        """
        custom = self.reverted(selector("revertWithCustomError()"))
        self.assertEqual(custom.data[:4], selector("Unauthorized(address,uint256,string)"))
        panic = self.reverted(selector("divide(uint256,uint256)") + word(1) + word(0))
        self.assertEqual(panic.data, PANIC_SELECTOR + word(0x12))
        # geth names the panics it knows; a custom error is a bare revert to it.
        self.assertEqual(panic.geth_message, "execution reverted: division or modulo by zero")
        self.assertEqual(custom.geth_message, "execution reverted")

    def test_state_override(self) -> None:
        """
        Overrides change what the call sees, and nothing persists.
        """
        overrides = StateOverrides({STORAGE: AccountOverride(state_diff={0: 9})})
        self.assertEqual(self.call(STORAGE, selector("get()"), overrides), word(9))
        self.assertEqual(self.call(STORAGE, selector("get()")), word(5))

    def test_code_override(self) -> None:
        """
        Code put on an address by an override runs.
        """
        overrides = StateOverrides({Address(b"\x99" * 20): AccountOverride(code=runtime("Storage"), state={0: 3})})
        self.assertEqual(self.call(Address(b"\x99" * 20), selector("get()"), overrides), word(3))

    def test_bad_override(self) -> None:
        """
        A bad override set is refused.
        """
        overrides = StateOverrides({STORAGE: AccountOverride(move_precompile_to=ALICE)})
        self.assertRaises(StateOverrideError, self.call, STORAGE, b"", overrides)

    def test_gas_cap(self) -> None:
        """
        The cap bounds the gas: a call that needs more runs out of gas,
        which is not an error.
        """
        request = CallRequest(sender=ALICE, to=STORAGE, data=selector("set(uint256)") + word(7), gas=10**9)
        result = execute_call(self.open_state, BLOCK, request, NO_OVERRIDES, 25_000)
        self.assertFalse(result.success)
        self.assertEqual(result.gas_used, 25_000)

    def test_failure_as_error(self) -> None:
        """
        With C{failures_are_errors} (the Ethereum conventions), a call that
        runs out of gas is an error naming the reason, as geth answers; a
        revert is still a revert, and a success a result.
        """
        request = CallRequest(sender=ALICE, to=STORAGE, data=selector("set(uint256)") + word(7), gas=25_000)
        error = self.assertRaises(
            CallFailedError, execute_call, self.open_state, BLOCK, request, NO_OVERRIDES, 50_000_000, True
        )
        self.assertEqual(str(error), "out of gas")
        within = self.assertRaises(
            CallFailedError, call_within, self.open_state, BLOCK, request, NO_OVERRIDES, 50_000_000, 100_000, True
        )
        self.assertEqual(str(within), "out of gas")
        reverting = CallRequest(sender=ALICE, to=REVERTER, data=selector("revertWithReason()"))
        self.assertRaises(
            ExecutionRevertedError, execute_call, self.open_state, BLOCK, reverting, NO_OVERRIDES, 50_000_000, True
        )
        ok = CallRequest(sender=ALICE, to=STORAGE, data=selector("get()"))
        self.assertEqual(execute_call(self.open_state, BLOCK, ok, NO_OVERRIDES, 50_000_000, True).output, word(5))

    def test_intrinsic_gas_too_low(self) -> None:
        """
        Gas below the intrinsic gas is a call error.
        """
        request = CallRequest(sender=ALICE, to=STORAGE, gas=20_000)
        self.assertRaises(CallError, execute_call, self.open_state, BLOCK, request, NO_OVERRIDES, 50_000_000)

    def test_insufficient_funds(self) -> None:
        """
        A value beyond the balance is C{insufficient funds for transfer}.
        """
        error = self.assertRaises(InsufficientFundsError, self.call, STORAGE, b"", value=10**19)
        self.assertEqual(str(error), "insufficient funds for transfer")


class CallWithinTests(SynchronousTestCase):
    """
    Tests for L{call_within}: a call's answer from a run with less gas,
    when that run cannot differ from the full one.
    """

    def setUp(self) -> None:
        """
        Build the world.
        """
        self.open_state = make_world()

    def within(self, code: bytes | None = None, budget: int = 100_000, **kwargs: object) -> object:
        """
        Try a call of ALICE (to a contract with C{code} by an override, or
        to the Storage contract's get()) within C{budget} gas.
        """
        target = STORAGE if code is None else Address(b"\x61" * 20)
        overrides = NO_OVERRIDES if code is None else StateOverrides({target: AccountOverride(code=code)})
        data = selector("get()") if code is None else b""
        request = CallRequest(sender=ALICE, to=target, data=data, **kwargs)  # type: ignore[arg-type]
        return call_within(self.open_state, BLOCK, request, overrides, 50_000_000, budget)

    def test_same_answer(self) -> None:
        """
        A plain view gives the output of the full run.
        """
        self.assertEqual(self.within().output, word(5))  # type: ignore[attr-defined]

    def test_gas_forwarded_to_a_call(self) -> None:
        """
        GAS read as a call's gas argument (C{GAS CALL}, as Solidity forwards
        all its gas) does not make the run depend on its gas: a view that
        calls another contract so is answered within the budget, with the
        full run's output.  The same value put to another use (here
        C{GAS POP} before the call) does.
        """
        # STATICCALL Storage.get() with all the gas, return its word:
        # PUSH1 32, PUSH0, PUSH1 4, PUSH1 28, PUSH20 STORAGE, GAS, STATICCALL,
        # POP, PUSH1 32, PUSH0, RETURN; the selector at memory 28.
        store_selector = bytes.fromhex("63") + selector("get()") + bytes.fromhex("5f52")
        call_get = bytes.fromhex("60205f6004601c73") + STORAGE
        tail = bytes.fromhex("fa5060205ff3")
        forwarding = store_selector + call_get + bytes.fromhex("5a") + tail
        result = self.within(forwarding)
        self.assertIsNotNone(result)
        self.assertEqual(result.output, word(5))  # type: ignore[attr-defined]
        target = Address(b"\x61" * 20)
        full = execute_call(
            self.open_state, BLOCK, CallRequest(sender=ALICE, to=target),
            StateOverrides({target: AccountOverride(code=forwarding)}), 50_000_000,
        )
        self.assertEqual(full.output, word(5))
        # GAS, POP, then GAS for the call: the first read is another use.
        looked_at = store_selector + call_get + bytes.fromhex("5a505a") + tail
        self.assertIsNone(self.within(looked_at))

    def test_gas_dependent_runs_refused(self) -> None:
        """
        Reading GAS, running out of gas (in the call or in a callee it
        survives), an intrinsic gas above the budget and a gas price all
        need the full run.
        """
        self.assertIsNone(self.within(bytes.fromhex("5a5f5260205ff3")))
        self.assertIsNone(self.within(bytes.fromhex("5b5f56")))
        # CALL a looping callee with a constant gas, then return 1: the
        # callee's halt is survived, its gas differs with more gas given.
        callee_loop = bytes.fromhex("5b5f56")
        caller = bytes.fromhex("5f5f5f5f5f73" + "62" * 20 + "620f4240f1" + "60015f5260205ff3")
        target = Address(b"\x61" * 20)
        overrides = StateOverrides(
            {target: AccountOverride(code=caller), Address(b"\x62" * 20): AccountOverride(code=callee_loop)}
        )
        request = CallRequest(sender=ALICE, to=target)
        self.assertIsNone(call_within(self.open_state, BLOCK, request, overrides, 50_000_000, 100_000))
        self.assertIsNone(self.within(budget=20_000))
        self.assertIsNone(self.within(gas_price=1))

    def test_revert_is_final(self) -> None:
        """
        A revert without a look at the gas is the full run's revert.
        """
        request = CallRequest(sender=ALICE, to=REVERTER, data=selector("revertWithReason()"))
        self.assertRaises(
            ExecutionRevertedError, call_within, self.open_state, BLOCK, request, NO_OVERRIDES, 50_000_000, 100_000
        )

    def test_small_call_is_the_full_run(self) -> None:
        """
        A call whose own gas fits the budget is run whole: its out-of-gas
        answer is final.
        """
        result = self.within(bytes.fromhex("5b5f56"), gas=50_000)
        self.assertEqual((result.success, result.output), (False, b""))  # type: ignore[attr-defined]


class EstimateGasTests(SynchronousTestCase):
    """
    Tests for L{estimate_gas}.
    """

    def setUp(self) -> None:
        """
        Build the world.
        """
        self.open_state = make_world()

    def succeeds(self, request: CallRequest, gas: int) -> bool:
        """
        Whether C{request} succeeds with C{gas}.
        """
        try:
            return execute_call(self.open_state, BLOCK, request, NO_OVERRIDES, gas).success
        except CallError:
            return False

    def test_plain_transfer(self) -> None:
        """
        A value transfer to an account without code costs 21000.
        """
        request = CallRequest(sender=ALICE, to=Address(b"\x01" * 20), value=1)
        self.assertEqual(estimate_gas(self.open_state, BLOCK, request, NO_OVERRIDES, 30_000_000), 21_000)

    def test_least_gas(self) -> None:
        """
        The estimate succeeds and one gas less fails, also for a call with
        a storage refund.
        """
        for data in (selector("set(uint256)") + word(7), selector("set(uint256)") + word(0),
                     selector("setEntry(uint256,bytes32)") + word(1) + word(2)):
            request = CallRequest(sender=ALICE, to=STORAGE, data=data)
            estimate = estimate_gas(self.open_state, BLOCK, request, NO_OVERRIDES, 30_000_000)
            self.assertTrue(self.succeeds(request, estimate))
            self.assertFalse(self.succeeds(request, estimate - 1))

    def least_gas(self, request: CallRequest, overrides: StateOverrides) -> int:
        """
        The least gas with which C{request} succeeds, by bisection of
        L{execute_call}'s outcome.
        """
        def succeeds(gas: int) -> bool:
            try:
                return execute_call(self.open_state, BLOCK, request, overrides, gas).success
            except CallError:
                return False

        low, high = 21_000 - 1, 1_000_000
        while high - low > 1:
            middle = (low + high) // 2
            if succeeds(middle):
                high = middle
            else:
                low = middle
        return high

    def count_runs(self, request: CallRequest, overrides: StateOverrides = NO_OVERRIDES) -> tuple[int, list[int], int]:
        """
        Estimate C{request}, counting the states opened and the runs.

        @return: the estimate, the gas of each run, the states opened.
        """
        runs: list[int] = []
        opened = []

        def counting_run(*args: object, **kwargs: object) -> CallResult:
            runs.append(args[6] if len(args) > 6 else kwargs["gas"])  # type: ignore[arg-type]
            return run_call(*args, **kwargs)  # type: ignore[arg-type]

        def counting_open() -> State:
            opened.append(1)
            return self.open_state()

        self.patch(calls, "run_call", counting_run)
        estimate = estimate_gas(counting_open, BLOCK, request, overrides, 30_000_000)
        return estimate, runs, len(opened)

    def test_one_run(self) -> None:
        """
        A call without subcalls, GAS or an SSTORE near its end is estimated
        in one run: the gas it consumed before its refund, which is the
        least (with and without a refund, and for a creation).
        """
        creation = bytes.fromhex(json.loads((CONTRACTS / "Storage.json").read_text())["bytecode"][2:]) + word(5)
        for to, data in (
            (STORAGE, selector("set(uint256)") + word(7)),
            (STORAGE, selector("set(uint256)") + word(0)),
            (None, creation),
        ):
            request = CallRequest(sender=ALICE, to=to, data=data)
            estimate, runs, opened = self.count_runs(request)
            self.assertEqual(runs, [30_000_000])
            self.assertEqual(opened, 1)
            self.assertEqual(estimate, self.least_gas(request, NO_OVERRIDES))

    def test_sstore_near_the_end(self) -> None:
        """
        An SSTORE that, given only the gas consumed, would find 2,300 gas
        or less left (EIP-2200) keeps that gas from being the answer: the
        least gas is 2,201 above it, with which the SSTORE finds 2,301, and
        the first run proves it (with less the SSTORE fails, the call's own
        frame running short).
        """
        # SSTORE(0, 1), then SSTORE(0, 2) (100 gas: the slot is warm and
        # already written), then STOP.
        target = Address(b"\x77" * 20)
        overrides = StateOverrides({target: AccountOverride(code=bytes.fromhex("6001600055" "6002600055" "00"))})
        request = CallRequest(sender=ALICE, to=target)
        estimate, runs, _ = self.count_runs(request, overrides)
        # The first run proves it: with less than that the SSTORE fails.
        self.assertEqual(runs, [30_000_000])
        self.assertEqual(estimate, self.least_gas(request, overrides))
        consumed = calls.run_request(self.open_state, BLOCK, request, overrides, 30_000_000).gas_used
        self.assertEqual(estimate, consumed + 2_201)

    def test_subcall_with_a_fixed_gas(self) -> None:
        """
        A call whose subcall asks for a fixed gas it is always given (here
        30,000 to an account without code, handed back whole) is settled by
        its first run: with the gas consumed the subcall is handed nothing,
        which it tolerates, and with one less the call's own charge fails.
        """
        # CALL(gas 30000, an account without code, value 0, no input, no
        # output), then STOP.
        target = Address(b"\x77" * 20)
        code = bytes.fromhex("6000600060006000600073" + "79" * 20 + "617530" "f1" "00")
        overrides = StateOverrides({target: AccountOverride(code=code)})
        request = CallRequest(sender=ALICE, to=target)
        estimate, runs, _ = self.count_runs(request, overrides)
        self.assertEqual(runs, [30_000_000])
        self.assertEqual(estimate, self.least_gas(request, overrides))

    def test_subcall(self) -> None:
        """
        A call whose subcall gets all but a 64th of the gas left needs more
        than it consumed; the search still finds the least gas, in a dozen
        runs or so, not the thirty a bisection of the block's gas limit would.
        """
        request = CallRequest(sender=ALICE, to=FORWARDER, data=selector("set(uint256)") + word(7))
        estimate, runs, opened = self.count_runs(request)
        self.assertTrue(self.succeeds(request, estimate))
        self.assertFalse(self.succeeds(request, estimate - 1))
        self.assertLessEqual(len(runs), 16)
        self.assertEqual(opened, 1)

    def test_runs_do_not_leak(self) -> None:
        """
        The runs share one state, each run's changes undone: a creation,
        which bumps the sender's nonce and would collide with its own
        account if the nonce stayed, is estimated as on a fresh state.
        """
        creation = bytes.fromhex(json.loads((CONTRACTS / "Storage.json").read_text())["bytecode"][2:]) + word(5)
        request = CallRequest(sender=ALICE, to=None, data=creation)
        estimate = estimate_gas(self.open_state, BLOCK, request, NO_OVERRIDES, 30_000_000)
        self.assertTrue(self.succeeds(request, estimate))
        self.assertFalse(self.succeeds(request, estimate - 1))

    def test_creation(self) -> None:
        """
        The estimate of a contract creation is the least gas too (code deposit included).
        """
        creation = bytes.fromhex(json.loads((CONTRACTS / "Storage.json").read_text())["bytecode"][2:]) + word(5)
        request = CallRequest(sender=ALICE, to=None, data=creation)
        estimate = estimate_gas(self.open_state, BLOCK, request, NO_OVERRIDES, 30_000_000)
        self.assertTrue(self.succeeds(request, estimate))
        self.assertFalse(self.succeeds(request, estimate - 1))

    def test_revert(self) -> None:
        """
        A call that reverts with all the gas raises the revert.
        """
        request = CallRequest(sender=ALICE, to=REVERTER, data=selector("revertWithReason()"))
        error = self.assertRaises(
            ExecutionRevertedError, estimate_gas, self.open_state, BLOCK, request, NO_OVERRIDES, 30_000_000
        )
        self.assertEqual(error.reason, "Reverter: always fails")

    def test_insufficient_funds(self) -> None:
        """
        A value beyond the balance is refused, with or without a gas price.
        """
        for price in (0, 1):
            request = CallRequest(sender=ALICE, to=STORAGE, value=10**19, gas_price=price)
            self.assertRaises(
                InsufficientFundsError, estimate_gas, self.open_state, BLOCK, request, NO_OVERRIDES, 30_000_000
            )

    def test_cannot_pay_any_gas(self) -> None:
        """
        A sender who can pay the value but not the intrinsic gas at the
        call's price gets geth's insufficient-funds answer, not "gas
        required exceeds allowance (0)".
        """
        poor = Address(b"\x0b" * 20)
        request = CallRequest(sender=poor, to=STORAGE, value=5, gas_price=10)
        overrides = StateOverrides({poor: AccountOverride(balance=1000)})
        error = self.assertRaises(
            InsufficientFundsError, estimate_gas, self.open_state, BLOCK, request, overrides, 30_000_000
        )
        self.assertEqual(str(error), "insufficient funds for gas * price + value: have 1000 want 210005")

    def test_not_enough_gas(self) -> None:
        """
        A call that fails even with the given gas is a call error naming the allowance.
        """
        request = CallRequest(sender=ALICE, to=STORAGE, data=selector("set(uint256)") + word(7), gas=22_000)
        error = self.assertRaises(CallError, estimate_gas, self.open_state, BLOCK, request, NO_OVERRIDES, 30_000_000)
        self.assertIn("gas required exceeds allowance (22000)", str(error))

    def test_overrides_apply(self) -> None:
        """
        Overrides apply to every run of the search (a funded override lets an unfunded sender pay).
        """
        poor = Address(b"\x0b" * 20)
        request = CallRequest(sender=poor, to=Address(b"\x01" * 20), value=5)
        overrides = StateOverrides({poor: AccountOverride(balance=10)})
        self.assertEqual(estimate_gas(self.open_state, BLOCK, request, overrides, 30_000_000), 21_000)


CALLEE = Address(b"\x62" * 20)
CALLER = Address(b"\x61" * 20)


def calling(to: Address, gas: int | None = None, value: int = 0, forward_input: bool = False) -> bytes:
    """
    Code that CALLs C{to} (with its call data when C{forward_input}),
    leaving the success flag on the stack: with all the gas (C{GAS CALL})
    when C{gas} is L{None}, else asking for C{gas}.
    """
    copy = bytes.fromhex("365f5f37") if forward_input else b""
    size = b"\x36" if forward_input else push(0)
    asked = b"\x5a" if gas is None else push(gas)
    return copy + push(0) + push(0) + size + push(0) + push(value) + b"\x73" + to + asked + b"\xf1"


def on_success(prefix: bytes, failure: bytes, success: bytes) -> bytes:
    """
    C{prefix} (which leaves a flag on the stack), then C{success} if the
    flag is set, else C{failure}.
    """
    destination = len(prefix) + 4 + len(failure)
    return prefix + b"\x61" + destination.to_bytes(2, "big") + b"\x57" + failure + b"\x5b" + success


def burner(iterations: int) -> bytes:
    """
    Code that loops C{iterations} times (26 gas each) and stops.
    """
    return b"\x61" + iterations.to_bytes(2, "big") + bytes.fromhex("5b" "6001" "90" "03" "80" "6003" "57" "00")


STOP = b"\x00"
REVERT = bytes.fromhex("5f5ffd")
SSTORE_ONE = bytes.fromhex("6001" "6001" "55")
"""SSTORE(1, 1): a cold slot set, 22,100 gas."""


class EstimateSubframeTests(SynchronousTestCase):
    """
    L{estimate_gas} of calls with subframes: settled by the first run when
    its frames' margins prove it, and always the answer of the search the
    first run's shortcut stands in for (the same estimate with the
    shortcut turned off: the gas consumed confirmed by a run with it and
    one with one gas less, else geth's guess and a bisection).
    """

    def setUp(self) -> None:
        """
        Build the world.
        """
        self.open_state = make_world()

    def estimates(self, code: bytes, callee: bytes = b"", data: bytes = b"", to: Address | None = CALLER) -> tuple[int, int, int]:
        """
        Estimate a call of C{code} (at L{CALLER} by an override, L{CALLEE}
        holding C{callee}; a creation with C{code} as initcode when C{to} is
        L{None}) with and without the first run's shortcut.

        @return: the estimate, the runs it took, and the estimate without
            the shortcut.
        """
        accounts = {
            CALLEE: AccountOverride(code=callee, balance=10**18),
            CALLER: AccountOverride(code=code, balance=10**18, state_diff={2: 1}),
        }
        overrides = StateOverrides(accounts)
        request = CallRequest(sender=ALICE, to=to, data=code if to is None else data)
        runs: list[int] = []

        def counting_run(*args: object, **kwargs: object) -> CallResult:
            runs.append(1)
            return run_call(*args, **kwargs)  # type: ignore[arg-type]

        self.patch(calls, "run_call", counting_run)
        estimate = estimate_gas(self.open_state, BLOCK, request, overrides, 30_000_000)
        count = len(runs)
        proofs, edge = calls._RunProofs.outcome, calls._RunProofs.least_success
        calls._RunProofs.outcome = lambda self, gas: None  # type: ignore[method-assign]
        calls._RunProofs.least_success = lambda self: None  # type: ignore[method-assign]
        try:
            searched = estimate_gas(self.open_state, BLOCK, request, overrides, 30_000_000)
        finally:
            calls._RunProofs.outcome, calls._RunProofs.least_success = proofs, edge  # type: ignore[method-assign]
        return estimate, count, searched

    def test_one_run(self) -> None:
        """
        Calls whose subframes are handed far more than they need are
        settled by the first run, with the search's answer: a subcall with
        all the gas followed by the caller's own SSTORE (Solidity's pattern:
        state written after an external call), with a storage refund in the
        callee, nested two deep, to a precompile, with value to a new
        account (the stipend), and a creation whose constructor calls.
        """
        forward = calling(FORWARDER, forward_input=True)
        set_seven = selector("set(uint256)") + word(7)
        clear = selector("set(uint256)") + word(0)
        identity = push(0) + push(0) + push(32) + push(0) + push(4) + b"\x5a\xfa"
        # Initcode: call Storage.set(7) with all the gas (its selector and
        # argument stored in memory), then return 32 bytes of code.
        store_call = push(7) + push(36) + b"\x52" + push(int.from_bytes(selector("set(uint256)"), "big")) + push(0) + b"\x52"
        constructor = store_call + push(0) + push(0) + push(36) + push(28) + push(0) + b"\x73" + STORAGE + b"\x5a\xf1\x50" + push(32) + push(0) + b"\xf3"
        cases = (
            ("subcall, then an SSTORE", calling(STORAGE, forward_input=True) + b"\x50" + SSTORE_ONE + STOP, set_seven, CALLER),
            ("refund in the callee", calling(STORAGE, forward_input=True) + b"\x50" + SSTORE_ONE + STOP, clear, CALLER),
            ("two deep", forward + b"\x50" + SSTORE_ONE + STOP, set_seven, CALLER),
            ("precompile", identity + b"\x50" + SSTORE_ONE + STOP, b"", CALLER),
            ("value to a new account", calling(Address(b"\x79" * 20), gas=0, value=1) + b"\x50" + SSTORE_ONE + STOP, b"", CALLER),
            ("constructor", constructor, b"", None),
        )
        for name, code, data, to in cases:
            estimate, runs, searched = self.estimates(code, data=data, to=to)
            self.assertEqual((name, estimate, runs), (name, searched, 1))

    def test_callee_needs_the_reserve(self) -> None:
        """
        A callee handed all but a 64th of the gas may need more than the
        call consumed: given only that, it is handed less than it used.
        Swept over how much the caller does after the call, across the
        point where the 64th the caller keeps covers the callee's need
        (about 70 gas here), for a caller that reverts when its callee
        fails and for one that stops (succeeds) then, after clearing a slot
        (a refund: the search then tries one gas less than consumed, which
        succeeds below that point, the callee failing), each with all the
        gas forwarded and with a fixed gas asked for: the estimate is the
        search's in every case, and is settled by the first run only past
        that point.  Before it, where the caller reverts, the search's runs
        near the answer are proven by the runs that succeed (a run with
        more gas takes the same path with less shift), and the least gas
        the first run proves is tried with one gas less first (session 15),
        so that it makes two runs, not fourteen (nor five).
        """
        callee = burner(200)
        clear_slot = push(0) + push(2) + b"\x55"
        for asked in (None, 6_000):
            for prefix, failure in ((b"", REVERT), (clear_slot, STOP)):
                one_run = []
                runs_made = []
                for after in range(60, 80):
                    code = on_success(prefix + calling(CALLEE, gas=asked), failure, b"\x5b" * after + STOP)
                    estimate, runs, searched = self.estimates(code, callee)
                    self.assertEqual((asked, failure, after, estimate), (asked, failure, after, searched))
                    one_run.append(runs == 1)
                    runs_made.append(runs)
                self.assertEqual(one_run, sorted(one_run))
                self.assertIn(True, one_run)
                self.assertIn(False, one_run)
                if failure == REVERT:
                    self.assertLessEqual(max(runs_made), 2)

    def test_stipend_handed_back(self) -> None:
        """
        A call with value hands its callee a 2,300 stipend it was not
        charged for; handed back unused, the caller ends with more than it
        had after the call's cost.  Given only the gas consumed, that cost
        cannot be paid: the least gas is 2,300 more, which the search
        finds.
        """
        code = calling(Address(b"\x79" * 20), gas=0, value=1) + STOP
        estimate, runs, searched = self.estimates(code)
        self.assertEqual(estimate, searched)
        # The first run proves it: with less the call's cost is not paid.
        self.assertEqual(runs, 1)
        overrides = StateOverrides({CALLER: AccountOverride(code=code, balance=1)})
        consumed = calls.run_request(self.open_state, BLOCK, CallRequest(sender=ALICE, to=CALLER), overrides, 30_000_000).gas_used
        self.assertEqual(estimate, consumed + 2_300)

    def test_creation_collision(self) -> None:
        """
        A CREATE2 onto a taken address burns the gas it would have handed
        the initcode, all but a 64th of what is left: less with less gas,
        so the caller goes on with more than its shift implies.  After a
        refund (the search then tries one gas less than consumed, which
        succeeds here) the estimate is the search's, not the gas consumed.
        """
        create_twice = (push(0) * 4 + b"\xf5\x50") * 2
        code = push(0) + push(2) + b"\x55" + create_twice + STOP
        estimate, runs, searched = self.estimates(code)
        self.assertEqual(estimate, searched)
        self.assertGreater(runs, 1)

    def test_callee_reads_gas(self) -> None:
        """
        A callee that reads GAS (here: fails unless more than 100,000 are
        left) decides by the gas it is handed: the first run proves nothing,
        and the estimate is the search's, far above the gas consumed.
        """
        # GAS, PUSH3 100000, GT (100000 > GAS), PUSH1 9, JUMPI, STOP, then
        # at 9: JUMPDEST, INVALID.
        callee = bytes.fromhex("5a" "620186a0" "11" "6009" "57" "00" "5b" "fe")
        code = on_success(calling(CALLEE), REVERT, SSTORE_ONE + STOP)
        estimate, runs, searched = self.estimates(code, callee)
        self.assertEqual(estimate, searched)
        self.assertGreater(estimate, 100_000)
        self.assertGreater(runs, 1)

    def test_callee_sstore_near_its_end(self) -> None:
        """
        A callee's SSTORE that, given only the gas consumed, would find
        2,300 gas or less left (EIP-2200) keeps the first run from being
        the answer, as the call's own would.
        """
        # SSTORE(0, 1), then SSTORE(0, 2) (100 gas), then STOP.
        callee = bytes.fromhex("6001600055" "6002600055" "00")
        code = on_success(calling(CALLEE), REVERT, STOP)
        estimate, runs, searched = self.estimates(code, callee)
        self.assertEqual(estimate, searched)
        self.assertGreater(runs, 1)
