"""
Tests for L{nodex.chain.genesis}.
"""

import tomllib
from pathlib import Path
from typing import Any

from twisted.trial.unittest import SkipTest, SynchronousTestCase

import nodex
from nodex.chain.genesis import (
    GenesisAllocation,
    GenesisError,
    GenesisMismatchError,
    GenesisSpec,
    genesis_spec_from_mapping,
    initialize_chain,
    make_genesis,
)
from nodex.crypto import keccak256, private_key_to_address
from nodex.db.errors import WrongNetworkError
from nodex.db.kv import KeyValueStore
from nodex.db.memory import MemoryStore
from nodex.db.rocks import RocksStore
from nodex.db.schema import (
    SCHEMA_VERSION,
    read_block_bloom,
    read_body_rlp,
    read_canonical_hash,
    read_code,
    read_head_hash,
    read_header_rlp,
    read_network,
    read_receipts_rlp,
    read_schema_version,
    read_total_difficulty,
    trie_node_reader,
)
from nodex.primitives import ZERO_HASH32, Address
from nodex.structures.accounts import EMPTY_TRIE_ROOT, Account
from nodex.structures.bloom import EMPTY_BLOOM
from nodex.structures.headers import EMPTY_UNCLES_HASH
from nodex.structures.rlpcodec import encode_rlp, encode_uint
from nodex.trie import SecureTrie

PRESETS = Path(nodex.__file__).parent / "presets"
COW_SEEDS = ["cow"] + [f"cow{n}" for n in range(1, 10)]
COW_ADDRESSES = [
    "cd2a3d9f938e13cd947ec05abc7fe734df8dd826",
    "7986b3df570230288501eea3d890bd66948c9b79",
    "0a3aa774752ec2042c46548456c094a76c7f3a79",
    "cf7cdbbb5f7ba79d3ffe74a0bba13fc0295f6036",
    "39b12c05e8503356e3a7df0b7b33efa4c054c409",
    "c354d97642faa06781b76ffb6786f72cd7746c97",
    "debe71e1de41fc77c44df4b6db940026e31b0e71",
    "7857288e171c6159c5576d1bd9ac40c0c48a771c",
    "a4dea4d5c954f5fd9e87f0e9752911e83a3d18b3",
    "09a1eda29f664ac8f68106f6567276df0c65d859",
]


def regtest_mapping() -> dict[str, Any]:
    """
    The C{[genesis]} table of the regtest preset, as TOML parses it
    (reference §13.4: the ten cow accounts with 10**30 wei each).
    """
    return {
        "timestamp": 0,
        "extra_data": "0x686f727365",
        "gas_limit": 30000000,
        "difficulty": 1,
        "coinbase": "0x3333333333333333333333333333333333333333",
        "minimum_gas_price": 0,
        "alloc": {"0x" + address: {"balance": str(10**30)} for address in COW_ADDRESSES},
    }


def storage_mapping() -> dict[str, Any]:
    """
    A genesis table with a contract (nonce, code, storage) and a plain account.
    """
    mapping = regtest_mapping()
    mapping["alloc"] = {
        "0x" + "11" * 20: {
            "balance": "5",
            "nonce": 3,
            "code": "0x6000",
            "storage": {"0x01": "0x02", "0x" + "ff" * 32: "0x1234"},
        },
        "0x" + "22" * 20: {"balance": "7"},
    }
    return mapping


