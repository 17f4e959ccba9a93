"""
Tests for L{nodex.services.miner}.
"""

import io
import json
from dataclasses import replace
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from twisted.internet.defer import Deferred, inlineCallbacks, maybeDeferred, succeed
from twisted.internet.task import Clock
from twisted.logger import Logger, formatEvent
from twisted.trial.unittest import SynchronousTestCase, TestCase
from zope.interface import implementer
from zope.interface.verify import verifyObject

from nodex.chain.dev.blocks import SealSearchError
from nodex.chain.difficulty import DifficultyRules
from nodex.chain.networks import REGTEST_MINER_ADDRESS
from nodex.chain.processing import validate_header
from nodex.db.schema import read_canonical_hash
from nodex.crypto import keccak256
from nodex.api.chain import ImportResult
from nodex.api.mining import IMiner
from nodex.api.pool import ITransactionPool
from nodex.primitives import Hash32
from nodex.chain.admission import AdmissionRules
from nodex.chain.errors import TransactionRejectedError
from nodex.chain.building.making import LoneAdmission
from nodex.chain.outcomes import Imported
from nodex.services.blocktime import BlockClock
from nodex.services.chain import ChainService
from nodex.api.errors import DevChainInputError
from nodex.services.miner import (
    CHEAP_SEAL_DIFFICULTY,
    MINED_LOG_INTERVAL,
    SEAL_BATCH_NONCES,
    MiningStoppedError,
    SMALL_BLOCK_GAS,
    Miner,
    MiningModeError,
    SealNotFoundError,
    order_candidates,
    parse_mining_mode,
)
from nodex.structures.transactions import LegacyTransaction, Transaction, sign_transaction
from nodex.node import NodeService
from nodex.tap import Options, makeService
from tests.chain.test_processing import COINBASE, KEYS, fee_market_transfer, sample_rules, sample_store, transfer
from tests.chain.chainmaker import import_one

ADMISSION = LoneAdmission(AdmissionRules(sample_rules().chain_id))


@implementer(ITransactionPool)
class FakePool:
    """
    A pool that hands out the transactions it is given, in that order, and
    records what the miner removes.
    """

    def __init__(self, transactions: Iterable[Transaction] = ()) -> None:
        """
        @param transactions: the pending transactions.
        """
        self.transactions = list(transactions)
        self.removed: list[bytes] = []
        self.watchers: list[Any] = []

    def add(self, transaction: Transaction, relayed: bool = False) -> Deferred[Hash32]:
        """
        Keep C{transaction} (from a client or a peer alike).
        """
        self.transactions.append(transaction)
        return succeed(transaction.hash)

    def __len__(self) -> int:
        """
        How many transactions are kept.
        """
        return len(self.transactions)

    def get(self, tx_hash: bytes) -> Transaction | None:
        """
        A kept transaction by hash.
        """
        return next((tx for tx in self.transactions if tx.hash == tx_hash), None)

    def pending(self) -> list[Transaction]:
        """
        Every kept transaction.
        """
        return list(self.transactions)

    def queued(self) -> list[Transaction]:
        """
        Nothing is queued.
        """
        return []

    def next_nonce(self, address: bytes) -> Deferred[int]:
        """
        Not needed by the miner.
        """
        return succeed(0)

    def add_observer(self, observer: Callable[[Transaction], None]) -> None:
        """
        Not needed by the miner.
        """

    def clear(self) -> None:
        """
        Drop everything.
        """
        self.transactions = []

    def remove(self, tx_hashes: Iterable[bytes]) -> None:
        """
        Drop and record C{tx_hashes}.
        """
        hashes = list(tx_hashes)
        self.removed.extend(hashes)
        self.transactions = [tx for tx in self.transactions if tx.hash not in hashes]

    def watch_for_miner(self, automining: Any) -> None:
        """
        Record the automining that watches the pool.
        """
        self.watchers.append(automining)


def make_miner(
    chain: ChainService, coinbase: bytes, mode: str, clock: Clock, pool: FakePool | None = None, **keywords: Any
) -> Miner:
    """
    A miner of C{mode} writing to C{chain}, its blocks timed by C{clock}.
    """
    return Miner(
        chain, FakePool() if pool is None else pool, coinbase, mode, clock, BlockClock(clock, chain.rules), **keywords
    )


