"""
Tests for L{nodex.services.state}.
"""

from dataclasses import replace
from typing import Any

import rlp
from trie import HexaryTrie
from twisted.internet.defer import Deferred, maybeDeferred
from twisted.internet.task import Clock
from twisted.internet import reactor
from twisted.trial.unittest import SynchronousTestCase, TestCase
from zope.interface.verify import verifyObject

from nodex.chain.calls import CallRequest, CallTimeoutError, ExecutionRevertedError
from nodex.crypto import keccak256
from nodex.db.memory import MemoryStore
from nodex.db.schema import (
    CODE, TRIE_NODES, trie_node_reader, write_canonical_hash, write_code, write_header_rlp, write_trie_nodes,
)
from nodex.api.errors import BlockNotFoundError
from nodex.api.state import IStateService
from nodex.primitives import Address, Hash32
from nodex.services.state import INLINE_CALL_GAS, INLINE_ESTIMATE_TIME, INLINE_WINDOW, ReaderState, StateService
from nodex.state.overrides import AccountOverride, StateOverrides
from nodex.state.state import State
from nodex.structures.accounts import Account
from nodex.structures.headers import EMPTY_UNCLES_HASH, Header
from nodex.trie import BLANK_ROOT
from tests.chain.test_calls import REVERTER, STORAGE, runtime, selector, word

ALICE = Address(b"\xaa" * 20)
NOBODY = Address(b"\x42" * 20)


def header_at(state_root: bytes, number: int = 1) -> Header:
    """
    A header whose state root is C{state_root}.
    """
    zero = Hash32(bytes(32))
    return Header(
        parent_hash=zero, uncles_hash=EMPTY_UNCLES_HASH, coinbase=Address(b"\xcc" * 20), state_root=Hash32(state_root),
        transactions_root=zero, receipts_root=zero, logs_bloom=bytes(256), difficulty=1, number=number,
        gas_limit=30_000_000, gas_used=0, timestamp=1_700_000_000, extra_data=b"", paid_fees=0,
        minimum_gas_price=0, uncle_count=0,
    )


def build_store() -> tuple[MemoryStore, Header, Header]:
    """
    A store with two states: before (ALICE has 1 wei) and after (ALICE has
    10**18 wei and nonce 3, and the Storage and Reverter contracts exist).
    """
    store = MemoryStore()
    state = State.from_store(store)
    state.set_balance(ALICE, 1)
    first_root, nodes = state.commit()
    state.set_balance(ALICE, 10**18)
    state.set_nonce(ALICE, 3)
    state.set_code(STORAGE, runtime("Storage"))
    state.set_code(REVERTER, runtime("Reverter"))
    state.set_storage(STORAGE, 0, 5)
    state.set_storage(STORAGE, 7, 2**255)
    second_root, more = state.commit()
    batch = store.batch()
    write_trie_nodes(batch, {**nodes, **more})
    for code_hash, code in state.new_codes.items():
        write_code(batch, code_hash, code)
    store.write(batch)
    return store, header_at(first_root, 1), header_at(second_root, 2)


def verify(root: bytes, key: bytes, proof: tuple[bytes, ...]) -> bytes:
    """
    Check a proof with py-trie, an implementation independent of nodex's.
    """
    return HexaryTrie.get_from_proof(root, keccak256(key), [rlp.decode(node) for node in proof])


