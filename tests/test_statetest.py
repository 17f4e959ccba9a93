"""
Tests for L{nodex.statetest}: the runner's output and its handling of bad
input, and the GeneralStateTests themselves, run through the same code path
as the C{nodex-statetest} command.

The conformance tests run every case of the shared GeneralStateTests but
the last two of vmPerformance/loopMul (nearly two minutes each), one test per
folder: about two and a half minutes on one core.
"""

import io
import json
from itertools import islice
from pathlib import Path

from twisted.trial.unittest import SynchronousTestCase

from nodex.statetest import main, run_file
from tests.conformance import fixture_path

CASE_LIMITS = {"VMTests/vmPerformance/loopMul.json": 1}
"""Files of which only the first cases run here: each case of loopMul is
ten million loop iterations, nearly two minutes; the full run covers the rest."""


def write_json(test: SynchronousTestCase, content: object) -> str:
    """
    Write C{content} as JSON to a fresh file and return its path.
    """
    path = Path(test.mktemp())
    path.write_text(json.dumps(content))
    return str(path)


def run_main(*argv: str) -> tuple[int, list[str]]:
    """
    Run the console script with C{argv}; return its status and output lines.
    """
    out = io.StringIO()
    status = main(list(argv), out=out, err=io.StringIO())
    return status, out.getvalue().splitlines()


MINIMAL_TEST = {
    "add": {
        "env": {
            "currentBaseFee": "0x0a",
            "currentCoinbase": "0x2adc25665018aa1fe0e6bc666dac8fc2697ff9ba",
            "currentDifficulty": "0x020000",
            "currentExcessBlobGas": "0x00",
            "currentGasLimit": "0x05f5e100",
            "currentNumber": "0x01",
            "currentRandom": "0x0000000000000000000000000000000000000000000000000000000000020000",
            "currentTimestamp": "0x03e8",
        },
        "pre": {
            "0xa94f5374fce5edbc8e2a8697c15331677e6ebf0b": {"balance": "0x0ba1a9ce0ba1a9ce", "code": "0x", "nonce": "0x00", "storage": {}},
            "0xcccccccccccccccccccccccccccccccccccccccc": {
                "balance": "0x0ba1a9ce0ba1a9ce",
                "code": "0x600160010160005500",
                "nonce": "0x00",
                "storage": {},
            },
        },
        "transaction": {
            "data": ["0x"],
            "gasLimit": ["0x04c4b400"],
            "gasPrice": "0x0a",
            "nonce": "0x00",
            "secretKey": "0x45a915e4d060149eb4365960e6a7a45f334393093061116b197e3240065ff2d8",
            "to": "0xcccccccccccccccccccccccccccccccccccccccc",
            "value": ["0x01"],
        },
        "post": {"Cancun": [{"hash": "0x00", "indexes": {"data": 0, "gas": 0, "value": 0}, "logs": "0x00"}]},
    }
}


