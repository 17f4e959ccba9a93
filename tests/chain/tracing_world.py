"""
A small chain for the tracing tests: a genesis holding hand-assembled
contracts that make every kind of call, and a block of transactions that
use them, built and sealed by the block builder.
"""

from collections.abc import Sequence
from dataclasses import replace

from nodex.chain.building.builder import BuiltBlock
from nodex.chain.genesis import GenesisAllocation, initialize_chain
from nodex.chain.tracing.limits import TraceBudget, TraceConfig, TraceLimits
from nodex.chain.tracing.replay import TracedTransaction, make_tracer, trace_block
from nodex.db.memory import MemoryStore
from nodex.primitives import Address
from nodex.state.state import State
from nodex.structures.headers import Header
from nodex.structures.transactions import LegacyTransaction, Transaction, sign_transaction
from tests.chain.test_processing import (
    ADDRESSES,
    CHAIN_ID,
    KEYS,
    build_on,
    canonical_hashes,
    sample_genesis,
)

ENTRY = Address(b"\xa0" * 20)
STORER = Address(b"\xb0" * 20)
VIEW = Address(b"\xc0" * 19 + b"\x01")
REVERTER = Address(b"\xd0" * 20)
LOOPER = Address(b"\xe0" * 20)
DESTRUCTOR = Address(b"\xf0" * 20)
BENEFICIARY = Address(b"\xbe" * 20)
SIMPLE = Address(b"\x51" * 20)
REFUNDER = Address(b"\x52" * 20)
SHA256 = Address((2).to_bytes(20, "big"))
PROXY = Address(b"\x61" * 20)
FAILER = Address(b"\x62" * 20)
NESTING = Address(b"\x63" * 20)


def push1(value: int) -> bytes:
    """
    PUSH1 of a byte (the hand-computed traces count on its 3 gas and 2 bytes).
    """
    return bytes([0x60, value])


def push(value: int) -> bytes:
    """
    The shortest PUSH1..PUSH32 of C{value}.
    """
    raw = value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")
    return bytes([0x5F + len(raw)]) + raw


def call(op: int, gas: int, to: bytes, value: int | None = 0, in_size: int = 4, out_size: int = 32) -> bytes:
    """
    A CALL-family instruction with its arguments, its success flag popped.
    """
    code = push1(out_size) + push1(0) + push1(in_size) + push1(0)
    if value is not None:
        code += push1(value)
    return code + push(int.from_bytes(to, "big")) + push(gas) + bytes([op, 0x50])


INITCODE = bytes.fromhex("600060005360016000f3")
"""Returns a one-byte runtime, STOP."""

REVERT_PAYLOAD = (
    bytes.fromhex("08c379a0") + (32).to_bytes(32, "big") + (2).to_bytes(32, "big") + b"no".ljust(32, b"\x00")
)

STORER_CODE = (
    push1(1) + push1(0) + b"\x55"                 # SSTORE(0, 1)
    + push1(0xAA) + push1(0) + push1(0) + b"\xa1"  # LOG1(0, 0, 0xaa)
    + push1(0x2A) + push1(0) + b"\x52"             # MSTORE(0, 42)
    + push1(32) + push1(0) + b"\xf3"               # RETURN(0, 32)
)
VIEW_CODE = push1(0) + b"\x54\x50\x00"
REVERTER_CODE = push1(100) + push1(12) + push1(0) + b"\x39" + push1(100) + push1(0) + b"\xfd" + REVERT_PAYLOAD
LOOPER_CODE = bytes.fromhex("5b600056")
DESTRUCTOR_CODE = push(int.from_bytes(BENEFICIARY, "big")) + b"\xff"

ENTRY_CODE = (
    call(0xF1, 50_000, STORER)
    + call(0xF4, 50_000, STORER, value=None)
    + call(0xFA, 50_000, VIEW, value=None)
    + call(0xF2, 50_000, STORER)
    + push(int.from_bytes(INITCODE, "big")) + push1(0) + b"\x52"   # initcode at memory 22..32
    + push1(10) + push1(22) + push1(0) + b"\xf0\x50"               # CREATE
    + push1(1) + push1(10) + push1(22) + push1(0) + b"\xf5\x50"    # CREATE2, salt 1
    + call(0xF1, 50_000, REVERTER)
    + call(0xF1, 5_000, LOOPER)
    + call(0xF1, 50_000, SHA256)
    + call(0xF1, 50_000, DESTRUCTOR)
    + b"\x00"
)

