"""
Tests for L{nodex.trie.secure}.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.crypto import keccak256
from nodex.trie import HexaryTrie, SecureTrie, TrieError, secure


class SecureTrieTests(SynchronousTestCase):
    """
    Tests for L{SecureTrie}.
    """

    def test_keys_are_hashed(self) -> None:
        """
        A secure trie holds each value at Keccak-256 of its key: its root is
        that of a plain trie keyed by the hashes.
        """
        secure = SecureTrie({}.get)
        plain = HexaryTrie({}.get)
        for key in [b"alpha", b"beta", b"\x00" * 20]:
            secure.put(key, key * 3)
            plain.put(keccak256(key), key * 3)
        self.assertEqual(secure.root_hash, plain.root_hash)
        self.assertEqual(secure.get(b"beta"), b"beta" * 3)
        self.assertEqual(sorted(key for key, _ in secure.items()), sorted(key for key, _ in plain.items()))

    def test_bad_key(self) -> None:
        """
        A key that is not C{bytes} raises L{TrieError}.
        """
        self.assertRaises(TrieError, SecureTrie({}.get).get, "text")

    def test_delete(self) -> None:
        """
        Deleting by the original key removes the value.
        """
        secure = SecureTrie({}.get)
        secure.put(b"k", b"v")
        secure.delete(b"k")
        self.assertIsNone(secure.get(b"k"))
        self.assertEqual(secure.commit(), {})

    def test_kept_paths_bounded(self) -> None:
        """
        The hashed paths of keys seen before are kept for any trie, at most
        L{secure.PATHS_KEPT} (all dropped when full); the roots are those of
        a plain trie keyed by the hashes whether a path was kept or not.
        """
        secure.PATHS_KEPT, kept = 4, secure.PATHS_KEPT
        self.addCleanup(setattr, secure, "PATHS_KEPT", kept)
        secure._kept_paths.clear()
        keys = [bytes([index]) * 20 for index in range(10)]
        for _ in range(2):
            hashed, plain = SecureTrie({}.get), HexaryTrie({}.get)
            for key in keys:
                hashed.put(key, key)
                plain.put(keccak256(key), key)
                self.assertLessEqual(len(secure._kept_paths), 4)
            self.assertEqual(hashed.root_hash, plain.root_hash)
            self.assertEqual(hashed.get(keys[-1]), keys[-1])
        self.assertIn(keys[-1], secure._kept_paths)
