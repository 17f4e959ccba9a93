"""
A RocksDB store killed with SIGKILL in the middle of writing keeps whole
batches only.
"""

import os
import signal
import subprocess
import sys

from twisted.trial.unittest import SynchronousTestCase

from nodex.db.rocks import RocksStore
from nodex.db.schema import BODIES, METADATA
from tests.conformance import REPOSITORY_ROOT
from tests.db.durability_writer import COUNTER_KEY, PUTS_PER_BATCH, batch_value

BATCHES_BEFORE_KILL = 100


class DurabilityTests(SynchronousTestCase):
    """
    Tests for the atomicity and durability of L{RocksStore.write}.
    """

    def test_sigkill_keeps_whole_batches(self) -> None:
        """
        After the writer is killed, the store holds batches 1 to the counter,
        each whole, at least every batch the writer saw written, and nothing
        of any later batch.
        """
        path = os.path.abspath(self.mktemp())
        writer = subprocess.Popen(
            [sys.executable, "-m", "tests.db.durability_writer", path],
            cwd=str(REPOSITORY_ROOT),
            stdout=subprocess.PIPE,
        )
        self.addCleanup(writer.wait)
        self.addCleanup(writer.stdout.close)  # type: ignore[union-attr]
        confirmed = 0
        while confirmed < BATCHES_BEFORE_KILL:
            line = writer.stdout.readline()  # type: ignore[union-attr]
            if not line:
                self.fail(f"the writer stopped after batch {confirmed}: exit {writer.wait()}")
            confirmed = int(line)
        writer.send_signal(signal.SIGKILL)
        writer.wait()

        store = RocksStore.open(path)
        self.addCleanup(store.close)
        counter = int.from_bytes(store.get(METADATA, COUNTER_KEY) or b"", "big")
        self.assertGreaterEqual(counter, confirmed)
        counts: dict[int, int] = {}
        for key, value in store.iterate(BODIES):
            number, index = int.from_bytes(key[:8], "big"), int.from_bytes(key[8:], "big")
            self.assertEqual(value, batch_value(number, index))
            counts[number] = counts.get(number, 0) + 1
        self.assertEqual(counts, {number: PUTS_PER_BATCH for number in range(1, counter + 1)})
