"""
The reads of a chain (L5): blocks, headers, transactions and receipts from
the store on the reader pool, or at once from the cache of the blocks
written last (C{docs/chain-service.md}).

L{ChainReader} is the read half of L{nodex.services.chain.ChainService}:
the writer lane keeps the cache (L{ChainReader._remember}) as it writes,
and every thread reads it under one lock.
"""

from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from threading import Lock
from typing import Any, TypeVar

from twisted.internet.defer import Deferred, succeed

from nodex.chain.processing import effective_gas_price
from nodex.db.errors import StoreError
from nodex.db.kv import KeyValueStore
from nodex.db.schema import (
    read_body_rlp,
    read_canonical_hash,
    read_header_rlp,
    read_receipts_rlp,
    read_total_difficulty,
    read_tx_lookup,
)
from nodex.evm.instructions.system import compute_contract_address
from nodex.api.chain import ChainHead, ReceiptView, TransactionLocation
from nodex.primitives import Address, Hash32
from nodex.state.state import State
from nodex.structures.accounts import Account
from nodex.structures.blocks import Block
from nodex.structures.headers import Header
from nodex.structures.receipts import Receipt, decode_receipts

T = TypeVar("T")

RECENT_BLOCKS = 64
"""How many recently written blocks (with their receipts) the service keeps decoded for reads."""

RECENT_ANCESTORS = 8
"""How far below the head L{ChainReader.get_block_by_number} walks the recent blocks' parents."""


