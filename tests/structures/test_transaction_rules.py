"""
Tests for L{nodex.structures.transaction_rules}.
"""

from dataclasses import replace

from twisted.trial.unittest import SynchronousTestCase

from nodex.primitives import Address, Hash32
from nodex.structures.errors import (
    IntrinsicGasTooLowError,
    InvalidSignatureError,
    InvalidTransactionError,
    WrongChainIdError,
)
from nodex.structures.transaction_rules import (
    MAX_INIT_CODE_SIZE,
    intrinsic_gas,
    validate_chain_id,
    validate_transaction,
)
from nodex.structures.transactions import (
    AccessListEntry,
    FeeMarketTransaction,
    LegacyTransaction,
    decode_transaction,
    impersonate,
    sign_transaction,
)
from tests.structures.test_transactions import EIP155_UNSIGNED, KEY, SENDER, access_list_tx, fee_market_tx


class IntrinsicGasTests(SynchronousTestCase):
    """
    Tests for L{intrinsic_gas} under Cancun rules.
    """

    def test_plain_transfer(self) -> None:
        """
        A transfer without data costs 21000.
        """
        self.assertEqual(intrinsic_gas(EIP155_UNSIGNED), 21000)

    def test_data_bytes(self) -> None:
        """
        Zero bytes cost 4 and other bytes 16 (EIP-2028).
        """
        tx = replace(EIP155_UNSIGNED, data=b"\x00\x00\x00\x01\xff")
        self.assertEqual(intrinsic_gas(tx), 21000 + 3 * 4 + 2 * 16)

    def test_creation_and_initcode_words(self) -> None:
        """
        A creation adds 32000 and 2 per started 32-byte word of initcode (EIP-3860).
        """
        self.assertEqual(intrinsic_gas(replace(EIP155_UNSIGNED, to=b"")), 53000)
        tx = replace(EIP155_UNSIGNED, to=b"", data=b"\x01" * 33)
        self.assertEqual(intrinsic_gas(tx), 53000 + 33 * 16 + 2 * 2)

    def test_access_list(self) -> None:
        """
        Each access-list address costs 2400 and each storage key 1900.
        """
        access_list = (
            AccessListEntry(Address(b"\x01" * 20), (Hash32(b"\x02" * 32),) * 3),
            AccessListEntry(Address(b"\x03" * 20), ()),
        )
        tx = FeeMarketTransaction(33, 0, 0, 0, 10**6, b"\x01" * 20, 0, b"", access_list)
        self.assertEqual(intrinsic_gas(tx), 21000 + 2 * 2400 + 3 * 1900)


class ValidateChainIdTests(SynchronousTestCase):
    """
    Tests for L{validate_chain_id}.
    """

    def test_pre_eip155_accepted_everywhere(self) -> None:
        """
        A legacy signature without a chain id is valid on any chain.
        """
        validate_chain_id(sign_transaction(EIP155_UNSIGNED, KEY, None), 33)
        validate_chain_id(sign_transaction(EIP155_UNSIGNED, KEY, None), 30)

    def test_own_chain_accepted(self) -> None:
        """
        Transactions for this chain are accepted, whatever their type.
        """
        validate_chain_id(sign_transaction(EIP155_UNSIGNED, KEY, 33), 33)
        validate_chain_id(access_list_tx(), 33)
        validate_chain_id(fee_market_tx(), 33)

    def test_other_chain_refused(self) -> None:
        """
        A transaction for another chain is refused with a message naming both ids.
        """
        with self.assertRaises(WrongChainIdError) as caught:
            validate_chain_id(sign_transaction(EIP155_UNSIGNED, KEY, 1), 33)
        self.assertEqual(str(caught.exception), "invalid chain id 1: this chain's id is 33")
        self.assertRaises(WrongChainIdError, validate_chain_id, fee_market_tx(), 31)
        self.assertRaises(WrongChainIdError, validate_chain_id, access_list_tx(), 31)


