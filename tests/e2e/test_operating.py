"""
End-to-end tests of the node as an operator runs it: C{nodex run} in the
foreground and C{twistd nodex} as a daemon, their exit status, one-line
start errors, and where the pid file and the log go.
"""

import json
import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import treq
from twisted.internet import reactor
from twisted.internet.protocol import Factory
from twisted.internet.task import deferLater
from twisted.trial.unittest import SkipTest, TestCase
from twisted.web.client import HTTPConnectionPool

from tests.e2e.processes import NODEX, TWISTD, NodexProcess, spawn


def read_only_folder(case: TestCase) -> Path:
    """
    A folder the test's process cannot write into: its mode without write
    rights for an ordinary user; for root, whom modes do not stop, a small
    read-only tmpfs (the test is skipped where root cannot mount one).
    """
    folder = Path(case.mktemp()).resolve()
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o500)
        case.addCleanup(folder.chmod, 0o700)
        return folder
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,ro", "none", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        raise SkipTest(f"running as root, and cannot mount a read-only tmpfs: {mounted.stderr.decode().strip()}")
    case.addCleanup(subprocess.run, ["umount", str(folder)], capture_output=True)
    return folder


class NodexRunTests(TestCase):
    """
    C{nodex run}, started as a process from a folder of its own.
    """

    def spawn(self, *argv: str) -> NodexProcess:
        """
        Run C{nodex ARGV} (the console script's function) in a fresh folder.
        """
        folder = Path(self.mktemp())
        folder.mkdir()
        self.folder = folder
        return spawn(self, NODEX, argv, folder)

    async def test_runs_and_exits_zero_on_sigterm(self) -> None:
        """
        C{nodex run} serves C{eth_chainId}, keeps its pid file in the data
        directory (none in the current folder), and exits 0 on SIGTERM,
        removing the pid file.  A stale pid file naming a live process (pid
        1, what a container's restart after a C{kill -9} finds) does not
        stop it (issue 26: twistd refused, "Another twistd server is
        running"); a second node on the same data directory stops at once
        with one line.
        """
        datadir = Path(self.mktemp()).resolve()
        datadir.mkdir(mode=0o700)
        (datadir / "nodex.pid").write_text("1")
        process = self.spawn("run", "--datadir", str(datadir), "--rpc", "tcp:0:interface=127.0.0.1", "--ws", "none")
        port = await process.listening
        second = self.spawn("run", "--datadir", str(datadir), "--rpc", "tcp:0:interface=127.0.0.1", "--ws", "none")
        second.listening.addErrback(lambda failure: None)
        self.assertEqual(await second.ended, 1)
        self.assertEqual(
            second.stderr,
            f"nodex: cannot start: another node is running with the pid file {datadir / 'nodex.pid'}"
            f" (pid {process.transport.pid})\n".encode(),  # type: ignore[attr-defined]
        )
        pool = HTTPConnectionPool(reactor, persistent=False)
        response = await treq.post(
            f"http://127.0.0.1:{port}/",
            data=b'{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}',
            headers={"Content-Type": "application/json"},
            pool=pool,
        )
        self.assertEqual(json.loads(await response.content())["result"], "0x21")
        pidfile = datadir / "nodex.pid"
        self.assertEqual(int(pidfile.read_text()), process.transport.pid)  # type: ignore[attr-defined]
        self.assertEqual(list(self.folder.iterdir()), [])
        os.kill(process.transport.pid, signal.SIGTERM)  # type: ignore[attr-defined]
        self.assertEqual(await process.ended, 0)
        self.assertFalse(pidfile.exists())
        self.assertIn(b"Server Shut Down.", process.stdout)

    async def test_bad_option_is_one_line(self) -> None:
        """
        A bad option value is one line on standard error naming the key, and
        exit status 1; nothing on standard output.
        """
        process = self.spawn("run", "--datadir", self.mktemp(), "--ws", "none", "--mining", "sometimes")
        process.listening.addErrback(lambda failure: None)
        self.assertEqual(await process.ended, 1)
        self.assertEqual(process.stdout, b"")
        self.assertEqual(process.stderr.count(b"\n"), 1, process.stderr)
        self.assertTrue(process.stderr.startswith(b'nodex: configuration key "mining.mode"'), process.stderr)

    async def test_unusable_places_are_one_line(self) -> None:
        """
        An endpoint that gives C{interface=} twice (Twisted binds the last,
        the loopback checks read the first) and, where the test can make
        one, a read-only data directory: one line on standard error, exit
        status 1 (issue 26: the second was a traceback).
        """
        repeated = "tcp:0:interface=127.0.0.1:interface=0.0.0.0"
        process = self.spawn("run", "--datadir", self.mktemp(), "--ws", "none", "--rpc", repeated)
        process.listening.addErrback(lambda failure: None)
        self.assertEqual(await process.ended, 1)
        self.assertEqual(process.stderr.count(b"\n"), 1, process.stderr)
        self.assertIn(b'"rpc.endpoint"', process.stderr)
        self.assertIn(b'"interface=" is given more than once', process.stderr)
        datadir = read_only_folder(self)
        process = self.spawn("run", "--datadir", str(datadir), "--ws", "none", "--rpc", "tcp:0:interface=127.0.0.1")
        process.listening.addErrback(lambda failure: None)
        self.assertEqual(await process.ended, 1)
        self.assertEqual(process.stdout, b"")
        self.assertEqual(process.stderr.count(b"\n"), 1, process.stderr)
        self.assertTrue(process.stderr.startswith(f"nodex: the data directory {datadir} is not writable:".encode()))

    async def test_unknown_option_is_one_line(self) -> None:
        """
        An unknown option is one line on standard error, exit status 1.
        """
        process = self.spawn("run", "--datadir", self.mktemp(), "--ws", "none", "--no-such-option")
        process.listening.addErrback(lambda failure: None)
        self.assertEqual(await process.ended, 1)
        self.assertEqual((process.stdout, process.stderr), (b"", b"nodex: option --no-such-option not recognized\n"))

    async def test_port_in_use_is_one_line(self) -> None:
        """
        A taken RPC port: one line on standard error, exit status 1, no
        traceback, and no account banner (nothing but the servers started).
        """
        taken = reactor.listenTCP(0, Factory(), interface="127.0.0.1")
        self.addCleanup(taken.stopListening)
        port = taken.getHost().port
        process = self.spawn("run", "--datadir", self.mktemp(), "--ws", "none", "--rpc", f"tcp:{port}:interface=127.0.0.1")
        process.listening.addErrback(lambda failure: None)
        self.assertEqual(await process.ended, 1)
        self.assertEqual(
            process.stderr,
            f"nodex: cannot start: RPC server cannot listen on 127.0.0.1:{port}: Address already in use\n".encode(),
        )
        self.assertNotIn(b"Traceback", process.stdout)
        self.assertNotIn(b"Development accounts", process.stdout)


