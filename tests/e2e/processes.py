"""
The one harness of the end-to-end tests that run the node as a process
(C{twistd nodex}, C{nodex run}): the process protocol that collects its
output and exit, and the function that starts one from this checkout.
"""

import os
import sys
from pathlib import Path

from twisted.internet import reactor
from twisted.internet.defer import Deferred
from twisted.internet.protocol import ProcessProtocol
from twisted.python.failure import Failure
from twisted.trial.unittest import TestCase

REPOSITORY = Path(__file__).resolve().parent.parent.parent
"""The checkout whose code the processes run (first on their C{PYTHONPATH})."""

TWISTD = "from twisted.scripts.twistd import run; run()"
"""The Python code of C{twistd} (which finds the nodex plugin in the checkout)."""

NODEX = "from nodex.cli import console_main; console_main()"
"""The Python code of the C{nodex} command."""

LISTENING = b"RPC server listening on 127.0.0.1:"
"""The log line that names the RPC port."""


class NodexProcess(ProcessProtocol):
    """
    A node's process: its standard output and error apart and together, its
    exit code or signal, and the RPC port once the log names it.

    @ivar ended: fires with the exit code (L{None} when a signal ended it;
        see C{signal}).
    @ivar listening: fires with the RPC port, or fails with the output if
        the process ends first.
    """

    def __init__(self) -> None:
        """
        Nothing received yet.
        """
        self.stdout = b""
        self.stderr = b""
        self.output = b""
        self.signal: int | None = None
        self.ended: Deferred[int | None] = Deferred()
        self.listening: Deferred[int] = Deferred()

    def outReceived(self, data: bytes) -> None:
        """
        Keep the output; fire C{listening} with the RPC port once logged.
        """
        self.stdout += data
        self._received(data)

    def errReceived(self, data: bytes) -> None:
        """
        Keep the error output.
        """
        self.stderr += data
        self._received(data)

    def _received(self, data: bytes) -> None:
        """
        Keep C{data} in the whole output, and look for the listening line there.
        """
        self.output += data
        if not self.listening.called and LISTENING in self.output:
            rest = self.output.split(LISTENING, 1)[1]
            digits = rest[: len(rest) - len(rest.lstrip(b"0123456789"))]
            if digits and rest[len(digits) :][:1] in (b"\n", b"\r", b" "):
                self.listening.callback(int(digits))

    def processEnded(self, reason: Failure) -> None:
        """
        Fire C{ended} with the exit code, after C{listening} fails if it never fired.
        """
        if not self.listening.called:
            self.listening.errback(Exception(self.output.decode(errors="replace")))
        self.signal = getattr(reason.value, "signal", None)
        self.ended.callback(reason.value.exitCode)


def spawn(case: TestCase, code: str, argv: tuple[str, ...], folder: Path = REPOSITORY, reap: bool = True) -> NodexProcess:
    """
    Run C{python -c CODE ARGV} in C{folder} with this checkout first on the
    path (L{TWISTD} or L{NODEX}).

    @param reap: kill the process when the test ends if it still runs, and
        wait for its end (a daemon's parent ends by itself: no need).
    """
    process = NodexProcess()
    env = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    reactor.spawnProcess(process, sys.executable, [sys.executable, "-c", code, *argv], env=env, path=str(folder))
    if reap:
        case.addCleanup(_reap, process)
    else:
        process.listening.addErrback(lambda failure: None)
    return process


async def _reap(process: NodexProcess) -> None:
    """
    Kill the process if a failed test left it running, and wait for its end.
    """
    if not process.ended.called:
        process.transport.signalProcess("KILL")  # type: ignore[attr-defined]
        process.listening.addErrback(lambda failure: None)
        await process.ended
