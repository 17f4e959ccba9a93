"""
Tests for L{nodex.services.accounts}.
"""

from twisted.trial.unittest import SynchronousTestCase
from zope.interface.verify import verifyObject

from nodex.interfaces import IAccounts
from nodex.services.accounts import DevAccounts, key_from_seed, regtest_keys
from nodex.services.errors import UnknownAccountError
from nodex.structures.transactions import FeeMarketTransaction, LegacyTransaction, decode_transaction

COW = bytes.fromhex("cd2a3d9f938e13cd947ec05abc7fe734df8dd826")
COW9 = bytes.fromhex("09a1eda29f664ac8f68106f6567276df0c65d859")
MINER = bytes.fromhex("ec4ddeb4380ad69b3e509baad9f158cdf4e4681d")


class DevAccountsTests(SynchronousTestCase):
    """
    Tests for L{DevAccounts}.
    """

    def test_interface(self) -> None:
        """
        L{DevAccounts} provides L{IAccounts}.
        """
        self.assertTrue(verifyObject(IAccounts, DevAccounts.regtest(33)))

    def test_regtest_keys(self) -> None:
        """
        The keys are Keccak-256 of the seeds (reference §13.4).
        """
        self.assertEqual(
            key_from_seed("cow").hex(), "c85ef7d79691fe79573b1a7064c19c1a9819ebdbd1faaab1a8ec92344438aaf4"
        )
        self.assertEqual(
            regtest_keys()[-1].hex(), "bcf6db3716f6a1100ac34bc8e102be662e04b1f7f297094a35e9859ab20c4130"
        )

    def test_addresses_cows_then_coinbase(self) -> None:
        """
        Eleven addresses: the cows in order, then the miner coinbase.
        """
        addresses = DevAccounts.regtest(33).addresses()
        self.assertEqual(len(addresses), 11)
        self.assertEqual((addresses[0], addresses[9], addresses[10]), (COW, COW9, MINER))

    def test_duplicate_keys_listed_once(self) -> None:
        """
        A key given twice gives one account.
        """
        key = key_from_seed("cow")
        self.assertEqual(DevAccounts([key, key], 33).addresses(), [COW])

    def test_sign_legacy_with_eip155(self) -> None:
        """
        A legacy transaction is signed for the node's chain (v = 35 + 2 * 33 + parity).
        """
        accounts = DevAccounts.regtest(33)
        signed = self.successResultOf(accounts.sign_transaction(LegacyTransaction(0, 0, 21000, MINER, 1, b""), COW))
        self.assertIn(signed.v, (101, 102))
        again = decode_transaction(signed.encode())
        self.assertEqual((again.sender, again.chain_id), (COW, 33))

    def test_sign_typed(self) -> None:
        """
        A typed transaction is signed with its own chain id.
        """
        accounts = DevAccounts.regtest(33)
        unsigned = FeeMarketTransaction(33, 0, 1, 2, 21000, MINER, 0, b"")
        signed = self.successResultOf(accounts.sign_transaction(unsigned, COW9))
        self.assertEqual(decode_transaction(signed.encode()).sender, COW9)

    def test_unknown_account(self) -> None:
        """
        An address without a key fails with L{UnknownAccountError} naming it.
        """
        accounts = DevAccounts.regtest(33)
        failure = self.failureResultOf(
            accounts.sign_transaction(LegacyTransaction(0, 0, 21000, MINER, 1, b""), b"\x01" * 20),
            UnknownAccountError,
        )
        self.assertEqual(failure.getErrorMessage(), "Could not find account for address: 0x" + "01" * 20)

    def test_banner(self) -> None:
        """
        The banner lists every account with its key and warns that the keys are public.
        """
        banner = DevAccounts.regtest(33).banner()
        self.assertIn("(0) 0x" + COW.hex(), banner)
        self.assertIn("0x" + key_from_seed("cow9").hex(), banner)
        self.assertIn("(10) 0x" + MINER.hex(), banner)
        self.assertIn("WARNING: these private keys are public", banner)

    def test_start_announces(self) -> None:
        """
        Starting an announcing service logs the banner; a silent one logs nothing.
        """
        from twisted.logger import globalLogPublisher

        events: list[dict] = []
        globalLogPublisher.addObserver(events.append)
        self.addCleanup(globalLogPublisher.removeObserver, events.append)
        DevAccounts([key_from_seed("cow")], 33, announce=False).startService()
        self.assertEqual(events, [])
        DevAccounts.regtest(33).startService()
        self.assertEqual(len(events), 1)
        self.assertIn("0x" + COW.hex(), events[0]["banner"])
