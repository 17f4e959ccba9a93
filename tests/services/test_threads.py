"""
Tests for L{nodex.services.threads}: the worker threads' lower priority.
"""

import os
import sys
import threading

from twisted.internet import reactor
from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThreadPool
from twisted.trial.unittest import SynchronousTestCase, TestCase

from nodex.services.accounts import Wallet
from nodex.services.readerpool import ReaderPool
from nodex.services.threads import (
    WORKER_NICENESS,
    ChainThreads,
    SerialThread,
    WorkerThread,
    chosen_worker_niceness,
    lower_worker_priority,
    set_worker_niceness,
    worker_pool,
)

LINUX = sys.platform.startswith("linux")


def own_niceness() -> int:
    """
    The calling thread's niceness.
    """
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def worker_niceness() -> int:
    """
    The niceness a worker thread should have: the main thread's plus
    L{WORKER_NICENESS}, at most 19.
    """
    return min(os.getpriority(os.PRIO_PROCESS, os.getpid()) + WORKER_NICENESS, 19)


def niceness_in_thread(factory: type[threading.Thread] = WorkerThread) -> int:
    """
    The niceness seen inside a thread made by C{factory}.
    """
    seen: list[int] = []
    thread = factory(target=lambda: seen.append(own_niceness()))
    thread.start()
    thread.join()
    return seen[0]


class LowerWorkerPriorityTests(SynchronousTestCase):
    """
    Tests for L{lower_worker_priority} and L{WorkerThread}.
    """

    if not LINUX:
        skip = "threads have their own niceness on Linux only"

    def test_worker_thread_is_nicer(self) -> None:
        """
        A L{WorkerThread} runs its target L{WORKER_NICENESS} nicer than the
        main thread; a plain thread and the calling thread are unchanged.
        """
        before = own_niceness()
        self.assertEqual(niceness_in_thread(), worker_niceness())
        self.assertEqual(niceness_in_thread(threading.Thread), before)
        self.assertEqual(own_niceness(), before)

    def test_not_compounded(self) -> None:
        """
        Lowering a worker's priority twice, or starting a worker from a
        worker, still leaves it at the main thread's niceness plus
        L{WORKER_NICENESS}, not lower.
        """
        seen: list[int] = []

        def twice() -> None:
            lower_worker_priority()
            seen.append(own_niceness())
            seen.append(niceness_in_thread())

        thread = WorkerThread(target=twice)
        thread.start()
        thread.join()
        self.assertEqual(seen, [worker_niceness(), worker_niceness()])

    def test_chosen_niceness(self) -> None:
        """
        L{set_worker_niceness} chooses the niceness of the workers started
        afterwards; 0 leaves them at the main thread's; out of range is refused.
        """
        self.addCleanup(set_worker_niceness, WORKER_NICENESS)
        main = os.getpriority(os.PRIO_PROCESS, os.getpid())
        set_worker_niceness(3)
        self.assertEqual(niceness_in_thread(), min(main + 3, 19))
        set_worker_niceness(0)
        self.assertEqual(niceness_in_thread(), own_niceness())
        self.assertRaises(ValueError, set_worker_niceness, 20)
        self.assertRaises(ValueError, set_worker_niceness, -1)

    def test_node_sets_configured_niceness(self) -> None:
        """
        A starting node applies its configuration's C{worker_niceness}
        before its children start their threads.
        """
        import io
        from dataclasses import replace

        from nodex.node import NodeService
        from nodex.tap import Options

        self.addCleanup(set_worker_niceness, WORKER_NICENESS)
        options = Options(stdout=io.StringIO())
        options.parseOptions(["--datadir", self.mktemp(), "--rpc", "none"])
        assert options.config is not None
        node = NodeService(replace(options.config, worker_niceness=4))
        node.startService()
        self.addCleanup(node.stopService)
        self.assertEqual(chosen_worker_niceness(), 4)

    def test_refusal_keeps_priority(self) -> None:
        """
        When the system refuses the change, the thread keeps its priority
        and runs its target all the same.
        """

        def refuse(which: int, who: int, priority: int) -> None:
            raise PermissionError("refused")

        self.patch(os, "setpriority", refuse)
        ran: list[int] = []
        thread = WorkerThread(target=lambda: ran.append(own_niceness()))
        thread.start()
        thread.join()
        self.assertEqual(ran, [own_niceness()])


class NodeThreadsTests(TestCase):
    """
    The node's thread pools run their jobs in L{WorkerThread}s, and results
    still arrive on the reactor thread.
    """

    if not LINUX:
        skip = "threads have their own niceness on Linux only"

    async def test_serial_thread(self) -> None:
        """
        A L{SerialThread}'s jobs run at the workers' niceness.
        """
        serial = SerialThread(reactor, "test-nice-serial")
        serial.start()
        self.addCleanup(serial.stop)
        self.assertEqual(await serial.run(own_niceness), worker_niceness())

    async def test_chain_threads(self) -> None:
        """
        The chain's writer and readers run at the workers' niceness.
        """
        threads = ChainThreads(reactor, readers=2, name="test-nice-chain")
        threads.start()
        self.addCleanup(threads.stop)
        self.assertEqual(await threads.run_writer(own_niceness), worker_niceness())
        self.assertEqual(await threads.run_reader(own_niceness), worker_niceness())

    async def test_reader_pool(self) -> None:
        """
        The state service's L{ReaderPool} runs at the workers' niceness.
        """
        pool = ReaderPool(reactor, 2, "test-nice-readers")
        pool.start()
        self.addCleanup(pool.stop)
        self.assertEqual(await pool.run(own_niceness), worker_niceness())

    async def test_worker_pool(self) -> None:
        """
        A L{worker_pool} runs its jobs at the workers' niceness.
        """
        pool = worker_pool(0, 2, "test-nice-pool")
        pool.start()
        self.addCleanup(pool.stop)
        found: Deferred[int] = deferToThreadPool(reactor, pool, own_niceness)
        self.assertEqual(await found, worker_niceness())

    async def test_accounts_pool(self) -> None:
        """
        The accounts service (scrypt for unlocking) uses a L{worker_pool}.
        """
        wallet = Wallet(33, reactor)
        wallet.startService()
        self.addCleanup(wallet.stopService)
        self.assertEqual(await wallet._run(own_niceness), worker_niceness())
