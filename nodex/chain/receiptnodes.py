"""
The receipts-trie nodes that prove one receipt under a block's receiptsRoot
(C{nodex_getTransactionReceiptNodesByHash}).

The trie is Ethereum's hexary Merkle-Patricia trie (DESIGN §1), keyed by the
RLP of each transaction's index, valued by the receipt's consensus encoding;
it is rebuilt from the block's stored receipts.  The nodes come in the
reference's order (§3.7, §14): the node that holds the receipt first, the
root last.  Nodes embedded in their parent (under 32 bytes) are part of
their parent's encoding and are not listed on their own.
"""

from collections.abc import Sequence

from nodex.trie.hexary import HexaryTrie
from nodex.trie.ordered import index_key


def _no_nodes(node_hash: bytes) -> None:
    """
    The node reader of a trie built in memory: no stored node exists.
    """
    return None


def receipt_trie_nodes(encoded_receipts: Sequence[bytes], index: int) -> list[bytes]:
    """
    The encoded trie nodes on the path of receipt C{index}, leaf first.

    @param encoded_receipts: the block's receipts, each in its consensus
        encoding (L{nodex.structures.receipts.Receipt.encode}), in block order.
    @param index: the transaction's position in the block.
    @raise IndexError: no receipt at C{index}.
    """
    if not 0 <= index < len(encoded_receipts):
        raise IndexError(f"no receipt at index {index} of {len(encoded_receipts)}")
    trie = HexaryTrie(_no_nodes)
    for position, receipt in enumerate(encoded_receipts):
        trie.put(index_key(position), receipt)
    return list(reversed(trie.prove(index_key(index))))


__all__ = ["receipt_trie_nodes"]