class DaemonTests(TestCase):
    """
    C{twistd nodex} as a daemon (twistd finds the plugin in the checkout).
    """

    def twistd(self, *argv: str) -> NodexProcess:
        """
        Run C{twistd ARGV} from a fresh folder; the process is twistd's
        parent, which ends once the daemon has started or failed.
        """
        folder = Path(self.mktemp())
        folder.mkdir()
        return spawn(self, TWISTD, argv, folder, reap=False)

    async def wait_for(self, predicate: Callable[[], bool], what: str) -> None:
        """
        Poll C{predicate} for up to 60 seconds.
        """
        for _ in range(600):
            if predicate():
                return
            await deferLater(reactor, 0.1, lambda: None)
        self.fail(f"timed out waiting for {what}")

    async def test_starts_and_stops_on_sigterm(self) -> None:
        """
        The parent exits 0 once the daemon serves, even with a stale pid
        file naming a live process (pid 1) in the data directory; the pid
        file and log are in the data directory; SIGTERM stops the daemon
        and removes the pid file.
        """
        datadir = Path(self.mktemp()).resolve()
        datadir.mkdir(mode=0o700)
        (datadir / "nodex.pid").write_text("1")
        parent = self.twistd("nodex", "--datadir", str(datadir), "--rpc", "tcp:0:interface=127.0.0.1", "--ws", "none")
        self.assertEqual(await parent.ended, 0, parent.stderr)
        pidfile, logfile = datadir / "nodex.pid", datadir / "nodex.log"
        pid = int(pidfile.read_text())

        def stop() -> None:
            """
            Kill the daemon if the test left it running.
            """
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        self.addCleanup(stop)
        marker = "RPC server listening on 127.0.0.1:"
        await self.wait_for(lambda: marker in logfile.read_text(), "the RPC port in the log")
        port = int(logfile.read_text().split(marker, 1)[1].split()[0])
        pool = HTTPConnectionPool(reactor, persistent=False)
        response = await treq.post(
            f"http://127.0.0.1:{port}/", data=b'{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}',
            headers={"Content-Type": "application/json"}, pool=pool,
        )
        self.assertEqual(json.loads(await response.content())["result"], "0x21")
        os.kill(pid, signal.SIGTERM)
        await self.wait_for(lambda: not pidfile.exists(), "the daemon to stop")
        self.assertIn("Server Shut Down.", logfile.read_text())

    async def test_port_in_use(self) -> None:
        """
        A daemon whose port is taken: the parent exits 1 and prints the reason.
        """
        taken = reactor.listenTCP(0, Factory(), interface="127.0.0.1")
        self.addCleanup(taken.stopListening)
        port = taken.getHost().port
        parent = self.twistd("nodex", "--datadir", self.mktemp(), "--ws", "none", "--rpc", f"tcp:{port}:interface=127.0.0.1")
        self.assertEqual(await parent.ended, 1)
        self.assertIn(
            f"NodeStartError: RPC server cannot listen on 127.0.0.1:{port}: Address already in use".encode(),
            parent.stderr,
        )