class StateServiceTests(SynchronousTestCase):
    """
    Tests for L{StateService}.
    """

    def setUp(self) -> None:
        """
        A service over the two-state store, synchronous, on a L{Clock}.
        """
        self.store, self.before, self.after = build_store()
        self.clock = Clock()
        self.service = StateService(self.store, 33, maybeDeferred, self.clock)

    def test_interface(self) -> None:
        """
        The service provides L{IStateService}.
        """
        self.assertTrue(verifyObject(IStateService, self.service))

    def test_reads_at_blocks(self) -> None:
        """
        Balance, nonce, code and storage are those of the block asked for.
        """
        self.assertEqual(self.successResultOf(self.service.get_balance(self.before, ALICE)), 1)
        self.assertEqual(self.successResultOf(self.service.get_balance(self.after, ALICE)), 10**18)
        self.assertEqual(self.successResultOf(self.service.get_nonce(self.after, ALICE)), 3)
        self.assertEqual(self.successResultOf(self.service.get_code(self.before, STORAGE)), b"")
        self.assertEqual(self.successResultOf(self.service.get_code(self.after, STORAGE)), runtime("Storage"))
        self.assertEqual(self.successResultOf(self.service.get_storage(self.after, STORAGE, 0)), 5)
        self.assertEqual(self.successResultOf(self.service.get_storage(self.after, STORAGE, 1)), 0)

    def test_missing_state(self) -> None:
        """
        A header whose state is not in the store fails with L{BlockNotFoundError}.
        """
        missing = header_at(b"\x12" * 32)
        failure = self.failureResultOf(self.service.get_balance(missing, ALICE), BlockNotFoundError)
        self.assertIn("State not found for block with hash 0x", str(failure.value))
        self.failureResultOf(self.service.get_proof(missing, ALICE, [0]), BlockNotFoundError)
        request = CallRequest(sender=ALICE, to=STORAGE, data=selector("get()"))
        self.failureResultOf(self.service.call(missing, request, StateOverrides()), BlockNotFoundError)
        self.failureResultOf(self.service.estimate_gas(missing, request, StateOverrides()), BlockNotFoundError)

    def test_call_and_overrides(self) -> None:
        """
        A call sees the block's state, or the overridden one.
        """
        request = CallRequest(sender=ALICE, to=STORAGE, data=selector("get()"))
        self.assertEqual(self.successResultOf(self.service.call(self.after, request, StateOverrides())), word(5))
        overrides = StateOverrides({STORAGE: AccountOverride(state={})})
        self.assertEqual(self.successResultOf(self.service.call(self.after, request, overrides)), word(0))

    def test_bad_override(self) -> None:
        """
        A refused override set stays a L{StateOverrideError} (not a missing state).
        """
        from nodex.state.overrides import StateOverrideError

        request = CallRequest(sender=ALICE, to=STORAGE, data=selector("get()"))
        overrides = StateOverrides({STORAGE: AccountOverride(state={}, state_diff={})})
        self.failureResultOf(self.service.call(self.after, request, overrides), StateOverrideError)
        self.failureResultOf(self.service.estimate_gas(self.after, request, overrides), StateOverrideError)

    def test_call_revert(self) -> None:
        """
        A revert fails the Deferred with L{ExecutionRevertedError}.
        """
        request = CallRequest(to=REVERTER, data=selector("revertWithReason()"))
        self.failureResultOf(self.service.call(self.after, request, StateOverrides()), ExecutionRevertedError)

    def test_estimate(self) -> None:
        """
        The estimate of a plain transfer is 21000.
        """
        request = CallRequest(sender=ALICE, to=NOBODY, value=1)
        self.assertEqual(self.successResultOf(self.service.estimate_gas(self.after, request, StateOverrides())), 21000)

    def test_time_limit(self) -> None:
        """
        A call still running at the time limit fails with L{CallTimeoutError}.
        """
        service = StateService(self.store, 33, lambda *args: Deferred(), self.clock, time_limit=5, inline_call_gas=0)
        result = service.call(self.after, CallRequest(to=STORAGE), StateOverrides())
        self.clock.advance(4.9)
        self.assertNoResult(result)
        self.clock.advance(0.1)
        failure = self.failureResultOf(result, CallTimeoutError)
        self.assertEqual(str(failure.value), "Execution has got timeout out.")
        estimate = service.estimate_gas(self.after, CallRequest(to=STORAGE), StateOverrides())
        self.clock.advance(5)
        self.failureResultOf(estimate, CallTimeoutError)

    def test_outcome_after_the_time_limit(self) -> None:
        """
        What the thread answers after the time limit is dropped (a failure
        too, without being logged as unhandled); an answer in time stops the
        timer; a caller that gives up stops it too.
        """
        running: list[Deferred[object]] = []

        def run(*args: object) -> Deferred[object]:
            """
            A thread that answers when the test says.
            """
            running.append(Deferred())
            return running[-1]

        service = StateService(self.store, 33, run, self.clock, time_limit=5, inline_call_gas=0)
        late = service.call(self.after, CallRequest(to=STORAGE), StateOverrides())
        self.clock.advance(5)
        self.failureResultOf(late, CallTimeoutError)
        running[0].callback(b"late")
        running.append(Deferred())
        estimate = service.estimate_gas(self.after, CallRequest(to=STORAGE), StateOverrides())
        self.clock.advance(5)
        running[2].errback(RuntimeError("late"))
        self.failureResultOf(estimate, CallTimeoutError)
        self.assertEqual(self.flushLoggedErrors(RuntimeError), [])
        in_time = service.call(self.after, CallRequest(to=STORAGE, data=b"\x01"), StateOverrides())
        running[3].callback(b"answer")
        self.assertEqual(self.successResultOf(in_time), b"answer")
        self.assertEqual(self.clock.getDelayedCalls(), [])
        abandoned = service.call(self.after, CallRequest(to=STORAGE, data=b"\x02"), StateOverrides())
        abandoned.cancel()
        self.failureResultOf(abandoned)
        self.assertEqual(self.clock.getDelayedCalls(), [])


