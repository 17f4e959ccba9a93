"""
Tests for L{nodex.evm.forks}: the rule sets by fork, and the interpreter,
the tracer and transaction execution following the one the block carries.
"""

import json
from dataclasses import replace

from twisted.trial.unittest import SynchronousTestCase

from nodex.chain.execution import apply_transaction, run_call
from nodex.evm.environment import BlockEnvironment
from nodex.evm.forks import (
    CANCUN,
    CANCUN_CLZ,
    DEFAULT_FORK,
    FORKS,
    Fork,
    GasSchedule,
    UnknownForkError,
    fork_named,
)
from nodex.evm.tracing import JSONTracer
from nodex.primitives import Address
from nodex.state.state import State
from nodex.structures.errors import InvalidTransactionError
from nodex.structures.transactions import LegacyTransaction

SENDER = Address(b"\xaa" * 20)
TARGET = Address(b"\xcc" * 20)
COINBASE = Address(b"\xc0" * 20)

# PUSH1 0x01, CLZ, PUSH1 0, MSTORE, PUSH1 32, PUSH1 0, RETURN: returns CLZ(1) = 255.
CLZ_CODE = bytes.fromhex("60011e60005260206000f3")


def block(fork: Fork) -> BlockEnvironment:
    """
    A block environment under C{fork}.
    """
    return BlockEnvironment(coinbase=COINBASE, number=1, timestamp=10, gas_limit=30_000_000, fork=fork)


def make_state() -> State:
    """
    A state with a funded sender and the CLZ contract.
    """
    state = State({}.get, {}.get)
    state.set_balance(SENDER, 10**18)
    state.set_code(TARGET, CLZ_CODE)
    state.commit()
    return state


class ForkTableTests(SynchronousTestCase):
    """
    Tests for the rule set tables.
    """

    def test_names(self) -> None:
        """
        The known rule sets are Cancun and Cancun+CLZ, and the default is Cancun+CLZ.
        """
        self.assertEqual(sorted(FORKS), ["Cancun", "Cancun+CLZ"])
        self.assertIs(DEFAULT_FORK, CANCUN_CLZ)
        self.assertIs(fork_named("Cancun"), CANCUN)

    def test_unknown_name(self) -> None:
        """
        An unknown name raises L{UnknownForkError} naming it and the known ones.
        """
        exc = self.assertRaises(UnknownForkError, fork_named, "Prague")
        self.assertIn("'Prague'", str(exc))
        self.assertIn("Cancun, Cancun+CLZ", str(exc))

    def test_only_clz_differs(self) -> None:
        """
        Cancun's opcode table is Cancun+CLZ's without 0x1E.
        """
        differing = [op for op in range(256) if CANCUN.instructions[op] is not CANCUN_CLZ.instructions[op]]
        self.assertEqual(differing, [0x1E])
        self.assertEqual(CANCUN_CLZ.opcode_names[0x1E], "CLZ")
        self.assertEqual(CANCUN.opcode_names[0x1E], "opcode 0x1e not defined")
        self.assertEqual(len(CANCUN.precompile_addresses), 10)


class ForkExecutionTests(SynchronousTestCase):
    """
    The interpreter and execution follow the block's rule set.
    """

    def test_clz_active(self) -> None:
        """
        Under Cancun+CLZ, CLZ counts the leading zero bits.
        """
        result = run_call(make_state(), block(CANCUN_CLZ), SENDER, TARGET, gas=100_000)
        self.assertTrue(result.success)
        self.assertEqual(int.from_bytes(result.output, "big"), 255)

    def test_clz_invalid_in_cancun(self) -> None:
        """
        Under Cancun, 0x1E is an invalid opcode: the call fails with all its gas.
        """
        result = run_call(make_state(), block(CANCUN), SENDER, TARGET, gas=100_000)
        self.assertFalse(result.success)
        self.assertEqual(result.error, "invalid opcode")
        self.assertEqual(result.gas_used, 100_000)

    def test_trace_names_follow_fork(self) -> None:
        """
        EIP-3155 traces name 0x1E as the fork's table does.
        """
        for fork, name in ((CANCUN_CLZ, "CLZ"), (CANCUN, "opcode 0x1e not defined")):
            lines: list[str] = []
            run_call(make_state(), block(fork), SENDER, TARGET, gas=100_000, tracer=JSONTracer(lines.append))
            self.assertEqual(json.loads(lines[1])["opName"], name)

    def test_transaction_type_outside_fork(self) -> None:
        """
        A transaction type the rule set does not list is invalid.
        """
        legacy_only = replace(CANCUN_CLZ, name="legacy only", transaction_types=frozenset((0,)))
        tx = LegacyTransaction(nonce=0, gas_price=1, gas=100_000, to=TARGET, value=0, data=b"")
        self.assertEqual(apply_transaction(make_state(), block(legacy_only), tx, SENDER).receipt.status, 1)
        narrow = replace(CANCUN_CLZ, name="fee market only", transaction_types=frozenset((2,)))
        exc = self.assertRaises(InvalidTransactionError, apply_transaction, make_state(), block(narrow), tx, SENDER)
        self.assertIn("transaction type 0 is not supported by the fee market only rules", str(exc))

    def test_gas_schedule_code_size(self) -> None:
        """
        The fork's gas schedule limits the deposited code.
        """
        # Initcode returning 2 bytes of code.
        initcode = bytes.fromhex("61ffff6000526002601ef3")
        small = replace(CANCUN_CLZ, gas=GasSchedule(max_code_size=1, max_init_code_size=49152, code_deposit=200))
        self.assertTrue(run_call(make_state(), block(CANCUN_CLZ), SENDER, None, data=initcode).success)
        result = run_call(make_state(), block(small), SENDER, None, data=initcode)
        self.assertFalse(result.success)