class MinerTests(SynchronousTestCase):
    """
    Tests for L{Miner}.
    """

    def setUp(self) -> None:
        """
        A chain at genesis, a clock at 1000 and an empty fake pool.
        """
        self.clock = Clock()
        self.clock.advance(1000)
        self.store, self.genesis = sample_store()
        # Regtest's time rules: no drift limit (DriftLimitTests has one).
        self.chain = ChainService(self.store, replace(sample_rules(), max_seconds_in_future=None), self.clock)
        self.pool = FakePool()
        self.blocks: list = []
        self.chain.add_observer(lambda event: self.blocks.extend(event.adopted))
        self.pool_transactions_removed_on_event = True

    def miner(self, mode: str = "manual") -> Miner:
        """
        A miner of C{mode} on the test chain and pool.
        """
        return make_miner(self.chain, COINBASE, mode, self.clock, self.pool)

    def test_interface(self) -> None:
        """
        The miner provides L{IMiner} and the pool fake provides L{ITransactionPool}.
        """
        miner = self.miner()
        self.assertTrue(verifyObject(IMiner, miner))
        self.assertTrue(verifyObject(ITransactionPool, self.pool))

    def test_mine_empty(self) -> None:
        """
        Mining with an empty pool produces a valid, sealed empty block on the head.
        """
        block = self.successResultOf(self.miner().mine())
        self.assertEqual((block.number, block.transactions, block.header.coinbase), (1, (), COINBASE))
        self.assertEqual(block.header.timestamp, 1000)
        self.assertEqual(block.header.gas_limit, 30_000_000)
        validate_header(self.genesis, block.header, sample_rules())
        self.assertEqual(self.chain.head.header, block.header)

    def test_mine_pending(self) -> None:
        """
        Pending transactions are mined; invalid ones are removed from the pool.
        """
        good = transfer(0, 0)
        stale = transfer(1, 0, value=10**31)
        self.pool.transactions = [good, stale]
        block = self.successResultOf(self.miner().mine())
        self.assertEqual(block.transactions, (good,))
        self.assertEqual(self.pool.removed, [stale.hash])

    def test_no_empty_block_unless_wanted(self) -> None:
        """
        With C{empty=False} the miner stores nothing when none of the
        candidates can go in a block (another block brought them, or there
        are none), and keeps the time offset for the next block.
        """
        pending = transfer(0, 0)
        self.pool.transactions = [pending]
        rival = self.successResultOf(make_miner(self.chain, REGTEST_MINER_ADDRESS, "manual", self.clock, FakePool([pending])).mine())
        miner = self.miner()
        miner.increase_time(30)
        self.assertIsNone(self.successResultOf(miner.mine(empty=False)))
        self.pool.transactions = []
        self.assertIsNone(self.successResultOf(miner.mine(empty=False)))
        self.assertEqual((self.chain.head.header, miner.time_offset), (rival.header, 30))
        self.pool.transactions = [transfer(0, 1)]
        self.assertEqual(len(self.successResultOf(miner.mine(empty=False)).transactions), 1)

    def test_consecutive_blocks(self) -> None:
        """
        Each block builds on the previous one, one second later at least.
        """
        miner = self.miner()
        first = self.successResultOf(miner.mine())
        second = self.successResultOf(miner.mine())
        self.assertEqual(second.header.parent_hash, first.hash)
        self.assertEqual(second.header.timestamp, 1001)

    def test_increase_time(self) -> None:
        """
        The time offset adds to the next block's timestamp once, and accumulates until then.
        """
        miner = self.miner()
        self.assertEqual(miner.increase_time(60), 60)
        self.assertEqual(miner.increase_time(0), 60)
        self.assertEqual(miner.increase_time(-5), 60)
        self.assertEqual(miner.increase_time(40), 100)
        first = self.successResultOf(miner.mine())
        self.assertEqual(first.header.timestamp, 1100)
        self.assertEqual(miner.time_offset, 0)
        second = self.successResultOf(miner.mine())
        self.assertEqual(second.header.timestamp, 1101)

    def test_time_beyond_64_bits_refused(self) -> None:
        """
        An offset or a set timestamp that would stamp the next block past
        2**64 - 1 is refused and changes nothing; the next block is as before.
        """
        miner = self.miner()
        miner.increase_time(60)
        self.assertRaises(DevChainInputError, miner.increase_time, 2**80)
        self.assertRaises(DevChainInputError, miner.block_clock.set_next, 2**64 - 30)
        self.assertEqual(miner.time_offset, 60)
        self.assertEqual(self.successResultOf(miner.mine()).header.timestamp, 1060)

    def test_modes(self) -> None:
        """
        Auto and interval mine on their own; manual and off do not.
        """
        self.assertEqual([self.miner(mode).is_mining for mode in ("auto", "interval:2", "manual", "off")],
                         [True, True, False, False])
        self.assertEqual(self.miner("interval:2.5").mode, "interval")

    def test_start_stop(self) -> None:
        """
        Stopping suspends automatic mining and starting resumes it.
        """
        miner = self.miner("auto")
        miner.stop()
        self.assertFalse(miner.is_mining)
        miner.start()
        self.assertTrue(miner.is_mining)

    def test_mine_alone(self) -> None:
        """
        L{Miner.mine_alone} admits its transaction by the pool's rules on
        the head's state and mines a block of it alone, whatever the pool
        holds; it fires with nothing once the block is stored.
        """
        miner = self.miner("auto")
        other, tx = transfer(0, 0), transfer(1, 0)
        self.pool.transactions = [other]
        self.assertIsNone(self.successResultOf(miner.mine_alone(tx, ADMISSION)))
        self.assertEqual(self.blocks[-1].transactions, (tx,))
        self.assertEqual(self.chain.head.header, self.blocks[-1].header)

    def test_mine_alone_observers_after_the_answer(self) -> None:
        """
        While the RPC edge holds the chain's follow-ups (an answer is being
        computed), the block of a transaction mined alone is stored and the
        head moves before C{mine_alone} fires, and the chain's observers are
        told when the hold ends; a block mined otherwise is told at once.
        """
        miner = self.miner("auto")
        follow_ups = self.chain.follow_ups
        follow_ups.hold()
        alone = transfer(0, 0)
        self.assertIsNone(self.successResultOf(miner.mine_alone(alone, ADMISSION)))
        self.assertEqual((self.chain.head.header.number, self.blocks), (1, []))
        # The block is stored; the cache of recent blocks takes it after the answer too.
        self.assertIsNotNone(read_canonical_hash(self.store, 1))
        self.assertIsNone(self.chain._recent_location(alone.hash))  # type: ignore[attr-defined]
        self.successResultOf(miner.mine(empty=True))
        self.assertEqual([block.number for block in self.blocks], [2])
        follow_ups.release()
        self.assertEqual([block.number for block in self.blocks], [2, 1])
        self.assertEqual(self.chain._recent_location(alone.hash)[2], 0)  # type: ignore[attr-defined]
        self.successResultOf(miner.mine_alone(transfer(0, 1), ADMISSION))
        self.assertEqual([block.number for block in self.blocks], [2, 1, 3])

    def test_mine_alone_made_at_once_read(self) -> None:
        """
        A block the writer made at once (its Deferred fired with the step):
        C{mine_alone} fires at once, and the step is read from the writer's
        Deferred, which keeps it (no callback added to it); an error after
        the block was made fails C{mine_alone}'s result.
        """
        miner = self.miner("auto")
        made: list[Deferred[Any]] = []
        make = self.chain.make

        def making(*args: Any, **kwargs: Any) -> Deferred[Any]:
            made.append(make(*args, **kwargs))
            return made[-1]

        self.chain.make = making  # type: ignore[method-assign]
        self.assertIsNone(self.successResultOf(miner.mine_alone(transfer(0, 0), ADMISSION)))
        self.assertIs(type(made[0].result), Imported)
        self.assertEqual(made[0].result.block.number, 1)

        def broken(*args: Any) -> None:
            raise ZeroDivisionError()

        miner._mined = broken  # type: ignore[method-assign]
        self.failureResultOf(miner.mine_alone(transfer(0, 1), ADMISSION), ZeroDivisionError)
        self.assertEqual(self.chain.head.header.number, 2)

    def test_mine_alone_small_blocks(self) -> None:
        """
        The block of a transaction of at most L{SMALL_BLOCK_GAS} is a small
        writer job (built at once when the writer is idle); a heavier one
        goes through the writer thread.
        """
        runs: list[str] = []

        class Writers:
            def run_writer(self, function: Any, *args: Any) -> Deferred[Any]:
                runs.append("writer")
                return maybeDeferred(function, *args)

            def run_writer_small(self, function: Any, *args: Any) -> Deferred[Any]:
                runs.append("small")
                return maybeDeferred(function, *args)

            def run_reader(self, function: Any, *args: Any) -> Deferred[Any]:
                return maybeDeferred(function, *args)

        chain = ChainService(self.store, sample_rules(), self.clock, threads=Writers())  # type: ignore[arg-type]
        miner = make_miner(chain, COINBASE, "auto", self.clock, self.pool)
        light = transfer(0, 0)
        heavy = sign_transaction(
            LegacyTransaction(1, 1, SMALL_BLOCK_GAS + 1, light.to, 1, b""), KEYS[0], sample_rules().chain_id
        )
        self.successResultOf(miner.mine_alone(light, ADMISSION))
        self.successResultOf(miner.mine_alone(heavy, ADMISSION))
        self.assertEqual(runs, ["small", "writer"])

    def test_mine_alone_declined(self) -> None:
        """
        A transaction whose nonce is ahead is not mined: the miner answers
        its sender's nonce and balance (the pool queues it), and the time
        offset stays for the next block; one that breaks an admission rule
        fails with the pool's refusal and nothing is mined.
        """
        miner = self.miner("auto")
        miner.increase_time(100)
        nonce, balance = self.successResultOf(miner.mine_alone(transfer(0, 3), ADMISSION))
        self.assertEqual((nonce, balance > 0), (0, True))
        self.assertEqual(miner.time_offset, 100)
        failure = self.failureResultOf(miner.mine_alone(transfer(0, 0, value=10**40), ADMISSION), TransactionRejectedError)
        self.assertEqual(failure.getErrorMessage(), "insufficient funds")
        self.assertEqual((self.blocks, miner.time_offset), ([], 100))
        parent = self.chain.head.header
        self.assertIsNone(self.successResultOf(miner.mine_alone(transfer(0, 0), ADMISSION)))
        self.assertGreaterEqual(self.blocks[-1].header.timestamp, parent.timestamp + 100)
        self.assertEqual(miner.time_offset, 0)

    def test_interval(self) -> None:
        """
        In interval mode a block appears every N seconds while the service
        runs and mining is on.
        """
        miner = self.miner("interval:5")
        miner.startService()
        self.clock.advance(4)
        self.assertEqual(self.blocks, [])
        self.clock.advance(1)
        self.assertEqual(len(self.blocks), 1)
        miner.stop()
        self.clock.advance(20)
        self.assertEqual(len(self.blocks), 1)
        miner.start()
        self.clock.advance(5)
        self.assertEqual(len(self.blocks), 2)
        miner.stopService()
        self.clock.advance(20)
        self.assertEqual(len(self.blocks), 2)

    def test_interval_failure_logged(self) -> None:
        """
        A failing block in interval mode is logged and the loop goes on.
        """
        miner = self.miner("interval:1")
        broken = FakePool()
        broken.pending = lambda: 1 / 0  # type: ignore[assignment,method-assign,return-value]
        miner.pool = broken
        miner.startService()
        self.addCleanup(miner.stopService)
        self.clock.advance(1)
        self.assertEqual(len(self.flushLoggedErrors(ZeroDivisionError)), 1)
        miner.pool = self.pool
        self.clock.advance(1)
        self.assertEqual(len(self.blocks), 1)

    def test_mined_log_lines(self) -> None:
        """
        A mined block is logged, but at most one line per
        L{MINED_LOG_INTERVAL}: the blocks mined in between are counted in
        the next line.
        """
        miner = self.miner()
        events: list[dict[str, Any]] = []
        miner.log = Logger(namespace="miner", observer=events.append)
        self.successResultOf(miner.mine())
        self.successResultOf(miner.mine())
        self.successResultOf(miner.mine())
        self.assertEqual([event["number"] for event in events], [1])
        self.clock.advance(MINED_LOG_INTERVAL)
        self.successResultOf(miner.mine())
        self.assertEqual([event["number"] for event in events], [1, 4])
        self.assertEqual(events[1]["unlogged"], 2)
        self.assertIn("2 blocks mined since the last line", formatEvent(events[1]))
        self.assertNotIn("unlogged", events[0])

    def test_seal_budget(self) -> None:
        """
        When the solver finds no seal within its nonces, mining fails clearly and nothing is stored.
        """
        store, genesis = sample_store(difficulty=2**40)
        rules = replace(sample_rules(), difficulty=DifficultyRules(10, 2048, 2**40, None))
        chain = ChainService(store, rules, self.clock)
        miner = make_miner(chain, COINBASE, "manual", self.clock, self.pool, max_nonces=3)
        failure = self.failureResultOf(miner.mine(), SealNotFoundError)
        self.assertIn("merged miner", failure.getErrorMessage())
        self.assertEqual(chain.head.header, genesis)

    def test_mine_alone_no_seal(self) -> None:
        """
        When the importer's solver finds no seal for a transaction's own
        block, L{Miner.mine_alone} fails with L{SealNotFoundError}, as
        L{Miner.mine} does, and nothing is stored.
        """
        miner = self.miner("auto")

        def no_seal(request: Any, *args: Any) -> Any:
            raise SealSearchError("no seal: this network needs a merged miner")

        self.patch(self.chain.importer, "make", no_seal)
        failure = self.failureResultOf(miner.mine_alone(transfer(0, 0), ADMISSION), SealNotFoundError)
        self.assertIn("merged miner", failure.getErrorMessage())
        self.assertEqual((self.blocks, self.chain.head.header), ([], self.genesis))

    def test_watches_the_pool(self) -> None:
        """
        The miner registers its automining with the pool it is given: the
        pool knows nothing of miners.
        """
        miner = self.miner("auto")
        self.assertEqual(self.pool.watchers, [miner.automining])


