"""
The C{nodex} command (DESIGN §7): one table of subcommands, each a function
of its arguments that returns the exit status.

C{nodex run [NODEX OPTIONS]} is C{twistd --nodaemon nodex [NODEX OPTIONS]}
with the C{nodex} service maker handed to twistd directly, so that it works
from any install, an editable one included (twistd finds plugins only in
C{twisted/plugins} folders on C{sys.path}, where an editable install does
not put C{twisted/plugins/nodex_plugin.py}).
"""

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO, Any

from twisted.application.service import IServiceMaker, ServiceMaker


@dataclass(frozen=True)
class Command:
    """
    One subcommand of C{nodex}.

    @ivar run: called with the arguments after the subcommand's name;
        returns the exit status.
    @ivar summary: one line for C{nodex --help}.
    """

    run: Callable[[list[str]], int]
    summary: str


NODEX_SERVICE_MAKER = ServiceMaker(
    "nodex", "nodex.tap", "An EVM full node of the Bitcoin-merge-mined family.", "nodex"
)
"""The same service maker as C{twisted/plugins/nodex_plugin.py} declares."""


def twistd_options_class() -> type:
    """
    twistd's own option parser, knowing the C{nodex} subcommand without
    looking for plugins.
    """
    from twisted.scripts.twistd import ServerOptions

    class NodexServerOptions(ServerOptions):  # type: ignore[misc, valid-type]
        """
        twistd's options with the C{nodex} service maker as the one subcommand.
        """

        def _getPlugins(self, interface: Any) -> list[Any]:
            """
            The C{nodex} service maker, whatever the plugin folders hold.
            """
            return [NODEX_SERVICE_MAKER] if interface is IServiceMaker else []

    return NodexServerOptions


def run_node(argv: list[str]) -> int:
    """
    C{nodex run}: the node in the foreground, as C{twistd -n nodex ARGV}.

    twistd's own option errors are one line on standard error (the node's
    options report theirs the same way, L{nodex.tap.Options}).

    @return: 0 after a clean stop, SIGTERM and SIGINT included (C{twistd}
        run directly ends itself with the signal instead); 1 when the node
        stopped because its database could not go on (a corrupt file, a
        full disk: C{NodeService.store_failed}).
    """
    from twisted.python import usage
    from twisted.scripts.twistd import _SomeApplicationRunner

    options = twistd_options_class()()
    try:
        options.parseOptions(["--nodaemon", "nodex", *argv])
    except usage.UsageError as exc:
        sys.stderr.write(f"nodex run: {exc}\n")
        return 1
    _SomeApplicationRunner(options).run()
    node = getattr(options.subOptions, "node", None)
    return 0 if node is None else node.exit_status


def export_chain(argv: list[str]) -> int:
    """
    C{nodex export}: L{nodex.chaintool.run_export}.
    """
    from nodex.chaintool import run_export

    return run_export(argv)


def import_chain(argv: list[str]) -> int:
    """
    C{nodex import}: L{nodex.chaintool.run_import}.
    """
    from nodex.chaintool import run_import

    return run_import(argv)


def simulate(argv: list[str]) -> int:
    """
    C{nodex simulate}: L{nodex.simulation.cli.run_simulate}; then every
    object left is moved out of the garbage collector's sight
    (L{gc.freeze}): the process ends next, and the full collection of the
    interpreter's shutdown would walk the objects of every simulated node
    for nothing (200 nodes x 60 blocks: 6.1 CPU s from the exit handlers
    to the process's end, 0.14 s frozen; it grows with the run:
    C{docs/simulation.md}, "Cost").
    """
    import gc

    from nodex.simulation.cli import run_simulate

    status = run_simulate(argv)
    gc.freeze()
    return status


COMMANDS: dict[str, Command] = {
    "run": Command(run_node, "run the node in the foreground (twistd -n nodex); nodex run --help lists its options"),
    "export": Command(export_chain, "write the canonical chain to a chain file; nodex export --help"),
    "import": Command(import_chain, "import a chain file into a data directory; nodex import --help"),
    "simulate": Command(
        simulate, "run hundreds of nodes in one process on a simulated network and clock; nodex simulate --help"
    ),
}
"""The subcommands of C{nodex}, by name."""


def usage_text() -> str:
    """
    The text of C{nodex --help}.
    """
    width = max(len(name) for name in COMMANDS)
    lines = ["Usage: nodex COMMAND [ARGUMENTS]", "", "Commands:"]
    lines += [f"  {name.ljust(width)}  {command.summary}" for name, command in sorted(COMMANDS.items())]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None, stdout: IO[str] | None = None, stderr: IO[str] | None = None) -> int:
    """
    Dispatch C{nodex COMMAND ARGUMENTS} to its L{Command}.

    @param argv: the arguments after the program name (C{sys.argv[1:]} by default).
    @return: the exit status: the command's, or 1 for an unknown command.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    if not args or args[0] in ("-h", "--help", "help"):
        (out if args else err).write(usage_text())
        return 0 if args else 1
    command = COMMANDS.get(args[0])
    if command is None:
        err.write(f"nodex: unknown command {args[0]!r} (commands: {', '.join(sorted(COMMANDS))})\n")
        return 1
    return command.run(args[1:])


def console_main() -> None:
    """
    The console-script entry point: exit with L{main}'s status.
    """
    raise SystemExit(main())


__all__ = [
    "COMMANDS",
    "Command",
    "NODEX_SERVICE_MAKER",
    "console_main",
    "export_chain",
    "import_chain",
    "main",
    "run_node",
    "simulate",
    "twistd_options_class",
]
