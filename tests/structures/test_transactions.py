"""
Tests for L{nodex.structures.transactions}.
"""

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from nodex.crypto import SECP256K1_N, keccak256, private_key_to_address
from nodex.primitives import Address, Hash32
from nodex.structures.errors import (
    InvalidSignatureError,
    InvalidTransactionError,
    RLPError,
    UnsupportedTransactionTypeError,
    WrongChainIdError,
)
from nodex.rlpcore import encode_bytes, encode_list_payload
from nodex.structures.rlpcodec import decode_rlp, encode_rlp, encode_uint
from nodex.structures.transactions import (
    IMPERSONATION_FLAG,
    AccessListEntry,
    AccessListTransaction,
    FeeMarketTransaction,
    LegacyTransaction,
    _legacy_from_fields,
    _plain_legacy,
    decode_transaction,
    decode_transaction_in_block,
    impersonate,
    sign_transaction,
)

KEY = keccak256(b"cow")
SENDER = private_key_to_address(KEY)
RECIPIENT = Address(b"\x35" * 20)
ACCESS_LIST = (AccessListEntry(Address(b"\x01" * 20), (Hash32(b"\x02" * 32), Hash32(b"\x03" * 32))),)

# The worked example of EIP-155.
EIP155_KEY = b"\x46" * 32
EIP155_UNSIGNED = LegacyTransaction(
    nonce=9, gas_price=20 * 10**9, gas=21000, to=RECIPIENT, value=10**18, data=b""
)
EIP155_SIGNING_HASH = "daf5a779ae972f972197303d7b574746c7ef83eadac0f2791ad23db92e4c8e53"
EIP155_RAW = (
    "f86c098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a7640000"
    "8025a028ef61340bd939bc2195fe537567866003e1a15d3c71ff63e1590620aa636276a067cbe9d8997f76"
    "1aecb703304b3800ccf555c9f3dc64214b297fb1966a3b6d83"
)


def access_list_tx(**changes: object) -> AccessListTransaction:
    """
    A signed type 1 transaction for chain 33, with C{changes} applied before signing.
    """
    unsigned = AccessListTransaction(
        chain_id=33, nonce=1, gas_price=10**9, gas=50000, to=RECIPIENT, value=5, data=b"\x00\x01",
        access_list=ACCESS_LIST,
    )
    return sign_transaction(replace(unsigned, **changes), KEY, 33)  # type: ignore[return-value]


def fee_market_tx(**changes: object) -> FeeMarketTransaction:
    """
    A signed type 2 transaction for chain 33, with C{changes} applied before signing.
    """
    unsigned = FeeMarketTransaction(
        chain_id=33, nonce=2, max_priority_fee_per_gas=2 * 10**9, max_fee_per_gas=3 * 10**9,
        gas=60000, to=b"", value=0, data=b"\x60\x00", access_list=ACCESS_LIST,
    )
    return sign_transaction(replace(unsigned, **changes), KEY, 33)  # type: ignore[return-value]


