"""
Tests for L{nodex.services.work} and L{nodex.services.cpuminer}: templates,
the three merged-mining submission forms, C{eth_submitWork}, uncles from
racing miners, hash rates and the built-in CPU miner, on a real
L{ChainService} over a memory store (synchronous threads, a L{Clock}).
"""

from collections.abc import Callable
from typing import Any

from twisted.internet.defer import Deferred, maybeDeferred
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase
from zope.interface.verify import verifyObject

from nodex.chain.seal.pow import search
from nodex.chain.rules import MAX_UNCLE_DEPTH, MAX_UNCLES
from nodex.api.chain import ImportResult
from nodex.api.errors import WorkSubmissionError
from nodex.api.mining import IWorkService, MiningWork
from nodex.primitives import Address
from nodex.services.chain import ChainService
from nodex.services.cpuminer import CPUMiner
from nodex.services.blocktime import BlockClock
from nodex.services.sideblocks import SideBlocks
from nodex.services.work import KEPT_TEMPLATES, REFRESH_SECONDS, SUBMITTED_RATE_SECONDS, WorkService
from tests.chain import bitcoin_blocks as bb
from tests.chain.test_processing import build_on, sample_rules, sample_store, transfer
from tests.services.test_miner import FakePool, make_miner
from tests.chain.chainmaker import import_one

COINBASE = Address(b"\xc0" * 20)


def work_service(
    chain: ChainService, run_in_thread: Any = maybeDeferred, pool: FakePool | None = None, **keywords: Any
) -> WorkService:
    """
    A work service writing to C{chain}, with a block clock on the chain's
    clock and side blocks of its own.
    """
    return WorkService(
        chain, chain, chain.store, chain.rules, COINBASE, chain._clock, run_in_thread,
        FakePool() if pool is None else pool, BlockClock(chain._clock, chain.rules), SideBlocks(chain), **keywords,
    )


def template_nonce(work: MiningWork) -> bytes:
    """
    An 8-byte C{eth_submitWork} nonce that meets C{work}'s target.
    """
    seal, _tried = search(work.hash_for_merged_mining, work.difficulty, 0, 10**6)
    assert seal is not None
    return seal.bitcoin_header[68:72] + seal.bitcoin_header[76:80]


