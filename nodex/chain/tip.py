"""
The writer's view of a chain (L4): its tip, the tip's decoded state kept
for the next block, the log index's bitmaps, and the reads of stored blocks
the importer needs (L{nodex.chain.importer.BlockImporter} is built on it).
Plain synchronous Python over a key-value store, touched by one thread.
"""

from collections.abc import Callable

from nodex.chain.errors import ChainError
from nodex.chain.logs.index import INDEX_LAG, LogIndexer, indexed_through
from nodex.chain.outcomes import ChainHead
from nodex.chain.processing import Ancestor, BlockHashes
from nodex.chain.rules import MAX_UNCLE_DEPTH, ChainRules
from nodex.db.kv import KeyValueStore
from nodex.db.schema import (
    read_body_rlp,
    read_canonical_hash,
    read_head_hash,
    read_header_rlp,
    read_receipts_rlp,
    read_total_difficulty,
)
from nodex.primitives import Hash32
from nodex.state.state import RootReads, State
from nodex.structures.blocks import Block
from nodex.structures.headers import Header
from nodex.structures.receipts import Receipt, decode_receipts
from nodex.trie.nodecache import NodeCache

TIP_STATE_BLOCKS = 256
"""The tip's L{State} is kept across this many blocks before starting afresh (bounded memory)."""

WRITER_NODE_CACHE_SIZE = 8_192
"""Decoded trie nodes the writer keeps for the states it opens afresh (a few MiB)."""

HeaderReader = Callable[[bytes], Header | None]
BlockReader = Callable[[bytes], Block | None]
ReceiptsReader = Callable[[bytes], tuple[Receipt, ...] | None]


class ChainNotInitializedError(ChainError):
    """
    The store holds no chain (L{nodex.chain.genesis.initialize_chain} was not run on it).
    """


