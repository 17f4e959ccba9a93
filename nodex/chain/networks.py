"""
The consensus constants of each network preset (DESIGN §2, reference §13).

The presets name their network and chain id; the constants that only the
code should change (difficulty adjustment, gas-limit policy) live here, and
L{chain_rules} joins the two into the L{ChainRules} of a node.
"""

from nodex.chain.difficulty import DEVNET_RULES, MAIN_RULES, REGTEST_RULES, TESTNET_RULES, DifficultyRules
from nodex.chain.errors import ChainError
from nodex.chain.rules import DEFAULT_FORK_SCHEDULE, ChainRules, ForkSchedule
from nodex.crypto import keccak256, private_key_to_address
from nodex.primitives import Address

REGTEST_GAS_LIMIT = 30_000_000
"""Regtest's fixed block gas limit (DESIGN §2: what contract developers expect)."""

TARGET_GAS_LIMIT = 6_800_000
"""The gas limit that main, testnet and devnet templates move towards (reference §13.2)."""

_DIFFICULTY: dict[str, DifficultyRules] = {
    "regtest": REGTEST_RULES,
    "devnet": DEVNET_RULES,
    "testnet": TESTNET_RULES,
    "main": MAIN_RULES,
}

REGTEST_MINER_KEY = keccak256(b"regtest_miner_secret_please_change")
"""The regtest miner's coinbase key (reference §13.4); public, like the cow keys."""

REGTEST_MINER_ADDRESS: Address = private_key_to_address(REGTEST_MINER_KEY)


DEV_NETWORKS = frozenset({"regtest", "devnet"})
"""The networks whose own blocks may carry impersonated senders' transactions."""


class UnknownNetworkError(ChainError):
    """
    A network name that has no consensus constants.
    """


SAFE_CONFIRMATIONS = 6
"""How far below the head the C{safe} block is on proof-of-work networks (main, testnet, devnet)."""

FINALIZED_CONFIRMATIONS = 12
"""How far below the head the C{finalized} block is on proof-of-work networks."""


def chain_rules(network: str, chain_id: int, forks: ForkSchedule = DEFAULT_FORK_SCHEDULE) -> ChainRules:
    """
    The consensus rules of C{network} with C{chain_id}, running the EVM
    rule sets of C{forks} (the preset's C{chain.forks}).

    @raise UnknownNetworkError: the network is not regtest, devnet, testnet or main.
    """
    try:
        difficulty = _DIFFICULTY[network]
    except KeyError:
        raise UnknownNetworkError(
            f"no consensus rules for network {network!r}: want one of {', '.join(sorted(_DIFFICULTY))}"
        ) from None
    dev_chain = network in DEV_NETWORKS
    if network == "regtest":
        # A dev chain whose clock the developer moves (evm_increaseTime,
        # evm_setNextBlockTimestamp, hardhat_mine with intervals): like the
        # reference's regtest (newBlockMaxSecondsInTheFuture 0), no drift
        # limit, so that its followers accept whatever time it reaches.
        return ChainRules(
            chain_id, difficulty, REGTEST_GAS_LIMIT, fixed_gas_limit=True, max_seconds_in_future=None,
            forks=forks, impersonation=dev_chain,
        )
    return ChainRules(
        chain_id, difficulty, TARGET_GAS_LIMIT, fixed_gas_limit=False, forks=forks, impersonation=dev_chain,
        safe_depth=SAFE_CONFIRMATIONS, finalized_depth=FINALIZED_CONFIRMATIONS,
    )


__all__ = [
    "DEV_NETWORKS",
    "FINALIZED_CONFIRMATIONS",
    "SAFE_CONFIRMATIONS",
    "REGTEST_GAS_LIMIT",
    "REGTEST_MINER_ADDRESS",
    "REGTEST_MINER_KEY",
    "TARGET_GAS_LIMIT",
    "UnknownNetworkError",
    "chain_rules",
]
