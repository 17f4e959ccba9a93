"""
State snapshots of the dev chain (L4): C{anvil_dumpState} writes every
account of a state as JSON, C{anvil_loadState} lays such a snapshot over
another state (C{docs/compatibility.md}, "State snapshots").

The state trie keys accounts by the Keccak-256 of their address and slots
by the Keccak-256 of their key, and nodex keeps no preimages, so a snapshot
names accounts and slots by those trie keys::

    {"format": "nodex-state/1", "chainId": "0x21", "blockNumber": "0x5",
     "stateRoot": "0x...",
     "accounts": {"0x<keccak(address)>": {"nonce": "0x1", "balance": "0x...",
                  "code": "0x6080...", "storage": {"0x<keccak(slot)>": "0x2a"}}}}

Loading writes the accounts by the same keys, so a snapshot loaded into a
node with the same genesis reproduces the dumped state root exactly.  A
loaded account replaces the one with the same key whole (storage included).
"""

from collections.abc import Callable, Mapping
from typing import Any

from nodex.chain.errors import ChainError
from nodex.crypto import EMPTY_KECCAK, keccak256
from nodex.primitives import Hash32
from nodex.state.state import decode_storage_value, encode_storage_value
from nodex.structures.accounts import EMPTY_TRIE_ROOT, Account
from nodex.trie.hexary import HexaryTrie

SNAPSHOT_FORMAT = "nodex-state/1"

NodeReader = Callable[[bytes], bytes | None]


class SnapshotError(ChainError):
    """
    A state snapshot that cannot be loaded; the message says what is wrong where.
    """


def _quantity(value: int) -> str:
    """
    A JSON-RPC QUANTITY.
    """
    return hex(value)


def dump_state(
    read_node: NodeReader, read_code: NodeReader, state_root: bytes, chain_id: int, block_number: int
) -> dict[str, Any]:
    """
    Every account of the state at C{state_root}, in the snapshot format.

    @raise nodex.trie.errors.MissingTrieNodeError: the store lacks a node.
    """
    accounts: dict[str, Any] = {}
    for key, raw in HexaryTrie(read_node, state_root).items():
        account = Account.decode(raw)
        code = b"" if account.code_hash == EMPTY_KECCAK else (read_code(account.code_hash) or b"")
        storage = {
            "0x" + slot.hex(): _quantity(decode_storage_value(value))
            for slot, value in HexaryTrie(read_node, account.storage_root).items()
        }
        accounts["0x" + key.hex()] = {
            "nonce": _quantity(account.nonce),
            "balance": _quantity(account.balance),
            "code": "0x" + code.hex(),
            "storage": storage,
        }
    return {
        "format": SNAPSHOT_FORMAT,
        "chainId": _quantity(chain_id),
        "blockNumber": _quantity(block_number),
        "stateRoot": "0x" + bytes(state_root).hex(),
        "accounts": accounts,
    }


def _hex_bytes(value: Any, where: str, size: int | None = None) -> bytes:
    """
    Bytes from a 0x-prefixed hex string.

    @raise SnapshotError: not such a string, or not C{size} bytes.
    """
    if not isinstance(value, str) or value[:2] not in ("0x", "0X"):
        raise SnapshotError(f"{where}: want a 0x-prefixed hex string")
    try:
        raw = bytes.fromhex(value[2:])
    except ValueError:
        raise SnapshotError(f"{where}: {value[:80]!r} is not hex") from None
    if size is not None and len(raw) != size:
        raise SnapshotError(f"{where}: want {size} bytes, got {len(raw)}")
    return raw


def _hex_int(value: Any, where: str, bits: int) -> int:
    """
    A non-negative integer of at most C{bits} bits from a QUANTITY.

    @raise SnapshotError: not a QUANTITY in range.
    """
    if not isinstance(value, str) or value[:2] not in ("0x", "0X") or not value[2:]:
        raise SnapshotError(f"{where}: want a 0x-prefixed hex quantity")
    try:
        number = int(value[2:], 16)
    except ValueError:
        raise SnapshotError(f"{where}: {value[:80]!r} is not a hex quantity") from None
    if number >= 1 << bits:
        raise SnapshotError(f"{where}: {value[:80]} does not fit in {bits} bits")
    return number


def load_state(
    read_node: NodeReader, state_root: bytes, snapshot: Any
) -> tuple[Hash32, dict[bytes, bytes], dict[bytes, bytes]]:
    """
    Lay the accounts of C{snapshot} over the state at C{state_root}.

    @return: the new state root, the new trie nodes and the code (by hash) to store.
    @raise SnapshotError: the snapshot is malformed (the message names the place).
    """
    if not isinstance(snapshot, Mapping):
        raise SnapshotError("the state snapshot must be a JSON object")
    if snapshot.get("format") != SNAPSHOT_FORMAT:
        raise SnapshotError(f"the state snapshot's format must be {SNAPSHOT_FORMAT!r}")
    accounts = snapshot.get("accounts")
    if not isinstance(accounts, Mapping):
        raise SnapshotError("accounts: want an object of trie key to account")
    nodes: dict[bytes, bytes] = {}
    codes: dict[bytes, bytes] = {}
    trie = HexaryTrie(read_node, state_root)
    for key_text, fields in accounts.items():
        where = f"account {str(key_text)[:80]}"
        key = _hex_bytes(key_text, where, 32)
        if not isinstance(fields, Mapping):
            raise SnapshotError(f"{where}: want an object")
        unknown = set(fields) - {"nonce", "balance", "code", "storage"}
        if unknown:
            raise SnapshotError(f"{where}: unknown field {sorted(unknown)[0]!r}")
        code = _hex_bytes(fields.get("code", "0x"), f"{where} code")
        storage = fields.get("storage", {})
        if not isinstance(storage, Mapping):
            raise SnapshotError(f"{where} storage: want an object of trie key to value")
        storage_trie = HexaryTrie(read_node, EMPTY_TRIE_ROOT)
        for slot_text, value_text in storage.items():
            slot = _hex_bytes(slot_text, f"{where} storage key {str(slot_text)[:80]}", 32)
            value = _hex_int(value_text, f"{where} storage {slot_text}", 256)
            if value:
                storage_trie.put(slot, encode_storage_value(value))
        nodes.update(storage_trie.commit())
        code_hash = keccak256(code) if code else EMPTY_KECCAK
        if code:
            codes[code_hash] = code
        account = Account(
            nonce=_hex_int(fields.get("nonce", "0x0"), f"{where} nonce", 64),
            balance=_hex_int(fields.get("balance", "0x0"), f"{where} balance", 256),
            storage_root=Hash32(storage_trie.root_hash),
            code_hash=Hash32(code_hash),
        )
        trie.put(key, account.encode())
    nodes.update(trie.commit())
    return Hash32(trie.root_hash), nodes, codes


__all__ = ["SNAPSHOT_FORMAT", "SnapshotError", "dump_state", "load_state"]
