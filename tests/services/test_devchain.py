"""
Tests for L{nodex.services.devchain}, L{nodex.chain.dev.blocks},
L{nodex.chain.dev.state} and the importer's runs of empty blocks, on a
memory store with the chain service run synchronously.
"""

from dataclasses import replace

from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase
from zope.interface.verify import verifyObject

from nodex.chain.aside import FILE
from nodex.chain.dev.blocks import empty_blocks
from nodex.chain.building.making import BlockTime, EmptyRun, NotDueError
from nodex.chain.dev.state import SNAPSHOT_FORMAT, SnapshotError, dump_state, load_state
from nodex.chain.importer import BlockImporter
from nodex.db.schema import trie_node_reader
from nodex.api.devchain import IDevChain
from nodex.primitives import Address
from nodex.services.blocktime import BlockClock
from nodex.services.chain import ChainService
from nodex.services.devchain import DevChain, Impersonation
from nodex.api.errors import DevChainInputError
from nodex.services.miner import Miner
from nodex.state.state import State
from tests.chain.test_processing import COINBASE, sample_rules, sample_store, transfer
from nodex.api.chain import ImportResult
from tests.services.test_miner import FakePool, make_miner

TARGET = Address(b"\x42" * 20)


def dev_chain(chain: ChainService, miner: Miner, pool: FakePool, impersonation: Impersonation | None = None) -> DevChain:
    """
    The dev chain of C{chain}, writing through it, with C{miner}'s block clock.
    """
    return DevChain(chain, chain, miner, pool, miner.block_clock, impersonation)


class EmptyRunTests(SynchronousTestCase):
    """
    Runs of empty blocks: built from headers, checked and stored by the importer.
    """

    def setUp(self) -> None:
        """
        An importer over a sample chain at genesis (regtest's time rules).
        """
        self.store, self.genesis = sample_store()
        self.rules = replace(sample_rules(), max_seconds_in_future=None)
        self.importer = BlockImporter(self.store, self.rules)

    def test_run(self) -> None:
        """
        A run extends the chain in batches; each block keeps the state root,
        follows its parent by the interval, and the event adopts the whole run.
        """
        step = self.importer.make(EmptyRun(COINBASE, BlockTime(100, 0), 2500, 7))
        blocks = step.event.adopted
        self.assertEqual(self.importer.tip.header.number, 2500)
        self.assertEqual(step.head, self.importer.tip)
        self.assertEqual(len(blocks), 2500)
        self.assertEqual([b.header.timestamp for b in blocks[:3]], [100, 107, 114])
        self.assertEqual({b.header.state_root for b in blocks}, {self.genesis.state_root})
        # A block built by the ordinary importer path on top still validates.
        following = next(empty_blocks(blocks[-1].header, 1, 0, 1, COINBASE, self.rules))
        self.assertEqual(self.importer.import_blocks([following], None, FILE)[0].result, ImportResult.IMPORTED_BEST)

    def test_run_imports_elsewhere(self) -> None:
        """
        The blocks of a run are valid blocks: another node imports them.
        """
        blocks = self.importer.make(EmptyRun(COINBASE, BlockTime(100, 0), 3, 1)).event.adopted
        other_store, _ = sample_store()
        other = BlockImporter(other_store, self.rules)
        steps = other.import_blocks(blocks, None, FILE)
        self.assertEqual([step.result for step in steps], [ImportResult.IMPORTED_BEST] * 3)


