"""
The start line of the transaction pool: how many transactions it restored,
in singular or plural.
"""

from twisted.logger import LogLevel, formatEvent, globalLogPublisher
from twisted.trial.unittest import SynchronousTestCase

from nodex.services.pool import TransactionPool
from tests.services.test_pool import FakeChainService, PoolFixture, in_thread, legacy


class RestoreLineTests(PoolFixture, SynchronousTestCase):
    """
    Tests for the line L{TransactionPool.startService} logs.
    """

    def restored_line(self, count: int) -> str:
        """
        The info line of a pool started over a store holding C{count}
        persisted transactions.
        """
        pool = self.make_pool()
        for nonce in range(count):
            self.successResultOf(pool.add(legacy(nonce)))
        events: list[dict] = []
        globalLogPublisher.addObserver(events.append)
        self.addCleanup(globalLogPublisher.removeObserver, events.append)
        restarted = TransactionPool(FakeChainService(self.store, self.chain.head.header.state_root), self.store, in_thread)
        restarted.startService()
        lines = [formatEvent(event) for event in events if event.get("log_level") == LogLevel.info]
        return next(line for line in lines if "restored" in line)

    def test_one(self) -> None:
        """
        One transaction is "1 transaction restored".
        """
        self.assertEqual(self.restored_line(1), "transaction pool: 1 transaction restored")

    def test_several(self) -> None:
        """
        Two (or none) are plural.
        """
        self.assertEqual(self.restored_line(2), "transaction pool: 2 transactions restored")
        self.assertEqual(self.restored_line(0), "transaction pool: 0 transactions restored")
