"""
The C{sco} module: peer reputation and bans, in the shapes of reference
§3.11 (off by default on main and testnet).

Records and summaries are plain JSON numbers and booleans, members in the
reference's order.  A ban names one IPv4 or IPv6 address, a host name or a
CIDR block; loopback, the wildcard address and malformed input answer
-32602 C{invalid banned address <address>} (L{InvalidBanError} in
L{nodex.rpc.errors.ERROR_CODES}).
"""

import ipaddress
import re
from collections.abc import Iterable
from typing import Any

from twisted.internet.defer import Deferred

from nodex.api.peers import IPeerScoring, PeerEvent, ScoringRecord
from nodex.rpc import decoders
from nodex.rpc.decoders import DecodeError
from nodex.rpc.registry import Method, Param

RECORD_COUNTERS = (
    ("successfulHandshakes", PeerEvent.SUCCESSFUL_HANDSHAKE),
    ("failedHandshakes", PeerEvent.FAILED_HANDSHAKE),
    ("invalidNetworks", PeerEvent.INVALID_NETWORK),
    ("repeatedMessages", PeerEvent.REPEATED_MESSAGE),
    ("validBlocks", PeerEvent.VALID_BLOCK),
    ("validTransactions", PeerEvent.VALID_TRANSACTION),
    ("invalidBlocks", PeerEvent.INVALID_BLOCK),
    ("invalidTransactions", PeerEvent.INVALID_TRANSACTION),
    ("invalidMessages", PeerEvent.INVALID_MESSAGE),
    ("timeoutMessages", PeerEvent.TIMEOUT_MESSAGE),
    ("unexpectedMessages", PeerEvent.UNEXPECTED_MESSAGE),
    ("invalidHeader", PeerEvent.INVALID_HEADER),
)
"""The counters of a C{sco_peerList} record, in its member order, and their events."""

SUMMARY_COUNTERS = (
    "successfulHandshakes", "failedHandshakes", "invalidHeader", "validBlocks", "invalidBlocks",
    "validTransactions", "invalidTransactions", "invalidNetworks", "invalidMessages",
    "repeatedMessages", "timeoutMessages", "unexpectedMessages",
)
"""The counters of C{sco_reputationSummary}, in its member order."""

_NODE_PREFIX = re.compile(r"[0-9a-fA-F]{8,128}")


def record_object(record: ScoringRecord) -> dict[str, Any]:
    """
    One record of C{sco_peerList}.
    """
    shaped: dict[str, Any] = {name: record.counters.get(event, 0) for name, event in RECORD_COUNTERS}
    shaped["score"] = record.score
    shaped["punishments"] = record.punishments
    shaped["goodReputation"] = record.good_reputation
    shaped["punishedUntil"] = record.punished_until
    shaped["id"] = record.id
    shaped["type"] = record.kind
    return shaped


def summary_object(records: list[dict[str, Any]]) -> dict[str, int]:
    """
    C{sco_reputationSummary}: the sums over the records of C{sco_peerList}.
    """
    summary = {"count": len(records)}
    for name in SUMMARY_COUNTERS:
        summary[name] = sum(record[name] for record in records)
    summary["peersTotalScore"] = sum(record["score"] for record in records)
    summary["punishments"] = sum(record["punishments"] for record in records)
    good = sum(1 for record in records if record["goodReputation"])
    summary["goodReputationCount"] = good
    summary["badReputationCount"] = len(records) - good
    return summary


def peer_id(value: Any) -> tuple[str, str]:
    """
    The argument of C{sco_clearPeerScoring}: an IP address first, else a
    node id in hex (C{0x} optional) or its first 8 or more hex digits, as
    C{sco_peerList} shows it.

    @return: C{("address", text)} or C{("node", lower-case hex digits)}.
    @raise DecodeError: neither.
    """
    text = decoders.string(value)
    try:
        ipaddress.ip_address(text)
    except ValueError:
        digits = text[2:] if text[:2] in ("0x", "0X") else text
        if not _NODE_PREFIX.fullmatch(digits):
            raise DecodeError("want an IP address, or a node id of 8 to 128 hex digits") from None
        return "node", digits.lower()
    return "address", text


class ScoMethods:
    """
    C{sco_banAddress}, C{sco_unbanAddress}, C{sco_peerList},
    C{sco_bannedAddresses}, C{sco_reputationSummary} and
    C{sco_clearPeerScoring}.
    """

    def __init__(self, scoring: IPeerScoring) -> None:
        """
        @param scoring: the node's reputation service.
        """
        self._scoring = scoring

    def rpc_methods(self) -> Iterable[Method]:
        """
        The methods of the C{sco} module.
        """
        return [
            Method("sco_banAddress", self.ban_address, (Param("address", decoders.string),)),
            Method("sco_unbanAddress", self.unban_address, (Param("address", decoders.string),)),
            Method("sco_peerList", self.peer_list, ()),
            Method("sco_bannedAddresses", self.banned_addresses, ()),
            Method("sco_reputationSummary", self.reputation_summary, ()),
            Method("sco_clearPeerScoring", self.clear_peer_scoring, (Param("id", peer_id),)),
        ]

    def ban_address(self, address: str) -> "Deferred[None]":
        """
        Ban an address, a host name's addresses, or a block; C{null}.
        """
        return self._scoring.ban_address(address)

    def unban_address(self, address: str) -> "Deferred[None]":
        """
        Lift a ban; C{null}, also when there was none.
        """
        return self._scoring.unban_address(address)

    def peer_list(self) -> list[dict[str, Any]]:
        """
        Every scoring record: by node id, then by IP address.
        """
        return [record_object(record) for record in self._scoring.peer_records()]

    def banned_addresses(self) -> list[str]:
        """
        The banned addresses, then the banned blocks.
        """
        return self._scoring.banned_addresses()

    def reputation_summary(self) -> dict[str, int]:
        """
        The sums over the records of C{sco_peerList}.
        """
        return summary_object(self.peer_list())

    def clear_peer_scoring(self, target: tuple[str, str]) -> list[dict[str, Any]]:
        """
        Forget the record of an address, or of the node ids with that hex
        prefix; the new C{sco_peerList}.
        """
        kind, text = target
        if kind == "address":
            self._scoring.clear_address_record(text)
        else:
            self._scoring.clear_node_records(text)
        return self.peer_list()


__all__ = ["RECORD_COUNTERS", "SUMMARY_COUNTERS", "ScoMethods", "peer_id", "record_object", "summary_object"]
