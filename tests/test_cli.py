"""
Tests for L{nodex.cli}, the C{nodex} command, and for where twistd's
process files go (L{nodex.tap.place_process_files}).
"""

import io
from pathlib import Path

from twisted.application.service import IServiceMaker
from twisted.trial.unittest import SynchronousTestCase

from nodex.cli import COMMANDS, Command, NODEX_SERVICE_MAKER, main, twistd_options_class
from nodex.processfiles import daemon_log_observer
from nodex.node import NodeService
from nodex.tap import Options, place_process_files


class MainTests(SynchronousTestCase):
    """
    Tests for L{main}: the dispatch table.
    """

    def call(self, *argv: str) -> tuple[int, str, str]:
        """
        Run L{main}; return its status and what it wrote.
        """
        out, err = io.StringIO(), io.StringIO()
        status = main(list(argv), stdout=out, stderr=err)
        return status, out.getvalue(), err.getvalue()

    def test_help_lists_every_command(self) -> None:
        """
        C{nodex --help} lists each command of the table with its summary, on
        standard output, and succeeds.
        """
        status, out, err = self.call("--help")
        self.assertEqual((status, err), (0, ""))
        for name, command in COMMANDS.items():
            self.assertIn(f"  {name}", out)
            self.assertIn(command.summary, out)

    def test_no_command(self) -> None:
        """
        Without a command, the usage goes to standard error and the status is 1.
        """
        status, out, err = self.call()
        self.assertEqual((status, out), (1, ""))
        self.assertIn("Usage: nodex COMMAND", err)

    def test_unknown_command(self) -> None:
        """
        An unknown command is one line naming it and the known ones, status 1.
        """
        status, out, err = self.call("frobnicate", "--x")
        self.assertEqual((status, out), (1, ""))
        self.assertEqual(err, "nodex: unknown command 'frobnicate' (commands: export, import, run, simulate)\n")

    def test_dispatch(self) -> None:
        """
        A command receives the arguments after its name, and its status is
        the status of C{nodex}.
        """
        seen: list[list[str]] = []
        COMMANDS["probe"] = Command(lambda argv: seen.append(argv) or 7, "a probe")
        self.addCleanup(COMMANDS.pop, "probe")
        status, _, _ = self.call("probe", "--network", "devnet")
        self.assertEqual((status, seen), (7, [["--network", "devnet"]]))

    def test_simulate_freezes_what_is_left(self) -> None:
        """
        C{nodex simulate} moves what its run left out of the collector's
        sight before the process ends (the shutdown's full collection would
        walk every simulated node's objects), and answers the run's status.
        """
        import gc

        import nodex.simulation.cli as simulation_cli
        from nodex.cli import simulate

        left = [[index] for index in range(1000)]
        self.patch(simulation_cli, "run_simulate", lambda argv: 3 if argv == ["small"] else 0)
        self.addCleanup(gc.unfreeze)
        before = gc.get_freeze_count()
        self.assertEqual(simulate(["small"]), 3)
        self.assertGreaterEqual(gc.get_freeze_count(), before + len(left))


class TwistdOptionsTests(SynchronousTestCase):
    """
    Tests for L{twistd_options_class}: twistd's parser with the C{nodex}
    service maker, found without the plugin folders.
    """

    def test_nodex_subcommand(self) -> None:
        """
        The parser knows C{nodex} (and nothing else), parses the node's
        options under it, and keeps the service maker for twistd's runner.
        """
        options = twistd_options_class()()
        datadir = Path(self.mktemp())
        options.parseOptions(["--nodaemon", "nodex", "--datadir", str(datadir), "--network", "devnet"])
        self.assertEqual(options.subCommand, "nodex")
        self.assertIs(options.loadedPlugins["nodex"], NODEX_SERVICE_MAKER)
        self.assertTrue(IServiceMaker.providedBy(NODEX_SERVICE_MAKER))
        self.assertEqual(options.subOptions.config.chain_id, 32)
        self.assertEqual(options.subOptions.start_errors, "stderr")

    def test_pidfile_in_datadir(self) -> None:
        """
        Parsed as twistd's subcommand, the node puts twistd's pid file in its
        data directory (not the current folder); a daemon's log goes there too.
        """
        datadir = Path(self.mktemp()).absolute()
        options = twistd_options_class()()
        options.parseOptions(["nodex", "--datadir", str(datadir)])
        self.assertEqual(options["pidfile"], "")
        self.assertEqual(options.subOptions.pid_path, datadir / "nodex.pid")
        self.assertEqual(options["logfile"], str(datadir / "nodex.log"))
        self.assertEqual(options["logger"], daemon_log_observer)
        self.assertEqual(options.subOptions.start_errors, "raise")

    def test_foreground_logs_to_stdout(self) -> None:
        """
        In the foreground, the log stays on standard output.
        """
        datadir = Path(self.mktemp()).absolute()
        options = twistd_options_class()()
        options.parseOptions(["--nodaemon", "nodex", "--datadir", str(datadir)])
        self.assertEqual(options.subOptions.pid_path, datadir / "nodex.pid")
        self.assertIsNone(options["logfile"])
        self.assertIsNone(options["logger"])


