"""
The genesis block: its specification (the C{[genesis]} table of a network
preset), the header and state it produces, and the first start of a data
directory.

L{initialize_chain} writes the genesis into an empty store in one batch, or
checks that a store's chain is this network's and starts from this genesis.

The genesis header has number 0, a zero parent hash, the uncles hash of the
empty list, the empty trie root for transactions and receipts, a zero bloom
and empty merged-mining fields; its state root is that of the allocated
accounts, each with its storage trie and code.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from nodex.chain.errors import GenesisError, GenesisMismatchError
from nodex.crypto import keccak256
from nodex.db.kv import KeyValueStore
from nodex.db.schema import (
    METADATA,
    SCHEMA_VERSION,
    SCHEMA_VERSION_KEY,
    check_network,
    ensure_schema_version,
    read_canonical_hash,
    read_header_rlp,
    write_block_bloom,
    write_body_rlp,
    write_canonical_hash,
    write_code,
    write_head_hash,
    write_header_rlp,
    write_network,
    write_receipts_rlp,
    write_total_difficulty,
    write_trie_nodes,
)
from nodex.primitives import UINT64_CEILING, UINT256_CEILING, ZERO_HASH32, Address, Hash32
from nodex.structures.accounts import EMPTY_TRIE_ROOT, Account
from nodex.structures.blocks import encode_body
from nodex.structures.bloom import EMPTY_BLOOM
from nodex.structures.headers import EMPTY_UNCLES_HASH, MAX_EXTRA_DATA, Header
from nodex.structures.receipts import encode_receipts
from nodex.structures.rlpcodec import encode_rlp, encode_uint
from nodex.trie import SecureTrie


class GenesisAllocation(NamedTuple):
    """
    What one genesis account starts with.

    @ivar storage: 32-byte slots to non-zero values.
    """

    balance: int
    nonce: int = 0
    code: bytes = b""
    storage: Mapping[bytes, int] = {}


@dataclass(frozen=True)
class GenesisSpec:
    """
    Everything that decides a network's genesis block.
    """

    timestamp: int
    extra_data: bytes
    gas_limit: int
    difficulty: int
    coinbase: Address
    minimum_gas_price: int
    alloc: Mapping[Address, GenesisAllocation] = field(default_factory=dict)


_SPEC_KEYS = {"timestamp", "extra_data", "gas_limit", "difficulty", "coinbase", "minimum_gas_price", "alloc"}
_ACCOUNT_KEYS = {"balance", "nonce", "code", "storage"}


def genesis_spec_from_mapping(mapping: Mapping[str, Any]) -> GenesisSpec:
    """
    Read the C{[genesis]} table of a network preset (parsed TOML).

    Integers are TOML integers; C{extra_data}, C{coinbase}, addresses, code,
    storage slots and values are C{0x} hex strings; balances are decimal
    strings (TOML integers stop at 2**63).

    @raise GenesisError: a key is missing or unknown, or a value has the
        wrong type, form or range; the message names it.
    """
    if not isinstance(mapping, Mapping):
        raise GenesisError("the genesis section must be a table")
    _check_keys(mapping, _SPEC_KEYS, {"alloc"}, "genesis")
    extra_data = _hex_bytes(mapping["extra_data"], "genesis.extra_data")
    if len(extra_data) > MAX_EXTRA_DATA:
        raise GenesisError(
            f"genesis.extra_data is {len(extra_data)} bytes long, at most {MAX_EXTRA_DATA} allowed"
        )
    difficulty = _integer(mapping["difficulty"], "genesis.difficulty", UINT256_CEILING)
    if difficulty == 0:
        raise GenesisError("genesis.difficulty must be at least 1")
    alloc_table = mapping.get("alloc", {})
    if not isinstance(alloc_table, Mapping):
        raise GenesisError("genesis.alloc must be a table of address = { balance = ... }")
    alloc = {}
    for address_text, account in alloc_table.items():
        address = _address(address_text, f"genesis.alloc address {address_text!r}")
        if address in alloc:
            raise GenesisError(f"genesis.alloc lists {address_text} twice")
        alloc[address] = _allocation(account, f"genesis.alloc.{address_text}")
    return GenesisSpec(
        timestamp=_integer(mapping["timestamp"], "genesis.timestamp", UINT64_CEILING),
        extra_data=extra_data,
        gas_limit=_integer(mapping["gas_limit"], "genesis.gas_limit", UINT64_CEILING),
        difficulty=difficulty,
        coinbase=_address(mapping["coinbase"], "genesis.coinbase"),
        minimum_gas_price=_integer(
            mapping["minimum_gas_price"], "genesis.minimum_gas_price", UINT256_CEILING
        ),
        alloc=alloc,
    )


def _check_keys(table: Mapping[str, Any], allowed: set[str], optional: set[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise GenesisError(f"unknown key {where}.{unknown[0]}")
    missing = sorted(allowed - optional - set(table))
    if missing:
        raise GenesisError(f"missing key {where}.{missing[0]}")


def _integer(value: Any, what: str, ceiling: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise GenesisError(f"{what} must be an integer, got {value!r}")
    if not 0 <= value < ceiling:
        raise GenesisError(f"{what} must be between 0 and {ceiling - 1}, got {value}")
    return value


def _hex_bytes(value: Any, what: str) -> bytes:
    if not isinstance(value, str) or not value.startswith("0x"):
        raise GenesisError(f"{what} must be a 0x-prefixed hex string, got {value!r}")
    try:
        return bytes.fromhex(value[2:])
    except ValueError as exc:
        raise GenesisError(f"{what} is not valid hex: {value!r}") from exc


def _address(value: Any, what: str) -> Address:
    raw = _hex_bytes(value, what)
    if len(raw) != 20:
        raise GenesisError(f"{what} must be a 20-byte address, got {len(raw)} bytes")
    return Address(raw)


def _word(value: Any, what: str) -> bytes:
    raw = _hex_bytes(value, what)
    if len(raw) > 32:
        raise GenesisError(f"{what} is longer than 32 bytes")
    return raw.rjust(32, b"\x00")


def _balance(value: Any, what: str) -> int:
    if isinstance(value, str):
        if not value.isdecimal() or not value.isascii():
            raise GenesisError(f"{what} must be a decimal string of wei, got {value!r}")
        value = int(value)
    return _integer(value, what, UINT256_CEILING)


def _allocation(account: Any, where: str) -> GenesisAllocation:
    if not isinstance(account, Mapping):
        raise GenesisError(f"{where} must be a table such as {{ balance = \"1000\" }}")
    _check_keys(account, _ACCOUNT_KEYS, {"nonce", "code", "storage"}, where)
    storage_table = account.get("storage", {})
    if not isinstance(storage_table, Mapping):
        raise GenesisError(f"{where}.storage must be a table of \"0xslot\" = \"0xvalue\"")
    storage = {}
    for slot, value in storage_table.items():
        word = int.from_bytes(_word(value, f"{where}.storage value of {slot}"), "big")
        if word:
            storage[_word(slot, f"{where}.storage slot {slot!r}")] = word
    return GenesisAllocation(
        balance=_balance(account["balance"], f"{where}.balance"),
        nonce=_integer(account.get("nonce", 0), f"{where}.nonce", UINT64_CEILING),
        code=_hex_bytes(account.get("code", "0x"), f"{where}.code"),
        storage=storage,
    )


def _no_node(node_hash: bytes) -> None:
    """
    The node reader of a trie built from nothing: it never needs to read.
    """
    return None


def make_genesis(spec: GenesisSpec) -> tuple[Header, dict[bytes, bytes], dict[bytes, bytes]]:
    """
    Build the genesis header and the state it commits to.

    @return: the header, the new trie nodes (state and storage, hash to RLP)
        and the contract code (code hash to code), ready to be written.
    """
    nodes: dict[bytes, bytes] = {}
    code: dict[bytes, bytes] = {}
    state = SecureTrie(_no_node)
    for address, allocation in spec.alloc.items():
        storage_root = EMPTY_TRIE_ROOT
        if allocation.storage:
            storage = SecureTrie(_no_node)
            for slot, value in allocation.storage.items():
                storage.put(slot, encode_rlp(encode_uint(value)))
            storage_root = Hash32(storage.root_hash)
            nodes.update(storage.commit())
        code_hash = keccak256(allocation.code)
        if allocation.code:
            code[code_hash] = allocation.code
        account = Account(allocation.nonce, allocation.balance, storage_root, code_hash)
        state.put(address, account.encode())
    state_root = Hash32(state.root_hash)
    nodes.update(state.commit())
    header = Header(
        parent_hash=ZERO_HASH32,
        uncles_hash=EMPTY_UNCLES_HASH,
        coinbase=spec.coinbase,
        state_root=state_root,
        transactions_root=EMPTY_TRIE_ROOT,
        receipts_root=EMPTY_TRIE_ROOT,
        logs_bloom=EMPTY_BLOOM,
        difficulty=spec.difficulty,
        number=0,
        gas_limit=spec.gas_limit,
        gas_used=0,
        timestamp=spec.timestamp,
        extra_data=spec.extra_data,
        paid_fees=0,
        minimum_gas_price=spec.minimum_gas_price,
        uncle_count=0,
    )
    return header, nodes, code


def initialize_chain(store: KeyValueStore, network: str, spec: GenesisSpec) -> Header:
    """
    Open the chain of C{network} in C{store}, writing its genesis first if
    the store has no chain yet.

    On an empty store, one write batch holds the genesis header, its empty
    body and receipts, its total difficulty, its canonical entry and head, its
    bloom in the log index, the network name, the schema version, and the
    genesis state's trie nodes and code: a crash leaves either all of it or
    nothing.

    @return: the genesis header.
    @raise nodex.db.errors.WrongNetworkError: the store holds another
        network's chain (the message names both).
    @raise nodex.db.errors.SchemaVersionError: the store uses another schema.
    @raise GenesisMismatchError: the store's chain starts from another
        genesis block than C{spec} gives.
    """
    header, nodes, code = make_genesis(spec)
    check_network(store, network)
    stored_hash = read_canonical_hash(store, 0)
    if stored_hash is None:
        _write_genesis(store, network, header, nodes, code)
        return header
    ensure_schema_version(store)
    if stored_hash != header.hash:
        raise GenesisMismatchError(
            f"the data directory's {network} chain starts from genesis 0x{stored_hash.hex()}, but the"
            f" {network} genesis specification gives 0x{header.hash.hex()}: use a new data directory"
        )
    stored_rlp = read_header_rlp(store, stored_hash)
    if stored_rlp is None:
        raise GenesisMismatchError(f"the data directory has no header for its genesis 0x{stored_hash.hex()}")
    return Header.decode(stored_rlp)


def _write_genesis(
    store: KeyValueStore, network: str, header: Header, nodes: dict[bytes, bytes], code: dict[bytes, bytes]
) -> None:
    """
    Write everything of a new chain in one batch.
    """
    block_hash = header.hash
    batch = store.batch()
    write_header_rlp(batch, block_hash, header.encode())
    write_body_rlp(batch, block_hash, encode_body((), ()))
    write_receipts_rlp(batch, block_hash, encode_receipts(()))
    write_total_difficulty(batch, block_hash, header.difficulty)
    write_canonical_hash(batch, 0, block_hash)
    write_head_hash(batch, block_hash)
    write_block_bloom(batch, 0, header.logs_bloom)
    write_network(batch, network)
    # The stores stamp the version when they open; writing it here too keeps
    # the genesis batch complete on its own (nodex.db.schema has no batch
    # writer for it, and its reader takes big-endian bytes of any length).
    batch.put(METADATA, SCHEMA_VERSION_KEY, encode_uint(SCHEMA_VERSION))
    write_trie_nodes(batch, nodes)
    for code_hash, contract_code in code.items():
        write_code(batch, code_hash, contract_code)
    store.write(batch)


__all__ = [
    "GenesisAllocation",
    "GenesisError",
    "GenesisMismatchError",
    "GenesisSpec",
    "genesis_spec_from_mapping",
    "initialize_chain",
    "make_genesis",
]