class ChainTip:
    """
    The tip of one chain and what the writer reads around it.

    @ivar tip: the head as the writer knows it (ahead of what readers see
        until the lane publishes it).
    """

    def __init__(
        self,
        store: KeyValueStore,
        rules: ChainRules,
        read_header: HeaderReader | None = None,
        read_block: BlockReader | None = None,
        read_receipts: ReceiptsReader | None = None,
    ) -> None:
        """
        @param store: a store whose chain has been initialised.
        @param rules: the network's consensus rules.
        @param read_header: reads a stored header by hash (the store by
            default; the chain service passes one that also looks in its
            cache of recent blocks).
        @param read_block: likewise for whole blocks.
        @param read_receipts: likewise for a block's receipts.
        @raise ChainNotInitializedError: the store holds no chain.
        """
        self.store = store
        self.rules = rules
        self._read_header = read_header or self._stored_header
        self._read_block = read_block or self._stored_block
        self._read_receipts = read_receipts or self._stored_receipts
        self.tip = read_head(store, self._read_header)
        self._tip_state: State | None = None
        self._tip_state_age = 0
        # What the last state opened afresh read at its root (_state_for).
        self._root_reads: RootReads | None = None
        # The decoded nodes of the states this writer opened, by hash (so
        # never stale, whatever the chain does): a state opened afresh,
        # after a rewind (evm_revert, a test suite's loadFixture before
        # every test) or a reorganisation, finds the nodes it had read
        # before, and copies them rather than reading and decoding them.
        self._node_cache = NodeCache(WRITER_NODE_CACHE_SIZE)
        self._log_indexer = LogIndexer(store)
        self._logs_indexed = indexed_through(store)

    def _keep_tip_state(self, state: State | None) -> None:
        """
        Keep the state of the new tip for the next block built on it, for a while.
        """
        if state is None or self._tip_state_age >= TIP_STATE_BLOCKS:
            self._tip_state = None
            self._tip_state_age = 0
            return
        self._tip_state = state
        self._tip_state_age += 1

    def index_logs(self, force: bool = False) -> int:
        """
        Extend the log index's bitmaps to the tip once they trail it by
        L{INDEX_LAG} blocks (at once with C{force}: after a reorganisation
        or a rewind, whose sections need rebuilding).  A store failure
        leaves the bitmaps behind (searches then read the blooms).

        @return: how many blocks are still to index.
        @raise StoreError: the store failed (the caller logs it).
        """
        tip = self.tip.header.number
        if not force and tip - self._logs_indexed < INDEX_LAG:
            return 0
        remaining = self._log_indexer.catch_up(tip)
        self._logs_indexed = tip - remaining
        return remaining

    @property
    def logs_indexed(self) -> int:
        """
        The highest block whose logs the bitmaps hold.
        """
        return self._logs_indexed

    def _state_for(self, parent: Header) -> State:
        """
        A state at C{parent}'s state root: the kept tip state when it is the
        tip's; else a new one, which starts with the reads of the last new
        one when that was of the same root (a test suite's C{evm_revert}
        rewinds to its fixture's block before every test, and each test's
        first block reads the same accounts and slots there).
        """
        if self._tip_state is not None and parent.hash == self.tip.header.hash:
            return self._tip_state
        reads = self._root_reads
        if reads is None or reads.root != parent.state_root:
            reads = self._root_reads = RootReads(parent.state_root)
        return State.from_store(self.store, parent.state_root, self._node_cache, reads)

    def ancestry(self, parent: Header) -> list[Ancestor]:
        """
        C{parent} and its ancestors, as many as an uncle check needs.
        """
        ancestry = []
        header: Header | None = parent
        while header is not None and len(ancestry) < MAX_UNCLE_DEPTH:
            block = self.stored_block(header.hash)
            ancestry.append(Ancestor(header, frozenset(uncle.hash for uncle in block.uncles)))
            header = None if header.number == 0 else self._read_header(header.parent_hash)
        return ancestry

    def block_hashes(self, parent: Header) -> BlockHashes:
        """
        The BLOCKHASH lookup of a child of C{parent}: the canonical index when
        C{parent} is the tip, else a walk up C{parent}'s own ancestry.
        """
        store = self.store
        if parent.hash == self.tip.header.hash:
            top = parent.number

            # A string: evaluated, C{Hash32 | None} would make a typing
            # union at every call (once per block built on the tip).
            def canonical(number: int) -> "Hash32 | None":
                if not 0 <= number <= top:
                    return None
                found = read_canonical_hash(store, number)
                return None if found is None else Hash32(found)

            return canonical
        return ancestry_hashes(parent, self._read_header)

    def stored_block(self, block_hash: bytes) -> Block:
        """
        A block that must be stored.

        @raise ChainError: it is not.
        """
        block = self._read_block(block_hash)
        if block is None:
            raise ChainError(f"the store has no block 0x{block_hash.hex()}")
        return block

    def stored_receipts(self, block_hash: bytes) -> tuple[Receipt, ...]:
        """
        The receipts of a block that must be stored.

        @raise ChainError: they are not.
        """
        receipts = self._read_receipts(block_hash)
        if receipts is None:
            raise ChainError(f"the store has no receipts for block 0x{block_hash.hex()}")
        return receipts

    def _stored_header(self, block_hash: bytes) -> Header | None:
        raw = read_header_rlp(self.store, block_hash)
        return None if raw is None else Header.decode(raw)

    def _stored_block(self, block_hash: bytes) -> Block | None:
        header = self._stored_header(block_hash)
        body = None if header is None else read_body_rlp(self.store, block_hash)
        return None if header is None or body is None else Block.from_body(header, body)

    def _stored_receipts(self, block_hash: bytes) -> tuple[Receipt, ...] | None:
        raw = read_receipts_rlp(self.store, block_hash)
        return None if raw is None else decode_receipts(raw)



def ancestry_hashes(parent: Header, read_header: HeaderReader) -> BlockHashes:
    """
    The BLOCKHASH lookup of a child of C{parent} that walks C{parent}'s own
    ancestry (right for a block off the canonical chain), reading each
    header once, lazily.
    """
    walked: dict[int, Hash32] = {parent.number: parent.hash}
    cursor = [parent]

    def walk(number: int) -> Hash32 | None:
        if not 0 <= number <= parent.number:
            return None
        while number not in walked:
            header = read_header(cursor[0].parent_hash)
            if header is None:
                return None
            walked[header.number] = header.hash
            cursor[0] = header
        return walked[number]

    return walk


def read_head(store: KeyValueStore, read_header: HeaderReader) -> ChainHead:
    """
    The head the store records.

    @raise ChainNotInitializedError: there is none.
    """
    head_hash = read_head_hash(store)
    header = None if head_hash is None else read_header(head_hash)
    if header is None:
        raise ChainNotInitializedError("the store holds no chain: write its genesis first")
    total_difficulty = read_total_difficulty(store, header.hash)
    if total_difficulty is None:
        raise ChainNotInitializedError(f"the store has no total difficulty for its head 0x{header.hash.hex()}")
    return ChainHead(header, total_difficulty)


__all__ = [
    "TIP_STATE_BLOCKS",
    "BlockReader",
    "ChainNotInitializedError",
    "ChainTip",
    "HeaderReader",
    "ReceiptsReader",
    "ancestry_hashes",
    "read_head",
]
