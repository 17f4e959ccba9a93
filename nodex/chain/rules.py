"""
The consensus constants of one network, and the rules that use only them.

A network preset (C{nodex/presets/<network>.toml}) fills a L{ChainRules};
everything in C{nodex/chain} that depends on the network takes one.
"""

from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass, field

from nodex.chain.difficulty import DifficultyRules
from nodex.chain.errors import ChainError, InvalidBlockError
from nodex.evm.forks import DEFAULT_FORK, Fork, UnknownForkError, fork_named

GAS_LIMIT_ADJUSTMENT_DIVISOR = 1024
"""A block's gas limit may differ from its parent's by at most 1/1024 of it."""

MIN_GAS_LIMIT = 3_000_000
"""No block's gas limit may fall below this (reference §13.2)."""

DRIFT_LIMIT_SECONDS = 15
"""
How far ahead of the local clock a block may be stamped and still be
imported at once, on the networks with real clocks (devnet, testnet, main);
a block further ahead waits until it is due (geth's allowed future block
time, 15 s; the reference refuses blocks beyond 60 s instead, a rule that
punished honest peers whose clocks ran a little fast: C{docs/chain-service.md}).
No node of nodex stamps its own blocks beyond it.
"""

MAX_EXTRA_DATA_SIZE = 32
MAX_UNCLES = 10
MAX_UNCLE_DEPTH = 7


class ForkScheduleError(ChainError):
    """
    A fork schedule that does not start at genesis or names an unknown fork.
    """


@dataclass(frozen=True)
class ForkSchedule:
    """
    Which EVM rule set applies from which block (DESIGN §2).

    @ivar activations: (first block, rule set) pairs in increasing block
        order, the first at block 0.
    """

    activations: tuple[tuple[int, Fork], ...]

    @classmethod
    def from_mapping(cls, forks: Mapping[int, str]) -> "ForkSchedule":
        """
        A schedule from a mapping of first block to fork name, as a network
        preset's C{chain.forks} table gives it.

        @raise ForkScheduleError: no fork at block 0, or an unknown fork name.
        """
        if 0 not in forks:
            raise ForkScheduleError("the fork schedule must name the fork of block 0")
        try:
            activations = tuple((block, fork_named(name)) for block, name in sorted(forks.items()))
        except UnknownForkError as exc:
            raise ForkScheduleError(str(exc)) from None
        return cls(activations)

    def fork_at(self, number: int) -> Fork:
        """
        The rule set of block C{number}.
        """
        activations = self.activations
        if len(activations) == 1:
            return activations[0][1]
        index = bisect_right([block for block, _ in activations], number) - 1
        return activations[max(index, 0)][1]

    def describe(self) -> str:
        """
        The schedule in words, for the log line at start.
        """
        return ", ".join(f"{fork.name} from block {block}" for block, fork in self.activations)


DEFAULT_FORK_SCHEDULE = ForkSchedule(((0, DEFAULT_FORK),))
"""Every network's schedule today: Cancun plus CLZ from genesis."""


@dataclass(frozen=True)
class ChainRules:
    """
    One network's consensus constants.

    @ivar chain_id: the EIP-155 chain id.
    @ivar difficulty: the difficulty adjustment constants.
    @ivar target_gas_limit: the gas limit templates move towards.
    @ivar fixed_gas_limit: whether every block must have exactly
        C{target_gas_limit} (regtest, DESIGN §2) rather than moving towards it.
    @ivar max_seconds_in_future: the network's drift limit: how far ahead of
        the local clock a block's timestamp may be when it is imported (a
        block further ahead waits until it is due), and so the furthest
        ahead a node stamps its own blocks; L{None} for no limit (regtest, a
        dev chain whose clock the developer moves: C{docs/chain-service.md}).
    @ivar forks: which EVM rule set applies from which block.
    @ivar impersonation: whether the node's own blocks may carry
        transactions of impersonated senders (the dev chains, regtest and
        devnet, C{docs/devchain.md}); blocks from peers and chain files
        never may.
    @ivar safe_depth: how many blocks below the head the C{safe} block
        tag names (0 on regtest; confirmations on proof-of-work networks,
        whose finality is only ever probable).
    @ivar finalized_depth: likewise for C{finalized}.
    """

    chain_id: int
    difficulty: DifficultyRules
    target_gas_limit: int
    fixed_gas_limit: bool
    max_seconds_in_future: int | None = DRIFT_LIMIT_SECONDS
    forks: ForkSchedule = field(default=DEFAULT_FORK_SCHEDULE)
    impersonation: bool = False
    safe_depth: int = 0
    finalized_depth: int = 0


def next_gas_limit(rules: ChainRules, parent_gas_limit: int) -> int:
    """
    The gas limit of a new block template on a parent with C{parent_gas_limit}.

    Regtest keeps its target; other networks move towards the target by at
    most 1/1024 of the parent's limit per block (reference §13.2 with
    C{forcegaslimit}).
    """
    if rules.fixed_gas_limit:
        return rules.target_gas_limit
    step = parent_gas_limit // GAS_LIMIT_ADJUSTMENT_DIVISOR
    target = rules.target_gas_limit
    if parent_gas_limit < target:
        return min(target, parent_gas_limit + step)
    return max(target, parent_gas_limit - step, MIN_GAS_LIMIT)


def check_gas_limit(rules: ChainRules, parent_gas_limit: int, gas_limit: int) -> None:
    """
    Check an imported block's gas limit against its parent's.

    @raise InvalidBlockError: the limit is outside what the rules allow.
    """
    if rules.fixed_gas_limit:
        if gas_limit != rules.target_gas_limit:
            raise InvalidBlockError(
                f"gas limit {gas_limit} differs from this network's fixed {rules.target_gas_limit}"
            )
        return
    bound = parent_gas_limit // GAS_LIMIT_ADJUSTMENT_DIVISOR
    if abs(gas_limit - parent_gas_limit) > bound:
        raise InvalidBlockError(
            f"gas limit {gas_limit} moves more than {bound} from the parent's {parent_gas_limit}"
        )
    if gas_limit < MIN_GAS_LIMIT:
        raise InvalidBlockError(f"gas limit {gas_limit} is below the minimum {MIN_GAS_LIMIT}")
