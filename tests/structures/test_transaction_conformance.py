"""
The shared ethereum/tests C{TransactionTests} vectors against
L{nodex.structures.transactions} and L{nodex.structures.transaction_rules}.

Each vector holds raw bytes and, per fork, either the hash, sender and
intrinsic gas of a valid transaction or the name of the exception a client
raises.  We read the C{Cancun} expectation, or the latest fork present in
files filled before Cancun, and validate with chain id 1 as the fillers did.
"""

from typing import Any

from twisted.trial.unittest import SynchronousTestCase

from nodex.structures.errors import InvalidTransactionError, RLPError, UnsupportedTransactionTypeError
from nodex.structures.transaction_rules import intrinsic_gas, validate_transaction
from nodex.structures.transactions import REFUSED_TX_TYPES, decode_transaction
from tests.conformance import fixture_path, load_fixture

FORKS_NEWEST_FIRST = ("Prague", "Cancun", "Shanghai", "Paris", "London", "Berlin")
FILLER_CHAIN_ID = 1


def expectation(vector: dict[str, Any]) -> dict[str, str]:
    """
    The result of the newest fork a vector lists, Cancun or earlier.
    """
    for fork in FORKS_NEWEST_FIRST[1:]:
        if fork in vector["result"]:
            return vector["result"][fork]
    raise AssertionError(f"no known fork in {sorted(vector['result'])}")


def check_vector(vector: dict[str, Any]) -> str:
    """
    Run one vector.

    @return: C{"agree"} when our answer matches the expectation,
        C{"refused by design"} for a valid type 3 or 4 transaction, or a
        description of the disagreement.
    """
    expected = expectation(vector)
    raw = bytes.fromhex(vector["txbytes"][2:])
    try:
        tx = decode_transaction(raw)
        validate_transaction(tx, FILLER_CHAIN_ID)
    except UnsupportedTransactionTypeError as exc:
        if "exception" in expected:
            return "agree"
        if raw[:1] and raw[0] in REFUSED_TX_TYPES:
            return "refused by design"
        return f"refused a valid transaction: {exc}"
    except (RLPError, InvalidTransactionError) as exc:
        if "exception" in expected:
            return "agree"
        return f"refused a valid transaction: {exc}"
    if "exception" in expected:
        return f"accepted a transaction that should fail with {expected['exception']}"
    got = ("0x" + tx.hash.hex(), "0x" + tx.sender.hex(), intrinsic_gas(tx))
    want = (expected["hash"], expected["sender"], int(expected["intrinsicGas"], 16))
    return "agree" if got == want else f"got {got}, want {want}"


class TransactionConformanceTests(SynchronousTestCase):
    """
    Every C{TransactionTests} vector gives the expected hash, sender and
    intrinsic gas, or is refused.
    """

    def test_all_vectors(self) -> None:
        """
        All 210 vectors agree; none needs the refused-by-design exemption
        (the suite has no valid type 3 or 4 transaction).
        """
        root = fixture_path("TransactionTests")
        outcomes: dict[str, str] = {}
        for path in sorted(root.rglob("*.json")):
            for name, vector in load_fixture("TransactionTests", *path.relative_to(root).parts).items():
                outcomes[f"{path.relative_to(root)}:{name}"] = check_vector(vector)
        disagreements = {name: outcome for name, outcome in outcomes.items() if outcome != "agree"}
        self.assertEqual(disagreements, {})
        self.assertEqual(len(outcomes), 210)

    def test_type_4_vector_refused_by_type(self) -> None:
        """
        The suite's type 4 vector is refused because of its type, with the
        chain's own message.
        """
        vector = load_fixture("TransactionTests", "ttWrongRLP", "RLP_04_maxFeePerGas32BytesValue.json")
        raw = bytes.fromhex(next(iter(vector.values()))["txbytes"][2:])
        with self.assertRaises(UnsupportedTransactionTypeError) as caught:
            decode_transaction(raw)
        self.assertEqual(
            str(caught.exception), "transaction type 4 (set-code) is not supported by this chain"
        )