class DriftLimitTests(SynchronousTestCase):
    """
    The miner on a network with a drift limit (60 s): no block of its is
    stamped further ahead of the clock; when the head is that far ahead,
    the next block waits until it is due.
    """

    def setUp(self) -> None:
        """
        A chain whose rules allow 60 s of drift, a clock at 1000, a manual miner.
        """
        self.clock = Clock()
        self.clock.advance(1000)
        self.store, self.genesis = sample_store()
        self.chain = ChainService(self.store, sample_rules(), self.clock)
        self.pool = FakePool()
        self.miner = make_miner(self.chain, COINBASE, "manual", self.clock, self.pool)
        self.miner.startService()
        self.addCleanup(self.miner.stopService)

    def test_burst_waits_at_the_limit(self) -> None:
        """
        Blocks made faster than one a second run ahead of the clock up to
        the limit; then each waits for its second, and the calls made
        meanwhile share one block, with every transaction pending by then.
        """
        for _ in range(61):
            self.successResultOf(self.miner.mine())
        self.assertEqual(self.chain.head.header.timestamp, 1060)
        self.pool.transactions = [transfer(0, 0)]
        first = self.miner.mine()
        self.pool.transactions.append(transfer(1, 0))
        second = self.miner.mine()
        self.assertNoResult(first)
        self.clock.advance(0.5)
        self.assertNoResult(first)
        self.clock.advance(0.5)
        block = self.successResultOf(first)
        self.assertIs(self.successResultOf(second), block)
        self.assertEqual((block.number, block.header.timestamp, len(block.transactions)), (62, 1061, 2))

    def test_mine_alone_waits_at_the_limit(self) -> None:
        """
        A transaction to mine alone while the head is at the drift limit
        waits for the next block's second, then is mined in it.
        """
        for _ in range(61):
            self.successResultOf(self.miner.mine())
        adopted: list = []
        self.chain.add_observer(lambda event: adopted.extend(event.adopted))
        tx = transfer(0, 0)
        lone = self.miner.mine_alone(tx, ADMISSION)
        self.assertNoResult(lone)
        self.clock.advance(1)
        self.assertIsNone(self.successResultOf(lone))
        self.assertEqual([(block.number, block.header.timestamp, block.transactions) for block in adopted], [(62, 1061, (tx,))])

    def test_offset_beyond_the_limit_refused(self) -> None:
        """
        A time offset or a set time beyond the drift limit is refused: the
        network's nodes would hold such a block back.
        """
        self.assertEqual(self.miner.increase_time(60), 60)
        error = self.assertRaises(DevChainInputError, self.miner.increase_time, 1)
        self.assertIn("60 s ahead", str(error))
        self.assertRaises(DevChainInputError, self.miner.block_clock.set_next, 1000 + 61)
        self.assertEqual(self.successResultOf(self.miner.mine()).header.timestamp, 1060)

    def test_stop_fails_the_wait(self) -> None:
        """
        A block waiting for its time fails with L{MiningStoppedError} when the node stops.
        """
        for _ in range(61):
            self.successResultOf(self.miner.mine())
        waiting = self.miner.mine()
        self.miner.stopService()
        self.failureResultOf(waiting, MiningStoppedError)