class ProofTests(SynchronousTestCase):
    """
    Tests for L{StateService.get_proof}, checked with py-trie.
    """

    def setUp(self) -> None:
        """
        A service over the two-state store.
        """
        self.store, self.before, self.after = build_store()
        self.service = StateService(self.store, 33, maybeDeferred, Clock())

    def test_existing_account_and_slots(self) -> None:
        """
        The account proof gives the account's RLP and each storage proof its
        slot's value, present or absent.
        """
        proof = self.successResultOf(self.service.get_proof(self.after, STORAGE, [0, 7, 8]))
        account = Account.decode(verify(self.after.state_root, STORAGE, proof.account_proof))
        self.assertEqual(account.storage_root, proof.storage_hash)
        self.assertEqual(account.code_hash, keccak256(runtime("Storage")))
        self.assertEqual(proof.code_hash, account.code_hash)
        values = [storage.value for storage in proof.storage_proofs]
        self.assertEqual(values, [5, 2**255, 0])
        for storage in proof.storage_proofs:
            raw = verify(proof.storage_hash, storage.key.to_bytes(32, "big"), storage.proof)
            self.assertEqual(rlp.decode(raw, sedes=rlp.sedes.big_endian_int) if raw else 0, storage.value)

    def test_absent_account(self) -> None:
        """
        An absent account has a proof of absence and empty fields.
        """
        proof = self.successResultOf(self.service.get_proof(self.after, NOBODY, [1]))
        self.assertEqual(verify(self.after.state_root, NOBODY, proof.account_proof), b"")
        self.assertEqual((proof.balance, proof.nonce, proof.storage_hash), (0, 0, BLANK_ROOT))
        self.assertEqual(proof.storage_proofs[0].value, 0)
        self.assertEqual(proof.storage_proofs[0].proof, ())

    def test_older_block(self) -> None:
        """
        A proof at an older block verifies against that block's root.
        """
        proof = self.successResultOf(self.service.get_proof(self.before, ALICE, []))
        self.assertEqual(Account.decode(verify(self.before.state_root, ALICE, proof.account_proof)).balance, 1)


class AccountCacheTests(SynchronousTestCase):
    """
    Tests for the account cache of L{StateService}.
    """

    def test_cached_by_root(self) -> None:
        """
        A second read of an account at the same root needs no thread; another root reads again.
        """
        store, before, after = build_store()
        calls: list[object] = []

        def counting(function: object, *args: object) -> Deferred[object]:
            """
            Run synchronously, counting the calls.
            """
            calls.append(function)
            return maybeDeferred(function, *args)  # type: ignore[arg-type]

        service = StateService(store, 33, counting, Clock())
        self.assertEqual(self.successResultOf(service.get_balance(after, ALICE)), 10**18)
        self.assertEqual(self.successResultOf(service.get_nonce(after, ALICE)), 3)
        self.assertEqual(len(calls), 1)
        self.assertEqual(self.successResultOf(service.get_balance(before, ALICE)), 1)
        self.assertEqual(self.successResultOf(service.get_balance(after, NOBODY)), 0)
        self.assertEqual(len(calls), 3)

    def test_bounded(self) -> None:
        """
        The cache keeps at most its size, forgetting the least recently used.
        """
        from nodex.services import state as module

        store, before, after = build_store()
        self.patch(module, "ACCOUNT_CACHE_SIZE", 2)
        service = StateService(store, 33, maybeDeferred, Clock())
        for index in range(5):
            service.get_balance(after, bytes([index]) * 20)
        self.assertEqual(len(service._accounts), 2)


class CountedRunsMixin:
    """
    A service over the test store whose reader runs are counted in C{runs}.
    """

    def counted_service(self, **options: Any) -> StateService:
        """
        Build the store and a service that runs its reader jobs at once, counting them.
        """
        self.store, self.before, self.after = build_store()
        self.runs: list[object] = []

        def counting(function: object, *args: object) -> Deferred[object]:
            """
            Run synchronously, counting the runs.
            """
            self.runs.append(function)
            return maybeDeferred(function, *args)  # type: ignore[arg-type]

        self.clock = Clock()
        return StateService(self.store, 33, counting, self.clock, **options)


