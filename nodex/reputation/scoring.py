"""
The peer scoring model of reference §15, as plain synchronous Python: the
fifteen events, how each moves a record's score, when a record turns bad,
how long its punishment lasts, and the tables of records by node id (bounded,
least recently used first out) and by IP address.

Nothing here knows the clock: every call that depends on time takes the
current time in milliseconds, so that the model is tested against tables and
the service (L{nodex.services.reputation}) supplies its injected clock.
"""

from collections import OrderedDict
from collections.abc import Hashable, Iterator
from dataclasses import dataclass


class PeerEvent:
    """
    The events of the peer scoring model (reference §15), in its order.
    """

    INVALID_BLOCK = "INVALID_BLOCK"
    VALID_BLOCK = "VALID_BLOCK"
    INVALID_TRANSACTION = "INVALID_TRANSACTION"
    VALID_TRANSACTION = "VALID_TRANSACTION"
    FAILED_HANDSHAKE = "FAILED_HANDSHAKE"
    SUCCESSFUL_HANDSHAKE = "SUCCESSFUL_HANDSHAKE"
    INVALID_NETWORK = "INVALID_NETWORK"
    INCOMPATIBLE_PROTOCOL = "INCOMPATIBLE_PROTOCOL"
    UNEXPECTED_GENESIS = "UNEXPECTED_GENESIS"
    DISCONNECTION = "DISCONNECTION"
    REPEATED_MESSAGE = "REPEATED_MESSAGE"
    INVALID_MESSAGE = "INVALID_MESSAGE"
    UNEXPECTED_MESSAGE = "UNEXPECTED_MESSAGE"
    TIMEOUT_MESSAGE = "TIMEOUT_MESSAGE"
    INVALID_HEADER = "INVALID_HEADER"


EVENTS = tuple(value for name, value in vars(PeerEvent).items() if name.isupper())
"""The fifteen events, in the reference's enum order (C{nodex.api} re-exports L{PeerEvent})."""

_LOWERING = frozenset(
    {
        PeerEvent.INVALID_NETWORK,
        PeerEvent.INVALID_BLOCK,
        PeerEvent.INVALID_TRANSACTION,
        PeerEvent.INVALID_MESSAGE,
        PeerEvent.INVALID_HEADER,
    }
)
_NEUTRAL = frozenset(
    {
        PeerEvent.UNEXPECTED_MESSAGE,
        PeerEvent.FAILED_HANDSHAKE,
        PeerEvent.SUCCESSFUL_HANDSHAKE,
        PeerEvent.REPEATED_MESSAGE,
        PeerEvent.TIMEOUT_MESSAGE,
    }
)
_PUNISHING = (PeerEvent.INVALID_BLOCK, PeerEvent.INVALID_MESSAGE, PeerEvent.INVALID_HEADER)


def next_score(score: int, event: str) -> int:
    """
    The score of a record after one more C{event} (reference §15).

    An invalid network, block, transaction, message or header first drops a
    positive score to zero and then takes one off; unexpected, repeated and
    timed-out messages and handshakes leave it; every other event adds one
    to a score that is not negative (a negative score stays until reset).

    @raise ValueError: C{event} is not one of L{EVENTS}.
    """
    if event in _LOWERING:
        return min(score, 0) - 1
    if event in _NEUTRAL:
        return score
    if event not in EVENTS:
        raise ValueError(f"unknown peer event {event!r}")
    return score + 1 if score >= 0 else score


@dataclass(frozen=True)
class PunishmentParameters:
    """
    How long the punishments of one kind of record last.

    @ivar duration: the first punishment, in milliseconds.
    @ivar increment: how much longer, in percent, each punishment lasts than
        the one before.
    @ivar maximum: the longest punishment in milliseconds; 0 for no maximum.
    """

    duration: int
    increment: int
    maximum: int = 0


def punishment_duration(parameters: PunishmentParameters, previous: int, score: int) -> int:
    """
    The length in milliseconds of a punishment that follows C{previous}
    earlier punishments of a record whose score is now C{score}.

    The configured duration grows by the increment (integer arithmetic) once
    per earlier punishment, and stops growing at the maximum; a negative
    score then multiplies it by C{-score}; the result never exceeds the
    maximum (reference §15).
    """
    duration = parameters.duration
    rate = 100 + parameters.increment
    maximum = parameters.maximum
    for _ in range(previous):
        duration = duration * rate // 100
        if maximum and duration > maximum:
            return maximum
    if score < 0:
        duration *= -score
    return min(duration, maximum) if maximum else duration