PROXY_CODE = call(0xF1, 50_000, STORER) + push1(0xBB) + push1(0) + push1(0) + b"\xa1\x00"
"""Calls STORER, then logs 0xbb itself."""

FAILER_CODE = call(0xF1, 50_000, STORER) + push1(0) + push1(0) + b"\xfd"
"""Calls STORER (which logs), then reverts: the log is undone."""

EF_INITCODE = bytes.fromhex("60ef60005360016000f3")
"""Returns the code 0xef, which EIP-3541 refuses at the deposit."""

NESTING_CODE = (
    call(0xF1, 200_000, PROXY)
    + call(0xF1, 200_000, FAILER)
    + push(int.from_bytes(EF_INITCODE, "big")) + push1(0) + b"\x52"
    + push1(10) + push1(22) + push1(0) + b"\xf0\x50"
    + b"\x00"
)

SIMPLE_CODE = push1(2) + push1(3) + b"\x01" + push1(0) + b"\x55" + push1(0xAB) + push1(0) + b"\x53\x00"
"""2 + 3, stored in slot 0; 0xab stored at memory 0; STOP."""

REFUNDER_CODE = push1(0) + push1(1) + b"\x55\x00"
"""Clears slot 1 (which holds 7): a refund of 4,800."""

GAS_PRICE = 1


def world_genesis() -> object:
    """
    The sample genesis with the contracts.
    """
    spec = sample_genesis()
    alloc = dict(spec.alloc)
    alloc.update(
        {
            ENTRY: GenesisAllocation(10**18, code=ENTRY_CODE),
            STORER: GenesisAllocation(0, code=STORER_CODE),
            VIEW: GenesisAllocation(0, code=VIEW_CODE),
            REVERTER: GenesisAllocation(0, code=REVERTER_CODE),
            LOOPER: GenesisAllocation(0, code=LOOPER_CODE),
            DESTRUCTOR: GenesisAllocation(5, code=DESTRUCTOR_CODE),
            SIMPLE: GenesisAllocation(0, code=SIMPLE_CODE),
            REFUNDER: GenesisAllocation(0, code=REFUNDER_CODE, storage={(1).to_bytes(32, "big"): 7}),
            PROXY: GenesisAllocation(0, code=PROXY_CODE),
            FAILER: GenesisAllocation(0, code=FAILER_CODE),
            NESTING: GenesisAllocation(0, code=NESTING_CODE),
        }
    )
    return replace(spec, alloc=alloc)


def signed(nonce: int, to: bytes, data: bytes = b"", gas: int = 1_000_000, value: int = 0, key: int = 0) -> Transaction:
    """
    A signed legacy transaction from sample key C{key}.
    """
    unsigned = LegacyTransaction(nonce=nonce, gas_price=GAS_PRICE, gas=gas, to=to, value=value, data=data)
    return sign_transaction(unsigned, KEYS[key], CHAIN_ID)


SENDER = ADDRESSES[0]


class World:
    """
    The genesis and one block of transactions on it.

    @ivar built: the block and its outcome (the receipts).
    """

    def __init__(self, transactions: Sequence[Transaction]) -> None:
        self.store = MemoryStore()
        self.genesis: Header = initialize_chain(self.store, "regtest", world_genesis())  # type: ignore[arg-type]
        self.built: BuiltBlock = build_on(self.store, self.genesis, transactions)
        assert not self.built.skipped, self.built.skipped

    @property
    def block(self) -> object:
        """
        The sealed block.
        """
        return self.built.block

    def receipt_gas(self, index: int) -> int:
        """
        The gas the receipt of transaction C{index} records.
        """
        receipts = self.built.outcome.receipts
        before = receipts[index - 1].cumulative_gas_used if index else 0
        return receipts[index].cumulative_gas_used - before

    def trace(
        self, config: TraceConfig | None = None, only: int | None = None, limits: TraceLimits | None = None
    ) -> list[TracedTransaction]:
        """
        Replay the block with the tracer C{config} names.
        """
        config = TraceConfig() if config is None else config
        budget = TraceBudget(TraceLimits() if limits is None else limits, lambda: 0.0, config.timeout)
        state = State.from_store(self.store, self.genesis.state_root)
        return trace_block(
            self.block,  # type: ignore[arg-type]
            state,
            CHAIN_ID,
            canonical_hashes(self.store, self.genesis),  # type: ignore[arg-type]
            lambda: make_tracer(config, budget),
            budget,
            only,
        )