class CallCacheTests(CountedRunsMixin, SynchronousTestCase):
    """
    Tests for the call cache of L{StateService} (every call in the pool).
    """

    def setUp(self) -> None:
        """
        A service that counts its thread runs.
        """
        self.service = self.counted_service(inline_call_gas=0)
        self.get = CallRequest(sender=ALICE, to=STORAGE, data=selector("get()"))

    def test_repeated_call(self) -> None:
        """
        The same call at the same block runs once; at another block or with
        other data it runs again.
        """
        for _ in range(3):
            self.assertEqual(self.successResultOf(self.service.call(self.after, self.get, StateOverrides())), word(5))
        self.assertEqual(len(self.runs), 1)
        self.successResultOf(self.service.call(self.before, self.get, StateOverrides()))
        other = CallRequest(sender=ALICE, to=STORAGE, data=selector("value()"))
        self.assertEqual(self.successResultOf(self.service.call(self.after, other, StateOverrides())), word(5))
        self.assertEqual(len(self.runs), 3)

    def test_overrides_and_failures_not_kept(self) -> None:
        """
        Calls with overrides and calls that revert always run.
        """
        overrides = StateOverrides({STORAGE: AccountOverride(state_diff={0: 1})})
        for _ in range(2):
            self.assertEqual(self.successResultOf(self.service.call(self.after, self.get, overrides)), word(1))
        revert = CallRequest(to=REVERTER, data=selector("revertWithReason()"))
        for _ in range(2):
            self.failureResultOf(self.service.call(self.after, revert, StateOverrides()), ExecutionRevertedError)
        self.assertEqual(len(self.runs), 4)
        self.assertEqual(self.successResultOf(self.service.call(self.after, self.get, StateOverrides())), word(5))


class InlineCallTests(CountedRunsMixin, SynchronousTestCase):
    """
    Tests for the first run of a call on the calling thread, within
    L{INLINE_CALL_GAS}, before the reader pool.
    """

    def setUp(self) -> None:
        """
        A service whose reader runs are counted.
        """
        self.service = self.counted_service()

    def call(self, request: CallRequest, code: bytes | None = None) -> Deferred[bytes]:
        """
        Call C{request} after the block, with C{code} put at its target by an override.
        """
        overrides = StateOverrides() if code is None else StateOverrides({request.to: AccountOverride(code=code)})
        return self.service.call(self.after, request, overrides)

    def test_view_answered_at_once(self) -> None:
        """
        A view of a few thousand gas is answered without a reader run, with
        the answer of the full run, and kept for the next time.
        """
        request = CallRequest(sender=ALICE, to=STORAGE, data=selector("get()"))
        self.assertEqual(self.successResultOf(self.call(request)), word(5))
        self.assertEqual(self.successResultOf(self.call(request)), word(5))
        self.assertEqual(self.runs, [])

    def test_revert_answered_at_once(self) -> None:
        """
        A call that reverts without looking at its gas fails at once.
        """
        failure = self.failureResultOf(self.call(CallRequest(to=REVERTER, data=selector("revertWithReason()"))))
        failure.trap(ExecutionRevertedError)
        self.assertEqual(self.runs, [])

    def test_gas_instruction_goes_to_the_pool(self) -> None:
        """
        A call that reads GAS gets the answer of its full gas, from the pool.
        """
        # GAS, PUSH0, MSTORE, PUSH1 32, PUSH0, RETURN: return the gas left.
        code = bytes.fromhex("5a5f5260205ff3")
        target = Address(b"\x51" * 20)
        output = self.successResultOf(self.call(CallRequest(to=target, gas=1_000_000), code))
        self.assertEqual(len(self.runs), 1)
        self.assertGreater(int.from_bytes(output, "big"), INLINE_CALL_GAS)

    def test_out_of_gas_goes_to_the_pool(self) -> None:
        """
        A call that runs out of the trial's gas runs again in the pool with
        all of its gas (here it runs out there too: the reference answers
        an empty output, no error).
        """
        # JUMPDEST, PUSH0, JUMP: loop forever.
        code = bytes.fromhex("5b5f56")
        target = Address(b"\x52" * 20)
        self.assertEqual(self.successResultOf(self.call(CallRequest(to=target, gas=300_000), code)), b"")
        self.assertEqual(len(self.runs), 1)

    def test_small_gas_runs_whole_at_once(self) -> None:
        """
        A call whose own gas is within the trial's runs only once, at once,
        whatever happens in it.
        """
        code = bytes.fromhex("5b5f56")
        target = Address(b"\x53" * 20)
        self.assertEqual(self.successResultOf(self.call(CallRequest(to=target, gas=50_000), code)), b"")
        self.assertEqual(self.runs, [])

    def test_gas_price_goes_to_the_pool(self) -> None:
        """
        With a gas price, what the sender must afford depends on the gas:
        such a call is not tried at once.
        """
        request = CallRequest(sender=ALICE, to=STORAGE, data=selector("get()"), gas_price=1)
        self.assertEqual(self.successResultOf(self.call(request)), word(5))
        self.assertEqual(len(self.runs), 1)

    def test_total_of_trials_bounded(self) -> None:
        """
        Trials on the calling thread stop once they have taken
        L{INLINE_WINDOW_BUDGET} seconds within a window: later calls go to
        the pool until a window has passed.
        """
        run_call = self.service._run_call

        def slow(*args: object) -> object:
            """
            A trial that takes 4 ms of the clock.
            """
            self.clock.advance(0.004)
            return run_call(*args)

        self.patch(self.service, "_run_call", slow)
        for value in range(3):
            request = CallRequest(sender=ALICE, to=STORAGE, data=selector("get()") + word(value))
            self.successResultOf(self.call(request))
        self.assertEqual(self.runs, [])
        request = CallRequest(sender=ALICE, to=STORAGE, data=selector("get()") + word(7))
        self.successResultOf(self.call(request))
        self.assertEqual(len(self.runs), 1)
        self.clock.advance(INLINE_WINDOW)
        request = CallRequest(sender=ALICE, to=STORAGE, data=selector("get()") + word(8))
        self.successResultOf(self.call(request))
        self.assertEqual(len(self.runs), 1)

    def test_off(self) -> None:
        """
        With no trial gas every call goes to the pool.
        """
        self.service.inline_call_gas = 0
        request = CallRequest(sender=ALICE, to=STORAGE, data=selector("get()"))
        self.assertEqual(self.successResultOf(self.call(request)), word(5))
        self.assertEqual(len(self.runs), 1)