class PeerScore:
    """
    The scoring record of one node id or one IP address.

    @ivar counters: how many times each event happened since the last reset.
    @ivar score: the score (reference §15).
    @ivar punishments: how many times the record was punished; a reset keeps it.
    @ivar good_reputation: C{False} while punished.
    @ivar punished_since: when the current punishment began (unix
        milliseconds); meaningless while the reputation is good.
    @ivar punishment: the current punishment's length in milliseconds.
    """

    def __init__(self) -> None:
        self.counters: dict[str, int] = {}
        self.score = 0
        self.punishments = 0
        self.good_reputation = True
        self.punished_since = 0
        self.punishment = 0

    @property
    def punished_until(self) -> int:
        """
        When the current punishment ends (unix milliseconds), 0 when not punished.
        """
        return 0 if self.good_reputation else self.punished_since + self.punishment

    def count(self, event: str) -> int:
        """
        How many times C{event} happened since the last reset.
        """
        return self.counters.get(event, 0)

    def update(self, event: str) -> None:
        """
        Count one more C{event} and move the score.

        @raise ValueError: C{event} is not one of L{EVENTS}.
        """
        self.score = next_score(self.score, event)
        self.counters[event] = self.counters.get(event, 0) + 1

    def deserves_punishment(self) -> bool:
        """
        Whether the record holds an invalid block, message or header and is
        not punished already.
        """
        return self.good_reputation and any(self.counters.get(event) for event in _PUNISHING)

    def start_punishment(self, now: int, duration: int) -> None:
        """
        Punish the record for C{duration} milliseconds from C{now}.
        """
        self.good_reputation = False
        self.punished_since = now
        self.punishment = duration
        self.punishments += 1

    def refresh(self, now: int) -> bool:
        """
        End a punishment whose time has come: reset the counters, the score
        and the reputation, and keep the count of punishments.

        @return: whether the record has a good reputation now.
        """
        if not self.good_reputation and self.punished_until <= now:
            self.counters = {}
            self.score = 0
            self.good_reputation = True
            self.punished_since = 0
            self.punishment = 0
        return self.good_reputation


class ScoringTable:
    """
    The records of one kind (node ids, or IP addresses), with their
    punishment parameters; optionally bounded, the least recently used
    record leaving first.

    Expiry is lazy: a record's punishment ends when the record is next
    looked at (an event, a reputation check, a listing) at or after its end.
    """

    def __init__(self, parameters: PunishmentParameters, max_records: int = 0, punishment_enabled: bool = True) -> None:
        """
        @param parameters: the punishment durations of this kind of record.
        @param max_records: the most records kept (0: no bound).
        @param punishment_enabled: when C{False}, records are scored but never punished.
        """
        self.parameters = parameters
        self.max_records = max_records
        self.punishment_enabled = punishment_enabled
        self._records: OrderedDict[Hashable, PeerScore] = OrderedDict()

    def __len__(self) -> int:
        return len(self._records)

    def record(self, key: Hashable, event: str, now: int, punish: bool = True) -> bool:
        """
        Record C{event} against C{key}'s record (made if new), and punish the
        record if it now deserves it.

        @param now: the time in unix milliseconds.
        @param punish: C{False} for a record that is never punished (a
            trusted peer's: scored, never refused).
        @return: whether the record turned bad with this event.
        @raise ValueError: C{event} is not one of L{EVENTS}.
        """
        if event not in EVENTS:
            raise ValueError(f"unknown peer event {event!r}")
        score = self._records.get(key)
        if score is None:
            score = self._records[key] = PeerScore()
            if self.max_records and len(self._records) > self.max_records:
                self._records.popitem(last=False)
        else:
            self._records.move_to_end(key)
            score.refresh(now)
        score.update(event)
        if punish and self.punishment_enabled and score.deserves_punishment():
            score.start_punishment(now, punishment_duration(self.parameters, score.punishments, score.score))
            return True
        return False

    def has_good_reputation(self, key: Hashable, now: int) -> bool:
        """
        Whether C{key} has no record or a record in good standing at C{now}
        (a use of the record: it becomes the most recently used).
        """
        score = self._records.get(key)
        if score is None:
            return True
        self._records.move_to_end(key)
        return score.refresh(now)

    def get(self, key: Hashable) -> PeerScore | None:
        """
        The record of C{key}, if any, as it stands (no expiry applied).
        """
        return self._records.get(key)

    def items(self, now: int) -> Iterator[tuple[Hashable, PeerScore]]:
        """
        Every record, least recently used first, with punishments that ended
        by C{now} expired.
        """
        for key, score in list(self._records.items()):
            score.refresh(now)
            yield key, score

    def remove(self, key: Hashable) -> bool:
        """
        Forget C{key}'s record; whether there was one.
        """
        return self._records.pop(key, None) is not None

    def keys(self) -> list[Hashable]:
        """
        The keys of the records, least recently used first.
        """
        return list(self._records)


@dataclass(frozen=True)
class ScoringRecord:
    """
    A snapshot of one record, as C{sco_peerList} shows it.

    @ivar kind: C{"node"} or C{"address"}.
    @ivar id: the first 8 hex digits of the node id, or the IP address text.
    @ivar counters: the event counts since the last reset, by event name.
    @ivar score: the score.
    @ivar punishments: how many times the record was punished.
    @ivar good_reputation: whether it is in good standing.
    @ivar punished_until: end of the current punishment (unix ms), or 0.
    """

    kind: str
    id: str
    counters: dict[str, int]
    score: int
    punishments: int
    good_reputation: bool
    punished_until: int

    @classmethod
    def of(cls, kind: str, id: str, score: PeerScore) -> "ScoringRecord":
        """
        The snapshot of C{score}.
        """
        return cls(
            kind, id, {event: score.count(event) for event in EVENTS}, score.score,
            score.punishments, score.good_reputation, score.punished_until,
        )


__all__ = [
    "PeerEvent",
    "EVENTS",
    "PeerScore",
    "PunishmentParameters",
    "ScoringRecord",
    "ScoringTable",
    "next_score",
    "punishment_duration",
]
