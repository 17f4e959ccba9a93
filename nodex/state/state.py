"""
The world state: accounts, storage and code over the state trie, with the
journal that lets a failing frame undo exactly its own changes.

Reads go through caches that live as long as the L{State} (typically a
block), so a value decoded once is not decoded again.  Every change is
recorded in a journal of C{(mapping, key, old value)} entries;
L{State.snapshot} is the journal's length and L{State.revert} pops entries
back to it.  What belongs to one transaction (warm sets of EIP-2929,
transient storage of EIP-1153, original storage values of EIP-2200, the
accounts created in it for EIP-6780, the accounts touched for EIP-161) is
reset by L{State.begin_transaction}.  L{State.commit} writes the changes
into the tries and returns the new state root and trie nodes.
"""

from collections.abc import Callable, Iterable
from typing import Any

from nodex.crypto import EMPTY_KECCAK, keccak256
from nodex.primitives import Address, Hash32
from nodex.state.errors import StateError
from nodex.structures.accounts import EMPTY_ACCOUNT, EMPTY_TRIE_ROOT, Account
from nodex.structures.errors import RLPError
from nodex.trie import BLANK_ROOT, SecureTrie, TrieError
from nodex.trie.nodecache import NodeCache

RIPEMD160_ADDRESS = Address(b"\x00" * 19 + b"\x03")
"""Touching this account survives a revert: the consensus quirk of mainnet
block 2,675,119 that execution-specs keeps for every fork after it."""

_MISSING: Any = object()

JournalEntry = tuple[dict, Any, Any]