class LegacyTransactionTests(SynchronousTestCase):
    """
    Tests for L{LegacyTransaction}.
    """

    def test_eip155_example(self) -> None:
        """
        Signing the EIP-155 example gives the EIP's digest and raw bytes, and
        decoding those bytes gives back the sender and chain id.
        """
        self.assertEqual(EIP155_UNSIGNED.signing_hash(1).hex(), EIP155_SIGNING_HASH)
        signed = sign_transaction(EIP155_UNSIGNED, EIP155_KEY, 1)
        self.assertEqual(signed.encode().hex(), EIP155_RAW)
        decoded = decode_transaction(bytes.fromhex(EIP155_RAW))
        self.assertEqual(decoded, signed)
        self.assertEqual(decoded.chain_id, 1)
        self.assertEqual(decoded.sender, private_key_to_address(EIP155_KEY))
        self.assertEqual(decoded.hash, keccak256(bytes.fromhex(EIP155_RAW)))

    def test_without_eip155(self) -> None:
        """
        Signed without a chain id, v is 27 or 28, there is no chain id, and
        the sender is recovered from the six-field digest.
        """
        signed = sign_transaction(EIP155_UNSIGNED, KEY, None)
        self.assertIn(signed.v, (27, 28))  # type: ignore[union-attr]
        decoded = decode_transaction(signed.encode())
        self.assertIsNone(decoded.chain_id)
        self.assertEqual(decoded.sender, SENDER)

    def test_fee_views(self) -> None:
        """
        A legacy transaction's price is its cap, its tip and its effective
        price; it has no access list and is a creation when C{to} is empty.
        """
        tx = replace(EIP155_UNSIGNED, to=b"")
        self.assertEqual(tx.max_fee_per_gas, tx.gas_price)
        self.assertEqual(tx.max_priority_fee_per_gas, tx.gas_price)
        self.assertEqual(tx.effective_gas_price, tx.gas_price)
        self.assertEqual(tx.access_list, ())
        self.assertTrue(tx.is_create)
        self.assertFalse(EIP155_UNSIGNED.is_create)

    def test_invalid_v_refused(self) -> None:
        """
        A v that is neither 27, 28 nor at least 35 is refused on decode.
        """
        fields = decode_rlp(bytes.fromhex(EIP155_RAW))
        fields[6] = encode_uint(29)  # type: ignore[index]
        with self.assertRaises(InvalidSignatureError) as caught:
            decode_transaction(encode_rlp(fields))
        self.assertIn("got 29", str(caught.exception))

    def test_extra_and_missing_fields_refused(self) -> None:
        """
        A legacy transaction with ten or eight fields is refused.
        """
        fields = decode_rlp(bytes.fromhex(EIP155_RAW))
        self.assertRaises(RLPError, decode_transaction, encode_rlp(fields + [b""]))  # type: ignore[operator]
        self.assertRaises(RLPError, decode_transaction, encode_rlp(fields[:8]))  # type: ignore[index]

    def test_non_canonical_integer_refused(self) -> None:
        """
        A gas price with a leading zero byte is refused.
        """
        fields = decode_rlp(bytes.fromhex(EIP155_RAW))
        fields[1] = b"\x00" + fields[1]  # type: ignore[index, operator]
        with self.assertRaises(RLPError) as caught:
            decode_transaction(encode_rlp(fields))
        self.assertIn("gas price", str(caught.exception))

    def test_wrong_address_length_refused(self) -> None:
        """
        A recipient of 19 bytes is refused.
        """
        fields = decode_rlp(bytes.fromhex(EIP155_RAW))
        fields[3] = b"\x35" * 19  # type: ignore[index]
        self.assertRaises(RLPError, decode_transaction, encode_rlp(fields))

    def test_out_of_range_values_refused(self) -> None:
        """
        A nonce of 2**64 and a value of 2**256 are refused.
        """
        for index, value in ((0, 2**64), (4, 2**256), (2, 2**64)):
            fields = decode_rlp(bytes.fromhex(EIP155_RAW))
            fields[index] = encode_uint(value)  # type: ignore[index]
            self.assertRaises(InvalidTransactionError, decode_transaction, encode_rlp(fields))

    def test_high_s_refused(self) -> None:
        """
        The same signature with s replaced by n - s (equally valid for ECDSA)
        is refused by EIP-2's low-s rule.
        """
        signed = sign_transaction(EIP155_UNSIGNED, EIP155_KEY, 1)
        flipped = replace(signed, s=SECP256K1_N - signed.s, v=signed.v ^ 1)  # type: ignore[union-attr]
        with self.assertRaises(InvalidSignatureError) as caught:
            decode_transaction(flipped.encode()).sender
        self.assertIn("low s", str(caught.exception))

    def test_zero_r_refused(self) -> None:
        """
        A signature with r = 0 has no sender.
        """
        signed = sign_transaction(EIP155_UNSIGNED, EIP155_KEY, 1)
        with self.assertRaises(InvalidSignatureError):
            replace(signed, r=0).sender

    def test_sender_cached(self) -> None:
        """
        The sender is recovered once and then remembered.
        """
        tx = decode_transaction(bytes.fromhex(EIP155_RAW))
        self.assertIs(tx.sender, tx.sender)


