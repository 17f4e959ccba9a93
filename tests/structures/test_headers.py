"""
Tests for L{nodex.structures.headers}.
"""

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from nodex.crypto import keccak256
from nodex.primitives import Address, Hash32
from nodex.structures.accounts import EMPTY_TRIE_ROOT
from nodex.structures.bloom import EMPTY_BLOOM
from nodex.structures.errors import RLPError
from nodex.structures.headers import EMPTY_UNCLES_HASH, Header
from nodex.structures.rlpcodec import decode_rlp, encode_rlp, encode_uint


def sample_header(**changes: object) -> Header:
    """
    A header with every field set to something distinct, and C{changes} applied.
    """
    header = Header(
        parent_hash=Hash32(b"\x01" * 32),
        uncles_hash=EMPTY_UNCLES_HASH,
        coinbase=Address(b"\x33" * 20),
        state_root=Hash32(b"\x02" * 32),
        transactions_root=EMPTY_TRIE_ROOT,
        receipts_root=EMPTY_TRIE_ROOT,
        logs_bloom=EMPTY_BLOOM,
        difficulty=131072,
        number=42,
        gas_limit=30_000_000,
        gas_used=21000,
        timestamp=1_700_000_000,
        extra_data=b"horse",
        paid_fees=21000 * 10**9,
        minimum_gas_price=10**9,
        uncle_count=0,
        bitcoin_merged_mining_header=b"\x04" * 80,
        bitcoin_merged_mining_merkle_proof=b"\x05" * 64,
        bitcoin_merged_mining_coinbase_transaction=b"\x06" * 100,
    )
    return replace(header, **changes)


