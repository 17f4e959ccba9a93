"""
The difficulty of the next block (reference §13.1, DESIGN §2).

Difficulty moves by a fraction of the parent's towards keeping one block (plus
one per uncle) every C{duration} seconds; some networks drop to the minimum
after a long pause, so that a test network whose miners went away restarts.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class DifficultyRules:
    """
    One network's difficulty constants.

    @ivar duration: the target seconds between blocks (per block and uncle).
    @ivar divisor: the parent difficulty is adjusted by 1/divisor of itself.
    @ivar minimum: the difficulty never falls below this.
    @ivar reset_after: a block this many seconds or more after its parent gets
        the minimum difficulty; L{None} disables the reset.
    """

    duration: int
    divisor: int
    minimum: int
    reset_after: int | None


REGTEST_RULES = DifficultyRules(duration=10, divisor=2048, minimum=1, reset_after=600)
DEVNET_RULES = DifficultyRules(duration=14, divisor=400, minimum=131072, reset_after=600)
TESTNET_RULES = DifficultyRules(duration=14, divisor=400, minimum=131072, reset_after=600)
MAIN_RULES = DifficultyRules(duration=14, divisor=400, minimum=7 * 10**15, reset_after=None)


def next_difficulty(
    rules: DifficultyRules,
    parent_difficulty: int,
    parent_timestamp: int,
    timestamp: int,
    uncle_count: int,
) -> int:
    """
    The difficulty a block must have, given its parent and its own timestamp.
    """
    delta = timestamp - parent_timestamp
    if rules.reset_after is not None and delta >= rules.reset_after:
        return rules.minimum
    if delta < 0:
        return parent_difficulty
    target = (1 + uncle_count) * rules.duration
    step = parent_difficulty // rules.divisor
    if target > delta:
        difficulty = parent_difficulty + step
    elif target < delta:
        difficulty = parent_difficulty - step
    else:
        difficulty = parent_difficulty
    return max(rules.minimum, difficulty)
