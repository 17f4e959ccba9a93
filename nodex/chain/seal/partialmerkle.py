"""
Bitcoin's partial merkle trees (the C{merkleblock} encoding, BIP 37).

A partial merkle tree proves that some transactions are in a block of a
known number of transactions: a depth-first walk of the merkle tree, left
before right, with one flag bit per visited node (1: an ancestor of a
matched transaction, descended into; 0: not, its hash given) and the hashes
of the nodes not descended into and of the matched leaves, in walk order.
Serialised: the transaction count (4 bytes, little-endian), a CompactSize
count of hashes, the 32-byte hashes (internal byte order), a CompactSize
count of flag bytes, the flag bytes (bits from the least significant).

Merged miners send the coinbase's branch as the hash list of the tree in
which only the coinbase is matched (C{mnr_submitBitcoinBlockPartialMerkle}):
the coinbase txid, then the siblings from the leaf level up, which is
exactly that tree's walk order.  L{coinbase_branch} reads it so.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from nodex.chain.seal.bitcoin import encode_varint, read_varint
from nodex.chain.errors import MalformedBitcoinDataError
from nodex.crypto import double_sha256

MAX_TRANSACTIONS = 1 << 24
"""More transactions than any Bitcoin block can hold."""


@dataclass(frozen=True)
class PartialMerkleTree:
    """
    A partial merkle tree.

    @ivar transaction_count: how many transactions the block holds.
    @ivar hashes: the hashes in walk order (internal byte order).
    @ivar flags: one bit per visited node, in walk order.
    """

    transaction_count: int
    hashes: tuple[bytes, ...]
    flags: tuple[bool, ...]


def tree_height(transaction_count: int) -> int:
    """
    The height of the merkle tree of C{transaction_count} leaves (0 for one leaf).
    """
    height = 0
    while tree_width(transaction_count, height) > 1:
        height += 1
    return height


def tree_width(transaction_count: int, height: int) -> int:
    """
    How many nodes the tree has at C{height} (0: the leaves).
    """
    return (transaction_count + (1 << height) - 1) >> height


def _node_hash(height: int, position: int, txids: Sequence[bytes]) -> bytes:
    if height == 0:
        return txids[position]
    left = _node_hash(height - 1, position * 2, txids)
    if position * 2 + 1 < tree_width(len(txids), height - 1):
        right = _node_hash(height - 1, position * 2 + 1, txids)
    else:
        right = left
    return double_sha256(left + right)


def build(txids: Sequence[bytes], matched: Sequence[bool]) -> PartialMerkleTree:
    """
    The partial merkle tree of a block's C{txids} proving those whose C{matched} flag is set.

    @raise MalformedBitcoinDataError: no transactions, or the two lists differ in length.
    """
    if not txids or len(txids) != len(matched):
        raise MalformedBitcoinDataError("a partial merkle tree needs one match flag per transaction, at least one")
    hashes: list[bytes] = []
    flags: list[bool] = []
    count = len(txids)

    def walk(height: int, position: int) -> None:
        first = position << height
        last = min((position + 1) << height, count)
        parent_of_match = any(matched[first:last])
        flags.append(parent_of_match)
        if height == 0 or not parent_of_match:
            hashes.append(_node_hash(height, position, txids))
            return
        walk(height - 1, position * 2)
        if position * 2 + 1 < tree_width(count, height - 1):
            walk(height - 1, position * 2 + 1)

    walk(tree_height(count), 0)
    return PartialMerkleTree(count, tuple(hashes), tuple(flags))


def extract(tree: PartialMerkleTree) -> tuple[bytes, list[tuple[int, bytes]]]:
    """
    Walk a partial merkle tree: its merkle root and the matched transactions.

    @return: the root and the (index, txid) of each matched leaf, in order.
    @raise MalformedBitcoinDataError: the tree is inconsistent: a bad count,
        hashes or flags left over or missing, or two identical siblings
        (the duplicated-subtree ambiguity of CVE-2012-2459).
    """
    count = tree.transaction_count
    if not 1 <= count <= MAX_TRANSACTIONS:
        raise MalformedBitcoinDataError(f"a partial merkle tree of {count} transactions")
    if len(tree.hashes) > count:
        raise MalformedBitcoinDataError(f"{len(tree.hashes)} hashes for {count} transactions")
    if len(tree.flags) < len(tree.hashes):
        raise MalformedBitcoinDataError("fewer flag bits than hashes")
    used = [0, 0]
    matches: list[tuple[int, bytes]] = []

    def walk(height: int, position: int) -> bytes:
        if used[1] >= len(tree.flags):
            raise MalformedBitcoinDataError("the partial merkle tree runs out of flag bits")
        descend = tree.flags[used[1]]
        used[1] += 1
        if height == 0 or not descend:
            if used[0] >= len(tree.hashes):
                raise MalformedBitcoinDataError("the partial merkle tree runs out of hashes")
            node = tree.hashes[used[0]]
            used[0] += 1
            if height == 0 and descend:
                matches.append((position, node))
            return node
        left = walk(height - 1, position * 2)
        if position * 2 + 1 < tree_width(count, height - 1):
            right = walk(height - 1, position * 2 + 1)
            if right == left:
                raise MalformedBitcoinDataError("identical siblings in a partial merkle tree")
        else:
            right = left
        return double_sha256(left + right)

    root = walk(tree_height(count), 0)
    if used[0] != len(tree.hashes):
        raise MalformedBitcoinDataError(f"{len(tree.hashes) - used[0]} hashes left over in the partial merkle tree")
    if (used[1] + 7) // 8 != (len(tree.flags) + 7) // 8:
        raise MalformedBitcoinDataError("flag bytes left over in the partial merkle tree")
    return root, matches


def encode(tree: PartialMerkleTree) -> bytes:
    """
    The C{merkleblock} serialisation of a tree (without the block header).
    """
    flag_bytes = bytearray((len(tree.flags) + 7) // 8)
    for index, flag in enumerate(tree.flags):
        if flag:
            flag_bytes[index // 8] |= 1 << (index % 8)
    return (
        tree.transaction_count.to_bytes(4, "little")
        + encode_varint(len(tree.hashes))
        + b"".join(tree.hashes)
        + encode_varint(len(flag_bytes))
        + bytes(flag_bytes)
    )


def decode(raw: bytes) -> PartialMerkleTree:
    """
    Parse a serialised tree, which must have exactly its declared size.

    @raise MalformedBitcoinDataError: truncated, oversized or with trailing bytes.
    """
    if len(raw) < 4:
        raise MalformedBitcoinDataError("truncated partial merkle tree")
    count = int.from_bytes(raw[:4], "little")
    hash_count, offset = read_varint(raw, 4)
    if hash_count > MAX_TRANSACTIONS or offset + 32 * hash_count > len(raw):
        raise MalformedBitcoinDataError("truncated partial merkle tree hashes")
    hashes = tuple(raw[offset + 32 * index : offset + 32 * (index + 1)] for index in range(hash_count))
    offset += 32 * hash_count
    byte_count, offset = read_varint(raw, offset)
    if offset + byte_count != len(raw):
        raise MalformedBitcoinDataError("the partial merkle tree's flag bytes do not end the data")
    flags = tuple(bool(raw[offset + bit // 8] >> (bit % 8) & 1) for bit in range(8 * byte_count))
    return PartialMerkleTree(count, hashes, flags)


def coinbase_branch(transaction_count: int, hashes: Sequence[bytes]) -> list[bytes]:
    """
    Read a merged miner's coinbase branch as the partial merkle tree of a
    block of C{transaction_count} transactions in which only the coinbase
    matches, and return the siblings from the leaf level up.

    @param hashes: the coinbase txid, then its siblings from the leaf level up.
    @raise MalformedBitcoinDataError: the hashes do not make such a tree
        (a branch of the wrong depth, identical siblings).
    """
    if not 1 <= transaction_count <= MAX_TRANSACTIONS:
        raise MalformedBitcoinDataError(f"a Bitcoin block of {transaction_count} transactions")
    height = tree_height(transaction_count)
    if len(hashes) != height + 1:
        raise MalformedBitcoinDataError(
            f"a branch of {len(hashes) - 1} siblings, but a block of {transaction_count} transactions needs {height}"
        )
    # Walk order of the coinbase-only tree: down the left edge (flags 1),
    # the coinbase leaf, then each right sibling on the way back up (flags 0).
    flags = (True,) * (height + 1) + (False,) * height
    _root, matches = extract(PartialMerkleTree(transaction_count, tuple(hashes), flags))
    if [index for index, _txid in matches] != [0]:
        raise MalformedBitcoinDataError("the partial merkle tree does not match the coinbase alone")
    return list(hashes[1:])


__all__ = [
    "PartialMerkleTree",
    "build",
    "coinbase_branch",
    "decode",
    "encode",
    "extract",
    "tree_height",
    "tree_width",
]
