"""
Tests for L{nodex.descriptors}: sharing the process's file descriptors.
"""

import resource

from twisted.trial.unittest import SynchronousTestCase

from nodex.descriptors import DATABASE_FILES, MIN_CONNECTIONS, RESERVE, plan, raise_limit


class PlanTests(SynchronousTestCase):
    """
    Tests for L{plan}.
    """

    def test_enough(self) -> None:
        """
        With room for everything, the configured caps stay, and the
        database gets a quarter of the limit within its bounds.
        """
        shared = plan(65536, 1024, 1024, 40)
        self.assertEqual((shared.http_connections, shared.ws_connections, shared.lowered), (1024, 1024, False))
        self.assertEqual(shared.database_files, DATABASE_FILES[1])
        self.assertEqual(plan(4096, 1024, 1024, 40).database_files, 1024)
        self.assertEqual(plan(2048, 10, 10, 0).database_files, 512)

    def test_lowered_to_fit(self) -> None:
        """
        With 256 descriptors (a small container), the caps are lowered so
        that connections, peers, the database and the reserve fit, shared
        in proportion to the configured caps; a server that is off gets none.
        """
        shared = plan(256, 1024, 1024, 39)
        self.assertTrue(shared.lowered)
        self.assertEqual(shared.database_files, DATABASE_FILES[0])
        total = shared.http_connections + shared.ws_connections + shared.database_files + 39 + RESERVE
        self.assertLessEqual(total, 256)
        self.assertEqual(shared.http_connections, shared.ws_connections)
        alone = plan(256, 1024, 0, 0)
        self.assertEqual((alone.http_connections, alone.ws_connections), (256 - RESERVE - 64, 0))

    def test_floor(self) -> None:
        """
        However low the limit, each server keeps a few connections.
        """
        shared = plan(64, 1024, 1024, 0)
        self.assertEqual((shared.http_connections, shared.ws_connections), (MIN_CONNECTIONS, MIN_CONNECTIONS))


class RaiseLimitTests(SynchronousTestCase):
    """
    Tests for L{raise_limit}.
    """

    def test_soft_raised_to_hard(self) -> None:
        """
        The soft limit goes up to the hard one (within the cap), and is what is answered.
        """
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        self.addCleanup(resource.setrlimit, resource.RLIMIT_NOFILE, (soft, hard))
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 256), hard))
        raised = raise_limit()
        self.assertEqual(raised, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
        self.assertGreaterEqual(raised, min(soft, 256))
