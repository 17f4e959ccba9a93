"""
End-to-end tests with Foundry's C{cast} (issue 27), the binary of the npm
package C{@foundry-rs/cast-linux-amd64} (C{.ci/run} installs a pinned
version): reads, blocks, sends from a node-held account, calls and their
reverts, estimates, receipts, logs, access lists, C{cast run} (a local
replay of a mined transaction) and C{cast publish}.

Every check passes under the Ethereum conventions; under the default ones
every check but C{cast block pending}, which asks for the pending block
that the specification refuses (C{docs/compatibility.md}).

Skipped unless node finds the package (C{NODE_PATH}).
"""

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from eth_account import Account as EthAccount
from twisted.internet.threads import deferToThread
from twisted.trial.unittest import SkipTest

from nodex.crypto import keccak256
from tests.e2e.ethers import node_with_ethers
from tests.e2e.toolsuite import CONTRACTS, BothConventions, ToolSuiteTestCase

COW = "0xcd2a3d9f938e13cd947ec05abc7fe734df8dd826"
COW1 = "0x7986b3df570230288501eea3d890bd66948c9b79"
PUBLISHER_KEY = "0x" + keccak256(b"cow9").hex()

REFERENCE_DIFFERENCES = {"block pending"}
"""The checks that depend on a convention difference (docs/compatibility.md)."""


def cast_binary() -> Path:
    """
    The C{cast} binary of the npm package C{@foundry-rs/cast-linux-amd64}.

    @raise SkipTest: node or the package is missing.
    """
    node = node_with_ethers()
    probe = subprocess.run(
        [node.binary, "-e", "console.log(require.resolve('@foundry-rs/cast-linux-amd64/package.json'))"],
        capture_output=True, text=True, env=node.environment,
    )
    if probe.returncode != 0:
        raise SkipTest("the npm package @foundry-rs/cast-linux-amd64 is not installed (NODE_PATH)")
    binary = Path(probe.stdout.strip()).parent / "bin" / "cast"
    if not binary.exists():
        raise SkipTest(f"{binary} is missing")
    return binary


def cast_checks(cast: Path, url: str) -> dict[str, str]:
    """
    Run the cast commands against the node at C{url}, one check each:
    "ok", or what went wrong.
    """
    checks: dict[str, str] = {}
    environment = {"ETH_RPC_URL": url, "NO_COLOR": "1", "FOUNDRY_DISABLE_NIGHTLY_WARNING": "1", "HOME": str(cast.parent)}
    found: dict[str, str] = {}

    def cast_run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(cast), *argv], capture_output=True, text=True, timeout=120, env=environment)

    def check(name: str, argv: list[str], accept: Callable[[str, str], bool]) -> None:
        try:
            result = cast_run(*argv)
            outcome = accept(result.stdout.strip(), result.stderr.strip()) and (
                result.returncode == 0 or "error" in name
            )
            checks[name] = "ok" if outcome else (result.stderr.strip() or result.stdout.strip())[:300] or "no output"
        except Exception as exc:  # noqa: BLE001 - each check reports its own failure
            checks[name] = f"{type(exc).__name__}: {exc}"

    def keep(key: str, value: str) -> bool:
        found[key] = value
        return bool(value)

    reverter = json.loads((CONTRACTS / "Reverter.json").read_text())
    check("chain-id", ["chain-id"], lambda out, err: out == "33")
    check("block-number", ["block-number"], lambda out, err: out.isdigit())
    check("client version", ["rpc", "web3_clientVersion"], lambda out, err: "nodex" in out)
    check("balance", ["balance", COW], lambda out, err: int(out) > 0)
    check("gas-price", ["gas-price"], lambda out, err: out.isdigit())
    check("block latest", ["block", "latest", "--json"], lambda out, err: json.loads(out)["hash"].startswith("0x"))
    check("block pending", ["block", "pending", "--json"], lambda out, err: json.loads(out)["parentHash"].startswith("0x"))
    check(
        "send --create from a node-held account",
        ["send", "--unlocked", "--from", COW, "--create", reverter["bytecode"], "--json"],
        lambda out, err: json.loads(out)["status"] == "0x1" and keep("reverter", json.loads(out)["contractAddress"]),
    )
    contract = found.get("reverter", COW1)
    check(
        "send a call",
        ["send", "--unlocked", "--from", COW, contract, "increment()", "--json"],
        lambda out, err: json.loads(out)["status"] == "0x1" and keep("tx", json.loads(out)["transactionHash"]),
    )
    tx = found.get("tx", "0x" + "00" * 32)
    check("call", ["call", contract, "counter()(uint256)"], lambda out, err: out == "1")
    check("call error shows the revert reason", ["call", contract, "revertWithReason()"],
          lambda out, err: "Reverter: always fails" in err)
    check("estimate", ["estimate", contract, "increment()", "--from", COW], lambda out, err: 21000 < int(out) < 100000)
    check("receipt", ["receipt", tx, "status"], lambda out, err: out in ("1", "true", "1 (success)"))
    check("tx", ["tx", tx, "from"], lambda out, err: out.lower() == COW)
    check("storage", ["storage", contract, "0"], lambda out, err: int(out, 16) == 1)
    check("code", ["code", contract], lambda out, err: out == reverter["deployedBytecode"])
    check("nonce", ["nonce", COW], lambda out, err: int(out) == 2)
    check("logs", ["logs", "--from-block", "0", "--address", contract], lambda out, err: True)
    check("access-list", ["access-list", contract, "increment()", "--from", COW],
          lambda out, err: "gas used" in out and contract[2:].lower() in out.lower())
    check("run (replay a mined transaction)", ["run", tx], lambda out, err: "successfully executed" in out)
    signed = EthAccount.sign_transaction(
        {"chainId": 33, "nonce": 0, "gasPrice": 0, "gas": 21000, "to": bytes.fromhex(COW1[2:]), "value": 1}, PUBLISHER_KEY
    )
    check("publish", ["publish", "0x" + bytes(signed.raw_transaction).hex()], lambda out, err: "0x" in out)
    check("rpc anvil_mine", ["rpc", "anvil_mine", "0x3", "0x0"], lambda out, err: out == "null")
    return checks


class CastTests(BothConventions, ToolSuiteTestCase):
    """
    Foundry's cast against the node, under each set of conventions.
    """

    reference_failing = frozenset(REFERENCE_DIFFERENCES)

    async def checks(self, *argv: str) -> dict[str, str]:
        """
        Start a node with C{argv} and run the cast commands against it.
        """
        cast = cast_binary()
        await self.start_node(*argv)
        return await deferToThread(cast_checks, cast, self.url)