class TypedTransactionTests(SynchronousTestCase):
    """
    Tests for L{AccessListTransaction} and L{FeeMarketTransaction}.
    """

    def test_access_list_round_trip(self) -> None:
        """
        A type 1 transaction encodes as C{0x01 || rlp}, decodes to itself and
        recovers its sender.
        """
        tx = access_list_tx()
        raw = tx.encode()
        self.assertEqual(raw[0], 1)
        decoded = decode_transaction(raw)
        self.assertEqual(decoded, tx)
        self.assertEqual(decoded.sender, SENDER)
        self.assertEqual(decoded.hash, keccak256(raw))
        self.assertEqual(decoded.access_list, ACCESS_LIST)
        self.assertEqual(decoded.effective_gas_price, 10**9)

    def test_fee_market_round_trip(self) -> None:
        """
        A type 2 transaction encodes as C{0x02 || rlp}, decodes to itself and
        recovers its sender.
        """
        tx = fee_market_tx()
        raw = tx.encode()
        self.assertEqual(raw[0], 2)
        decoded = decode_transaction(raw)
        self.assertEqual(decoded, tx)
        self.assertEqual(decoded.sender, SENDER)
        self.assertTrue(decoded.is_create)

    def test_effective_gas_price(self) -> None:
        """
        With a base fee of 0, a type 2 transaction pays the lower of its fee
        cap and its priority fee.
        """
        self.assertEqual(fee_market_tx().effective_gas_price, 2 * 10**9)
        tx = fee_market_tx(max_priority_fee_per_gas=5 * 10**9)
        self.assertEqual(tx.effective_gas_price, 3 * 10**9)

    def test_signing_hash_other_chain_refused(self) -> None:
        """
        Asking for a typed transaction's digest on another chain, or signing
        it for another chain, is refused.
        """
        tx = fee_market_tx()
        self.assertEqual(tx.signing_hash(33), tx.signing_hash())
        self.assertRaises(WrongChainIdError, tx.signing_hash, 34)
        self.assertRaises(WrongChainIdError, sign_transaction, tx, KEY, 34)

    def test_signature_covers_fields(self) -> None:
        """
        Changing a field after signing changes the recovered sender.
        """
        tx = replace(fee_market_tx(), value=1)
        self.assertNotEqual(decode_transaction(tx.encode()).sender, SENDER)

    def test_bad_y_parity_refused(self) -> None:
        """
        A y parity other than 0 or 1 is refused on decode.
        """
        raw = replace(access_list_tx(), y_parity=2).encode()
        self.assertRaises(InvalidSignatureError, decode_transaction, raw)

    def test_bad_access_list_refused(self) -> None:
        """
        Access-list addresses of 21 bytes, storage keys of 31 bytes and
        entries that are not pairs are refused.
        """
        fields = decode_rlp(access_list_tx().encode()[1:])
        for access_list in (
            [[b"\x01" * 21, []]],
            [[b"\x01" * 20, [b"\x02" * 31]]],
            [[b"\x01" * 20]],
            [b"\x01" * 20],
            b"",
        ):
            fields[7] = access_list  # type: ignore[index]
            self.assertRaises(RLPError, decode_transaction, b"\x01" + encode_rlp(fields))

    def test_wrong_field_count_refused(self) -> None:
        """
        A type 2 payload with a missing field is refused.
        """
        fields = decode_rlp(fee_market_tx().encode()[1:])
        short = b"\x02" + encode_rlp(fields[:-1])  # type: ignore[index]
        self.assertRaises(RLPError, decode_transaction, short)


