"""
Tests for L{nodex.chain.execution}: checks, payment, refunds, fees, receipts
and calls.
"""

from dataclasses import dataclass

from twisted.trial.unittest import SynchronousTestCase

from nodex.chain.execution import apply_transaction, run_call
from nodex.evm.environment import BlockEnvironment
from nodex.evm.instructions.system import compute_contract_address
from nodex.primitives import Address
from nodex.state.state import State
from nodex.structures.errors import InsufficientBalanceError, IntrinsicGasTooLowError, InvalidTransactionError
from nodex.structures.transactions import AccessListEntry, FeeMarketTransaction, LegacyTransaction

SENDER = Address(b"\xaa" * 20)
TARGET = Address(b"\xcc" * 20)
COINBASE = Address(b"\xc0" * 20)
BLOCK = BlockEnvironment(coinbase=COINBASE, number=1, timestamp=10, gas_limit=30_000_000)

# Stores CALLVALUE at slot 0, logs one topic, returns 32 bytes of 0x2a.
CONTRACT_CODE = bytes.fromhex("34600055" "60aa60006000a1" "602a60005260206000f3")


def make_state() -> State:
    """
    A state with a funded sender and the test contract.
    """
    state = State({}.get, {}.get)
    state.set_balance(SENDER, 10**18)
    state.set_code(TARGET, CONTRACT_CODE)
    state.commit()
    return state


def legacy(nonce: int = 0, gas: int = 100_000, to: bytes = TARGET, value: int = 0, data: bytes = b"", price: int = 10) -> LegacyTransaction:
    """
    An unsigned legacy transaction (the sender is given separately).
    """
    return LegacyTransaction(nonce=nonce, gas_price=price, gas=gas, to=to, value=value, data=data)


@dataclass(frozen=True)
class BlobTransaction:
    """
    The fields of a type 3 transaction that execution reads.
    """

    nonce: int
    gas: int
    to: bytes
    value: int
    data: bytes
    max_fee_per_gas: int
    max_priority_fee_per_gas: int
    max_fee_per_blob_gas: int
    blob_versioned_hashes: tuple[bytes, ...]
    access_list: tuple[AccessListEntry, ...] = ()
    type: int = 3