class WorkServiceTests(SynchronousTestCase):
    """
    Tests for L{WorkService}.
    """

    def setUp(self) -> None:
        """
        A regtest-like chain at genesis, a pool, and the work service on them.
        """
        self.clock = Clock()
        self.clock.advance(1000)
        self.store, self.genesis = sample_store()
        self.chain = ChainService(self.store, sample_rules(), self.clock)
        self.pool = FakePool()
        self.side = SideBlocks(self.chain)
        self.work = WorkService(
            self.chain, self.chain, self.store, self.chain.rules, COINBASE, self.clock, maybeDeferred, self.pool,
            BlockClock(self.clock, self.chain.rules), self.side,
        )
        self.work.startService()
        self.addCleanup(self.work.stopService)

    def get(self) -> MiningWork:
        """
        The current C{mnr_getWork} answer.
        """
        return self.successResultOf(self.work.merged_mining_work())

    def mine(self, work: MiningWork) -> str:
        """
        Submit a whole Bitcoin block sealing C{work}; the import outcome.
        """
        raw, _header, _ids = bb.mined_block(bb.tagged_coinbase(work.hash_for_merged_mining), 2, work.target)
        return self.successResultOf(self.work.submit_bitcoin_block(raw)).result

    def test_interface(self) -> None:
        """
        The service provides L{IWorkService}.
        """
        self.assertTrue(verifyObject(IWorkService, self.work))

    def test_template_on_head(self) -> None:
        """
        The work builds on the head with the pool's transactions and the configured coinbase.
        """
        self.pool.transactions.append(transfer(0, 0, gas_price=2))
        work = self.get()
        self.assertEqual(work.parent_hash, self.genesis.hash)
        self.assertEqual(work.number, 1)
        self.assertEqual(work.fees, 21000 * 2)
        self.assertEqual(work.target, 2**256 // 3)
        template = self.successResultOf(self.work.current_template())
        self.assertEqual(template.block.header.coinbase, COINBASE)
        self.assertEqual(len(template.block.transactions), 1)

    def test_impersonated_transaction_mined(self) -> None:
        """
        On a dev chain, a pooled transaction of an impersonated sender goes
        into the template, and the sealed template passes the importer
        (the node built it).
        """
        from dataclasses import replace

        from nodex.structures.transactions import LegacyTransaction, impersonate
        from tests.chain.test_processing import ADDRESSES, CHAIN_ID, RECIPIENT

        self.store, self.genesis = sample_store()
        self.chain = ChainService(self.store, replace(sample_rules(), impersonation=True), self.clock)
        self.side = SideBlocks(self.chain)
        self.work = WorkService(
            self.chain, self.chain, self.store, self.chain.rules, COINBASE, self.clock, maybeDeferred, self.pool,
            BlockClock(self.clock, self.chain.rules), self.side,
        )
        self.work.startService()
        self.addCleanup(self.work.stopService)
        marked = impersonate(LegacyTransaction(0, 0, 21000, RECIPIENT, 1, b""), ADDRESSES[2], CHAIN_ID)
        self.pool.transactions.append(marked)
        self.assertEqual(self.mine(self.get()), ImportResult.IMPORTED_BEST)
        self.assertEqual(self.chain.head.header.number, 1)
        block = self.successResultOf(self.chain.get_block_by_hash(self.chain.head.header.hash))
        self.assertEqual(block.transactions, (marked,))

    def test_notify(self) -> None:
        """
        Work is news the first time it is handed out with a new parent, not after.
        """
        first = self.get()
        self.assertTrue(first.notify)
        self.assertFalse(self.get().notify)
        self.assertEqual(self.mine(first), ImportResult.IMPORTED_BEST)
        second = self.get()
        self.assertNotEqual(second.parent_hash, first.parent_hash)
        self.assertTrue(second.notify)
        self.assertFalse(self.get().notify)

    def test_notify_on_richer_fees(self) -> None:
        """
        New work on the same parent is news only when it pays over 10 % more in fees.
        """
        self.pool.transactions.append(transfer(0, 0, gas_price=10))
        self.assertTrue(self.get().notify)
        self.clock.advance(REFRESH_SECONDS)
        self.assertFalse(self.get().notify)
        self.pool.transactions.append(transfer(1, 0, gas_price=10))
        self.clock.advance(REFRESH_SECONDS)
        self.assertTrue(self.get().notify)

    def test_new_head_new_work(self) -> None:
        """
        A new head makes new work at once while someone mines.
        """
        first = self.get()
        self.mine(first)
        current = self.work._current
        self.assertIsNotNone(current)
        assert current is not None
        self.assertEqual(current.block.header.parent_hash, self.chain.head.header.hash)

    def test_refresh(self) -> None:
        """
        Every minute while active the work gets a newer timestamp; when idle nothing is built.
        """
        first = self.get()
        self.clock.advance(REFRESH_SECONDS)
        second = self.successResultOf(self.work.current_template())
        self.assertNotEqual(second.hash_for_merged_mining, first.hash_for_merged_mining)
        self.assertGreater(second.block.header.timestamp, self.genesis.timestamp)
        self.clock.advance(REFRESH_SECONDS * 3)
        kept = len(self.work._templates)
        self.clock.advance(REFRESH_SECONDS)
        self.assertEqual(len(self.work._templates), kept)

    def test_update_on_transactions(self) -> None:
        """
        With the option on, a new pending transaction makes new work.
        """
        pool = FakePool()
        observers = []
        pool.add_observer = observers.append  # type: ignore[method-assign]
        self.work = work_service(self.chain, pool=pool, update_on_transactions=True)
        self.work.startService()
        self.addCleanup(self.work.stopService)
        first = self.get()
        pool.transactions.append(transfer(0, 0))
        observers[0](pool.transactions[0])
        current = self.work._current
        assert current is not None
        self.assertNotEqual(current.hash_for_merged_mining, first.hash_for_merged_mining)
        self.assertEqual(len(current.block.transactions), 1)

    def test_three_forms_accepted(self) -> None:
        """
        A whole block, a transaction-id list and a merkle branch each seal and import a block.
        """
        work = self.get()
        self.assertEqual(self.mine(work), ImportResult.IMPORTED_BEST)
        work = self.get()
        coinbase = bb.tagged_coinbase(work.hash_for_merged_mining)
        _raw, header, ids = bb.mined_block(coinbase, 5, work.target)
        submitted = self.successResultOf(
            self.work.submit_transaction_ids(header, coinbase, [txid[::-1] for txid in ids])
        )
        self.assertEqual((submitted.result, submitted.number), (ImportResult.IMPORTED_BEST, 2))
        self.assertEqual(submitted.block_hash, self.chain.head.header.hash)
        work = self.get()
        coinbase = bb.tagged_coinbase(work.hash_for_merged_mining)
        _raw, header, ids = bb.mined_block(coinbase, 6, work.target)
        submitted = self.successResultOf(self.work.submit_merkle_branch(header, coinbase, [ids[0]] + bb.branch(ids), 7))
        self.assertEqual((submitted.result, submitted.number), (ImportResult.IMPORTED_BEST, 3))
        sealed = self.successResultOf(self.chain.get_block_by_number(3))
        assert sealed is not None
        self.assertEqual(sealed.header.bitcoin_merged_mining_header, header)
        self.assertEqual(len(sealed.header.bitcoin_merged_mining_merkle_proof), 3 * 32)

    def test_same_block_twice(self) -> None:
        """
        Submitting the same sealed block again answers EXIST.
        """
        work = self.get()
        raw, _header, _ids = bb.mined_block(bb.tagged_coinbase(work.hash_for_merged_mining), 0, work.target)
        self.assertEqual(self.successResultOf(self.work.submit_bitcoin_block(raw)).result, ImportResult.IMPORTED_BEST)
        self.assertEqual(self.successResultOf(self.work.submit_bitcoin_block(raw)).result, ImportResult.EXIST)

    def test_unknown_work(self) -> None:
        """
        A coinbase committing to a hash the node never handed out: the reference's message.
        """
        self.get()
        stranger = b"\x77" * 32
        raw, _header, _ids = bb.mined_block(bb.tagged_coinbase(stranger), 0, 2**255)
        failure = self.failureResultOf(self.work.submit_bitcoin_block(raw), WorkSubmissionError)
        self.assertEqual(
            str(failure.value), f"Cannot publish block, could not find hash 0x{stranger.hex()} in the cache"
        )

    def test_too_little_work(self) -> None:
        """
        A header above the target: the reference's message, the cause in the detail.
        """
        work = self.get()
        coinbase = bb.tagged_coinbase(work.hash_for_merged_mining)
        header = bb.unmined_header(bb.merkle_root([bb.double_sha256(coinbase)]), work.target)
        failure = self.failureResultOf(self.work.submit_bitcoin_block(bb.block(header, [coinbase])), WorkSubmissionError)
        self.assertTrue(str(failure.value).startswith("Invalid block supplied by miner: "))
        self.assertTrue(str(failure.value).endswith(" at height 1"))
        self.assertIn("does not meet difficulty", failure.value.detail)
        self.assertEqual(self.chain.head.header.number, 0)

    def test_old_work_kept(self) -> None:
        """
        The last 20 templates can be submitted; older ones are forgotten.
        """
        works = []
        for _ in range(KEPT_TEMPLATES + 1):
            works.append(self.get())
            self.clock.advance(REFRESH_SECONDS)
        oldest, kept = works[0], works[1]
        self.assertFalse(self.successResultOf(self.work.submit_work(template_nonce(oldest), oldest.hash_for_merged_mining)))
        self.assertTrue(self.successResultOf(self.work.submit_work(template_nonce(kept), kept.hash_for_merged_mining)))
        self.assertEqual(self.chain.head.header.number, 1)

    def test_submit_work(self) -> None:
        """
        eth_submitWork: a good nonce imports the block; a bad nonce or unknown work answers false.
        """
        work = self.successResultOf(self.work.work())
        self.assertFalse(work.notify)
        target_miss = next(
            nonce.to_bytes(8, "big")
            for nonce in range(1000)
            if search(work.hash_for_merged_mining, work.difficulty, nonce, 1)[0] is None
        )
        self.assertFalse(self.successResultOf(self.work.submit_work(target_miss, work.hash_for_merged_mining)))
        self.assertFalse(self.successResultOf(self.work.submit_work(b"\x00" * 8, b"\x01" * 32)))
        self.assertTrue(self.successResultOf(self.work.submit_work(template_nonce(work), work.hash_for_merged_mining)))
        self.assertEqual(self.chain.head.header.number, 1)

    def test_racing_miners_make_an_uncle(self) -> None:
        """
        Two miners seal two templates on one parent: the second is a side
        block, the next template includes it as an uncle, and the total
        difficulty counts it.
        """
        first = self.get()
        self.clock.advance(REFRESH_SECONDS)
        second = self.get()
        self.assertEqual(first.parent_hash, second.parent_hash)
        self.assertEqual(self.mine(first), ImportResult.IMPORTED_BEST)
        self.assertEqual(self.mine(second), ImportResult.IMPORTED_NOT_BEST)
        third = self.get()
        template = self.successResultOf(self.work.current_template())
        self.assertEqual(len(template.block.uncles), 1)
        self.assertEqual(template.block.uncles[0].hash_for_merged_mining, second.hash_for_merged_mining)
        before = self.chain.head.total_difficulty
        self.assertEqual(self.mine(third), ImportResult.IMPORTED_BEST)
        head = self.chain.head
        self.assertEqual(head.header.uncle_count, 1)
        self.assertEqual(head.total_difficulty, before + head.header.difficulty + template.block.uncles[0].difficulty)
        fourth = self.successResultOf(self.work.current_template())
        self.assertEqual(fourth.block.uncles, ())

    def test_built_in_miner_includes_uncles(self) -> None:
        """
        The built-in miner, given the work service's uncle source, includes a side block it knows.
        """
        first = self.get()
        self.clock.advance(REFRESH_SECONDS)
        second = self.get()
        self.mine(first)
        self.assertEqual(self.mine(second), ImportResult.IMPORTED_NOT_BEST)
        miner = make_miner(self.chain, COINBASE, "manual", self.clock, side_blocks=self.side)
        block = self.successResultOf(miner.mine())
        self.assertEqual([uncle.hash_for_merged_mining for uncle in block.uncles], [second.hash_for_merged_mining])
        self.assertEqual(self.chain.head.header.hash, block.hash)

    def side_blocks(self, count: int) -> list[Any]:
        """
        Import C{count} blocks on genesis that lose to the head (as a peer
        would send them): each a valid side block at height 1.
        """
        blocks = [build_on(self.store, self.genesis, extra_data=bytes([index])).block for index in range(count)]
        for block in blocks:
            self.assertEqual(self.successResultOf(import_one(self.chain, block)), ImportResult.IMPORTED_NOT_BEST)
        return blocks

    def test_peer_side_block_is_an_uncle(self) -> None:
        """
        A valid side block imported from any source (a peer here, not this
        node's work) becomes an uncle of the built-in miner's next block
        and of the next template; once included, of neither.
        """
        miner = make_miner(self.chain, COINBASE, "manual", self.clock, side_blocks=self.side)
        self.successResultOf(miner.mine())
        [side] = self.side_blocks(1)
        template = self.successResultOf(self.work.current_template())
        self.assertEqual(template.block.uncles, (side.header,))
        block = self.successResultOf(miner.mine())
        self.assertEqual(block.uncles, (side.header,))
        self.assertEqual(self.chain.head.header.hash, block.hash)
        self.assertEqual(self.successResultOf(miner.mine()).uncles, ())
        self.assertEqual(self.successResultOf(self.work.current_template()).block.uncles, ())

    def test_side_blocks_within_the_count(self) -> None:
        """
        Of more side blocks than a block may name, the miner includes at
        most the allowed count, and the rest in the next block.
        """
        miner = make_miner(self.chain, COINBASE, "manual", self.clock, side_blocks=self.side)
        self.successResultOf(miner.mine())
        sides = self.side_blocks(MAX_UNCLES + 2)
        first = self.successResultOf(miner.mine())
        second = self.successResultOf(miner.mine())
        self.assertEqual(len(first.uncles), MAX_UNCLES)
        self.assertEqual(len(second.uncles), 2)
        self.assertEqual({uncle.hash for uncle in first.uncles + second.uncles}, {side.hash for side in sides})

    def test_side_block_too_deep(self) -> None:
        """
        A side block whose parent is further back than the uncle depth is
        no longer a candidate.
        """
        miner = make_miner(self.chain, COINBASE, "manual", self.clock, side_blocks=self.side)
        self.successResultOf(miner.mine())
        for _ in range(MAX_UNCLE_DEPTH):
            self.successResultOf(miner.mine())
        self.side_blocks(1)
        self.assertEqual(self.successResultOf(miner.mine()).uncles, ())

    def test_hashrate(self) -> None:
        """
        Submitted rates count for a while; the local miner's rate adds to them.
        """
        self.assertEqual(self.work.hashrate(), 0)
        self.assertTrue(self.work.submit_hashrate(500, b"\x01" * 32))
        self.work.submit_hashrate(300, b"\x02" * 32)
        self.work.submit_hashrate(200, b"\x01" * 32)
        self.work.local_hashrate = lambda: 1000
        self.assertEqual(self.work.hashrate(), 1500)
        self.clock.advance(SUBMITTED_RATE_SECONDS)
        self.assertEqual(self.work.hashrate(), 1000)

    def test_network_hashrate(self) -> None:
        """
        The cumulative difficulty of the last hour's blocks per second.
        """
        self.assertEqual(self.successResultOf(self.work.network_hashrate()), 0)
        for _ in range(3):
            self.mine(self.get())
        expected = (self.chain.head.total_difficulty - 1) // 3600
        self.assertEqual(self.successResultOf(self.work.network_hashrate()), expected)
        self.clock.advance(7200)
        self.assertEqual(self.successResultOf(self.work.network_hashrate()), 0)


class QueuedThread:
    """
    A run_in_thread that holds each job until the test runs it.
    """

    def __init__(self) -> None:
        self.jobs: list[tuple[Deferred[Any], Callable[..., Any], tuple[Any, ...]]] = []

    def __call__(self, function: Callable[..., Any], *args: Any) -> Deferred[Any]:
        deferred: Deferred[Any] = Deferred()
        self.jobs.append((deferred, function, args))
        return deferred

    def run_next(self) -> None:
        deferred, function, args = self.jobs.pop(0)
        maybeDeferred(function, *args).chainDeferred(deferred)


class SharedBuildTests(SynchronousTestCase):
    """
    Template builds while one is running.
    """

    def setUp(self) -> None:
        """
        A work service whose builds wait for the test.
        """
        self.clock = Clock()
        self.clock.advance(1000)
        self.store, self.genesis = sample_store()
        self.chain = ChainService(self.store, sample_rules(), self.clock)
        self.thread = QueuedThread()
        self.work = work_service(self.chain, self.thread)
        self.work.startService()
        self.addCleanup(self.work.stopService)

    def test_requests_share_a_build(self) -> None:
        """
        Two requests during one build get the same template from one build.
        """
        first, second = self.work.work(), self.work.work()
        self.assertEqual(len(self.thread.jobs), 1)
        self.thread.run_next()
        self.assertEqual(self.successResultOf(first), self.successResultOf(second))

    def test_trigger_during_a_build_builds_again(self) -> None:
        """
        A refresh during a build makes a second build, which the later requests wait for.
        """
        self.clock.advance(REFRESH_SECONDS / 2)
        first = self.work.work()
        self.clock.advance(REFRESH_SECONDS / 2)
        later = self.work.work()
        self.thread.run_next()
        early = self.successResultOf(first)
        self.assertNoResult(later)
        self.assertEqual(len(self.thread.jobs), 1)
        self.thread.run_next()
        self.assertNotEqual(self.successResultOf(later).hash_for_merged_mining, early.hash_for_merged_mining)


class CPUMinerTests(SynchronousTestCase):
    """
    Tests for L{CPUMiner}, its batches run at once.
    """

    def setUp(self) -> None:
        """
        A chain, a work service and a CPU miner with small batches.
        """
        self.clock = Clock()
        self.clock.advance(1000)
        self.store, self.genesis = sample_store()
        self.chain = ChainService(self.store, sample_rules(), self.clock)
        self.work = work_service(self.chain)
        self.miner = CPUMiner(self.work, self.chain, self.clock, batch=64, nonce_start=lambda: 0, pause=1)

    def test_mines_until_stopped(self) -> None:
        """
        Each turn of the reactor mines a batch; found seals become blocks;
        after the stop nothing more is mined.
        """
        self.work.startService()
        self.miner.startService()
        self.assertTrue(self.work.is_cpu_mining())
        for _ in range(10):
            self.clock.advance(1)
        mined = self.chain.head.header.number
        self.assertGreater(mined, 3)
        self.assertEqual(mined, self.miner.blocks_found)
        self.miner.stopService()
        self.assertFalse(self.work.is_cpu_mining())
        for _ in range(5):
            self.clock.advance(1)
        self.assertLessEqual(self.chain.head.header.number, mined + 1)

    def test_stale_batch_stops(self) -> None:
        """
        A batch stops early once the head is no longer the work's parent.
        """
        self.work.startService()
        parent = self.genesis.hash
        stopped = self.miner._stopped_for(parent)
        self.assertFalse(stopped())
        self.miner.startService()
        self.assertTrue(stopped())
        self.miner.stopService()