class InlineEstimateTests(CountedRunsMixin, SynchronousTestCase):
    """
    Tests for estimates made on the calling thread within
    L{INLINE_ESTIMATE_TIME}, before the reader pool.
    """

    def setUp(self) -> None:
        """
        A service whose reader runs are counted, and the same store's
        estimates made in the pool only.
        """
        self.service = self.counted_service()
        self.pooled = StateService(self.store, 33, maybeDeferred, Clock(), inline_call_gas=0)

    def estimate(self, service: StateService, request: CallRequest, code: bytes | None = None) -> Deferred[int]:
        """
        Estimate C{request} after the block, with C{code} put at its target by an override.
        """
        overrides = StateOverrides() if code is None else StateOverrides({request.to: AccountOverride(code=code)})
        return service.estimate_gas(self.after, request, overrides)

    def test_answered_at_once(self) -> None:
        """
        A storage write, with and without a refund, is estimated without a
        reader run, with the pool's answer.
        """
        for value in (7, 0):
            request = CallRequest(sender=ALICE, to=STORAGE, data=selector("set(uint256)") + word(value))
            self.assertEqual(
                self.successResultOf(self.estimate(self.service, request)),
                self.successResultOf(self.estimate(self.pooled, request)),
            )
        self.assertEqual(self.runs, [])

    def test_revert_at_once(self) -> None:
        """
        A call that reverts without looking at its gas fails at once.
        """
        failure = self.failureResultOf(self.estimate(self.service, CallRequest(to=REVERTER, data=selector("revertWithReason()"))))
        failure.trap(ExecutionRevertedError)
        self.assertEqual(self.runs, [])

    def test_gas_reader_at_once(self) -> None:
        """
        Code that reads GAS (as a call forwarding its gas does) is
        estimated at once too, with the pool's answer.
        """
        # GAS, POP, STOP.
        code = bytes.fromhex("5a5000")
        target = Address(b"\x54" * 20)
        request = CallRequest(sender=ALICE, to=target)
        self.assertEqual(
            self.successResultOf(self.estimate(self.service, request, code)),
            self.successResultOf(self.estimate(self.pooled, request, code)),
        )
        self.assertEqual(self.runs, [])

    def test_beyond_the_trial_gas_at_once(self) -> None:
        """
        A call that needs more than L{INLINE_CALL_GAS} is estimated at once
        while its runs stay within L{INLINE_ESTIMATE_TIME}: its runs are not
        bounded by that gas.  (The thread's CPU clock is stopped: the
        countdown takes longer than that on a real one.)
        """
        self.patch(self.service, "_thread_time", lambda: 0.0)
        self.patch(self.service, "_wall_time", lambda: 0.0)
        code = COUNTDOWN
        target = Address(b"\x55" * 20)
        request = CallRequest(sender=ALICE, to=target)
        estimate = self.successResultOf(self.estimate(self.service, request, code))
        self.assertGreater(estimate, INLINE_CALL_GAS)
        self.assertEqual(estimate, self.successResultOf(self.estimate(self.pooled, request, code)))
        self.assertEqual(self.runs, [])

    def test_past_the_deadline_goes_to_the_pool(self) -> None:
        """
        An estimate whose runs pass L{INLINE_ESTIMATE_TIME} is given up on
        this thread (its EVM stops at a jump after 100,000 gas) and made in
        the pool, with the pool's answer; the time it took counts against
        the window's budget.
        """
        # The thread's CPU clock moves a millisecond every time it is read
        # (and the reactor's with it): the countdown of 1.5 Mgas reads it
        # at least fifteen times (a jump after each 100,000 gas).
        cpu = [0.0]

        def reading() -> float:
            self.clock.advance(0.001)
            cpu[0] += 0.001
            return cpu[0]

        self.patch(self.service, "_thread_time", reading)
        self.patch(self.service, "_wall_time", reading)
        target = Address(b"\x55" * 20)
        request = CallRequest(sender=ALICE, to=target)
        estimate = self.successResultOf(self.estimate(self.service, request, COUNTDOWN))
        self.assertEqual(estimate, self.successResultOf(self.estimate(self.pooled, request, COUNTDOWN)))
        self.assertEqual(len(self.runs), 1)
        self.assertGreaterEqual(self.service._window_spent, INLINE_ESTIMATE_TIME)

    def test_preempted_stays_at_once(self) -> None:
        """
        The deadline is on the thread's CPU clock: a run during which the
        monotonic clock moves far (the thread preempted) but the thread's
        CPU clock does not is not given up; the CPU clock is read only
        once the monotonic clock is past the budget.
        """
        wall = [0.0]
        cpu_reads: list[float] = []

        def wall_reading() -> float:
            wall[0] += 0.001
            return wall[0]

        def cpu_reading() -> float:
            cpu_reads.append(wall[0])
            return 0.0

        self.patch(self.service, "_wall_time", wall_reading)
        self.patch(self.service, "_thread_time", cpu_reading)
        target = Address(b"\x55" * 20)
        request = CallRequest(sender=ALICE, to=target)
        estimate = self.successResultOf(self.estimate(self.service, request, COUNTDOWN))
        self.assertEqual(estimate, self.successResultOf(self.estimate(self.pooled, request, COUNTDOWN)))
        self.assertEqual(self.runs, [])
        # The reading that set the deadline, then only readings past the budget.
        self.assertGreater(len(cpu_reads), 1)
        self.assertTrue(all(when > INLINE_ESTIMATE_TIME for when in cpu_reads[1:]))


