"""
Tests for L{nodex.chain.importer}: the one door every block goes through.
"""

from dataclasses import replace

from twisted.trial.unittest import SynchronousTestCase

from nodex.chain.importer import MAX_ORPHANS, BlockImporter, ImportResult
from nodex.chain.processing import validate_header
from nodex.db.memory import MemoryStore
from nodex.db.schema import read_canonical_hash, read_header_rlp
from nodex.primitives import Hash32
from nodex.structures.blocks import Block
from nodex.structures.headers import Header
from nodex.structures.transactions import LegacyTransaction, impersonate
from tests.chain.test_processing import (
    ADDRESSES,
    CHAIN_ID,
    RECIPIENT,
    build_on,
    reseal,
    sample_rules,
    sample_store,
    transfer,
)


class ImporterFixture:
    """
    A memory store with the sample genesis, an importer over it, and a
    second store that builds blocks independently (so that the importer's
    store only ever holds what it imported).
    """

    def setUp(self) -> None:
        """
        The importer's store and the builder's store, both at genesis.
        """
        self.store, self.genesis = sample_store()
        self.builder_store, _ = sample_store()
        self.importer = BlockImporter(self.store, sample_rules())
        self.builder = BlockImporter(self.builder_store, sample_rules())

    def chain_of(self, count: int, parent: Header | None = None, transactions: bool = False) -> list[Block]:
        """
        C{count} blocks built one on the other in the builder's store (each
        with a transfer when C{transactions}), stored there as they are built.
        """
        parent = self.genesis if parent is None else parent
        blocks = []
        for index in range(count):
            txs = [transfer(0, parent.number)] if transactions else []
            block = build_on(self.builder_store, parent, txs).block
            self.builder.import_block(block)
            blocks.append(block)
            parent = block.header
        return blocks

    def result(self, block: Block, now: int | None = None) -> tuple[str, str | None]:
        """
        Import C{block}; its result and reason.
        """
        step = self.importer.import_block(block, now)[0]
        return step.result, step.reason


class ImporterRefusalTests(ImporterFixture, SynchronousTestCase):
    """
    Every reason the importer refuses a block, each leaving the store as it was.
    """

    def refused(self, block: Block, words: str, now: int | None = None) -> None:
        """
        Assert that C{block} is refused with a reason containing C{words},
        and that nothing of it is stored.
        """
        result, reason = self.result(block, now)
        self.assertEqual(result, ImportResult.INVALID_BLOCK)
        assert reason is not None
        self.assertIn(words, reason)
        self.assertIsNone(read_header_rlp(self.store, block.hash))
        self.assertEqual(self.importer.tip.header, self.genesis)

    def test_unknown_parent(self) -> None:
        """
        A block whose parent is unknown answers NO_PARENT and is kept aside.
        """
        first, second = self.chain_of(2)
        self.assertEqual(self.result(second), (ImportResult.NO_PARENT, None))
        self.assertEqual(self.importer.orphan_count, 1)
        self.assertIsNone(read_header_rlp(self.store, second.hash))

    def test_bad_seal(self) -> None:
        """
        A block whose Bitcoin header's merkle root does not lead to the
        coinbase that commits to the block is refused.
        """
        block = self.chain_of(1)[0]
        header = block.header
        broken = bytearray(header.bitcoin_merged_mining_header)
        broken[40] ^= 0xFF
        self.refused(Block(replace(header, bitcoin_merged_mining_header=bytes(broken))), "merkle")

    def test_bad_state_root(self) -> None:
        """
        A block whose state root differs from its execution is refused.
        """
        block = build_on(self.builder_store, self.genesis, [transfer(0, 0)]).block
        header = reseal(replace(block.header, state_root=Hash32(b"\x01" * 32)))
        self.refused(Block(header, block.transactions), "state root")

    def test_bad_receipts_root(self) -> None:
        """
        A block whose receipts root differs from its execution is refused.
        """
        block = build_on(self.builder_store, self.genesis, [transfer(0, 0)]).block
        header = reseal(replace(block.header, receipts_root=Hash32(b"\x02" * 32)))
        self.refused(Block(header, block.transactions), "receipts root")

    def test_bad_transactions_root(self) -> None:
        """
        A block whose transactions were swapped for others is refused.
        """
        block = build_on(self.builder_store, self.genesis, [transfer(0, 0)]).block
        self.refused(Block(block.header, (transfer(1, 0),)), "transactions root")

    def test_bad_gas_used(self) -> None:
        """
        A block whose gas used differs from its execution is refused.
        """
        block = build_on(self.builder_store, self.genesis, [transfer(0, 0)]).block
        header = reseal(replace(block.header, gas_used=block.header.gas_used + 1))
        self.refused(Block(header, block.transactions), "gas used")

    def test_gas_above_limit(self) -> None:
        """
        A block whose gas limit moves away from the network's fixed limit is refused.
        """
        block = self.chain_of(1)[0]
        header = reseal(replace(block.header, gas_limit=block.header.gas_limit - 1))
        self.refused(Block(header), "gas limit")

    def test_timestamp_not_after_parent(self) -> None:
        """
        A block not later than its parent is refused.
        """
        block = self.chain_of(1)[0]
        self.refused(Block(reseal(replace(block.header, timestamp=self.genesis.timestamp))), "timestamp")

    def test_timestamp_in_the_future(self) -> None:
        """
        A block more than a minute ahead of the importer's clock is refused;
        the same block imports once the time has come.
        """
        block = build_on(self.builder_store, self.genesis, timestamp=1000).block
        self.refused(block, "in the future", now=900)
        self.assertEqual(self.result(block, now=1000), (ImportResult.IMPORTED_BEST, None))

    def test_too_many_uncles(self) -> None:
        """
        A block with more than ten uncles is refused.
        """
        block = self.chain_of(1)[0]
        uncles = tuple(
            build_on(self.builder_store, self.genesis, extra_data=bytes([index])).block.header for index in range(11)
        )
        built = build_on(self.builder_store, block.header, uncles=uncles[:10]).block
        header = reseal(replace(built.header, uncle_count=11))
        self.assertEqual(self.result(block), (ImportResult.IMPORTED_BEST, None))
        result, reason = self.result(Block(header, (), uncles))
        self.assertEqual(result, ImportResult.INVALID_BLOCK)
        assert reason is not None
        self.assertTrue("uncle" in reason)

    def test_invalid_transaction(self) -> None:
        """
        A block with a transaction whose nonce is wrong is refused, naming the transaction.
        """
        good = build_on(self.builder_store, self.genesis, [transfer(0, 0)]).block
        wrong = transfer(0, 5)
        block = build_on(self.builder_store, self.genesis).block
        from nodex.chain.processing import transactions_root

        header = reseal(replace(block.header, transactions_root=transactions_root([wrong])))
        self.refused(Block(header, (wrong,)), "transaction 0")
        self.assertEqual(self.result(good), (ImportResult.IMPORTED_BEST, None))

    def test_known_block(self) -> None:
        """
        A block already stored answers EXIST and changes nothing.
        """
        block = self.chain_of(1)[0]
        self.assertEqual(self.result(block), (ImportResult.IMPORTED_BEST, None))
        self.assertEqual(self.result(block), (ImportResult.EXIST, None))