class GenesisSpecFromMappingTests(SynchronousTestCase):
    """
    Tests for L{genesis_spec_from_mapping}.
    """

    def test_regtest_table(self) -> None:
        """
        The regtest table gives the reference's values and the ten funded accounts.
        """
        spec = genesis_spec_from_mapping(regtest_mapping())
        self.assertEqual(spec.extra_data, b"horse")
        self.assertEqual(spec.coinbase, b"\x33" * 20)
        values = (spec.timestamp, spec.gas_limit, spec.difficulty, spec.minimum_gas_price)
        self.assertEqual(values, (0, 30000000, 1, 0))
        self.assertEqual(len(spec.alloc), 10)
        self.assertEqual(spec.alloc[Address(bytes.fromhex(COW_ADDRESSES[0]))], GenesisAllocation(10**30))

    def test_full_account(self) -> None:
        """
        Nonce, code and storage are read; slots are padded to 32 bytes and
        zero values dropped.
        """
        mapping = storage_mapping()
        mapping["alloc"]["0x" + "11" * 20]["storage"]["0x03"] = "0x00"
        spec = genesis_spec_from_mapping(mapping)
        account = spec.alloc[Address(b"\x11" * 20)]
        self.assertEqual(account.nonce, 3)
        self.assertEqual(account.code, b"\x60\x00")
        self.assertEqual(account.storage, {b"\x00" * 31 + b"\x01": 2, b"\xff" * 32: 0x1234})

    def test_alloc_optional(self) -> None:
        """
        A genesis without an alloc table allocates nothing.
        """
        mapping = regtest_mapping()
        del mapping["alloc"]
        self.assertEqual(genesis_spec_from_mapping(mapping).alloc, {})

    def assertRefused(self, mapping: Any, fragment: str) -> None:
        """
        Assert that C{mapping} raises L{GenesisError} with C{fragment} in its message.
        """
        with self.assertRaises(GenesisError) as caught:
            genesis_spec_from_mapping(mapping)
        self.assertIn(fragment, str(caught.exception))

    def test_missing_and_unknown_keys(self) -> None:
        """
        A missing required key or an unknown key is named in the error.
        """
        mapping = regtest_mapping()
        del mapping["gas_limit"]
        self.assertRefused(mapping, "missing key genesis.gas_limit")
        mapping = regtest_mapping()
        mapping["nonce"] = 1
        self.assertRefused(mapping, "unknown key genesis.nonce")
        mapping = storage_mapping()
        mapping["alloc"]["0x" + "22" * 20]["wei"] = "1"
        self.assertRefused(mapping, f"unknown key genesis.alloc.0x{'22' * 20}.wei")
        self.assertRefused([], "must be a table")

    def test_bad_values(self) -> None:
        """
        Wrong types, bad hex, wrong lengths and out-of-range values are refused
        with the key's name.
        """
        cases = [
            ("extra_data", "horse", "genesis.extra_data must be a 0x-prefixed hex string"),
            ("extra_data", "0x" + "00" * 33, "at most 32 allowed"),
            ("extra_data", "0xzz", "not valid hex"),
            ("coinbase", "0x33", "genesis.coinbase must be a 20-byte address"),
            ("gas_limit", "30000000", "genesis.gas_limit must be an integer"),
            ("gas_limit", True, "genesis.gas_limit must be an integer"),
            ("timestamp", -1, "genesis.timestamp must be between 0"),
            ("difficulty", 0, "at least 1"),
            ("alloc", [], "genesis.alloc must be a table"),
        ]
        for key, value, fragment in cases:
            mapping = regtest_mapping()
            mapping[key] = value
            self.assertRefused(mapping, fragment)

    def test_bad_accounts(self) -> None:
        """
        Malformed addresses, balances, nonces, code and storage are refused.
        """
        address = "0x" + "22" * 20
        cases = [
            ({"0x22": {"balance": "1"}}, "must be a 20-byte address"),
            ({address: {"balance": "0x10"}}, "balance must be a decimal string"),
            ({address: {"balance": "-1"}}, "balance must be a decimal string"),
            ({address: {"balance": str(2**256)}}, "balance must be between 0"),
            ({address: {}}, "missing key genesis.alloc.0x2222222222222222222222222222222222222222.balance"),
            ({address: "1000"}, "must be a table"),
            ({address: {"balance": "1", "nonce": "1"}}, "nonce must be an integer"),
            ({address: {"balance": "1", "code": "6000"}}, "code must be a 0x-prefixed hex string"),
            ({address: {"balance": "1", "storage": {"0x01": "0x" + "00" * 33}}}, "longer than 32 bytes"),
            ({address: {"balance": "1", "storage": []}}, "storage must be a table"),
            ({"0x" + "aa" * 20: {"balance": "1"}, "0x" + "AA" * 20: {"balance": "2"}}, "twice"),
        ]
        for alloc, fragment in cases:
            mapping = regtest_mapping()
            mapping["alloc"] = alloc
            self.assertRefused(mapping, fragment)


