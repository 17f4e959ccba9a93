"""
Tests for L{nodex.rpc.evm_methods}: snapshots, revert, reset, mining
controls and time (reference §3.4).
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.api.conventions import ETHEREUM_CONVENTIONS
from nodex.rpc.decoders import DecodeError
from nodex.rpc.evm_methods import seconds, snapshot_id
from tests.rpc.test_chain_methods import RPCFixture, hexed
from tests.services.test_pool import legacy


class EvmMethodsTests(RPCFixture, SynchronousTestCase):
    """
    The evm module over the fake chain and miner.
    """

    def setUp(self) -> None:
        """
        A node over the fake chain.
        """
        self.make_node(auto=False)

    def test_mine(self) -> None:
        """
        evm_mine mines one block (with the pending transactions) and answers null.
        """
        tx = legacy(0)
        self.call("eth_sendRawTransaction", hexed(tx.encode()))
        self.assertEqual(self.call("eth_blockNumber"), "0x0")
        self.assertIsNone(self.call("evm_mine"))
        self.assertEqual(self.call("eth_blockNumber"), "0x1")
        self.assertEqual(self.call("eth_getTransactionReceipt", hexed(tx.hash))["blockNumber"], "0x1")

    def test_snapshot_ids_count_up(self) -> None:
        """
        Snapshot ids start at 0x1 and increase by one.
        """
        self.assertEqual([self.call("evm_snapshot") for _ in range(3)], ["0x1", "0x2", "0x3"])

    def test_revert(self) -> None:
        """
        Reverting rewinds the chain, empties the pool, keeps the snapshot
        reverted to and drops later ones.
        """
        first = self.call("evm_snapshot")
        self.call("evm_mine")
        self.call("evm_snapshot")
        self.call("evm_mine")
        self.call("eth_sendRawTransaction", hexed(legacy(0).encode()))
        self.assertIs(self.call("evm_revert", first), True)
        self.assertEqual((self.chain.rewound_to, self.call("eth_blockNumber"), len(self.pool)), ([0], "0x0", 0))
        self.assertEqual(self.call("evm_snapshot"), "0x2")
        self.call("evm_mine")
        self.assertIs(self.call("evm_revert", first), True)
        self.assertEqual(self.chain.rewound_to, [0, 0])

    def test_revert_unknown(self) -> None:
        """
        Unknown ids answer false; a revert at the snapshot's height changes nothing.
        """
        self.assertIs(self.call("evm_revert", "0x1"), False)
        snapshot = self.call("evm_snapshot")
        self.assertIs(self.call("evm_revert", "0x0"), False)
        self.assertIs(self.call("evm_revert", "0x2"), False)
        self.assertIs(self.call("evm_revert", snapshot), True)
        self.assertEqual(self.chain.rewound_to, [])

    def test_revert_consumes_under_ethereum_conventions(self) -> None:
        """
        Under the Ethereum conventions (Hardhat's rule) reverting consumes
        the snapshot and the later ones, ids keep growing, and the chain's
        time goes back to the snapshot's.
        """
        self.make_node(auto=False, conventions=ETHEREUM_CONVENTIONS)
        first = self.call("evm_snapshot")
        self.call("evm_increaseTime", 3600)
        second = self.call("evm_snapshot")
        self.call("evm_mine")
        self.assertEqual((first, second), ("0x1", "0x2"))
        self.assertIs(self.call("evm_revert", first), True)
        self.assertEqual((self.chain.rewound_to, self.miner.chain_time()), ([0], 1000))
        self.assertIs(self.call("evm_revert", first), False)
        self.assertIs(self.call("evm_revert", second), False)
        self.assertEqual(self.call("evm_snapshot"), "0x3")

    def test_revert_among_many(self) -> None:
        """
        With many snapshots kept, a revert finds the one it names, whether
        old, recent or between, under both rules; ids that were never
        given, or that a revert dropped, answer false.
        """
        for conventions in (None, ETHEREUM_CONVENTIONS):
            if conventions is None:
                self.make_node(auto=False)
            else:
                self.make_node(auto=False, conventions=conventions)
            ids = []
            for _ in range(40):
                ids.append(self.call("evm_snapshot"))
                self.call("evm_mine")
            self.assertIs(self.call("evm_revert", hex(41)), False)
            self.assertIs(self.call("evm_revert", ids[30]), True)
            self.assertEqual(self.chain.rewound_to, [30])
            self.assertIs(self.call("evm_revert", ids[35]), False)
            self.assertIs(self.call("evm_revert", ids[3]), True)
            self.assertIs(self.call("evm_revert", ids[0]), True)
            self.assertEqual(self.chain.rewound_to, [30, 3, 0])
            self.assertIs(self.call("evm_revert", ids[1]), False)

    def test_revert_bad_id(self) -> None:
        """
        An id that is no 0x-hex string answers -32602.
        """
        self.assertEqual(self.error("evm_revert", "12"), (-32602, "invalid argument 0: invalid snapshot id 12"))
        self.assertEqual(self.error("evm_revert")[0], -32602)

    def test_reset(self) -> None:
        """
        evm_reset goes back to genesis, empties the pool and forgets the snapshots.
        """
        self.call("evm_snapshot")
        self.call("evm_mine")
        self.call("eth_sendRawTransaction", hexed(legacy(0).encode()))
        self.assertIsNone(self.call("evm_reset"))
        self.assertEqual((self.call("eth_blockNumber"), len(self.pool)), ("0x0", 0))
        self.assertIs(self.call("evm_revert", "0x1"), False)

    def test_increase_time(self) -> None:
        """
        The answer is the accumulated shift; zero or less adds nothing.
        """
        self.assertEqual(self.call("evm_increaseTime", "0x10"), "0x10")
        self.assertEqual(self.call("evm_increaseTime", "20"), hex(36))
        self.assertEqual(self.call("evm_increaseTime", 4), hex(40))
        self.assertEqual(self.call("evm_increaseTime", "-5"), hex(40))
        self.assertEqual(self.error("evm_increaseTime", "soon"), (-32602, "invalid argument 0: invalid number of seconds soon"))

    def test_start_stop(self) -> None:
        """
        evm_stopMining and evm_startMining switch the miner off and on.
        """
        self.miner.mode = "auto"
        self.assertIsNone(self.call("evm_startMining"))
        self.assertIs(self.call("eth_mining"), True)
        self.assertIsNone(self.call("evm_stopMining"))
        self.assertIs(self.call("eth_mining"), False)
        self.call("eth_sendRawTransaction", hexed(legacy(0).encode()))
        self.assertEqual(self.call("eth_blockNumber"), "0x0")


class DecoderTests(SynchronousTestCase):
    """
    The evm module's parameter decoders.
    """

    def test_snapshot_id(self) -> None:
        """
        Only 0x-hex strings are snapshot ids.
        """
        self.assertEqual(snapshot_id("0x1f"), 31)
        for bad in ("0x", "1", 1, None, "0xzz"):
            with self.assertRaises(DecodeError):
                snapshot_id(bad)

    def test_seconds(self) -> None:
        """
        Decimal and hex strings and integers are seconds; booleans and words are not.
        """
        self.assertEqual([seconds(v) for v in ("0xa", "10", 10, "-1")], [10, 10, 10, -1])
        for bad in (True, "ten", "0x", 1.5, None):
            with self.assertRaises(DecodeError):
                seconds(bad)
