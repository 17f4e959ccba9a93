"""
C{nodex-statetest}: run ethereum/tests GeneralStateTests files, each case
under exactly the rule set its C{post} section names.

Each (data, gas, value) case of every test prints one JSON object on a line:
C{{"name", "fork", "index", "pass", "stateRoot", "expectedRoot",
"logsHash", "error"}}.  A fork the EVM has no rule set for is never run and
never passes: it prints one line per test and fork with C{"skipped": true},
C{"pass": false} and the number of its cases.  The last line is
C{N passed, M failed, K skipped (forks: ...)} and the exit status is 0 only
if nothing failed.  C{--run REGEX} selects tests by name and
C{--trace} writes EIP-3155 traces to standard error.  A malformed file or
case fails with a message; the runner itself never crashes on bad input.
"""

import argparse
import json
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from nodex.chain.execution import apply_transaction
from nodex.crypto import keccak256, private_key_to_address
from nodex.errors import NodexError
from nodex.evm.environment import BlockEnvironment
from nodex.evm.forks import FORKS, Fork
from nodex.evm.tracing import JSONTracer
from nodex.primitives import Address, Hash32
from nodex.state.state import State
from nodex.structures.errors import InvalidTransactionError
from nodex.structures.rlpcodec import encode_rlp
from nodex.structures.transactions import AccessListEntry

class StateTestError(NodexError):
    """
    A state test file or case is malformed.
    """


@dataclass(frozen=True)
class StateTestTransaction:
    """
    One case's transaction, with every field a Cancun transaction can carry.
    """

    type: int
    nonce: int
    gas: int
    to: bytes
    value: int
    data: bytes
    access_list: tuple[AccessListEntry, ...]
    max_fee_per_gas: int
    max_priority_fee_per_gas: int
    max_fee_per_blob_gas: int = 0
    blob_versioned_hashes: tuple[Hash32, ...] = ()


@dataclass(frozen=True)
class CaseResult:
    """
    The outcome of one (data, gas, value) case.
    """

    name: str
    index: tuple[int, int, int]
    passed: bool
    state_root: str | None
    expected_root: str | None
    logs_hash: str | None
    error: str | None
    fork: str = "Cancun"

    def to_json(self) -> str:
        """
        The case's output line.
        """
        return json.dumps(
            {
                "name": self.name,
                "fork": self.fork,
                "index": list(self.index),
                "pass": self.passed,
                "stateRoot": self.state_root,
                "expectedRoot": self.expected_root,
                "logsHash": self.logs_hash,
                "error": self.error,
            }
        )


@dataclass(frozen=True)
class SkippedFork:
    """
    The cases of one test for a fork the EVM has no rule set for: not run,
    and not passed.
    """

    name: str
    fork: str
    cases: int

    @property
    def passed(self) -> bool:
        """
        Never: a skipped case is not a passed one.
        """
        return False

    def to_json(self) -> str:
        """
        The skip's output line.
        """
        return json.dumps(
            {
                "name": self.name,
                "fork": self.fork,
                "cases": self.cases,
                "pass": False,
                "skipped": True,
                "error": f"unknown fork {self.fork}: no rule set, {self.cases} case(s) skipped",
            }
        )


def parse_int(value: Any, what: str) -> int:
    """
    An integer from a test's hex (or decimal) string.

    @raise StateTestError: not a number.
    """
    if isinstance(value, int):
        return value
    if not isinstance(value, str):
        raise StateTestError(f"{what}: expected a number, got {value!r}")
    if value.startswith("0x:bigint "):
        # The fillers' notation for a number too big for 256 bits.
        value = value[len("0x:bigint ") :]
    try:
        return int(value, 16) if value.lower().startswith("0x") else int(value or "0")
    except ValueError as exc:
        raise StateTestError(f"{what}: {value!r} is not a number") from exc


def parse_bytes(value: Any, what: str) -> bytes:
    """
    Bytes from a test's hex string (with or without 0x).

    @raise StateTestError: not hex.
    """
    if not isinstance(value, str):
        raise StateTestError(f"{what}: expected a hex string, got {value!r}")
    text = value[2:] if value.lower().startswith("0x") else value
    try:
        return bytes.fromhex(text)
    except ValueError as exc:
        raise StateTestError(f"{what}: {value!r} is not hex") from exc


def parse_address(value: Any, what: str) -> Address:
    """
    A 20-byte address from a hex string.

    @raise StateTestError: not 20 bytes of hex.
    """
    raw = parse_bytes(value, what)
    if len(raw) != 20:
        raise StateTestError(f"{what}: {value!r} is not a 20-byte address")
    return Address(raw)


