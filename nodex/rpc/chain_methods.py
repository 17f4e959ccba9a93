"""
The C{eth} methods that read the chain: the head, blocks, uncles,
transactions by hash or position, and receipts (reference §3.3, shapes of
L{nodex.rpc.objects}).

Unknown blocks and transactions answer C{null}, as every method that
answers a block or a part of one does (C{docs/compatibility.md}).  The
methods that the specification marks as partially supported refuse
C{pending} with -32201 (DESIGN §1) by the reference's conventions, and
answer the pending block under the Ethereum ones.
"""

from collections.abc import Iterable
from typing import Any

from nodex.api.chain import IChainService
from nodex.api.conventions import REFERENCE_CONVENTIONS, Conventions
from nodex.api.mining import IPendingBlock
from nodex.api.peers import IPeerNetwork
from nodex.api.pool import ITransactionPool
from nodex.rpc import decoders, encoders
from nodex.rpc.blockref import resolve_block
from nodex.rpc.decoders import BlockParameter, BlockSelector, BlockTag, DecodeError
from nodex.rpc.objects import (
    block_object,
    located_transaction_object,
    receipt_object,
    transaction_object,
    uncle_object,
)
from nodex.rpc.registry import Method, Param
from nodex.structures.blocks import Block


def block_or_hash(value: Any) -> BlockSelector:
    """
    The parameter of C{eth_getBlockReceipts}: a block hash (DATA 32), a
    number, a TAG or an EIP-1898 object.
    """
    if isinstance(value, str) and len(value) == 66 and value[:2] in ("0x", "0X"):
        return decoders.BlockHashSelector(decoders.hash32(value))
    return decoders.block_selector(value)


def index(value: Any) -> int:
    """
    A transaction or uncle index: a QUANTITY of at most 64 bits.
    """
    try:
        return decoders.uint64(value)
    except DecodeError as exc:
        raise DecodeError(f"{exc} (an index)") from None


