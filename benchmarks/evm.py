"""
EVM benchmark: nodex against py-evm on the same bytecode and the same signed
transactions, in one run.

Three workloads, each a few blocks of legacy EIP-155 transactions (chain id
33) from one funded sender, every block kept under half of a 30,000,000 gas
limit so that an EIP-1559 base fee, where the other EVM keeps one, stays at
zero and the state roots of the two EVMs can be compared:

  - C{compute}: a hand-assembled loop (L{COMPUTE_PROGRAM}) of KECCAK256 over
    memory, MULMOD, ADDMOD, MUL, SHR, DIV, MOD and XOR;
  - C{erc20}: transfers of the compiled ERC-20 token
    (C{benchmarks/contracts/Token.json}, built for cancun from
    C{tests/data/contracts/Token.sol}) to distinct, fresh recipients;
  - C{storage}: transactions that each write N fresh storage slots
    (L{STORAGE_PROGRAM}).

What is timed is the execution of each block: every transaction (sender
recovery included), then the transactions, receipts and state roots and the
writes to an in-memory database (py-evm's C{mine_all}, which also stores
the block's header, body and receipts, about 3% of its time; for nodex the
API of C{docs/evm.md}: C{apply_transaction} over a C{State}, C{State.commit},
C{ordered_trie_root}).  Deployment is not timed.  The script checks that both
EVMs report the same gas for every transaction and the same state,
transactions and receipts roots after every block, so the figures compare
equal work.

py-evm is a benchmark-only dependency: run this script with a separate
virtualenv that has both nodex and py-evm, so that py-evm's dependencies stay
out of the project's environment::

    python3 -m venv /work/bench-evm-venv
    /work/bench-evm-venv/bin/pip install -e /work/main py-evm
    /work/bench-evm-venv/bin/python benchmarks/evm.py [--only nodex|py-evm] [--scale 0.5] [--clock cpu]

C{--clock cpu} times the blocks by this process's CPU time instead of wall
time: on a shared machine it moves far less (C{benchmarks/evm_compare.py}
uses it to compare two commits).

C{--precompiles} times nodex's precompiled contracts on their own instead
(time per call and Mgas/s); it needs no py-evm.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import rlp

from nodex.crypto import keccak256, private_key_to_address, sign

BENCHMARKS = Path(__file__).resolve().parent
CHAIN_ID = 33
GAS_LIMIT = 30_000_000
BLOCK_GAS_BUDGET = GAS_LIMIT // 2
GAS_PRICE = 1_000_000_000
SENDER_KEY = keccak256(b"cow")
SENDER = private_key_to_address(SENDER_KEY)
SENDER_BALANCE = 10**30
COINBASE = bytes.fromhex("00000000000000000000000000000000000c0fee")
COMPUTE_ADDRESS = bytes.fromhex("000000000000000000000000000000000000c0de")
STORAGE_ADDRESS = bytes.fromhex("000000000000000000000000000000000000f111")
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
CLOCK = CLOCKS["wall"]
"""What blocks are timed with (C{--clock}): wall time, or this process's CPU time."""

# -- a small assembler -------------------------------------------------------

OPCODES: dict[str, int] = {
    "STOP": 0x00, "ADD": 0x01, "MUL": 0x02, "SUB": 0x03, "DIV": 0x04, "MOD": 0x06,
    "ADDMOD": 0x08, "MULMOD": 0x09, "LT": 0x10, "ISZERO": 0x15, "XOR": 0x18,
    "SHR": 0x1C, "KECCAK256": 0x20, "CALLDATALOAD": 0x35, "POP": 0x50,
    "MSTORE": 0x52, "SSTORE": 0x55, "JUMP": 0x56, "JUMPI": 0x57, "JUMPDEST": 0x5B,
    "DUP1": 0x80, "DUP2": 0x81, "DUP3": 0x82, "DUP4": 0x83, "DUP5": 0x84,
    "SWAP1": 0x90, "SWAP2": 0x91, "SWAP3": 0x92,
}

# An instruction is a mnemonic, ("PUSH", value) for the shortest push of a
# constant, ("PUSH2", "label") for a jump target, or ("LABEL", "name").
Instruction = str | tuple[str, int | str]


