"""
Tests for L{nodex.trie.hexary}.
"""

import random

from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from nodex.crypto import keccak256
from nodex.trie import BLANK_ROOT, HexaryTrie, MissingTrieNodeError
from nodex.trie.errors import TrieError


class CountingReader:
    """
    A node reader over a dict that counts its reads.
    """

    def __init__(self, nodes: dict[bytes, bytes]) -> None:
        """
        @param nodes: the nodes by hash.
        """
        self.nodes = nodes
        self.reads = 0

    def __call__(self, node_hash: bytes) -> bytes | None:
        """
        Look a node up and count the read.
        """
        self.reads += 1
        return self.nodes.get(node_hash)


def _random_pairs(seed: int, count: int, key_length: int = 32) -> dict[bytes, bytes]:
    """
    C{count} random keys with random values of 1 to 80 bytes.
    """
    rng = random.Random(seed)
    return {
        rng.randbytes(key_length): rng.randbytes(rng.randrange(1, 80)) for _ in range(count)
    }


class HexaryTrieTests(SynchronousTestCase):
    """
    Tests for L{HexaryTrie}.
    """

    def test_blank_root(self) -> None:
        """
        An empty trie's root is Keccak-256 of RLP(""), and it commits nothing.
        """
        trie = HexaryTrie({}.get)
        self.assertEqual(trie.root_hash, BLANK_ROOT)
        self.assertEqual(BLANK_ROOT, keccak256(b"\x80"))
        self.assertEqual(trie.commit(), {})

    def test_get_put_delete(self) -> None:
        """
        A value put is got back; a deleted or never-put key gives L{None}.
        """
        trie = HexaryTrie({}.get)
        trie.put(b"dog", b"puppy")
        trie.put(b"doge", b"coin")
        self.assertEqual(trie.get(b"dog"), b"puppy")
        self.assertEqual(trie.get(b"doge"), b"coin")
        self.assertIsNone(trie.get(b"do"))
        trie.delete(b"dog")
        self.assertIsNone(trie.get(b"dog"))
        self.assertEqual(trie.get(b"doge"), b"coin")

    def test_empty_value_deletes(self) -> None:
        """
        Putting an empty value removes the key, restoring the earlier root.
        """
        trie = HexaryTrie({}.get)
        trie.put(b"a", b"1")
        before = trie.root_hash
        trie.put(b"ab", b"2")
        trie.put(b"ab", b"")
        self.assertIsNone(trie.get(b"ab"))
        self.assertEqual(trie.root_hash, before)

    def test_delete_absent_key(self) -> None:
        """
        Deleting a key that is not there leaves the root and the store unchanged.
        """
        nodes: dict[bytes, bytes] = {}
        trie = HexaryTrie(nodes.get)
        for key, value in _random_pairs(1, 50).items():
            trie.put(key, value)
        nodes.update(trie.commit())
        root = trie.root_hash
        reopened = HexaryTrie(nodes.get, root)
        reopened.delete(b"\x00" * 32)
        reopened.delete(b"")
        self.assertEqual(reopened.root_hash, root)
        self.assertEqual(reopened.commit(), {})

    def test_root_independent_of_history(self) -> None:
        """
        Any sequence of puts and deletes, with commits and reopenings between
        them, gives the root of a fresh trie built from the final contents.
        """
        rng = random.Random(5)
        nodes: dict[bytes, bytes] = {}
        keys = [bytes(rng.randrange(3) for _ in range(rng.randrange(0, 5))) for _ in range(40)]
        expected: dict[bytes, bytes] = {}
        trie = HexaryTrie(nodes.get)
        for step in range(600):
            key = rng.choice(keys)
            if rng.random() < 0.35:
                trie.delete(key)
                expected.pop(key, None)
            else:
                value = rng.randbytes(rng.choice([1, 4, 40]))
                trie.put(key, value)
                expected[key] = value
            if step % 37 == 0:
                nodes.update(trie.commit())
                trie = HexaryTrie(nodes.get, trie.root_hash)
            elif step % 11 == 0:
                trie.root_hash
        fresh = HexaryTrie({}.get)
        for key, value in expected.items():
            fresh.put(key, value)
        self.assertEqual(trie.root_hash, fresh.root_hash)
        for key in keys:
            self.assertEqual(trie.get(key), expected.get(key))

    def test_commit_then_reopen(self) -> None:
        """
        The nodes of L{HexaryTrie.commit} are enough to read every key back
        from a trie opened at the root.
        """
        pairs = _random_pairs(2, 300)
        trie = HexaryTrie({}.get)
        for key, value in pairs.items():
            trie.put(key, value)
        nodes = trie.commit()
        reopened = HexaryTrie(nodes.get, trie.root_hash)
        for key, value in pairs.items():
            self.assertEqual(reopened.get(key), value)

    def test_commit_hands_over_only_new_nodes(self) -> None:
        """
        A second commit after one change holds only the nodes on that key's
        path, each hashing to its key; a commit with no change holds nothing.
        """
        trie = HexaryTrie({}.get)
        for key, value in _random_pairs(3, 1000).items():
            trie.put(key, value)
        first = trie.commit()
        self.assertEqual(trie.commit(), {})
        trie.put(b"\x01" * 32, b"changed")
        second = trie.commit()
        self.assertTrue(0 < len(second) <= 5, len(second))
        for node_hash, encoded in second.items():
            self.assertEqual(keccak256(encoded), node_hash)
        self.assertIn(trie.root_hash, second)
        self.assertNotIn(trie.root_hash, first)

    def test_short_root_committed(self) -> None:
        """
        A root node shorter than 32 bytes is still stored under its hash.
        """
        trie = HexaryTrie({}.get)
        trie.put(b"a", b"b")
        nodes = trie.commit()
        self.assertEqual(list(nodes), [trie.root_hash])
        self.assertEqual(HexaryTrie(nodes.get, trie.root_hash).get(b"a"), b"b")

    def test_opening_reads_nothing(self) -> None:
        """
        Opening a trie at a root reads no node; a lookup reads only the nodes
        on one path, and reading it again reads nothing more.
        """
        trie = HexaryTrie({}.get)
        pairs = _random_pairs(4, 2000)
        for key, value in pairs.items():
            trie.put(key, value)
        reader = CountingReader(trie.commit())
        reopened = HexaryTrie(reader, trie.root_hash)
        self.assertEqual(reader.reads, 0)
        key = next(iter(pairs))
        reopened.get(key)
        self.assertTrue(0 < reader.reads <= 5, reader.reads)
        reads = reader.reads
        reopened.get(key)
        self.assertEqual(reader.reads, reads)

    def test_update_rehashes_a_path(self) -> None:
        """
        After one update to a large committed trie, the new root is right and
        the update read only the nodes on its path.
        """
        pairs = _random_pairs(6, 3000)
        trie = HexaryTrie({}.get)
        for key, value in pairs.items():
            trie.put(key, value)
        reader = CountingReader(trie.commit())
        reopened = HexaryTrie(reader, trie.root_hash)
        key = next(iter(pairs))
        reopened.put(key, b"new value")
        pairs[key] = b"new value"
        fresh = HexaryTrie({}.get)
        for each, value in pairs.items():
            fresh.put(each, value)
        self.assertEqual(reopened.root_hash, fresh.root_hash)
        self.assertLessEqual(reader.reads, 5)

    def test_missing_node(self) -> None:
        """
        A trie whose nodes are absent raises L{MissingTrieNodeError} naming the hash.
        """
        root = b"\x12" * 32
        trie = HexaryTrie({}.get, root)
        error = self.assertRaises(MissingTrieNodeError, trie.get, b"key")
        self.assertEqual(error.node_hash, root)
        self.assertIn("0x" + root.hex(), str(error))
        self.assertIsInstance(error, TrieError)
        self.assertRaises(MissingTrieNodeError, trie.put, b"key", b"value")

    def test_bad_input(self) -> None:
        """
        A key or value that is not C{bytes}, or a root that is not 32 bytes,
        raises L{TrieError}.
        """
        trie = HexaryTrie({}.get)
        self.assertRaises(TrieError, trie.put, "key", b"value")
        self.assertRaises(TrieError, trie.put, b"key", "value")
        self.assertRaises(TrieError, trie.get, 5)
        self.assertRaises(TrieError, HexaryTrie, {}.get, b"short")

    def test_malformed_node(self) -> None:
        """
        A stored node that is not valid trie RLP raises a L{TrieError}.
        """
        root = b"\x34" * 32
        trie = HexaryTrie({root: b"\xc3\x80\x80\x80"}.get, root)
        self.assertRaises(TrieError, trie.get, b"key")

    def test_items_in_order(self) -> None:
        """
        L{HexaryTrie.items} yields every pair in ascending key order, including
        keys that are prefixes of others.
        """
        pairs = {b"": b"root", b"a": b"1", b"ab": b"2", b"b": b"3", b"abc": b"4", b"\xff": b"5"}
        trie = HexaryTrie({}.get)
        for key, value in pairs.items():
            trie.put(key, value)
        self.assertEqual(list(trie.items()), sorted(pairs.items()))

    def test_next_and_previous_keys(self) -> None:
        """
        L{HexaryTrie.next_key} and L{HexaryTrie.previous_key} find the
        neighbours of stored and absent keys, across committed nodes.
        """
        rng = random.Random(8)
        keys = sorted({rng.randbytes(rng.randrange(1, 4)) for _ in range(200)})
        trie = HexaryTrie({}.get)
        for key in keys:
            trie.put(key, b"v" + key)
        reopened = HexaryTrie(trie.commit().get, trie.root_hash)
        for probe in [rng.randbytes(rng.randrange(0, 4)) for _ in range(100)] + keys[:20]:
            after = [key for key in keys if key > probe]
            before = [key for key in keys if key < probe]
            self.assertEqual(reopened.next_key(probe), after[0] if after else None)
            self.assertEqual(reopened.previous_key(probe), before[-1] if before else None)


