"""
Tests for L{nodex.wallet.messages}: the eth_sign digest (DESIGN §1).
"""

from twisted.trial.unittest import SkipTest, SynchronousTestCase

from nodex.crypto import keccak256, private_key_to_address, sign
from nodex.wallet.messages import signature_bytes, signed_message_hash

try:
    from eth_account import Account as EthAccount
    from eth_account.messages import encode_defunct
except ImportError:  # pragma: no cover - the test extra is missing
    EthAccount = None

KEY = keccak256(b"cow")


class SignedMessageTests(SynchronousTestCase):
    """
    The prefixed digest and the 65-byte encoding.
    """

    def test_prefix(self) -> None:
        """
        Keccak-256 of 0x19, "<name> Signed Message:\\n", the decimal length, the message.
        """
        self.assertEqual(signed_message_hash(b"hello"), keccak256(b"\x19Ethereum Signed Message:\n5hello"))
        self.assertEqual(signed_message_hash(b"", "Nodex"), keccak256(b"\x19Nodex Signed Message:\n0"))

    def test_eth_account_recovers(self) -> None:
        """
        eth-account's standard recovery (EIP-191 personal messages) finds the signer.
        """
        if EthAccount is None:
            raise SkipTest("eth-account (the test extra) is not installed")
        message = bytes(range(256)) * 3
        signature = signature_bytes(*sign(signed_message_hash(message), KEY))
        self.assertEqual(len(signature), 65)
        self.assertIn(signature[64], (27, 28))
        recovered = EthAccount.recover_message(encode_defunct(primitive=message), signature=signature)
        self.assertEqual(recovered.lower(), "0x" + private_key_to_address(KEY).hex())
