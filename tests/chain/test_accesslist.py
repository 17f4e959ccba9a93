"""
Tests for L{nodex.chain.tracing.accesslist}: C{eth_createAccessList}'s list
and gas.
"""

from collections.abc import Callable

from twisted.trial.unittest import SynchronousTestCase

from nodex.chain.calls import CallError, CallRequest, InsufficientFundsError, execute_call
from nodex.chain.tracing.accesslist import AccessListTracer, create_access_list
from nodex.primitives import Address, Hash32
from nodex.state.state import State
from nodex.structures.transactions import AccessListEntry
from tests.chain.test_calls import ALICE, BLOCK, NO_OVERRIDES, stored_world

CALLER = Address(b"\x05" * 20)
CALLEE = Address(b"\x06" * 20)
WATCHED = Address(b"\x77" * 20)
ECRECOVER = Address((1).to_bytes(20, "big"))

# SLOAD 1, SLOAD 2, BALANCE(WATCHED), EXTCODESIZE(ecrecover), CALL(CALLEE), STOP.
CALLER_CODE = bytes.fromhex(
    "6001545060025450" + "73" + WATCHED.hex() + "3150" + "60013b50"
    + "6000600060006000600073" + CALLEE.hex() + "61fffff15000"
)
# SLOAD 3, then REVERT: its slot is listed although its frame reverts.
CALLEE_CODE = bytes.fromhex("600354506000600" + "0fd")


def slot(number: int) -> Hash32:
    """
    A storage key.
    """
    return Hash32(number.to_bytes(32, "big"))


def make_world() -> Callable[[], State]:
    """
    ALICE funded, the two contracts; a function opening a fresh state.
    """

    def build(state: State) -> None:
        state.set_balance(ALICE, 10**18)
        state.set_code(CALLER, CALLER_CODE)
        state.set_code(CALLEE, CALLEE_CODE)

    return stored_world(build)


class CreateAccessListTests(SynchronousTestCase):
    """
    Tests for L{create_access_list}.
    """

    def setUp(self) -> None:
        self.open_state = make_world()

    def create(self, **fields: object) -> object:
        """
        The access list of a call from ALICE to CALLER.
        """
        request = CallRequest(sender=ALICE, to=CALLER, **fields)  # type: ignore[arg-type]
        return create_access_list(self.open_state, BLOCK, request, NO_OVERRIDES, 10_000_000)  # type: ignore[arg-type]

    def test_list_and_gas(self) -> None:
        """
        The callee's slots, the accounts looked at and the called contract
        with the slot of its reverted frame are listed, in the order first
        seen; the sender and the precompile are not.  The gas is that of
        the call run with the list.
        """
        result = self.create()
        expected = (
            AccessListEntry(CALLER, (slot(1), slot(2))),
            AccessListEntry(WATCHED, ()),
            AccessListEntry(CALLEE, (slot(3),)),
        )
        self.assertEqual(result.access_list, expected)  # type: ignore[attr-defined]
        self.assertIsNone(result.error)  # type: ignore[attr-defined]
        with_list = CallRequest(sender=ALICE, to=CALLER, access_list=expected)
        rerun = execute_call(self.open_state, BLOCK, with_list, NO_OVERRIDES, 10_000_000)  # type: ignore[arg-type]
        self.assertEqual(result.gas_used, rerun.gas_used)  # type: ignore[attr-defined]

    def test_request_list_kept(self) -> None:
        """
        The request's own list is the start: its other entries stay, and
        the sender without keys is dropped.
        """
        other = AccessListEntry(Address(b"\x99" * 20), (slot(7),))
        result = self.create(access_list=(AccessListEntry(ALICE, ()), other))
        self.assertEqual(result.access_list[0], other)  # type: ignore[attr-defined]
        self.assertNotIn(ALICE, [entry.address for entry in result.access_list])  # type: ignore[attr-defined]

    def test_failure_reported(self) -> None:
        """
        A call whose gas covers the list's intrinsic gas but not its run
        answers the list and the error.
        """
        result = self.create(gas=34_000)
        self.assertEqual(len(result.access_list), 3)  # type: ignore[attr-defined]
        self.assertEqual(result.error, "out of gas")  # type: ignore[attr-defined]

    def test_list_above_gas(self) -> None:
        """
        When the gathered list's intrinsic gas is above the request's gas,
        the answer is an error, as geth's.
        """
        exc = self.assertRaises(CallError, self.create, gas=21_100)
        self.assertIn("intrinsic gas too low", str(exc))

    def test_reverted_call(self) -> None:
        """
        A call that reverts answers its list and "execution reverted".
        """
        request = CallRequest(sender=ALICE, to=CALLEE)
        result = create_access_list(self.open_state, BLOCK, request, NO_OVERRIDES, 10_000_000)  # type: ignore[arg-type]
        self.assertEqual(result.access_list, (AccessListEntry(CALLEE, (slot(3),)),))
        self.assertEqual(result.error, "execution reverted")

    def test_insufficient_funds(self) -> None:
        """
        A value the sender cannot pay is an error, as for eth_call.
        """
        self.assertRaises(InsufficientFundsError, self.create, value=10**19)


class AccessListTracerTests(SynchronousTestCase):
    """
    Tests for L{AccessListTracer} alone.
    """

    def test_excluded_only_with_keys(self) -> None:
        """
        An excluded account is listed once it has a slot, not before.
        """
        tracer = AccessListTracer((), frozenset({bytes(CALLER)}))
        tracer.account_used(CALLER)
        self.assertEqual(tracer.access_list(), ())