class SealSearchTests(SynchronousTestCase):
    """
    Tests for the miner's split of building and sealing, on a chain whose
    difficulty is above L{CHEAP_SEAL_DIFFICULTY}.
    """

    DIFFICULTY = 4 * CHEAP_SEAL_DIFFICULTY

    def setUp(self) -> None:
        """
        A chain of difficulty L{DIFFICULTY} at a clock at 1000; seal batches
        wait in C{self.batches} until the test runs them.
        """
        self.clock = Clock()
        self.clock.advance(1000)
        rules = replace(sample_rules(), difficulty=DifficultyRules(10, 2048, self.DIFFICULTY, None))
        self.store, self.genesis = sample_store(difficulty=self.DIFFICULTY)
        self.chain = ChainService(self.store, rules, self.clock)
        self.pool = FakePool()
        self.batches: list[tuple[Deferred[Any], Callable[..., Any], tuple[Any, ...]]] = []
        self.produced_small: list[bool] = []
        make = self.chain.make
        self.patch(
            self.chain,
            "make",
            lambda request, small=False: self.produced_small.append(small) or make(request, small),
        )

    def search(self, function: Callable[..., Any], *args: Any) -> Deferred[Any]:
        """
        Queue a batch of the seal search.
        """
        waiting: Deferred[Any] = Deferred()
        self.batches.append((waiting, function, args))
        return waiting

    def run_batches(self) -> None:
        """
        Run the queued batches (and those they queue) in order.
        """
        while self.batches:
            waiting, function, args = self.batches.pop(0)
            waiting.callback(function(*args))

    def test_seal_searched_off_the_building_job(self) -> None:
        """
        The block is built in a writer job, its seal searched in batches of
        at most L{SEAL_BATCH_NONCES} nonces through the seal runner, and the
        sealed block stored through the importer: never one job that both
        builds and searches (which could run on the reactor thread).
        """
        miner = make_miner(self.chain, COINBASE, "manual", self.clock, self.pool, run_seal_search=self.search)
        self.pool.transactions = [transfer(0, 0)]
        mining = miner.mine()
        self.assertNoResult(mining)
        self.assertEqual(self.chain.head.header, self.genesis)
        self.assertEqual(len(self.batches), 1)
        nonces = self.batches[0][2][2]
        self.assertLessEqual(len(nonces), SEAL_BATCH_NONCES)
        self.run_batches()
        block = self.successResultOf(mining)
        self.assertEqual(self.chain.head.header, block.header)
        self.assertEqual(len(block.transactions), 1)
        self.assertEqual(self.produced_small, [])

    def test_head_moved_during_search(self) -> None:
        """
        When another block becomes the head while a seal is searched, the
        miner builds again on the new head.
        """
        miner = make_miner(self.chain, COINBASE, "manual", self.clock, self.pool, run_seal_search=self.search)
        other = make_miner(self.chain, REGTEST_MINER_ADDRESS, "manual", self.clock, self.pool)
        mining = miner.mine()
        self.assertEqual(len(self.batches), 1)
        waiting, function, args = self.batches.pop(0)
        rival = self.successResultOf(other.mine())
        waiting.callback(None)
        self.run_batches()
        block = self.successResultOf(mining)
        self.assertEqual(block.header.parent_hash, rival.hash)
        self.assertEqual(self.chain.head.header.number, 2)

    def test_no_empty_block_after_the_head_moved(self) -> None:
        """
        A block without empty blocks whose transactions came in the block
        that became the head during its seal search is not stored.
        """
        miner = make_miner(self.chain, COINBASE, "manual", self.clock, self.pool, run_seal_search=self.search)
        pending = transfer(0, 0)
        self.pool.transactions = [pending]
        mining = miner.mine(empty=False)
        waiting, _function, _args = self.batches.pop(0)
        rival = self.successResultOf(make_miner(self.chain, REGTEST_MINER_ADDRESS, "manual", self.clock, FakePool([pending])).mine())
        waiting.callback(None)
        self.run_batches()
        self.assertIsNone(self.successResultOf(mining))
        self.assertEqual(self.chain.head.header, rival.header)

    def test_stop_ends_search(self) -> None:
        """
        Stopping the miner ends a seal search at its next batch with
        L{MiningStoppedError}; nothing is stored and the time offset is kept.
        """
        miner = make_miner(self.chain, COINBASE, "manual", self.clock, self.pool, run_seal_search=self.search)
        miner.startService()
        miner.increase_time(30)
        mining = miner.mine()
        waiting, _function, _args = self.batches.pop(0)
        miner.stopService()
        waiting.callback(None)
        self.failureResultOf(mining, MiningStoppedError)
        self.assertEqual(self.chain.head.header, self.genesis)
        self.assertEqual(miner.time_offset, 30)

    def test_blocks_one_at_a_time(self) -> None:
        """
        Two blocks asked for at once are sealed one after the other, the
        second on the first.
        """
        miner = make_miner(self.chain, COINBASE, "manual", self.clock, self.pool, run_seal_search=self.search)
        first, second = miner.mine(), miner.mine()
        self.run_batches()
        self.assertEqual(self.successResultOf(second).header.parent_hash, self.successResultOf(first).hash)


