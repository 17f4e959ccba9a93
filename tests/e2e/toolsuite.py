"""
What the end-to-end tests of the real tool suites share (issue 27): a
regtest node with HTTP and WebSocket on port 0, under the default
conventions or the Ethereum ones (C{--compat ethereum}), and scripts that
report named checks.

A tool's script runs each check on its own and prints, last, a JSON
object C{{"checks": {name: "ok" | the error's first line}}}; a test asserts
which checks pass under each set of conventions, so that the pass counts
per tool are the test's own numbers (C{docs/compatibility.md}).
"""

import json
import subprocess
from pathlib import Path
from typing import Any

from twisted.internet.threads import deferToThread
from twisted.trial.unittest import TestCase

from nodex.node import NodeService
from nodex.tap import Options, makeService

CONTRACTS = Path(__file__).resolve().parent.parent / "data" / "contracts"

ETHEREUM = ("--compat", "ethereum")
"""The options that select the Ethereum conventions."""


def checks_of(result: subprocess.CompletedProcess[str]) -> dict[str, str]:
    """
    The named checks a tool script reported on its last line.

    @raise AssertionError: the script failed or printed no checks.
    """
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        raise AssertionError(f"the script failed ({result.returncode}): {result.stderr[-3000:]}")
    return dict(json.loads(lines[-1])["checks"])


class ToolSuiteTestCase(TestCase):
    """
    Start a node whose HTTP and WebSocket URLs the tools are given.

    A tool's run starts Node.js and loads Hardhat or viem, seconds on a
    loaded machine: the tests allow 300 s (trial's default is 120).
    """

    timeout = 300

    async def start_node(self, *argv: str) -> None:
        """
        Start a regtest node on port 0 (HTTP and WebSocket) with the extra
        options C{argv}; its URLs go to C{self.url} and C{self.ws_url}.
        """
        options = Options()
        options.parseOptions(
            ["--datadir", self.mktemp(), "--rpc", "tcp:0:interface=127.0.0.1", "--ws", "tcp:0:interface=127.0.0.1",
             *argv]
        )
        node: NodeService = makeService(options)
        node.startService()
        self.node = node
        self.addCleanup(self._stop_node)
        http = await node.getServiceNamed("rpc").when_listening()
        ws = await node.getServiceNamed("ws").when_listening()
        self.url = f"http://127.0.0.1:{http.getHost().port}/"
        self.ws_url = f"ws://127.0.0.1:{ws.getHost().port}/"

    async def _stop_node(self) -> None:
        """
        Stop the node if it still runs.
        """
        if self.node.running:
            await self.node.stopService()

    def environment(self, base: dict[str, str]) -> dict[str, str]:
        """
        C{base} with the node's URLs and the test contracts' folder.
        """
        return {**base, "NODEX_URL": self.url, "NODEX_WS_URL": self.ws_url, "CONTRACTS": str(CONTRACTS)}

    async def run_tool(self, argv: list[str], environment: dict[str, str], cwd: Path | None = None,
                  timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """
        Run a tool's process off the reactor thread (the node answers it meanwhile).
        """
        return await deferToThread(
            subprocess.run, argv, capture_output=True, text=True, timeout=timeout, env=environment, cwd=cwd
        )

    def assert_checks(self, checks: dict[str, Any], failing: set[str]) -> None:
        """
        Every check passed except those named in C{failing}, which failed.
        """
        failed = {name for name, outcome in checks.items() if outcome != "ok"}
        self.assertEqual(failed, failing, json.dumps(checks, indent=1))
        self.assertLessEqual(failing, set(checks))


class BothConventions:
    """
    The two tests of a tool run under each set of conventions; the class
    says which checks fail under each (a convention difference, listed in
    C{docs/compatibility.md}) and how to get the checks.
    """

    ethereum_failing: frozenset[str] = frozenset()
    reference_failing: frozenset[str] = frozenset()

    async def checks(self, *argv: str) -> dict[str, str]:
        """
        Start a node with C{argv} and run the tool's checks against it.
        """
        raise NotImplementedError

    async def test_ethereum_conventions(self) -> None:
        """
        Under the Ethereum conventions every check passes (but those the class names).
        """
        self.assert_checks(await self.checks(*ETHEREUM), set(self.ethereum_failing))  # type: ignore[attr-defined]

    async def test_reference_conventions(self) -> None:
        """
        Under the default conventions only the checks that depend on a
        listed difference fail.
        """
        self.assert_checks(await self.checks(), set(self.reference_failing))  # type: ignore[attr-defined]


__all__ = ["CONTRACTS", "ETHEREUM", "BothConventions", "ToolSuiteTestCase", "checks_of"]
