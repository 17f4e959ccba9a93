"""
End-to-end tests with viem (issue 27): a public client, a wallet client
with a node-held account, a test client's C{mine}, C{simulateContract}
revert decoding and C{watchContractEvent} over HTTP and WebSocket.

Under the Ethereum conventions every check passes; under the default ones
every check passes except those that depend on a listed convention
difference (C{docs/compatibility.md}): viem decodes revert data only for
codes 3 and -32603, and a node-held account's C{deployContract} leaves the
gas to the node, which by the specification's default gives 90,000.

Skipped unless node finds the npm package C{viem} (C{.ci/run} installs it
and names its C{node_modules} in C{NODE_PATH}).
"""

import subprocess
from pathlib import Path

from twisted.trial.unittest import SkipTest

from tests.e2e.ethers import NodeJS, node_with_ethers
from tests.e2e.toolsuite import BothConventions, ToolSuiteTestCase, checks_of

SCRIPT = Path(__file__).resolve().parent / "viem_flow.js"

REFERENCE_DIFFERENCES = {
    "wallet: deployContract from a node-held account without gas",
    "simulateContract decodes a revert reason",
    "simulateContract decodes a custom error",
}
"""The checks that depend on a convention difference (docs/compatibility.md)."""


def node_with_viem() -> NodeJS:
    """
    Node.js, once it has shown that it can load viem.

    @raise SkipTest: node or viem is missing.
    """
    node = node_with_ethers()
    probe = subprocess.run([node.binary, "-e", "require.resolve('viem')"], capture_output=True, env=node.environment)
    if probe.returncode != 0:
        raise SkipTest("the npm package viem is not installed (NODE_PATH)")
    return node


class ViemTests(BothConventions, ToolSuiteTestCase):
    """
    viem's clients against the node, under each set of conventions.
    """

    reference_failing = frozenset(REFERENCE_DIFFERENCES)

    async def checks(self, *argv: str) -> dict[str, str]:
        """
        Start a node with C{argv} and run the viem script against it.
        """
        node = node_with_viem()
        await self.start_node(*argv)
        return checks_of(await self.run_tool([node.binary, str(SCRIPT)], self.environment(node.environment)))