_KEYS = st.binary(min_size=0, max_size=3).map(lambda key: bytes(byte % 4 for byte in key))
_OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), _KEYS, st.binary(min_size=1, max_size=40)),
        st.tuples(st.just("delete"), _KEYS, st.just(b"")),
        st.tuples(st.just("commit"), st.just(b""), st.just(b"")),
        st.tuples(st.just("root"), st.just(b""), st.just(b"")),
    ),
    max_size=40,
)


class HexaryTriePropertyTests(SynchronousTestCase):
    """
    Property tests for L{HexaryTrie} against a dict.
    """

    @settings(max_examples=150, deadline=None)
    @given(_OPERATIONS)
    def test_behaves_like_a_dict(self, operations: list[tuple[str, bytes, bytes]]) -> None:
        """
        After any mix of puts, deletes, root computations and commits (each
        followed by reopening from the committed nodes), the trie holds what a
        dict holds, in order, and its root is that of a fresh trie of the
        dict's contents.
        """
        nodes: dict[bytes, bytes] = {}
        model: dict[bytes, bytes] = {}
        trie = HexaryTrie(nodes.get)
        for operation, key, value in operations:
            if operation == "put":
                trie.put(key, value)
                model[key] = value
            elif operation == "delete":
                trie.delete(key)
                model.pop(key, None)
            elif operation == "commit":
                nodes.update(trie.commit())
                trie = HexaryTrie(nodes.get, trie.root_hash)
            else:
                trie.root_hash
        fresh = HexaryTrie({}.get)
        for key, value in model.items():
            fresh.put(key, value)
        self.assertEqual(trie.root_hash, fresh.root_hash)
        self.assertEqual(list(trie.items()), sorted(model.items()))
        nodes.update(trie.commit())
        reopened = HexaryTrie(nodes.get, trie.root_hash)
        self.assertEqual(list(reopened.items()), sorted(model.items()))
