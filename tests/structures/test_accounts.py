"""
Tests for L{nodex.structures.accounts}.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.crypto import EMPTY_KECCAK, keccak256
from nodex.structures.accounts import EMPTY_ACCOUNT, EMPTY_TRIE_ROOT, Account
from nodex.structures.errors import RLPError
from nodex.structures.rlpcodec import encode_rlp, encode_uint


class AccountTests(SynchronousTestCase):
    """
    Tests for L{Account}.
    """

    def test_empty_account(self) -> None:
        """
        The empty account has no nonce or balance, the empty trie root and the
        hash of empty code, and its well-known encoding.
        """
        self.assertEqual(EMPTY_ACCOUNT, Account(0, 0, EMPTY_TRIE_ROOT, EMPTY_KECCAK))
        self.assertEqual(
            EMPTY_TRIE_ROOT.hex(), "56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421"
        )
        self.assertEqual(EMPTY_ACCOUNT.encode(), encode_rlp([b"", b"", EMPTY_TRIE_ROOT, EMPTY_KECCAK]))
        self.assertTrue(EMPTY_ACCOUNT.is_empty)

    def test_encoding_as_general_one(self) -> None:
        """
        The written-out encoding of an account is the general RLP of its four fields, for nonces and balances on
        either side of the single-byte and length boundaries, and for fields of other shapes (which take the
        general way).
        """
        integers = [0, 1, 0x7F, 0x80, 0xFF, 0x100, 2**56 - 1, 2**64 - 1, 2**200, 2**256 - 1]
        root, code_hash = keccak256(b"root"), keccak256(b"code")
        for nonce in integers[:8]:
            for balance in integers:
                account = Account(nonce, balance, root, code_hash)
                expected = encode_rlp([encode_uint(nonce), encode_uint(balance), root, code_hash])
                self.assertEqual(account.encode(), expected, (nonce, balance))
        for account in [
            Account(2**64, 2**256, root, code_hash),
            Account(1, 2, root[:31], code_hash),
            Account(1, 2, root, code_hash + b"\x00"),
            Account(1, 2, bytearray(root), code_hash),  # type: ignore[arg-type]
        ]:
            expected = encode_rlp(
                [encode_uint(account.nonce), encode_uint(account.balance), account.storage_root, account.code_hash]
            )
            self.assertEqual(account.encode(), expected, account)

    def test_negative_refused(self) -> None:
        """
        A negative nonce or balance cannot be encoded.
        """
        self.assertRaises(RLPError, Account(-1, 0).encode)
        self.assertRaises(RLPError, Account(0, -1).encode)

    def test_round_trip(self) -> None:
        """
        An account decodes from its own encoding.
        """
        account = Account(7, 10**30, keccak256(b"storage"), keccak256(b"code"))
        self.assertEqual(Account.decode(account.encode()), account)
        self.assertFalse(account.is_empty)

    def test_is_empty_ignores_storage(self) -> None:
        """
        EIP-161 emptiness looks at nonce, balance and code only.
        """
        self.assertFalse(Account(nonce=1).is_empty)
        self.assertFalse(Account(balance=1).is_empty)
        self.assertFalse(Account(code_hash=keccak256(b"\x00")).is_empty)

    def test_wrong_field_count_refused(self) -> None:
        """
        An account with three or five fields is refused.
        """
        self.assertRaises(RLPError, Account.decode, encode_rlp([b"", b"", EMPTY_TRIE_ROOT]))
        five = encode_rlp([b"", b"", EMPTY_TRIE_ROOT, EMPTY_KECCAK, b""])
        self.assertRaises(RLPError, Account.decode, five)

    def test_non_canonical_nonce_refused(self) -> None:
        """
        A nonce with a leading zero byte is refused.
        """
        raw = encode_rlp([b"\x00\x01", b"", EMPTY_TRIE_ROOT, EMPTY_KECCAK])
        self.assertRaises(RLPError, Account.decode, raw)

    def test_short_hash_refused(self) -> None:
        """
        A storage root or code hash that is not 32 bytes is refused.
        """
        self.assertRaises(RLPError, Account.decode, encode_rlp([b"", b"", b"\x01" * 31, EMPTY_KECCAK]))
        self.assertRaises(RLPError, Account.decode, encode_rlp([b"", b"", EMPTY_TRIE_ROOT, b""]))

    def test_out_of_range_refused(self) -> None:
        """
        A nonce of 2**64 or a balance of 2**256 is refused.
        """
        big_nonce = encode_rlp([(2**64).to_bytes(9, "big"), b"", EMPTY_TRIE_ROOT, EMPTY_KECCAK])
        self.assertRaises(RLPError, Account.decode, big_nonce)
        big_balance = encode_rlp([b"", (2**256).to_bytes(33, "big"), EMPTY_TRIE_ROOT, EMPTY_KECCAK])
        self.assertRaises(RLPError, Account.decode, big_balance)

    def test_immutable(self) -> None:
        """
        Accounts cannot be changed in place.
        """
        with self.assertRaises(AttributeError):
            EMPTY_ACCOUNT.nonce = 1  # type: ignore[misc]
