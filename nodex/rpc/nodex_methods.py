"""
The C{nodex} module (reference §3.7) and C{eth_bridgeState} (§3.3): the
chain's data in its consensus encodings, for clients that verify it
themselves, and the bridge account's state; and the execution APIs' raw
getters of the C{debug} module (C{debug_getRaw*}).

Unlike the reference, parameters are decoded like every other method's
(malformed input is -32602 naming the argument, not -32603), and the raw
header is the RLP whose Keccak-256 is the block hash (docs/compatibility.md).
"""

from collections.abc import Iterable
from typing import Any

from nodex.api.chain import BadBlock, BridgeState, IChainService, IRawChainData
from nodex.api.pool import ITransactionPool
from nodex.rpc import decoders, encoders
from nodex.rpc.blockref import require_block, resolve_block
from nodex.rpc.chain_methods import block_or_hash
from nodex.rpc.decoders import BlockHashSelector, BlockSelector
from nodex.rpc.objects import block_object
from nodex.rpc.registry import Method, Param
from nodex.structures.errors import InvalidTransactionError

nullable_data = encoders.nullable(encoders.data)


def bridge_state_object(state: BridgeState) -> dict[str, Any]:
    """
    The answer of C{eth_bridgeState}: the height as a JSON number, the
    waiting peg-outs' keys as hex without C{0x} (reference §3.3).
    """
    return {
        "btcBlockchainBestChainHeight": state.best_chain_height,
        "nodexTxsWaitingForSignatures": [key.hex() for key in state.waiting_for_signatures],
    }


class NodexMethods:
    """
    C{nodex_protocolVersion}, the raw header and receipt lookups, the
    receipt's trie nodes, and C{eth_bridgeState}.
    """

    def __init__(self, chain: IChainService, raw: IRawChainData, protocol_version: int) -> None:
        """
        @param chain: resolves block numbers and tags.
        @param raw: the encodings, trie nodes and bridge state.
        @param protocol_version: the P2P wire protocol version
            (L{nodex.p2p.messages.WIRE_PROTOCOL_VERSION}).
        """
        self._chain = chain
        self._raw = raw
        self._protocol_version = protocol_version

    def rpc_methods(self) -> Iterable[Method]:
        """
        The methods of the C{nodex} module, and C{eth_bridgeState}.
        """
        block_hash = Param("blockHash", decoders.hash32)
        tx_hash = Param("transactionHash", decoders.hash32)
        return [
            Method("nodex_protocolVersion", self.protocol_version, (), encoders.quantity),
            Method("nodex_getRawBlockHeaderByHash", self.get_raw_header_by_hash, (block_hash,), nullable_data),
            Method(
                "nodex_getRawBlockHeaderByNumber",
                self.get_raw_header_by_number,
                (Param("block", block_or_hash),),
                nullable_data,
            ),
            Method("nodex_getRawTransactionReceiptByHash", self.get_raw_receipt, (tx_hash,), nullable_data),
            Method(
                "nodex_getTransactionReceiptNodesByHash",
                self.get_receipt_nodes,
                (block_hash, tx_hash),
                encoders.nullable(encoders.array_of(encoders.data)),
            ),
            Method("eth_bridgeState", self.bridge_state, (), bridge_state_object),
        ]

    def protocol_version(self) -> int:
        """
        The P2P wire protocol version, as C{eth_protocolVersion}.
        """
        return self._protocol_version

    async def get_raw_header_by_hash(self, block_hash: bytes) -> bytes | None:
        """
        The header RLP of a stored block, or L{None}.
        """
        return await self._raw.get_raw_header(block_hash)

    async def get_raw_header_by_number(self, selector: BlockSelector) -> bytes | None:
        """
        The header RLP of the block a number, tag or hash names, or L{None}.
        """
        if isinstance(selector, BlockHashSelector) and not selector.require_canonical:
            return await self._raw.get_raw_header(selector.block_hash)
        block = await resolve_block(self._chain, selector)
        return None if block is None else block.header.encode_for_hash()

    async def get_raw_receipt(self, tx_hash: bytes) -> bytes | None:
        """
        The receipt's value in the receipts trie, or L{None}.
        """
        return await self._raw.get_raw_receipt(tx_hash)

    async def get_receipt_nodes(self, block_hash: bytes, tx_hash: bytes) -> list[bytes] | None:
        """
        The receipts-trie nodes of a transaction in a block, leaf first;
        L{None} when the transaction is not in it; -32600 for an unknown block.
        """
        return await self._raw.get_receipt_trie_nodes(block_hash, tx_hash)

    async def bridge_state(self) -> BridgeState:
        """
        The bridge account's state at the head.
        """
        return await self._raw.get_bridge_state()