class ImporterImpersonationTests(ImporterFixture, SynchronousTestCase):
    """
    Blocks carrying a dev chain's impersonation marker: accepted only when
    this node built them, on a network whose rules allow the marker.
    """

    def setUp(self) -> None:
        """
        Importers over rules that allow the marker.
        """
        super().setUp()
        rules = replace(sample_rules(), impersonation=True)
        self.importer = BlockImporter(self.store, rules)
        self.builder = BlockImporter(self.builder_store, rules)
        unsigned = LegacyTransaction(nonce=0, gas_price=1, gas=21_000, to=RECIPIENT, value=7, data=b"")
        self.marked = impersonate(unsigned, ADDRESSES[2], CHAIN_ID)
        self.block = build_on(self.builder_store, self.genesis, [self.marked], rules=rules).block

    def test_built_by_the_builder(self) -> None:
        """
        The builder includes the marked transaction under rules that allow it.
        """
        self.assertEqual(self.block.transactions, (self.marked,))

    def test_refused_from_peers(self) -> None:
        """
        A block from a peer or a file (not built here) with the marker is refused.
        """
        result, reason = self.result(self.block)
        self.assertEqual(result, ImportResult.INVALID_BLOCK)
        assert reason is not None
        self.assertIn("transaction 0", reason)
        self.assertIn("impersonated", reason)
        self.assertIsNone(read_header_rlp(self.store, self.block.hash))

    def test_accepted_when_built_here(self) -> None:
        """
        The node's own sealed template is accepted, and its sender is the
        impersonated address.
        """
        step = self.importer.import_block(self.block, None, built_here=True)[0]
        self.assertEqual(step.result, ImportResult.IMPORTED_BEST)
        self.assertEqual(self.importer.tip.header.hash, self.block.hash)

    def test_refused_where_rules_forbid(self) -> None:
        """
        On a network whose rules do not allow the marker (main, testnet),
        even the node's own block is refused.
        """
        strict = BlockImporter(self.store, sample_rules())
        step = strict.import_block(self.block, None, built_here=True)[0]
        self.assertEqual(step.result, ImportResult.INVALID_BLOCK)