class ChainReader:
    """
    Reads of the chain in one store, with a cache of the blocks written last.

    @ivar store: the key-value store the chain lives in.
    """

    store: KeyValueStore
    head: ChainHead
    """The best block as the reactor thread knows it: kept by the writer lane."""

    def __init__(self, store: KeyValueStore, run_reader: Callable[..., Deferred[Any]]) -> None:
        """
        @param store: the chain's store (it may still be closed now).
        @param run_reader: runs a read in the reader pool.
        """
        self.store = store
        self._run_reader = run_reader
        self._recent: OrderedDict[bytes, tuple[Block, tuple[Receipt, ...]]] = OrderedDict()
        self._recent_lookup: dict[bytes, tuple[bytes, int]] = {}
        self._recent_lock = Lock()

    # The cache of recent blocks (written by the writer lane)

    def _remember(
        self,
        block: Block,
        receipts: tuple[Receipt, ...],
        adopted: tuple[Block, ...] = (),
        abandoned: tuple[Block, ...] = (),
    ) -> None:
        """
        Keep a just-written block and its receipts decoded for reads, and
        the canonical transactions of the kept blocks by hash, so that a
        recent transaction or receipt is answered without a thread.

        @param adopted: the blocks that became canonical with this write.
        @param abandoned: the blocks that left the canonical chain.
        """
        with self._recent_lock:
            self._recent[block.hash] = (block, receipts)
            for old in abandoned:
                self._forget_lookups(old)
            for new in adopted:
                if new.hash in self._recent:
                    for index, transaction in enumerate(new.transactions):
                        self._recent_lookup[transaction.hash] = (new.hash, index)
            while len(self._recent) > RECENT_BLOCKS:
                _, (evicted, _receipts) = self._recent.popitem(last=False)
                self._forget_lookups(evicted)

    def _forget_lookups(self, block: Block) -> None:
        """
        Drop the kept lookups of C{block}'s transactions (with the lock held).
        """
        block_hash = block.hash
        for transaction in block.transactions:
            found = self._recent_lookup.get(transaction.hash)
            if found is not None and found[0] == block_hash:
                del self._recent_lookup[transaction.hash]

    def _recent_location(self, tx_hash: bytes) -> tuple[Block, tuple[Receipt, ...], int] | None:
        """
        A canonical transaction of a kept block: the block, its receipts and
        the index, or L{None} when it is not kept.
        """
        with self._recent_lock:
            found = self._recent_lookup.get(tx_hash)
            recent = None if found is None else self._recent.get(found[0])
        if recent is None or found is None:
            return None
        return recent[0], recent[1], found[1]

    # Reads (any thread)

    def _thd_header(self, block_hash: bytes) -> Header | None:
        """
        A stored header by hash, or L{None}.
        """
        with self._recent_lock:
            recent = self._recent.get(block_hash)
        if recent is not None:
            return recent[0].header
        raw = read_header_rlp(self.store, block_hash)
        return None if raw is None else Header.decode(raw)

    def _thd_block(self, block_hash: bytes) -> Block | None:
        """
        A stored block by hash, or L{None}.
        """
        with self._recent_lock:
            recent = self._recent.get(block_hash)
        if recent is not None:
            return recent[0]
        header = self._thd_header(block_hash)
        if header is None:
            return None
        body = read_body_rlp(self.store, block_hash)
        if body is None:
            return None
        return Block.from_body(header, body)

    def _thd_receipts(self, block_hash: bytes) -> tuple[Receipt, ...] | None:
        """
        A stored block's receipts, or L{None}.
        """
        with self._recent_lock:
            recent = self._recent.get(block_hash)
        if recent is not None:
            return recent[1]
        raw = read_receipts_rlp(self.store, block_hash)
        return None if raw is None else decode_receipts(raw)

    def _thd_canonical_block(self, number: int) -> Block | None:
        """
        The canonical block at C{number}, or L{None}.
        """
        if number < 0:
            return None
        try:
            block_hash = read_canonical_hash(self.store, number)
        except StoreError:
            return None
        return None if block_hash is None else self._thd_block(block_hash)

    def _thd_is_canonical(self, block_hash: bytes) -> bool:
        """
        Whether a stored block is the canonical one at its height.
        """
        header = self._thd_header(block_hash)
        return header is not None and read_canonical_hash(self.store, header.number) == block_hash

    def _thd_transaction(self, tx_hash: bytes) -> TransactionLocation | None:
        """
        A canonical transaction and its place, or L{None}.
        """
        found = read_tx_lookup(self.store, tx_hash)
        if found is None:
            return None
        block_hash, index = found
        block = self._thd_block(block_hash)
        if block is None or index >= len(block.transactions):
            return None
        return TransactionLocation(block.transactions[index], Hash32(block_hash), block.number, index)

    def _thd_receipt(self, tx_hash: bytes) -> ReceiptView | None:
        """
        The receipt view of a canonical transaction, or L{None}.
        """
        found = read_tx_lookup(self.store, tx_hash)
        if found is None:
            return None
        views = self._thd_block_receipts(found[0], only=found[1])
        return views[0] if views else None

    def _thd_block_receipts(self, block_hash: bytes, only: int | None = None) -> list[ReceiptView] | None:
        """
        The receipt views of a stored block (only the one at index C{only}, if given), or L{None}.
        """
        block = self._thd_block(block_hash)
        receipts = self._thd_receipts(block_hash)
        if block is None or receipts is None:
            return None
        return receipt_views(block, receipts, only)

    # Public reads

    def _recent_block(self, block_hash: bytes) -> tuple[Block, tuple[Receipt, ...]] | None:
        """
        A recently written block and its receipts, if they are kept.
        """
        with self._recent_lock:
            return self._recent.get(block_hash)

    def get_block_by_hash(self, block_hash: bytes) -> Deferred[Block | None]:
        """
        Any stored block (canonical or not) by hash, or L{None}; a recent
        one at once, others in a reader thread.
        """
        recent = self._recent_block(block_hash)
        if recent is not None:
            return succeed(recent[0])
        return self._run_reader(self._thd_block, block_hash)

    def get_block_by_number(self, number: int) -> Deferred[Block | None]:
        """
        The canonical block at C{number}, or L{None} above the head; the
        head block and its recent ancestors (up to L{RECENT_ANCESTORS}
        below it, while their parents are among the recent blocks) at
        once, others in a reader thread.  Tests check balances at the
        block before a transaction's (hardhat-chai-matchers'
        C{changeTokenBalance}): a crossing to a reader thread and a store
        read each.
        """
        head = self.head.header
        behind = head.number - number
        if 0 <= behind <= RECENT_ANCESTORS:
            block_hash = head.hash
            with self._recent_lock:
                recent = self._recent
                for _ in range(behind + 1):
                    found = recent.get(block_hash)
                    if found is None:
                        break
                    block_hash = found[0].header.parent_hash
                else:
                    return succeed(found[0])  # type: ignore[index]
        return self._run_reader(self._thd_canonical_block, number)

    def get_header_by_hash(self, block_hash: bytes) -> Deferred[Header | None]:
        """
        Any stored header by hash, or L{None}; a recent one at once.
        """
        recent = self._recent_block(block_hash)
        if recent is not None:
            return succeed(recent[0].header)
        return self._run_reader(self._thd_header, block_hash)

    def get_total_difficulty(self, block_hash: bytes) -> Deferred[int | None]:
        """
        The total difficulty up to a stored block, or L{None}; the head's at
        once (the block object a client asks for right after its block was
        mined), others in a reader thread.
        """
        head = self.head
        if block_hash == head.header.hash:
            return succeed(head.total_difficulty)
        return self._run_reader(read_total_difficulty, self.store, block_hash)

    def is_canonical(self, block_hash: bytes) -> Deferred[bool]:
        """
        Whether a block is on the canonical chain.
        """
        return self._run_reader(self._thd_is_canonical, block_hash)

    def get_transaction(self, tx_hash: bytes) -> Deferred[TransactionLocation | None]:
        """
        A transaction of the canonical chain by hash, or L{None}; one of the
        recently written blocks is answered at once, others in a reader thread.
        """
        recent = self._recent_location(tx_hash)
        if recent is not None:
            block, _receipts, index = recent
            return succeed(TransactionLocation(block.transactions[index], Hash32(block.hash), block.number, index))
        return self._run_reader(self._thd_transaction, tx_hash)

    def get_receipt(self, tx_hash: bytes) -> Deferred[ReceiptView | None]:
        """
        The receipt of a canonical transaction, or L{None}; one of the
        recently written blocks is answered at once, others in a reader thread.
        """
        recent = self._recent_location(tx_hash)
        if recent is not None:
            block, receipts, index = recent
            return succeed(receipt_views(block, receipts, index)[0])
        return self._run_reader(self._thd_receipt, tx_hash)

    def get_block_receipts(self, block_hash: bytes) -> Deferred[list[ReceiptView] | None]:
        """
        The receipts of a stored block in transaction order, or L{None}; a
        recent block's at once.
        """
        recent = self._recent_block(block_hash)
        if recent is not None:
            return succeed(receipt_views(recent[0], recent[1]))
        return self._run_reader(self._thd_block_receipts, block_hash)

    def get_block_fees(self, block_hash: bytes) -> Deferred[list[tuple[int, int]] | None]:
        """
        The effective gas price and the gas used of each transaction of a
        stored block, or L{None}; a recent block's at once.
        """
        recent = self._recent_block(block_hash)
        if recent is not None:
            return succeed(block_fees(recent[0], recent[1]))
        return self._run_reader(self._thd_block_fees, block_hash)

    def _thd_block_fees(self, block_hash: bytes) -> list[tuple[int, int]] | None:
        """
        L{get_block_fees} in a reader thread.
        """
        block = self._thd_block(block_hash)
        receipts = self._thd_receipts(block_hash)
        if block is None or receipts is None:
            return None
        return block_fees(block, receipts)

    def run_with_state(self, function: Callable[[State], T], state_root: bytes | None = None) -> Deferred[T]:
        """
        Run C{function} on a reader thread with a fresh L{State} at
        C{state_root} (the head's by default); its changes are thrown away.
        """
        root = self.head.header.state_root if state_root is None else state_root
        return self._run_reader(lambda: function(State.from_store(self.store, root)))

    def get_account(self, address: bytes, state_root: bytes | None = None) -> Deferred[Account | None]:
        """
        An account at C{state_root} (the head's by default), or L{None}.
        """
        return self.run_with_state(lambda state: state.get_account(Address(address)), state_root)

    def get_blocks_by_hash(self, block_hashes: Iterable[bytes]) -> Deferred[list[Block | None]]:
        """
        Several stored blocks at once (in the order asked), L{None} for the unknown.
        """
        hashes = list(block_hashes)
        return self._run_reader(lambda: [self._thd_block(block_hash) for block_hash in hashes])

    def get_headers_by_number(self, numbers: Sequence[int]) -> Deferred[list[Header | None]]:
        """
        Several canonical headers in one reader job (in the order asked),
        L{None} above the head; for peers' header requests
        (L{nodex.api.chain.IBlockSource}).
        """
        wanted = list(numbers)

        def read() -> list[Header | None]:
            hashes = [read_canonical_hash(self.store, number) for number in wanted]
            return [None if block_hash is None else self._thd_header(block_hash) for block_hash in hashes]

        return self._run_reader(read)