def build_pre_state(pre: dict[str, Any]) -> State:
    """
    A committed state holding the test's C{pre} accounts, over a memory node map.
    """
    nodes: dict[bytes, bytes] = {}
    codes: dict[bytes, bytes] = {}
    state = State(nodes.get, codes.get)
    for address_text, fields in pre.items():
        address = parse_address(address_text, "pre address")
        state.set_nonce(address, parse_int(fields.get("nonce", "0x0"), "nonce"))
        state.set_balance(address, parse_int(fields.get("balance", "0x0"), "balance"))
        code = parse_bytes(fields.get("code", "0x"), "code")
        if code:
            state.set_code(address, code)
        for key, value in fields.get("storage", {}).items():
            word = parse_int(value, "storage value")
            if word:
                state.set_storage(address, parse_int(key, "storage key"), word)
    _, new_nodes = state.commit()
    nodes.update(new_nodes)
    codes.update(state.new_codes)
    state.begin_transaction()
    return state


def build_block(env: dict[str, Any], fork: Fork) -> BlockEnvironment:
    """
    The block environment of a test's C{env}, under the rule set C{fork}.
    """
    random = env.get("currentRandom")
    prev_randao = (
        parse_int(random, "currentRandom") if random is not None else parse_int(env["currentDifficulty"], "difficulty")
    )
    return BlockEnvironment(
        coinbase=parse_address(env["currentCoinbase"], "currentCoinbase"),
        number=parse_int(env["currentNumber"], "currentNumber"),
        timestamp=parse_int(env["currentTimestamp"], "currentTimestamp"),
        gas_limit=parse_int(env["currentGasLimit"], "currentGasLimit"),
        prev_randao=prev_randao.to_bytes(32, "big"),
        chain_id=1,
        base_fee=parse_int(env.get("currentBaseFee", "0x0"), "currentBaseFee"),
        excess_blob_gas=parse_int(env.get("currentExcessBlobGas", "0x0"), "currentExcessBlobGas"),
        block_hashes=lambda number: keccak256(str(number).encode()),
        fork=fork,
    )


def build_transaction(tx: dict[str, Any], index: tuple[int, int, int]) -> StateTestTransaction:
    """
    The transaction of case C{index} (data, gas, value) of a test's C{transaction}.
    """
    data_index, gas_index, value_index = index
    try:
        data = parse_bytes(tx["data"][data_index], "data")
        gas = parse_int(tx["gasLimit"][gas_index], "gasLimit")
        value = parse_int(tx["value"][value_index], "value")
    except (IndexError, KeyError, TypeError) as exc:
        raise StateTestError(f"case {list(index)} names no transaction: {exc!r}") from exc
    access_list: tuple[AccessListEntry, ...] = ()
    has_access_list = False
    lists = tx.get("accessLists")
    if lists is not None and data_index < len(lists) and lists[data_index] is not None:
        has_access_list = True
        access_list = tuple(
            AccessListEntry(
                parse_address(entry["address"], "access list address"),
                tuple(Hash32(parse_int(key, "storage key").to_bytes(32, "big")) for key in entry["storageKeys"]),
            )
            for entry in lists[data_index]
        )
    to_text = tx.get("to", "")
    to = parse_address(to_text, "to") if to_text else b""
    fields: dict[str, Any] = {
        "nonce": parse_int(tx["nonce"], "nonce"),
        "gas": gas,
        "to": to,
        "value": value,
        "data": data,
        "access_list": access_list,
    }
    if "maxFeePerGas" in tx:
        tx_type = 2
        fields["max_fee_per_gas"] = parse_int(tx["maxFeePerGas"], "maxFeePerGas")
        fields["max_priority_fee_per_gas"] = parse_int(tx["maxPriorityFeePerGas"], "maxPriorityFeePerGas")
    else:
        tx_type = 1 if has_access_list else 0
        price = parse_int(tx["gasPrice"], "gasPrice")
        fields["max_fee_per_gas"] = fields["max_priority_fee_per_gas"] = price
    if "blobVersionedHashes" in tx:
        tx_type = 3
        fields["max_fee_per_blob_gas"] = parse_int(tx.get("maxFeePerBlobGas", "0x0"), "maxFeePerBlobGas")
        fields["blob_versioned_hashes"] = tuple(
            Hash32(parse_bytes(h, "blob hash")) for h in tx["blobVersionedHashes"]
        )
    return StateTestTransaction(type=tx_type, **fields)


def sender_of(tx: dict[str, Any]) -> Address:
    """
    The sender of a test transaction: its C{sender}, or the address of its C{secretKey}.
    """
    if tx.get("sender"):
        return parse_address(tx["sender"], "sender")
    return private_key_to_address(parse_bytes(tx["secretKey"], "secretKey"))


def logs_hash(logs: Sequence[Any]) -> bytes:
    """
    Keccak-256 of the RLP list of logs, as the tests' C{logs} field holds it.
    """
    return keccak256(encode_rlp([log.to_rlp_item() for log in logs]))


