"""
Tests for L{nodex.rpc.nodex_methods}'s C{debug_getBadBlocks} over a fake
chain (the raw getters are tested end to end in
C{tests/e2e/test_nodex_module.py}).
"""

from dataclasses import replace

from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from nodex.api.chain import BadBlock
from nodex.rpc.dispatch import Dispatcher
from nodex.rpc.nodex_methods import RawDebugMethods
from nodex.rpc.registry import MODULES, MethodRegistry, ModuleSettings
from nodex.structures.blocks import Block
from tests.chain.test_processing import sample_store, transfer
from tests.rpc.test_state_methods import DispatchFixture


class BadBlocksChain:
    """
    A chain that has refused the blocks it is given.
    """

    def __init__(self, bad: list[BadBlock]) -> None:
        self.bad = bad

    def bad_blocks(self) -> list[BadBlock]:
        return self.bad


class BadBlocksTests(DispatchFixture, SynchronousTestCase):
    """
    C{debug_getBadBlocks}.
    """

    def serve(self, bad: list[BadBlock]) -> None:
        """
        Serve the raw debug methods over a chain that refused C{bad}.
        """
        registry = MethodRegistry({name: ModuleSettings(True) for name in MODULES})
        registry.add(RawDebugMethods(BadBlocksChain(bad)))  # type: ignore[arg-type]
        self.dispatcher = Dispatcher(registry, Clock())

    def test_entries(self) -> None:
        """
        Each entry has the hash, the block with its transaction objects,
        the RLP and the reason; no total difficulty.
        """
        _, genesis = sample_store()
        tx = transfer(0, 0)
        block = Block(replace(genesis, number=1, parent_hash=genesis.hash), (tx,))
        self.serve([BadBlock(block, "state root differs")])
        [entry] = self.call("debug_getBadBlocks")
        self.assertEqual(entry["hash"], "0x" + block.hash.hex())
        self.assertEqual(entry["rlp"], "0x" + block.encode().hex())
        self.assertEqual(entry["reason"], "state root differs")
        self.assertEqual(entry["block"]["transactions"][0]["hash"], "0x" + tx.hash.hex())
        self.assertNotIn("totalDifficulty", entry["block"])

    def test_unrecoverable_sender(self) -> None:
        """
        A block refused for a transaction without a sender lists its
        transactions by hash.
        """
        _, genesis = sample_store()
        broken = replace(transfer(0, 0), r=0)
        block = Block(replace(genesis, number=1), (broken,))
        self.serve([BadBlock(block, "transaction 0: invalid signature")])
        [entry] = self.call("debug_getBadBlocks")
        self.assertEqual(entry["block"]["transactions"], ["0x" + broken.hash.hex()])

    def test_none(self) -> None:
        """
        No refused block: an empty list; parameters are refused.
        """
        self.serve([])
        self.assertEqual(self.call("debug_getBadBlocks"), [])
        self.assertEqual(self.error("debug_getBadBlocks", 1)["code"], -32602)