class QueuedWriter:
    """
    Stands in for L{nodex.services.threads.ChainThreads}: writes wait in a
    queue until L{flush}, as they would behind a busy writer thread; reads
    run at once.
    """

    def __init__(self) -> None:
        """
        Start with an empty queue.
        """
        self.queue: list[tuple[Deferred[Any], Callable[..., Any], tuple[Any, ...]]] = []

    def start(self) -> None:
        """
        Nothing to start.
        """

    def stop(self) -> None:
        """
        Nothing to stop.
        """

    def run_writer(self, function: Callable[..., Any], *args: Any) -> Deferred[Any]:
        """
        Queue a write.
        """
        deferred: Deferred[Any] = Deferred()
        self.queue.append((deferred, function, args))
        return deferred

    run_writer_small = run_writer

    def run_reader(self, function: Callable[..., Any], *args: Any) -> Deferred[Any]:
        """
        Run a read now.
        """
        return maybeDeferred(function, *args)

    def flush(self) -> None:
        """
        Run the queued writes in order, each delivering its result.
        """
        while self.queue:
            deferred, function, args = self.queue.pop(0)
            deferred.callback(function(*args))


class ConcurrentMiningTests(SynchronousTestCase):
    """
    Blocks asked for while an earlier one is still being produced (auto
    mining of transactions sent in parallel).
    """

    def test_overlapping_templates(self) -> None:
        """
        A second block whose candidates were taken before the first was
        stored skips the transaction the first mined and still mines the
        sender's next one.
        """
        clock = Clock()
        store, genesis = sample_store()
        writer = QueuedWriter()
        chain = ChainService(store, sample_rules(), clock, threads=writer)  # type: ignore[arg-type]
        pool = FakePool([transfer(0, 0)])
        miner = make_miner(chain, COINBASE, "auto", clock, pool)
        first = miner.mine()
        pool.transactions.append(transfer(0, 1))
        second = miner.mine()
        self.assertNoResult(first)
        writer.flush()
        block1, block2 = self.successResultOf(first), self.successResultOf(second)
        self.assertEqual((block1.number, block1.transactions), (1, (transfer(0, 0),)))
        self.assertEqual((block2.number, block2.transactions), (2, (transfer(0, 1),)))
        self.assertEqual(pool.removed, [transfer(0, 0).hash])


