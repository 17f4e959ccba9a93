"""
Tests for L{nodex.state.overrides}.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.primitives import Address
from nodex.state.overrides import AccountOverride, StateOverrideError, StateOverrides, apply_overrides
from nodex.state.state import State
from tests.chain.test_calls import stored_world

ALICE = Address(b"\xaa" * 20)
BOB = Address(b"\xbb" * 20)


def committed_state() -> State:
    """
    A state read back from a store, where ALICE has a balance, a nonce,
    code and two storage slots.
    """

    def build(state: State) -> None:
        state.set_balance(ALICE, 1000)
        state.set_nonce(ALICE, 7)
        state.set_code(ALICE, b"\x60\x00")
        state.set_storage(ALICE, 1, 11)
        state.set_storage(ALICE, 2, 22)

    return stored_world(build)()


class ApplyOverridesTests(SynchronousTestCase):
    """
    Tests for L{apply_overrides}.
    """

    def test_balance_nonce_code(self) -> None:
        """
        Balance, nonce and code replace the account's, also for a new account.
        """
        state = committed_state()
        overrides = StateOverrides({
            ALICE: AccountOverride(balance=5, nonce=9, code=b"\x00"),
            BOB: AccountOverride(balance=2**256 - 1),
        })
        apply_overrides(state, overrides)
        self.assertEqual((state.get_balance(ALICE), state.get_nonce(ALICE)), (5, 9))
        self.assertEqual(state.get_code(ALICE), b"\x00")
        self.assertEqual(state.get_balance(BOB), 2**256 - 1)
        self.assertEqual(state.get_storage(ALICE, 1), 11)

    def test_state_replaces_all_storage(self) -> None:
        """
        C{state} empties the storage before setting its slots.
        """
        state = committed_state()
        apply_overrides(state, StateOverrides({ALICE: AccountOverride(state={2: 5, 3: 6})}))
        self.assertEqual([state.get_storage(ALICE, slot) for slot in (1, 2, 3)], [0, 5, 6])

    def test_state_diff_keeps_other_slots(self) -> None:
        """
        C{stateDiff} sets its slots and leaves the others.
        """
        state = committed_state()
        apply_overrides(state, StateOverrides({ALICE: AccountOverride(state_diff={2: 5, 3: 6})}))
        self.assertEqual([state.get_storage(ALICE, slot) for slot in (1, 2, 3)], [11, 5, 6])

    def test_overridden_slot_is_original(self) -> None:
        """
        After a new transaction begins, an overridden slot is the slot's
        original value (what SSTORE pricing compares with).
        """
        state = committed_state()
        apply_overrides(state, StateOverrides({ALICE: AccountOverride(state_diff={1: 99})}))
        state.begin_transaction()
        self.assertEqual(state.get_original_storage(ALICE, 1), 99)

    def test_empty_set_is_false(self) -> None:
        """
        An empty override set is falsy and changes nothing.
        """
        state = committed_state()
        self.assertFalse(StateOverrides())
        apply_overrides(state, StateOverrides())
        self.assertEqual(state.get_balance(ALICE), 1000)


class RefusedOverridesTests(SynchronousTestCase):
    """
    Override sets that L{apply_overrides} refuses with L{StateOverrideError}.
    """

    def assertRefused(self, override: AccountOverride, words: str, address: Address = ALICE) -> None:
        """
        Applying C{override} raises with C{words} in the message and changes nothing.
        """
        state = committed_state()
        overrides = StateOverrides({BOB: AccountOverride(balance=1), address: override})
        error = self.assertRaises(StateOverrideError, apply_overrides, state, overrides)
        self.assertIn(words, str(error))
        self.assertEqual(state.get_balance(BOB), 0)

    def test_move_precompile(self) -> None:
        """
        C{movePrecompileToAddress} is not supported yet.
        """
        self.assertRefused(AccountOverride(move_precompile_to=BOB), "movePrecompileToAddress is not supported yet")

    def test_state_with_state_diff(self) -> None:
        """
        C{state} and C{stateDiff} together are refused.
        """
        self.assertRefused(AccountOverride(state={}, state_diff={}), "both 'state' and 'stateDiff'")

    def test_sizes(self) -> None:
        """
        Balances beyond 32 bytes, nonces beyond 8 bytes and slots beyond 32 bytes are refused.
        """
        self.assertRefused(AccountOverride(balance=2**256), "32-byte")
        self.assertRefused(AccountOverride(nonce=2**64), "8-byte")
        self.assertRefused(AccountOverride(state_diff={2**256: 1}), "32-byte words")

    def test_precompile_code(self) -> None:
        """
        The code of a precompile cannot be replaced.
        """
        self.assertRefused(AccountOverride(code=b"\x00"), "precompiled", Address(b"\x00" * 19 + b"\x01"))