class PlaceProcessFilesTests(SynchronousTestCase):
    """
    Tests for L{place_process_files}.
    """

    def test_explicit_choices_win(self) -> None:
        """
        A pid file or log named on the command line (or turned off with an
        empty name, or syslog) stays where given; the node, not twistd,
        holds the pid file, and a daemon's named log is rotated within bounds.
        """
        datadir = Path("/var/lib/nodex")
        options = {"pidfile": "/run/nodex.pid", "logfile": "/var/log/n.log", "nodaemon": False, "syslog": False}
        self.assertEqual(place_process_files(options, datadir), Path("/run/nodex.pid"))
        self.assertEqual(
            options,
            {"pidfile": "", "logfile": "/var/log/n.log", "nodaemon": False, "syslog": False,
             "logger": "nodex.processfiles.daemon_log_observer"},
        )
        options = {"pidfile": "", "logfile": None, "nodaemon": False, "syslog": True}
        self.assertIsNone(place_process_files(options, datadir))
        self.assertEqual(options, {"pidfile": "", "logfile": None, "nodaemon": False, "syslog": True})

    def test_defaults_move(self) -> None:
        """
        twistd's defaults (C{twistd.pid}, C{twistd.log} in the current
        folder) move into the data directory.
        """
        options = {"pidfile": "twistd.pid", "logfile": None, "nodaemon": False, "syslog": False}
        self.assertEqual(place_process_files(options, Path("/var/lib/nodex")), Path("/var/lib/nodex/nodex.pid"))
        self.assertEqual((options["pidfile"], options["logfile"]), ("", "/var/lib/nodex/nodex.log"))


class StartErrorTests(SynchronousTestCase):
    """
    Tests for L{NodeService.start_failed}: one line, reported three ways.
    """

    def node(self) -> NodeService:
        """
        A node of a fresh configuration (not started).
        """
        options = Options(stdout=io.StringIO())
        options.parseOptions(["--datadir", self.mktemp()])
        assert options.config is not None
        self.assertEqual(options.start_errors, "exit")
        return NodeService(options.config)

    def test_direct_exits_with_the_line(self) -> None:
        """
        Composed on its own, the node exits with the line as the message.
        """
        caught = self.assertRaises(SystemExit, self.node().start_failed, OSError("no room"))
        self.assertEqual(caught.code, "nodex: cannot start: no room")

    def test_daemon_raises(self) -> None:
        """
        A daemon's start error is a L{NodeStartError} (not a L{SystemExit},
        which twistd would not hand to the waiting parent) with the reason.
        """
        from nodex.node import NodeStartError

        node = self.node()
        node.start_errors = "raise"
        error = self.assertRaises(NodeStartError, node.start_failed, OSError("no room"))
        self.assertEqual(str(error), "no room")

    def test_foreground_writes_stderr_and_exits_1(self) -> None:
        """
        In the foreground the line goes to the process's standard error and
        the process exits 1.
        """
        import sys

        node = self.node()
        node.start_errors = "stderr"
        err = io.StringIO()
        self.patch(sys, "__stderr__", err)
        caught = self.assertRaises(SystemExit, node.start_failed, OSError("no room"))
        self.assertEqual((caught.code, err.getvalue()), (1, "nodex: cannot start: no room\n"))
