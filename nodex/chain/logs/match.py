"""
Matching a block's logs against many installed log filters at once.

The polled filters of C{eth_newFilter} and the C{logs} subscriptions of
C{eth_subscribe} each select logs by address and topics.  Matching every
log of a block against every filter one by one costs logs times filters:
with 1,000 match-all filters and a block of 923 logs the node built each
filter's entries itself and stalled for six seconds.  A L{LogFilterIndex}
instead:

  - keeps each distinct selection once (a L{LogFilter} normalised: the
    order and repetition of alternatives, and trailing empty topic
    positions, do not matter), with the set of its members (filter or
    subscription ids): a thousand identical filters are matched once;
  - indexes each selection by the values it asks for: the address and the
    topic of each position it constrains, as one key per combination of
    its alternatives (at most L{MAX_KEYS_PER_SELECTION}; the positions with
    the most alternatives are left out of the key beyond that, and checked
    on the candidates instead);
  - looks each log up once per shape of key in use (which of the five
    slots a key fills), so a block costs its logs times the shapes, not
    times the filters;
  - builds each selected log's L{LogEntry} once, shared by every selection
    and member that gets it.

L{LogFilterIndex.match_logs} returns, per matched selection, its entries
in block order and its members; what to do with them (append to a polled
filter, push to a subscription) is the caller's.
"""

from collections.abc import Hashable, Iterator, Sequence
from itertools import product

from nodex.chain.logs.search import LogEntry, LogFilter
from nodex.primitives import Hash32
from nodex.structures.receipts import Receipt

MAX_KEYS_PER_SELECTION = 64
"""The most index keys one selection gets (the product of its alternatives, trimmed)."""

SLOTS = 5
"""The slots of a key: the address, then topics 0 to 3."""

_Key = tuple[bytes | None, ...]
_Shape = tuple[bool, ...]


class Selection:
    """
    One distinct selection and the members that asked for it.

    @ivar log_filter: the selection.
    @ivar identity: its normal form (L{normalise}).
    @ivar members: the filter or subscription ids that hold it.
    @ivar exact: whether its index keys say all it asks (else a candidate
        found by a key is checked with L{LogFilter.matches}).
    @ivar shape: which slots its keys fill.
    """

    __slots__ = ("log_filter", "identity", "members", "exact", "shape")

    def __init__(self, log_filter: LogFilter, identity: "_Identity", exact: bool, shape: _Shape) -> None:
        self.log_filter = log_filter
        self.identity = identity
        self.members: set[Hashable] = set()
        self.exact = exact
        self.shape = shape


_Identity = tuple[tuple[bytes, ...], tuple[tuple[bytes, ...] | None, ...]]


def normalise(log_filter: LogFilter) -> _Identity:
    """
    What a filter selects, without order, repetition or trailing open
    positions: its addresses and each position's topics, sorted.
    """
    topics = [tuple(sorted(set(wanted))) if wanted else None for wanted in log_filter.topics]
    while topics and topics[-1] is None:
        topics.pop()
    return tuple(sorted(set(log_filter.addresses))), tuple(topics)


def _index_keys(identity: _Identity) -> tuple[_Shape, list[_Key], bool]:
    """
    The shape, keys and exactness of a selection's index entry.
    """
    addresses, topics = identity
    slots: list[tuple[bytes, ...] | None] = [addresses or None, *topics]
    slots += [None] * (SLOTS - len(slots))
    constrained = sorted((len(values), position) for position, values in enumerate(slots) if values)
    chosen: set[int] = set()
    size = 1
    for count, position in constrained:
        if chosen and size * count > MAX_KEYS_PER_SELECTION:
            break
        chosen.add(position)
        size *= count
    shape = tuple(position in chosen for position in range(SLOTS))
    choices = [slots[position] if position in chosen else (None,) for position in range(SLOTS)]
    return shape, list(product(*choices)), len(chosen) == len(constrained)