CONTRACTS = Path(__file__).resolve().parent.parent / "data" / "contracts"


def contract_call(key: int, nonce: int, to: bytes, data: bytes, gas: int = 1_000_000) -> Transaction:
    """
    A signed legacy transaction of sample key C{key} with C{data} (a creation when C{to} is empty).
    """
    unsigned = LegacyTransaction(nonce=nonce, gas_price=1, gas=gas, to=to, value=0, data=data)
    return sign_transaction(unsigned, KEYS[key], 33)


def selector(signature: str) -> bytes:
    """
    The 4-byte ABI selector of a function signature.
    """
    return keccak256(signature.encode())[:4]


class TwoNodeTests(SynchronousTestCase):
    """
    Blocks one node mines, with contracts and logs, import on another node
    to the same chain (the miner's outcome equals a re-execution).
    """

    def test_mined_blocks_import_elsewhere(self) -> None:
        """
        Contract deployments, calls with logs and a transfer, mined on node
        A, are each the best block on node B, with the same state and receipts.
        """
        clock = Clock()
        clock.advance(1000)
        store_a, _ = sample_store()
        store_b, _ = sample_store()
        chain_a = ChainService(store_a, sample_rules(), clock)
        chain_b = ChainService(store_b, sample_rules(), clock)
        pool = FakePool()
        miner = make_miner(chain_a, COINBASE, "manual", clock, pool)
        storage_code = bytes.fromhex(json.loads((CONTRACTS / "Storage.json").read_text())["bytecode"][2:])
        events_code = bytes.fromhex(json.loads((CONTRACTS / "Events.json").read_text())["bytecode"][2:])
        deploy_storage = contract_call(0, 0, b"", storage_code + (7).to_bytes(32, "big"))
        deploy_events = contract_call(1, 0, b"", events_code)
        pool.transactions = [deploy_storage, deploy_events]
        first = self.successResultOf(miner.mine())
        deployed = self.successResultOf(chain_a.get_block_receipts(first.hash))
        self.assertEqual([view.receipt.status for view in deployed], [1, 1])
        storage, events = (view.contract_address for view in deployed)
        assert storage is not None and events is not None
        pool.transactions = [
            contract_call(0, 1, storage, selector("set(uint256)") + (99).to_bytes(32, "big")),
            contract_call(1, 1, events, selector("emitMany(uint256)") + (3).to_bytes(32, "big")),
            transfer(2, 0),
        ]
        second = self.successResultOf(miner.mine())
        pool.transactions = []
        third = self.successResultOf(miner.mine())
        self.assertEqual(len(second.transactions), 3)
        for block in (first, second, third):
            self.assertEqual(self.successResultOf(import_one(chain_b, block)), ImportResult.IMPORTED_BEST)
        self.assertEqual(chain_b.head, chain_a.head)
        receipts_a = self.successResultOf(chain_a.get_block_receipts(second.hash))
        receipts_b = self.successResultOf(chain_b.get_block_receipts(second.hash))
        self.assertEqual([view.receipt for view in receipts_b], [view.receipt for view in receipts_a])
        self.assertEqual([len(view.receipt.logs) for view in receipts_b], [1, 5, 0])
        self.assertEqual([view.first_log_index for view in receipts_b], [0, 1, 6])
        value = self.successResultOf(
            chain_b.run_with_state(lambda state: state.get_storage(storage, 0), third.header.state_root)
        )
        self.assertEqual(value, 99)