def encode_storage_value(value: int) -> bytes:
    """
    The RLP of a storage word as the storage trie holds it (a minimal
    big-endian string).
    """
    raw = value.to_bytes((value.bit_length() + 7) // 8, "big")
    if len(raw) == 1 and raw[0] < 0x80:
        return raw
    return bytes([0x80 + len(raw)]) + raw


def decode_storage_value(encoded: bytes) -> int:
    """
    The word in a storage trie value.

    @raise StateError: the value is not an RLP string of at most 32 bytes.
    """
    if len(encoded) == 1 and encoded[0] < 0x80:
        return encoded[0]
    if not encoded or encoded[0] < 0x80 or encoded[0] - 0x80 != len(encoded) - 1 or len(encoded) > 33:
        raise StateError(f"malformed storage value {encoded.hex()}")
    return int.from_bytes(encoded[1:], "big")


ROOT_READS_KEPT = 65_536
"""The most accounts and storage slots a L{RootReads} records (a few MiB);
beyond, its L{State}s read the trie as usual."""


class RootReads:
    """
    Accounts, storage slots and code as the tries of one state root hold
    them, recorded by the L{State}s opened on that root as they read them
    (before their first commit), so that the next L{State} opened on the
    same root starts with them decoded instead of walking the tries again.
    Nothing here is ever a changed value: a state records only what it
    read from the tries of its root, which do not change until it commits.

    The writer opens a state on the same root again and again when a test
    suite's C{evm_revert} rewinds the chain to its fixture before every test
    (C{docs/chain-service.md}).

    @ivar root: the state root the reads are of.
    """

    def __init__(self, root: bytes) -> None:
        self.root = root
        self.accounts: dict[Address, Account | None] = {}
        self.storage: dict[Address, dict[int, int]] = {}
        self.size = 0

    def _room(self) -> bool:
        """
        Whether one more read may be recorded (L{ROOT_READS_KEPT}).
        """
        if self.size >= ROOT_READS_KEPT:
            return False
        self.size += 1
        return True


class State:
    """
    The accounts of one state root, with the changes made on top of it.

    @ivar read_node: fetches a trie node's RLP by its hash.
    @ivar read_code: fetches code by its hash.
    @ivar new_codes: the code deployed (by hash) since the caller last
        cleared this mapping, for the C{CODE} column.
    """

    def __init__(
        self,
        read_node: Callable[[bytes], bytes | None],
        read_code: Callable[[bytes], bytes | None],
        state_root: bytes = BLANK_ROOT,
        node_cache: NodeCache | None = None,
        root_reads: RootReads | None = None,
    ) -> None:
        """
        @param read_node: fetches a trie node's RLP by its hash.
        @param read_code: fetches code by its hash.
        @param state_root: the root the state starts from.
        @param node_cache: decoded trie nodes shared with other states (the
            readers'); lookups walk them instead of decoding their own.
        @param root_reads: the reads of earlier states of C{state_root}:
            this state starts with them, and records its own reads of the
            tries there until its first commit.
        """
        self.read_node = read_node
        self.read_code = read_code
        self._node_cache = node_cache
        self._committed_nodes: dict[bytes, bytes] = {}
        self._trie = SecureTrie(self._read_node, state_root, node_cache)
        self._accounts: dict[Address, Account | None] = {}
        self._storage: dict[Address, dict[int, int]] = {}
        self._storage_tries: dict[Address, SecureTrie] = {}
        self._codes: dict[bytes, bytes] = {EMPTY_KECCAK: b""}
        self.new_codes: dict[bytes, bytes] = {}
        self._wiped: dict[Address, bool] = {}
        self._dirty_accounts: set[Address] = set()
        self._dirty_storage: dict[Address, set[int]] = {}
        self._journal: list[JournalEntry] = []
        self._warm_addresses: dict[Address, bool] = {}
        self._warm_slots: dict[tuple[Address, int], bool] = {}
        self._transient: dict[tuple[Address, int], int] = {}
        self._original: dict[tuple[Address, int], int] = {}
        self._created: set[Address] = set()
        self._touched: dict[Address, bool] = {}
        self._sticky_touched: set[Address] = set()
        self._root_reads: RootReads | None = None
        if root_reads is not None:
            if root_reads.root != state_root:
                raise ValueError("the reads are of another state root")
            self._root_reads = root_reads
            self._accounts.update(root_reads.accounts)
            self._storage.update({address: dict(slots) for address, slots in root_reads.storage.items()})

    @classmethod
    def from_store(
        cls,
        store: Any,
        state_root: bytes = BLANK_ROOT,
        node_cache: NodeCache | None = None,
        root_reads: RootReads | None = None,
    ) -> "State":
        """
        A state over a key-value store (columns C{TRIE_NODES} and C{CODE} of
        L{nodex.db.schema}).

        @param node_cache: decoded trie nodes shared with other states.
        @param root_reads: the reads of earlier states of C{state_root} (see L{State}).
        """
        from nodex.db.schema import CODE, TRIE_NODES

        return cls(
            lambda node_hash: store.get(TRIE_NODES, node_hash),
            lambda code_hash: store.get(CODE, code_hash),
            state_root,
            node_cache,
            root_reads,
        )

    def _read_node(self, node_hash: bytes) -> bytes | None:
        """
        A trie node, from this state's own commits or from the store.
        """
        node = self._committed_nodes.get(node_hash)
        if node is None:
            node = self.read_node(node_hash)
        return node

    # Journal

    def snapshot(self) -> int:
        """
        A mark to which L{revert} can return.
        """
        return len(self._journal)

    def revert(self, snapshot: int) -> None:
        """
        Undo every change made since C{snapshot} was taken.
        """
        journal = self._journal
        while len(journal) > snapshot:
            mapping, key, old = journal.pop()
            if old is _MISSING:
                mapping.pop(key, None)
            else:
                mapping[key] = old

    def _record(self, mapping: dict, key: Any, value: Any) -> None:
        """
        Set C{mapping[key]}, journaling the old value.
        """
        self._journal.append((mapping, key, mapping.get(key, _MISSING)))
        mapping[key] = value

    # Transactions

    def begin_transaction(self) -> None:
        """
        Forget what belonged to the previous transaction: journal, warm
        sets, transient storage, original values, created and touched accounts.
        """
        self._journal.clear()
        self._warm_addresses.clear()
        self._warm_slots.clear()
        self._transient.clear()
        self._original.clear()
        self._created.clear()
        self._touched.clear()
        self._sticky_touched.clear()

    def finalize_transaction(self, accounts_to_delete: Iterable[Address] = ()) -> None:
        """
        End a transaction: delete the accounts that self-destructed in it
        (EIP-6780) and the touched accounts that are empty (EIP-161).
        """
        for address in accounts_to_delete:
            self.destroy_account(address)
        for address in list(self._touched) + list(self._sticky_touched):
            account = self.get_account(address)
            if account is not None and account.is_empty:
                self.destroy_account(address)
        self.begin_transaction()

    # Accounts

    def get_account(self, address: Address) -> Account | None:
        """
        The account at C{address}, or L{None} if there is none.

        @raise StateError: the trie or the account is malformed or incomplete.
        """
        try:
            return self._accounts[address]
        except KeyError:
            pass
        try:
            raw = self._trie.get(address)
            account = None if raw is None else Account.decode(raw)
        except (TrieError, RLPError) as exc:
            raise StateError(f"cannot read account {address.hex()}: {exc}") from exc
        self._accounts[address] = account
        reads = self._root_reads
        if reads is not None and reads._room():
            reads.accounts[address] = account
        return account

    def set_account(self, address: Address, account: Account | None) -> None:
        """
        Replace the account at C{address} (L{None} deletes it, storage kept
        apart: see L{destroy_account}).
        """
        self.get_account(address)
        self._record(self._accounts, address, account)
        self._dirty_accounts.add(address)

    def account_exists(self, address: Address) -> bool:
        """
        Whether there is an account at C{address}, empty or not.
        """
        return self.get_account(address) is not None

    def is_alive(self, address: Address) -> bool:
        """
        Whether an account exists at C{address} and is not empty (EIP-161).
        """
        account = self.get_account(address)
        return account is not None and not account.is_empty

    def get_balance(self, address: Address) -> int:
        """
        The balance of C{address} in wei (0 if there is no account).
        """
        account = self.get_account(address)
        return 0 if account is None else account.balance

    def get_nonce(self, address: Address) -> int:
        """
        The nonce of C{address} (0 if there is no account).
        """
        account = self.get_account(address)
        return 0 if account is None else account.nonce

    def _replace_account(self, address: Address, account: Account) -> None:
        """
        L{set_account} for an address whose account L{get_account} has just
        read (so it is in the cache): the journal entry and the mark, without
        reading it again.
        """
        accounts = self._accounts
        self._journal.append((accounts, address, accounts[address]))
        accounts[address] = account
        self._dirty_accounts.add(address)

    def set_balance(self, address: Address, balance: int) -> None:
        """
        Set the balance of C{address}, creating the account if needed.
        """
        account = self.get_account(address)
        if account is None:
            self._replace_account(address, Account(balance=balance))
        else:
            self._replace_account(address, Account(account.nonce, balance, account.storage_root, account.code_hash))

    def add_balance(self, address: Address, amount: int) -> None:
        """
        Add C{amount} wei to the balance of C{address}.
        """
        account = self.get_account(address)
        if account is None:
            self._replace_account(address, Account(balance=amount))
        else:
            self._replace_account(
                address, Account(account.nonce, account.balance + amount, account.storage_root, account.code_hash)
            )

    def transfer(self, sender: Address, recipient: Address, amount: int) -> None:
        """
        Move C{amount} wei; the caller has checked that the sender has it.
        A zero amount creates no account.
        """
        if amount == 0:
            return
        self.set_balance(sender, self.get_balance(sender) - amount)
        self.set_balance(recipient, self.get_balance(recipient) + amount)

    def set_nonce(self, address: Address, nonce: int) -> None:
        """
        Set the nonce of C{address}, creating the account if needed.
        """
        account = self.get_account(address) or EMPTY_ACCOUNT
        self._replace_account(address, Account(nonce, account.balance, account.storage_root, account.code_hash))

    def increment_nonce(self, address: Address) -> None:
        """
        Add one to the nonce of C{address}.
        """
        account = self.get_account(address) or EMPTY_ACCOUNT
        self._replace_account(address, Account(account.nonce + 1, account.balance, account.storage_root, account.code_hash))

    def destroy_account(self, address: Address) -> None:
        """
        Delete the account at C{address} with its storage.
        """
        self.destroy_storage(address)
        self.set_account(address, None)

    # Code

    def get_code(self, address: Address) -> bytes:
        """
        The code of C{address} (empty if none).

        @raise StateError: the code is not in the store.
        """
        account = self.get_account(address)
        if account is None:
            return b""
        return self.get_code_by_hash(account.code_hash)

    def get_code_by_hash(self, code_hash: bytes) -> bytes:
        """
        The code whose Keccak-256 is C{code_hash}.

        @raise StateError: the code is not in the store.
        """
        code = self._codes.get(code_hash)
        if code is None:
            code = self.read_code(code_hash)
            if code is None:
                raise StateError(f"code {code_hash.hex()} is missing from the store")
            self._codes[code_hash] = code
        return code

    def get_code_hash(self, address: Address) -> Hash32:
        """
        The Keccak-256 of the code of C{address} (that of empty code if none).
        """
        account = self.get_account(address)
        return Hash32(EMPTY_KECCAK) if account is None else account.code_hash

    def set_code(self, address: Address, code: bytes) -> None:
        """
        Set the code of C{address}, creating the account if needed.
        """
        code_hash = keccak256(code)
        self._codes[code_hash] = code
        if code:
            self.new_codes[code_hash] = code
        account = self.get_account(address) or EMPTY_ACCOUNT
        self._replace_account(address, Account(account.nonce, account.balance, account.storage_root, code_hash))

    def has_code_or_nonce(self, address: Address) -> bool:
        """
        Whether C{address} has code or a non-zero nonce (a creation there collides).
        """
        account = self.get_account(address)
        return account is not None and (account.nonce != 0 or account.code_hash != EMPTY_KECCAK)

    # Storage

    def _storage_trie(self, address: Address) -> SecureTrie:
        """
        The storage trie of C{address} as of the last commit.
        """
        trie = self._storage_tries.get(address)
        if trie is None:
            account = self.get_account(address)
            root = EMPTY_TRIE_ROOT if account is None else account.storage_root
            trie = SecureTrie(self._read_node, root, self._node_cache)
            self._storage_tries[address] = trie
        return trie

    def get_storage(self, address: Address, key: int) -> int:
        """
        The current value of storage slot C{key} of C{address}.

        @raise StateError: the storage trie is incomplete or malformed.
        """
        slots = self._storage.get(address)
        if slots is None:
            slots = self._storage[address] = {}
        else:
            value = slots.get(key)
            if value is not None:
                return value
        if address in self._wiped:
            value = 0
        else:
            try:
                raw = self._storage_trie(address).get(key.to_bytes(32, "big"))
            except TrieError as exc:
                raise StateError(f"cannot read storage of {address.hex()}: {exc}") from exc
            value = 0 if raw is None else decode_storage_value(raw)
            reads = self._root_reads
            if reads is not None and reads._room():
                kept = reads.storage.get(address)
                if kept is None:
                    kept = reads.storage[address] = {}
                kept[key] = value
        slots[key] = value
        return value

    def get_original_storage(self, address: Address, key: int) -> int:
        """
        The value slot C{key} of C{address} had when the transaction began (EIP-2200).
        """
        original = self._original.get((address, key))
        if original is None:
            return self.get_storage(address, key)
        return original

    def set_storage(self, address: Address, key: int, value: int) -> None:
        """
        Write storage slot C{key} of C{address}.
        """
        current = self.get_storage(address, key)
        if (address, key) not in self._original:
            self._original[(address, key)] = current
        # What _record does, for a slot get_storage has just put in the cache.
        slots = self._storage[address]
        self._journal.append((slots, key, current))
        slots[key] = value
        dirty = self._dirty_storage.get(address)
        if dirty is None:
            dirty = self._dirty_storage[address] = set()
        dirty.add(key)

    def destroy_storage(self, address: Address) -> None:
        """
        Empty the storage of C{address} (a new contract, or a deleted account).
        """
        self._record(self._wiped, address, True)
        self._record(self._storage, address, {})
        self._dirty_accounts.add(address)

    def has_storage(self, address: Address) -> bool:
        """
        Whether C{address} has any non-zero storage slot (EIP-7610 collisions).
        """
        slots = self._storage.get(address, {})
        if any(slots.values()):
            return True
        if address in self._wiped:
            return False
        account = self.get_account(address)
        return account is not None and account.storage_root != EMPTY_TRIE_ROOT

    # Transient storage (EIP-1153)

    def get_transient_storage(self, address: Address, key: int) -> int:
        """
        The transient value of slot C{key} of C{address}; 0 unless set in this transaction.
        """
        return self._transient.get((address, key), 0)

    def set_transient_storage(self, address: Address, key: int, value: int) -> None:
        """
        Write a transient slot; it lasts until the transaction ends.
        """
        self._record(self._transient, (address, key), value)

    # Access sets (EIP-2929) and per-transaction marks

    def warm_addresses(self, addresses: Iterable[Address]) -> None:
        """
        Warm each of C{addresses}, as L{mark_warm_address} does one by one:
        the dozen addresses warm before a transaction's first instruction
        (EIP-2929, EIP-3651), in one call instead of a dozen.
        """
        warm = self._warm_addresses
        journal = self._journal
        for address in addresses:
            if address not in warm:
                journal.append((warm, address, _MISSING))
                warm[address] = True

    def mark_warm_address(self, address: Address) -> bool:
        """
        Warm C{address}.

        @return: whether it was cold (the caller charges the cold price).
        """
        warm = self._warm_addresses
        if address in warm:
            return False
        # What _record does, for a key known to be absent: every call warms a dozen addresses.
        self._journal.append((warm, address, _MISSING))
        warm[address] = True
        return True

    def mark_warm_slot(self, address: Address, key: int) -> bool:
        """
        Warm storage slot C{key} of C{address}.

        @return: whether it was cold.
        """
        slot = (address, key)
        warm = self._warm_slots
        if slot in warm:
            return False
        self._journal.append((warm, slot, _MISSING))
        warm[slot] = True
        return True

    def is_warm_address(self, address: Address) -> bool:
        """
        Whether C{address} is warm in this transaction.
        """
        return address in self._warm_addresses

    def is_warm_slot(self, address: Address, key: int) -> bool:
        """
        Whether storage slot C{key} of C{address} is warm in this transaction.
        """
        return (address, key) in self._warm_slots

    def mark_created(self, address: Address) -> None:
        """
        Remember that C{address} was created in this transaction (EIP-6780).
        """
        self._created.add(address)

    def is_created(self, address: Address) -> bool:
        """
        Whether C{address} was created in this transaction.
        """
        return address in self._created

    def touch(self, address: Address) -> None:
        """
        Mark C{address} touched: if empty at the end of the transaction, it is deleted (EIP-161).
        """
        if address == RIPEMD160_ADDRESS:
            self._sticky_touched.add(address)
        elif address not in self._touched:
            self._record(self._touched, address, True)

    # Commit

    def commit(self) -> tuple[Hash32, dict[bytes, bytes]]:
        """
        Write every change into the storage and state tries.

        @return: the new state root and the new trie nodes (hash to RLP), for
the caller to put in the C{TRIE_NODES} column; the code deployed
            is in L{new_codes}, which the caller clears once written.
        @raise StateError: a trie node needed for the update is missing.
        """
        # The tries change to another root: no more reads of the first.
        self._root_reads = None
        nodes: dict[bytes, bytes] = {}
        try:
            for address in self._dirty_accounts | set(self._dirty_storage):
                self._commit_account(address, nodes)
            nodes.update(self._trie.commit())
            root: Hash32 = self._trie.root_hash  # type: ignore[assignment]
        except TrieError as exc:
            raise StateError(f"cannot update the state trie: {exc}") from exc
        self._committed_nodes.update(nodes)
        self._dirty_accounts.clear()
        self._dirty_storage.clear()
        self._wiped.clear()
        self._journal.clear()
        return root, nodes

    def _commit_account(self, address: Address, nodes: dict[bytes, bytes]) -> None:
        """
        Put one changed account, and its storage, into the tries.
        """
        account = self.get_account(address)
        if account is None:
            self._trie.delete(address)
            self._storage_tries.pop(address, None)
            self._storage.pop(address, None)
            return
        dirty = self._dirty_storage.get(address)
        if address in self._wiped:
            slots = self._storage.get(address, {})
            trie = SecureTrie(self._read_node, EMPTY_TRIE_ROOT)
            keys: Iterable[int] = [key for key, value in slots.items() if value]
        elif dirty is None:
            # No slot written: the account's storage root is its trie's, which stays as it is (an account's storage
            # root follows its trie at every commit, and every change of the account keeps it).
            self._trie.put(address, account.encode())
            return
        else:
            slots = self._storage.get(address, {})
            trie = self._storage_trie(address)
            keys = dirty
        for key in keys:
            value = slots.get(key, 0)
            if value:
                trie.put(key.to_bytes(32, "big"), encode_storage_value(value))
            else:
                trie.delete(key.to_bytes(32, "big"))
        nodes.update(trie.commit())
        self._storage_tries[address] = trie
        storage_root: Hash32 = trie.root_hash  # type: ignore[assignment]
        if storage_root != account.storage_root:
            account = Account(account.nonce, account.balance, storage_root, account.code_hash)
            self._accounts[address] = account
        self._trie.put(address, account.encode())


__all__ = ["RIPEMD160_ADDRESS", "ROOT_READS_KEPT", "RootReads", "State", "decode_storage_value", "encode_storage_value"]