class RunnerTests(SynchronousTestCase):
    """
    Tests for the console script's behaviour.
    """

    def test_output_lines(self) -> None:
        """
        Each case prints a JSON object with the documented keys; the last line counts.
        """
        status, lines = run_main(write_json(self, MINIMAL_TEST))
        case = json.loads(lines[0])
        self.assertEqual(
            set(case), {"name", "fork", "index", "pass", "stateRoot", "expectedRoot", "logsHash", "error"}
        )
        self.assertEqual((case["name"], case["fork"], case["index"]), ("add", "Cancun", [0, 0, 0]))
        self.assertFalse(case["pass"])
        self.assertEqual(case["error"], "state root mismatch; logs hash mismatch")
        self.assertEqual(lines[-1], "0 passed, 1 failed")
        self.assertEqual(status, 1)

    def test_passing_case(self) -> None:
        """
        A case whose expected root and logs match passes, with exit status 0.
        """
        _, lines = run_main(write_json(self, MINIMAL_TEST))
        case = json.loads(lines[0])
        MINIMAL_TEST["add"]["post"]["Cancun"][0].update(hash=case["stateRoot"], logs=case["logsHash"])
        try:
            status, lines = run_main(write_json(self, MINIMAL_TEST))
        finally:
            MINIMAL_TEST["add"]["post"]["Cancun"][0].update(hash="0x00", logs="0x00")
        self.assertEqual((status, lines[-1]), (0, "1 passed, 0 failed"))

    def test_run_filter(self) -> None:
        """
        C{--run} selects tests by a regular expression on their name.
        """
        status, lines = run_main("--run", "^nothing$", write_json(self, MINIMAL_TEST))
        self.assertEqual((status, lines), (0, ["0 passed, 0 failed"]))

    def test_trace(self) -> None:
        """
        C{--trace} writes one EIP-3155 line per instruction, a summary and the
        state root to standard error.
        """
        err = io.StringIO()
        main(["--trace", write_json(self, MINIMAL_TEST)], out=io.StringIO(), err=err)
        lines = [json.loads(line) for line in err.getvalue().splitlines()]
        self.assertEqual([line.get("opName") for line in lines[:3]], ["PUSH1", "PUSH1", "ADD"])
        self.assertEqual(lines[0]["gasCost"], "0x3")
        self.assertEqual(set(lines[0]), {"pc", "op", "gas", "gasCost", "memSize", "stack", "depth", "refund", "opName"})
        self.assertEqual(set(lines[-2]), {"output", "gasUsed"})
        self.assertEqual(set(lines[-1]), {"stateRoot"})

    def test_malformed_json(self) -> None:
        """
        A file that is not JSON is one failed case with a message.
        """
        path = Path(self.mktemp())
        path.write_text("{not json")
        status, lines = run_main(str(path))
        self.assertIn("cannot read", json.loads(lines[0])["error"])
        self.assertEqual((status, lines[-1]), (1, "0 passed, 1 failed"))

    def test_malformed_case(self) -> None:
        """
        Bad hex in the bytecode or a missing field fails the case with a message.
        """
        broken = json.loads(json.dumps(MINIMAL_TEST))
        broken["add"]["pre"]["0xcccccccccccccccccccccccccccccccccccccccc"]["code"] = "0xzz"
        del broken["add"]["transaction"]["nonce"]
        broken["other"] = {"post": "nonsense"}
        status, lines = run_main(write_json(self, broken))
        results = [json.loads(line) for line in lines[:-1]]
        self.assertEqual([r["pass"] for r in results], [False, False])
        self.assertTrue(all(r["error"].startswith("malformed test") for r in results))

    def test_unknown_fork_skipped(self) -> None:
        """
        A fork without a rule set is reported as a skip naming it, never as
        a pass, and counted in the summary; the known fork's cases still run.
        """
        test = json.loads(json.dumps(MINIMAL_TEST))
        test["add"]["post"]["Prague"] = [{"hash": "0x00", "indexes": {"data": 0, "gas": 0, "value": 0}}] * 2
        status, lines = run_main(write_json(self, test))
        results = [json.loads(line) for line in lines[:-1]]
        skip = next(r for r in results if r["fork"] == "Prague")
        self.assertEqual((skip["pass"], skip["skipped"], skip["cases"]), (False, True, 2))
        self.assertEqual(skip["error"], "unknown fork Prague: no rule set, 2 case(s) skipped")
        self.assertEqual([r["fork"] for r in results if not r.get("skipped")], ["Cancun"])
        self.assertEqual(lines[-1], "0 passed, 1 failed, 2 skipped (unknown forks: Prague)")
        self.assertEqual(status, 1)

    def test_only_unknown_forks(self) -> None:
        """
        A file with only unknown forks passes nothing and fails nothing.
        """
        test = json.loads(json.dumps(MINIMAL_TEST))
        test["add"]["post"] = {"Osaka": [test["add"]["post"]["Cancun"][0]]}
        status, lines = run_main(write_json(self, test))
        self.assertEqual(lines[-1], "0 passed, 0 failed, 1 skipped (unknown forks: Osaka)")
        self.assertEqual(status, 0)

    def test_fork_rule_set_used(self) -> None:
        """
        Each case runs under exactly the fork its post section names: CLZ
        (0x1e) is an invalid opcode under Cancun and counts under Cancun+CLZ.
        """
        test = json.loads(json.dumps(MINIMAL_TEST))
        # PUSH1 1, CLZ, PUSH1 0, SSTORE: stores 255 where CLZ exists.
        test["add"]["pre"]["0xcccccccccccccccccccccccccccccccccccccccc"]["code"] = "0x60011e60005500"
        post = test["add"]["post"]["Cancun"][0]
        test["add"]["post"]["Cancun+CLZ"] = [dict(post)]
        _, lines = run_main(write_json(self, test))
        roots = {json.loads(line)["fork"]: json.loads(line)["stateRoot"] for line in lines[:-1]}
        self.assertEqual(set(roots), {"Cancun", "Cancun+CLZ"})
        self.assertNotEqual(roots["Cancun"], roots["Cancun+CLZ"])
        err = io.StringIO()
        main(["--trace", write_json(self, test)], out=io.StringIO(), err=err)
        names = [json.loads(line).get("opName") for line in err.getvalue().splitlines()]
        self.assertIn("opcode 0x1e not defined", names)
        self.assertIn("CLZ", names)

    def test_missing_path(self) -> None:
        """
        A path that does not exist fails with a message.
        """
        status, lines = run_main(self.mktemp())
        self.assertIn("cannot read", json.loads(lines[0])["error"])
        self.assertEqual(status, 1)