class ModeTests(SynchronousTestCase):
    """
    Tests for L{parse_mining_mode}.
    """

    def test_modes(self) -> None:
        """
        The four modes parse, interval with its seconds.
        """
        self.assertEqual(parse_mining_mode("auto"), ("auto", None))
        self.assertEqual(parse_mining_mode("off"), ("off", None))
        self.assertEqual(parse_mining_mode("manual"), ("manual", None))
        self.assertEqual(parse_mining_mode("interval:3"), ("interval", 3.0))

    def test_bad(self) -> None:
        """
        Anything else is refused with a message that lists the modes.
        """
        for text in ("sometimes", "interval:", "interval:0", "interval:x"):
            error = self.assertRaises(MiningModeError, parse_mining_mode, text)
            self.assertIn("interval:SECONDS", str(error))


class OrderCandidatesTests(SynchronousTestCase):
    """
    Tests for L{order_candidates}.
    """

    def test_price_then_nonce(self) -> None:
        """
        The best price goes first, but a sender's transactions keep their
        nonce order even when a later one pays more.
        """
        cheap0 = transfer(0, 0, gas_price=1)
        rich1 = transfer(0, 1, gas_price=50)
        mid = transfer(1, 0, gas_price=10)
        typed = fee_market_transfer(2, 0, max_fee=100, priority_fee=20)
        ordered = order_candidates([rich1, mid, cheap0, typed])
        self.assertEqual(ordered, [typed, mid, cheap0, rich1])

    def test_ties_keep_order(self) -> None:
        """
        Equal prices keep the order the pool gave.
        """
        first, second = transfer(1, 0), transfer(0, 0)
        self.assertEqual(order_candidates([first, second]), [first, second])


