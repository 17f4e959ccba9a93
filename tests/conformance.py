"""
Where the ethereum/tests conformance vectors are, for the tests that read them.

The vectors live beside the checkout in C{../shared/fixtures/ethereum-tests}
and are never copied into the project; a test that needs them calls
L{fixture_path}, which raises C{SkipTest} with a clear reason when they are
absent.
"""

import json
from pathlib import Path
from typing import Any

from twisted.trial.unittest import SkipTest

REPOSITORY_ROOT = Path(__file__).resolve().parent.parent
ETHEREUM_TESTS = REPOSITORY_ROOT.parent / "shared" / "fixtures" / "ethereum-tests"


def fixture_path(*parts: str) -> Path:
    """
    The path of a file or folder under the ethereum/tests fixtures.

    @raise SkipTest: the fixtures (or that part of them) are not beside the checkout.
    """
    path = ETHEREUM_TESTS.joinpath(*parts)
    if not path.exists():
        raise SkipTest(f"conformance vectors not found at {path} (../shared is absent)")
    return path


def load_fixture(*parts: str) -> Any:
    """
    Parse one JSON fixture file; skips like L{fixture_path}.
    """
    with fixture_path(*parts).open() as handle:
        return json.load(handle)