class SnapshotTests(SynchronousTestCase):
    """
    State snapshots: dump, load, refusals.
    """

    def test_round_trip(self) -> None:
        """
        A snapshot loaded on an empty state gives the dumped root.
        """
        state = State({}.get, {}.get)
        state.set_balance(TARGET, 5)
        state.set_code(TARGET, b"\x60\x00")
        state.set_storage(TARGET, 3, 9)
        state.set_nonce(Address(b"\x43" * 20), 2)
        root, nodes = state.commit()
        codes = dict(state.new_codes)
        snapshot = dump_state(nodes.get, codes.get, root, 33, 7)
        self.assertEqual((snapshot["format"], snapshot["chainId"], snapshot["blockNumber"]), (SNAPSHOT_FORMAT, "0x21", "0x7"))
        self.assertEqual(len(snapshot["accounts"]), 2)
        new_root, new_nodes, new_codes = load_state({}.get, State({}.get, {}.get).commit()[0], snapshot)
        self.assertEqual(new_root, root)
        self.assertEqual(new_codes, {k: v for k, v in codes.items() if v})

    def test_refusals(self) -> None:
        """
        Malformed snapshots are refused with a message naming the place.
        """
        empty = State({}.get, {}.get).commit()[0]
        key = "0x" + "11" * 32
        cases = [
            ([], "JSON object"),
            ({"format": "other"}, "format"),
            ({"format": SNAPSHOT_FORMAT, "accounts": []}, "accounts"),
            ({"format": SNAPSHOT_FORMAT, "accounts": {"0x12": {}}}, "want 32 bytes"),
            ({"format": SNAPSHOT_FORMAT, "accounts": {key: {"colour": 1}}}, "unknown field"),
            ({"format": SNAPSHOT_FORMAT, "accounts": {key: {"nonce": "0x1" + "0" * 16}}}, "64 bits"),
            ({"format": SNAPSHOT_FORMAT, "accounts": {key: {"balance": "12"}}}, "hex quantity"),
            ({"format": SNAPSHOT_FORMAT, "accounts": {key: {"code": "0xzz"}}}, "not hex"),
        ]
        for snapshot, words in cases:
            exc = self.assertRaises(SnapshotError, load_state, {}.get, empty, snapshot)
            self.assertIn(words, str(exc), snapshot)