def run_case(
    name: str,
    test: dict[str, Any],
    post: dict[str, Any],
    trace: Callable[[str], None] | None = None,
    fork: Fork = FORKS["Cancun"],
) -> CaseResult:
    """
    Run one case of a test under C{fork} and compare its state root and logs hash.
    """
    raw_index = post.get("indexes", {})
    index = (raw_index.get("data", 0), raw_index.get("gas", 0), raw_index.get("value", 0))
    expected_root = post.get("hash")
    expected_logs = post.get("logs")
    try:
        state = build_pre_state(test["pre"])
        block = build_block(test["env"], fork)
        tx = build_transaction(test["transaction"], index)
        sender = sender_of(test["transaction"])
        tracer = JSONTracer(trace) if trace is not None else None
        error = None
        logs: Sequence[Any] = ()
        try:
            result = apply_transaction(state, block, tx, sender, tracer=tracer)
        except InvalidTransactionError as exc:
            error = f"invalid transaction: {exc}"
        else:
            logs = result.logs
            if tracer is not None:
                tracer.capture_summary(result.output, result.gas_used, result.error)
        root, _ = state.commit()
    except (StateTestError, NodexError, KeyError, TypeError, ValueError, AttributeError) as exc:
        return CaseResult(name, index, False, None, expected_root, None, f"malformed test: {exc!r}", fork.name)
    except Exception as exc:
        # A bug below (a precompile, say) fails this case, not the whole run.
        return CaseResult(name, index, False, None, expected_root, None, f"internal error: {exc!r}", fork.name)
    root_hex = "0x" + root.hex()
    logs_hex = "0x" + logs_hash(logs).hex()
    if trace is not None:
        # geth's statetest closes each case's trace with its state root.
        trace(json.dumps({"stateRoot": root_hex}))
    failures = []
    if expected_root is None or root_hex != expected_root.lower():
        failures.append("state root mismatch")
    if expected_logs is not None and logs_hex != expected_logs.lower():
        failures.append("logs hash mismatch")
    if "expectException" in post and error is None:
        failures.append(f"expected exception {post['expectException']} but the transaction was valid")
    if "expectException" not in post and error is not None:
        failures.append(f"unexpected {error}")
    message = "; ".join(failures) if failures else error
    return CaseResult(name, index, not failures, root_hex, expected_root, logs_hex, message, fork.name)


def iter_files(paths: Sequence[str]) -> Iterator[Path]:
    """
    The JSON files named by C{paths}, folders searched recursively, in name order.
    """
    for text in paths:
        path = Path(text)
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*.json") if p.is_file())
        else:
            yield path


def run_file(
    path: Path, name_filter: re.Pattern[str] | None = None, trace: Callable[[str], None] | None = None
) -> Iterator[CaseResult | SkippedFork]:
    """
    Run every case of one state test file under the fork its C{post}
    section names; a fork without a rule set is one L{SkippedFork} per
    test, and an unreadable file is one failed case.
    """
    try:
        with path.open() as handle:
            tests = json.load(handle)
        if not isinstance(tests, dict):
            raise StateTestError("the file does not hold a JSON object of tests")
    except (OSError, ValueError, StateTestError) as exc:
        yield CaseResult(str(path), (0, 0, 0), False, None, None, None, f"cannot read {path}: {exc}")
        return
    for name, test in tests.items():
        if name_filter is not None and not name_filter.search(name):
            continue
        if not isinstance(test, dict) or not isinstance(test.get("post"), dict):
            yield CaseResult(name, (0, 0, 0), False, None, None, None, "malformed test: no post section")
            continue
        for fork_name, posts in test["post"].items():
            if not isinstance(posts, list):
                yield CaseResult(name, (0, 0, 0), False, None, None, None, "malformed test: bad post entry", fork_name)
                continue
            fork = FORKS.get(fork_name)
            if fork is None:
                yield SkippedFork(name, fork_name, len(posts))
                continue
            for post in posts:
                if not isinstance(post, dict):
                    yield CaseResult(name, (0, 0, 0), False, None, None, None, "malformed test: bad post entry", fork_name)
                    continue
                yield run_case(name, test, post, trace, fork)


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """
    The console script: run the files and folders given, print a line per
    case and a summary.

    @return: the exit status, 0 only if every case passed.
    """
    out = out or sys.stdout
    err = err or sys.stderr
    parser = argparse.ArgumentParser(
        prog="nodex-statetest",
        description=f"Run GeneralStateTests, each case under the fork it names ({', '.join(sorted(FORKS))}).",
    )
    parser.add_argument("paths", nargs="+", help="state test files or folders")
    parser.add_argument("--run", metavar="REGEX", help="run only the tests whose name matches")
    parser.add_argument("--trace", action="store_true", help="write EIP-3155 traces to standard error")
    args = parser.parse_args(argv)
    try:
        name_filter = re.compile(args.run) if args.run else None
    except re.error as exc:
        parser.error(f"--run: {exc}")
    trace = (lambda line: print(line, file=err)) if args.trace else None
    passed = failed = skipped = 0
    skipped_forks: set[str] = set()
    for path in iter_files(args.paths):
        for result in run_file(path, name_filter, trace):
            print(result.to_json(), file=out, flush=False)
            if isinstance(result, SkippedFork):
                skipped += result.cases
                skipped_forks.add(result.fork)
            elif result.passed:
                passed += 1
            else:
                failed += 1
    summary = f"{passed} passed, {failed} failed"
    if skipped:
        summary += f", {skipped} skipped (unknown forks: {', '.join(sorted(skipped_forks))})"
    print(summary, file=out)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
