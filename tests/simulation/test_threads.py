"""
Tests of the node's threads on simulated time.
"""

from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThreadPool
from twisted.trial.unittest import SynchronousTestCase

import nodex.services.threads as threads_module
from nodex.api.chain import ImportResult
from nodex.chain.aside import FILE
from nodex.chain.importer import BlockImporter
from nodex.services.chain import ChainService
from nodex.services.threads import ChainThreads
from nodex.simulation.clock import NodeClock, SimulatedTime
from nodex.simulation.threads import SimulatedSerialThread, SimulatedThreadPool
from tests.chain.chainmaker import store_block
from tests.chain.test_processing import build_on, sample_rules, sample_store


class SerialThreadTests(SynchronousTestCase):
    """
    L{SimulatedSerialThread} keeps L{nodex.services.threads.SerialThread}'s contract.
    """

    def setUp(self) -> None:
        self.time = SimulatedTime(0)
        self.clock = NodeClock(self.time)
        self.thread = SimulatedSerialThread(self.clock, "writer", job_seconds=0.5)

    def test_jobs_in_order_on_later_turns(self) -> None:
        """
        Jobs run one at a time in arrival order, each taking its time;
        results arrive on a later turn.
        """
        self.thread.start()
        ran: list[tuple[str, float]] = []
        results: list[tuple[str, float]] = []

        def job(name: str) -> str:
            ran.append((name, self.time.now))
            return name

        for name in ("a", "b", "c"):
            self.thread.run(job, name).addCallback(lambda name: results.append((name, self.time.now)))
        self.assertEqual(ran, [])
        self.time.run()
        self.assertEqual(ran, [("a", 0), ("b", 0.5), ("c", 1.0)])
        self.assertEqual(results, [("a", 0.5), ("b", 1.0), ("c", 1.5)])

    def test_failure(self) -> None:
        """
        A job's exception reaches its Deferred.
        """
        self.thread.start()
        failures: list[object] = []
        self.thread.run(lambda: 1 / 0).addErrback(failures.append)
        self.time.run()
        self.assertEqual(len(failures), 1)

    def test_run_small(self) -> None:
        """
        A small job runs at once when the thread is idle, and is queued
        behind a job not yet delivered.
        """
        self.thread.start()
        now: Deferred[int] = self.thread.run_small(lambda: 1)
        self.assertEqual(self.successResultOf(now), 1)
        self.thread.run(lambda: 2)
        queued = self.thread.run_small(lambda: 3)
        self.assertNoResult(queued)
        self.time.run()
        self.assertEqual(self.successResultOf(queued), 3)

    def test_not_started(self) -> None:
        """
        Jobs wait for the start; stop runs the jobs still queued.
        """
        ran: list[int] = []
        self.thread.run(ran.append, 1)
        self.time.run()
        self.assertEqual(ran, [])
        self.thread.start()
        self.thread.run(ran.append, 2)
        self.thread.stop()
        self.assertEqual(ran, [1, 2])

    def test_crash(self) -> None:
        """
        The results of a crashed node's jobs are never delivered.
        """
        self.thread.start()
        results: list[int] = []
        self.thread.run(lambda: 1).addCallback(results.append)
        self.clock.kill()
        self.time.run()
        self.assertEqual(results, [])


    def test_import_run_does_not_yield(self) -> None:
        """
        A chain service on a simulated writer imports a run of empty blocks
        without handing the interpreter lock over after each (the real
        writer's C{time.sleep(0)}): the simulation has no other thread.
        """
        store, genesis = sample_store()
        other, _ = sample_store()
        blocks, parent = [], genesis
        for _ in range(3):
            block = build_on(other, parent, []).block
            store_block(BlockImporter(other, sample_rules()), block)
            blocks.append(block)
            parent = block.header
        yielded: list[float] = []
        self.patch(threads_module.time, "sleep", yielded.append)
        threads = ChainThreads(self.clock, readers=1, writer=self.thread, reader_pool=SimulatedThreadPool("readers"))
        chain = ChainService(store, sample_rules(), self.clock, threads=threads)
        chain.startService()
        imported = chain.import_blocks(blocks, FILE)
        self.time.run()
        outcomes = self.successResultOf(imported)
        self.assertEqual([outcome.result for outcome in outcomes], [ImportResult.IMPORTED_BEST] * 3)
        self.assertEqual(yielded, [])
        chain.stopService()


class ThreadPoolTests(SynchronousTestCase):
    """
    L{SimulatedThreadPool} serves C{deferToThreadPool}.
    """

    def test_defer_to_thread_pool(self) -> None:
        """
        The job runs at once, its result arrives on the node's reactor on a later turn.
        """
        time = SimulatedTime(0)
        clock = NodeClock(time)
        pool = SimulatedThreadPool("readers")
        pool.start()
        ran: list[int] = []
        result = deferToThreadPool(clock, pool, lambda: ran.append(1) or 7)  # type: ignore[arg-type]
        self.assertEqual(ran, [1])
        self.assertNoResult(result)
        time.run()
        self.assertEqual(self.successResultOf(result), 7)
        failed = deferToThreadPool(clock, pool, lambda: 1 / 0)  # type: ignore[arg-type]
        time.run()
        self.failureResultOf(failed, ZeroDivisionError)