class ValidateTransactionTests(SynchronousTestCase):
    """
    Tests for L{validate_transaction}.
    """

    def test_valid(self) -> None:
        """
        Well-formed transactions of the three types pass and have their sender.
        """
        for tx in (sign_transaction(EIP155_UNSIGNED, KEY, 33), access_list_tx(), fee_market_tx()):
            validate_transaction(tx, 33)
            self.assertEqual(tx.sender, SENDER)

    def test_intrinsic_gas_too_low(self) -> None:
        """
        Gas below the intrinsic cost is refused, saying how much is wanted.
        """
        tx = sign_transaction(replace(EIP155_UNSIGNED, gas=20999), KEY, 33)
        with self.assertRaises(IntrinsicGasTooLowError) as caught:
            validate_transaction(tx, 33)
        self.assertEqual(str(caught.exception), "intrinsic gas too low: have 20999, want 21000")

    def test_nonce_at_limit(self) -> None:
        """
        A nonce of 2**64-1 is refused (EIP-2681); 2**64-2 is fine.
        """
        validate_transaction(sign_transaction(replace(EIP155_UNSIGNED, nonce=2**64 - 2), KEY, 33), 33)
        tx = sign_transaction(replace(EIP155_UNSIGNED, nonce=2**64 - 1), KEY, 33)
        self.assertRaises(InvalidTransactionError, validate_transaction, tx, 33)

    def test_priority_above_cap(self) -> None:
        """
        A priority fee above the fee cap is refused.
        """
        tx = fee_market_tx(max_priority_fee_per_gas=4 * 10**9)
        with self.assertRaises(InvalidTransactionError) as caught:
            validate_transaction(tx, 33)
        self.assertIn("higher than max fee per gas", str(caught.exception))

    def test_gas_price_product_overflow(self) -> None:
        """
        Gas times the fee cap must fit in 256 bits.
        """
        tx = sign_transaction(replace(EIP155_UNSIGNED, gas_price=2**255), KEY, 33)
        self.assertRaises(InvalidTransactionError, validate_transaction, tx, 33)

    def test_initcode_too_large(self) -> None:
        """
        Initcode above 49152 bytes is refused (EIP-3860); at the limit it passes.
        """
        unsigned = LegacyTransaction(0, 0, 10**7, b"", 0, b"\x01" * MAX_INIT_CODE_SIZE)
        validate_transaction(sign_transaction(unsigned, KEY, 33), 33)
        too_big = sign_transaction(replace(unsigned, data=b"\x01" * (MAX_INIT_CODE_SIZE + 1)), KEY, 33)
        with self.assertRaises(InvalidTransactionError) as caught:
            validate_transaction(too_big, 33)
        self.assertIn("EIP-3860", str(caught.exception))

    def test_bad_signature(self) -> None:
        """
        A transaction whose signature is zero is refused.
        """
        tx = replace(fee_market_tx(), r=0, s=0)
        self.assertRaises(InvalidSignatureError, validate_transaction, tx, 33)

    def test_impersonation_marker(self) -> None:
        """
        The impersonation marker is an invalid signature unless the caller
        says it stands for one here; then its sender is the address it
        names, and the other rules still apply.
        """
        unsigned = replace(fee_market_tx(), r=0, s=0)
        marked = impersonate(unsigned, Address(b"\x07" * 20), 33)
        with self.assertRaises(InvalidSignatureError) as caught:
            validate_transaction(decode_transaction(marked.encode()), 33)
        self.assertIn("impersonated", str(caught.exception))
        accepted = decode_transaction(marked.encode())
        validate_transaction(accepted, 33, impersonation=True)
        self.assertEqual(accepted.sender, b"\x07" * 20)
        self.assertRaises(WrongChainIdError, validate_transaction, marked, 30, True)
        self.assertRaises(IntrinsicGasTooLowError, validate_transaction, replace(marked, gas=21000), 33, True)

    def test_wrong_chain(self) -> None:
        """
        A transaction for another chain is refused.
        """
        self.assertRaises(WrongChainIdError, validate_transaction, fee_market_tx(), 30)
