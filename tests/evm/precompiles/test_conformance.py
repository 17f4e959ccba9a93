"""
The precompiles inside the whole EVM: ethereum/tests'
C{GeneralStateTests/stPreCompiledContracts} and the C{stStaticCall} files
about precompiles, run through the state-test runner of C{nodex.statetest}.
"""

import json
from pathlib import Path

from twisted.trial.unittest import SynchronousTestCase

from nodex.statetest import run_file
from tests.conformance import fixture_path

# The files whose transactions pass the precompile to call as their first
# ABI argument, among them 0x0a (KZG point evaluation).
_ADDRESS_ARGUMENT_FILES = ("idPrecomps.json", "precompsEIP2929Cancun.json")
_POINT_EVALUATION = 0x0A


def calls_point_evaluation(path: Path, data_index: int) -> bool:
    """
    Whether the case of C{path} with transaction data C{data_index} calls
    the point evaluation precompile 0x0a.
    """
    if path.name not in _ADDRESS_ARGUMENT_FILES:
        return False
    with path.open() as handle:
        (test,) = json.load(handle).values()
    data = bytes.fromhex(test["transaction"]["data"][data_index][2:])
    return int.from_bytes(data[4:36], "big") == _POINT_EVALUATION


class PreCompiledContractsTests(SynchronousTestCase):
    """
    Every Cancun case of the chosen files ends with the expected state root
    and logs.
    """

    def check_file(self, name: str, folder: str = "stPreCompiledContracts") -> None:
        """
        Run one fixture file and fail with the cases that did not pass.
        """
        path = fixture_path("GeneralStateTests", folder, name)
        failures = [
            f"{result.name} {list(result.index)}: {result.error}"
            for result in run_file(path)
            if not result.passed
        ]
        self.assertEqual(failures, [])

    def test_modexp(self) -> None:
        """
        MODEXP's results and EIP-2565 prices (C{modexp.json}).
        """
        self.check_file("modexp.json")

    def test_modexp_tests(self) -> None:
        """
        MODEXP with zero, short and oversized lengths (C{modexpTests.json}).
        """
        self.check_file("modexpTests.json")

    def test_blake2b(self) -> None:
        """
        BLAKE2F's results, prices and rejected inputs (C{blake2B.json}).
        """
        self.check_file("blake2B.json")

    def test_identity(self) -> None:
        """
        The identity contract copying into larger and smaller buffers.
        """
        self.check_file("identity_to_bigger.json")
        self.check_file("identity_to_smaller.json")

    def test_every_precompile(self) -> None:
        """
        A call to each precompile, and to the addresses after them
        (C{idPrecomps.json}).
        """
        self.check_file("idPrecomps.json")

    def test_access_costs(self) -> None:
        """
        Precompiles are warm from the start of a transaction under EIP-2929
        (C{precompsEIP2929Cancun.json}).
        """
        self.check_file("precompsEIP2929Cancun.json")

    def test_sec80(self) -> None:
        """
        C{sec80.json}, a regression case of the suite's security series.
        """
        self.check_file("sec80.json")

    def test_blake2f_delegatecall(self) -> None:
        """
        A DELEGATECALL to BLAKE2F with empty input and one unit of gas fails
        and consumes it (C{delegatecall09Undefined.json}).
        """
        self.check_file("delegatecall09Undefined.json")

    def test_static_calls(self) -> None:
        """
        ECRECOVER, SHA-256 and RIPEMD-160 called with STATICCALL, and every
        precompile from a transaction, a called contract and an initcode
        (the C{stStaticCall} files about precompiles).
        """
        folder = fixture_path("GeneralStateTests", "stStaticCall")
        patterns = ("static_CallEcrecover*", "static_CallSha256*", "static_CallRipemd160*",
                    "static_Call50000_ecrec*", "StaticcallToPrecompile*")
        names = sorted({path.name for pattern in patterns for path in folder.glob(pattern + ".json")})
        self.assertGreater(len(names), 30)
        for name in names:
            self.check_file(name, "stStaticCall")

    def test_point_evaluation(self) -> None:
        """
        The 23 cases that call 0x0a all pass, among them the 19 that failed
        while nodex had no point evaluation (case 9 of C{idPrecomps.json}
        and 18 of C{precompsEIP2929Cancun.json}); the other four passed
        even then.
        """
        results: dict[tuple[str, int], bool] = {}
        for name in _ADDRESS_ARGUMENT_FILES:
            path = fixture_path("GeneralStateTests", "stPreCompiledContracts", name)
            for result in run_file(path):
                if calls_point_evaluation(path, result.index[0]):
                    results[(name, result.index[0])] = result.passed
        formerly_failing = {("idPrecomps.json", 9)} | {
            ("precompsEIP2929Cancun.json", data)
            for data in (12, 27, 45, 63, 81, 99, 117, 135, 153, 171, 189, 207, 225, 243, 261, 279, 297, 315)
        }
        self.assertEqual(len(results), 23)
        self.assertEqual(len(formerly_failing), 19)
        self.assertLessEqual(formerly_failing, set(results))
        self.assertEqual([case for case, passed in results.items() if not passed], [])

    def test_point_evaluation_cases_found(self) -> None:
        """
        The filter recognises the cases that call 0x0a, and only those.
        """
        path = fixture_path("GeneralStateTests", "stPreCompiledContracts", "idPrecomps.json")
        self.assertTrue(calls_point_evaluation(path, 9))
        self.assertFalse(calls_point_evaluation(path, 8))
        modexp = fixture_path("GeneralStateTests", "stPreCompiledContracts", "modexp.json")
        self.assertFalse(calls_point_evaluation(modexp, 0))
