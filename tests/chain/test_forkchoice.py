"""
Tests for L{nodex.chain.forkchoice}.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.chain.forkchoice import (
    MissingAncestorError,
    find_reorganisation,
    is_heavier,
    write_canonical_changes,
)
from nodex.db.memory import MemoryStore
from nodex.db.schema import read_block_bloom, read_canonical_hash, read_head_hash, read_tx_lookup
from nodex.structures.blocks import Block
from nodex.structures.headers import Header
from tests.chain.test_processing import build_on, sample_store, transfer


class IsHeavierTests(SynchronousTestCase):
    """
    Tests for L{is_heavier}.
    """

    def test_strictly_heavier(self) -> None:
        """
        Only a strictly greater total difficulty wins; a tie keeps the first seen.
        """
        self.assertTrue(is_heavier(11, 10))
        self.assertFalse(is_heavier(10, 10))
        self.assertFalse(is_heavier(9, 10))


class ReorganisationTests(SynchronousTestCase):
    """
    Tests for L{find_reorganisation} and L{write_canonical_changes}.
    """

    def setUp(self) -> None:
        """
        Genesis, a chain A1-A2 and a chain B1-B2-B3, all headers readable.
        """
        self.store, self.genesis = sample_store()
        self.headers: dict[bytes, Header] = {self.genesis.hash: self.genesis}
        self.a = self.chain(b"a", 2)
        self.b = self.chain(b"b", 3)

    def chain(self, tag: bytes, length: int) -> list[Block]:
        """
        C{length} empty blocks on genesis, told apart by C{tag}.
        """
        blocks = []
        parent = self.genesis
        for _ in range(length):
            block = build_on(self.store, parent, extra_data=tag).block
            self.headers[block.hash] = block.header
            blocks.append(block)
            parent = block.header
        return blocks

    def test_extension(self) -> None:
        """
        From a head to its descendant nothing is abandoned.
        """
        found = find_reorganisation(self.headers.get, self.a[0].header, self.a[1].header)
        self.assertEqual((found.ancestor, found.abandoned, found.adopted), (self.a[0].header, (), (self.a[1].header,)))

    def test_fork(self) -> None:
        """
        From A2 to B3 the ancestor is genesis, A1-A2 are abandoned and B1-B3 adopted, oldest first.
        """
        found = find_reorganisation(self.headers.get, self.a[1].header, self.b[2].header)
        self.assertEqual(found.ancestor, self.genesis)
        self.assertEqual(found.abandoned, tuple(block.header for block in self.a))
        self.assertEqual(found.adopted, tuple(block.header for block in self.b))

    def test_back(self) -> None:
        """
        From B3 back to A1 B1-B3 are abandoned.
        """
        found = find_reorganisation(self.headers.get, self.b[2].header, self.a[0].header)
        self.assertEqual(len(found.abandoned), 3)
        self.assertEqual(found.adopted, (self.a[0].header,))

    def test_missing_ancestor(self) -> None:
        """
        A header whose parent cannot be read is reported.
        """
        del self.headers[self.b[0].hash]
        old, new = self.a[1].header, self.b[2].header
        self.assertRaises(MissingAncestorError, find_reorganisation, self.headers.get, old, new)

    def test_write_changes(self) -> None:
        """
        The batch rewrites the canonical index, lookups, blooms and the head.
        """
        store = MemoryStore()
        _, genesis = sample_store(store=store)
        old = build_on(store, genesis, [transfer(0, 0)]).block
        batch = store.batch()
        write_canonical_changes(batch, genesis, (), (old,))
        store.write(batch)
        self.assertEqual(read_canonical_hash(store, 1), old.hash)
        self.assertEqual(read_tx_lookup(store, old.transactions[0].hash), (old.hash, 0))
        new1 = build_on(store, genesis, [transfer(1, 0)], extra_data=b"n").block
        new2 = build_on(store, new1.header).block
        batch = store.batch()
        write_canonical_changes(batch, genesis, (old,), (new1, new2))
        store.write(batch)
        self.assertEqual((read_canonical_hash(store, 1), read_canonical_hash(store, 2)), (new1.hash, new2.hash))
        self.assertIsNone(read_tx_lookup(store, old.transactions[0].hash))
        self.assertEqual(read_tx_lookup(store, new1.transactions[0].hash), (new1.hash, 0))
        self.assertEqual(read_block_bloom(store, 2), new2.header.logs_bloom)
        self.assertEqual(read_head_hash(store), new2.hash)

    def test_write_shorter(self) -> None:
        """
        Abandoning more blocks than are adopted deletes the heights above the new head.
        """
        store = MemoryStore()
        _, genesis = sample_store(store=store)
        old1 = build_on(store, genesis).block
        old2 = build_on(store, old1.header).block
        batch = store.batch()
        write_canonical_changes(batch, genesis, (), (old1, old2))
        store.write(batch)
        new1 = build_on(store, genesis, extra_data=b"n").block
        batch = store.batch()
        write_canonical_changes(batch, genesis, (old1, old2), (new1,))
        store.write(batch)
        self.assertEqual(read_canonical_hash(store, 1), new1.hash)
        self.assertIsNone(read_canonical_hash(store, 2))
        self.assertIsNone(read_block_bloom(store, 2))
