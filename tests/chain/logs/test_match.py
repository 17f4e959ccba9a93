"""
Tests for L{nodex.chain.logs.match}: the index of installed log filters
selects what each filter alone selects.
"""

import random

from twisted.trial.unittest import SynchronousTestCase

from nodex.chain.logs.match import MAX_KEYS_PER_SELECTION, LogFilterIndex, normalise
from nodex.chain.logs.search import LogEntry, LogFilter, block_log_entries
from nodex.primitives import Address, Hash32
from nodex.structures.logs import Log
from nodex.structures.receipts import Receipt

ADDRESSES = [Address(bytes([n]) * 20) for n in range(1, 5)]
TOPICS = [Hash32(bytes([n]) * 32) for n in range(1, 6)]
BLOCK = Hash32(b"\xbb" * 32)


def receipts_of(logs_per_transaction: list[list[Log]]) -> list[Receipt]:
    """
    One receipt per transaction, holding its logs.
    """
    return [Receipt.from_logs(0, 1, 21000, tuple(logs)) for logs in logs_per_transaction]


def matched(index: LogFilterIndex, receipts: list[Receipt]) -> dict[object, list[LogEntry]]:
    """
    What the index gives each member for a block of C{receipts}.
    """
    hashes = [Hash32(bytes([n]) * 32) for n in range(len(receipts))]
    result: dict[object, list[LogEntry]] = {}
    for found in index.match_logs(BLOCK, 7, hashes, receipts):
        if found is None:
            continue
        selection, entries = found
        for member in selection.members:
            result.setdefault(member, []).extend(entries)
    return result


def random_filter(chooser: random.Random) -> LogFilter:
    """
    A filter of a few alternatives, or none, per slot.
    """
    addresses = tuple(chooser.sample(ADDRESSES, chooser.choice([0, 0, 1, 2])))
    topics = []
    for _ in range(chooser.randint(0, 4)):
        topics.append(None if chooser.random() < 0.3 else tuple(chooser.sample(TOPICS, chooser.choice([1, 1, 2, 3]))))
    return LogFilter(addresses, tuple(topics))


def random_logs(chooser: random.Random) -> list[list[Log]]:
    """
    Transactions with logs of zero to four topics.
    """
    return [
        [
            Log(chooser.choice(ADDRESSES), tuple(chooser.choice(TOPICS) for _ in range(chooser.randint(0, 4))), b"")
            for _ in range(chooser.randint(0, 6))
        ]
        for _ in range(chooser.randint(1, 5))
    ]


class LogFilterIndexTests(SynchronousTestCase):
    """
    Tests for L{LogFilterIndex}.
    """

    def test_same_as_each_filter(self) -> None:
        """
        For random filters and blocks, each member gets exactly what its
        filter selects alone (L{block_log_entries}), in block order.
        """
        chooser = random.Random(26)
        for _ in range(60):
            index = LogFilterIndex()
            filters = {member: random_filter(chooser) for member in range(30)}
            for member, log_filter in filters.items():
                index.add(member, log_filter)
            receipts = receipts_of(random_logs(chooser))
            hashes = [Hash32(bytes([n]) * 32) for n in range(len(receipts))]
            got = matched(index, receipts)
            for member, log_filter in filters.items():
                expected = block_log_entries(BLOCK, 7, hashes, receipts, log_filter)
                self.assertEqual(got.get(member, []), expected, log_filter)

    def test_identical_filters_share(self) -> None:
        """
        A thousand members with the same selection (in any order of
        alternatives) are one selection, matched once: every member gets
        the very same entry objects.
        """
        index = LogFilterIndex()
        for member in range(1000):
            ordered = ADDRESSES[:2] if member % 2 else ADDRESSES[1::-1]
            index.add(member, LogFilter(ordered, ((TOPICS[0],), None)))
        self.assertEqual((len(index), index.selections()), (1000, 1))
        receipts = receipts_of([[Log(ADDRESSES[0], (TOPICS[0],), b"")] * 3])
        got = matched(index, receipts)
        self.assertEqual(len(got), 1000)
        first = got[0]
        self.assertEqual(len(first), 3)
        self.assertTrue(all(got[member][i] is first[i] for member in got for i in range(3)))

    def test_match_all_entries_built_once(self) -> None:
        """
        Distinct selections that take the same log get the same entry object.
        """
        index = LogFilterIndex()
        index.add("all", LogFilter())
        index.add("address", LogFilter((ADDRESSES[0],)))
        index.add("topic", LogFilter((), ((TOPICS[1],),)))
        got = matched(index, receipts_of([[Log(ADDRESSES[0], (TOPICS[1],), b"x")]]))
        self.assertIs(got["all"][0], got["address"][0])
        self.assertIs(got["all"][0], got["topic"][0])

    def test_remove(self) -> None:
        """
        A removed member gets nothing; a selection goes with its last member.
        """
        index = LogFilterIndex()
        index.add("a", LogFilter((ADDRESSES[0],)))
        index.add("b", LogFilter((ADDRESSES[0],)))
        self.assertTrue(index.remove("a"))
        self.assertFalse(index.remove("a"))
        receipts = receipts_of([[Log(ADDRESSES[0], (), b"")]])
        self.assertEqual(list(matched(index, receipts)), ["b"])
        index.remove("b")
        self.assertEqual((len(index), index.selections()), (0, 0))
        self.assertEqual(matched(index, receipts), {})
        index.add("c", LogFilter())
        index.add("c", LogFilter((ADDRESSES[1],)))
        self.assertEqual((len(index), index.selections()), (1, 1))

    def test_many_alternatives_checked(self) -> None:
        """
        A selection with more alternatives than it gets keys for is found
        by part of its values and checked in full.
        """
        many = tuple(Hash32(n.to_bytes(32, "big")) for n in range(1, MAX_KEYS_PER_SELECTION + 2))
        index = LogFilterIndex()
        index.add("wide", LogFilter((ADDRESSES[0],), (many, (TOPICS[0],))))
        log_in = Log(ADDRESSES[0], (many[-1], TOPICS[0]), b"")
        log_out = Log(ADDRESSES[0], (many[-1], TOPICS[1]), b"")
        got = matched(index, receipts_of([[log_in, log_out]]))
        self.assertEqual([entry.log for entry in got["wide"]], [log_in])

    def test_normalise(self) -> None:
        """
        Order, repetition and trailing open positions do not matter.
        """
        self.assertEqual(
            normalise(LogFilter((ADDRESSES[1], ADDRESSES[0], ADDRESSES[1]), ((TOPICS[1], TOPICS[0]), None, ()))),
            normalise(LogFilter((ADDRESSES[0], ADDRESSES[1]), ((TOPICS[0], TOPICS[1]),))),
        )

    def test_yields_while_matching(self) -> None:
        """
        Matching a long block yields L{None} along the way, where a caller may pause.
        """
        index = LogFilterIndex()
        index.add("all", LogFilter())
        receipts = receipts_of([[Log(ADDRESSES[0], (), b"")] * 100])
        steps = list(index.match_logs(BLOCK, 7, [BLOCK], receipts))
        self.assertEqual(steps.count(None), 3)
        self.assertEqual(len(steps[-1][1]), 100)  # type: ignore[index]