class DecodeTransactionTests(SynchronousTestCase):
    """
    Tests for L{decode_transaction} on bytes that are not transactions.
    """

    def test_blob_refused(self) -> None:
        """
        Type 3 is recognised and refused with a message that names it.
        """
        with self.assertRaises(UnsupportedTransactionTypeError) as caught:
            decode_transaction(b"\x03" + encode_rlp([]))
        self.assertEqual(str(caught.exception), "transaction type 3 (blob) is not supported by this chain")

    def test_set_code_refused(self) -> None:
        """
        Type 4 is recognised and refused with a message that names it.
        """
        with self.assertRaises(UnsupportedTransactionTypeError) as caught:
            decode_transaction(b"\x04" + encode_rlp([]))
        self.assertEqual(
            str(caught.exception), "transaction type 4 (set-code) is not supported by this chain"
        )

    def test_unknown_type_refused(self) -> None:
        """
        Other type bytes are refused as unknown.
        """
        with self.assertRaises(UnsupportedTransactionTypeError) as caught:
            decode_transaction(b"\x09\xc0")
        self.assertIn("unknown transaction type 9", str(caught.exception))

    def test_empty_and_string_refused(self) -> None:
        """
        Empty input and an RLP string are not transactions.
        """
        self.assertRaises(RLPError, decode_transaction, b"")
        self.assertRaises(RLPError, decode_transaction, encode_rlp(b"not a transaction"))

    def test_trailing_bytes_refused(self) -> None:
        """
        Bytes after a transaction are refused, for legacy and typed ones.
        """
        self.assertRaises(RLPError, decode_transaction, bytes.fromhex(EIP155_RAW) + b"\x00")
        self.assertRaises(RLPError, decode_transaction, fee_market_tx().encode() + b"\x00")

    @settings(max_examples=300, deadline=None)
    @given(st.binary(max_size=200))
    def test_random_bytes_raise_only_own_errors(self, raw: bytes) -> None:
        """
        Random bytes either decode or raise L{RLPError} or
        L{InvalidTransactionError}; nothing else escapes.
        """
        try:
            decode_transaction(raw)
        except (RLPError, InvalidTransactionError):
            pass

    @settings(max_examples=200, deadline=None)
    @given(st.integers(min_value=0, max_value=2**40), st.binary(max_size=64), st.sampled_from([0, 1, 2]))
    def test_mutated_transactions_raise_only_own_errors(self, position: int, junk: bytes, kind: int) -> None:
        """
        Valid transactions with bytes overwritten or cut raise only the
        structures' errors (or still decode).
        """
        raw = (bytes.fromhex(EIP155_RAW), access_list_tx().encode(), fee_market_tx().encode())[kind]
        position %= len(raw)
        mutated = raw[:position] + junk + raw[position + len(junk):]
        try:
            decode_transaction(mutated).sender
        except (RLPError, InvalidTransactionError):
            pass


class BlockEncodingTests(SynchronousTestCase):
    """
    Tests for the encoding of transactions inside block bodies.
    """

    def test_legacy_is_a_list(self) -> None:
        """
        A legacy transaction appears in a block as its own RLP list.
        """
        tx = decode_transaction(bytes.fromhex(EIP155_RAW))
        self.assertEqual(tx.encode_in_block(), tx.encode())
        self.assertEqual(decode_transaction_in_block(decode_rlp(tx.encode_in_block())), tx)

    def test_typed_is_a_string(self) -> None:
        """
        A typed transaction appears in a block as an RLP string of its raw bytes.
        """
        tx = fee_market_tx()
        self.assertEqual(tx.encode_in_block(), encode_rlp(tx.encode()))
        decoded = decode_transaction_in_block(decode_rlp(tx.encode_in_block()))
        self.assertEqual(decoded, tx)
        self.assertEqual(decoded.hash, tx.hash)

    def test_wrapped_legacy_refused(self) -> None:
        """
        A legacy transaction wrapped in an RLP string is not a valid block item.
        """
        raw = bytes.fromhex(EIP155_RAW)
        self.assertRaises(RLPError, decode_transaction_in_block, raw)
        self.assertRaises(RLPError, decode_transaction_in_block, b"")


