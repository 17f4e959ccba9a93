"""
The chain reads of the work service (L{nodex.services.work}): building a
block template on a stored parent, the ancestry its uncles are chosen
against, and the last hour's cumulative difficulty.  Every method here runs
on a reader thread (C{thd_}) and reads only what the store holds.
"""

from collections.abc import Sequence

from nodex.chain.importer import ancestry_hashes
from nodex.chain.building.builder import BuiltBlock, build_block
from nodex.chain.processing import Ancestor, BlockHashes
from nodex.chain.rules import MAX_UNCLE_DEPTH, ChainRules
from nodex.chain.uncles import select_uncles, still_useful
from nodex.db.kv import KeyValueStore
from nodex.db.schema import read_body_rlp, read_header_rlp, read_total_difficulty
from nodex.primitives import Address
from nodex.state.state import State
from nodex.structures.blocks import Block
from nodex.structures.headers import Header
from nodex.structures.transactions import Transaction

HASHRATE_SECONDS = 3600
"""C{eth_netHashrate} counts the blocks of the last hour (reference §3.3)."""

MAX_HASHRATE_BLOCKS = 10_000
"""C{eth_netHashrate} walks back at most this many blocks."""


class ChainReads:
    """
    Template building and the chain reads mining needs, over one store.
    """

    def __init__(self, store: KeyValueStore, rules: ChainRules, coinbase: Address, extra_data: bytes = b"") -> None:
        """
        @param store: the chain's key-value store.
        @param rules: the network's consensus rules.
        @param coinbase: the address templates credit.
        @param extra_data: the extra data of every template.
        """
        self._store = store
        self.rules = rules
        self._coinbase = coinbase
        self._extra_data = extra_data

    def thd_build(
        self,
        parent: Header,
        candidates: Sequence[Transaction],
        timestamp: int,
        side: Sequence[Header],
        coinbase: Address | None = None,
        rules: ChainRules | None = None,
    ) -> BuiltBlock:
        """
        Build an unsealed block on C{parent} from C{candidates}, including
        the qualifying headers of C{side} as uncles.

        @param coinbase: the block's coinbase (the one given at construction by default).
        @param rules: the rules to build by (likewise; a dev chain changes its gas limit).
        """
        ancestry = self.thd_ancestry(parent)
        uncles = select_uncles(side, ancestry)
        state = State.from_store(self._store, parent.state_root)
        built = build_block(
            parent,
            state,
            candidates,
            self._coinbase if coinbase is None else coinbase,
            timestamp,
            self.rules if rules is None else rules,
            self.thd_block_hashes(parent),
            self._extra_data,
            uncles,
        )
        return built

    def thd_uncles(self, parent: Header, side: Sequence[Header]) -> list[Header]:
        """
        The headers of C{side} a child of C{parent} may include as uncles.
        """
        useful = [header for header in side if still_useful(header, parent.number)]
        if not useful:
            return []
        return select_uncles(useful, self.thd_ancestry(parent))

    def thd_header(self, block_hash: bytes) -> Header | None:
        """
        A stored header by hash, or L{None}.
        """
        raw = read_header_rlp(self._store, block_hash)
        return None if raw is None else Header.decode(raw)

    def thd_ancestry(self, parent: Header) -> list[Ancestor]:
        """
        C{parent} and its ancestors, as many as the uncle rules look at.
        """
        ancestry = []
        header: Header | None = parent
        while header is not None and len(ancestry) < MAX_UNCLE_DEPTH:
            body = read_body_rlp(self._store, header.hash)
            uncles = Block.from_body(header, body).uncles if body is not None else ()
            ancestry.append(Ancestor(header, frozenset(uncle.hash for uncle in uncles)))
            header = None if header.number == 0 else self.thd_header(header.parent_hash)
        return ancestry

    def thd_block_hashes(self, parent: Header) -> BlockHashes:
        """
        The BLOCKHASH lookup of a child of C{parent}, walking its own ancestry.
        """
        return ancestry_hashes(parent, self.thd_header)

    def thd_network_hashrate(self, head: Header, total_difficulty: int, since: int) -> int:
        """
        Walk back from C{head} over the blocks after C{since}; their
        cumulative difficulties are the head's total difficulty minus the
        total difficulty before the oldest of them.
        """
        header = head
        if header.timestamp <= since or header.number == 0:
            return 0
        walked = 0
        while header.number > 0 and walked < MAX_HASHRATE_BLOCKS:
            parent = self.thd_header(header.parent_hash)
            if parent is None:
                break
            walked += 1
            header = parent
            if parent.timestamp <= since:
                break
        before = read_total_difficulty(self._store, header.hash)
        if before is None:
            return 0
        return (total_difficulty - before) // HASHRATE_SECONDS


__all__ = ["HASHRATE_SECONDS", "MAX_HASHRATE_BLOCKS", "ChainReads"]
