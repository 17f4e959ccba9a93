"""
Log searches and installed filters, as the edges see them.
"""

from collections.abc import Hashable

from twisted.internet.defer import Deferred
from zope.interface import Interface

from nodex.chain.logs.search import LogEntry, LogFilter
from nodex.primitives import Hash32

__all__ = [
    "IFilterService",
    "LogEntry",
    "LogFilter",
]


class IFilterService(Interface):
    """
    C{eth_getLogs} and the polled filters.  Block bounds are block numbers,
    or L{None} for the head at the time of the query (a live filter follows
    the head).
    """

    def get_logs(from_block: "int | None", to_block: "int | None", log_filter: LogFilter) -> "Deferred[list[LogEntry]]":
        """
        The logs of the canonical blocks in the range that the filter selects.

        @return: a Deferred firing with the entries in chain order (none when
            C{from_block} is above the head and C{to_block} open), or failing
            with L{LogLimitError} (-32012) for a range or a result beyond the
            network's limits, L{LogQueryError} for a numeric C{from_block}
            above a numeric C{to_block}, or L{CallTimeoutError} (-32011) past
            the time limit.
        """

    def get_block_logs(block_hash: bytes, log_filter: LogFilter) -> "Deferred[list[LogEntry]]":
        """
        The selected logs of one stored block (EIP-234).

        @return: a Deferred failing with L{BlockNotFoundError} for an unknown hash.
        """

    def new_log_filter(
        from_block: "int | None", to_block: "int | None", log_filter: LogFilter, owner: "Hashable | None" = None
    ) -> int:
        """
        Install a log filter; return its random 128-bit id.

        @param owner: the client that asks, whose quota it counts against
            (L{None}: none).
        @raise LogLimitError: too many filters are installed, in all or by
            the client.
        """

    def new_block_filter(owner: "Hashable | None" = None) -> int:
        """
        Install a filter of new canonical block hashes; return its id.

        @raise LogLimitError: as L{new_log_filter}.
        """

    def new_pending_transaction_filter(owner: "Hashable | None" = None) -> int:
        """
        Install a filter of newly pending transaction hashes; return its id.

        @raise LogLimitError: as L{new_log_filter}.
        """

    def get_filter_changes(filter_id: int) -> "list[LogEntry] | list[Hash32]":
        """
        Everything the filter gathered since the previous poll; restarts its expiry.

        @raise FilterNotFoundError: unknown, uninstalled or expired id, or
            (a subclass, once) removed because too many changes waited in it.
        """

    def get_filter_logs(filter_id: int) -> "Deferred[list[LogEntry]]":
        """
        Every log a log filter selects in its range now; does not restart its expiry.

        @return: a Deferred failing with L{FilterNotFoundError}.
        """

    def uninstall_filter(filter_id: int) -> bool:
        """
        Remove a filter; whether it existed.
        """