class ImpersonationMarkerTests(SynchronousTestCase):
    """
    Tests for L{impersonate} and the marker it puts in place of a signature.
    """

    def unsigned(self) -> list[LegacyTransaction | AccessListTransaction | FeeMarketTransaction]:
        """
        One unsigned transaction of each type, for chain 33.
        """
        return [
            replace(EIP155_UNSIGNED),
            AccessListTransaction(chain_id=33, nonce=1, gas_price=1, gas=50000, to=RECIPIENT, value=5, data=b""),
            FeeMarketTransaction(
                chain_id=33, nonce=2, max_priority_fee_per_gas=1, max_fee_per_gas=2,
                gas=60000, to=b"", value=0, data=b"\x60\x00",
            ),
        ]

    def test_sender_survives_decoding(self) -> None:
        """
        The marker names the sender in the transaction itself: decoding the
        raw bytes (or a block's item) gives the same sender and hash.
        """
        for unsigned in self.unsigned():
            marked = impersonate(unsigned, RECIPIENT, 33)
            self.assertTrue(marked.impersonated)
            self.assertEqual(marked.s, 0)
            self.assertEqual(marked.r, IMPERSONATION_FLAG | int.from_bytes(RECIPIENT, "big"))
            self.assertEqual(marked.chain_id, 33)
            decoded = decode_transaction(marked.encode())
            self.assertTrue(decoded.impersonated)
            self.assertEqual(decoded.sender, RECIPIENT)
            self.assertEqual(decoded.hash, marked.hash)
            in_block = decode_transaction_in_block(decode_rlp(marked.encode_in_block()))
            self.assertEqual(in_block.sender, RECIPIENT)

    def test_hash_names_the_sender(self) -> None:
        """
        The same request from two impersonated senders gives two hashes.
        """
        for unsigned in self.unsigned():
            first = impersonate(unsigned, RECIPIENT, 33)
            second = impersonate(unsigned, SENDER, 33)
            self.assertNotEqual(first.hash, second.hash)
            self.assertEqual(decode_transaction(second.encode()).sender, SENDER)

    def test_zero_address(self) -> None:
        """
        The zero address can be impersonated; an unsigned transaction (r = 0)
        is no marker and names no sender.
        """
        zero = Address(b"\x00" * 20)
        for unsigned in self.unsigned():
            self.assertFalse(unsigned.impersonated)
            self.assertEqual(decode_transaction(impersonate(unsigned, zero, 33).encode()).sender, zero)
        typed = self.unsigned()[2]
        self.assertRaises(InvalidSignatureError, lambda: typed.sender)

    def test_marker_with_other_recovery_id(self) -> None:
        """
        A marker whose recovery id is 1, or whose r lies outside the flag's
        range, names no sender.
        """
        marked = impersonate(self.unsigned()[2], RECIPIENT, 33)
        self.assertRaises(InvalidSignatureError, lambda: decode_transaction(replace(marked, y_parity=1).encode()).sender)
        beyond = replace(marked, r=IMPERSONATION_FLAG << 1)
        self.assertFalse(beyond.impersonated)
        self.assertRaises(InvalidSignatureError, lambda: decode_transaction(beyond.encode()).sender)

    def test_wrong_length(self) -> None:
        """
        A sender of other than 20 bytes is refused.
        """
        self.assertRaises(ValueError, impersonate, self.unsigned()[0], b"\x01" * 19, 33)

    @given(
        st.binary(min_size=20, max_size=20),
        st.integers(min_value=1, max_value=2**32),
        st.integers(min_value=0, max_value=2**64 - 2),
        st.sampled_from([0, 1, 2]),
    )
    @settings(max_examples=200, deadline=None)
    def test_any_sender_round_trips(self, sender: bytes, chain_id: int, nonce: int, kind: int) -> None:
        """
        For any address, chain id, nonce and type, the marked transaction
        decodes to the same sender and hash, and is a marker.
        """
        unsigned = [
            LegacyTransaction(nonce, 1, 21000, RECIPIENT, 0, b""),
            AccessListTransaction(chain_id, nonce, 1, 21000, RECIPIENT, 0, b""),
            FeeMarketTransaction(chain_id, nonce, 1, 1, 21000, RECIPIENT, 0, b""),
        ][kind]
        marked = impersonate(unsigned, sender, chain_id)
        decoded = decode_transaction(marked.encode())
        self.assertTrue(decoded.impersonated)
        self.assertEqual((decoded.sender, decoded.hash, decoded.chain_id), (sender, marked.hash, chain_id))

    def test_signed_is_no_marker(self) -> None:
        """
        A signed transaction is not impersonated.
        """
        self.assertFalse(fee_market_tx().impersonated)
        self.assertFalse(decode_transaction(bytes.fromhex(EIP155_RAW)).impersonated)


def _encoded_signing_hash(tx: object, chain_id: int | None) -> bytes:
    """
    The signing hash the long way: the unsigned fields encoded afresh (what
    C{signing_hash} does when the raw bytes are not known).
    """
    fields = tx._unsigned_fields()  # type: ignore[attr-defined]
    if isinstance(tx, LegacyTransaction):
        if chain_id is not None:
            fields += [encode_uint(chain_id), b"", b""]
        return keccak256(encode_rlp(fields))
    return keccak256(bytes([tx.type]) + encode_rlp(fields))  # type: ignore[attr-defined]


