"""
Tests for L{nodex.db.schema}.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.db import SchemaVersionError, StoreError, WrongNetworkError
from nodex.db import schema
from nodex.db.memory import MemoryStore
from nodex.trie import HexaryTrie

BLOCK = b"\xbb" * 32
OTHER_BLOCK = b"\xcc" * 32
TX = b"\x77" * 32


class SchemaTests(SynchronousTestCase):
    """
    Tests for the typed accessors, over a L{MemoryStore}.
    """

    def setUp(self) -> None:
        """
        A fresh store per test.
        """
        self.store = MemoryStore()

    def _write(self, *writes: tuple) -> None:
        """
        Apply writer calls C{(function, arguments...)} in one batch.
        """
        batch = self.store.batch()
        for function, *arguments in writes:
            function(batch, *arguments)
        self.store.write(batch)

    def test_columns(self) -> None:
        """
        The ten columns of DESIGN §3, each named once.
        """
        self.assertEqual(len(set(schema.ALL_COLUMNS)), 10)

    def test_block_parts_by_hash(self) -> None:
        """
        Header, body and receipts RLP are stored by block hash, and deleted.
        """
        self._write(
            (schema.write_header_rlp, BLOCK, b"header"),
            (schema.write_body_rlp, BLOCK, b"body"),
            (schema.write_receipts_rlp, BLOCK, b"receipts"),
        )
        self.assertEqual(schema.read_header_rlp(self.store, BLOCK), b"header")
        self.assertEqual(schema.read_body_rlp(self.store, BLOCK), b"body")
        self.assertEqual(schema.read_receipts_rlp(self.store, BLOCK), b"receipts")
        self.assertIsNone(schema.read_header_rlp(self.store, OTHER_BLOCK))
        self._write(
            (schema.delete_header_rlp, BLOCK),
            (schema.delete_body_rlp, BLOCK),
            (schema.delete_receipts_rlp, BLOCK),
        )
        self.assertIsNone(schema.read_header_rlp(self.store, BLOCK))
        self.assertIsNone(schema.read_body_rlp(self.store, BLOCK))
        self.assertIsNone(schema.read_receipts_rlp(self.store, BLOCK))

    def test_bad_hash_refused(self) -> None:
        """
        A block hash that is not 32 bytes raises L{StoreError}.
        """
        batch = self.store.batch()
        self.assertRaises(StoreError, schema.write_header_rlp, batch, b"short", b"header")
        self.assertRaises(StoreError, schema.write_canonical_hash, batch, 1, b"short")

    def test_total_difficulty(self) -> None:
        """
        Total difficulty round-trips as an integer, zero and huge values included.
        """
        self._write(
            (schema.write_total_difficulty, BLOCK, 0),
            (schema.write_total_difficulty, OTHER_BLOCK, 2**200 + 5),
        )
        self.assertEqual(schema.read_total_difficulty(self.store, BLOCK), 0)
        self.assertEqual(schema.read_total_difficulty(self.store, OTHER_BLOCK), 2**200 + 5)
        self._write((schema.delete_total_difficulty, BLOCK))
        self.assertIsNone(schema.read_total_difficulty(self.store, BLOCK))
        self.assertRaises(StoreError, schema.write_total_difficulty, self.store.batch(), BLOCK, -1)

    def test_canonical_chain(self) -> None:
        """
        Canonical hashes by number iterate in height order; a deleted height
        reads as L{None}.
        """
        self._write(
            (schema.write_canonical_hash, 300, OTHER_BLOCK),
            (schema.write_canonical_hash, 2, BLOCK),
        )
        self.assertEqual(schema.read_canonical_hash(self.store, 2), BLOCK)
        self.assertEqual(
            [value for _, value in self.store.iterate(schema.CANONICAL)], [BLOCK, OTHER_BLOCK]
        )
        self._write((schema.delete_canonical_hash, 300))
        self.assertIsNone(schema.read_canonical_hash(self.store, 300))
        self.assertRaises(StoreError, schema.number_key, -1)
        self.assertRaises(StoreError, schema.number_key, 2**64)

    def test_head(self) -> None:
        """
        The head hash is absent before genesis, then what was written.
        """
        self.assertIsNone(schema.read_head_hash(self.store))
        self._write((schema.write_head_hash, BLOCK))
        self.assertEqual(schema.read_head_hash(self.store), BLOCK)

    def test_tx_lookup(self) -> None:
        """
        A transaction's block hash and index round-trip, index 0 and large ones.
        """
        self._write((schema.write_tx_lookup, TX, BLOCK, 0))
        self.assertEqual(schema.read_tx_lookup(self.store, TX), (BLOCK, 0))
        self._write((schema.write_tx_lookup, TX, OTHER_BLOCK, 70000))
        self.assertEqual(schema.read_tx_lookup(self.store, TX), (OTHER_BLOCK, 70000))
        self._write((schema.delete_tx_lookup, TX))
        self.assertIsNone(schema.read_tx_lookup(self.store, TX))

    def test_corrupt_tx_lookup(self) -> None:
        """
        A truncated lookup entry raises L{StoreError}.
        """
        batch = self.store.batch()
        batch.put(schema.TX_LOOKUP, TX, b"\x01\x02")
        self.store.write(batch)
        self.assertRaises(StoreError, schema.read_tx_lookup, self.store, TX)

    def test_code(self) -> None:
        """
        Code is stored by its hash.
        """
        self._write((schema.write_code, BLOCK, b"\x60\x00"))
        self.assertEqual(schema.read_code(self.store, BLOCK), b"\x60\x00")
        self.assertIsNone(schema.read_code(self.store, OTHER_BLOCK))

    def test_trie_nodes(self) -> None:
        """
        A trie's committed nodes, written with L{schema.write_trie_nodes},
        serve a trie reopened through L{schema.trie_node_reader}.
        """
        trie = HexaryTrie(schema.trie_node_reader(self.store))
        for index in range(100):
            trie.put(index.to_bytes(4, "big"), b"value %d" % index)
        self._write((schema.write_trie_nodes, trie.commit()))
        reopened = HexaryTrie(schema.trie_node_reader(self.store), trie.root_hash)
        self.assertEqual(reopened.get((42).to_bytes(4, "big")), b"value 42")
        self.assertIsNotNone(schema.read_trie_node(self.store, trie.root_hash))

    def test_block_bloom(self) -> None:
        """
        Logs blooms are indexed by height; a bloom of the wrong size is refused.
        """
        bloom = b"\x01" * 256
        self._write((schema.write_block_bloom, 9, bloom))
        self.assertEqual(schema.read_block_bloom(self.store, 9), bloom)
        self._write((schema.delete_block_bloom, 9))
        self.assertIsNone(schema.read_block_bloom(self.store, 9))
        self.assertRaises(StoreError, schema.write_block_bloom, self.store.batch(), 9, b"\x01")

    def test_schema_version(self) -> None:
        """
        A new store carries the current version; checking it again passes;
        another version raises L{SchemaVersionError} naming both.
        """
        self.assertEqual(schema.read_schema_version(self.store), schema.SCHEMA_VERSION)
        schema.ensure_schema_version(self.store)
        self._write((schema.write_schema_version, 7))
        self.assertEqual(schema.read_schema_version(self.store), 7)
        error = self.assertRaises(SchemaVersionError, schema.ensure_schema_version, self.store)
        self.assertIn("version 7", str(error))
        self.assertIn(f"version {schema.SCHEMA_VERSION}", str(error))

    def test_migration_from_version_1(self) -> None:
        """
        A version 1 store loses its log index's bit keys and section marks
        (in batches), keeps its blooms and everything else, and is stamped
        with the current version.
        """
        keys = [b"\xff" + bytes([bit]) * 10 for bit in range(7)] + [b"\xfe" + bytes(6)]
        batch = self.store.batch()
        for key in keys:
            batch.put(schema.LOG_INDEX, key, b"")
        schema.write_block_bloom(batch, 3, b"\x01" * 256)
        schema.write_schema_version(batch, 1)
        self.store.write(batch)
        self.patch(schema, "MIGRATIONS", {1: lambda store: schema._drop_bit_index(store, keys_per_batch=3)})
        schema.ensure_schema_version(self.store, schema.MIGRATIONS)
        self.assertEqual(schema.read_schema_version(self.store), schema.SCHEMA_VERSION)
        self.assertEqual(
            [key for key, _ in self.store.iterate(schema.LOG_INDEX)], [schema.number_key(3)]
        )

    def test_network(self) -> None:
        """
        The network name is absent in a new store, then what genesis wrote;
        L{schema.check_network} refuses another network.
        """
        self.assertIsNone(schema.read_network(self.store))
        schema.check_network(self.store, "regtest")
        self._write((schema.write_network, "regtest"))
        self.assertEqual(schema.read_network(self.store), "regtest")
        schema.check_network(self.store, "regtest")
        error = self.assertRaises(WrongNetworkError, schema.check_network, self.store, "main")
        self.assertIn("'regtest'", str(error))