class ImporterRunTests(ImporterFixture, SynchronousTestCase):
    """
    Runs of blocks, kept-aside blocks and reorganisations through the door.
    """

    def test_run(self) -> None:
        """
        A run of blocks is imported in order, each becoming the head, with
        one event each.
        """
        blocks = self.chain_of(5, transactions=True)
        steps = self.importer.import_run(blocks)
        self.assertEqual([step.result for step in steps], [ImportResult.IMPORTED_BEST] * 5)
        self.assertEqual(self.importer.tip.header, blocks[-1].header)
        self.assertEqual([step.event.adopted for step in steps], [(block,) for block in blocks])
        for block in blocks:
            self.assertEqual(read_canonical_hash(self.store, block.number), block.hash)

    def test_bad_block_in_the_middle(self) -> None:
        """
        A run stops after its first invalid block: the blocks before it are
        stored, those after it are not tried.
        """
        blocks = self.chain_of(5)
        bad = Block(reseal(replace(blocks[2].header, state_root=Hash32(b"\x03" * 32))))
        run = blocks[:2] + [bad] + blocks[3:]
        steps = self.importer.import_run(run)
        self.assertEqual(
            [step.result for step in steps],
            [ImportResult.IMPORTED_BEST, ImportResult.IMPORTED_BEST, ImportResult.INVALID_BLOCK],
        )
        self.assertEqual(self.importer.tip.header, blocks[1].header)
        self.assertIsNone(read_header_rlp(self.store, blocks[3].hash))
        steps = self.importer.import_run(blocks[2:])
        self.assertEqual([step.result for step in steps], [ImportResult.IMPORTED_BEST] * 3)

    def test_kept_aside_until_parent(self) -> None:
        """
        Blocks that arrive before their parent are kept aside and imported,
        in order, as soon as the parent is.
        """
        first, second, third = self.chain_of(3)
        self.assertEqual(self.result(third)[0], ImportResult.NO_PARENT)
        self.assertEqual(self.result(second)[0], ImportResult.NO_PARENT)
        steps = self.importer.import_block(first)
        self.assertEqual([step.block_hash for step in steps], [first.hash, second.hash, third.hash])
        self.assertEqual(self.importer.tip.header, third.header)
        self.assertEqual(self.importer.orphan_count, 0)

    def test_kept_aside_bounded(self) -> None:
        """
        At most L{MAX_ORPHANS} blocks are kept aside; the oldest go first.
        """
        importer = BlockImporter(self.store, sample_rules(), max_orphans=2)
        blocks = self.chain_of(4)
        for block in blocks[1:]:
            importer.import_block(block)
        self.assertEqual(importer.orphan_count, 2)
        steps = importer.import_block(blocks[0])
        self.assertEqual([step.block_hash for step in steps], [blocks[0].hash])
        self.assertGreater(MAX_ORPHANS, 2)

    def test_side_chain_overtakes(self) -> None:
        """
        A side chain that becomes heavier is adopted through the same door:
        the event names the abandoned blocks and the adopted ones, with
        their receipts (so filters can report removed logs).
        """
        main = self.chain_of(2, transactions=True)
        self.importer.import_run(main)
        side_store, _ = sample_store()
        side_builder = BlockImporter(side_store, sample_rules())
        parent = self.genesis
        side = []
        for index in range(3):
            block = build_on(side_store, parent, extra_data=b"side").block
            side_builder.import_block(block)
            side.append(block)
            parent = block.header
        steps = self.importer.import_run(side)
        self.assertEqual(
            [step.result for step in steps],
            [ImportResult.IMPORTED_NOT_BEST, ImportResult.IMPORTED_NOT_BEST, ImportResult.IMPORTED_BEST],
        )
        event = steps[-1].event
        self.assertEqual([block.hash for block in event.abandoned], [block.hash for block in main])
        self.assertEqual([block.hash for block in event.adopted], [block.hash for block in side])
        self.assertEqual(len(event.abandoned_receipts[0]), 1)
        self.assertEqual(self.importer.tip.header, side[-1].header)
        self.assertEqual(read_canonical_hash(self.store, 1), side[0].hash)

    def test_built_block_checked(self) -> None:
        """
        A block whose outcome is known still has its header rules checked.
        """
        built = build_on(self.builder_store, self.genesis)
        bad = Block(replace(built.block.header, timestamp=0))
        self.assertEqual(self.importer.import_built(bad, built.outcome).result, ImportResult.INVALID_BLOCK)
        self.assertEqual(self.importer.import_built(built.block, built.outcome).result, ImportResult.IMPORTED_BEST)
        validate_header(self.genesis, built.block.header, sample_rules())


class ImporterLayerTests(SynchronousTestCase):
    """
    The importer is pure: L4 imports no Twisted.
    """

    def test_no_twisted(self) -> None:
        """
        Importing the importer in a fresh interpreter loads neither Twisted nor zope.
        """
        import subprocess
        import sys

        code = (
            "import sys, nodex.chain.importer, nodex.chain.chainfile; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('twisted', 'zope')))"
        )
        output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        self.assertEqual(output.strip(), "[]")
