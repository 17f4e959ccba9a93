"""
Chain files (L4): canonical blocks as a stream of RLP-encoded blocks, one
after the other with nothing between them, the format geth's C{export} and
C{import} also use (an RLP list carries its own length).

L{write_blocks} writes such a stream; L{read_blocks} reads one back block
by block, reading only as much of the file as the next block needs, and
stops with a L{ChainFileError} that says where a truncated or garbled file
went wrong.
"""

from collections.abc import Iterable, Iterator
from typing import BinaryIO

from nodex.chain.errors import ChainError
from nodex.errors import NodexError
from nodex.structures.blocks import Block

MAX_BLOCK_BYTES = 64 * 1024 * 1024
"""The largest block a chain file may hold; a length beyond it is garbage."""

_READ_SIZE = 1 << 20


class ChainFileError(ChainError):
    """
    A chain file cannot be read on: truncated, garbled, or a block that does not decode.

    @ivar offset: the byte offset of the block that could not be read.
    @ivar index: how many whole blocks came before it.
    """

    def __init__(self, message: str, offset: int, index: int) -> None:
        super().__init__(message)
        self.offset = offset
        self.index = index


def write_blocks(out: BinaryIO, blocks: Iterable[Block]) -> int:
    """
    Write C{blocks} to C{out} as a chain file.

    @return: how many blocks were written.
    """
    count = 0
    for block in blocks:
        out.write(block.encode())
        count += 1
    return count


def _list_length(prefix: bytes) -> tuple[int, int] | None:
    """
    The header size and payload length of the RLP list that C{prefix}
    starts, or L{None} when more bytes are needed to know.

    @raise ValueError: the first byte does not start a list.
    """
    first = prefix[0]
    if first < 0xC0:
        raise ValueError(f"byte 0x{first:02x} does not start an RLP list")
    if first <= 0xF7:
        return 1, first - 0xC0
    size = first - 0xF7
    if len(prefix) < 1 + size:
        return None
    if prefix[1] == 0:
        raise ValueError("an RLP length with a leading zero")
    return 1 + size, int.from_bytes(prefix[1 : 1 + size], "big")


def read_blocks(source: BinaryIO) -> Iterator[tuple[Block, int]]:
    """
    The blocks of a chain file, in file order, each with the byte offset
    just after it (for progress).

    @raise ChainFileError: the file is truncated or holds something that is
        not a block (raised when the reader reaches it: every block before
        it has been yielded).
    """
    buffer = b""
    position = 0
    offset = 0
    index = 0
    ended = False
    while True:
        available = len(buffer) - position
        if not available and ended:
            return
        needed = None
        if available:
            try:
                found = _list_length(buffer[position : position + 9])
            except ValueError as exc:
                raise ChainFileError(f"garbage at byte {offset}: {exc}", offset, index) from None
            if found is not None:
                header_size, length = found
                if length > MAX_BLOCK_BYTES:
                    raise ChainFileError(
                        f"garbage at byte {offset}: a block of {length} bytes (at most {MAX_BLOCK_BYTES})",
                        offset,
                        index,
                    )
                needed = header_size + length
        if needed is not None and available >= needed:
            raw = buffer[position : position + needed]
            try:
                block = Block.decode(raw)
            except NodexError as exc:
                raise ChainFileError(
                    f"block {index} of the file (byte {offset}) does not decode: {exc}", offset, index
                ) from None
            position += needed
            offset += needed
            index += 1
            yield block, offset
            continue
        if ended:
            raise ChainFileError(
                f"the file is truncated: block {index} (byte {offset}) needs"
                f" {needed if needed is not None else 'more'} bytes, {available} remain",
                offset,
                index,
            )
        chunk = source.read(max(_READ_SIZE, (needed or 0) - available))
        if not chunk:
            ended = True
        buffer = buffer[position:] + chunk
        position = 0


__all__ = ["ChainFileError", "MAX_BLOCK_BYTES", "read_blocks", "write_blocks"]
