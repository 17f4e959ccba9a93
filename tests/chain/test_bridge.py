"""
Tests for L{nodex.chain.bridge}: the bridge account's storage layout.
"""

from eth_utils import keccak
from twisted.trial.unittest import SynchronousTestCase

from nodex.chain.bridge import (
    BRIDGE_ADDRESS,
    MAX_WAITING,
    WAITING_BASE_SLOT,
    BridgeState,
    BridgeStateError,
    read_bridge_state,
    waiting_slot,
)


class BridgeStateTests(SynchronousTestCase):
    """
    Tests for L{read_bridge_state}.
    """

    def test_address(self) -> None:
        """
        The bridge account is the one genesis funds on regtest.
        """
        self.assertEqual(BRIDGE_ADDRESS.hex(), "0000000000000000000000000000000001000006")

    def test_empty_storage(self) -> None:
        """
        An account without storage is height 0 with nothing waiting (a fresh chain).
        """
        self.assertEqual(read_bridge_state(lambda slot: 0), BridgeState(0, ()))

    def test_layout(self) -> None:
        """
        Slot 0 is the height; slot 1 the count; the keys follow Solidity's
        dynamic-array rule (computed here with eth_utils' Keccak).
        """
        base = int.from_bytes(keccak((1).to_bytes(32, "big")), "big")
        self.assertEqual(WAITING_BASE_SLOT, base)
        storage = {0: 812_345, 1: 2, base: 0xAB, base + 1: 2**256 - 1, base + 2: 7}
        state = read_bridge_state(lambda slot: storage.get(slot, 0))
        self.assertEqual(state.best_chain_height, 812_345)
        self.assertEqual(state.waiting_for_signatures, ((0xAB).to_bytes(32, "big"), b"\xff" * 32))

    def test_slot_wraps(self) -> None:
        """
        Array slots wrap around 2**256, as the EVM's addition does.
        """
        self.assertEqual(waiting_slot(2**256 - WAITING_BASE_SLOT), 0)

    def test_corrupt_count(self) -> None:
        """
        A count beyond the bound is an error, not an endless read.
        """
        self.assertRaises(BridgeStateError, read_bridge_state, lambda slot: MAX_WAITING + 1 if slot == 1 else 0)
