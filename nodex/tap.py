"""
The C{twistd nodex} plugin's module (L7): the command line (L{Options}) and
L{makeService}, which loads the configuration and hands it to the node's
composition (L{nodex.node.compose}), with the process files twistd would
otherwise place.
"""

import sys
from pathlib import Path
from typing import IO, Any

from twisted.python import usage

from nodex.config import ConfigError, NodeConfig, dump_toml, load_config
from nodex.errors import NodexError
from nodex.node import NodeService, compose, prepare_datadir
from nodex.processfiles import PidFile, check_writable, use_bounded_daemon_log


class Options(usage.Options):
    """
    The command line of C{twistd nodex}; each option is also a key of the
    configuration file, and the flags win over the file and the preset.

    @ivar config: the effective configuration, once parsed.
    @ivar start_errors: how the node will report a start error (one of
        L{nodex.node.START_ERRORS}): C{"stderr"} under twistd in the foreground,
        C{"raise"} in a daemon, C{"exit"} when parsed on its own.
    @ivar pid_path: the pid file the node holds while it runs (L{None}: none).
    @ivar node: the node made from these options (L{makeService}).
    """

    synopsis = "[options]"
    longdesc = (
        "Run a nodex node: an EVM full node of the Bitcoin-merge-mined family. "
        "With no options it runs a local regtest chain (chain id 33) with its "
        "JSON-RPC server on 127.0.0.1:4444. See nodex(1)."
    )
    optParameters = [
        ["network", None, None, "Network preset: regtest, devnet, testnet or main [default: regtest]."],
        ["datadir", None, None, "Data directory [default: ~/.nodex/<network>]."],
        ["config", None, None, "TOML configuration file laid over the network preset."],
        ["rpc", None, None, "JSON-RPC server endpoint, or none [default: tcp:4444:interface=127.0.0.1]."],
        ["ws", None, None, "JSON-RPC WebSocket endpoint, or none [default: tcp:4445:interface=127.0.0.1 on regtest, else none]."],
        ["p2p", None, None, "Peer-to-peer server endpoint, or none [default: per network]."],
        ["mining", None, None, "Mining mode: auto, interval:SECONDS, manual or off [default: per network]."],
        ["manhole", None, None, "SSH manhole endpoint, or none [default: none]."],
        ["metrics", None, None, "Prometheus metrics and /health endpoint, or none [default: none]."],
        ["log-level", None, None, "info, or debug for a line per RPC call [default: info]."],
        ["compat", None, None, "RPC conventions: reference (the specification's) or ethereum (geth's and Anvil's) [default: reference]."],
    ]
    optFlags = [["dump-config", None, "Print the effective configuration as TOML and exit."]]

    def __init__(self, stdout: IO[str] | None = None) -> None:
        """
        @param stdout: where C{--dump-config} writes (standard output by default).
        """
        super().__init__()
        self["peer"] = []
        self.stdout = stdout if stdout is not None else sys.stdout
        self.config: NodeConfig | None = None
        self.start_errors = "exit"
        self.pid_path: Path | None = None
        self.node: "NodeService | None" = None

    def opt_peer(self, address: str) -> None:
        """
        A peer to connect to and keep, as HOST:PORT or nodex://NODEID@HOST:PORT (repeatable).
        """
        self["peer"].append(address)

    def flag_layer(self) -> dict[str, Any]:
        """
        The configuration layer the flags make.
        """
        layer: dict[str, Any] = {}
        for option, key in (
            ("network", "network"), ("datadir", "datadir"), ("log-level", "log_level"), ("compat", "compat"),
        ):
            if self[option] is not None:
                layer[key] = self[option]
        for option, section, key in (
            ("rpc", "rpc", "endpoint"),
            ("ws", "rpc", "ws"),
            ("p2p", "p2p", "endpoint"),
            ("mining", "mining", "mode"),
            ("manhole", "manhole", "endpoint"),
            ("metrics", "metrics", "endpoint"),
        ):
            if self[option] is not None:
                layer.setdefault(section, {})[key] = self[option]
        if self["peer"]:
            layer.setdefault("p2p", {})["peers"] = list(self["peer"])
        return layer

    def parseOptions(self, options: list[str] | None = None) -> None:
        """
        Parse the command line.  Run as twistd's subcommand (C{twistd nodex},
        C{nodex run}), an error is one line on standard error and exit
        status 1, not the usage text on standard output.

        @raise usage.UsageError: a bad option, when parsed on its own.
        @raise SystemExit: a bad option, when parsed as twistd's subcommand.
        """
        try:
            super().parseOptions(options)
        except usage.UsageError as exc:
            if getattr(self, "parent", None) is None:
                raise
            (sys.__stderr__ or sys.stderr).write(f"nodex: {exc}\n")
            raise SystemExit(1) from None

    def postOptions(self) -> None:
        """
        Build the effective configuration; print it and exit for
        C{--dump-config}; otherwise make sure the data directory exists,
        and put twistd's pid file (and a daemon's log) in it.

        @raise usage.UsageError: a bad key or value, or no data directory.
        """
        try:
            self.config = load_config(self["config"], self.flag_layer())
        except ConfigError as exc:
            raise usage.UsageError(str(exc)) from None
        if self["dump-config"]:
            self.stdout.write(dump_toml(self.config.raw))
            self.stdout.flush()
            raise SystemExit(0)
        try:
            prepare_datadir(self.config.datadir)
        except OSError as exc:
            raise usage.UsageError(f"cannot create data directory {self.config.datadir}: {exc.strerror}") from None
        try:
            check_writable(self.config.datadir)
        except OSError as exc:
            raise usage.UsageError(f"the data directory {self.config.datadir} is not writable: {exc.strerror}") from None
        parent = getattr(self, "parent", None)
        if parent is not None:
            self.pid_path = place_process_files(parent, self.config.datadir)
            self.start_errors = "stderr" if parent.get("nodaemon") else "raise"