COUNTDOWN = bytes.fromhex("61ea60" "5b" "6001" "90" "03" "80" "6003" "57" "00")
"""
A countdown from 60,000 (about 1.5 Mgas): PUSH2 60000, JUMPDEST, PUSH1 1,
SWAP1, SUB, DUP1, PUSH1 3, JUMPI, STOP.
"""


BLOCKHASH_CODE = bytes.fromhex("5f35405f5260205ff3")
"""Returns BLOCKHASH of the number in its call data."""


class ReaderCacheTests(SynchronousTestCase):
    """
    Tests for what the readers of L{StateService} share: decoded trie nodes
    and code, by hash.
    """

    def setUp(self) -> None:
        """
        A service over a store that counts the reads of each column.
        """
        self.store, self.before, self.after = build_store()
        self.reads: list[str] = []
        store_get = self.store.get

        def get(column: str, key: bytes) -> bytes | None:
            """
            Count, then read.
            """
            self.reads.append(column)
            return store_get(column, key)

        self.patch(self.store, "get", get)
        self.service = StateService(self.store, 33, maybeDeferred, Clock())

    def test_calls_read_nodes_and_code_once(self) -> None:
        """
        Calls with other data at the same block read no trie node and no
        code again, and still answer right.
        """
        first = CallRequest(sender=ALICE, to=STORAGE, data=selector("get()"))
        self.assertEqual(self.successResultOf(self.service.call(self.after, first, StateOverrides())), word(5))
        self.assertIn(CODE, self.reads)
        del self.reads[:]
        second = CallRequest(sender=ALICE, to=STORAGE, data=selector("value()"))
        self.assertEqual(self.successResultOf(self.service.call(self.after, second, StateOverrides())), word(5))
        self.assertNotIn(CODE, self.reads)
        self.assertNotIn(TRIE_NODES, self.reads)
        self.assertEqual(self.successResultOf(self.service.call(self.before, first, StateOverrides())), b"")

    def test_code_bounded(self) -> None:
        """
        The kept code stays within L{CODE_CACHE_BYTES}: past it, the cache starts again.
        """
        from nodex.services import state as module

        self.patch(module, "CODE_CACHE_BYTES", 1)
        request = CallRequest(sender=ALICE, to=STORAGE, data=selector("get()"))
        self.successResultOf(self.service.call(self.after, request, StateOverrides()))
        self.assertEqual(self.service._codes, {})


