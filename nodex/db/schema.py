"""
The storage schema: columns, key layouts and typed accessors.

Writers add to a L{WriteBatch} (so that a block import, a mining step or a
reorganisation is one atomic write); readers read a store.  Headers, bodies
and receipts are kept as the RLP the chain layer encodes: this module knows
their keys, not their fields.  C{docs/storage.md} describes the layout.
"""

CHAIN_DIRECTORY = "chaindata"
"""The RocksDB database of the chain, under the node's data directory."""

from collections.abc import Callable, Mapping

from nodex.db.errors import SchemaVersionError, StoreError, WrongNetworkError
from nodex.db.kv import KeyValueStore, WriteBatch

SCHEMA_VERSION = 2
"""
The layout version this code reads and writes; bump it when a layout changes.
Version 2 replaced the log index's bit keys with bloom bitmaps
(L{nodex.chain.logs.index}); a version 1 store is migrated when it opens.
"""

HEADERS = "headers"
"""Block hash -> header RLP."""
BODIES = "bodies"
"""Block hash -> body RLP (transactions and uncles)."""
RECEIPTS = "receipts"
"""Block hash -> RLP list of the block's receipts."""
TOTAL_DIFFICULTY = "total_difficulty"
"""Block hash -> cumulative difficulty, minimal big-endian."""
CANONICAL = "canonical"
"""Block number (8 bytes, big-endian) -> hash of the canonical block at that height."""
TX_LOOKUP = "tx_lookup"
"""Transaction hash -> block hash (32 bytes) followed by the index, minimal big-endian."""
TRIE_NODES = "trie_nodes"
"""Node hash -> node RLP, for state and storage tries alike."""
CODE = "code"
"""Code hash -> contract code."""
LOG_INDEX = "log_index"
"""Block number (8 bytes, big-endian) -> the canonical block's 256-byte logs bloom."""
METADATA = "metadata"
"""Named single values: head block hash, schema version, network name."""

ALL_COLUMNS = (
    HEADERS,
    BODIES,
    RECEIPTS,
    TOTAL_DIFFICULTY,
    CANONICAL,
    TX_LOOKUP,
    TRIE_NODES,
    CODE,
    LOG_INDEX,
    METADATA,
)
"""Every column, in the order of DESIGN §3."""

HEAD_KEY = b"head"
SCHEMA_VERSION_KEY = b"schema_version"
NETWORK_KEY = b"network"


def number_key(number: int) -> bytes:
    """
    The key of a block number: 8 bytes big-endian, so that key order is
    height order.

    @raise StoreError: the number is negative or does not fit 64 bits.
    """
    if not 0 <= number < 2**64:
        raise StoreError(f"block number {number} is outside 0 .. 2**64 - 1")
    return number.to_bytes(8, "big")


