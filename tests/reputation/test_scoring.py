"""
Tests for L{nodex.reputation.scoring}: the scoring model of reference §15
against hand-computed tables.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.api.peers import PeerEvent
from nodex.reputation import scoring
from nodex.reputation.scoring import (
    EVENTS,
    PeerScore,
    PunishmentParameters,
    ScoringRecord,
    ScoringTable,
    next_score,
    punishment_duration,
)

MINUTE = 60_000

SCORE_TABLE = {
    # event: (score after it from 0, from 2, from -1)
    "INVALID_BLOCK": (-1, -1, -2),
    "VALID_BLOCK": (1, 3, -1),
    "INVALID_TRANSACTION": (-1, -1, -2),
    "VALID_TRANSACTION": (1, 3, -1),
    "FAILED_HANDSHAKE": (0, 2, -1),
    "SUCCESSFUL_HANDSHAKE": (0, 2, -1),
    "INVALID_NETWORK": (-1, -1, -2),
    "INCOMPATIBLE_PROTOCOL": (1, 3, -1),
    "UNEXPECTED_GENESIS": (1, 3, -1),
    "DISCONNECTION": (1, 3, -1),
    "REPEATED_MESSAGE": (0, 2, -1),
    "INVALID_MESSAGE": (-1, -1, -2),
    "UNEXPECTED_MESSAGE": (0, 2, -1),
    "TIMEOUT_MESSAGE": (0, 2, -1),
    "INVALID_HEADER": (-1, -1, -2),
}
"""Hand-computed from reference §15."""

PUNISHING = {"INVALID_BLOCK", "INVALID_MESSAGE", "INVALID_HEADER"}


class EventTests(SynchronousTestCase):
    """
    The fifteen events and the score each leaves.
    """

    def test_events_in_reference_order(self) -> None:
        """
        The model's events are the interface's L{PeerEvent}s, in the reference's enum order.
        """
        self.assertEqual(len(EVENTS), 15)
        self.assertEqual(list(EVENTS), list(SCORE_TABLE))
        interface_events = [name for name in vars(PeerEvent) if name.isupper()]
        self.assertEqual(interface_events, list(EVENTS))
        self.assertIs(PeerEvent, scoring.PeerEvent)
        for name in EVENTS:
            self.assertEqual(getattr(PeerEvent, name), name)

    def test_score_table(self) -> None:
        """
        Each event moves scores 0, 2 and -1 as the table says.
        """
        for event, expected in SCORE_TABLE.items():
            self.assertEqual(tuple(next_score(start, event) for start in (0, 2, -1)), expected, event)

    def test_record_counts_and_scores(self) -> None:
        """
        A record counts each event and keeps the score of the sequence.
        """
        score = PeerScore()
        for event in ("VALID_BLOCK", "VALID_BLOCK", "SUCCESSFUL_HANDSHAKE", "INVALID_TRANSACTION", "VALID_BLOCK"):
            score.update(event)
        self.assertEqual((score.count("VALID_BLOCK"), score.count("INVALID_TRANSACTION"), score.score), (3, 1, -1))

    def test_unknown_event(self) -> None:
        """
        An event outside the model is a programming error.
        """
        self.assertRaises(ValueError, next_score, 0, "SPAM")
        table = ScoringTable(PunishmentParameters(MINUTE, 10))
        self.assertRaises(ValueError, table.record, "a", "SPAM", 0)
        self.assertEqual(len(table), 0)


class DurationTests(SynchronousTestCase):
    """
    Punishment durations for the 1st to 5th punishment.
    """

    def test_without_maximum(self) -> None:
        """
        12 minutes, then 10 % more per earlier punishment (integer milliseconds).
        """
        parameters = PunishmentParameters(12 * MINUTE, 10, 0)
        durations = [punishment_duration(parameters, previous, -1) for previous in range(5)]
        self.assertEqual(durations, [720000, 792000, 871200, 958320, 1054152])

    def test_with_maximum(self) -> None:
        """
        The growth stops at the maximum.
        """
        parameters = PunishmentParameters(12 * MINUTE, 10, 900000)
        durations = [punishment_duration(parameters, previous, -1) for previous in range(5)]
        self.assertEqual(durations, [720000, 792000, 871200, 900000, 900000])

    def test_address_defaults(self) -> None:
        """
        The address defaults (12 min, 10 %, 6000 min) reach the maximum only after many punishments.
        """
        parameters = PunishmentParameters(12 * MINUTE, 10, 6000 * MINUTE)
        self.assertEqual(
            [punishment_duration(parameters, previous, -1) for previous in range(5)],
            [720000, 792000, 871200, 958320, 1054152],
        )
        self.assertEqual(punishment_duration(parameters, 66, -1), 6000 * MINUTE)
        self.assertEqual(punishment_duration(parameters, 65, -1), 353065771)

    def test_integer_steps(self) -> None:
        """
        Each step rounds down, as the reference's integer arithmetic does.
        """
        parameters = PunishmentParameters(1001, 10, 0)
        self.assertEqual([punishment_duration(parameters, previous, 0) for previous in range(3)], [1001, 1101, 1211])

    def test_negative_score_multiplies(self) -> None:
        """
        A score of -3 triples the duration; 0 and positive scores leave it.
        """
        parameters = PunishmentParameters(12 * MINUTE, 10, 0)
        self.assertEqual(punishment_duration(parameters, 1, -3), 3 * 792000)
        self.assertEqual(punishment_duration(parameters, 1, 0), 792000)
        self.assertEqual(punishment_duration(parameters, 1, 4), 792000)

    def test_multiplied_duration_capped(self) -> None:
        """
        The multiplied duration never exceeds the maximum.
        """
        parameters = PunishmentParameters(12 * MINUTE, 10, 900000)
        self.assertEqual(punishment_duration(parameters, 2, -5), 900000)
        self.assertEqual(punishment_duration(parameters, 0, -1), 720000)

    def test_zero_increment(self) -> None:
        """
        Without an increment every punishment lasts the configured duration.
        """
        parameters = PunishmentParameters(5000, 0, 0)
        self.assertEqual({punishment_duration(parameters, previous, -1) for previous in range(5)}, {5000})


class TableTests(SynchronousTestCase):
    """
    Records, punishments, lazy expiry and the LRU bound of L{ScoringTable}.
    """

    def setUp(self) -> None:
        """
        A table with the node defaults: 12 minutes, 10 %, no maximum, 100 records.
        """
        self.table = ScoringTable(PunishmentParameters(12 * MINUTE, 10, 0), 100)

    def test_punishing_events(self) -> None:
        """
        An invalid block, message or header turns a record bad; no other event does.
        """
        for event in EVENTS:
            table = ScoringTable(PunishmentParameters(MINUTE, 10))
            self.assertEqual(table.record("peer", event, 0), event in PUNISHING, event)
            self.assertEqual(table.has_good_reputation("peer", 0), event not in PUNISHING, event)

    def test_punished_until(self) -> None:
        """
        The first punishment lasts 12 minutes from the offence; the record
        is bad until then and good from then on, reset with its count kept.
        """
        start = 1_700_000_000_000
        self.table.record("peer", "VALID_BLOCK", start - 5)
        self.assertTrue(self.table.record("peer", "INVALID_BLOCK", start))
        score = self.table.get("peer")
        self.assertEqual((score.score, score.punishments, score.punished_until), (-1, 1, start + 720000))
        self.assertFalse(self.table.has_good_reputation("peer", start + 719999))
        self.assertTrue(self.table.has_good_reputation("peer", start + 720000))
        self.assertEqual(
            (score.counters, score.score, score.punishments, score.punished_until, score.good_reputation),
            ({}, 0, 1, 0, True),
        )

    def test_second_punishment_longer(self) -> None:
        """
        After the first punishment ends, the next offence is punished 10 % longer.
        """
        self.table.record("peer", "INVALID_MESSAGE", 0)
        self.assertTrue(self.table.record("peer", "INVALID_HEADER", 720000))
        self.assertEqual(self.table.get("peer").punished_until, 720000 + 792000)

    def test_events_while_punished(self) -> None:
        """
        Offences during a punishment are counted but neither extend it nor count as punishments.
        """
        self.table.record("peer", "INVALID_BLOCK", 0)
        self.assertFalse(self.table.record("peer", "INVALID_BLOCK", 1000))
        score = self.table.get("peer")
        self.assertEqual((score.count("INVALID_BLOCK"), score.score, score.punishments, score.punished_until), (2, -2, 1, 720000))

    def test_score_multiplies_first_punishment(self) -> None:
        """
        Two invalid transactions then an invalid header: score -3, three times 12 minutes.
        """
        for event in ("INVALID_TRANSACTION", "INVALID_TRANSACTION"):
            self.assertFalse(self.table.record("peer", event, 0))
        self.assertTrue(self.table.record("peer", "INVALID_HEADER", 0))
        self.assertEqual(self.table.get("peer").punished_until, 3 * 720000)

    def test_expiry_is_lazy(self) -> None:
        """
        An event after the end of a punishment counts against the reset record.
        """
        self.table.record("peer", "INVALID_BLOCK", 0)
        self.assertTrue(self.table.record("peer", "INVALID_BLOCK", 720000))
        score = self.table.get("peer")
        self.assertEqual((score.count("INVALID_BLOCK"), score.score, score.punishments), (1, -1, 2))

    def test_listing_expires(self) -> None:
        """
        Listing the records ends the punishments whose time has come.
        """
        self.table.record("a", "INVALID_BLOCK", 0)
        self.table.record("b", "INVALID_BLOCK", 500000)
        listed = {key: score.good_reputation for key, score in self.table.items(720000)}
        self.assertEqual(listed, {"a": True, "b": False})

    def test_punishment_disabled(self) -> None:
        """
        With punishments off, records are scored but stay good.
        """
        table = ScoringTable(PunishmentParameters(MINUTE, 10), punishment_enabled=False)
        self.assertFalse(table.record("peer", "INVALID_BLOCK", 0))
        self.assertTrue(table.has_good_reputation("peer", 0))
        self.assertEqual((table.get("peer").score, table.get("peer").punishments), (-1, 0))

    def test_unknown_key_is_good(self) -> None:
        """
        A key without a record is in good standing, and asking makes no record.
        """
        self.assertTrue(self.table.has_good_reputation("stranger", 0))
        self.assertEqual(len(self.table), 0)

    def test_lru_eviction(self) -> None:
        """
        Past the bound, the least recently used record leaves; events and checks count as uses.
        """
        table = ScoringTable(PunishmentParameters(MINUTE, 10), max_records=3)
        for key in ("a", "b", "c"):
            table.record(key, "VALID_BLOCK", 0)
        table.has_good_reputation("a", 0)
        table.record("d", "VALID_BLOCK", 0)
        self.assertEqual(table.keys(), ["c", "a", "d"])
        table.record("c", "VALID_BLOCK", 0)
        table.record("e", "VALID_BLOCK", 0)
        self.assertEqual(table.keys(), ["d", "c", "e"])

    def test_default_bound_of_100(self) -> None:
        """
        The node table keeps the 100 most recently used records.
        """
        for number in range(150):
            self.table.record(number, "SUCCESSFUL_HANDSHAKE", 0)
        self.assertEqual(self.table.keys(), list(range(50, 150)))

    def test_unbounded(self) -> None:
        """
        A bound of 0 keeps every record.
        """
        table = ScoringTable(PunishmentParameters(MINUTE, 10), max_records=0)
        for number in range(1000):
            table.record(number, "DISCONNECTION", 0)
        self.assertEqual(len(table), 1000)

    def test_eviction_forgets_punishment(self) -> None:
        """
        An evicted record's punishment goes with it (the address record still holds the peer).
        """
        table = ScoringTable(PunishmentParameters(MINUTE, 10), max_records=1)
        table.record("a", "INVALID_BLOCK", 0)
        table.record("b", "VALID_BLOCK", 0)
        self.assertTrue(table.has_good_reputation("a", 0))

    def test_remove(self) -> None:
        """
        A removed record is gone; removing twice says so.
        """
        self.table.record("a", "INVALID_BLOCK", 0)
        self.assertTrue(self.table.remove("a"))
        self.assertFalse(self.table.remove("a"))
        self.assertTrue(self.table.has_good_reputation("a", 0))

    def test_snapshot(self) -> None:
        """
        A L{ScoringRecord} has every counter, the score, the punishments and their end.
        """
        self.table.record("a", "SUCCESSFUL_HANDSHAKE", 0)
        self.table.record("a", "INVALID_HEADER", 10)
        record = ScoringRecord.of("address", "a", self.table.get("a"))
        self.assertEqual(set(record.counters), set(EVENTS))
        self.assertEqual(record.counters["INVALID_HEADER"], 1)
        self.assertEqual(record.counters["SUCCESSFUL_HANDSHAKE"], 1)
        self.assertEqual((record.score, record.punishments, record.good_reputation, record.punished_until), (-1, 1, False, 720010))
