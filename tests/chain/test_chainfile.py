"""
Tests for L{nodex.chain.chainfile}.
"""

import io

from twisted.trial.unittest import SynchronousTestCase

from nodex.chain.chainfile import MAX_BLOCK_BYTES, ChainFileError, read_blocks, write_blocks
from nodex.db.memory import MemoryStore
from tests.chain.chainmaker import make_blocks, regtest_importer


class ChainFileTests(SynchronousTestCase):
    """
    Writing and reading chain files, whole and broken.
    """

    def setUp(self) -> None:
        """
        Five blocks with two transfers each, and their chain file.
        """
        self.blocks = make_blocks(regtest_importer(MemoryStore()), 5, transfers=2)
        out = io.BytesIO()
        self.assertEqual(write_blocks(out, self.blocks), 5)
        self.data = out.getvalue()

    def test_round_trip(self) -> None:
        """
        The blocks read back equal the blocks written, each with the offset just after it.
        """
        read = list(read_blocks(io.BytesIO(self.data)))
        self.assertEqual([block.hash for block, _ in read], [block.hash for block in self.blocks])
        self.assertEqual(read[-1][1], len(self.data))
        self.assertEqual(read[0][1], len(self.blocks[0].encode()))

    def test_small_reads(self) -> None:
        """
        A source that hands out a few bytes at a time gives the same blocks.
        """

        class Trickle(io.BytesIO):
            def read(self, size: int = -1) -> bytes:
                return super().read(7)

        read = [block.hash for block, _ in read_blocks(Trickle(self.data))]
        self.assertEqual(read, [block.hash for block in self.blocks])

    def test_empty(self) -> None:
        """
        An empty file holds no blocks.
        """
        self.assertEqual(list(read_blocks(io.BytesIO(b""))), [])

    def test_truncated(self) -> None:
        """
        A truncated file yields its whole blocks, then an error naming the
        block it broke off in.
        """
        cut = self.data[: len(self.data) - 10]
        reader = read_blocks(io.BytesIO(cut))
        got = [next(reader)[0] for _ in range(4)]
        error = self.assertRaises(ChainFileError, next, reader)
        self.assertEqual(error.index, 4)
        self.assertIn("truncated", str(error))
        self.assertEqual([block.hash for block in got], [block.hash for block in self.blocks[:4]])

    def test_garbage(self) -> None:
        """
        Bytes that do not start an RLP list are garbage, named by offset.
        """
        error = self.assertRaises(ChainFileError, list, read_blocks(io.BytesIO(self.data + b"\x01garbage")))
        self.assertEqual(error.index, 5)
        self.assertIn(f"garbage at byte {len(self.data)}", str(error))

    def test_huge_length(self) -> None:
        """
        A length prefix claiming more than L{MAX_BLOCK_BYTES} is refused without reading that much.
        """
        prefix = b"\xfb" + (MAX_BLOCK_BYTES * 4).to_bytes(4, "big")
        error = self.assertRaises(ChainFileError, list, read_blocks(io.BytesIO(prefix)))
        self.assertIn("garbage", str(error))

    def test_not_a_block(self) -> None:
        """
        A well-formed RLP list that is not a block is refused, naming its place.
        """
        error = self.assertRaises(ChainFileError, list, read_blocks(io.BytesIO(self.data + b"\xc3\x01\x02\x03")))
        self.assertIn("block 5 of the file", str(error))
        self.assertIn("does not decode", str(error))