class NodeMiningTests(TestCase):
    """
    End-to-end: the node from L{makeService} on a RocksDB data directory
    mines through its miner and reopens the same chain after a restart.
    """

    def start(self, datadir: str) -> NodeService:
        """
        Start a manual-mining regtest node on C{datadir} with RPC on port 0.
        """
        options = Options(stdout=io.StringIO())
        options.parseOptions(["--datadir", datadir, "--rpc", "tcp:0:interface=127.0.0.1", "--ws", "none", "--mining", "manual"])
        node = makeService(options)
        node.startService()
        return node

    @inlineCallbacks
    def test_blocks_survive_restart(self) -> Any:
        """
        Three mined blocks are the head after the node stops and starts again.
        """
        datadir = self.mktemp()
        node = self.start(datadir)
        assert node.miner is not None and node.chain is not None
        self.assertEqual(node.chain.head.header.number, 0)
        blocks = []
        for _ in range(3):
            blocks.append((yield node.miner.mine()))
        self.assertEqual([block.number for block in blocks], [1, 2, 3])
        self.assertEqual(blocks[0].header.coinbase, REGTEST_MINER_ADDRESS)
        self.assertEqual(node.chain.head.header, blocks[-1].header)
        yield node.stopService()
        again = self.start(datadir)
        self.addCleanup(again.stopService)
        assert again.chain is not None
        self.assertEqual(again.chain.head.header, blocks[-1].header)
        stored = yield again.chain.get_block_by_number(2)
        self.assertEqual(stored, blocks[1])
