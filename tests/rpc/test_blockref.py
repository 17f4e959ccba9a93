"""
Tests for L{nodex.rpc.blockref}.
"""

from dataclasses import replace

from twisted.internet.defer import Deferred, succeed
from twisted.trial.unittest import SynchronousTestCase

from nodex.api.chain import ChainHead
from nodex.api.errors import BlockNotFoundError
from nodex.chain.networks import FINALIZED_CONFIRMATIONS, SAFE_CONFIRMATIONS, chain_rules
from nodex.rpc.blockref import PendingNotSupportedError, require_block, resolve_block, tag_number
from nodex.rpc.decoders import BlockHashSelector, BlockTag
from nodex.rpc.errors import rpc_error_for


class _Block:
    """
    A stand-in block: only its number and hash matter here.
    """

    def __init__(self, number: int) -> None:
        self.number = number
        self.hash = bytes([number]) * 32


class _Header:
    def __init__(self, number: int) -> None:
        self.number = number


class FakeChain:
    """
    A chain of blocks 0 to 3 whose block 9 (hash 0x09...) is stored but not canonical.
    """

    def __init__(self, safe_depth: int = 0, finalized_depth: int = 0) -> None:
        self.blocks = {n: _Block(n) for n in range(4)}
        self.side = _Block(9)
        self.head = ChainHead(_Header(3), 4)  # type: ignore[arg-type]
        self.rules = chain_rules("regtest", 33)
        self.rules = replace(self.rules, safe_depth=safe_depth, finalized_depth=finalized_depth)

    def get_block_by_number(self, number: int) -> "Deferred[_Block | None]":
        return succeed(self.blocks.get(number))

    def get_block_by_hash(self, block_hash: bytes) -> "Deferred[_Block | None]":
        for block in [*self.blocks.values(), self.side]:
            if block.hash == block_hash:
                return succeed(block)
        return succeed(None)

    def is_canonical(self, block_hash: bytes) -> "Deferred[bool]":
        return succeed(block_hash != self.side.hash)


class ResolveBlockTests(SynchronousTestCase):
    """
    Tests for L{resolve_block} and L{require_block}.
    """

    def resolve(self, selector, **kwargs):  # type: ignore[no-untyped-def]
        return self.successResultOf(Deferred.fromCoroutine(resolve_block(FakeChain(), selector, **kwargs)))

    def test_tags_and_numbers(self) -> None:
        """
        latest and pending name the head, earliest the genesis, a number that block.
        """
        self.assertEqual(self.resolve(BlockTag.LATEST).number, 3)
        self.assertEqual(self.resolve(BlockTag.PENDING).number, 3)
        self.assertEqual(self.resolve(BlockTag.EARLIEST).number, 0)
        self.assertEqual(self.resolve(2).number, 2)
        self.assertIsNone(self.resolve(7))

    def test_safe_and_finalized(self) -> None:
        """
        On regtest C{safe} and C{finalized} are the head; on a network with
        confirmations, that many blocks below it (never below genesis).
        """
        self.assertEqual(self.resolve(BlockTag.SAFE).number, 3)
        self.assertEqual(self.resolve(BlockTag.FINALIZED).number, 3)
        deep = FakeChain(safe_depth=2, finalized_depth=12)
        self.assertEqual(tag_number(deep, BlockTag.SAFE), 1)  # type: ignore[arg-type]
        self.assertEqual(tag_number(deep, BlockTag.FINALIZED), 0)  # type: ignore[arg-type]
        rules = chain_rules("main", 30)
        self.assertEqual((rules.safe_depth, rules.finalized_depth), (SAFE_CONFIRMATIONS, FINALIZED_CONFIRMATIONS))

    def test_pending_refused(self) -> None:
        """
        The partially supported methods answer -32201 for pending.
        """
        failure = self.failureResultOf(
            Deferred.fromCoroutine(resolve_block(FakeChain(), BlockTag.PENDING, pending_supported=False)),
            PendingNotSupportedError,
        )
        self.assertEqual(failure.value.code, -32201)

    def test_hash_selector(self) -> None:
        """
        An EIP-1898 hash finds side blocks unless requireCanonical is set.
        """
        self.assertEqual(self.resolve(BlockHashSelector(b"\x09" * 32)).number, 9)
        failure = self.failureResultOf(
            Deferred.fromCoroutine(resolve_block(FakeChain(), BlockHashSelector(b"\x09" * 32, True))),
            BlockNotFoundError,
        )
        self.assertIn("is not canonical", str(failure.value))

    def test_require_block(self) -> None:
        """
        An unknown block is an error -32600 naming it.
        """
        failure = self.failureResultOf(
            Deferred.fromCoroutine(require_block(FakeChain(), 0x999999)), BlockNotFoundError
        )
        error = rpc_error_for(failure.value)
        self.assertEqual((error.code, str(failure.value)), (-32600, "Block 0x999999 not found"))