class SigningHashFromRawTests(SynchronousTestCase):
    """
    The signing hash of a transaction whose raw bytes are known is cut from
    them (L{_TransactionBase._unsigned_payload}): the same digest as the
    unsigned fields encoded again, for every type, payload size and chain
    id, and the fields' encoding when the bytes do not end as they must.
    """

    @settings(max_examples=150, deadline=None)
    @given(
        kind=st.sampled_from([0, 1, 2]),
        nonce=st.integers(0, 2**64 - 2),
        price=st.integers(0, 2**256 - 1),
        gas=st.integers(0, 2**64 - 1),
        to=st.sampled_from([b"", b"\x35" * 20]),
        value=st.integers(0, 2**256 - 1),
        data=st.one_of(st.binary(max_size=60), st.binary(min_size=1000, max_size=70000)),
        chain_id=st.one_of(st.none(), st.integers(1, 2**32)),
        signed=st.booleans(),
    )
    def test_same_as_encoding_the_fields(
        self, kind: int, nonce: int, price: int, gas: int, to: bytes, value: int, data: bytes,
        chain_id: int | None, signed: bool,
    ) -> None:
        if kind == 0:
            tx: object = LegacyTransaction(nonce, price, gas, to, value, data)
        elif kind == 1:
            tx = AccessListTransaction(chain_id or 1, nonce, price, gas, to, value, data, ACCESS_LIST)
        else:
            tx = FeeMarketTransaction(chain_id or 1, nonce, price // 2, price, gas, to, value, data, ACCESS_LIST)
        if kind and chain_id is None:
            chain_id = 1
        if signed:
            tx = sign_transaction(tx, KEY, chain_id)  # type: ignore[arg-type]
        expected = _encoded_signing_hash(tx, chain_id)
        # The unsigned one's raw bytes (v, r and s of 0) are known once encoded.
        raw = tx.encode()  # type: ignore[attr-defined]
        decoded = decode_transaction(raw) if signed else tx
        self.assertIn("_encoded", decoded.__dict__)
        self.assertEqual(decoded.signing_hash(chain_id), expected)
        if signed:
            self.assertEqual(decoded.sender, SENDER)

    def test_short_unsigned_list(self) -> None:
        """
        An unsigned transaction's list can be under 56 bytes (a one-byte
        prefix): the cut starts after it.
        """
        tx = LegacyTransaction(0, 0, 0, b"", 0, b"")
        self.assertLess(len(tx.encode()), 56)
        self.assertEqual(tx.signing_hash(5), _encoded_signing_hash(tx, 5))
        self.assertEqual(tx.signing_hash(None), _encoded_signing_hash(tx, None))

    def test_without_raw_bytes(self) -> None:
        """
        A transaction never encoded hashes its fields (and does not encode
        itself for it).
        """
        tx = sign_transaction(EIP155_UNSIGNED, EIP155_KEY, 1)
        fresh = replace(tx)
        self.assertNotIn("_encoded", fresh.__dict__)
        self.assertEqual(fresh.signing_hash().hex(), EIP155_SIGNING_HASH)
        self.assertNotIn("_encoded", fresh.__dict__)

    def test_raw_bytes_not_ending_with_the_signature(self) -> None:
        """
        Raw bytes that do not end with the transaction's signature (which
        their canonical form rules out) are not cut: the fields are encoded.
        """
        tx = replace(sign_transaction(EIP155_UNSIGNED, EIP155_KEY, 1))
        tx.__dict__["_encoded"] = bytes.fromhex(EIP155_RAW)[:-1] + b"\x00"
        self.assertEqual(tx.signing_hash().hex(), EIP155_SIGNING_HASH)
        tx.__dict__["_encoded"] = b"\xc1\x80"
        self.assertEqual(tx.signing_hash().hex(), EIP155_SIGNING_HASH)

    def test_eip155_example_from_raw(self) -> None:
        """
        EIP-155's worked example, decoded from its raw bytes.
        """
        tx = decode_transaction(bytes.fromhex(EIP155_RAW))
        self.assertEqual(tx.signing_hash().hex(), EIP155_SIGNING_HASH)


def _general_legacy(raw: bytes) -> object:
    """
    What the general path (the strict RLP decoder, then the fields' checks)
    makes of a legacy transaction's bytes: the transaction, or the type of
    the error it raises.
    """
    try:
        return _legacy_from_fields(decode_rlp(raw))
    except (RLPError, InvalidTransactionError) as exc:
        return type(exc)


def _legacy_bytes(*items: bytes, prefix: bytes | None = None) -> bytes:
    """
    A list of already encoded C{items}, with its canonical prefix or C{prefix}.
    """
    payload = b"".join(items)
    if prefix is None:
        return encode_list_payload(payload)
    return prefix + payload


# The EIP-155 example's nine fields, each as encoded in EIP155_RAW.
_EIP155_ITEMS = [encode_bytes(field) for field in decode_rlp(bytes.fromhex(EIP155_RAW))]  # type: ignore[union-attr]


class PlainLegacyTests(SynchronousTestCase):
    """
    L{_plain_legacy}, the one-pass decoder of the usual legacy transaction:
    it gives a transaction only where the general path gives the same one,
    and leaves everything else (malformed or merely unusual) to it.
    """

    def assertLeftToGeneral(self, raw: bytes) -> None:
        """
        C{raw} is not taken by the one-pass decoder, and L{decode_transaction}
        does what the general path does with it.
        """
        self.assertIsNone(_plain_legacy(raw))
        expected = _general_legacy(raw)
        if isinstance(expected, type):
            self.assertRaises(expected, decode_transaction, raw)
        else:
            self.assertEqual(decode_transaction(raw), expected)

    def with_item(self, index: int, item: bytes) -> bytes:
        """
        The EIP-155 example with its field C{index} encoded as C{item}.
        """
        items = list(_EIP155_ITEMS)
        items[index] = item
        return _legacy_bytes(*items)

    def test_usual_transaction_taken(self) -> None:
        """
        A signed legacy transaction (EIP-155's example, an ERC-20 transfer's
        shape with 68 bytes of data, an unprotected one with v of 27) is
        decoded in one pass, to what the general path gives, fields of the
        same types.
        """
        transfer = LegacyTransaction(
            nonce=1234, gas_price=1875000000, gas=60000, to=RECIPIENT, value=0, data=b"\xa9" * 68
        )
        raws = [
            bytes.fromhex(EIP155_RAW),
            sign_transaction(transfer, KEY, 31337).encode(),
            sign_transaction(transfer, KEY, None).encode(),
            sign_transaction(replace(transfer, to=b"", data=b"", nonce=0, gas_price=0), KEY, 1).encode(),
        ]
        for raw in raws:
            fast = _plain_legacy(raw)
            assert fast is not None
            self.assertEqual(fast, _general_legacy(raw))
            for name in ("nonce", "gas_price", "gas", "to", "value", "data", "v", "r", "s"):
                self.assertIs(type(getattr(fast, name)), type(getattr(_general_legacy(raw), name)))
            self.assertEqual(decode_transaction(raw).encode(), raw)
            # The unsigned fields' slice found on the way signs as the fields encoded again.
            self.assertIn("_unsigned", fast.__dict__)
            self.assertEqual(fast.signing_hash(), _encoded_signing_hash(fast, fast.chain_id))
            self.assertEqual(fast.sender, private_key_to_address(EIP155_KEY) if raw == raws[0] else SENDER)

    def test_leading_zeros_left(self) -> None:
        """
        An integer with a leading zero byte, as a string or as the bare byte
        0x00, is refused by the general path; the recipient and the data
        may start with zero bytes.
        """
        for index in (0, 1, 2, 4, 6, 7, 8):
            self.assertLeftToGeneral(self.with_item(index, b"\x00"))
            self.assertLeftToGeneral(self.with_item(index, b"\x82\x00\x01"))
        self.assertIsNotNone(_plain_legacy(self.with_item(5, b"\x00")))
        self.assertIsNotNone(_plain_legacy(self.with_item(5, b"\x82\x00\x01")))
        self.assertIsNotNone(_plain_legacy(self.with_item(3, b"\x94" + bytes(20))))

    def test_non_canonical_prefixes_left(self) -> None:
        """
        A single byte below 0x80 with a prefix, a short string in the long
        form, a list's payload under 56 bytes in the long form and a list
        whose prefix does not span the bytes exactly are refused.
        """
        self.assertLeftToGeneral(self.with_item(5, b"\x81\x05"))
        self.assertLeftToGeneral(self.with_item(0, b"\x81\x09"))
        self.assertLeftToGeneral(self.with_item(5, b"\xb8\x03abc"))
        self.assertLeftToGeneral(self.with_item(5, b"\xb8\x37" + b"a" * 55))
        self.assertIsNotNone(_plain_legacy(self.with_item(5, b"\xb8\x38" + b"a" * 56)))
        self.assertIsNotNone(_plain_legacy(self.with_item(5, b"\x81\x80")))
        short = [b"\x80"] * 6 + [b"\x1b", b"\x01", b"\x01"]
        self.assertIsNotNone(_plain_legacy(_legacy_bytes(*short)))
        self.assertLeftToGeneral(_legacy_bytes(*short, prefix=bytes([0xF8, len(b"".join(short))])))
        raw = bytes.fromhex(EIP155_RAW)
        self.assertLeftToGeneral(raw + b"\x00")
        self.assertLeftToGeneral(raw[:-1])
        self.assertLeftToGeneral(raw[:1] + bytes([raw[1] + 1]) + raw[2:] + b"\x80")
        self.assertLeftToGeneral(raw[:1] + bytes([raw[1] - 1]) + raw[2:])
        self.assertLeftToGeneral(self.with_item(8, b"\xa1" + b"\x01" * 31))

    def test_wrong_shapes_left(self) -> None:
        """
        Eight or ten fields, a field that is a list, a recipient of 19 bytes.
        """
        self.assertLeftToGeneral(_legacy_bytes(*_EIP155_ITEMS[:8]))
        self.assertLeftToGeneral(_legacy_bytes(*_EIP155_ITEMS, b"\x80"))
        self.assertLeftToGeneral(self.with_item(5, b"\xc0"))
        self.assertLeftToGeneral(self.with_item(3, b"\x93" + b"\x35" * 19))

    def test_values_out_of_range_left(self) -> None:
        """
        A nonce or gas of 2**64, a gas price or value above 256 bits, a C{v}
        that is neither 27, 28 nor at least 35, an r or s above 256 bits.
        """
        for index in (0, 2):
            self.assertLeftToGeneral(self.with_item(index, encode_bytes(encode_uint(2**64))))
            self.assertIsNotNone(_plain_legacy(self.with_item(index, encode_bytes(encode_uint(2**64 - 1)))))
        for index in (1, 4, 7, 8):
            self.assertLeftToGeneral(self.with_item(index, encode_bytes(encode_uint(2**256))))
        self.assertIsNotNone(_plain_legacy(self.with_item(4, encode_bytes(encode_uint(2**256 - 1)))))
        for v in (0, 1, 26, 29, 34, 2**256):
            self.assertLeftToGeneral(self.with_item(6, encode_bytes(encode_uint(v))))
        for v in (27, 28, 35, 36):
            self.assertIsNotNone(_plain_legacy(self.with_item(6, encode_bytes(encode_uint(v)))))

    def test_long_items_left(self) -> None:
        """
        Data of 256 bytes or more, and a list of 256 bytes of payload or
        more, are not taken: the general path decodes them.
        """
        for size in (200, 256):
            tx = sign_transaction(replace(EIP155_UNSIGNED, data=b"\x01" * size), EIP155_KEY, 1)
            raw = tx.encode()
            self.assertEqual(_plain_legacy(raw) is None, raw[0] > 0xF8)
            self.assertEqual(decode_transaction(raw), tx)

    def test_bytes_subclass_left(self) -> None:
        """
        The general path refuses bytes of a subclass of C{bytes}: so does
        L{decode_transaction}.
        """

        class Raw(bytes):
            pass

        raw = Raw(bytes.fromhex(EIP155_RAW))
        self.assertIsNone(_plain_legacy(raw))
        self.assertRaises(RLPError, decode_transaction, raw)

    @settings(max_examples=400, deadline=None)
    @given(
        st.lists(st.tuples(st.integers(0, 400), st.binary(min_size=0, max_size=3), st.integers(0, 3)), max_size=3),
        st.sampled_from([0, 1]),
    )
    def test_mutations_decoded_alike(self, changes: list[tuple[int, bytes, int]], kind: int) -> None:
        """
        Legacy transactions with bytes overwritten, inserted, cut or
        appended: the one-pass decoder gives either L{None} or what the
        general path gives.
        """
        raw = bytearray(
            (bytes.fromhex(EIP155_RAW), sign_transaction(replace(EIP155_UNSIGNED, data=b"\x05" * 68), KEY, 1).encode())[
                kind
            ]
        )
        for position, junk, how in changes:
            position %= len(raw) + 1
            if how == 0:
                raw[position : position + len(junk)] = junk
            elif how == 1:
                raw[position:position] = junk
            elif how == 2:
                del raw[position : position + len(junk) + 1]
            else:
                raw += junk
        if not raw or raw[0] < 0xC0:
            return
        fast = _plain_legacy(bytes(raw))
        if fast is not None:
            self.assertEqual(fast, _general_legacy(bytes(raw)))
