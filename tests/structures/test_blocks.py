"""
Tests for L{nodex.structures.blocks}.
"""

from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from nodex.structures.blocks import Block, decode_body, encode_body
from nodex.structures.errors import InvalidTransactionError, RLPError
from nodex.structures.rlpcodec import decode_rlp, encode_rlp
from nodex.structures.transactions import decode_transaction
from tests.structures.test_headers import sample_header
from tests.structures.test_transactions import EIP155_RAW, access_list_tx, fee_market_tx


def sample_block() -> Block:
    """
    A block with one transaction of each type and one uncle.
    """
    transactions = (decode_transaction(bytes.fromhex(EIP155_RAW)), access_list_tx(), fee_market_tx())
    return Block(sample_header(), transactions, (sample_header(number=41),))


SAMPLE_RAW = sample_block().encode()


class BlockTests(SynchronousTestCase):
    """
    Tests for L{Block}.
    """

    def test_encoding(self) -> None:
        """
        A block is the list of its header, its transactions (legacy as lists,
        typed as strings of their raw bytes) and its uncles.
        """
        block = sample_block()
        header, transactions, uncles = decode_rlp(block.encode())
        self.assertEqual(encode_rlp(header), block.header.encode())
        self.assertIsInstance(transactions[0], list)
        self.assertEqual(transactions[1], block.transactions[1].encode())
        self.assertEqual(transactions[2], block.transactions[2].encode())
        self.assertEqual([encode_rlp(uncle) for uncle in uncles], [block.uncles[0].encode()])

    def test_round_trip(self) -> None:
        """
        A block decodes from its own encoding, with the same hashes.
        """
        block = sample_block()
        decoded = Block.decode(block.encode())
        self.assertEqual(decoded, block)
        self.assertEqual(decoded.hash, block.header.hash)
        self.assertEqual(decoded.number, 42)
        self.assertEqual([tx.hash for tx in decoded.transactions], [tx.hash for tx in block.transactions])

    def test_size(self) -> None:
        """
        The size is the length of the full block RLP.
        """
        block = sample_block()
        self.assertEqual(block.size, len(block.encode()))
        empty = encode_rlp([decode_rlp(sample_header().encode()), [], []])
        self.assertEqual(Block(sample_header()).size, len(empty))

    def test_body(self) -> None:
        """
        The body holds the transactions and uncles, and rejoins its header.
        """
        block = sample_block()
        body = block.encode_body()
        self.assertEqual(body, encode_body(block.transactions, block.uncles))
        self.assertEqual(decode_body(body), (block.transactions, block.uncles))
        self.assertEqual(Block.from_body(block.header, body), block)

    def test_malformed_refused(self) -> None:
        """
        Missing parts, trailing bytes and a string in place of the
        transactions list are refused.
        """
        block = sample_block()
        header, transactions, uncles = decode_rlp(block.encode())
        self.assertRaises(RLPError, Block.decode, encode_rlp([header, transactions]))
        self.assertRaises(RLPError, Block.decode, block.encode() + b"\x00")
        self.assertRaises(RLPError, Block.decode, encode_rlp([header, b"", uncles]))
        self.assertRaises(RLPError, decode_body, encode_rlp([[], [], []]))

    @settings(max_examples=200, deadline=None)
    @given(st.integers(min_value=0, max_value=2**20), st.binary(min_size=1, max_size=40))
    def test_mutated_blocks_raise_only_own_errors(self, position: int, junk: bytes) -> None:
        """
        A valid block with bytes overwritten either still decodes or raises
        L{RLPError} or L{InvalidTransactionError}.
        """
        raw = SAMPLE_RAW
        position %= len(raw)
        try:
            Block.decode(raw[:position] + junk + raw[position + len(junk):])
        except (RLPError, InvalidTransactionError):
            pass