class MakeGenesisTests(SynchronousTestCase):
    """
    Tests for L{make_genesis}.
    """

    def test_header(self) -> None:
        """
        The genesis header has number 0, a zero parent, empty uncles,
        transaction and receipt roots, a zero bloom, no merged-mining data,
        and the spec's values.
        """
        header, _, _ = make_genesis(genesis_spec_from_mapping(regtest_mapping()))
        self.assertEqual(header.number, 0)
        self.assertEqual(header.parent_hash, ZERO_HASH32)
        self.assertEqual(header.uncles_hash, EMPTY_UNCLES_HASH)
        self.assertEqual((header.transactions_root, header.receipts_root), (EMPTY_TRIE_ROOT, EMPTY_TRIE_ROOT))
        self.assertEqual(header.logs_bloom, EMPTY_BLOOM)
        self.assertEqual((header.gas_used, header.paid_fees, header.uncle_count), (0, 0, 0))
        self.assertEqual(
            (header.bitcoin_merged_mining_header, header.bitcoin_merged_mining_merkle_proof,
             header.bitcoin_merged_mining_coinbase_transaction),
            (b"", b"", b""),
        )
        self.assertEqual((header.extra_data, header.gas_limit, header.difficulty), (b"horse", 30000000, 1))
        self.assertEqual(header.coinbase, b"\x33" * 20)

    def test_cow_accounts_funded(self) -> None:
        """
        Each account whose key is Keccak-256 of cow, cow1 ... cow9 holds 10**30
        wei in the state trie of the genesis, read back through the nodes
        that L{make_genesis} returns.
        """
        header, nodes, code = make_genesis(genesis_spec_from_mapping(regtest_mapping()))
        state = SecureTrie(nodes.get, header.state_root)
        for seed, address in zip(COW_SEEDS, COW_ADDRESSES):
            derived = private_key_to_address(keccak256(seed.encode()))
            self.assertEqual(derived.hex(), address)
            raw = state.get(derived)
            assert raw is not None
            self.assertEqual(Account.decode(raw), Account(balance=10**30))
        self.assertEqual(code, {})

    def test_state_root_known_answer(self) -> None:
        """
        The state root of an allocation with code and storage is the one that
        an independent implementation (py-trie) computes for the same accounts.
        """
        header, _, _ = make_genesis(genesis_spec_from_mapping(storage_mapping()))
        self.assertEqual(
            header.state_root.hex(), "a9b9530e9c09db89133846ce89948f3d60ff73e7d55699feda0e8cd5e05525bc"
        )

    def test_storage_and_code(self) -> None:
        """
        A contract's storage trie and code are among the returned nodes and code.
        """
        header, nodes, code = make_genesis(genesis_spec_from_mapping(storage_mapping()))
        account = Account.decode(SecureTrie(nodes.get, header.state_root).get(b"\x11" * 20) or b"")
        self.assertEqual((account.nonce, account.balance), (3, 5))
        self.assertEqual(code, {keccak256(b"\x60\x00"): b"\x60\x00"})
        self.assertEqual(account.code_hash, keccak256(b"\x60\x00"))
        storage = SecureTrie(nodes.get, account.storage_root)
        self.assertEqual(storage.get(b"\x00" * 31 + b"\x01"), encode_rlp(encode_uint(2)))
        self.assertEqual(storage.get(b"\xff" * 32), encode_rlp(encode_uint(0x1234)))
        plain = Account.decode(SecureTrie(nodes.get, header.state_root).get(b"\x22" * 20) or b"")
        self.assertEqual(plain, Account(balance=7))

    def test_empty_alloc(self) -> None:
        """
        Without accounts the state root is the empty trie's.
        """
        spec = GenesisSpec(0, b"", 1, 1, Address(b"\x00" * 20), 0)
        header, nodes, code = make_genesis(spec)
        self.assertEqual(header.state_root, EMPTY_TRIE_ROOT)
        self.assertEqual((nodes, code), ({}, {}))

    def test_deterministic(self) -> None:
        """
        The same spec always gives the same genesis hash; another spec another hash.
        """
        first, _, _ = make_genesis(genesis_spec_from_mapping(regtest_mapping()))
        second, _, _ = make_genesis(genesis_spec_from_mapping(regtest_mapping()))
        self.assertEqual(first.hash, second.hash)
        other = regtest_mapping()
        other["timestamp"] = 1
        self.assertNotEqual(make_genesis(genesis_spec_from_mapping(other))[0].hash, first.hash)


