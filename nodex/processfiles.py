"""
The files of a running node process (L7): its pid file, held under an
advisory lock, and a daemon's log, rotated into a bounded number of files.

Why not twistd's own: twistd refuses to start when its pid file names a
process that is alive, whoever that process is.  After a C{kill -9} the
file stays behind, and in a container the old pid is often that of a live
process (1, the container's init): every restart then stopped with
"Another twistd server is running", a restart loop under systemd or Docker.
A lock dies with its process, so a stale file never blocks a start, while a
node that still runs keeps the second one out (as RocksDB's own lock does
for the database).  And twistd rotates a daemon's log every 1,000,000 bytes
into C{nodex.log.1}, C{.2} ... without end; here at most L{LOG_FILES} old
files are kept.
"""

import errno
import fcntl
import os
import signal
from pathlib import Path
from typing import Any

from twisted.logger import ILogObserver, textFileLogObserver
from twisted.python.logfile import LogFile

from nodex.errors import NodexError

LOG_ROTATE_BYTES = 10 * 1024 * 1024
"""A daemon's log is rotated when it passes this size."""

LOG_FILES = 10
"""How many rotated logs a daemon keeps (C{nodex.log.1} ... C{nodex.log.10}); older ones are deleted."""


class PidFileLockedError(NodexError):
    """
    Another process holds the pid file's lock: a node already runs there.
    """


class PidFile:
    """
    A pid file that the running node holds locked (C{flock}) from its start
    to its stop, and removes when it stops.
    """

    def __init__(self, path: Path) -> None:
        """
        @param path: where the file is.
        """
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        """
        Lock the file (creating it) and write this process's id into it.

        @raise PidFileLockedError: another process holds the lock.
        @raise OSError: the file cannot be created or written.
        """
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = _read_pid(fd)
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                who = f" (pid {holder})" if holder else ""
                raise PidFileLockedError(f"another node is running with the pid file {self.path}{who}") from None
            raise
        try:
            os.ftruncate(fd, 0)
            os.write(fd, b"%d\n" % os.getpid())
        except OSError:
            os.close(fd)
            raise
        self._fd = fd

    def release(self) -> None:
        """
        Remove the file and drop the lock (once; harmless if not held).
        """
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.unlink(self.path)
        except OSError:
            pass
        os.close(fd)


def _read_pid(fd: int) -> int | None:
    """
    The pid a locked pid file names, if it names one.
    """
    try:
        text = os.pread(fd, 32, 0)
        return int(text.strip() or b"0") or None
    except (OSError, ValueError):
        return None


_daemon_log: dict[str, Any] = {}


def use_bounded_daemon_log(twistd_options: Any, path: Path) -> None:
    """
    Have twistd log to C{path} through L{daemon_log_observer} (at most
    L{LOG_FILES} rotated files), by naming it as twistd's C{--logger}.
    """
    _daemon_log["path"] = path
    twistd_options["logger"] = f"{__name__}.daemon_log_observer"


def bounded_log_file(path: Path) -> LogFile:
    """
    A log file at C{path}, rotated at L{LOG_ROTATE_BYTES}, keeping L{LOG_FILES} old files.
    """
    return LogFile(path.name, str(path.parent), rotateLength=LOG_ROTATE_BYTES, maxRotatedFiles=LOG_FILES)


def daemon_log_observer() -> ILogObserver:
    """
    twistd's log observer for a daemon: a text log at the path
    L{use_bounded_daemon_log} chose, rotated at L{LOG_ROTATE_BYTES} and on
    SIGUSR1 (as twistd's own), keeping L{LOG_FILES} old files.
    """
    log_file = bounded_log_file(Path(_daemon_log["path"]))
    if not signal.getsignal(signal.SIGUSR1):

        def rotate(signum: int, frame: Any) -> None:
            from twisted.internet import reactor

            reactor.callFromThread(log_file.rotate)

        signal.signal(signal.SIGUSR1, rotate)
    return textFileLogObserver(log_file)


def check_writable(directory: Path) -> None:
    """
    Make sure the node can write into C{directory}: create and remove a file.

    @raise OSError: it cannot (a read-only file system, missing rights).
    """
    probe = directory / f".nodex-write-check-{os.getpid()}"
    fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.close(fd)
    os.unlink(probe)


__all__ = [
    "LOG_FILES",
    "LOG_ROTATE_BYTES",
    "PidFile",
    "PidFileLockedError",
    "bounded_log_file",
    "check_writable",
    "daemon_log_observer",
    "use_bounded_daemon_log",
]