class LogFilterIndex:
    """
    Installed selections by the values they ask for (see the module's docstring).
    """

    def __init__(self) -> None:
        self._selections: dict[_Identity, Selection] = {}
        self._member_of: dict[Hashable, Selection] = {}
        # A key's selections: one, or a list of several (most keys have one).
        self._index: dict[_Key, Selection | list[Selection]] = {}
        self._shapes: dict[_Shape, int] = {}

    def __len__(self) -> int:
        """
        How many members are installed.
        """
        return len(self._member_of)

    def selections(self) -> int:
        """
        How many distinct selections the members hold.
        """
        return len(self._selections)

    def add(self, member: Hashable, log_filter: LogFilter) -> None:
        """
        Install C{member}'s selection (replacing one it had).
        """
        self.remove(member)
        identity = normalise(log_filter)
        selection = self._selections.get(identity)
        if selection is None:
            shape, keys, exact = _index_keys(identity)
            # One tuple per shape, shared by its selections.
            shape = next((known for known in self._shapes if known == shape), shape)
            selection = Selection(log_filter, identity, exact, shape)
            self._selections[identity] = selection
            index = self._index
            for key in keys:
                found = index.get(key)
                if found is None:
                    index[key] = selection
                elif isinstance(found, list):
                    found.append(selection)
                else:
                    index[key] = [found, selection]
            self._shapes[shape] = self._shapes.get(shape, 0) + 1
        selection.members.add(member)
        self._member_of[member] = selection

    def remove(self, member: Hashable) -> bool:
        """
        Uninstall C{member}; whether it was installed.
        """
        selection = self._member_of.pop(member, None)
        if selection is None:
            return False
        selection.members.discard(member)
        if not selection.members:
            del self._selections[selection.identity]
            index = self._index
            for key in _index_keys(selection.identity)[1]:
                found = index[key]
                if found is selection:
                    del index[key]
                else:
                    assert isinstance(found, list)
                    found.remove(selection)
                    if len(found) == 1:
                        index[key] = found[0]
            left = self._shapes[selection.shape] - 1
            if left:
                self._shapes[selection.shape] = left
            else:
                del self._shapes[selection.shape]
        return True

    def match_logs(
        self,
        block_hash: Hash32,
        block_number: int,
        transaction_hashes: Sequence[Hash32],
        receipts: Sequence[Receipt],
        removed: bool = False,
    ) -> Iterator[tuple[Selection, list[LogEntry]] | None]:
        """
        Match one block's logs: yields, once the block is matched, each
        selection that selected some of its logs with those logs' entries
        in block order.  Along the way it yields L{None} every few dozen
        logs, so that a caller on the reactor thread can pause between
        (L{nodex.services.slices}).

        @param transaction_hashes: the block's transaction hashes, in order.
        @param receipts: the block's receipts, in the same order.
        @param removed: the block leaves the canonical chain.
        """
        found: dict[Selection, tuple[Selection, list[LogEntry]]] = {}
        if not self._selections:
            return
        # Per shape: the slots it fills, and how many topics a log needs for it.
        shapes = [
            (tuple(position for position in range(SLOTS) if shape[position]),
             max((position for position in range(1, SLOTS) if shape[position]), default=0))
            for shape in self._shapes
        ]
        index = self._index
        blank = (None,) * SLOTS
        log_index = 0
        for position, receipt in enumerate(receipts):
            for log in receipt.logs:
                topics = log.topics
                values = (log.address, *topics[:4])
                entry = None
                for filled, needs in shapes:
                    if needs > len(topics):
                        continue
                    key = list(blank)
                    for slot in filled:
                        key[slot] = values[slot]
                    found_here = index.get(tuple(key))
                    if found_here is None:
                        continue
                    for selection in found_here if isinstance(found_here, list) else (found_here,):
                        if not selection.exact and not selection.log_filter.matches(log):
                            continue
                        if entry is None:
                            entry = LogEntry(
                                log, block_hash, block_number, transaction_hashes[position], position,
                                log_index, removed,
                            )
                        matched = found.get(selection)
                        if matched is None:
                            found[selection] = (selection, [entry])
                        else:
                            matched[1].append(entry)
                log_index += 1
                if not log_index % 32:
                    yield None
        yield from found.values()


__all__ = ["MAX_KEYS_PER_SELECTION", "LogFilterIndex", "Selection", "normalise"]