def receipt_views(block: Block, receipts: Sequence[Receipt], only: int | None = None) -> list[ReceiptView]:
    """
    The receipt views of a block's transactions (only the one at index
    C{only}, if given): each receipt with its transaction's place, own gas,
    first log index, created contract and effective gas price.
    """
    views = []
    previous_gas = 0
    log_index = 0
    for index, (transaction, receipt) in enumerate(zip(block.transactions, receipts)):
        if only is None or index == only:
            contract: Address | None = None
            if transaction.to == b"" and receipt.status == 1:
                contract = compute_contract_address(transaction.sender, transaction.nonce)
            views.append(
                ReceiptView(
                    receipt=receipt,
                    location=TransactionLocation(transaction, Hash32(block.hash), block.number, index),
                    gas_used=receipt.cumulative_gas_used - previous_gas,
                    first_log_index=log_index,
                    contract_address=contract,
                    effective_gas_price=effective_gas_price(transaction),
                )
            )
        previous_gas = receipt.cumulative_gas_used
        log_index += len(receipt.logs)
    return views


def block_fees(block: Block, receipts: Sequence[Receipt]) -> list[tuple[int, int]]:
    """
    The effective gas price and own gas of each transaction of a block: the
    C{effective_gas_price} and C{gas_used} of L{receipt_views}, alone.
    """
    fees = []
    previous_gas = 0
    for transaction, receipt in zip(block.transactions, receipts):
        fees.append((effective_gas_price(transaction), receipt.cumulative_gas_used - previous_gas))
        previous_gas = receipt.cumulative_gas_used
    return fees


__all__ = ["RECENT_BLOCKS", "ChainReader", "block_fees", "receipt_views"]
