"""
Just enough of Bitcoin's formats for merged mining.

Merged miners hand the node a Bitcoin block, or its header, coinbase and
transaction ids; the node needs the 80-byte header, the coinbase without its
witness, the transaction ids and the merkle branch that links the coinbase to
the header's merkle root. Hashes here are in Bitcoin's internal byte order
(the raw double SHA-256 output), not the reversed order block explorers print.
"""

from dataclasses import dataclass

from nodex.chain.errors import MalformedBitcoinDataError
from nodex.crypto import double_sha256

HEADER_SIZE = 80


@dataclass(frozen=True)
class BitcoinBlock:
    """
    A parsed Bitcoin block: its header and its transactions without witnesses.

    @ivar header: the 80-byte header.
    @ivar transactions: each transaction serialised without witness data, so
        that C{double_sha256} of it is its txid; the coinbase comes first.
    """

    header: bytes
    transactions: tuple[bytes, ...]


def read_varint(data: bytes, offset: int) -> tuple[int, int]:
    """
    Read a Bitcoin CompactSize integer.

    @return: the value and the offset just after it.
    @raise MalformedBitcoinDataError: the data ends inside the integer.
    """
    if offset >= len(data):
        raise MalformedBitcoinDataError("truncated Bitcoin data: varint expected")
    first = data[offset]
    if first < 0xFD:
        return first, offset + 1
    width = {0xFD: 2, 0xFE: 4, 0xFF: 8}[first]
    end = offset + 1 + width
    if end > len(data):
        raise MalformedBitcoinDataError("truncated Bitcoin data inside a varint")
    return int.from_bytes(data[offset + 1 : end], "little"), end


def encode_varint(value: int) -> bytes:
    """
    Encode a Bitcoin CompactSize integer.
    """
    if value < 0xFD:
        return bytes([value])
    if value <= 0xFFFF:
        return b"\xfd" + value.to_bytes(2, "little")
    if value <= 0xFFFFFFFF:
        return b"\xfe" + value.to_bytes(4, "little")
    return b"\xff" + value.to_bytes(8, "little")


def _take(data: bytes, offset: int, size: int) -> int:
    end = offset + size
    if end > len(data):
        raise MalformedBitcoinDataError("truncated Bitcoin transaction")
    return end


def _skip_items(data: bytes, offset: int, count: int, before: int, after: int) -> int:
    """
    Skip C{count} items that each hold C{before} fixed bytes, a length-prefixed
    script, and C{after} fixed bytes.
    """
    for _ in range(count):
        offset = _take(data, offset, before)
        length, offset = read_varint(data, offset)
        offset = _take(data, offset, length + after)
    return offset


def read_transaction(data: bytes, offset: int = 0) -> tuple[bytes, int]:
    """
    Read one transaction, dropping its witness if it has one.

    @return: the transaction serialised without witness, and the offset just
        after the transaction as it appeared in C{data}.
    @raise MalformedBitcoinDataError: the bytes are not a transaction.
    """
    start = offset
    version_end = _take(data, offset, 4)
    segwit = data[version_end : version_end + 2] == b"\x00\x01"
    inputs_start = version_end + 2 if segwit else version_end
    input_count, offset = read_varint(data, inputs_start)
    if input_count == 0:
        raise MalformedBitcoinDataError("Bitcoin transaction without inputs")
    # An input: 36-byte outpoint, script, 4-byte sequence. An output: 8-byte value, script.
    offset = _skip_items(data, offset, input_count, 36, 4)
    output_count, offset = read_varint(data, offset)
    outputs_end = _skip_items(data, offset, output_count, 8, 0)
    offset = outputs_end
    if segwit:
        for _ in range(input_count):
            items, offset = read_varint(data, offset)
            offset = _skip_items(data, offset, items, 0, 0)
    end = _take(data, offset, 4)
    stripped = data[start:version_end] + data[inputs_start:outputs_end] + data[offset:end]
    return stripped, end


def parse_block(raw: bytes) -> BitcoinBlock:
    """
    Parse a serialised Bitcoin block (header, transaction count, transactions).

    @raise MalformedBitcoinDataError: the bytes are not a whole block.
    """
    if len(raw) < HEADER_SIZE + 1:
        raise MalformedBitcoinDataError(f"a Bitcoin block needs more than {HEADER_SIZE} bytes")
    count, offset = read_varint(raw, HEADER_SIZE)
    if count == 0:
        raise MalformedBitcoinDataError("Bitcoin block without transactions")
    transactions = []
    for _ in range(count):
        transaction, offset = read_transaction(raw, offset)
        transactions.append(transaction)
    if offset != len(raw):
        raise MalformedBitcoinDataError(f"{len(raw) - offset} trailing bytes after the Bitcoin block")
    return BitcoinBlock(raw[:HEADER_SIZE], tuple(transactions))


def txid(transaction: bytes) -> bytes:
    """
    The id of a transaction serialised without witness (internal byte order).
    """
    return double_sha256(transaction)


def header_merkle_root(header: bytes) -> bytes:
    """
    The merkle root field of an 80-byte header (internal byte order).
    """
    return header[36:68]


def merkle_branch(txids: list[bytes]) -> list[bytes]:
    """
    The siblings that link the first transaction (the coinbase) to the merkle root.

    @param txids: every transaction id of the block, coinbase first.
    @return: the sibling of the coinbase's ancestor at each level, bottom-up.
    """
    branch = []
    level = list(txids)
    while len(level) > 1:
        if len(level) % 2:
            level.append(level[-1])
        branch.append(level[1])
        level = [double_sha256(level[i] + level[i + 1]) for i in range(0, len(level), 2)]
    return branch


def merkle_root(txids: list[bytes]) -> bytes:
    """
    Bitcoin's merkle root of C{txids} (the last one doubled on odd levels).
    """
    if not txids:
        raise MalformedBitcoinDataError("no transactions to build a merkle root from")
    level = list(txids)
    while len(level) > 1:
        if len(level) % 2:
            level.append(level[-1])
        level = [double_sha256(level[i] + level[i + 1]) for i in range(0, len(level), 2)]
    return level[0]