class GeneralStateTestsTests(SynchronousTestCase):
    """
    The shared GeneralStateTests, one test per folder, for Cancun.
    """


def _folder_test(folder: str) -> object:
    """
    A test method running every file of C{folder} (relative to GeneralStateTests).
    """

    def test(self: SynchronousTestCase) -> None:
        root = fixture_path("GeneralStateTests")
        failures = []
        for path in sorted((root / folder).glob("*.json")):
            relative = path.relative_to(root).as_posix()
            for result in islice(run_file(path), CASE_LIMITS.get(relative)):
                if not result.passed:
                    failures.append(f"{relative} {result.name} {list(result.index)}: {result.error}")
        if failures:
            self.fail("\n".join(failures))

    test.__doc__ = f"Every case of GeneralStateTests/{folder} passes."
    return test


def _folders() -> list[str]:
    """
    The folders of GeneralStateTests that hold test files, or none if the fixtures are absent.
    """
    from tests.conformance import ETHEREUM_TESTS

    root = ETHEREUM_TESTS / "GeneralStateTests"
    if not root.exists():
        return ["absent"]
    return sorted({path.parent.relative_to(root).as_posix() for path in root.rglob("*.json")})


for _folder in _folders():
    setattr(GeneralStateTestsTests, "test_" + _folder.replace("/", "_").replace("-", "_"), _folder_test(_folder))


class InternalErrorTests(SynchronousTestCase):
    """
    Tests for a bug below the runner.
    """

    def test_unexpected_exception_fails_the_case(self) -> None:
        """
        An unexpected exception while executing fails that case with a message, and the run goes on.
        """
        import nodex.statetest

        def broken(*args: object, **kwargs: object) -> None:
            """
            Fail as a bug would.
            """
            raise ZeroDivisionError("boom")

        self.patch(nodex.statetest, "apply_transaction", broken)
        status, lines = run_main(write_json(self, MINIMAL_TEST))
        self.assertEqual(json.loads(lines[0])["error"], "internal error: ZeroDivisionError('boom')")
        self.assertEqual((status, lines[-1]), (1, "0 passed, 1 failed"))
