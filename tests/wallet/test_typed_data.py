"""
Tests for L{nodex.wallet.typed_data}: EIP-712 hashing, checked against
eth-account's implementation and the EIP's own example.
"""

import copy
from typing import Any

from twisted.trial.unittest import SkipTest, SynchronousTestCase

from nodex.crypto import keccak256
from nodex.wallet.errors import TypedDataError
from nodex.wallet.typed_data import MAX_DEPTH, encode_type, parse_types, typed_data_hash

try:
    from eth_account.messages import _hash_eip191_message, encode_typed_data
except ImportError:  # pragma: no cover - the test extra is missing
    encode_typed_data = None

DOMAIN_TYPE = [
    {"name": "name", "type": "string"},
    {"name": "version", "type": "string"},
    {"name": "chainId", "type": "uint256"},
    {"name": "verifyingContract", "type": "address"},
]

MAIL: dict[str, Any] = {
    "types": {
        "EIP712Domain": DOMAIN_TYPE,
        "Person": [{"name": "name", "type": "string"}, {"name": "wallet", "type": "address"}],
        "Mail": [
            {"name": "from", "type": "Person"},
            {"name": "to", "type": "Person"},
            {"name": "contents", "type": "string"},
        ],
    },
    "primaryType": "Mail",
    "domain": {
        "name": "Ether Mail",
        "version": "1",
        "chainId": 1,
        "verifyingContract": "0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC",
    },
    "message": {
        "from": {"name": "Cow", "wallet": "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826"},
        "to": {"name": "Bob", "wallet": "0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB"},
        "contents": "Hello, Bob!",
    },
}
"""The example of EIP-712 (its test vector)."""

EVERYTHING: dict[str, Any] = {
    "types": {
        "EIP712Domain": [{"name": "name", "type": "string"}, {"name": "salt", "type": "bytes32"}],
        "Group": [
            {"name": "owner", "type": "Person"},
            {"name": "members", "type": "Person[]"},
            {"name": "grid", "type": "int16[2][]"},
            {"name": "tags", "type": "string[3]"},
            {"name": "blob", "type": "bytes"},
            {"name": "word", "type": "bytes4"},
            {"name": "flag", "type": "bool"},
            {"name": "big", "type": "uint256"},
            {"name": "small", "type": "int8"},
        ],
        "Person": [{"name": "name", "type": "string"}, {"name": "wallets", "type": "address[]"}],
    },
    "primaryType": "Group",
    "domain": {"name": "all types", "salt": "0x" + "ab" * 32},
    "message": {
        "owner": {"name": "Cow", "wallets": ["0xcd2a3d9f938e13cd947ec05abc7fe734df8dd826"]},
        "members": [
            {"name": "A", "wallets": []},
            {"name": "B", "wallets": ["0x7986b3df570230288501eea3d890bd66948c9b79", "0x0a3aa774752ec2042c46548456c094a76c7f3a79"]},
        ],
        "grid": [[1, -2], [-32768, 32767]],
        "tags": ["x", "", "ü"],
        "blob": "0x00ff10",
        "word": "0xdeadbeef",
        "flag": True,
        "big": "115792089237316195423570985008687907853269984665640564039457584007913129639935",
        "small": "-128",
    },
}
"""Every kind of member: nested structs, arrays of structs, multi-dimensional arrays, bytes, signed integers."""