def bad_block_object(bad: BadBlock) -> dict[str, Any]:
    """
    One entry of C{debug_getBadBlocks}: geth's C{hash}, C{block} (with its
    transaction objects, or their hashes when a sender cannot be recovered)
    and C{rlp}, and the C{reason} the importer refused it for.
    """
    block = bad.block
    try:
        shown = block_object(block, 0, True)
    except InvalidTransactionError:
        shown = block_object(block, 0, False)
    # A refused block belongs to no chain: it has no total difficulty.
    del shown["totalDifficulty"]
    return {"hash": encoders.data(block.hash), "block": shown, "rlp": encoders.data(block.encode()), "reason": bad.reason}


class RawDebugMethods:
    """
    The execution APIs' raw getters of the C{debug} module:
    C{debug_getRawHeader}, C{debug_getRawBlock}, C{debug_getRawTransaction}
    and C{debug_getRawReceipts}, in the encodings the node stores and sends
    to its peers; and C{debug_getBadBlocks}.
    """

    def __init__(self, chain: IChainService, pool: ITransactionPool | None = None) -> None:
        """
        @param chain: the blocks, transactions and receipts.
        @param pool: where a transaction not yet mined is found too.
        """
        self._chain = chain
        self._pool = pool

    def rpc_methods(self) -> Iterable[Method]:
        """
        The four raw getters.
        """
        block = Param("block", block_or_hash)
        return [
            Method("debug_getRawHeader", self.get_raw_header, (block,), encoders.data),
            Method("debug_getRawBlock", self.get_raw_block, (block,), encoders.data),
            Method(
                "debug_getRawTransaction", self.get_raw_transaction,
                (Param("transactionHash", decoders.hash32),), nullable_data,
            ),
            Method("debug_getRawReceipts", self.get_raw_receipts, (block,), encoders.array_of(encoders.data)),
            Method("debug_getBadBlocks", self.get_bad_blocks, (), encoders.array_of(bad_block_object)),
        ]

    async def get_raw_header(self, selector: BlockSelector) -> bytes:
        """
        The header's full RLP, as C{debug_getRawBlock} holds it (all 19
        fields, merged-mining proof included); the RLP of its first 17
        fields, whose Keccak-256 is the block hash, is
        C{nodex_getRawBlockHeaderByNumber}'s answer.
        """
        return (await require_block(self._chain, selector)).header.encode()

    async def get_raw_block(self, selector: BlockSelector) -> bytes:
        """
        The block's RLP: C{[header, [transaction, ...], [uncle, ...]]}.
        """
        return (await require_block(self._chain, selector)).encode()

    async def get_raw_transaction(self, tx_hash: bytes) -> bytes | None:
        """
        The EIP-2718 encoding of a mined or pooled transaction, or L{None}.
        """
        location = await self._chain.get_transaction(tx_hash)
        if location is not None:
            return location.transaction.encode()
        pooled = None if self._pool is None else self._pool.get(tx_hash)
        return None if pooled is None else pooled.encode()

    def get_bad_blocks(self) -> list[BadBlock]:
        """
        The blocks the importer refused lately, oldest first (geth's answer
        has the newest first; this one adds the reason).
        """
        return self._chain.bad_blocks()

    async def get_raw_receipts(self, selector: BlockSelector) -> list[bytes]:
        """
        The consensus encodings of the block's receipts (type byte, then
        RLP, for typed transactions), in transaction order.
        """
        block = await require_block(self._chain, selector)
        receipts = await self._chain.get_block_receipts(block.hash)
        return [] if receipts is None else [view.receipt.encode() for view in receipts]


__all__ = ["NodexMethods", "RawDebugMethods", "bad_block_object", "bridge_state_object"]