def assemble(program: Sequence[Instruction]) -> bytes:
    """
    Assemble C{program} into bytecode, resolving labels (two passes, every
    label reference is a PUSH2).
    """
    labels: dict[str, int] = {}
    for pass_number in (1, 2):
        code = bytearray()
        for item in program:
            if isinstance(item, str):
                code.append(OPCODES[item])
                continue
            kind, value = item
            if kind == "LABEL":
                labels[str(value)] = len(code)
            elif kind == "PUSH2":
                code.append(0x61)
                code += labels.get(str(value), 0).to_bytes(2, "big")
            elif kind == "PUSH":
                number = int(value)
                width = max(1, (number.bit_length() + 7) // 8)
                code.append(0x5F + width)
                code += number.to_bytes(width, "big")
            else:
                raise ValueError(f"unknown assembler item {item!r}")
    return bytes(code)


# Two large odd moduli for MULMOD, ADDMOD and MOD (the BN254 field and group
# orders: any 254-bit constants would do).
_MODULUS_A = 0x30644E72E131A029B85045B68181585D97816A916871CA8D3C208C16D87CFD47
_MODULUS_B = 0x30644E72E131A029B85045B68181585D2833E84879B9709143E1F593F0000001

# compute(n): acc = 1; for i in 0..n-1:
#   h = keccak256(acc || i); a = mulmod(acc, h, A); a = addmod(a, h, B)
#   acc = ((a * h >> 3) / 7 % B) ^ h
# then stores acc in slot 0 (so that the state roots cover the result).
# Stack during the loop: n acc i.
COMPUTE_PROGRAM: list[Instruction] = [
    ("PUSH", 0), "CALLDATALOAD", ("PUSH", 1), ("PUSH", 0),
    ("LABEL", "loop"), "JUMPDEST",
    "DUP2", ("PUSH", 0), "MSTORE",
    "DUP1", ("PUSH", 32), "MSTORE",
    ("PUSH", 64), ("PUSH", 0), "KECCAK256",          # n acc i h
    ("PUSH", _MODULUS_A), "DUP2", "DUP5", "MULMOD",    # n acc i h m
    ("PUSH", _MODULUS_B), "DUP3", "DUP3", "ADDMOD",    # n acc i h m a
    "SWAP1", "POP",                                    # n acc i h a
    "DUP2", "MUL", ("PUSH", 3), "SHR",
    ("PUSH", 7), "SWAP1", "DIV",
    ("PUSH", _MODULUS_B), "SWAP1", "MOD",
    "DUP2", "XOR",                                     # n acc i h new
    "SWAP3", "POP", "POP",                             # n new i
    ("PUSH", 1), "ADD",
    "DUP3", "DUP2", "LT", ("PUSH2", "loop"), "JUMPI",
    "POP", ("PUSH", 0), "SSTORE", "STOP",
]

# fill(start, count): sstore(start + k, 1) for k in 0..count-1.
STORAGE_PROGRAM: list[Instruction] = [
    ("PUSH", 32), "CALLDATALOAD", ("PUSH", 0), "CALLDATALOAD",   # count start
    ("LABEL", "loop"), "JUMPDEST",
    "DUP2", "ISZERO", ("PUSH2", "end"), "JUMPI",
    ("PUSH", 1), "DUP2", "SSTORE",
    ("PUSH", 1), "ADD",
    "SWAP1", ("PUSH", 1), "SWAP1", "SUB", "SWAP1",
    ("PUSH2", "loop"), "JUMP",
    ("LABEL", "end"), "JUMPDEST", "STOP",
]

# -- transactions ---------------------------------------------------------------


def word(value: int) -> bytes:
    """
    C{value} as a 32-byte big-endian word.
    """
    return value.to_bytes(32, "big")


def sign_legacy(nonce: int, to: bytes, data: bytes, gas: int, value: int = 0) -> bytes:
    """
    The raw RLP of a legacy EIP-155 transaction from L{SENDER}.
    """
    unsigned = [nonce, GAS_PRICE, gas, to, value, data]
    digest = keccak256(rlp.encode(unsigned + [CHAIN_ID, 0, 0]))
    y_parity, r, s = sign(digest, SENDER_KEY)
    return rlp.encode(unsigned + [CHAIN_ID * 2 + 35 + y_parity, r, s])


def contract_address(sender: bytes, nonce: int) -> bytes:
    """
    The address of the contract that C{sender} creates with C{nonce}.
    """
    return keccak256(rlp.encode([sender, nonce]))[12:]


def encode_call(signature: str, *arguments: int | bytes) -> bytes:
    """
    ABI call data for a function whose arguments are all static words.
    """
    selector = keccak256(signature.encode())[:4]
    words = (a.rjust(32, b"\x00") if isinstance(a, bytes) else word(a) for a in arguments)
    return selector + b"".join(words)


def load_token() -> dict[str, object]:
    """
    The cancun build of the ERC-20 token.
    """
    return json.loads((BENCHMARKS / "contracts" / "Token.json").read_text())


def token_constructor_data(supply: int) -> bytes:
    """
    The creation code of C{Token("Bench", "BNC", supply)}.
    """
    bytecode = bytes.fromhex(str(load_token()["bytecode"])[2:])
    name, symbol = b"Bench", b"BNC"
    arguments = word(96) + word(160) + word(supply)
    arguments += word(len(name)) + name.ljust(32, b"\x00")
    arguments += word(len(symbol)) + symbol.ljust(32, b"\x00")
    return bytecode + arguments


@dataclass
class Workload:
    """
    One benchmark: extra genesis accounts, untimed setup blocks, then timed
    blocks of raw transactions.
    """

    name: str
    description: str
    genesis_code: dict[bytes, bytes] = field(default_factory=dict)
    setup_blocks: list[list[bytes]] = field(default_factory=list)
    blocks: list[list[bytes]] = field(default_factory=list)


def compute_workload(scale: float) -> Workload:
    """
    Transactions of 12,000 loop iterations each (about 2.2 Mgas).
    """
    iterations, per_block, block_count = 12_000, 5, max(1, round(2 * scale))
    blocks, nonce = [], 0
    for _ in range(block_count):
        block = []
        for _ in range(per_block):
            block.append(sign_legacy(nonce, COMPUTE_ADDRESS, word(iterations + nonce), 2_500_000))
            nonce += 1
        blocks.append(block)
    return Workload(
        "compute",
        f"KECCAK256/MULMOD/ADDMOD/MUL/SHR/DIV/MOD loop, {iterations} iterations a transaction",
        genesis_code={COMPUTE_ADDRESS: assemble(COMPUTE_PROGRAM)},
        blocks=blocks,
    )


def erc20_workload(scale: float) -> Workload:
    """
    Token transfers to distinct fresh recipients, 250 a block.
    """
    per_block, block_count = 250, max(1, round(4 * scale))
    token = contract_address(SENDER, 0)
    setup = [[sign_legacy(0, b"", token_constructor_data(10**27), 2_000_000)]]
    blocks, nonce = [], 1
    for _ in range(block_count):
        block = []
        for _ in range(per_block):
            recipient = keccak256(word(nonce))[:20]
            data = encode_call("transfer(address,uint256)", recipient, 1000 + nonce)
            block.append(sign_legacy(nonce, token, data, 80_000))
            nonce += 1
        blocks.append(block)
    return Workload(
        "erc20",
        f"ERC-20 transfer to a fresh recipient, {per_block} a block",
        setup_blocks=setup,
        blocks=blocks,
    )


def storage_workload(scale: float) -> Workload:
    """
    Transactions that each write 100 fresh slots (about 2.2 Mgas).
    """
    slots, per_block, block_count = 100, 6, max(1, round(3 * scale))
    blocks, nonce = [], 0
    for _ in range(block_count):
        block = []
        for _ in range(per_block):
            data = word(nonce * slots + 1) + word(slots)
            block.append(sign_legacy(nonce, STORAGE_ADDRESS, data, 2_400_000))
            nonce += 1
        blocks.append(block)
    return Workload(
        "storage",
        f"{slots} fresh SSTOREs a transaction",
        genesis_code={STORAGE_ADDRESS: assemble(STORAGE_PROGRAM)},
        blocks=blocks,
    )


WORKLOADS: dict[str, Callable[[float], Workload]] = {
    "compute": compute_workload,
    "erc20": erc20_workload,
    "storage": storage_workload,
}

# -- the EVMs under test -----------------------------------------------------------


@dataclass
class BlockResult:
    """
    What one EVM reports for one block.

    @ivar roots: the state, transactions and receipts roots.
    """

    seconds: float
    gas_used: list[int]
    roots: tuple[bytes, bytes, bytes]


class Runner(Protocol):
    """
    One EVM, started from a genesis state, executing blocks of raw
    transactions.
    """

    name: str

    def execute_block(self, raw_transactions: Sequence[bytes]) -> BlockResult:
        """
        Execute and commit one block, timing execution and commitment.
        """


def genesis_accounts(workload: Workload) -> dict[bytes, tuple[int, bytes]]:
    """
    The genesis allocation: the funded sender and the workload's contracts,
    as address -> (balance, code).
    """
    accounts = {SENDER: (SENDER_BALANCE, b"")}
    for address, code in workload.genesis_code.items():
        accounts[address] = (0, code)
    return accounts


class PyEVMRunner:
    """
    py-evm's Cancun VM on an in-memory database, through C{MiningChain}.
    """

    name = "py-evm"

    def __init__(self, accounts: dict[bytes, tuple[int, bytes]]) -> None:
        from eth.chains.base import MiningChain
        from eth.db.atomic import AtomicDB
        from eth.vm.forks.cancun import CancunVM

        chain_class = MiningChain.configure(
            __name__="BenchmarkChain", vm_configuration=((0, CancunVM),), chain_id=CHAIN_ID
        )
        genesis_params = {
            "coinbase": COINBASE,
            "difficulty": 0,
            "gas_limit": GAS_LIMIT,
            "timestamp": 1_700_000_000,
            "base_fee_per_gas": 0,
        }
        state = {
            address: {"balance": balance, "nonce": 0, "code": code, "storage": {}}
            for address, (balance, code) in accounts.items()
        }
        self._chain = chain_class.from_genesis(AtomicDB(), genesis_params, state)
        self._builder = CancunVM.get_transaction_builder()

    def execute_block(self, raw_transactions: Sequence[bytes]) -> BlockResult:
        """
        Decode the transactions (untimed), then time C{mine_all}: execution,
        state root and persistence of the block.
        """
        transactions = [self._builder.decode(raw) for raw in raw_transactions]
        start = CLOCK()
        result, receipts, computations = self._chain.mine_all(
            transactions, coinbase=COINBASE
        )
        seconds = CLOCK() - start
        gas_used, previous = [], 0
        for receipt in receipts:
            gas_used.append(receipt.gas_used - previous)
            previous = receipt.gas_used
        for computation in computations:
            if computation.is_error:
                raise RuntimeError(f"py-evm: transaction failed: {computation.error!r}")
        header = result.imported_block.header
        return BlockResult(
            seconds,
            gas_used,
            (header.state_root, header.transaction_root, header.receipt_root),
        )


class NodexRunner:
    """
    nodex's EVM through the API of C{docs/evm.md}: C{apply_transaction} over
    a C{nodex.state.State} on a C{MemoryStore}, then C{State.commit} and
    C{nodex.trie.ordered_trie_root} for the header's roots, as the node's
    block processing does.
    """

    name = "nodex"

    def __init__(self, accounts: dict[bytes, tuple[int, bytes]]) -> None:
        from nodex.db.memory import MemoryStore
        from nodex.state import State

        self._store = MemoryStore()
        state = State.from_store(self._store)
        for address, (balance, code) in accounts.items():
            state.set_balance(address, balance)
            if code:
                state.set_code(address, code)
        self._root = self._commit(state)
        self._number = 0

    def _commit(self, state: object) -> bytes:
        """
        Commit C{state} and write its new trie nodes and code to the store.
        """
        from nodex.db.schema import CODE, TRIE_NODES

        root, nodes = state.commit()  # type: ignore[attr-defined]
        batch = self._store.batch()
        for node_hash, node in nodes.items():
            batch.put(TRIE_NODES, node_hash, node)
        for code_hash, code in state.new_codes.items():  # type: ignore[attr-defined]
            batch.put(CODE, code_hash, code)
        self._store.write(batch)
        return root

    def execute_block(self, raw_transactions: Sequence[bytes]) -> BlockResult:
        """
        Decode the transactions (untimed), then time sender recovery,
        execution, the transactions and receipts roots, the state root and
        the writes to the store.
        """
        from nodex.chain.execution import apply_transaction
        from nodex.evm.environment import BlockEnvironment
        from nodex.state import State
        from nodex.structures.transactions import decode_transaction
        from nodex.trie import ordered_trie_root

        transactions = [decode_transaction(raw) for raw in raw_transactions]
        self._number += 1
        block = BlockEnvironment(
            coinbase=COINBASE,
            number=self._number,
            timestamp=1_700_000_000 + 12 * self._number,
            gas_limit=GAS_LIMIT,
            prev_randao=(1).to_bytes(32, "big"),
            chain_id=CHAIN_ID,
        )
        start = CLOCK()
        state = State.from_store(self._store, self._root)
        block_gas, gas_used, receipts = 0, [], []
        for transaction in transactions:
            result = apply_transaction(state, block, transaction, transaction.sender, block_gas)
            if result.error is not None:
                raise RuntimeError(f"nodex: transaction failed: {result.error}")
            block_gas += result.gas_used
            gas_used.append(result.gas_used)
            receipts.append(result.receipt.encode())
        transactions_root = ordered_trie_root(list(raw_transactions))
        receipts_root = ordered_trie_root(receipts)
        self._root = self._commit(state)
        seconds = CLOCK() - start
        return BlockResult(seconds, gas_used, (self._root, transactions_root, receipts_root))


RUNNERS: dict[str, Callable[[dict[bytes, tuple[int, bytes]]], Runner]] = {
    "nodex": NodexRunner,
    "py-evm": PyEVMRunner,
}

# -- running and reporting -------------------------------------------------------------


@dataclass
class Measurement:
    """
    The totals of one EVM over one workload's timed blocks.
    """

    transactions: int
    gas: int
    seconds: float
    roots: list[tuple[bytes, bytes, bytes]]
    gas_used: list[int]

    @property
    def mgas_per_second(self) -> float:
        """
        Millions of gas executed per second.
        """
        return self.gas / self.seconds / 1e6

    @property
    def transactions_per_second(self) -> float:
        """
        Transactions executed per second.
        """
        return self.transactions / self.seconds


def measure(runner: Runner, workload: Workload) -> Measurement:
    """
    Run the setup blocks, then the timed blocks, of C{workload}.
    """
    for block in workload.setup_blocks:
        runner.execute_block(block)
    measurement = Measurement(0, 0, 0.0, [], [])
    for block in workload.blocks:
        result = runner.execute_block(block)
        if sum(result.gas_used) > BLOCK_GAS_BUDGET:
            raise RuntimeError(f"{workload.name}: a block used more than {BLOCK_GAS_BUDGET} gas")
        measurement.transactions += len(block)
        measurement.gas += sum(result.gas_used)
        measurement.seconds += result.seconds
        measurement.roots.append(result.roots)
        measurement.gas_used += result.gas_used
    return measurement


def compare(workload: Workload, results: dict[str, Measurement]) -> list[str]:
    """
    The disagreements between the EVMs (gas, and the state, transactions
    and receipts roots of every block).
    """
    problems = []
    names = list(results)
    for other in names[1:]:
        first, second = results[names[0]], results[other]
        for label in ("gas_used", "roots"):
            if getattr(first, label) != getattr(second, label):
                problems.append(f"{workload.name}: {names[0]} and {other} differ in {label}")
    return problems


def report(rows: Iterable[tuple[str, str, Measurement]]) -> str:
    """
    A Markdown table of the measurements.
    """
    lines = [
        "| workload | EVM | transactions | Mgas | seconds | Mgas/s | tx/s |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for workload, evm, m in rows:
        lines.append(
            f"| {workload} | {evm} | {m.transactions} | {m.gas / 1e6:.2f} | {m.seconds:.2f} "
            f"| {m.mgas_per_second:.2f} | {m.transactions_per_second:.1f} |"
        )
    return "\n".join(lines)


# -- the precompiles on their own --------------------------------------------------------


def precompile_inputs() -> list[tuple[str, int, bytes]]:
    """
    Representative inputs: (label, precompile number, call data).
    """
    digest = keccak256(b"benchmark")
    y_parity, r, s = sign(digest, SENDER_KEY)
    g1 = word(1) + word(2)
    g1_negated = word(1) + word(0x30644E72E131A029B85045B68181585D97816A916871CA8D3C208C16D87CFD45)
    g2 = bytes.fromhex(
        "198e9393920d483a7260bfb731fb5d25f1aa493335a9e71297e485b7aef312c2"
        "1800deef121f1e76426a00665e5c4479674322d4f75edadd46debd5cd992f6ed"
        "090689d0585ff075ec9e99ad690c3395bc4b313370b38ef355acdadcd122975b"
        "12c85ea5db8c6deb4aab71808dcb408fe3d1e7690c43d37b4ce6cc0166fa7daa"
    )
    big = keccak256(b"modulus") * 8
    blake_body = bytes(range(64)) + bytes(range(128)) + word(0)[:16]
    return [
        ("ecrecover", 1, digest + word(27 + y_parity) + word(r) + word(s)),
        ("sha256, 1 KiB", 2, bytes(1024)),
        ("ripemd160, 1 KiB", 3, bytes(1024)),
        ("identity, 1 KiB", 4, bytes(1024)),
        ("modexp, 256-byte numbers, exponent 65537", 5,
         word(256) + word(3) + word(256) + big + b"\x01\x00\x01" + big),
        ("modexp, 32-byte numbers and exponent", 5,
         word(32) + word(32) + word(32) + big[:32] + big[32:64] + big[64:96]),
        ("ecadd", 6, g1 + g1),
        ("ecmul, 256-bit scalar", 7, g1 + keccak256(b"scalar")),
        ("ecpairing, 2 pairs", 8, g1 + g2 + g1_negated + g2),
        ("ecpairing, 4 pairs", 8, (g1 + g2 + g1_negated + g2) * 2),
        ("blake2f, 12 rounds", 9, (12).to_bytes(4, "big") + blake_body + b"\x01"),
        ("blake2f, 100,000 rounds", 9, (100_000).to_bytes(4, "big") + blake_body + b"\x01"),
    ]


def precompile_report(batches: int = 5, seconds_per_batch: float = 0.1) -> str:
    """
    A Markdown table of each precompile's time per call and gas per second.

    Each input runs in C{batches} batches of about C{seconds_per_batch}; the
    fastest batch counts, as C{timeit} advises, since on a shared machine the
    slower ones measure the other processes.
    """
    from nodex.evm.precompiles import PRECOMPILES

    lines = ["| precompile | gas | time per call | Mgas/s |", "|---|---:|---:|---:|"]
    for label, number, data in precompile_inputs():
        precompile = PRECOMPILES[number.to_bytes(20, "big")]
        gas = precompile.gas(data)
        per_call = float("inf")
        for _ in range(batches):
            calls, start = 0, time.perf_counter()
            while True:
                precompile.run(data)
                calls += 1
                elapsed = time.perf_counter() - start
                if elapsed >= seconds_per_batch:
                    break
            per_call = min(per_call, elapsed / calls)
        shown = f"{per_call * 1e3:.2f} ms" if per_call >= 1e-3 else f"{per_call * 1e6:.1f} µs"
        lines.append(f"| {label} | {gas} | {shown} | {gas / per_call / 1e6:.2f} |")
    return "\n".join(lines)


def main(argv: Sequence[str]) -> int:
    """
    Run the chosen workloads on the chosen EVMs and print a table.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=sorted(RUNNERS), action="append")
    parser.add_argument("--workload", choices=sorted(WORKLOADS), action="append")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the block counts")
    parser.add_argument(
        "--clock", choices=sorted(CLOCKS), default="wall",
        help="time blocks by wall time or by this process's CPU time (steadier on a shared machine)",
    )
    parser.add_argument(
        "--precompiles", action="store_true", help="time nodex's precompiles on their own instead"
    )
    parser.add_argument(
        "--cancellable", action="store_true",
        help="run nodex's transactions as the node runs a client's call: with a cancellation (a deadline far away)"
        " that the interpreter looks at (docs/state-and-logs.md, 'Calls stop at their time limit')",
    )
    options = parser.parse_args(argv)
    if options.cancellable:
        from nodex.evm.cancellation import CURRENT_CANCELLATION, Cancellation

        CURRENT_CANCELLATION.set(Cancellation(time.monotonic() + 10**9, time.monotonic))
    if options.precompiles:
        print(precompile_report())
        return 0
    global CLOCK
    CLOCK = CLOCKS[options.clock]
    evms = options.only or sorted(RUNNERS)
    rows, problems = [], []
    for name in options.workload or list(WORKLOADS):
        workload = WORKLOADS[name](options.scale)
        results = {}
        for evm in evms:
            results[evm] = measure(RUNNERS[evm](genesis_accounts(workload)), workload)
            rows.append((name, evm, results[evm]))
            print(report(rows[-1:]).splitlines()[-1], flush=True)
        problems += compare(workload, results)
    print()
    print(report(rows))
    if len(evms) == 2:
        print()
        for name in options.workload or list(WORKLOADS):
            pair = {evm: m for w, evm, m in rows if w == name}
            ratio = pair["nodex"].mgas_per_second / pair["py-evm"].mgas_per_second
            print(f"{name}: nodex / py-evm = {ratio:.2f}x")
    for problem in problems:
        print("MISMATCH:", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