class ChainMethods:
    """
    The block, transaction and receipt lookups of the C{eth} module.
    """

    def __init__(
        self,
        chain: IChainService,
        pool: ITransactionPool,
        peers: IPeerNetwork | None = None,
        pending: IPendingBlock | None = None,
        conventions: Conventions = REFERENCE_CONVENTIONS,
    ) -> None:
        """
        @param chain: where blocks, transactions and receipts are read.
        @param pool: where pending transactions are found.
        @param peers: the peer network, whose sync C{eth_syncing} reports
            (without one the node never syncs).
        @param pending: the block the miner would build now, which the
            methods that the specification lets refuse C{pending} answer
            under the Ethereum conventions.
        @param conventions: by the reference's, those methods refuse
            C{pending} (-32201, DESIGN §1).
        """
        self._chain = chain
        self._pool = pool
        self._peers = peers
        self._pending = pending if conventions.ethereum else None

    def rpc_methods(self) -> Iterable[Method]:
        """
        The chain-reading methods.
        """
        block_hash = Param("blockHash", decoders.hash32)
        tx_hash = Param("transactionHash", decoders.hash32)
        number = Param("block", decoders.block_parameter)
        full = Param("fullTransactions", decoders.boolean)
        position = Param("index", index)
        nullable_quantity = encoders.nullable(encoders.quantity)
        return [
            Method("eth_blockNumber", self.block_number, (), encoders.quantity),
            Method("eth_syncing", self.syncing, ()),
            Method("eth_getBlockByHash", self.get_block_by_hash, (block_hash, full)),
            Method("eth_getBlockByNumber", self.get_block_by_number, (number, full)),
            Method(
                "eth_getBlockTransactionCountByHash",
                self.get_block_transaction_count_by_hash,
                (block_hash,),
                nullable_quantity,
            ),
            Method(
                "eth_getBlockTransactionCountByNumber",
                self.get_block_transaction_count_by_number,
                (number,),
                nullable_quantity,
            ),
            Method("eth_getUncleCountByBlockHash", self.get_uncle_count_by_block_hash, (block_hash,), nullable_quantity),
            Method(
                "eth_getUncleCountByBlockNumber", self.get_uncle_count_by_block_number, (number,), nullable_quantity
            ),
            Method("eth_getUncleByBlockHashAndIndex", self.get_uncle_by_block_hash_and_index, (block_hash, position)),
            Method(
                "eth_getUncleByBlockNumberAndIndex", self.get_uncle_by_block_number_and_index, (number, position)
            ),
            Method("eth_getTransactionByHash", self.get_transaction_by_hash, (tx_hash,)),
            Method(
                "eth_getTransactionByBlockHashAndIndex",
                self.get_transaction_by_block_hash_and_index,
                (block_hash, position),
            ),
            Method(
                "eth_getTransactionByBlockNumberAndIndex",
                self.get_transaction_by_block_number_and_index,
                (number, position),
            ),
            Method("eth_getTransactionReceipt", self.get_transaction_receipt, (tx_hash,)),
            Method("eth_getBlockReceipts", self.get_block_receipts, (Param("block", block_or_hash),)),
        ]

    def block_number(self) -> int:
        """
        The head's number.
        """
        return int(self._chain.head.header.number)

    def syncing(self) -> bool | dict[str, str]:
        """
        C{false}, or the sync status object (startingBlock, currentBlock,
        highestBlock, in that order) while a sync runs.
        """
        status = None if self._peers is None else self._peers.sync_status()
        if status is None:
            return False
        return {
            "startingBlock": encoders.quantity(status.starting_block),
            "currentBlock": encoders.quantity(status.current_block),
            "highestBlock": encoders.quantity(status.highest_block),
        }

    async def _block_object(self, block: Block | None, full: bool) -> dict[str, Any] | None:
        """
        The block object of C{block} with its total difficulty, or L{None}.
        """
        if block is None:
            return None
        total_difficulty = await self._chain.get_total_difficulty(block.hash)
        return block_object(block, total_difficulty or 0, full)

    async def get_block_by_hash(self, block_hash: bytes, full: bool) -> dict[str, Any] | None:
        """
        A stored block by hash, or C{null}.
        """
        return await self._block_object(await self._chain.get_block_by_hash(block_hash), full)

    async def _numbered(self, number: BlockParameter) -> Block | None:
        """
        The block a number or tag names for the methods the specification
        lets refuse C{pending}: under the Ethereum conventions C{pending}
        is the block the miner would build now; by the reference's it is
        refused.

        @raise PendingNotSupportedError: C{pending}, by the reference's conventions.
        """
        if number is BlockTag.PENDING and self._pending is not None:
            return (await self._pending.block()).block
        return await resolve_block(self._chain, number, pending_supported=False)

    async def get_block_by_number(self, number: BlockParameter, full: bool) -> dict[str, Any] | None:
        """
        A canonical block by number or tag, or C{null}; C{pending} refused
        by the reference's conventions, the pending block under the
        Ethereum ones (unsealed: its hash is that of its unsealed header,
        which the sealed block will not keep, as Anvil's pending block).
        """
        block = await self._numbered(number)
        if number is not BlockTag.PENDING or block is None:
            return await self._block_object(block, full)
        head = self._chain.head.header
        total_difficulty = (await self._chain.get_total_difficulty(head.hash) or 0) + block.header.difficulty
        return block_object(block, total_difficulty, full)

    async def get_block_transaction_count_by_hash(self, block_hash: bytes) -> int | None:
        """
        How many transactions a stored block holds, or C{null}.
        """
        block = await self._chain.get_block_by_hash(block_hash)
        return None if block is None else len(block.transactions)

    async def get_block_transaction_count_by_number(self, number: BlockParameter) -> int | None:
        """
        How many transactions a canonical block holds, or C{null} (as every
        method that answers a block or a part of one, C{docs/compatibility.md});
        for C{pending}, how many the pool has ready.
        """
        if number is BlockTag.PENDING:
            return len(self._pool.pending())
        block = await resolve_block(self._chain, number)
        return None if block is None else len(block.transactions)

    async def get_uncle_count_by_block_hash(self, block_hash: bytes) -> int | None:
        """
        How many uncles a stored block names, or C{null}.
        """
        block = await self._chain.get_block_by_hash(block_hash)
        return None if block is None else len(block.uncles)

    async def get_uncle_count_by_block_number(self, number: BlockParameter) -> int | None:
        """
        How many uncles a canonical block names, or C{null}; C{pending}
        refused by the reference's conventions.
        """
        block = await self._numbered(number)
        return None if block is None else len(block.uncles)

    async def _uncle(self, block: Block | None, position: int) -> dict[str, Any] | None:
        """
        The uncle at C{position} of C{block}, or L{None}.
        """
        if block is None or position >= len(block.uncles):
            return None
        uncle = block.uncles[position]
        total_difficulty = await self._chain.get_total_difficulty(uncle.hash)
        return uncle_object(uncle, total_difficulty or 0)

    async def get_uncle_by_block_hash_and_index(self, block_hash: bytes, position: int) -> dict[str, Any] | None:
        """
        An uncle of a stored block, or C{null}.
        """
        return await self._uncle(await self._chain.get_block_by_hash(block_hash), position)

    async def get_uncle_by_block_number_and_index(
        self, number: BlockParameter, position: int
    ) -> dict[str, Any] | None:
        """
        An uncle of a canonical block, or C{null}; C{pending} refused by
        the reference's conventions.
        """
        block = await self._numbered(number)
        return await self._uncle(block, position)

    async def get_transaction_by_hash(self, tx_hash: bytes) -> dict[str, Any] | None:
        """
        A canonical transaction, else a pooled one (with C{null} block
        members), else C{null}.
        """
        location = await self._chain.get_transaction(tx_hash)
        if location is not None:
            return located_transaction_object(location)
        pooled = self._pool.get(tx_hash)
        if pooled is None:
            return None
        return transaction_object(pooled, None, None, None)

    @staticmethod
    def _positioned(block: Block | None, position: int) -> dict[str, Any] | None:
        """
        The transaction at C{position} of C{block}, or L{None}.
        """
        if block is None or position >= len(block.transactions):
            return None
        return transaction_object(block.transactions[position], block.hash, block.header.number, position)

    async def get_transaction_by_block_hash_and_index(
        self, block_hash: bytes, position: int
    ) -> dict[str, Any] | None:
        """
        The transaction at a position of a stored block, or C{null}.
        """
        return self._positioned(await self._chain.get_block_by_hash(block_hash), position)

    async def get_transaction_by_block_number_and_index(
        self, number: BlockParameter, position: int
    ) -> dict[str, Any] | None:
        """
        The transaction at a position of a canonical block, or C{null};
        C{pending} refused by the reference's conventions.
        """
        block = await self._numbered(number)
        return self._positioned(block, position)

    async def get_transaction_receipt(self, tx_hash: bytes) -> dict[str, Any] | None:
        """
        The receipt of a canonical transaction, or C{null} (unknown, pending
        or abandoned).
        """
        view = await self._chain.get_receipt(tx_hash)
        return None if view is None else receipt_object(view)

    async def get_block_receipts(self, selector: BlockSelector) -> list[dict[str, Any]] | None:
        """
        The receipts of a block in transaction order, or C{null} for an
        unknown block.
        """
        block = await resolve_block(self._chain, selector)
        if block is None:
            return None
        views = await self._chain.get_block_receipts(block.hash)
        if views is None:
            return None
        return [receipt_object(view) for view in views]


__all__ = ["ChainMethods", "block_or_hash", "index"]
