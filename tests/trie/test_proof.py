"""
Tests for L{nodex.trie.proof}.
"""

import random

from twisted.trial.unittest import SynchronousTestCase

from nodex.crypto import keccak256
from nodex.trie import BLANK_ROOT, BadProofError, HexaryTrie, SecureTrie, make_proof, verify_proof


def _filled_trie(
    trie_class: type[HexaryTrie], count: int, seed: int
) -> tuple[HexaryTrie, dict[bytes, bytes]]:
    """
    A trie holding C{count} random 20-byte keys, and its contents.
    """
    rng = random.Random(seed)
    pairs = {rng.randbytes(20): rng.randbytes(rng.randrange(1, 70)) for _ in range(count)}
    trie = trie_class({}.get)
    for key, value in pairs.items():
        trie.put(key, value)
    return trie, pairs


class ProofTests(SynchronousTestCase):
    """
    Tests for L{make_proof} and L{verify_proof}.
    """

    def test_present_keys(self) -> None:
        """
        The proof of a stored key starts with the root node and proves its value.
        """
        trie, pairs = _filled_trie(HexaryTrie, 500, 1)
        root = trie.root_hash
        for key, value in list(pairs.items())[:50]:
            proof = make_proof(trie, key)
            self.assertEqual(keccak256(proof[0]), root)
            self.assertEqual(verify_proof(root, key, proof), value)

    def test_absent_keys(self) -> None:
        """
        The proof of an absent key proves its absence.
        """
        trie, _ = _filled_trie(HexaryTrie, 500, 2)
        rng = random.Random(3)
        for _ in range(50):
            key = rng.randbytes(20)
            self.assertIsNone(verify_proof(trie.root_hash, key, make_proof(trie, key)))

    def test_small_trie_with_embedded_nodes(self) -> None:
        """
        Proofs work through nodes embedded in their parents.
        """
        trie = HexaryTrie({}.get)
        for key in [b"a", b"ab", b"abc", b"b"]:
            trie.put(key, key)
        for key in [b"a", b"ab", b"abc", b"b", b"c", b"abd"]:
            expected = key if key in (b"a", b"ab", b"abc", b"b") else None
            self.assertEqual(verify_proof(trie.root_hash, key, make_proof(trie, key)), expected)

    def test_secure_trie(self) -> None:
        """
        A secure trie's proof verifies with C{secure=True} and the original
        key, or with the hashed key.
        """
        trie, pairs = _filled_trie(SecureTrie, 200, 4)
        key, value = next(iter(pairs.items()))
        proof = make_proof(trie, key)
        self.assertEqual(verify_proof(trie.root_hash, key, proof, secure=True), value)
        self.assertEqual(verify_proof(trie.root_hash, keccak256(key), proof), value)

    def test_blank_trie(self) -> None:
        """
        In the empty trie every key is absent, with an empty proof.
        """
        trie = HexaryTrie({}.get)
        self.assertEqual(make_proof(trie, b"k"), [])
        self.assertIsNone(verify_proof(BLANK_ROOT, b"k", []))

    def test_tampered_proof(self) -> None:
        """
        Changing one byte of any node, or dropping a node, makes the proof
        fail with L{BadProofError}.
        """
        trie, pairs = _filled_trie(HexaryTrie, 500, 5)
        key = next(iter(pairs))
        proof = make_proof(trie, key)
        for index in range(len(proof)):
            tampered = list(proof)
            node = bytearray(tampered[index])
            node[-1] ^= 1
            tampered[index] = bytes(node)
            self.assertRaises(BadProofError, verify_proof, trie.root_hash, key, tampered)
            self.assertRaises(
                BadProofError, verify_proof, trie.root_hash, key, proof[:index] + proof[index + 1 :]
            )

    def test_garbage_proof(self) -> None:
        """
        A proof whose root node is not a trie node raises L{BadProofError}.
        """
        garbage = b"\xc3\x80\x80\x80"
        self.assertRaises(BadProofError, verify_proof, keccak256(garbage), b"k", [garbage])
        self.assertRaises(BadProofError, verify_proof, keccak256(b"\xff"), b"k", [b"\xff"])
