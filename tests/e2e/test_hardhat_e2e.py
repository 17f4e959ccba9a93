"""
End-to-end test of a Hardhat 2 project (with hardhat-ethers) whose script
runs against a nodex node as an external network: deployment, transfers,
impersonation, C{hardhat_mine}, snapshots and message signing, as a
project's scripts and fixtures use them.  Skipped unless node finds the npm
packages C{hardhat} and C{@nomicfoundation/hardhat-ethers} (C{.ci/run}
installs them and names their C{node_modules} in C{NODE_PATH}).
"""

import json
import subprocess
from pathlib import Path

from twisted.internet.threads import deferToThread
from twisted.trial.unittest import SkipTest

from tests.e2e.ethers import NodeJS, node_with_ethers
from tests.e2e.test_web3_node import Web3NodeTestCase

SCRIPT = Path(__file__).resolve().parent / "hardhat_flow.js"
TOKEN = Path(__file__).resolve().parent.parent / "data" / "contracts" / "Token.json"
CONFIG = """
require("@nomicfoundation/hardhat-ethers");
module.exports = {networks: {nodex: {url: process.env.NODEX_URL}}};
"""


def hardhat_modules(node: NodeJS) -> Path:
    """
    The C{node_modules} holding Hardhat and its ethers plugin.

    @raise SkipTest: node cannot find them.
    """
    probe = subprocess.run(
        [node.binary, "-e", "require.resolve('@nomicfoundation/hardhat-ethers'); console.log(require.resolve('hardhat'))"],
        capture_output=True, text=True, env=node.environment,
    )
    if probe.returncode != 0:
        raise SkipTest("the npm packages hardhat and @nomicfoundation/hardhat-ethers are not installed (NODE_PATH)")
    location = Path(probe.stdout.strip())
    while location.name != "node_modules":
        location = location.parent
    return location


class HardhatProjectTests(Web3NodeTestCase):
    """
    A Hardhat project's script against the node.
    """

    async def test_script(self) -> None:
        """
        The script deploys the token, moves tokens from an impersonated
        holder, mines 256 blocks and reverts them, and signs a message;
        every step reads back as on Hardhat's own network.
        """
        node = node_with_ethers()
        modules = hardhat_modules(node)
        await self.start_node()
        project = Path(self.mktemp())
        project.mkdir()
        (project / "hardhat.config.js").write_text(CONFIG)
        (project / "package.json").write_text('{"name": "nodex-e2e", "version": "1.0.0"}')
        # Hardhat insists on an installation local to the project.
        (project / "node_modules").symlink_to(modules)
        (project / "flow.js").write_text(SCRIPT.read_text())
        environment = {
            **node.environment,
            "NODEX_URL": self.w3.provider.endpoint_uri,
            "TOKEN_JSON": str(TOKEN),
            "HARDHAT_DISABLE_TELEMETRY_PROMPT": "true",
        }
        cli = modules / "hardhat" / "internal" / "cli" / "cli.js"
        result = await deferToThread(
            subprocess.run,
            [node.binary, str(cli), "run", "--no-compile", "--network", "nodex", "flow.js"],
            cwd=project, capture_output=True, text=True, timeout=300, env=environment,
        )
        self.assertEqual(result.returncode, 0, result.stderr[-3000:])
        answer = json.loads(result.stdout.strip().splitlines()[-1])
        self.assertEqual(answer["status"], 1, answer)
        self.assertEqual((answer["whaleFrom"], answer["whaleStatus"]), ("0x" + "7a" * 20, 1), answer)
        self.assertEqual(answer["balance"], "1334", answer)
        self.assertEqual(answer["mined"] - answer["reverted"], 256, answer)
        self.assertTrue(answer["signer"], answer)