class SharedAccountTests(SynchronousTestCase):
    """
    Tests for L{ReaderState}: the accounts the service's states share by
    state root and address.
    """

    def setUp(self) -> None:
        self.store, self.before, self.after = build_store()
        self.shared: dict[Any, Any] = {}
        self.walks: list[bytes] = []

        def opener(root: bytes) -> ReaderState:
            state = ReaderState(trie_node_reader(self.store), lambda code_hash: None, root, None, self.shared)
            trie_get = state._trie.get

            def get(key: bytes) -> bytes | None:
                self.walks.append(key)
                return trie_get(key)

            state._trie.get = get  # type: ignore[method-assign]
            return state

        self.open = opener

    def test_read_once_per_root(self) -> None:
        """
        An account read by one state is not read from the trie again by
        another at the same root; at another root it is.
        """
        self.assertEqual(self.open(self.after.state_root).get_balance(ALICE), 10**18)
        self.assertEqual(self.open(self.after.state_root).get_balance(ALICE), 10**18)
        self.assertEqual(self.open(self.after.state_root).get_balance(NOBODY), 0)
        self.assertEqual(self.open(self.after.state_root).get_balance(NOBODY), 0)
        self.assertEqual(self.open(self.before.state_root).get_balance(ALICE), 1)
        self.assertEqual(self.walks, [ALICE, NOBODY, ALICE])

    def test_changes_stay_in_their_state(self) -> None:
        """
        A state's changes, committed or reverted, are its own: other states
        at the root read what the root holds, and the changing state reads
        its own values, after a commit too.
        """
        state = self.open(self.after.state_root)
        state.begin_transaction()
        state.set_balance(ALICE, 7)
        state.set_balance(NOBODY, 9)
        self.assertEqual(self.open(self.after.state_root).get_balance(ALICE), 10**18)
        state.revert(0)
        self.assertEqual(state.get_balance(NOBODY), 0)
        state.set_balance(ALICE, 8)
        state.commit()
        self.assertEqual((state.get_balance(ALICE), state.get_nonce(ALICE)), (8, 3))
        self.assertEqual(self.open(self.after.state_root).get_balance(ALICE), 10**18)
        self.assertEqual(self.open(self.after.state_root).get_balance(NOBODY), 0)

    def test_bounded(self) -> None:
        """
        Past L{SHARED_ACCOUNTS_SIZE} accounts the cache starts again.
        """
        from nodex.services import state as module

        self.patch(module, "SHARED_ACCOUNTS_SIZE", 1)
        self.open(self.after.state_root).get_balance(ALICE)
        self.open(self.after.state_root).get_balance(NOBODY)
        self.assertEqual(list(self.shared), [(self.after.state_root, NOBODY)])

    def test_service_calls_share(self) -> None:
        """
        The service's calls open such states: a second call at the block
        walks the trie for neither its sender nor its contract.
        """
        service = StateService(self.store, 33, maybeDeferred, Clock())
        first = CallRequest(sender=ALICE, to=STORAGE, data=selector("get()"))
        self.successResultOf(service.call(self.after, first, StateOverrides()))
        self.assertIn((self.after.state_root, ALICE), service._shared_accounts)
        self.assertIn((self.after.state_root, STORAGE), service._shared_accounts)


