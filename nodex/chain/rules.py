"""
The consensus constants of one network, and the rules that use only them.

A network preset (C{nodex/presets/<network>.toml}) fills a L{ChainRules};
everything in C{nodex/chain} that depends on the network takes one.
"""

from dataclasses import dataclass

from nodex.chain.difficulty import DifficultyRules
from nodex.chain.errors import InvalidBlockError

GAS_LIMIT_ADJUSTMENT_DIVISOR = 1024
"""A block's gas limit may differ from its parent's by at most 1/1024 of it."""

MIN_GAS_LIMIT = 3_000_000
"""No block's gas limit may fall below this (reference §13.2)."""

MAX_EXTRA_DATA_SIZE = 32
MAX_UNCLES = 10
MAX_UNCLE_DEPTH = 7


@dataclass(frozen=True)
class ChainRules:
    """
    One network's consensus constants.

    @ivar chain_id: the EIP-155 chain id.
    @ivar difficulty: the difficulty adjustment constants.
    @ivar target_gas_limit: the gas limit templates move towards.
    @ivar fixed_gas_limit: whether every block must have exactly
        C{target_gas_limit} (regtest, DESIGN §2) rather than moving towards it.
    @ivar max_seconds_in_future: how far ahead of the local clock a block's
        timestamp may be when it is imported.
    """

    chain_id: int
    difficulty: DifficultyRules
    target_gas_limit: int
    fixed_gas_limit: bool
    max_seconds_in_future: int = 60


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