def _int_bytes(value: int) -> bytes:
    """
    A non-negative integer as minimal big-endian bytes (zero is empty).
    """
    if value < 0:
        raise StoreError(f"cannot store the negative integer {value}")
    return value.to_bytes((value.bit_length() + 7) // 8, "big")


def _hash(value: bytes, what: str) -> bytes:
    """
    Check that C{value} is a 32-byte hash.

    @raise StoreError: it is not.
    """
    if type(value) is not bytes or len(value) != 32:
        raise StoreError(f"{what} must be 32 bytes, got {value!r:.80}")
    return value


# Headers, bodies, receipts


def read_header_rlp(store: KeyValueStore, block_hash: bytes) -> bytes | None:
    """
    The header RLP of block C{block_hash}, or L{None}.
    """
    return store.get(HEADERS, block_hash)


def write_header_rlp(batch: WriteBatch, block_hash: bytes, header_rlp: bytes) -> None:
    """
    Store a header's RLP under its block hash.
    """
    batch.put(HEADERS, _hash(block_hash, "a block hash"), header_rlp)


def delete_header_rlp(batch: WriteBatch, block_hash: bytes) -> None:
    """
    Remove a header.
    """
    batch.delete(HEADERS, block_hash)


def read_body_rlp(store: KeyValueStore, block_hash: bytes) -> bytes | None:
    """
    The body RLP of block C{block_hash}, or L{None}.
    """
    return store.get(BODIES, block_hash)


def write_body_rlp(batch: WriteBatch, block_hash: bytes, body_rlp: bytes) -> None:
    """
    Store a block body's RLP under its block hash.
    """
    batch.put(BODIES, _hash(block_hash, "a block hash"), body_rlp)


def delete_body_rlp(batch: WriteBatch, block_hash: bytes) -> None:
    """
    Remove a block body.
    """
    batch.delete(BODIES, block_hash)


def read_receipts_rlp(store: KeyValueStore, block_hash: bytes) -> bytes | None:
    """
    The RLP list of block C{block_hash}'s receipts, or L{None}.
    """
    return store.get(RECEIPTS, block_hash)


def write_receipts_rlp(batch: WriteBatch, block_hash: bytes, receipts_rlp: bytes) -> None:
    """
    Store the RLP list of a block's receipts under its block hash.
    """
    batch.put(RECEIPTS, _hash(block_hash, "a block hash"), receipts_rlp)


def delete_receipts_rlp(batch: WriteBatch, block_hash: bytes) -> None:
    """
    Remove a block's receipts.
    """
    batch.delete(RECEIPTS, block_hash)


# Total difficulty and the canonical chain


def read_total_difficulty(store: KeyValueStore, block_hash: bytes) -> int | None:
    """
    The cumulative difficulty of the chain ending at C{block_hash}, or L{None}.
    """
    value = store.get(TOTAL_DIFFICULTY, block_hash)
    return None if value is None else int.from_bytes(value, "big")


def write_total_difficulty(batch: WriteBatch, block_hash: bytes, total_difficulty: int) -> None:
    """
    Store the cumulative difficulty of the chain ending at C{block_hash}.
    """
    batch.put(TOTAL_DIFFICULTY, _hash(block_hash, "a block hash"), _int_bytes(total_difficulty))


def delete_total_difficulty(batch: WriteBatch, block_hash: bytes) -> None:
    """
    Remove a block's total difficulty.
    """
    batch.delete(TOTAL_DIFFICULTY, block_hash)


def read_canonical_hash(store: KeyValueStore, number: int) -> bytes | None:
    """
    The hash of the canonical block at height C{number}, or L{None}.
    """
    return store.get(CANONICAL, number_key(number))


def write_canonical_hash(batch: WriteBatch, number: int, block_hash: bytes) -> None:
    """
    Make C{block_hash} the canonical block at height C{number}.
    """
    batch.put(CANONICAL, number_key(number), _hash(block_hash, "a block hash"))


def delete_canonical_hash(batch: WriteBatch, number: int) -> None:
    """
    Leave height C{number} without a canonical block (a reorganisation to a
    shorter chain).
    """
    batch.delete(CANONICAL, number_key(number))


def read_head_hash(store: KeyValueStore) -> bytes | None:
    """
    The hash of the head of the canonical chain, or L{None} before genesis.
    """
    return store.get(METADATA, HEAD_KEY)


def write_head_hash(batch: WriteBatch, block_hash: bytes) -> None:
    """
    Make C{block_hash} the head of the canonical chain.
    """
    batch.put(METADATA, HEAD_KEY, _hash(block_hash, "a block hash"))


# Transaction lookup


def read_tx_lookup(store: KeyValueStore, tx_hash: bytes) -> tuple[bytes, int] | None:
    """
    Where the canonical chain holds transaction C{tx_hash}.

    @return: C{(block_hash, index)}, or L{None}.
    @raise StoreError: the stored entry is corrupt.
    """
    value = store.get(TX_LOOKUP, tx_hash)
    if value is None:
        return None
    if len(value) < 32:
        raise StoreError(f"corrupt transaction lookup entry for 0x{tx_hash.hex()}")
    return value[:32], int.from_bytes(value[32:], "big")


def write_tx_lookup(batch: WriteBatch, tx_hash: bytes, block_hash: bytes, index: int) -> None:
    """
    Record that transaction C{tx_hash} is at C{index} in block C{block_hash}.
    """
    batch.put(
        TX_LOOKUP,
        _hash(tx_hash, "a transaction hash"),
        _hash(block_hash, "a block hash") + _int_bytes(index),
    )


def delete_tx_lookup(batch: WriteBatch, tx_hash: bytes) -> None:
    """
    Forget where transaction C{tx_hash} is (its block left the canonical chain).
    """
    batch.delete(TX_LOOKUP, tx_hash)


# State: trie nodes and code


def read_trie_node(store: KeyValueStore, node_hash: bytes) -> bytes | None:
    """
    The RLP of the trie node C{node_hash}, or L{None}.
    """
    return store.get(TRIE_NODES, node_hash)


def trie_node_reader(store: KeyValueStore) -> Callable[[bytes], bytes | None]:
    """
    The node reader that L{nodex.trie.HexaryTrie} takes, over C{store}.
    """
    get = store.get

    def read_node(node_hash: bytes) -> bytes | None:
        """
        Look a trie node up by hash.
        """
        return get(TRIE_NODES, node_hash)

    return read_node


def write_trie_nodes(batch: WriteBatch, nodes: dict[bytes, bytes]) -> None:
    """
    Store the nodes a trie commit handed over (hash -> RLP).
    """
    for node_hash, encoded in nodes.items():
        batch.put(TRIE_NODES, node_hash, encoded)


def read_code(store: KeyValueStore, code_hash: bytes) -> bytes | None:
    """
    The contract code whose Keccak-256 is C{code_hash}, or L{None}.
    """
    return store.get(CODE, code_hash)


def write_code(batch: WriteBatch, code_hash: bytes, code: bytes) -> None:
    """
    Store contract code under its Keccak-256 hash.
    """
    batch.put(CODE, _hash(code_hash, "a code hash"), code)


# Log index


def read_block_bloom(store: KeyValueStore, number: int) -> bytes | None:
    """
    The logs bloom of the canonical block at height C{number}, or L{None}.
    """
    return store.get(LOG_INDEX, number_key(number))


def write_block_bloom(batch: WriteBatch, number: int, bloom: bytes) -> None:
    """
    Index the logs bloom of the canonical block at height C{number}.

    @raise StoreError: the bloom is not 256 bytes.
    """
    if len(bloom) != 256:
        raise StoreError(f"a logs bloom has 256 bytes, not {len(bloom)}")
    batch.put(LOG_INDEX, number_key(number), bloom)


def delete_block_bloom(batch: WriteBatch, number: int) -> None:
    """
    Remove the logs bloom of height C{number} from the index.
    """
    batch.delete(LOG_INDEX, number_key(number))


# Metadata: schema version and network


def read_schema_version(store: KeyValueStore) -> int | None:
    """
    The schema version the store was written with, or L{None} for a new store.
    """
    value = store.get(METADATA, SCHEMA_VERSION_KEY)
    return None if value is None else int.from_bytes(value, "big")


def write_schema_version(batch: WriteBatch, version: int = SCHEMA_VERSION) -> None:
    """
    Stamp the store with a schema version (by default this code's), for a
    batch that creates a chain and must be complete on its own.
    """
    batch.put(METADATA, SCHEMA_VERSION_KEY, _int_bytes(version))


def _drop_bit_index(store: KeyValueStore, keys_per_batch: int = 100_000) -> None:
    """
    Migrate a version 1 store to version 2: delete the log index's bit keys
    and section marks (first bytes C{0xff} and C{0xfe}); the chain builds
    the bloom bitmaps that replace them from the blooms when it starts
    (L{nodex.chain.logs.index.LogIndexer}).
    """
    for mark in (b"\xfe", b"\xff"):
        while True:
            batch = store.batch()
            for key, _ in store.iterate(LOG_INDEX, mark):
                batch.delete(LOG_INDEX, key)
                if len(batch) >= keys_per_batch:
                    break
            if not len(batch):
                break
            store.write(batch)


MIGRATIONS: Mapping[int, Callable[[KeyValueStore], None]] = {1: _drop_bit_index}
"""By schema version, what brings a store of that version to the next one."""


def ensure_schema_version(
    store: KeyValueStore, migrations: Mapping[int, Callable[[KeyValueStore], None]] = MIGRATIONS
) -> None:
    """
    Stamp a new store with L{SCHEMA_VERSION}, or check an old store's stamp,
    migrating it first when C{migrations} knows how.

    @param migrations: by version, what brings a store of that version to
        the next one (each step is stamped once done, so an interrupted
        migration starts again from its step; every step may be repeated).
    @raise SchemaVersionError: the store holds another version.
    """
    version = read_schema_version(store)
    while version is not None and version < SCHEMA_VERSION and version in migrations:
        migrations[version](store)
        version += 1
        batch = store.batch()
        write_schema_version(batch, version)
        store.write(batch)
    if version is None:
        batch = store.batch()
        write_schema_version(batch)
        store.write(batch)
    elif version != SCHEMA_VERSION:
        raise SchemaVersionError(
            f"the data directory uses storage schema version {version}, but this nodex "
            f"reads version {SCHEMA_VERSION}: use a matching nodex or a new data directory"
        )


def read_network(store: KeyValueStore) -> str | None:
    """
    The name of the network whose chain the store holds, or L{None} before genesis.
    """
    value = store.get(METADATA, NETWORK_KEY)
    return None if value is None else value.decode("utf-8")


def write_network(batch: WriteBatch, name: str) -> None:
    """
    Record the network whose chain the store holds (with the genesis block).
    """
    batch.put(METADATA, NETWORK_KEY, name.encode("utf-8"))


def check_network(store: KeyValueStore, name: str) -> None:
    """
    Refuse a store that holds another network's chain (a new store passes).

    @raise WrongNetworkError: the store belongs to another network.
    """
    stored = read_network(store)
    if stored is not None and stored != name:
        raise WrongNetworkError(
            f"the data directory holds the {stored!r} chain, not {name!r}: "
            "choose another data directory or network"
        )


__all__ = [
    "CHAIN_DIRECTORY",
    "ALL_COLUMNS",
    "BODIES",
    "CANONICAL",
    "CODE",
    "HEADERS",
    "HEAD_KEY",
    "LOG_INDEX",
    "METADATA",
    "NETWORK_KEY",
    "RECEIPTS",
    "SCHEMA_VERSION",
    "SCHEMA_VERSION_KEY",
    "TOTAL_DIFFICULTY",
    "TRIE_NODES",
    "TX_LOOKUP",
    "check_network",
    "delete_block_bloom",
    "delete_body_rlp",
    "delete_canonical_hash",
    "delete_header_rlp",
    "delete_receipts_rlp",
    "delete_total_difficulty",
    "delete_tx_lookup",
    "MIGRATIONS",
    "ensure_schema_version",
    "number_key",
    "read_block_bloom",
    "read_body_rlp",
    "read_canonical_hash",
    "read_code",
    "read_head_hash",
    "read_header_rlp",
    "read_network",
    "read_receipts_rlp",
    "read_schema_version",
    "read_total_difficulty",
    "read_trie_node",
    "read_tx_lookup",
    "trie_node_reader",
    "write_block_bloom",
    "write_body_rlp",
    "write_canonical_hash",
    "write_code",
    "write_head_hash",
    "write_header_rlp",
    "write_network",
    "write_receipts_rlp",
    "write_schema_version",
    "write_total_difficulty",
    "write_trie_nodes",
    "write_tx_lookup",
]