class BlockHashTests(SynchronousTestCase):
    """
    BLOCKHASH in calls follows the called block's own ancestry.
    """

    def setUp(self) -> None:
        """
        Headers of a canonical chain g, c1, c2 and a side chain s1, s2 on g,
        all over the same state.
        """
        self.store, _, state_header = build_store()
        root = state_header.state_root
        self.genesis = header_at(root, 0)
        self.c1 = replace(header_at(root, 1), parent_hash=self.genesis.hash)
        self.c2 = replace(header_at(root, 2), parent_hash=self.c1.hash)
        self.s1 = replace(header_at(root, 1), parent_hash=self.genesis.hash, extra_data=b"side")
        self.s2 = replace(header_at(root, 2), parent_hash=self.s1.hash, extra_data=b"side")
        batch = self.store.batch()
        for header in (self.genesis, self.c1, self.c2, self.s1, self.s2):
            write_header_rlp(batch, header.hash, header.encode())
        for header in (self.genesis, self.c1, self.c2):
            write_canonical_hash(batch, header.number, header.hash)
        self.store.write(batch)
        self.service = StateService(self.store, 33, maybeDeferred, Clock())
        self.overrides = StateOverrides({NOBODY: AccountOverride(code=BLOCKHASH_CODE)})

    def block_hash(self, header: Header, number: int) -> bytes:
        """
        What BLOCKHASH(C{number}) gives in a call at C{header}.
        """
        request = CallRequest(to=NOBODY, data=word(number))
        return self.successResultOf(self.service.call(header, request, self.overrides))

    def test_canonical(self) -> None:
        """
        At a canonical block, the canonical ancestors; nothing for itself or later.
        """
        self.assertEqual(self.block_hash(self.c2, 1), self.c1.hash)
        self.assertEqual(self.block_hash(self.c2, 0), self.genesis.hash)
        self.assertEqual(self.block_hash(self.c1, 1), bytes(32))
        self.assertEqual(self.block_hash(self.c1, 2), bytes(32))

    def test_no_typing_union_per_call(self) -> None:
        """
        A call's BLOCKHASH lookup builds no typing union (an evaluated
        C{Hash32 | None} annotation of the nested lookup did, once per call).
        """
        import typing

        def refused(*args: object) -> object:
            raise AssertionError("a typing union was made")

        self.patch(typing.NewType, "__or__", refused)
        self.assertEqual(self.block_hash(self.c2, 1), self.c1.hash)

    def test_side_chain(self) -> None:
        """
        At a block of a side chain, its own ancestors.
        """
        self.assertEqual(self.block_hash(self.s2, 1), self.s1.hash)
        self.assertEqual(self.block_hash(self.s2, 0), self.genesis.hash)
        self.assertEqual(self.block_hash(self.s2, 2), bytes(32))


ENDLESS = b"\x5b\x5f\x56"
"""JUMPDEST, PUSH0, JUMP: code that loops until its gas runs out."""


class TimedOutCallsTests(TestCase):
    """
    L{StateService} with its own reader threads and the real reactor: a
    call past its time limit stops running (issue 26).
    """

    async def test_endless_calls_free_the_readers(self) -> None:
        """
        Eight calls of an endless loop (a state override) with a gas cap
        that would keep a thread busy for hours each, on two reader threads:
        each answers L{CallTimeoutError} at the limit, the EVM stops in its
        thread, and a read sent after them is answered (before, the threads
        kept running the calls to the end of their gas, and the read waited
        behind them).  An estimate of the same loop stops too.
        """
        store, _, after = build_store()
        service = StateService(
            store, 33, None, reactor, call_gas_cap=10**15, time_limit=0.2, readers=2, inline_call_gas=0
        )
        service.startService()
        self.addCleanup(service.stopService)
        overrides = StateOverrides({NOBODY: AccountOverride(code=ENDLESS)})
        calls = [service.call(after, CallRequest(to=NOBODY, data=bytes([n])), overrides) for n in range(8)]
        for call in calls:
            with self.assertRaises(CallTimeoutError):
                await call
        estimate = service.estimate_gas(replace(after, gas_limit=10**15), CallRequest(to=NOBODY), overrides)
        with self.assertRaises(CallTimeoutError):
            await estimate
        self.assertEqual(await service.get_storage(after, STORAGE, 0), 5)
        self.assertEqual(await service.get_balance(after, ALICE), 10**18)