class DevChainTests(SynchronousTestCase):
    """
    Tests for L{DevChain} over a synchronous chain service and miner.
    """

    def setUp(self) -> None:
        """
        A chain at genesis, a clock at 1000, a manual miner and a fake pool.
        """
        self.clock = Clock()
        self.clock.advance(1000)
        self.store, self.genesis = sample_store()
        self.chain = ChainService(self.store, replace(sample_rules(), max_seconds_in_future=None), self.clock)
        self.pool = FakePool()
        self.miner = make_miner(self.chain, COINBASE, "manual", self.clock, self.pool)
        self.dev = dev_chain(self.chain, self.miner, self.pool)
        self.events: list = []
        self.chain.add_observer(self.events.append)

    def state(self) -> State:
        """
        The head's state.
        """
        return State.from_store(self.store, self.chain.head.header.state_root)

    def test_interface(self) -> None:
        """
        L{DevChain} provides L{IDevChain}.
        """
        self.assertTrue(verifyObject(IDevChain, self.dev))

    def test_impersonation(self) -> None:
        """
        Impersonated accounts are those named one by one, or every account
        while automatic impersonation is on; stopping says whether the
        account was impersonated.
        """
        impersonation = Impersonation()
        dev = dev_chain(self.chain, self.miner, self.pool, impersonation)
        other = Address(b"\x44" * 20)
        self.assertFalse(impersonation.is_impersonated(TARGET))
        dev.impersonate_account(other)
        dev.impersonate_account(TARGET)
        self.assertEqual(impersonation.addresses(), [other, TARGET])
        self.assertTrue(dev.stop_impersonating_account(other))
        self.assertTrue(impersonation.is_impersonated(TARGET))
        self.assertFalse(impersonation.is_impersonated(other))
        dev.set_auto_impersonate(True)
        self.assertTrue(impersonation.is_impersonated(other))
        dev.set_auto_impersonate(False)
        self.assertTrue(dev.stop_impersonating_account(TARGET))
        self.assertFalse(dev.stop_impersonating_account(TARGET))
        self.assertFalse(impersonation.is_impersonated(TARGET))

    def test_setters_write_blocks(self) -> None:
        """
        Each setter writes one block whose state holds the change.
        """
        self.successResultOf(self.dev.set_balance(TARGET, 77))
        self.successResultOf(self.dev.set_nonce(TARGET, 4))
        self.successResultOf(self.dev.set_code(TARGET, b"\x00"))
        self.successResultOf(self.dev.set_storage_at(TARGET, 1, 2))
        self.assertEqual(self.chain.head.header.number, 4)
        state = self.state()
        self.assertEqual((state.get_balance(TARGET), state.get_nonce(TARGET)), (77, 4))
        self.assertEqual((state.get_code(TARGET), state.get_storage(TARGET, 1)), (b"\x00", 2))
        self.assertEqual(len(self.events), 4)
        self.assertEqual(self.chain.head.header.timestamp, 1003)

    def test_mine_uses_miner_time(self) -> None:
        """
        hardhat_mine starts at the set next timestamp, then follows the interval.
        """
        self.dev.set_next_block_timestamp(5000)
        last = self.successResultOf(self.dev.mine(10, 12))
        self.assertEqual((last.number, last.header.timestamp), (10, 5000 + 9 * 12))
        self.assertEqual(len(self.events[-1].adopted), 10)
        self.assertIsNone(self.successResultOf(self.dev.mine(0, 1)))

    def test_mine_takes_pending_transactions(self) -> None:
        """
        The pool's pending transactions go into the first block, as Hardhat
        and Anvil mine them (a fixture that sends with automining off and
        then calls C{mine()} waits for them); the other blocks are empty,
        C{interval} seconds apart.
        """
        sent = transfer(0, 0)
        self.pool.transactions = [sent]
        self.chain.add_observer(lambda event: self.pool.remove([tx.hash for b in event.adopted for tx in b.transactions]))
        last = self.successResultOf(self.dev.mine(3, 10))
        first = self.successResultOf(self.chain.get_block_by_number(1))
        self.assertEqual((first.transactions, last.number), ((sent,), 3))
        self.assertEqual(last.header.timestamp - first.header.timestamp, 20)
        self.assertEqual(self.pool.pending(), [])

    def test_mine_interval_zero(self) -> None:
        """
        An interval of 0 (viem's test client always sends one) mines the
        blocks one second apart, the least a timestamp may grow, as Anvil does.
        """
        self.dev.set_next_block_timestamp(5000)
        last = self.successResultOf(self.dev.mine(3, 0))
        self.assertEqual((last.number, last.header.timestamp), (3, 5002))

    def test_mine_refusals(self) -> None:
        """
        Too many blocks at once and a timestamp not after the head are refused.
        """
        exc = self.assertRaises(DevChainInputError, self.dev.mine, 200_001, 1)
        self.assertIn("at most 200000 per call", str(exc))
        self.assertRaises(DevChainInputError, self.dev.set_next_block_timestamp, 0)

    def test_mine_refused_where_seals_are_dear(self) -> None:
        """
        A chain whose difficulty is above the cheap-seal bound refuses runs of blocks.
        """
        store, _ = sample_store(difficulty=1000)
        chain = ChainService(store, sample_rules(), self.clock)
        dev = dev_chain(chain, make_miner(chain, COINBASE, "manual", self.clock), FakePool())
        exc = self.assertRaises(DevChainInputError, dev.mine, 5, 1)
        self.assertIn("difficulty 1000", str(exc))

    def test_next_timestamp_mined_block(self) -> None:
        """
        The next block mined by the miner gets the set timestamp; the one after follows the clock.
        """
        self.dev.set_next_block_timestamp(4242)
        self.assertEqual(self.successResultOf(self.miner.mine()).header.timestamp, 4242)
        self.assertEqual(self.successResultOf(self.miner.mine()).header.timestamp, 4243)

    def test_lasting_time_shift(self) -> None:
        """
        With the Ethereum conventions' time, a shift lasts for every later
        block, and after a set timestamp time goes on from it; the chain
        time can be put back (C{evm_revert}).
        """
        miner = Miner(
            self.chain, self.pool, COINBASE, "manual", self.clock, BlockClock(self.clock, self.chain.rules, lasting_shift=True)
        )
        miner.increase_time(100)
        self.assertEqual(self.successResultOf(miner.mine()).header.timestamp, 1100)
        self.clock.advance(10)
        self.assertEqual(self.successResultOf(miner.mine()).header.timestamp, 1110)
        self.assertEqual(miner.chain_time(), 1110)
        miner.block_clock.set_next(5000)
        self.assertEqual(self.successResultOf(miner.mine()).header.timestamp, 5000)
        self.clock.advance(7)
        self.assertEqual(self.successResultOf(miner.mine()).header.timestamp, 5007)
        miner.set_chain_time(6000)
        self.clock.advance(3)
        self.assertEqual(self.successResultOf(miner.mine()).header.timestamp, 6003)

    def test_reference_time_shift(self) -> None:
        """
        By the reference's rule, a shift is for the next block only.
        """
        self.miner.increase_time(100)
        self.assertEqual(self.successResultOf(self.miner.mine()).header.timestamp, 1100)
        self.clock.advance(10)
        self.assertEqual(self.successResultOf(self.miner.mine()).header.timestamp, 1101)

    def test_modes(self) -> None:
        """
        Automine and interval mining switch the miner's mode.
        """
        self.assertFalse(self.dev.get_automine())
        self.dev.set_automine(True)
        self.assertEqual(self.miner.mode, "auto")
        self.assertTrue(self.dev.get_automine())
        self.dev.set_interval_mining(1500)
        self.assertEqual((self.miner.mode, self.miner.interval), ("interval", 1.5))
        self.assertFalse(self.dev.get_automine())
        self.dev.set_interval_mining(0)
        self.assertEqual(self.miner.mode, "manual")
        self.dev.set_automine(False)
        self.assertEqual(self.miner.mode, "manual")

    def test_gas_limit_and_coinbase(self) -> None:
        """
        The gas limit and the coinbase apply to the next block.
        """
        self.successResultOf(self.dev.set_block_gas_limit(12_345_678))
        self.dev.set_coinbase(TARGET)
        header = self.successResultOf(self.miner.mine()).header
        self.assertEqual((header.gas_limit, header.coinbase), (12_345_678, TARGET))
        self.assertRaises(DevChainInputError, self.dev.set_block_gas_limit, 20_000)

    def test_drop(self) -> None:
        """
        A pooled transaction is dropped; an unknown one is not.
        """
        transaction = transfer(0, 0)
        self.pool.transactions.append(transaction)
        self.assertTrue(self.successResultOf(self.dev.drop_transaction(transaction.hash)))
        self.assertFalse(self.successResultOf(self.dev.drop_transaction(transaction.hash)))

    def test_dump_and_load(self) -> None:
        """
        A dump of one chain loaded into another with the same genesis gives the same root.
        """
        self.successResultOf(self.dev.set_balance(TARGET, 99))
        snapshot = self.successResultOf(self.dev.dump_state())
        store, _ = sample_store()
        other = ChainService(store, sample_rules(), self.clock)
        other_dev = dev_chain(other, make_miner(other, COINBASE, "manual", self.clock), FakePool())
        self.successResultOf(other_dev.load_state(snapshot))
        self.assertEqual(other.head.header.state_root, self.chain.head.header.state_root)
        failure = self.failureResultOf(other_dev.load_state({"format": "x"}), DevChainInputError)
        self.assertIn("format", str(failure.value))
        # A block after the load builds on the loaded state.
        other_dev_block = self.successResultOf(other_dev.set_nonce(TARGET, 1))
        self.assertEqual(State.from_store(store, other_dev_block.header.state_root).get_balance(TARGET), 99)
        self.assertIsNotNone(trie_node_reader(store)(other.head.header.state_root))


