"""
Tests for L{nodex.state.state}: caches, the journal, per-transaction marks
and commits.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.crypto import EMPTY_KECCAK, keccak256
from nodex.primitives import Address
from nodex.state.errors import StateError
from nodex.state.state import RIPEMD160_ADDRESS, RootReads, State, decode_storage_value, encode_storage_value
from nodex.structures.accounts import EMPTY_TRIE_ROOT
from nodex.trie import BLANK_ROOT

ALICE = Address(b"\xaa" * 20)
BOB = Address(b"\xbb" * 20)


def memory_state() -> tuple[State, dict[bytes, bytes], dict[bytes, bytes]]:
    """
    An empty state over two dictionaries (trie nodes, code) that commits write into.
    """
    nodes: dict[bytes, bytes] = {}
    codes: dict[bytes, bytes] = {}
    return State(nodes.get, codes.get), nodes, codes


def persist(state: State, nodes: dict[bytes, bytes], codes: dict[bytes, bytes]) -> bytes:
    """
    Commit C{state} into the dictionaries and return the root.
    """
    root, new_nodes = state.commit()
    nodes.update(new_nodes)
    codes.update(state.new_codes)
    return root


class AccountTests(SynchronousTestCase):
    """
    Tests for account reads and writes.
    """

    def test_missing_account(self) -> None:
        """
        An address without an account reads as zero balance, nonce and code.
        """
        state, _, _ = memory_state()
        self.assertIsNone(state.get_account(ALICE))
        self.assertEqual((state.get_balance(ALICE), state.get_nonce(ALICE), state.get_code(ALICE)), (0, 0, b""))
        self.assertEqual(state.get_code_hash(ALICE), EMPTY_KECCAK)
        self.assertFalse(state.account_exists(ALICE))

    def test_transfer(self) -> None:
        """
        L{State.transfer} moves wei and creates the recipient.
        """
        state, _, _ = memory_state()
        state.set_balance(ALICE, 100)
        state.transfer(ALICE, BOB, 30)
        self.assertEqual((state.get_balance(ALICE), state.get_balance(BOB)), (70, 30))

    def test_zero_transfer_creates_nothing(self) -> None:
        """
        Moving zero wei does not create the recipient.
        """
        state, _, _ = memory_state()
        state.transfer(ALICE, BOB, 0)
        self.assertFalse(state.account_exists(BOB))

    def test_empty_state_root(self) -> None:
        """
        Committing an empty state gives the root of the empty trie.
        """
        state, _, _ = memory_state()
        self.assertEqual(state.commit()[0], BLANK_ROOT)

    def test_commit_and_reload(self) -> None:
        """
        A state reopened at a committed root reads what was committed.
        """
        state, nodes, codes = memory_state()
        state.set_balance(ALICE, 5)
        state.set_nonce(ALICE, 2)
        state.set_code(ALICE, b"\x60\x00")
        state.set_storage(ALICE, 1, 0x1234)
        root = persist(state, nodes, codes)
        reopened = State(nodes.get, codes.get, root)
        self.assertEqual(reopened.get_balance(ALICE), 5)
        self.assertEqual(reopened.get_nonce(ALICE), 2)
        self.assertEqual(reopened.get_code(ALICE), b"\x60\x00")
        self.assertEqual(reopened.get_storage(ALICE, 1), 0x1234)
        self.assertNotEqual(reopened.get_account(ALICE).storage_root, EMPTY_TRIE_ROOT)

    def test_account_change_keeps_storage(self) -> None:
        """
        A commit that changes an account with storage but none of its slots keeps its storage root, whether the
        storage was read since the last commit or not: the root is the one a state built at once gets.
        """
        for read_first in (False, True):
            state, nodes, codes = memory_state()
            state.set_balance(ALICE, 9)
            state.set_storage(ALICE, 1, 0x1234)
            state.set_storage(ALICE, 2, 7)
            state.set_balance(BOB, 1)
            first = persist(state, nodes, codes)
            storage_root = state.get_account(ALICE).storage_root
            if read_first:
                self.assertEqual(state.get_storage(ALICE, 2), 7)
            state.set_nonce(ALICE, 3)
            state.set_balance(BOB, 2)
            second = persist(state, nodes, codes)
            self.assertNotEqual(second, first)
            self.assertEqual(state.get_account(ALICE).storage_root, storage_root)
            at_once, _, _ = memory_state()
            at_once.set_balance(ALICE, 9)
            at_once.set_storage(ALICE, 1, 0x1234)
            at_once.set_storage(ALICE, 2, 7)
            at_once.set_nonce(ALICE, 3)
            at_once.set_balance(BOB, 2)
            self.assertEqual(at_once.commit()[0], second)
            reopened = State(nodes.get, codes.get, second)
            self.assertEqual((reopened.get_storage(ALICE, 1), reopened.get_nonce(ALICE)), (0x1234, 3))

    def test_account_encoding(self) -> None:
        """
        An account with balance 1 is stored as C{rlp([0, 1, empty root, empty code hash])}.
        """
        state, _, _ = memory_state()
        state.set_balance(ALICE, 1)
        state.commit()
        expected = bytes.fromhex(
            "f8448001a056e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421"
            "a0c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"
        )
        self.assertEqual(state.get_account(ALICE).encode(), expected)

    def test_missing_code(self) -> None:
        """
        Code that the store lacks is a L{StateError}, not a crash.
        """
        state, nodes, codes = memory_state()
        state.set_code(ALICE, b"\x00")
        root = persist(state, nodes, codes)
        codes.clear()
        self.assertRaises(StateError, State(nodes.get, codes.get, root).get_code, ALICE)

    def test_missing_trie_node(self) -> None:
        """
        A root whose nodes the store lacks is a L{StateError}.
        """
        state = State({}.get, {}.get, keccak256(b"nothing"))
        self.assertRaises(StateError, state.get_balance, ALICE)

    def test_storage_values(self) -> None:
        """
        Storage words encode as minimal RLP strings and decode back.
        """
        for value in (1, 0x7F, 0x80, 2**256 - 1):
            self.assertEqual(decode_storage_value(encode_storage_value(value)), value)
        self.assertRaises(StateError, decode_storage_value, b"\x85\x01")


class JournalTests(SynchronousTestCase):
    """
    Tests for snapshots and reverts.
    """

    def test_revert_restores_everything(self) -> None:
        """
        Reverting to a snapshot undoes balances, storage, code, transient
        storage and warm marks made after it.
        """
        state, _, _ = memory_state()
        state.set_balance(ALICE, 10)
        snapshot = state.snapshot()
        state.set_balance(ALICE, 20)
        state.set_storage(ALICE, 7, 8)
        state.set_code(ALICE, b"\x01")
        state.set_transient_storage(ALICE, 1, 2)
        state.mark_warm_address(BOB)
        state.mark_warm_slot(BOB, 3)
        state.revert(snapshot)
        self.assertEqual(state.get_balance(ALICE), 10)
        self.assertEqual(state.get_storage(ALICE, 7), 0)
        self.assertEqual(state.get_code(ALICE), b"")
        self.assertEqual(state.get_transient_storage(ALICE, 1), 0)
        self.assertFalse(state.is_warm_address(BOB))
        self.assertFalse(state.is_warm_slot(BOB, 3))

    def test_revert_account_changes_of_stored_accounts(self) -> None:
        """
        Each way of changing an account (balance, added balance, nonce,
        incremented nonce, code) is undone by a revert, for an account read
        from the trie or absent from it, whose first read is the change.
        """
        changes = [
            lambda state, address: state.set_balance(address, 5),
            lambda state, address: state.add_balance(address, 5),
            lambda state, address: state.set_nonce(address, 5),
            lambda state, address: state.increment_nonce(address),
            lambda state, address: state.set_code(address, b"\x60\x00"),
        ]
        base, nodes, codes = memory_state()
        base.set_balance(ALICE, 3)
        base.set_nonce(ALICE, 2)
        root = persist(base, nodes, codes)
        for change in changes:
            state = State(nodes.get, codes.get, root)
            snapshot = state.snapshot()
            change(state, ALICE)
            change(state, BOB)
            self.assertTrue(state.account_exists(BOB))
            state.revert(snapshot)
            self.assertEqual(state.get_account(ALICE), base.get_account(ALICE))
            self.assertIsNone(state.get_account(BOB))
            self.assertEqual(state.commit()[0], root)

    def test_nested_snapshots(self) -> None:
        """
        Reverting an inner snapshot keeps the changes made before it.
        """
        state, _, _ = memory_state()
        outer = state.snapshot()
        state.set_storage(ALICE, 1, 1)
        inner = state.snapshot()
        state.set_storage(ALICE, 1, 2)
        state.set_storage(ALICE, 2, 2)
        state.revert(inner)
        self.assertEqual((state.get_storage(ALICE, 1), state.get_storage(ALICE, 2)), (1, 0))
        state.revert(outer)
        self.assertEqual(state.get_storage(ALICE, 1), 0)

    def test_revert_account_deletion(self) -> None:
        """
        Reverting a deletion brings back the account and its storage.
        """
        state, nodes, codes = memory_state()
        state.set_balance(ALICE, 1)
        state.set_storage(ALICE, 1, 9)
        root = persist(state, nodes, codes)
        state = State(nodes.get, codes.get, root)
        snapshot = state.snapshot()
        state.destroy_account(ALICE)
        self.assertEqual(state.get_storage(ALICE, 1), 0)
        state.revert(snapshot)
        self.assertEqual(state.get_storage(ALICE, 1), 9)
        self.assertEqual(state.get_balance(ALICE), 1)


class TransactionMarksTests(SynchronousTestCase):
    """
    Tests for what lasts one transaction.
    """

    def test_warm_marks_report_cold(self) -> None:
        """
        Warming reports whether the address or slot was cold.
        """
        state, _, _ = memory_state()
        self.assertTrue(state.mark_warm_address(ALICE))
        self.assertFalse(state.mark_warm_address(ALICE))
        self.assertTrue(state.mark_warm_slot(ALICE, 1))
        self.assertFalse(state.mark_warm_slot(ALICE, 1))

    def test_warm_addresses_as_one_by_one(self) -> None:
        """
        L{State.warm_addresses} warms each address as L{State.mark_warm_address}
        does: repeated ones once, and a revert to a snapshot taken before
        makes the newly warmed cold again and leaves the already warm warm.
        """
        state, _, _ = memory_state()
        carol = Address(b"\x0c" * 20)
        state.mark_warm_address(ALICE)
        snapshot = state.snapshot()
        state.warm_addresses((ALICE, BOB, BOB, carol))
        self.assertTrue(all(state.is_warm_address(address) for address in (ALICE, BOB, carol)))
        self.assertFalse(state.mark_warm_address(BOB))
        state.revert(snapshot)
        self.assertTrue(state.is_warm_address(ALICE))
        self.assertFalse(state.is_warm_address(BOB))
        self.assertFalse(state.is_warm_address(carol))
        state.warm_addresses(())
        self.assertFalse(state.is_warm_address(BOB))

    def test_begin_transaction_clears(self) -> None:
        """
        A new transaction starts cold, with empty transient storage.
        """
        state, _, _ = memory_state()
        state.mark_warm_address(ALICE)
        state.set_transient_storage(ALICE, 1, 1)
        state.begin_transaction()
        self.assertFalse(state.is_warm_address(ALICE))
        self.assertEqual(state.get_transient_storage(ALICE, 1), 0)

    def test_original_storage(self) -> None:
        """
        The original value of a slot is the one it had when the transaction began.
        """
        state, _, _ = memory_state()
        state.set_storage(ALICE, 1, 5)
        state.begin_transaction()
        state.set_storage(ALICE, 1, 6)
        state.set_storage(ALICE, 1, 7)
        self.assertEqual(state.get_original_storage(ALICE, 1), 5)
        state.begin_transaction()
        self.assertEqual(state.get_original_storage(ALICE, 1), 7)

    def test_touched_empty_accounts_removed(self) -> None:
        """
        A touched account that is empty at the end of the transaction is deleted (EIP-161).
        """
        state, nodes, codes = memory_state()
        state.set_nonce(BOB, 0)
        state.set_balance(ALICE, 1)
        root = persist(state, nodes, codes)
        state = State(nodes.get, codes.get, root)
        self.assertTrue(state.account_exists(BOB))
        state.touch(BOB)
        state.touch(ALICE)
        state.finalize_transaction()
        self.assertFalse(state.account_exists(BOB))
        self.assertTrue(state.account_exists(ALICE))

    def test_reverted_touch(self) -> None:
        """
        A touch that is reverted does not delete the account.
        """
        state, _, _ = memory_state()
        state.set_nonce(BOB, 0)
        snapshot = state.snapshot()
        state.touch(BOB)
        state.revert(snapshot)
        state.finalize_transaction()
        self.assertTrue(state.account_exists(BOB))

    def test_ripemd_touch_survives_revert(self) -> None:
        """
        Touching the RIPEMD-160 precompile's account is never reverted.
        """
        state, _, _ = memory_state()
        state.set_nonce(RIPEMD160_ADDRESS, 0)
        snapshot = state.snapshot()
        state.touch(RIPEMD160_ADDRESS)
        state.revert(snapshot)
        state.finalize_transaction()
        self.assertFalse(state.account_exists(RIPEMD160_ADDRESS))

    def test_delete_listed_accounts(self) -> None:
        """
        The accounts handed to L{State.finalize_transaction} are deleted with their storage.
        """
        state, _, _ = memory_state()
        state.set_balance(ALICE, 1)
        state.set_storage(ALICE, 1, 1)
        state.finalize_transaction([ALICE])
        self.assertFalse(state.account_exists(ALICE))
        self.assertEqual(state.get_storage(ALICE, 1), 0)
        self.assertEqual(state.commit()[0], BLANK_ROOT)

    def test_created_marks(self) -> None:
        """
        Accounts marked created are remembered until the transaction ends.
        """
        state, _, _ = memory_state()
        state.mark_created(ALICE)
        self.assertTrue(state.is_created(ALICE))
        state.finalize_transaction()
        self.assertFalse(state.is_created(ALICE))

    def test_storage_collision(self) -> None:
        """
        An account with storage but no code or nonce still counts as having storage.
        """
        state, nodes, codes = memory_state()
        state.set_balance(ALICE, 1)
        state.set_storage(ALICE, 1, 1)
        root = persist(state, nodes, codes)
        state = State(nodes.get, codes.get, root)
        self.assertFalse(state.has_code_or_nonce(ALICE))
        self.assertTrue(state.has_storage(ALICE))
        state.destroy_storage(ALICE)
        self.assertFalse(state.has_storage(ALICE))


class StoreTests(SynchronousTestCase):
    """
    Tests for L{State.from_store}.
    """

    def test_round_trip_through_store(self) -> None:
        """
        Nodes and code written to a store's C{TRIE_NODES} and C{CODE} columns
        are what a state opened over that store reads.
        """
        from nodex.db.memory import MemoryStore
        from nodex.db.schema import CODE, TRIE_NODES

        store = MemoryStore()
        state = State.from_store(store)
        state.set_balance(ALICE, 5)
        state.set_code(ALICE, b"\x60\x01")
        state.set_storage(ALICE, 3, 4)
        root, nodes = state.commit()
        batch = store.batch()
        for node_hash, node in nodes.items():
            batch.put(TRIE_NODES, node_hash, node)
        for code_hash, code in state.new_codes.items():
            batch.put(CODE, code_hash, code)
        store.write(batch)
        reopened = State.from_store(store, root)
        self.assertEqual(reopened.get_balance(ALICE), 5)
        self.assertEqual(reopened.get_code(ALICE), b"\x60\x01")
        self.assertEqual(reopened.get_storage(ALICE, 3), 4)


class RootReadsTests(SynchronousTestCase):
    """
    Tests for L{RootReads}: what the states of one root read there, for the
    next state of that root.
    """

    def setUp(self) -> None:
        state, self.nodes, self.codes = memory_state()
        state.set_balance(ALICE, 5)
        state.set_storage(ALICE, 1, 7)
        state.set_storage(ALICE, 2, 8)
        self.root = persist(state, self.nodes, self.codes)

    def opened(self, reads: RootReads) -> State:
        """
        A state of the root, over the dictionaries, with C{reads}.
        """
        return State(self.nodes.get, self.codes.get, self.root, root_reads=reads)

    def test_records_reads_not_changes(self) -> None:
        """
        A state records the accounts and slots it reads from its root's
        tries, as they are there, never the values it changes them to; once
        it commits (its tries are of another root) it records nothing more.
        """
        reads = RootReads(self.root)
        state = self.opened(reads)
        state.set_balance(ALICE, 9)
        state.set_storage(ALICE, 1, 70)
        self.assertEqual(state.get_balance(BOB), 0)
        self.assertEqual(reads.accounts[ALICE].balance, 5)
        self.assertIsNone(reads.accounts[BOB])
        self.assertEqual(reads.storage, {ALICE: {1: 7}})
        state.commit()
        self.assertEqual(state.get_storage(ALICE, 2), 8)
        self.assertEqual(reads.storage, {ALICE: {1: 7}})

    def test_next_state_starts_with_them(self) -> None:
        """
        The next state of the root starts with the reads (without walking
        the tries: here, with no trie nodes at all), changes its own copies,
        and commits to the root a state without them would.
        """
        reads = RootReads(self.root)
        first = self.opened(reads)
        self.assertEqual(first.get_storage(ALICE, 1), 7)
        first.set_balance(ALICE, 1)
        first.set_storage(ALICE, 1, 0)
        first_root, _ = first.commit()
        second = State({}.get, self.codes.get, self.root, root_reads=reads)
        self.assertEqual(second.get_balance(ALICE), 5)
        self.assertEqual(second.get_storage(ALICE, 1), 7)
        third = self.opened(reads)
        third.set_balance(ALICE, 1)
        third.set_storage(ALICE, 1, 0)
        self.assertEqual(third.commit()[0], first_root)
        self.assertEqual(reads.storage, {ALICE: {1: 7}})
        self.assertEqual(reads.accounts[ALICE].balance, 5)

    def test_other_root_refused(self) -> None:
        """
        Reads of another root are refused.
        """
        self.assertRaises(ValueError, self.opened, RootReads(BLANK_ROOT))

    def test_bounded(self) -> None:
        """
        At most L{ROOT_READS_KEPT} accounts and slots are recorded; past
        that the state reads as usual.
        """
        import nodex.state.state as module

        module.ROOT_READS_KEPT, kept = 2, module.ROOT_READS_KEPT
        self.addCleanup(setattr, module, "ROOT_READS_KEPT", kept)
        reads = RootReads(self.root)
        state = self.opened(reads)
        self.assertEqual(state.get_storage(ALICE, 1), 7)
        self.assertEqual(state.get_storage(ALICE, 2), 8)
        self.assertEqual(state.get_balance(BOB), 0)
        self.assertEqual(reads.size, 2)
        self.assertEqual(len(reads.accounts) + sum(len(slots) for slots in reads.storage.values()), 2)