class InitializeChainMixin:
    """
    Tests for L{initialize_chain}, run against each store implementation.
    """

    def open_store(self) -> KeyValueStore:
        """
        Open the store under test; the same one again after L{close_store}.
        """
        raise NotImplementedError()

    def close_store(self, store: KeyValueStore) -> None:
        """
        Close C{store} so that L{open_store} can reopen it.
        """
        raise NotImplementedError()

    def test_first_start_writes_genesis(self: Any) -> None:
        """
        On an empty store the genesis header, body, receipts, total
        difficulty, canonical entry, head, bloom, network name, state and
        code are all written.
        """
        store = self.open_store()
        spec = genesis_spec_from_mapping(storage_mapping())
        header = initialize_chain(store, "regtest", spec)
        block_hash = header.hash
        self.assertEqual(header, make_genesis(spec)[0])
        self.assertEqual(read_header_rlp(store, block_hash), header.encode())
        self.assertEqual(read_body_rlp(store, block_hash), encode_rlp([[], []]))
        self.assertEqual(read_receipts_rlp(store, block_hash), encode_rlp([]))
        self.assertEqual(read_total_difficulty(store, block_hash), 1)
        self.assertEqual(read_canonical_hash(store, 0), block_hash)
        self.assertEqual(read_head_hash(store), block_hash)
        self.assertEqual(read_block_bloom(store, 0), EMPTY_BLOOM)
        self.assertEqual(read_network(store), "regtest")
        self.assertEqual(read_schema_version(store), SCHEMA_VERSION)
        self.assertEqual(read_code(store, keccak256(b"\x60\x00")), b"\x60\x00")
        state = SecureTrie(trie_node_reader(store), header.state_root)
        self.assertEqual(Account.decode(state.get(b"\x22" * 20) or b""), Account(balance=7))
        self.close_store(store)

    def test_cow_balances_in_store(self: Any) -> None:
        """
        After the first start the ten regtest accounts hold 10**30 wei each in
        the stored state.
        """
        store = self.open_store()
        header = initialize_chain(store, "regtest", genesis_spec_from_mapping(regtest_mapping()))
        state = SecureTrie(trie_node_reader(store), header.state_root)
        for seed in COW_SEEDS:
            raw = state.get(private_key_to_address(keccak256(seed.encode())))
            self.assertEqual(Account.decode(raw or b"").balance, 10**30)
        self.close_store(store)

    def test_restart_reopens_genesis(self: Any) -> None:
        """
        A second start on the same store writes nothing new and returns the
        same genesis header.
        """
        spec = genesis_spec_from_mapping(regtest_mapping())
        store = self.open_store()
        first = initialize_chain(store, "regtest", spec)
        self.close_store(store)
        store = self.open_store()
        second = initialize_chain(store, "regtest", spec)
        self.assertEqual(second.hash, first.hash)
        self.assertEqual(second, first)
        self.close_store(store)

    def test_other_network_refused(self: Any) -> None:
        """
        A data directory of another network is refused, naming both networks.
        """
        store = self.open_store()
        initialize_chain(store, "regtest", genesis_spec_from_mapping(regtest_mapping()))
        with self.assertRaises(WrongNetworkError) as caught:
            initialize_chain(store, "testnet", genesis_spec_from_mapping(regtest_mapping()))
        self.assertIn("'regtest'", str(caught.exception))
        self.assertIn("'testnet'", str(caught.exception))
        self.close_store(store)

    def test_other_genesis_refused(self: Any) -> None:
        """
        A chain of the same network that starts from another genesis is
        refused, naming both genesis hashes.
        """
        store = self.open_store()
        first = initialize_chain(store, "regtest", genesis_spec_from_mapping(regtest_mapping()))
        changed = regtest_mapping()
        changed["timestamp"] = 5
        with self.assertRaises(GenesisMismatchError) as caught:
            initialize_chain(store, "regtest", genesis_spec_from_mapping(changed))
        self.assertIn(first.hash.hex(), str(caught.exception))
        self.close_store(store)


class MemoryStoreInitializeChainTests(InitializeChainMixin, SynchronousTestCase):
    """
    L{initialize_chain} over L{MemoryStore}.
    """

    def setUp(self) -> None:
        """
        One memory store for the whole test, kept across "restarts".
        """
        self.store = MemoryStore()

    def open_store(self) -> KeyValueStore:
        """
        The test's memory store.
        """
        return self.store

    def close_store(self, store: KeyValueStore) -> None:
        """
        A memory store stays as it is between starts.
        """


class RocksStoreInitializeChainTests(InitializeChainMixin, SynchronousTestCase):
    """
    L{initialize_chain} over L{RocksStore} in a temporary directory.
    """

    def setUp(self) -> None:
        """
        A fresh data directory for the test.
        """
        self.path = self.mktemp()

    def open_store(self) -> KeyValueStore:
        """
        Open the test's data directory.
        """
        store = RocksStore.open(self.path)
        self.addCleanup(store.close)
        return store

    def close_store(self, store: KeyValueStore) -> None:
        """
        Close the database, as a node does when it stops.
        """
        store.close()


class PresetGenesisTests(SynchronousTestCase):
    """
    The C{[genesis]} tables of the shipped network presets.
    """

    def test_every_preset_parses(self) -> None:
        """
        Each preset's genesis table is a valid specification.
        """
        presets = sorted(PRESETS.glob("*.toml"))
        if not presets:
            raise SkipTest(f"no network presets in {PRESETS}")
        for preset in presets:
            with preset.open("rb") as handle:
                make_genesis(genesis_spec_from_mapping(tomllib.load(handle)["genesis"]))

    def test_regtest_preset_funds_cow_accounts(self) -> None:
        """
        The regtest preset funds the ten cow accounts with 10**30 wei each.
        """
        path = PRESETS / "regtest.toml"
        if not path.exists():
            raise SkipTest(f"no regtest preset at {path}")
        with path.open("rb") as handle:
            spec = genesis_spec_from_mapping(tomllib.load(handle)["genesis"])
        for seed in COW_SEEDS:
            self.assertEqual(spec.alloc[private_key_to_address(keccak256(seed.encode()))].balance, 10**30)
