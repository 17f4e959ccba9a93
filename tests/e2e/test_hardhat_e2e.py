"""
End-to-end tests of a Hardhat 2 project (with hardhat-ethers) whose scripts
run against a nodex node as an external network: deployment, transfers,
impersonation, C{hardhat_mine}, snapshots and message signing, as a
project's scripts and fixtures use them, by hand and through Hardhat's
Network Helpers.  Skipped unless node finds the npm packages C{hardhat},
C{@nomicfoundation/hardhat-ethers} and C{@nomicfoundation/hardhat-network-helpers}
(C{.ci/run} installs them and names their C{node_modules} in C{NODE_PATH}).
"""

import json
import subprocess
from pathlib import Path

from twisted.internet.threads import deferToThread
from twisted.trial.unittest import SkipTest

from tests.e2e.ethers import NodeJS, node_with_ethers
from tests.e2e.test_web3_node import Web3NodeTestCase
from tests.e2e.toolsuite import ETHEREUM, ToolSuiteTestCase

SCRIPT = Path(__file__).resolve().parent / "hardhat_flow.js"
HELPERS_SCRIPT = Path(__file__).resolve().parent / "hardhat_helpers_flow.js"
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
        [
            node.binary, "-e",
            "require.resolve('@nomicfoundation/hardhat-ethers');"
            " require.resolve('@nomicfoundation/hardhat-network-helpers');"
            " console.log(require.resolve('hardhat'))",
        ],
        capture_output=True, text=True, env=node.environment,
    )
    if probe.returncode != 0:
        raise SkipTest(
            "the npm packages hardhat, @nomicfoundation/hardhat-ethers and"
            " @nomicfoundation/hardhat-network-helpers are not installed (NODE_PATH)"
        )
    location = Path(probe.stdout.strip())
    while location.name != "node_modules":
        location = location.parent
    return location


class HardhatProjectTests(Web3NodeTestCase):
    """
    A Hardhat project's scripts against the node.
    """

    async def run_script(self, script: Path, *argv: str) -> subprocess.CompletedProcess[str]:
        """
        Start a node with the options C{argv} and run C{script} in a fresh
        Hardhat project with C{npx hardhat run --network nodex}.
        """
        node = node_with_ethers()
        modules = hardhat_modules(node)
        await self.start_node(*argv)
        project = Path(self.mktemp())
        project.mkdir()
        (project / "hardhat.config.js").write_text(CONFIG)
        (project / "package.json").write_text('{"name": "nodex-e2e", "version": "1.0.0"}')
        # Hardhat insists on an installation local to the project.
        (project / "node_modules").symlink_to(modules)
        (project / "flow.js").write_text(script.read_text())
        environment = {
            **node.environment,
            "NODEX_URL": self.w3.provider.endpoint_uri,
            "TOKEN_JSON": str(TOKEN),
            "HARDHAT_DISABLE_TELEMETRY_PROMPT": "true",
        }
        cli = modules / "hardhat" / "internal" / "cli" / "cli.js"
        return await deferToThread(
            subprocess.run,
            [node.binary, str(cli), "run", "--no-compile", "--network", "nodex", "flow.js"],
            cwd=project, capture_output=True, text=True, timeout=300, env=environment,
        )

    async def test_script(self) -> None:
        """
        The script deploys the token, moves tokens from an impersonated
        holder, mines 256 blocks and reverts them, and signs a message;
        every step reads back as on Hardhat's own network.
        """
        result = await self.run_script(SCRIPT)
        self.assertEqual(result.returncode, 0, result.stderr[-3000:])
        answer = json.loads(result.stdout.strip().splitlines()[-1])
        self.assertEqual(answer["status"], 1, answer)
        self.assertEqual((answer["whaleFrom"], answer["whaleStatus"]), ("0x" + "7a" * 20, 1), answer)
        self.assertEqual(answer["balance"], "1334", answer)
        self.assertEqual(answer["mined"] - answer["reverted"], 256, answer)
        self.assertTrue(answer["signer"], answer)

    async def test_network_helpers(self) -> None:
        """
        With C{rpc.client_version} starting with C{anvil}, a fixture written
        with Hardhat's Network Helpers runs: C{loadFixture}, C{time},
        C{mine}/C{mineUpTo}, the account setters, impersonation, snapshots
        and the block gas limit.
        """
        config = Path(self.mktemp())
        config.write_text('[rpc]\nclient_version = "anvil/nodex"\n')
        result = await self.run_script(HELPERS_SCRIPT, "--config", str(config))
        self.assertEqual(result.returncode, 0, result.stderr[-3000:])
        self.assertEqual(await self.blocking(lambda: self.w3.client_version), "anvil/nodex")
        answer = json.loads(result.stdout.strip().splitlines()[-1])
        self.assertEqual(answer, {
            "sameToken": True, "balanceAfterFixture": "0", "increased": 3600, "increasedTo": 86400,
            "mined": 1000, "minedUpTo": 1500, "balance": str(10**18), "nonce": 5,
            "code": "0x60016000526001601ff3", "storage": "0x" + "2a".rjust(64, "0"),
            "whaleFrom": "0x" + "7a" * 20, "restored": 10, "gasLimit": 20_000_000,
        })

    async def test_network_helpers_refuse_nodex_by_default(self) -> None:
        """
        With nodex's own C{web3_clientVersion} the Network Helpers refuse
        the node, which is why C{rpc.client_version} exists.
        """
        result = await self.run_script(HELPERS_SCRIPT)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("can only be used with Hardhat Network", result.stderr)