class DriftLimitDevChainTests(SynchronousTestCase):
    """
    The dev controls on a network with a drift limit (devnet): the clock
    moves only as far as the network's nodes accept.
    """

    def setUp(self) -> None:
        """
        A chain whose rules allow 60 s of drift, a clock at 1000.
        """
        self.clock = Clock()
        self.clock.advance(1000)
        store, _ = sample_store()
        self.chain = ChainService(store, sample_rules(), self.clock)
        self.miner = make_miner(self.chain, COINBASE, "manual", self.clock)
        self.dev = dev_chain(self.chain, self.miner, FakePool())

    def test_time_within_the_limit(self) -> None:
        """
        A next timestamp beyond the limit is refused, one within it stamps the next block.
        """
        self.assertRaises(DevChainInputError, self.dev.set_next_block_timestamp, 1061)
        self.dev.set_next_block_timestamp(1060)
        self.assertEqual(self.successResultOf(self.miner.mine()).header.timestamp, 1060)

    def test_setter_blocks_within_the_limit(self) -> None:
        """
        State setters' blocks, one on the other within the same second, stop
        at the limit: the next fails with the time it is due.
        """
        for _ in range(61):
            self.successResultOf(self.dev.set_balance(TARGET, 1))
        self.assertEqual(self.chain.head.header.timestamp, 1060)
        self.failureResultOf(self.dev.set_balance(TARGET, 2), NotDueError)
