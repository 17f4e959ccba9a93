"""
Rule sets named by fork: which opcodes exist, what the transaction-level
gas schedule is, which precompiles answer and which transaction types run.

A L{Fork} is chosen per block (the chain's schedule, L{nodex.chain.rules})
or per state test (the fork its C{post} section names) and travels in the
L{nodex.evm.environment.BlockEnvironment}; the interpreter reads its
instruction table and precompiles once per frame, so choosing a fork costs
nothing per instruction.

Two rule sets exist: C{Cancun}, exactly as the ethereum/tests fixtures of
that name expect it (0x1E is an invalid opcode), and C{Cancun+CLZ}, Cancun
plus Osaka's count-leading-zeros instruction (EIP-7939), which every
network runs from genesis today (DESIGN §2) so that code from compilers
whose default target is osaka runs.  Both price instructions alike (the
constants of L{nodex.evm.gas}); a later fork whose prices differ brings its
own L{GasSchedule} and instruction functions.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nodex.errors import NodexError
from nodex.evm import gas
from nodex.evm.instructions import INSTRUCTIONS, OPCODE_NAMES, Instruction
from nodex.evm.instructions.system import invalid_opcode
from nodex.evm.precompiles import PRECOMPILES, Precompile

CLZ = 0x1E


@dataclass(frozen=True)
class GasSchedule:
    """
    The transaction-level prices and limits of a fork (the per-instruction
    prices live with the instruction functions of the fork's table).

    @ivar max_code_size: the largest code a creation may deposit (EIP-170).
    @ivar max_init_code_size: the largest initcode a creation may run (EIP-3860).
    @ivar code_deposit: the gas per byte of deposited code.
    """

    max_code_size: int
    max_init_code_size: int
    code_deposit: int


CANCUN_GAS = GasSchedule(
    max_code_size=gas.MAX_CODE_SIZE,
    max_init_code_size=gas.MAX_INIT_CODE_SIZE,
    code_deposit=gas.GAS_CODE_DEPOSIT,
)


@dataclass(frozen=True, eq=False)
class Fork:
    """
    One rule set.

    @ivar name: the fork's name, as state tests and configuration spell it.
    @ivar instructions: the function of each of the 256 opcodes.
    @ivar opcode_names: the mnemonic of each opcode, as EIP-3155 traces print it.
    @ivar precompiles: the precompiled contracts by 20-byte address.
    @ivar precompile_addresses: the same addresses, warm from the start of
        every transaction (EIP-2929).
    @ivar transaction_types: the EIP-2718 types a transaction may have.
    @ivar gas: the transaction-level gas schedule.
    """

    name: str
    instructions: Sequence[Instruction]
    opcode_names: Sequence[str]
    precompiles: Mapping[bytes, Precompile]
    precompile_addresses: tuple[bytes, ...]
    transaction_types: frozenset[int]
    gas: GasSchedule

    def __repr__(self) -> str:
        return f"<Fork {self.name}>"


def _without(table: Sequence[object], opcode: int, replacement: object) -> list:  # type: ignore[type-arg]
    """
    A copy of C{table} with C{opcode}'s entry replaced.
    """
    copy = list(table)
    copy[opcode] = replacement
    return copy


CANCUN_CLZ = Fork(
    name="Cancun+CLZ",
    instructions=INSTRUCTIONS,
    opcode_names=OPCODE_NAMES,
    precompiles=PRECOMPILES,
    precompile_addresses=tuple(PRECOMPILES),
    transaction_types=frozenset((0, 1, 2, 3)),
    gas=CANCUN_GAS,
)
"""Cancun plus CLZ (0x1E): what every network runs today."""

CANCUN = Fork(
    name="Cancun",
    instructions=_without(INSTRUCTIONS, CLZ, invalid_opcode),
    opcode_names=_without(OPCODE_NAMES, CLZ, f"opcode 0x{CLZ:02x} not defined"),
    precompiles=PRECOMPILES,
    precompile_addresses=tuple(PRECOMPILES),
    transaction_types=frozenset((0, 1, 2, 3)),
    gas=CANCUN_GAS,
)
"""Cancun as the ethereum/tests fixtures define it."""

FORKS: Mapping[str, Fork] = {fork.name: fork for fork in (CANCUN, CANCUN_CLZ)}
"""Every known rule set by name."""

DEFAULT_FORK = CANCUN_CLZ
"""The rule set of an environment that names none."""


class UnknownForkError(NodexError, ValueError):
    """
    A fork name that names no rule set (a L{ValueError} too, so that the
    configuration's checks report it under the key's name).
    """


def fork_named(name: str) -> Fork:
    """
    The rule set called C{name}.

    @raise UnknownForkError: no such rule set; the message lists the known ones.
    """
    try:
        return FORKS[name]
    except KeyError:
        raise UnknownForkError(f"unknown fork {name!r}: want one of {', '.join(sorted(FORKS))}") from None


__all__ = [
    "CANCUN",
    "CANCUN_CLZ",
    "CANCUN_GAS",
    "DEFAULT_FORK",
    "FORKS",
    "Fork",
    "GasSchedule",
    "UnknownForkError",
    "fork_named",
]