PROJECT_TESTS = Path(__file__).resolve().parent / "hardhat_project.test.js"
PROJECT_CONFIG = """
require("@nomicfoundation/hardhat-ethers");
require("@nomicfoundation/hardhat-chai-matchers");
module.exports = {
  networks: {nodex: {url: process.env.NODEX_URL, timeout: 60000}},
  mocha: {timeout: 60000, reporter: "json", reporterOptions: {output: process.env.MOCHA_REPORT}},
};
"""


class HardhatTestSuiteTests(ToolSuiteTestCase):
    """
    A Hardhat project's own tests (mocha, hardhat-ethers, Network Helpers
    and Chai matchers: C{tests/e2e/hardhat_project.test.js}) run with
    C{hardhat test --network nodex}, under each set of conventions: loadFixture,
    the balance and event matchers, reverts of every kind, time, mining,
    impersonation, snapshots, and transactions sent together with and
    without automining (OpenZeppelin's C{batchInBlock}: issue 27's hang).
    """

    async def outcomes(self, *argv: str) -> dict[str, str]:
        """
        Start a node with C{argv}, run the project's tests against it, and
        return each test's outcome ("ok" or its error) by full title.
        """
        node = node_with_ethers()
        modules = hardhat_modules(node)
        probe = subprocess.run(
            [node.binary, "-e", "require.resolve('@nomicfoundation/hardhat-chai-matchers'); require.resolve('chai')"],
            capture_output=True, env=node.environment,
        )
        if probe.returncode != 0:
            raise SkipTest("the npm packages @nomicfoundation/hardhat-chai-matchers and chai are not installed")
        await self.start_node(*argv)
        project = Path(self.mktemp()).absolute()
        (project / "test").mkdir(parents=True)
        (project / "hardhat.config.js").write_text(PROJECT_CONFIG)
        (project / "package.json").write_text('{"name": "nodex-e2e", "version": "1.0.0"}')
        (project / "node_modules").symlink_to(modules)
        (project / "test" / "project.test.js").write_text(PROJECT_TESTS.read_text())
        report = project / "report.json"
        environment = {
            **self.environment(node.environment),
            "MOCHA_REPORT": str(report),
            "HARDHAT_DISABLE_TELEMETRY_PROMPT": "true",
        }
        cli = modules / "hardhat" / "internal" / "cli" / "cli.js"
        result = await self.run_tool(
            [node.binary, str(cli), "test", "--no-compile", "--network", "nodex"], environment, cwd=project
        )
        if not report.exists():
            raise AssertionError(f"no mocha report ({result.returncode}): {result.stderr[-3000:]}")
        tests = json.loads(report.read_text())
        outcomes = {test["fullTitle"]: "ok" for test in tests["passes"]}
        outcomes.update({test["fullTitle"]: test["err"].get("message", "failed") for test in tests["failures"]})
        self.assertEqual(len(outcomes), tests["stats"]["tests"])
        return outcomes

    async def test_ethereum_conventions(self) -> None:
        """
        Under the Ethereum conventions every test passes, the Network
        Helpers accepting the node's client version as it is.
        """
        outcomes = await self.outcomes(*ETHEREUM)
        self.assert_checks(outcomes, set())
        self.assertEqual(len(outcomes), 14)

    async def test_reference_conventions(self) -> None:
        """
        Under the default conventions, with C{rpc.client_version} set so
        that the Network Helpers accept the node, every test passes too:
        hardhat-ethers estimates the gas of what it sends, and the Chai
        matchers decode reverts from their data whatever the code.
        """
        config = Path(self.mktemp())
        config.write_text('[rpc]\nclient_version = "anvil/nodex"\n')
        self.assert_checks(await self.outcomes("--config", str(config)), set())
