"""
Tests for L{nodex.chain.rules}.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.chain.difficulty import MAIN_RULES, REGTEST_RULES
from nodex.chain.errors import InvalidBlockError
from nodex.chain.networks import chain_rules
from nodex.chain.rules import (
    DEFAULT_FORK_SCHEDULE,
    ChainRules,
    ForkSchedule,
    ForkScheduleError,
    check_gas_limit,
    next_gas_limit,
)
from nodex.evm.forks import CANCUN, CANCUN_CLZ

REGTEST = ChainRules(chain_id=33, difficulty=REGTEST_RULES, target_gas_limit=30_000_000, fixed_gas_limit=True)
MAIN = ChainRules(chain_id=30, difficulty=MAIN_RULES, target_gas_limit=6_800_000, fixed_gas_limit=False)


class GasLimitTests(SynchronousTestCase):
    """
    Tests for the gas limit of templates and imported blocks.
    """

    def test_regtest_is_fixed(self) -> None:
        """
        Regtest templates always take the fixed limit, and other limits are refused.
        """
        self.assertEqual(next_gas_limit(REGTEST, 10_000_000), 30_000_000)
        check_gas_limit(REGTEST, 30_000_000, 30_000_000)
        self.assertRaises(InvalidBlockError, check_gas_limit, REGTEST, 30_000_000, 29_999_999)

    def test_moves_towards_target(self) -> None:
        """
        Templates move towards the target by at most 1/1024 of the parent's limit.
        """
        self.assertEqual(next_gas_limit(MAIN, 10_000_000), 10_000_000 - 10_000_000 // 1024)
        self.assertEqual(next_gas_limit(MAIN, 6_000_000), 6_000_000 + 6_000_000 // 1024)
        self.assertEqual(next_gas_limit(MAIN, 6_799_000), 6_800_000)
        self.assertEqual(next_gas_limit(MAIN, 6_800_000), 6_800_000)

    def test_imported_bounds(self) -> None:
        """
        An imported block may move the limit by at most 1/1024 and never below the minimum.
        """
        check_gas_limit(MAIN, 6_800_000, 6_800_000 + 6_800_000 // 1024)
        self.assertRaises(InvalidBlockError, check_gas_limit, MAIN, 6_800_000, 6_800_000 + 6_800_000 // 1024 + 1)
        self.assertRaises(InvalidBlockError, check_gas_limit, MAIN, 3_000_000, 2_999_000)


class ForkScheduleTests(SynchronousTestCase):
    """
    Tests for L{ForkSchedule}: which EVM rule set applies from which block.
    """

    def test_default(self) -> None:
        """
        The default schedule, and the rules' default, is Cancun+CLZ from genesis.
        """
        self.assertIs(DEFAULT_FORK_SCHEDULE.fork_at(0), CANCUN_CLZ)
        self.assertIs(DEFAULT_FORK_SCHEDULE.fork_at(10**9), CANCUN_CLZ)
        self.assertIs(REGTEST.forks, DEFAULT_FORK_SCHEDULE)

    def test_switch(self) -> None:
        """
        A later activation applies from its block on, not before.
        """
        schedule = ForkSchedule.from_mapping({0: "Cancun", 100: "Cancun+CLZ"})
        self.assertIs(schedule.fork_at(0), CANCUN)
        self.assertIs(schedule.fork_at(99), CANCUN)
        self.assertIs(schedule.fork_at(100), CANCUN_CLZ)
        self.assertIs(schedule.fork_at(5000), CANCUN_CLZ)
        self.assertEqual(schedule.describe(), "Cancun from block 0, Cancun+CLZ from block 100")

    def test_bad_schedules(self) -> None:
        """
        A schedule without block 0 or with an unknown fork is refused.
        """
        self.assertRaises(ForkScheduleError, ForkSchedule.from_mapping, {1: "Cancun"})
        exc = self.assertRaises(ForkScheduleError, ForkSchedule.from_mapping, {0: "Osaka"})
        self.assertIn("'Osaka'", str(exc))


class NetworkRulesTests(SynchronousTestCase):
    """
    Tests for L{nodex.chain.networks.chain_rules}.
    """

    def test_impersonation_on_dev_chains_only(self) -> None:
        """
        Regtest and devnet blocks built by the node may carry impersonated
        senders' transactions; testnet and main never.
        """
        self.assertTrue(chain_rules("regtest", 33).impersonation)
        self.assertTrue(chain_rules("devnet", 32).impersonation)
        self.assertFalse(chain_rules("testnet", 31).impersonation)
        self.assertFalse(chain_rules("main", 30).impersonation)