TWISTD_DEFAULT_PIDFILE = "twistd.pid"
"""twistd's pid file when C{--pidfile} is not given: in the current folder."""


PIDFILE = "nodex.pid"
"""The pid file of a node, under its data directory."""


DAEMON_LOGFILE = "nodex.log"
"""The log of a daemonised node, under its data directory."""


def place_process_files(twistd_options: Any, datadir: Path) -> Path | None:
    """
    Take the pid file from twistd: the node holds it itself, locked
    (L{nodex.processfiles.PidFile}), in the data directory unless
    C{--pidfile} named another (an empty name still turns it off); and give
    a daemon's log, in the data directory unless C{--logfile} or
    C{--syslog} chose, a bounded rotation (L{use_bounded_daemon_log}).  So
    two nodes started from the same folder do not block each other, a
    node's files live with it, and neither a stale pid file nor old logs
    get in the way.

    @param twistd_options: twistd's parsed options, the parent of L{Options}.
    @return: the pid file the node should hold, or L{None} for none.
    """
    pidfile = twistd_options.get("pidfile")
    if pidfile in (TWISTD_DEFAULT_PIDFILE, str(Path(TWISTD_DEFAULT_PIDFILE).absolute())):
        pidfile = str(datadir / PIDFILE)
    # twistd would refuse to start while the file names a live process
    # (any process: pid 1 in a container after a kill -9), and write it
    # without a lock; the node writes and locks it instead.
    twistd_options["pidfile"] = ""
    daemon = not twistd_options.get("nodaemon", True)
    if daemon and not twistd_options.get("syslog") and not twistd_options.get("logger"):
        logfile = twistd_options.get("logfile") or str(datadir / DAEMON_LOGFILE)
        if logfile != "-":
            twistd_options["logfile"] = str(Path(logfile).absolute())
            use_bounded_daemon_log(twistd_options, Path(logfile).absolute())
    return Path(pidfile).absolute() if pidfile else None


def makeService(options: Options) -> NodeService:
    """
    The node service of C{twistd nodex}.
    """
    from twisted.internet import reactor

    config = options.config
    if config is None:
        config = load_config(options["config"], options.flag_layer())
    try:
        node = compose(config, reactor)
    except NodexError as exc:
        raise SystemExit(f"nodex: cannot start: {exc}") from exc
    node.start_errors = options.start_errors
    if options.pid_path is not None:
        node.pid_file = PidFile(options.pid_path)
    # For nodex run, which answers the node's exit status.
    options.node = node
    return node


__all__ = [
    "DAEMON_LOGFILE",
    "Options",
    "PIDFILE",
    "TWISTD_DEFAULT_PIDFILE",
    "makeService",
    "place_process_files",
]
