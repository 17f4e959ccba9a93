"""
The node's file descriptors (L7): how many it may open, and how they are
shared between the RPC connections, the peers and the database.

Every connection and every open database file takes a descriptor, and the
process has a limit (C{ulimit -n}: 1,024 on many systems, 256 in some
containers).  Without a plan, the RPC connections took them all: with a
limit of 256, 260 idle HTTP connections made RocksDB fail to open its
files and every answer fail.  So the node raises its limit to the hard one
where the system allows (as Go programs, geth among them, do), gives
RocksDB a bounded number of open files (its default keeps every table
file open), keeps a reserve, and caps the HTTP and WebSocket connections
so that all of it fits; when the configured caps do not fit, they are
lowered and a warning says so.
"""

import resource
from dataclasses import dataclass

RESERVE = 64
"""Descriptors kept for everything else: standard streams, the log, the reactor, keyfiles, the metrics and manhole ports."""

MAX_RAISED_LIMIT = 65536
"""The soft limit is raised to the hard limit, but not beyond this."""

DATABASE_FILES = (64, 1024)
"""The least and most table files RocksDB keeps open (a quarter of the limit in between)."""

MIN_CONNECTIONS = 8
"""The fewest connections a server is given, however low the limit."""


@dataclass(frozen=True)
class DescriptorPlan:
    """
    How the node shares its descriptors.

    @ivar limit: the process's limit (after raising it).
    @ivar database_files: RocksDB's C{max_open_files}.
    @ivar http_connections: the most HTTP connections.
    @ivar ws_connections: the most WebSocket connections.
    @ivar lowered: whether the configured connection caps were lowered to fit.
    """

    limit: int
    database_files: int
    http_connections: int
    ws_connections: int
    lowered: bool


def raise_limit() -> int:
    """
    Raise the soft limit on open descriptors to the hard one (at most
    L{MAX_RAISED_LIMIT}), where the system allows.

    @return: the soft limit now.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = MAX_RAISED_LIMIT if hard == resource.RLIM_INFINITY else min(hard, MAX_RAISED_LIMIT)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        except (ValueError, OSError):
            pass
    return MAX_RAISED_LIMIT if soft == resource.RLIM_INFINITY else soft


def plan(limit: int, http_connections: int, ws_connections: int, peers: int) -> DescriptorPlan:
    """
    Share C{limit} descriptors.

    @param http_connections: the configured HTTP cap (0: no HTTP server).
    @param ws_connections: the configured WebSocket cap (0: no WebSocket server).
    @param peers: the peer connections the P2P service may hold.
    """
    low, high = DATABASE_FILES
    database = max(low, min(high, limit // 4))
    room = max(limit - RESERVE - database - peers, 0)
    wanted = http_connections + ws_connections
    if wanted <= room:
        return DescriptorPlan(limit, database, http_connections, ws_connections, False)

    def share(configured: int) -> int:
        return 0 if not configured else max(MIN_CONNECTIONS, min(configured, room * configured // wanted))

    return DescriptorPlan(limit, database, share(http_connections), share(ws_connections), True)


__all__ = ["DATABASE_FILES", "MIN_CONNECTIONS", "RESERVE", "DescriptorPlan", "plan", "raise_limit"]
