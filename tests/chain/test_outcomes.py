"""
Tests for L{nodex.chain.outcomes}.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.chain.outcomes import ChainEvent
from nodex.structures.receipts import Receipt
from tests.chain.logs.test_search import make_block


class ChainEventTests(SynchronousTestCase):
    """
    Tests for L{ChainEvent}.
    """

    def test_receipts_by_index(self) -> None:
        """
        The receipts of an adopted or abandoned block are found by its index; an event
        without receipts (or with fewer than blocks) has none for it.
        """
        receipt = Receipt.from_logs(0, 1, 21_000, ())
        block, _ = make_block(1, [])
        event = ChainEvent((block, block), (block,), adopted_receipts=((receipt,),), abandoned_receipts=((),))
        self.assertEqual(event.receipts_of_adopted(0), (receipt,))
        self.assertEqual(event.receipts_of_adopted(1), ())
        self.assertEqual(event.receipts_of_abandoned(0), ())
        self.assertEqual(ChainEvent((block,)).receipts_of_abandoned(3), ())