class ApplyTransactionTests(SynchronousTestCase):
    """
    Tests for L{apply_transaction}.
    """

    def test_call_pays_fees_and_runs(self) -> None:
        """
        A call stores, logs, returns; the sender pays gas used times the price
        to the coinbase and its nonce goes up.
        """
        state = make_state()
        result = apply_transaction(state, BLOCK, legacy(value=5), SENDER)
        self.assertIsNone(result.error)
        self.assertEqual(result.output, (0x2A).to_bytes(32, "big"))
        self.assertEqual(state.get_storage(TARGET, 0), 5)
        self.assertEqual(state.get_nonce(SENDER), 1)
        self.assertEqual(state.get_balance(COINBASE), result.gas_used * 10)
        self.assertEqual(state.get_balance(SENDER), 10**18 - 5 - result.gas_used * 10)
        self.assertEqual(result.receipt.status, 1)
        self.assertEqual(result.receipt.cumulative_gas_used, result.gas_used)
        self.assertEqual(len(result.logs), 1)
        self.assertEqual(result.logs[0].address, TARGET)

    def test_intrinsic_gas_of_transfer(self) -> None:
        """
        A plain transfer to an account without code uses exactly 21000.
        """
        state = make_state()
        result = apply_transaction(state, BLOCK, legacy(to=Address(b"\x11" * 20), value=1), SENDER)
        self.assertEqual(result.gas_used, 21000)
        self.assertEqual(state.get_balance(Address(b"\x11" * 20)), 1)

    def test_cumulative_gas(self) -> None:
        """
        The receipt's cumulative gas adds the block's earlier gas.
        """
        result = apply_transaction(make_state(), BLOCK, legacy(), SENDER, block_gas_used=1000)
        self.assertEqual(result.receipt.cumulative_gas_used, 1000 + result.gas_used)

    def test_creation(self) -> None:
        """
        A creation deploys at the address given by the sender and nonce.
        """
        state = make_state()
        initcode = bytes.fromhex("60ab60005360016000f3")
        result = apply_transaction(state, BLOCK, legacy(to=b"", data=initcode), SENDER)
        address = compute_contract_address(SENDER, 0)
        self.assertEqual(result.contract_address, address)
        self.assertEqual(state.get_code(address), b"\xab")

    def test_out_of_gas_reverts_but_charges(self) -> None:
        """
        A transaction that runs out of gas fails, keeps no state change, and pays all its gas.
        """
        state = make_state()
        result = apply_transaction(state, BLOCK, legacy(gas=25_000, value=3), SENDER)
        self.assertEqual(result.receipt.status, 0)
        self.assertEqual(result.gas_used, 25_000)
        self.assertEqual(state.get_storage(TARGET, 0), 0)
        self.assertEqual(state.get_balance(TARGET), 0)
        self.assertEqual(result.logs, ())
        self.assertFalse(result.reverted)

    def test_revert_is_told_by_type(self) -> None:
        """
        A transaction whose top frame ends in REVERT says so in C{reverted}, whatever its error's text.
        """
        state = make_state()
        state.set_code(TARGET, bytes.fromhex("60aa6000526001601ffd"))
        result = apply_transaction(state, BLOCK, legacy(gas=100_000), SENDER)
        self.assertTrue(result.reverted)
        self.assertEqual(result.output, b"\xaa")

    def test_balance_short_of_the_cost(self) -> None:
        """
        A sender whose balance does not cover gas times price plus value is refused with
        L{InsufficientBalanceError}, an L{InvalidTransactionError}.
        """
        state = make_state()
        state.set_balance(SENDER, 21_000)
        with self.assertRaises(InsufficientBalanceError):
            apply_transaction(state, BLOCK, legacy(value=1), SENDER)

    def test_refund_capped(self) -> None:
        """
        Clearing a slot refunds at most a fifth of the gas used.
        """
        state = State({}.get, {}.get)
        state.set_balance(SENDER, 10**18)
        state.set_code(TARGET, bytes.fromhex("5f5f55"))
        state.set_storage(TARGET, 0, 1)
        state.commit()
        result = apply_transaction(state, BLOCK, legacy(), SENDER)
        used_before_refund = 21000 + 2 + 2 + 2100 + 2900
        self.assertEqual(result.gas_used, used_before_refund - min(used_before_refund // 5, 4800))

    def test_base_fee_burnt(self) -> None:
        """
        With a base fee, the coinbase receives only the priority fee.
        """
        block = BlockEnvironment(coinbase=COINBASE, number=1, timestamp=10, gas_limit=30_000_000, base_fee=7)
        tx = FeeMarketTransaction(
            chain_id=33, nonce=0, max_priority_fee_per_gas=2, max_fee_per_gas=100, gas=21000, to=Address(b"\x11" * 20), value=0, data=b""
        )
        state = make_state()
        result = apply_transaction(state, block, tx, SENDER)
        self.assertEqual(result.effective_gas_price, 9)
        self.assertEqual(state.get_balance(COINBASE), 21000 * 2)
        self.assertEqual(state.get_balance(SENDER), 10**18 - 21000 * 9)

    def test_invalid_transactions(self) -> None:
        """
        Wrong nonce, too little gas, too little balance, a price below the
        base fee, or gas above the block's are refused, leaving the state alone.
        """
        state = make_state()
        for tx, error in [
            (legacy(nonce=1), InvalidTransactionError),
            (legacy(gas=20_000), IntrinsicGasTooLowError),
            (legacy(value=10**18), InvalidTransactionError),
            (legacy(gas=40_000_000), InvalidTransactionError),
        ]:
            self.assertRaises(error, apply_transaction, state, BLOCK, tx, SENDER)
        block = BlockEnvironment(coinbase=COINBASE, number=1, timestamp=10, gas_limit=30_000_000, base_fee=11)
        self.assertRaises(InvalidTransactionError, apply_transaction, state, block, legacy(), SENDER)
        self.assertEqual(state.get_nonce(SENDER), 0)
        self.assertEqual(state.get_balance(SENDER), 10**18)

    def test_sender_with_code_refused(self) -> None:
        """
        A sender that has code cannot send transactions (EIP-3607).
        """
        state = make_state()
        state.set_balance(TARGET, 10**18)
        self.assertRaises(InvalidTransactionError, apply_transaction, state, BLOCK, legacy(), TARGET)

    def test_blob_transaction(self) -> None:
        """
        A blob transaction pays its blob gas at the blob base fee and exposes
        its hashes to BLOBHASH; a hash with a wrong version is refused.
        """
        state = make_state()
        blob_hash = b"\x01" + b"\x00" * 31
        tx = BlobTransaction(0, 50_000, Address(b"\x11" * 20), 0, b"", 10, 1, 5, (blob_hash,))
        result = apply_transaction(state, BLOCK, tx, SENDER)
        self.assertEqual(result.effective_gas_price, 1)
        self.assertEqual(state.get_balance(SENDER), 10**18 - result.gas_used * 1 - 2**17 * 1)
        bad = BlobTransaction(1, 50_000, Address(b"\x11" * 20), 0, b"", 10, 1, 5, (b"\x02" + b"\x00" * 31,))
        self.assertRaises(InvalidTransactionError, apply_transaction, state, BLOCK, bad, SENDER)

    def test_access_list_warms(self) -> None:
        """
        A slot in the access list costs 1900 up front and is warm when read.
        """
        state = State({}.get, {}.get)
        state.set_balance(SENDER, 10**18)
        state.set_code(TARGET, bytes.fromhex("5f5450"))
        state.commit()
        entry = AccessListEntry(TARGET, (b"\x00" * 32,))
        tx = FeeMarketTransaction(
            chain_id=33, nonce=0, max_priority_fee_per_gas=1, max_fee_per_gas=1, gas=50_000, to=TARGET, value=0, data=b"", access_list=(entry,)
        )
        result = apply_transaction(state, BLOCK, tx, SENDER)
        self.assertEqual(result.gas_used, 21000 + 2400 + 1900 + 2 + 100 + 2)


class RunCallTests(SynchronousTestCase):
    """
    Tests for L{run_call}.
    """

    def test_call_output_and_gas(self) -> None:
        """
        A call returns the output and the gas used, and needs no nonce or fee.
        """
        result = run_call(make_state(), BLOCK, Address(b"\x99" * 20), TARGET, gas=100_000)
        self.assertTrue(result.success)
        self.assertEqual(result.output, (0x2A).to_bytes(32, "big"))
        self.assertGreater(result.gas_used, 21000)

    def test_call_revert(self) -> None:
        """
        A reverted call reports failure and the revert data.
        """
        state = make_state()
        state.set_code(TARGET, bytes.fromhex("60aa6000526001601ffd"))
        result = run_call(state, BLOCK, SENDER, TARGET, gas=100_000)
        self.assertFalse(result.success)
        self.assertEqual(result.output, b"\xaa")
        self.assertEqual(result.error, "execution reverted")
        self.assertTrue(result.reverted)

    def test_call_value_needs_balance(self) -> None:
        """
        A call that moves more than the sender's balance is refused.
        """
        self.assertRaises(InsufficientBalanceError, run_call, make_state(), BLOCK, Address(b"\x99" * 20), TARGET, value=1)

    def test_gas_cap(self) -> None:
        """
        A call with too little gas runs out of it.
        """
        result = run_call(make_state(), BLOCK, SENDER, TARGET, gas=21_100)
        self.assertFalse(result.success)
        self.assertFalse(result.reverted)
        self.assertEqual(result.gas_used, 21_100)
