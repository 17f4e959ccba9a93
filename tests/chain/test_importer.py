"""
Tests for L{nodex.chain.importer}: the one door every block goes through.
"""

from dataclasses import replace

from twisted.trial.unittest import SynchronousTestCase

from nodex.chain.aside import FILE, SUBMITTED, Bounds, from_peer
from nodex.chain.admission import AdmissionRules
from nodex.chain.building.builder import BuiltBlock
from nodex.chain.building.making import BlockTime, EditsBlock, LoneAdmission, TransactionsBlock
from nodex.chain.dev.blocks import SetBalance
from nodex.chain.errors import InvalidBlockError
from nodex.chain.importer import HOLD_SECONDS, BlockImporter, ImportResult
from nodex.chain.processing import validate_header
from nodex.db.schema import read_canonical_hash, read_header_rlp
from nodex.primitives import Hash32
from nodex.state.state import State
from nodex.structures.blocks import Block
from nodex.structures.headers import Header
from nodex.structures.transactions import LegacyTransaction, impersonate, sign_transaction
from tests.chain.test_processing import (
    ADDRESSES,
    CHAIN_ID,
    KEYS,
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
            self.builder.import_blocks([block], None, FILE)
            blocks.append(block)
            parent = block.header
        return blocks

    def result(self, block: Block, now: int | None = None, source=FILE) -> tuple[ImportResult | None, str | None]:
        """
        Import C{block}; its result and reason.
        """
        step = self.importer.import_blocks([block], now, source)[0]
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
        step = self.importer.import_blocks([self.block], None, SUBMITTED)[0]
        self.assertEqual(step.result, ImportResult.IMPORTED_BEST)
        self.assertEqual(self.importer.tip.header.hash, self.block.hash)

    def test_refused_where_rules_forbid(self) -> None:
        """
        On a network whose rules do not allow the marker (main, testnet),
        even the node's own block is refused.
        """
        strict = BlockImporter(self.store, sample_rules())
        step = strict.import_blocks([self.block], None, SUBMITTED)[0]
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
        steps = self.importer.import_blocks(blocks, None, FILE)
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
        steps = self.importer.import_blocks(run, None, FILE)
        self.assertEqual(
            [step.result for step in steps],
            [ImportResult.IMPORTED_BEST, ImportResult.IMPORTED_BEST, ImportResult.INVALID_BLOCK],
        )
        self.assertEqual(self.importer.tip.header, blocks[1].header)
        self.assertIsNone(read_header_rlp(self.store, blocks[3].hash))
        steps = self.importer.import_blocks(blocks[2:], None, FILE)
        self.assertEqual([step.result for step in steps], [ImportResult.IMPORTED_BEST] * 3)

    def test_kept_aside_until_parent(self) -> None:
        """
        Blocks that arrive before their parent are kept aside and imported,
        in order, as soon as the parent is.
        """
        first, second, third = self.chain_of(3)
        self.assertEqual(self.result(third)[0], ImportResult.NO_PARENT)
        self.assertEqual(self.result(second)[0], ImportResult.NO_PARENT)
        steps = self.importer.import_blocks([first], None, FILE)
        self.assertEqual([step.block_hash for step in steps], [first.hash, second.hash, third.hash])
        self.assertEqual(self.importer.tip.header, third.header)
        self.assertEqual(self.importer.orphan_count, 0)

    def test_kept_aside_bounded(self) -> None:
        """
        At most as many blocks as the bounds allow are kept aside; the
        oldest go first, and are handed back as unused with their source.
        """
        importer = BlockImporter(self.store, sample_rules(), orphan_bounds=Bounds(2, 1 << 20, 2, 1 << 20))
        blocks = self.chain_of(4)
        for block in blocks[1:]:
            importer.import_blocks([block], 0, FILE)
        self.assertEqual(importer.orphan_count, 2)
        self.assertEqual([(unused.block_hash, unused.source) for unused in importer.take_unused()], [(blocks[1].hash, FILE)])
        steps = importer.import_blocks([blocks[0]], 0, FILE)
        self.assertEqual([step.block_hash for step in steps], [blocks[0].hash])

    def test_kept_aside_per_source(self) -> None:
        """
        One source's orphans push out only its own: another source's stay.
        """
        importer = BlockImporter(self.store, sample_rules(), orphan_bounds=Bounds(8, 1 << 20, 2, 1 << 20))
        blocks = self.chain_of(6)
        honest, attacker = from_peer(b"\x01" * 64), from_peer(b"\x02" * 64)
        importer.import_blocks([blocks[1]], 0, honest)
        for block in blocks[2:]:
            importer.import_blocks([block], 0, attacker)
        self.assertEqual(importer.orphans.held_by(attacker)[0], 2)
        self.assertIn(blocks[1].hash, importer.orphans)
        self.assertEqual({unused.source for unused in importer.take_unused()}, {attacker})

    def test_orphans_expire(self) -> None:
        """
        An orphan whose parent does not come within the bound's time is
        forgotten, and handed back as unused ("its parent never came").
        """
        second = self.chain_of(2)[1]
        self.importer.import_blocks([second], 1000, FILE)
        self.importer.import_blocks([], 1000 + 599, FILE)
        self.assertEqual(self.importer.orphan_count, 1)
        self.importer.import_blocks([], 1000 + 600, FILE)
        self.assertEqual(self.importer.orphan_count, 0)
        self.assertEqual([unused.reason for unused in self.importer.take_unused()], ["its parent never came"])

    def test_orphan_checked_before_kept(self) -> None:
        """
        A block with an unknown parent is kept only once its seal holds and
        its difficulty reaches the network's minimum: nothing is kept unchecked.
        """
        second = self.chain_of(2)[1]
        header = second.header
        broken = bytearray(header.bitcoin_merged_mining_header)
        broken[40] ^= 0xFF
        result, reason = self.result(Block(replace(header, bitcoin_merged_mining_header=bytes(broken))))
        self.assertEqual(result, ImportResult.INVALID_BLOCK)
        self.assertIn("seal", reason or "")
        rules = replace(sample_rules(), difficulty=replace(sample_rules().difficulty, minimum=1 << 40))
        strict = BlockImporter(self.store, rules)
        self.assertEqual(strict.import_blocks([second], 0, FILE)[0].result, ImportResult.INVALID_BLOCK)
        self.assertEqual(self.importer.orphan_count + strict.orphan_count, 0)

    def test_side_chain_overtakes(self) -> None:
        """
        A side chain that becomes heavier is adopted through the same door:
        the event names the abandoned blocks and the adopted ones, with
        their receipts (so filters can report removed logs).
        """
        main = self.chain_of(2, transactions=True)
        self.importer.import_blocks(main, None, FILE)
        side_store, _ = sample_store()
        side_builder = BlockImporter(side_store, sample_rules())
        parent = self.genesis
        side = []
        for index in range(3):
            block = build_on(side_store, parent, extra_data=b"side").block
            side_builder.import_blocks([block], None, FILE)
            side.append(block)
            parent = block.header
        steps = self.importer.import_blocks(side, None, FILE)
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
        self.assertEqual(self.importer.store_built(bad, built.outcome).result, ImportResult.INVALID_BLOCK)
        self.assertEqual(self.importer.store_built(built.block, built.outcome).result, ImportResult.IMPORTED_BEST)
        validate_header(self.genesis, built.block.header, sample_rules())


class ImporterTimeTests(ImporterFixture, SynchronousTestCase):
    """
    Blocks ahead of the local clock: held until due within the hold, dropped
    beyond it, refused only when invalid for another reason.
    """

    def test_held_until_due(self) -> None:
        """
        A block more than the drift limit ahead of the clock is held (not
        refused) and imported once it is due.
        """
        block = build_on(self.builder_store, self.genesis, timestamp=1000).block
        self.assertEqual(self.result(block, now=900)[0], ImportResult.FUTURE_BLOCK)
        self.assertIsNone(read_header_rlp(self.store, block.hash))
        self.assertEqual(self.importer.next_due(), 1000 - 60)
        self.assertEqual(self.importer.release_due(939), [])
        steps = self.importer.release_due(940)
        self.assertEqual([step.result for step in steps], [ImportResult.IMPORTED_BEST])
        self.assertEqual(self.importer.tip.header, block.header)
        self.assertIsNone(self.importer.next_due())

    def test_held_again_is_known(self) -> None:
        """
        A held block sent again answers EXIST and is held once.
        """
        block = build_on(self.builder_store, self.genesis, timestamp=1000).block
        self.result(block, now=900)
        self.assertEqual(self.result(block, now=900)[0], ImportResult.EXIST)
        self.assertEqual(len(self.importer.future), 1)

    def test_children_of_held_follow(self) -> None:
        """
        The blocks that arrive on a held block are held too, and follow it
        in, in order, once due.
        """
        first = build_on(self.builder_store, self.genesis, timestamp=1000).block
        self.builder.import_blocks([first], None, FILE)
        second = build_on(self.builder_store, first.header, timestamp=1001).block
        self.result(first, now=900)
        self.assertEqual(self.result(second, now=900)[0], ImportResult.FUTURE_BLOCK)
        steps = self.importer.release_due(941)
        self.assertEqual([step.block_hash for step in steps], [first.hash, second.hash])

    def test_dropped_beyond_the_hold(self) -> None:
        """
        A block stamped more than L{HOLD_SECONDS} ahead is dropped: not
        kept, not refused (its sender's clock may be wrong, not its block).
        """
        block = build_on(self.builder_store, self.genesis, timestamp=HOLD_SECONDS + 1000).block
        result, reason = self.result(block, now=999)
        self.assertEqual(result, ImportResult.DROPPED)
        self.assertIn("ahead of the local clock", reason or "")
        self.assertEqual(len(self.importer.future), 0)

    def test_held_block_checked_first(self) -> None:
        """
        A block ahead of the clock that breaks another rule is refused at
        once, not held.
        """
        block = build_on(self.builder_store, self.genesis, timestamp=1000).block
        bad = Block(reseal(replace(block.header, gas_limit=block.header.gas_limit - 1)))
        self.assertEqual(self.result(bad, now=900)[0], ImportResult.INVALID_BLOCK)
        self.assertEqual(len(self.importer.future), 0)

    def test_held_bounded_per_source(self) -> None:
        """
        A source holds at most its share of the future-block queue; its
        oldest go first, and another source's blocks stay.
        """
        importer = BlockImporter(self.store, sample_rules(), future_bounds=Bounds(8, 1 << 20, 2, 1 << 20))
        fast, other = from_peer(b"\x03" * 64), from_peer(b"\x04" * 64)
        blocks = [
            build_on(self.builder_store, self.genesis, timestamp=1000 + index, extra_data=bytes([index])).block
            for index in range(4)
        ]
        importer.import_blocks([blocks[0]], 900, other)
        for block in blocks[1:]:
            importer.import_blocks([block], 900, fast)
        self.assertEqual(importer.future.held_by(fast)[0], 2)
        self.assertIn(blocks[0].hash, importer.future)
        self.assertEqual([unused.block_hash for unused in importer.take_unused()], [blocks[1].hash])

    def test_no_limit_on_regtest(self) -> None:
        """
        A network without a drift limit (regtest) imports a block however
        far ahead of the clock it is stamped.
        """
        importer = BlockImporter(self.store, replace(sample_rules(), max_seconds_in_future=None))
        block = build_on(self.builder_store, self.genesis, timestamp=10**9).block
        self.assertEqual(importer.import_blocks([block], 0, FILE)[0].result, ImportResult.IMPORTED_BEST)


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


class ImporterMakeTests(ImporterFixture, SynchronousTestCase):
    """
    Blocks made here (L{BlockImporter.make}), whose header and outcome the
    importer does not check again: the builder made them to pass.
    """

    def make(self, request: object) -> Block:
        """
        Make a block in the builder's store; the block made.
        """
        step = self.builder.make(request)  # type: ignore[arg-type]
        self.assertEqual(step.result, ImportResult.IMPORTED_BEST)
        assert step.block is not None and step.head is not None and isinstance(step.built, BuiltBlock)
        self.assertEqual((step.block_hash, step.head.header), (step.block.hash, step.block.header))
        self.assertEqual(step.built.block.header.hash_for_merged_mining, step.block.header.hash_for_merged_mining)
        return step.block

    def test_made_blocks_pass_every_check(self) -> None:
        """
        Blocks made here pass every check of a block from outside (header
        with seal, roots, gas, bloom and fees after executing it again) in
        another node's importer.
        """
        for count in range(3):
            tip = self.builder.tip.header
            candidates = tuple(transfer(key, count - 1 - key) for key in range(count))
            block = self.make(TransactionsBlock(RECIPIENT, BlockTime(tip.timestamp + 1, tip.timestamp), candidates))
            self.assertEqual(len(block.transactions), count)
            self.assertEqual(self.result(block), (ImportResult.IMPORTED_BEST, None))
        tip = self.builder.tip.header
        edit = SetBalance(ADDRESSES[2], 5)
        block = self.make(EditsBlock(RECIPIENT, BlockTime(tip.timestamp + 1, tip.timestamp), (edit,), b"edits"))
        validate_header(tip, block.header, sample_rules())
        self.assertEqual(self.importer.tip.header.hash, tip.hash)

    def test_timestamp_beyond_64_bits(self) -> None:
        """
        A block stamped beyond 64 bits is refused before its edits touch the
        tip's state: the next block does not carry them.
        """
        tip = self.builder.tip.header
        edit = SetBalance(ADDRESSES[2], 5)
        with self.assertRaises(InvalidBlockError) as caught:
            self.builder.make(EditsBlock(RECIPIENT, BlockTime(2**64, tip.timestamp), (edit,)))
        self.assertIn("64 bits", str(caught.exception))
        self.assertEqual(self.builder.tip.header.hash, tip.hash)
        block = self.make(TransactionsBlock(RECIPIENT, BlockTime(tip.timestamp + 1, tip.timestamp), (transfer(0, 0),)))
        state = State.from_store(self.builder_store, block.header.state_root)
        self.assertEqual(state.get_balance(ADDRESSES[2]), 10**30)
        self.assertEqual(self.result(block), (ImportResult.IMPORTED_BEST, None))


class ImporterLoneAdmissionTests(ImporterFixture, SynchronousTestCase):
    """
    An automining node's block for one transaction, admitted with the
    pool's rules first (L{LoneAdmission}): the transaction's own rules are
    checked once when the admission's answer holds for the block, again
    when it may not.
    """

    def setUp(self) -> None:
        """
        Count the calls of validate_transaction, where the admission and
        the builder make them.
        """
        super().setUp()
        self.validations: list[object] = []
        import nodex.chain.admission
        import nodex.chain.processing

        for module in (nodex.chain.admission, nodex.chain.processing):
            self.patch(module, "validate_transaction", self.counting(module.validate_transaction))

    def counting(self, validate):  # type: ignore[no-untyped-def]
        """
        C{validate}, counting its calls.
        """

        def counted(tx, chain_id, impersonation=False):  # type: ignore[no-untyped-def]
            self.validations.append(tx)
            return validate(tx, chain_id, impersonation)

        return counted

    def make(self, builder: BlockImporter, transaction: object, admission: LoneAdmission) -> Block:
        """
        Make the block of C{transaction} alone; the block.
        """
        tip = builder.tip.header
        request = TransactionsBlock(
            RECIPIENT, BlockTime(tip.timestamp + 1, tip.timestamp), (transaction,), empty=False, admit=admission
        )
        step = builder.make(request)
        assert step.block is not None
        return step.block

    def test_checked_once(self) -> None:
        """
        A transaction admitted for this chain's id is not checked again by
        the builder; the block passes every check of a block from outside.
        """
        transaction = transfer(0, 0)
        block = self.make(self.builder, transaction, LoneAdmission(AdmissionRules(CHAIN_ID)))
        self.assertEqual(block.transactions, (transaction,))
        self.assertEqual(self.validations, [transaction])
        self.assertEqual(self.result(block), (ImportResult.IMPORTED_BEST, None))

    def test_checked_again_for_another_chain_id(self) -> None:
        """
        Admitted under another chain id (a legacy transaction without one
        passes any), the transaction is checked again for the block.
        """
        unsigned = LegacyTransaction(nonce=0, gas_price=1, gas=21_000, to=RECIPIENT, value=7, data=b"")
        transaction = sign_transaction(unsigned, KEYS[0], None)
        block = self.make(self.builder, transaction, LoneAdmission(AdmissionRules(CHAIN_ID + 1)))
        self.assertEqual(block.transactions, (transaction,))
        self.assertEqual(self.validations, [transaction, transaction])

    def test_impersonation_checked_again_where_the_rules_forbid(self) -> None:
        """
        A transaction with an impersonation marker admitted as impersonated
        is checked again on a chain whose rules forbid the marker: left
        out, no block is made.
        """
        unsigned = LegacyTransaction(nonce=0, gas_price=1, gas=21_000, to=RECIPIENT, value=7, data=b"")
        marked = impersonate(unsigned, ADDRESSES[2], CHAIN_ID)
        tip = self.builder.tip.header
        request = TransactionsBlock(
            RECIPIENT, BlockTime(tip.timestamp + 1, tip.timestamp), (marked,), empty=False,
            admit=LoneAdmission(AdmissionRules(CHAIN_ID), may_impersonate=True),
        )
        step = self.builder.make(request)
        self.assertIsNone(step.result)
        self.assertEqual(self.validations, [marked, marked])
        self.assertEqual(self.builder.tip.header.hash, tip.hash)
        allowing = BlockImporter(self.builder_store, replace(sample_rules(), impersonation=True))
        self.validations.clear()
        block = self.make(allowing, marked, LoneAdmission(AdmissionRules(CHAIN_ID), may_impersonate=True))
        self.assertEqual((block.transactions, self.validations), ((marked,), [marked]))


class ImporterBlockHashesTests(ImporterFixture, SynchronousTestCase):
    """
    The BLOCKHASH lookup the writer makes for every block on its tip.
    """

    def test_no_typing_union_per_block(self) -> None:
        """
        Making the lookup builds no typing union (an evaluated C{Hash32 |
        None} annotation of the nested lookup did, once per block), and it
        answers the canonical ancestors.
        """
        import typing

        def refused(*args: object) -> object:
            raise AssertionError("a typing union was made")

        self.patch(typing.NewType, "__or__", refused)
        lookup = self.importer.block_hashes(self.importer.tip.header)
        self.assertEqual(lookup(0), self.genesis.hash)
        self.assertIsNone(lookup(1))


class ImporterNodeCacheTests(ImporterFixture, SynchronousTestCase):
    """
    The writer's cache of decoded trie nodes: a state opened afresh after
    a rewind or a reorganisation reads its nodes through it, and what the
    blocks before changed (in their own copies) never shows through.
    """

    def balances(self, state_root: bytes) -> list[int]:
        """
        The senders' and the recipient's balances at C{state_root}, read
        by a state without any cache.
        """
        state = State.from_store(self.store, state_root)
        return [state.get_balance(address) for address in (*ADDRESSES, RECIPIENT)]

    def test_rewind_and_reorganisation(self) -> None:
        """
        Blocks of transfers, a rewind to the first, another block on it
        (with other transfers of the same accounts), then a heavier side
        chain from genesis: every block imports (its state root checked
        against the one its builder computed without this cache) and the
        balances are the builder's.
        """
        first = self.chain_of(3, transactions=True)
        for step in self.importer.import_blocks(first, None, FILE):
            self.assertEqual(step.result, ImportResult.IMPORTED_BEST)
        self.importer.rewind(1)
        other = build_on(self.builder_store, first[0].header, [transfer(0, 1, value=5), transfer(1, 0, value=9)]).block
        self.builder.import_blocks([other], None, FILE)
        self.assertEqual(self.importer.import_blocks([other], None, FILE)[0].result, ImportResult.IMPORTED_BEST)
        self.assertEqual(self.balances(other.header.state_root), self.builder_balances(other.header.state_root))
        side = []
        parent = self.genesis
        for index in range(3):
            block = build_on(self.builder_store, parent, [transfer(2, index, value=3)]).block
            self.builder.import_blocks([block], None, FILE)
            side.append(block)
            parent = block.header
        steps = self.importer.import_blocks(side, None, FILE)
        self.assertEqual(steps[-1].result, ImportResult.IMPORTED_BEST)
        self.assertEqual(self.importer.tip.header, side[-1].header)
        self.assertEqual(self.balances(side[-1].header.state_root), self.builder_balances(side[-1].header.state_root))
        self.assertGreater(len(self.importer._node_cache), 0)

    def builder_balances(self, state_root: bytes) -> list[int]:
        """
        The same balances in the builder's store.
        """
        state = State.from_store(self.builder_store, state_root)
        return [state.get_balance(address) for address in (*ADDRESSES, RECIPIENT)]


class ImporterRootReadsTests(ImporterFixture, SynchronousTestCase):
    """
    A state opened afresh on the root the last fresh one was opened on (a
    rewind to a test suite's fixture before every test) starts with what
    that one read there.
    """

    def test_rewind_again_and_again(self) -> None:
        """
        Rewound to block 1 again and again, the importer takes a block of
        other transfers on it each time; the states after the first start
        with the reads of block 1's root, and every block's state root is
        the builder's (computed without them).
        """
        first = self.chain_of(2, transactions=True)
        for step in self.importer.import_blocks(first, None, FILE):
            self.assertEqual(step.result, ImportResult.IMPORTED_BEST)
        for value in (5, 6, 7):
            self.importer.rewind(1)
            other = build_on(
                self.builder_store, first[0].header, [transfer(0, 1, value=value), transfer(1, 0, value=value + 1)]
            ).block
            self.builder.import_blocks([other], None, FILE)
            self.assertEqual(self.importer.import_blocks([other], None, FILE)[0].result, ImportResult.IMPORTED_BEST)
            reads = self.importer._root_reads
            self.assertEqual(reads.root, first[0].header.state_root)
            for address in ADDRESSES[:2]:
                self.assertIn(address, reads.accounts)
            opened = self.importer._state_for(first[0].header)
            self.assertEqual(
                [opened.get_balance(address) for address in ADDRESSES[:2]],
                [reads.accounts[address].balance for address in ADDRESSES[:2]],
            )
