"""
Tests for L{nodex.evm.cancellation}: a run stops once it is cancelled or
its deadline passes, at its next look (a frame's start, or a jump after
L{CHECK_GAS} gas).
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.evm.cancellation import (
    CHECK_GAS,
    CURRENT_CANCELLATION,
    Cancellation,
    ExecutionCancelledError,
    cancellable,
)
from nodex.evm.environment import TransactionEnvironment
from nodex.evm.errors import OutOfGasError
from nodex.evm.frame import ExecutionContext, Message
from nodex.evm.interpreter import process_message
from nodex.evm.tracing import Tracer
from tests.evm.test_instructions import BLOCK, CALLER, CONTRACT, OTHER, make_state, push

ENDLESS = b"\x5b\x5f\x56"
"""JUMPDEST, PUSH0, JUMP: a loop of 11 gas that never ends by itself."""

ENDLESS_JUMPI = b"\x5b\x60\x01\x5f\x57"
"""JUMPDEST, PUSH1 1, PUSH0, JUMPI: the same loop through JUMPI (16 gas)."""

CALL_OTHER = push(0) * 4 + push(0) + push(int.from_bytes(OTHER, "big")) + b"\x5a\xf1\x00"
"""CALL OTHER with all the gas, then STOP."""


class _Clock:
    """
    A clock that moves on by one second each time it is read, and counts the reads.
    """

    def __init__(self) -> None:
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return float(self.reads)


class _StepCounter:
    """
    A tracer that wants every step, and counts them.
    """

    wants_steps = True
    wants_stack = False
    wants_memory = False

    def __init__(self) -> None:
        self.steps = 0

    def capture_enter(self, evm: object) -> None:
        """
        Nothing to do.
        """

    def capture_exit(self, evm: object) -> None:
        """
        Nothing to do.
        """

    def capture_step(self, *args: object) -> None:
        """
        Count the step.
        """
        self.steps += 1


def run(code: bytes, gas: int, cancellation: Cancellation | None, tracer: Tracer | None = None,
        accounts: dict[bytes, bytes] | None = None) -> int:
    """
    Run C{code} as C{CONTRACT}'s with C{cancellation} current.

    @return: the gas used.
    """
    state = make_state(code, accounts)  # type: ignore[arg-type]
    with cancellable(cancellation):
        context = ExecutionContext(state, BLOCK, TransactionEnvironment(CALLER, 7), tracer)
    message = Message(CALLER, CONTRACT, CONTRACT, gas, 0, b"", CONTRACT, code, 0)
    evm = process_message(message, context)
    return gas - evm.gas_left


class CancellationTests(SynchronousTestCase):
    """
    Tests for the interpreter's looks at its cancellation.
    """

    def assert_stops(self, code: bytes, deadline_reads: int, tracer: Tracer | None = None) -> int:
        """
        Run an endless C{code} with more gas than it could use here, and a
        deadline that passes at the clock's C{deadline_reads}th read: it
        stops with L{ExecutionCancelledError} then.

        @return: how many times the clock was read.
        """
        clock = _Clock()
        cancellation = Cancellation(deadline_reads - 0.5, clock)
        with self.assertRaises(ExecutionCancelledError):
            run(code, 10**15, cancellation, tracer)
        self.assertTrue(cancellation.cancelled)
        self.assertEqual(clock.reads, deadline_reads)
        return clock.reads

    def test_endless_loops_stop(self) -> None:
        """
        A loop through JUMP or JUMPI, which would run for 10^15 gas, stops
        at the first look after its deadline.
        """
        self.assert_stops(ENDLESS, 5)
        self.assert_stops(ENDLESS_JUMPI, 3)

    def test_traced_loop_stops(self) -> None:
        """
        A traced run (the loop that calls its tracer at every step) stops too.
        """
        tracer = _StepCounter()
        self.assert_stops(ENDLESS, 3, tracer)
        self.assertGreater(tracer.steps, 2000)

    def test_look_every_check_gas(self) -> None:
        """
        The loop looks at its clock once per L{CHECK_GAS} gas, at a jump:
        a run of 10 * L{CHECK_GAS} gas looks about ten times.
        """
        clock = _Clock()
        cancellation = Cancellation(10.0**9, clock)
        with cancellable(cancellation):
            self.assertIs(CURRENT_CANCELLATION.get(), cancellation)
        self.assertIsNone(CURRENT_CANCELLATION.get())
        used = run(ENDLESS, 10 * CHECK_GAS, cancellation)
        self.assertEqual(used, 10 * CHECK_GAS)
        self.assertIn(clock.reads, range(10, 13))

    def test_cancelled_before_the_first_frame(self) -> None:
        """
        A run cancelled before it starts does not start its first frame.
        """
        cancellation = Cancellation()
        cancellation.cancel()
        with self.assertRaises(ExecutionCancelledError):
            run(ENDLESS, 1000, cancellation)

    def test_look_at_each_frame(self) -> None:
        """
        A CALL starts a frame, which looks at the cancellation first.
        """
        clock = _Clock()
        cancellation = Cancellation(1.5, clock)
        with self.assertRaises(ExecutionCancelledError):
            run(CALL_OTHER, 1_000_000, cancellation, accounts={OTHER: b"\x00"})
        self.assertEqual(clock.reads, 2)

    def test_without_cancellation_unchanged(self) -> None:
        """
        A run without a cancellation runs out of gas as before: all its gas,
        and the frame's error.
        """
        state = make_state(ENDLESS)
        context = ExecutionContext(state, BLOCK, TransactionEnvironment(CALLER, 7))
        self.assertIsNone(context.cancellation)
        message = Message(CALLER, CONTRACT, CONTRACT, 3 * CHECK_GAS, 0, b"", CONTRACT, ENDLESS, 0)
        evm = process_message(message, context)
        self.assertIsInstance(evm.error, OutOfGasError)
        self.assertEqual(evm.gas_left, 0)

    def test_cancellation_from_outside(self) -> None:
        """
        L{Cancellation.cancel} (another thread's, as when the client's time
        is up) stops the run at its next look, whatever the deadline.
        """
        clock = _Clock()
        cancellation = Cancellation(10.0**9, clock)

        def now() -> float:
            if clock.reads == 2:
                cancellation.cancel()
            return clock()

        cancellation._now = now  # type: ignore[attr-defined]
        with self.assertRaises(ExecutionCancelledError):
            run(ENDLESS, 10**15, cancellation)
        self.assertEqual(clock.reads, 3)
