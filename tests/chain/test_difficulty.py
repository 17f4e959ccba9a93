"""
Tests for L{nodex.chain.difficulty}.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.chain.difficulty import MAIN_RULES, REGTEST_RULES, TESTNET_RULES, next_difficulty


class NextDifficultyTests(SynchronousTestCase):
    """
    Tests for L{next_difficulty}.
    """

    def test_regtest_stays_at_one(self) -> None:
        """
        Regtest's divisor keeps difficulty 1 at 1 whatever the block times.
        """
        for delta in (0, 1, 10, 11, 599):
            self.assertEqual(next_difficulty(REGTEST_RULES, 1, 100, 100 + delta, 0), 1)

    def test_fast_blocks_raise_slow_blocks_lower(self) -> None:
        """
        A block faster than the target raises difficulty by 1/divisor; a slower one lowers it.
        """
        parent = 400 * 10**15
        self.assertEqual(next_difficulty(MAIN_RULES, parent, 0, 5, 0), parent + parent // 400)
        self.assertEqual(next_difficulty(MAIN_RULES, parent, 0, 30, 0), parent - parent // 400)
        self.assertEqual(next_difficulty(MAIN_RULES, parent, 0, 14, 0), parent)

    def test_uncles_stretch_the_target(self) -> None:
        """
        Each uncle adds one block duration to the target spacing.
        """
        parent = 400 * 10**15
        self.assertEqual(next_difficulty(MAIN_RULES, parent, 0, 20, 1), parent + parent // 400)

    def test_minimum_and_reset(self) -> None:
        """
        Difficulty never goes below the minimum, and a long pause resets testnet to it.
        """
        self.assertEqual(next_difficulty(MAIN_RULES, MAIN_RULES.minimum, 0, 100, 0), MAIN_RULES.minimum)
        self.assertEqual(next_difficulty(TESTNET_RULES, 10**9, 0, 600, 0), TESTNET_RULES.minimum)
        self.assertNotEqual(next_difficulty(MAIN_RULES, 10**18, 0, 600, 0), MAIN_RULES.minimum)

    def test_timestamp_before_parent(self) -> None:
        """
        A timestamp before the parent's keeps the parent's difficulty.
        """
        self.assertEqual(next_difficulty(MAIN_RULES, 10**18, 100, 50, 0), 10**18)
