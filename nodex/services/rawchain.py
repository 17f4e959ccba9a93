"""
The chain's data in its consensus encodings, and the bridge account's
state (L5): what the C{nodex} RPC module and C{eth_bridgeState} read,
through L{IRawChainData}.

Reads go through the chain service; rebuilding a block's receipts trie and
reading the bridge's storage run on the chain's reader threads, never on
the reactor thread.
"""

from collections.abc import Callable

from twisted.internet.defer import Deferred, ensureDeferred
from zope.interface import implementer

from nodex.chain.bridge import BRIDGE_ADDRESS, BridgeState, read_bridge_state
from nodex.chain.receiptnodes import receipt_trie_nodes
from nodex.api.chain import IRawChainData
from nodex.api.errors import BlockNotFoundError
from nodex.services.chain import ChainService
from nodex.state.state import State

RunInThread = Callable[..., "Deferred[Any]"]


@implementer(IRawChainData)
class RawChainData:
    """
    L{IRawChainData} over the chain service.
    """

    def __init__(self, chain: ChainService, run_in_thread: RunInThread) -> None:
        """
        @param chain: where headers, receipts and the state are read.
        @param run_in_thread: runs a function on a reader thread (the
            chain's reader pool; tests pass C{maybeDeferred}).
        """
        self._chain = chain
        self._run_in_thread = run_in_thread

    def get_raw_header(self, block_hash: bytes) -> Deferred[bytes | None]:
        """
        The header's RLP without the merged-mining merkle proof and
        coinbase: the bytes whose Keccak-256 is the block hash.

        @return: a Deferred firing with the RLP, or L{None} for an unknown block.
        """
        return self._chain.get_header_by_hash(block_hash).addCallback(
            lambda header: None if header is None else header.encode_for_hash()
        )

    def get_raw_receipt(self, tx_hash: bytes) -> Deferred[bytes | None]:
        """
        The receipt's consensus encoding (the type byte, then the RLP list
        of status, cumulative gas, bloom and logs, for a typed transaction).

        @return: a Deferred firing with the encoding, or L{None} for a
            transaction not on the canonical chain.
        """
        return self._chain.get_receipt(tx_hash).addCallback(lambda view: None if view is None else view.receipt.encode())

    def get_receipt_trie_nodes(self, block_hash: bytes, tx_hash: bytes) -> Deferred[list[bytes] | None]:
        """
        The receipts-trie nodes of a transaction's receipt, leaf first
        (L{receipt_trie_nodes}).

        @return: a Deferred firing with the encoded nodes, or L{None} when
            the transaction is not in the block; failing with
            L{BlockNotFoundError} for an unknown block.
        """
        return ensureDeferred(self._receipt_trie_nodes(block_hash, tx_hash))

    async def _receipt_trie_nodes(self, block_hash: bytes, tx_hash: bytes) -> list[bytes] | None:
        """
        The coroutine of L{get_receipt_trie_nodes}.
        """
        views = await self._chain.get_block_receipts(block_hash)
        if views is None:
            raise BlockNotFoundError(f"Block with hash 0x{bytes(block_hash).hex()} not found")
        for position, view in enumerate(views):
            if view.location.transaction.hash == tx_hash:
                encoded = [each.receipt.encode() for each in views]
                return await self._run_in_thread(receipt_trie_nodes, encoded, position)
        return None

    def get_bridge_state(self) -> Deferred[BridgeState]:
        """
        The bridge account's state at the head.

        @return: a Deferred firing with the L{BridgeState}, or failing with
            L{nodex.chain.bridge.BridgeStateError} when its storage is corrupt.
        """

        def read(state: State) -> BridgeState:
            """
            Read the bridge's slots from C{state} (reader thread).
            """
            return read_bridge_state(lambda slot: state.get_storage(BRIDGE_ADDRESS, slot))

        return self._chain.run_with_state(read)


__all__ = ["RawChainData"]