class HeaderTests(SynchronousTestCase):
    """
    Tests for L{Header}.
    """

    def test_field_order(self) -> None:
        """
        The RLP holds the 19 fields in the order of DESIGN §2.
        """
        header = sample_header()
        fields = decode_rlp(header.encode())
        self.assertEqual(len(fields), 19)
        self.assertEqual(fields[2], b"\x33" * 20)
        self.assertEqual(fields[7], encode_uint(131072))
        self.assertEqual(fields[8], encode_uint(42))
        self.assertEqual(fields[12], b"horse")
        self.assertEqual(fields[13], encode_uint(21000 * 10**9))
        self.assertEqual(fields[14], encode_uint(10**9))
        self.assertEqual(fields[16:], [b"\x04" * 80, b"\x05" * 64, b"\x06" * 100])

    def test_round_trip(self) -> None:
        """
        A header decodes from its own encoding.
        """
        header = sample_header()
        self.assertEqual(Header.decode(header.encode()), header)

    def test_forget_encodings(self) -> None:
        """
        After its cached encodings are dropped, a header encodes and hashes
        as before, and holds none of them until asked again.
        """
        header = sample_header()
        encoded, block_hash, for_hash = header.encode(), header.hash, header.encode_for_hash()
        header.forget_encodings()
        self.assertFalse({"_fields", "_encoded_fields", "_encoded"} & set(vars(header)))
        self.assertEqual((header.encode(), header.hash, header.encode_for_hash()), (encoded, block_hash, for_hash))
        header.forget_encodings()
        header.forget_encodings()

    def test_hash_covers_first_17_fields(self) -> None:
        """
        The block hash is Keccak-256 of the first 17 fields: changing the
        merkle proof or the coinbase transaction leaves it as it is, changing
        the Bitcoin header does not.
        """
        header = sample_header()
        fields = decode_rlp(header.encode())
        self.assertEqual(header.hash, keccak256(encode_rlp(fields[:17])))
        self.assertEqual(sample_header(bitcoin_merged_mining_merkle_proof=b"").hash, header.hash)
        self.assertEqual(sample_header(bitcoin_merged_mining_coinbase_transaction=b"").hash, header.hash)
        self.assertNotEqual(sample_header(bitcoin_merged_mining_header=b"").hash, header.hash)

    def test_hash_for_merged_mining_covers_first_16_fields(self) -> None:
        """
        The hash for merged mining ignores all three merged-mining fields.
        """
        header = sample_header()
        fields = decode_rlp(header.encode())
        self.assertEqual(header.hash_for_merged_mining, keccak256(encode_rlp(fields[:16])))
        bare = sample_header(
            bitcoin_merged_mining_header=b"",
            bitcoin_merged_mining_merkle_proof=b"",
            bitcoin_merged_mining_coinbase_transaction=b"",
        )
        self.assertEqual(bare.hash_for_merged_mining, header.hash_for_merged_mining)
        self.assertNotEqual(sample_header(number=43).hash_for_merged_mining, header.hash_for_merged_mining)

    def test_with_seal(self) -> None:
        """
        L{Header.with_seal} gives the header with the three merged-mining
        fields set, whose encoding, hash and hash for merged mining (carried
        over from the unsealed header, whose own were computed first) are
        those of the same header made from scratch.
        """
        bare = sample_header(
            bitcoin_merged_mining_header=b"",
            bitcoin_merged_mining_merkle_proof=b"",
            bitcoin_merged_mining_coinbase_transaction=b"",
        )
        self.assertNotEqual(bare.hash, sample_header().hash)
        bare_encoding = bare.encode()
        seal = (b"\x07" * 80, b"\x08" * 32, b"\x09" * 120)
        sealed = bare.with_seal(*seal)
        expected = sample_header(
            bitcoin_merged_mining_header=seal[0],
            bitcoin_merged_mining_merkle_proof=seal[1],
            bitcoin_merged_mining_coinbase_transaction=seal[2],
        )
        self.assertEqual(sealed, expected)
        self.assertEqual(sealed.encode(), Header.decode(expected.encode()).encode())
        self.assertEqual(sealed.hash, Header.decode(expected.encode()).hash)
        self.assertEqual(sealed.hash_for_merged_mining, Header.decode(expected.encode()).hash_for_merged_mining)
        self.assertEqual(Header.decode(sealed.encode()), expected)
        self.assertNotEqual(sealed.encode(), bare_encoding)
        computed = {"_encoded_fields", "_encoded", "hash", "hash_for_merged_mining"}
        self.assertEqual(vars(sealed).keys() - computed, set(Header.__dataclass_fields__))
        self.assertEqual(bare.with_seal(b"", b"", b"").encode(), bare_encoding)

    def test_replaced(self) -> None:
        """
        L{Header.replaced} gives what L{dataclasses.replace} gives: the
        fields changed, none of the original's cached encodings or hashes
        (computed first here) carried over, the original unchanged; an
        unknown field is refused.
        """
        header = sample_header()
        original_hash, original_encoding = header.hash, header.encode()
        header.hash_for_merged_mining
        changed = header.replaced(number=43, state_root=Hash32(b"\x05" * 32))
        expected = replace(header, number=43, state_root=Hash32(b"\x05" * 32))
        self.assertEqual(changed, expected)
        self.assertEqual(changed.encode(), Header.decode(expected.encode()).encode())
        self.assertEqual(changed.hash, Header.decode(expected.encode()).hash)
        self.assertEqual(changed.hash_for_merged_mining, Header.decode(expected.encode()).hash_for_merged_mining)
        self.assertNotEqual(changed.hash, original_hash)
        self.assertEqual((header.number, header.hash, header.encode()), (42, original_hash, original_encoding))
        self.assertEqual(header.replaced(), header)
        with self.assertRaises(TypeError):
            header.replaced(nonce=1)

    def test_encoding_is_the_fields_rlp(self) -> None:
        """
        The encoding is the RLP list of the 19 fields (integers minimal
        big-endian), whatever the lengths and sizes: single bytes below
        0x80 stand for themselves, and hashes, coinbase or bloom of other
        lengths than theirs (in headers made by hand) are encoded as they
        are.
        """

        def expected(header: Header) -> bytes:
            values = [getattr(header, name) for name in Header.__dataclass_fields__]
            return encode_rlp([encode_uint(value) if isinstance(value, int) else value for value in values])

        headers = [
            sample_header(),
            sample_header(difficulty=0, number=1, gas_limit=0x7F, gas_used=0x80, timestamp=0xFF, uncle_count=10**70),
            sample_header(paid_fees=2**256 - 1, minimum_gas_price=1, extra_data=b"\x05"),
            sample_header(parent_hash=Hash32(b"\x01"), coinbase=Address(b""), logs_bloom=b"\x00" * 1100),
            sample_header(state_root=Hash32(b"\x01" * 31), receipts_root=Hash32(b"\x90")),
            sample_header(bitcoin_merged_mining_header=b"", bitcoin_merged_mining_coinbase_transaction=b"\x7f"),
        ]
        for header in headers:
            self.assertEqual(header.encode(), expected(header))
            self.assertEqual(header.hash, keccak256(encode_rlp(decode_rlp(expected(header))[:17])))  # type: ignore[index]

    def test_negative_integer_refused(self) -> None:
        """
        A header with a negative integer field cannot be encoded.
        """
        for field in ("difficulty", "paid_fees", "uncle_count"):
            with self.assertRaises(RLPError):
                sample_header(**{field: -1}).encode()

    def test_extra_data_limit(self) -> None:
        """
        32 bytes of extra data are fine, 33 are refused.
        """
        Header.decode(sample_header(extra_data=b"\x01" * 32).encode())
        with self.assertRaises(RLPError) as caught:
            Header.decode(sample_header(extra_data=b"\x01" * 33).encode())
        self.assertIn("extra data", str(caught.exception))

    def test_wrong_field_count_refused(self) -> None:
        """
        18 or 20 fields are refused.
        """
        fields = decode_rlp(sample_header().encode())
        self.assertRaises(RLPError, Header.decode, encode_rlp(fields[:18]))  # type: ignore[index]
        self.assertRaises(RLPError, Header.decode, encode_rlp(fields + [b""]))  # type: ignore[operator]

    def test_non_canonical_integer_refused(self) -> None:
        """
        A number with a leading zero byte is refused.
        """
        fields = decode_rlp(sample_header().encode())
        fields[8] = b"\x00\x2a"  # type: ignore[index]
        with self.assertRaises(RLPError) as caught:
            Header.decode(encode_rlp(fields))
        self.assertIn("header number", str(caught.exception))

    def test_wrong_lengths_refused(self) -> None:
        """
        Hashes, the coinbase and the bloom must have their exact lengths.
        """
        for index, value in ((0, b"\x01" * 31), (2, b"\x33" * 21), (6, b"\x00" * 255), (3, b"")):
            fields = decode_rlp(sample_header().encode())
            fields[index] = value  # type: ignore[index]
            self.assertRaises(RLPError, Header.decode, encode_rlp(fields))

    def test_out_of_range_refused(self) -> None:
        """
        A number of 2**64 is refused.
        """
        fields = decode_rlp(sample_header().encode())
        fields[8] = encode_uint(2**64)  # type: ignore[index]
        self.assertRaises(RLPError, Header.decode, encode_rlp(fields))

    def test_list_field_refused(self) -> None:
        """
        A list in place of a string field is refused.
        """
        fields = decode_rlp(sample_header().encode())
        fields[16] = []  # type: ignore[index]
        self.assertRaises(RLPError, Header.decode, encode_rlp(fields))

    @settings(max_examples=300, deadline=None)
    @given(st.binary(max_size=600))
    def test_random_bytes_raise_only_rlp_errors(self, raw: bytes) -> None:
        """
        Random bytes either decode or raise L{RLPError}.
        """
        try:
            Header.decode(raw)
        except RLPError:
            pass

    @settings(max_examples=200, deadline=None)
    @given(st.integers(min_value=0, max_value=2**20), st.binary(min_size=1, max_size=40))
    def test_mutated_headers_raise_only_rlp_errors(self, position: int, junk: bytes) -> None:
        """
        A valid header with bytes overwritten either still decodes (to a
        header that encodes back to the same bytes) or raises L{RLPError}.
        """
        raw = sample_header().encode()
        position %= len(raw)
        mutated = raw[:position] + junk + raw[position + len(junk):]
        try:
            header = Header.decode(mutated)
        except RLPError:
            return
        self.assertEqual(replace(header).encode(), mutated)
