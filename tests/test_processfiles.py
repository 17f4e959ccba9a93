"""
Tests for L{nodex.processfiles}: the locked pid file, the bounded daemon
log, the writability check.
"""

import os
from pathlib import Path

from twisted.trial.unittest import SynchronousTestCase

from nodex.processfiles import (
    LOG_FILES,
    PidFile,
    PidFileLockedError,
    bounded_log_file,
    check_writable,
    use_bounded_daemon_log,
)


class PidFileTests(SynchronousTestCase):
    """
    Tests for L{PidFile}.
    """

    def setUp(self) -> None:
        """
        A fresh folder for the file.
        """
        self.folder = Path(self.mktemp())
        self.folder.mkdir()
        self.path = self.folder / "nodex.pid"

    def test_writes_and_removes(self) -> None:
        """
        Acquired, the file holds this process's id; released, it is gone.
        """
        pid_file = PidFile(self.path)
        pid_file.acquire()
        self.assertEqual(int(self.path.read_text()), os.getpid())
        pid_file.release()
        self.assertFalse(self.path.exists())
        pid_file.release()

    def test_stale_file_taken_over(self) -> None:
        """
        A file left by a killed node, naming a live process (pid 1, as in a
        container), does not stop the start: nobody holds its lock.
        """
        self.path.write_text("1\n")
        pid_file = PidFile(self.path)
        pid_file.acquire()
        self.addCleanup(pid_file.release)
        self.assertEqual(int(self.path.read_text()), os.getpid())

    def test_held_file_refused(self) -> None:
        """
        While one holder has the lock, a second is refused with the holder's pid.
        """
        first = PidFile(self.path)
        first.acquire()
        self.addCleanup(first.release)
        with self.assertRaises(PidFileLockedError) as caught:
            PidFile(self.path).acquire()
        self.assertEqual(
            str(caught.exception), f"another node is running with the pid file {self.path} (pid {os.getpid()})"
        )
        self.assertEqual(int(self.path.read_text()), os.getpid())
        first.release()
        second = PidFile(self.path)
        second.acquire()
        second.release()


class DaemonLogTests(SynchronousTestCase):
    """
    Tests for L{bounded_log_file} (what L{nodex.processfiles.daemon_log_observer} writes to).
    """

    def test_rotated_files_bounded(self) -> None:
        """
        However much is written, at most L{LOG_FILES} rotated logs remain.
        """
        folder = Path(self.mktemp())
        folder.mkdir()
        options: dict[str, object] = {}
        use_bounded_daemon_log(options, folder / "nodex.log")
        self.assertEqual(options["logger"], "nodex.processfiles.daemon_log_observer")
        log_file = bounded_log_file(folder / "nodex.log")
        self.addCleanup(log_file.close)
        for _ in range(LOG_FILES + 5):
            log_file.write("x" * 100 + "\n")
            log_file.rotate()
        names = sorted(path.name for path in folder.iterdir())
        self.assertEqual(len(names), LOG_FILES + 1)
        self.assertIn(f"nodex.log.{LOG_FILES}", names)
        self.assertNotIn(f"nodex.log.{LOG_FILES + 1}", names)


class WritableTests(SynchronousTestCase):
    """
    Tests for L{check_writable}.
    """

    def test_writable_leaves_nothing(self) -> None:
        """
        A writable folder passes and keeps no probe file.
        """
        folder = Path(self.mktemp())
        folder.mkdir()
        check_writable(folder)
        self.assertEqual(list(folder.iterdir()), [])

    def test_missing_folder(self) -> None:
        """
        A folder that cannot take a file raises L{OSError}.
        """
        self.assertRaises(OSError, check_writable, Path(self.mktemp()) / "absent")
