"""
Tests for L{nodex.trie.nodecache} and the tries that share it.
"""

import random

from twisted.trial.unittest import SynchronousTestCase

from nodex.trie import HexaryTrie, MissingTrieNodeError, SecureTrie
from nodex.trie.nodecache import NodeCache


def stored_trie(pairs: dict[bytes, bytes], secure: bool = False) -> tuple[dict[bytes, bytes], bytes]:
    """
    The committed nodes and the root of a trie holding C{pairs}.
    """
    nodes: dict[bytes, bytes] = {}
    trie = (SecureTrie if secure else HexaryTrie)(nodes.get)
    for key, value in pairs.items():
        trie.put(key, value)
    nodes.update(trie.commit())
    return nodes, trie.root_hash


class NodeCacheTests(SynchronousTestCase):
    """
    Tests for L{NodeCache} and L{HexaryTrie}'s reads through it.
    """

    def setUp(self) -> None:
        """
        A stored trie of 300 random pairs and a reader that counts its reads.
        """
        generator = random.Random(9)
        self.pairs = {generator.randbytes(generator.randint(1, 40)): generator.randbytes(generator.randint(1, 70)) for _ in range(300)}
        self.nodes, self.root = stored_trie(self.pairs)
        self.reads = 0

    def read(self, node_hash: bytes) -> bytes | None:
        """
        Read a stored node, counting.
        """
        self.reads += 1
        return self.nodes.get(node_hash)

    def test_same_answers_and_one_read_per_node(self) -> None:
        """
        Tries sharing a cache answer as a trie without one, and each node is
        read from the store once, however many tries look it up.
        """
        cache = NodeCache()
        for _ in range(3):
            trie = HexaryTrie(self.read, self.root, cache)
            for key, value in self.pairs.items():
                self.assertEqual(trie.get(key), value)
            self.assertIsNone(trie.get(b"\x00absent"))
        self.assertEqual(self.reads, len(cache))
        self.assertLessEqual(len(cache), len(self.nodes))

    def test_changes_leave_the_shared_nodes_alone(self) -> None:
        """
        A trie that changes after reading through the cache changes its own
        nodes: another trie at the same root still reads the old values.
        """
        cache = NodeCache()
        key = next(iter(self.pairs))
        changed = HexaryTrie(self.read, self.root, cache)
        self.assertEqual(changed.get(key), self.pairs[key])
        changed.put(key, b"new")
        changed.delete(list(self.pairs)[1])
        self.assertEqual(changed.get(key), b"new")
        other = HexaryTrie(self.read, self.root, cache)
        for old_key, value in self.pairs.items():
            self.assertEqual(other.get(old_key), value)
        self.assertNotEqual(changed.root_hash, self.root)

    def test_changes_through_the_cache_commit_alike(self) -> None:
        """
        Tries that change after loading their nodes through the cache (as
        copies) reach the root and commit the new nodes a trie without a
        cache does, again and again from the same stored root, and read
        each stored node once in all; the cache's nodes stay as stored.
        """
        generator = random.Random(3)
        keys = list(self.pairs)
        cache = NodeCache()
        for _ in range(4):
            changes = [(generator.choice(keys), generator.randbytes(generator.randint(0, 50))) for _ in range(30)]
            plain = HexaryTrie(self.nodes.get, self.root)
            cached = HexaryTrie(self.read, self.root, cache)
            for key, value in changes:
                plain.put(key, value)
                cached.put(key, value)
            self.assertEqual(cached.root_hash, plain.root_hash)
            self.assertEqual(cached.commit(), plain.commit())
        self.assertEqual(self.reads, len(cache))
        fresh = HexaryTrie(self.read, self.root, cache)
        for key, value in self.pairs.items():
            self.assertEqual(fresh.get(key), value)

    def test_bounded(self) -> None:
        """
        The cache keeps at most its size, forgetting the least recently used.
        """
        cache = NodeCache(size=5)
        trie = HexaryTrie(self.read, self.root, cache)
        for key in self.pairs:
            trie.get(key)
        self.assertEqual(len(cache), 5)

    def test_missing_node(self) -> None:
        """
        A node the store lacks raises L{MissingTrieNodeError} and is not kept.
        """
        cache = NodeCache()
        trie = HexaryTrie(lambda node_hash: None, self.root, cache)
        self.assertRaises(MissingTrieNodeError, trie.get, b"key")
        self.assertEqual(len(cache), 0)

    def test_secure_trie(self) -> None:
        """
        A secure trie reads through the cache at its hashed keys.
        """
        nodes, root = stored_trie(self.pairs, secure=True)
        cache = NodeCache()
        trie = SecureTrie(nodes.get, root, cache)
        for key, value in self.pairs.items():
            self.assertEqual(trie.get(key), value)
        self.assertTrue(len(cache))