class TypedDataTests(SynchronousTestCase):
    """
    Tests for L{typed_data_hash}.
    """

    def reference(self, data: dict[str, Any]) -> bytes:
        """
        eth-account's digest of the same data.
        """
        if encode_typed_data is None:
            raise SkipTest("eth-account (the test extra) is not installed")
        return bytes(_hash_eip191_message(encode_typed_data(full_message=copy.deepcopy(data))))

    def test_eip_example(self) -> None:
        """
        The EIP's Mail example: its encodeType and the digest eth-account computes.
        """
        types = parse_types(MAIL["types"], MAIL["domain"])
        self.assertEqual(encode_type(types, "Mail"), "Mail(Person from,Person to,string contents)Person(string name,address wallet)")
        self.assertEqual(typed_data_hash(MAIL), self.reference(MAIL))

    def test_every_type(self) -> None:
        """
        Arrays, nested structs, dynamic and fixed bytes, signed and unsigned integers hash as eth-account does.
        """
        self.assertEqual(typed_data_hash(EVERYTHING), self.reference(EVERYTHING))

    def test_hex_integers(self) -> None:
        """
        Integers may be numbers, decimal strings or hex strings, to the same digest.
        """
        variant = copy.deepcopy(MAIL)
        variant["domain"]["chainId"] = "0x1"
        self.assertEqual(typed_data_hash(variant), typed_data_hash(MAIL))
        variant["domain"]["chainId"] = "1"
        self.assertEqual(typed_data_hash(variant), typed_data_hash(MAIL))

    def test_domain_type_inferred(self) -> None:
        """
        Without an EIP712Domain entry the domain type is made of its members present, in the standard order.
        """
        variant = copy.deepcopy(MAIL)
        del variant["types"]["EIP712Domain"]
        self.assertEqual(typed_data_hash(variant), typed_data_hash(MAIL))

    def test_primary_domain(self) -> None:
        """
        primaryType EIP712Domain signs the domain separator alone.
        """
        if encode_typed_data is None:
            raise SkipTest("eth-account (the test extra) is not installed")
        variant = copy.deepcopy(MAIL)
        variant["primaryType"] = "EIP712Domain"
        separator = bytes(encode_typed_data(full_message=copy.deepcopy(MAIL)).header)
        self.assertEqual(typed_data_hash(variant), keccak256(b"\x19\x01" + separator))

    def test_malformed(self) -> None:
        """
        Each malformation is refused with a message naming where.
        """
        cases = {
            "typed data must be an object": lambda data: "not an object",
            "types must be an object": lambda data: data.update(types=[]),
            "primaryType": lambda data: data.update(primaryType="Nobody"),
            "message.to: missing": lambda data: data["message"].pop("to"),
            "unknown type 'Persona'": lambda data: data["types"]["Mail"].append({"name": "x", "type": "Persona"}),
            "unknown type 'uint7'": lambda data: data["types"]["Mail"].append({"name": "x", "type": "uint7"}),
            "unknown type 'bytes33'": lambda data: data["types"]["Mail"].append({"name": "x", "type": "bytes33"}),
            "message.from.wallet: an address must be 20 bytes": lambda data: data["message"]["from"].update(wallet="0x1234"),
            "message.contents: must be a string": lambda data: data["message"].update(contents=5),
            "domain.chainId: must be an integer": lambda data: data["domain"].update(chainId="one"),
            "domain must be an object": lambda data: data.update(domain=None),
            "two members named": lambda data: data["types"]["Person"].append({"name": "name", "type": "string"}),
        }
        for expected, change in cases.items():
            data = copy.deepcopy(MAIL)
            result = change(data)
            if isinstance(result, str):
                data = result
            exc = self.assertRaises(TypedDataError, typed_data_hash, data)
            self.assertIn(expected, str(exc))

    def test_ranges(self) -> None:
        """
        Values outside their integer type, bytesN too long, booleans as numbers are refused.
        """
        for member, value in (("small", 128), ("small", "-129"), ("big", -1), ("word", "0x0102030405"), ("flag", 1), ("big", True)):
            data = copy.deepcopy(EVERYTHING)
            data["message"][member] = value
            self.assertRaises(TypedDataError, typed_data_hash, data)
        data = copy.deepcopy(EVERYTHING)
        data["message"]["tags"] = ["only one"]
        self.assertIn("must have 3 elements", str(self.assertRaises(TypedDataError, typed_data_hash, data)))

    def test_hostile_depth(self) -> None:
        """
        A self-referring type with deeply nested values stops at the depth limit instead of the stack.
        """
        node: dict[str, Any] = {"next": []}
        message = node
        for _ in range(MAX_DEPTH * 4):
            child: dict[str, Any] = {"next": []}
            node["next"].append(child)
            node = child
        data = {
            "types": {"EIP712Domain": [], "Node": [{"name": "next", "type": "Node[]"}]},
            "primaryType": "Node",
            "domain": {},
            "message": message,
        }
        self.assertIn("nested deeper", str(self.assertRaises(TypedDataError, typed_data_hash, data)))
