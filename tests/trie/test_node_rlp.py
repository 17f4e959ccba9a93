"""
Tests for L{nodex.trie.node_rlp}, against pyrlp and the RLPTests vectors.
"""

import random
from typing import Any

import rlp
from twisted.trial.unittest import SynchronousTestCase

from nodex.trie.errors import MalformedNodeError
from nodex.trie.node_rlp import RLPItem, decode, encode, encode_bytes, encode_list_payload
from tests.conformance import load_fixture


def _random_item(rng: random.Random, depth: int) -> RLPItem:
    """
    A random nested list of byte strings, of every length class.
    """
    if depth == 0 or rng.random() < 0.5:
        length = rng.choice([0, 1, 1, 2, 31, 32, 55, 56, 57, 300, 1100])
        return bytes(rng.randrange(256) for _ in range(length))
    return [_random_item(rng, depth - 1) for _ in range(rng.randrange(0, 5 if depth > 1 else 18))]


def _fixture_input(value: Any) -> RLPItem:
    """
    Turn an RLPTests C{in} value (string, integer, C{#bigint} or list) into bytes and lists.
    """
    if isinstance(value, list):
        return [_fixture_input(item) for item in value]
    if isinstance(value, int):
        return value.to_bytes((value.bit_length() + 7) // 8, "big")
    if value.startswith("#"):
        number = int(value[1:])
        return number.to_bytes((number.bit_length() + 7) // 8, "big")
    return value.encode("utf-8")


class NodeRLPTests(SynchronousTestCase):
    """
    Tests for the trie's own RLP codec.
    """

    def test_matches_pyrlp(self) -> None:
        """
        Random nested items encode exactly as pyrlp encodes them and decode
        back to themselves.
        """
        rng = random.Random(7)
        for _ in range(300):
            item = _random_item(rng, 3)
            encoded = encode(item)
            self.assertEqual(encoded, rlp.encode(item))
            self.assertEqual(decode(encoded), item)
        long_string = b"x" * 70000
        self.assertEqual(encode([long_string]), rlp.encode([long_string]))
        self.assertEqual(decode(encode([long_string])), [long_string])

    def test_list_payload(self) -> None:
        """
        L{encode_list_payload} of concatenated encodings equals encoding the list.
        """
        items = [b"dog", b"", b"\x01" * 60]
        payload = b"".join(encode_bytes(item) for item in items)
        self.assertEqual(encode_list_payload(payload), encode(items))

    def test_rlptests_vectors(self) -> None:
        """
        Every valid vector of RLPTests/rlptest.json encodes to its C{out} and decodes back.
        """
        vectors = load_fixture("RLPTests", "rlptest.json")
        for name, vector in vectors.items():
            item = _fixture_input(vector["in"])
            expected = bytes.fromhex(vector["out"][2:])
            self.assertEqual(encode(item), expected, name)
            self.assertEqual(decode(expected), item, name)

    def test_invalid_vectors_rejected(self) -> None:
        """
        Every vector of RLPTests/invalidRLPTest.json fails to decode with L{MalformedNodeError}.
        """
        vectors = load_fixture("RLPTests", "invalidRLPTest.json")
        for name, vector in vectors.items():
            data = bytes.fromhex(vector["out"].removeprefix("0x"))
            self.assertRaises(MalformedNodeError, decode, data)

    def test_non_canonical_rejected(self) -> None:
        """
        Non-canonical encodings (prefixed single byte, long form for a short
        string, trailing bytes, truncation) are refused.
        """
        for data in [b"\x81\x05", b"\xb8\x03abc", b"\x83dog!", b"\x83do", b"", b"\xc2\x83a"]:
            self.assertRaises(MalformedNodeError, decode, data)

    def test_encode_rejects_other_types(self) -> None:
        """
        Encoding something that is not bytes or a list raises L{MalformedNodeError}.
        """
        self.assertRaises(MalformedNodeError, encode, [b"a", 5])  # type: ignore[list-item]
