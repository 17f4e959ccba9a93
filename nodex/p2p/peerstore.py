"""
The peer store (C{docs/p2p.md}, "Peer store"): the peers this node
reached, with when it last reached each and how often dialing it failed
since, kept in C{<datadir>/peers.json} so that a restarted node finds them
again, even when its configured peers are down.

Only peers whose handshake succeeded enter it (a node id proven at an
address), never the bare addresses of peer exchange, and at most
L{MAX_PER_GROUP} share an address group (a /16 of IPv4, a /32 of IPv6): a
hostile peer's PEERS message, or one operator's many node keys, cannot
fill it.  It holds at most L{MAX_ENTRIES}; when full, a new peer takes
the place of the worst entry (most failures, then the longest unseen) only
if dialing that one failed since it was last reached, and an entry that failed
L{MAX_FAILURES} dials in a row, or was not reached for L{EXPIRY_SECONDS},
is dropped.
"""

import ipaddress
import json
import os
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

PEER_STORE_FILE = "peers.json"
"""The store's file name under the data directory."""

MAX_ENTRIES = 256
"""The most peers kept."""

MAX_PER_GROUP = 8
"""The most peers kept of one address group (IPv4 /16, IPv6 /32, or one host name)."""

MAX_FAILURES = 8
"""Failed dials in a row after which an entry is dropped."""

EXPIRY_SECONDS = 30 * 24 * 3600.0
"""An entry not reached for this long is dropped."""

MAX_FILE_BYTES = 1024 * 1024
"""A larger file is not read (it was not written by this store)."""


@dataclass
class StoredPeer:
    """
    One peer of the store.

    @ivar host: the address or name this node dials it at.
    @ivar port: its listening port.
    @ivar node_id: its node id (hex), as its last handshake proved it.
    @ivar last_seen: when its last handshake succeeded (the clock's seconds).
    @ivar failures: failed dials since then.
    @ivar last_failure: when the last dial failed (0: none).
    """

    host: str
    port: int
    node_id: str
    last_seen: float
    failures: int = 0
    last_failure: float = 0.0


@lru_cache(maxsize=4096)
def address_group(host: str) -> str:
    """
    The group of an address: the first 16 bits of IPv4, the first 32 of
    IPv6, else the host name itself.  (Kept for the last 4,096 hosts: a
    new stored peer compares its group with every entry's, up to 256, and
    parsing an address takes microseconds.)
    """
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host.lower()
    prefix = 16 if address.version == 4 else 32
    return str(ipaddress.ip_network(f"{host}/{prefix}", strict=False))


class PeerStore:
    """
    The peers this node reached, persisted as JSON.
    """

    log = Logger()

    def __init__(self, path: Path, clock: IReactorTime) -> None:
        self._path = path
        self._clock = clock
        self._entries: dict[tuple[str, int], StoredPeer] = {}
        self.dirty = False

    def __len__(self) -> int:
        return len(self._entries)

    def entries(self) -> list[StoredPeer]:
        """
        Every stored peer, the most recently reached first.
        """
        return sorted(self._entries.values(), key=lambda entry: (-entry.last_seen, entry.failures))

    def load(self) -> None:
        """
        Read the file (a missing or unreadable one is an empty store, said in the log).
        """
        try:
            if self._path.stat().st_size > MAX_FILE_BYTES:
                raise ValueError(f"larger than {MAX_FILE_BYTES} bytes")
            records = json.loads(self._path.read_text())
            entries = [
                StoredPeer(str(r["host"]), int(r["port"]), str(r["node_id"]), float(r["last_seen"]),
                           int(r.get("failures", 0)), float(r.get("last_failure", 0.0)))
                for r in records
            ]
        except FileNotFoundError:
            return
        except (OSError, ValueError, TypeError, KeyError) as exc:
            self.log.warn("ignoring the peer store {path}: {error}", path=str(self._path), error=str(exc))
            return
        for entry in entries[:MAX_ENTRIES]:
            if 0 < entry.port < 65536 and entry.host:
                self._entries[(entry.host, entry.port)] = entry
        self._expire()

    def save(self) -> None:
        """
        Write the file (atomically: a new file renamed over the old one).
        """
        self.dirty = False
        temporary = self._path.with_name(self._path.name + ".tmp")
        try:
            temporary.write_text(json.dumps([asdict(entry) for entry in self.entries()], indent=1))
            os.replace(temporary, self._path)
        except OSError as exc:
            self.log.warn("cannot write the peer store {path}: {error}", path=str(self._path), error=str(exc))

    def succeeded(self, host: str, port: int, node_id: bytes) -> None:
        """
        A handshake with the peer at C{host:port} succeeded.
        """
        if not host or not 0 < port < 65536:
            return
        key = (host, port)
        now = self._clock.seconds()
        entry = self._entries.get(key)
        if entry is None:
            if not self._make_room(host):
                return
            entry = self._entries[key] = StoredPeer(host, port, node_id.hex(), now)
        entry.node_id, entry.last_seen, entry.failures = node_id.hex(), now, 0
        self.dirty = True

    def failed(self, host: str, port: int) -> None:
        """
        A dial of C{host:port} failed (or ended before its handshake).
        """
        entry = self._entries.get((host, port))
        if entry is None:
            return
        entry.failures += 1
        entry.last_failure = self._clock.seconds()
        if entry.failures >= MAX_FAILURES:
            del self._entries[(host, port)]
        self.dirty = True

    def remove(self, host: str, port: int) -> bool:
        """
        Forget a peer (C{admin_removePeer}); whether it was stored.
        """
        removed = self._entries.pop((host, port), None) is not None
        self.dirty = self.dirty or removed
        return removed

    def candidates(self) -> list[StoredPeer]:
        """
        The peers to dial when peers are lacking: the most recently reached
        first, those with fewer failures before others of the same time.
        """
        self._expire()
        return sorted(self._entries.values(), key=lambda entry: (entry.failures, -entry.last_seen))

    def _make_room(self, host: str) -> bool:
        """
        Make room for a new peer of C{host}'s group: when the group is
        full, its worst entry leaves; when the whole store is, its worst
        entry leaves only if a dial of it failed since it was last reached
        (peers that answer are not pushed out by newcomers).

        @return: whether there is room.
        """
        group = address_group(host)
        same = [entry for entry in self._entries.values() if address_group(entry.host) == group]
        if len(same) >= MAX_PER_GROUP:
            pool = same
        elif len(self._entries) >= MAX_ENTRIES:
            pool = [entry for entry in self._entries.values() if entry.failures]
            if not pool:
                return False
        else:
            return True
        worst = max(pool, key=lambda entry: (entry.failures, -entry.last_seen))
        del self._entries[(worst.host, worst.port)]
        return True

    def _expire(self) -> None:
        now = self._clock.seconds()
        for key, entry in list(self._entries.items()):
            if entry.failures >= MAX_FAILURES or now - entry.last_seen > EXPIRY_SECONDS:
                del self._entries[key]
                self.dirty = True


__all__ = [
    "EXPIRY_SECONDS",
    "MAX_ENTRIES",
    "MAX_FAILURES",
    "MAX_PER_GROUP",
    "PEER_STORE_FILE",
    "PeerStore",
    "StoredPeer",
    "address_group",
]
