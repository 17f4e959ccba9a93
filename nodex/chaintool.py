"""
The offline chain tools (L7): C{nodex export} and C{nodex import}.

C{nodex export FILE [--from N --to M]} writes the canonical blocks of a data
directory as a chain file (L{nodex.chain.chainfile}); C{nodex import FILE}
imports one through the same door as every other block
(L{nodex.chain.importer.BlockImporter}), each block in its own atomic batch,
with a progress line a second.  Both take the node's C{--network},
C{--datadir} and C{--config}, and refuse a data directory that a running
node holds (RocksDB's lock).  An import stopped for any reason (a bad block,
a truncated file, C{kill -9}) keeps every block before the stop, and run
again it goes on where it left off: the blocks already stored are passed
over.

These run without a reactor: nothing else shares the store while they work.
"""

import argparse
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, BinaryIO, NoReturn

from nodex.chain.chainfile import ChainFileError, read_blocks, write_blocks
from nodex.chain.genesis import genesis_spec_from_mapping, initialize_chain
from nodex.chain.aside import FILE
from nodex.chain.importer import BlockImporter, ImportResult, read_head
from nodex.chain.networks import chain_rules
from nodex.config import ConfigError, NodeConfig, load_config
from nodex.db.kv import KeyValueStore
from nodex.db.rocks import RocksStore
from nodex.db.schema import CHAIN_DIRECTORY, read_body_rlp, read_canonical_hash, read_header_rlp
from nodex.errors import NodexError
from nodex.structures.blocks import Block
from nodex.structures.headers import Header

PROGRESS_INTERVAL = 1.0
"""Seconds between two progress lines of an import."""


class ImportStoppedError(NodexError):
    """
    An import stopped before the end of the file; the blocks before the stop are kept.
    """


@dataclass
class ImportReport:
    """
    What an import did.

    @ivar imported: blocks stored by this run.
    @ivar known: blocks of the file already stored (a resumed import), genesis included.
    @ivar head: the number of the last block of the file stored or known.
    """

    imported: int = 0
    known: int = 0
    head: int = 0


class UsageError(NodexError):
    """
    The command line of a tool is wrong.
    """


class _Parser(argparse.ArgumentParser):
    """
    An argument parser that raises L{UsageError} instead of exiting.
    """

    def error(self, message: str) -> NoReturn:
        """
        Raise the error for the caller to print.
        """
        raise UsageError(message)


def _parser(command: str, description: str) -> _Parser:
    """
    The parser of C{nodex COMMAND FILE} with the node's options.
    """
    parser = _Parser(prog=f"nodex {command}", description=description)
    parser.add_argument("file", help="the chain file")
    parser.add_argument("--network", help="regtest, devnet, testnet or main [default: regtest]")
    parser.add_argument("--datadir", help="data directory [default: ~/.nodex/<network>]")
    parser.add_argument("--config", help="TOML configuration file laid over the network preset")
    return parser


EXPORT_PARSER = _parser("export", "Write the canonical blocks of a data directory as a chain file.")
EXPORT_PARSER.add_argument("--from", dest="first", type=int, default=0, help="first block [default: 0]")
EXPORT_PARSER.add_argument("--to", dest="last", type=int, default=None, help="last block [default: the head]")
IMPORT_PARSER = _parser("import", "Import a chain file into a data directory, resuming where an import stopped.")


def parse(parser: _Parser, argv: Sequence[str]) -> tuple[argparse.Namespace, NodeConfig]:
    """
    The arguments and the effective configuration of a command line.

    @raise UsageError: bad arguments, or a bad configuration.
    """
    arguments = parser.parse_args(list(argv))
    layer = {key: getattr(arguments, key) for key in ("network", "datadir") if getattr(arguments, key) is not None}
    try:
        return arguments, load_config(arguments.config, layer)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


def open_chain(config: NodeConfig) -> KeyValueStore:
    """
    Open the chain database of a configuration, writing its genesis if it
    has none (an import into a fresh data directory).

    @raise NodexError: the directory is held by a running node, or holds
        another network's chain.
    """
    config.datadir.mkdir(mode=0o700, parents=True, exist_ok=True)
    store = RocksStore.open(str(config.datadir / CHAIN_DIRECTORY))
    try:
        initialize_chain(store, config.network, genesis_spec_from_mapping(config.genesis))
    except BaseException:
        store.close()
        raise
    return store


def canonical_blocks(store: KeyValueStore, first: int, last: int) -> Iterator[Block]:
    """
    The canonical blocks C{first} to C{last}, read one at a time.

    @raise ImportStoppedError: a block of the range is missing.
    """
    for number in range(first, last + 1):
        block_hash = read_canonical_hash(store, number)
        header_rlp = None if block_hash is None else read_header_rlp(store, block_hash)
        body = None if block_hash is None else read_body_rlp(store, block_hash)
        if block_hash is None or header_rlp is None or body is None:
            raise ImportStoppedError(f"the data directory has no canonical block {number}")
        yield Block.from_body(Header.decode(header_rlp), body)


def _stored_header(store: KeyValueStore, block_hash: bytes) -> Header | None:
    """
    A stored header by hash, or L{None}.
    """
    raw = read_header_rlp(store, block_hash)
    return None if raw is None else Header.decode(raw)


def export_chain(store: KeyValueStore, out: BinaryIO, first: int, last: int | None) -> int:
    """
    Write the canonical blocks C{first} to C{last} (the head when L{None}).

    @return: how many blocks were written.
    @raise ImportStoppedError: the range is outside the chain.
    """
    head = read_head(store, lambda block_hash: _stored_header(store, block_hash)).header.number
    last = head if last is None else last
    if first < 0 or last < first or last > head:
        raise ImportStoppedError(f"cannot export blocks {first} to {last}: the chain holds blocks 0 to {head}")
    return write_blocks(out, canonical_blocks(store, first, last))


def import_chain(
    importer: BlockImporter,
    source: BinaryIO,
    size: int | None = None,
    progress: Callable[[str], None] = lambda line: None,
    clock: Callable[[], float] = time.monotonic,
) -> ImportReport:
    """
    Import a chain file through C{importer}, block by block.

    @param size: the file's size in bytes, for the estimate of the time left.
    @param progress: receives a progress line about every L{PROGRESS_INTERVAL} seconds.
    @raise ImportStoppedError: a block is refused, the file is bad, or it
        belongs to another chain; the message names the block and the
        reason, and every block before it is stored.
    """
    store = importer.store
    report = ImportReport()
    genesis_hash = read_canonical_hash(store, 0)
    started = last_line = clock()
    try:
        for block, offset in read_blocks(source):
            number = block.number
            if number == 0:
                if block.hash != genesis_hash:
                    raise ImportStoppedError(
                        f"the file holds another chain: its genesis is 0x{block.hash.hex()}, this data"
                        f" directory's is 0x{genesis_hash.hex() if genesis_hash else '?'} (another --network?)"
                    )
                report.known += 1
                continue
            if read_header_rlp(store, block.hash) is not None:
                report.known += 1
                report.head = number
                continue
            step = importer.import_blocks([block], None, FILE)[0]
            if step.result is ImportResult.NO_PARENT:
                raise ImportStoppedError(
                    f"block {number} 0x{block.hash.hex()}: its parent 0x{block.header.parent_hash.hex()} is not"
                    " in the data directory (a file of another network, or one that starts later than this chain)"
                )
            if step.result is ImportResult.INVALID_BLOCK:
                raise ImportStoppedError(f"block {number} 0x{block.hash.hex()} is invalid: {step.reason}")
            report.imported += 1
            report.head = number
            now = clock()
            if now - last_line >= PROGRESS_INTERVAL:
                last_line = now
                progress(progress_line(report, offset, size, now - started))
    except ChainFileError as exc:
        raise ImportStoppedError(f"after block {report.head}: {exc}") from exc
    finally:
        catch_up_logs(importer)
    return report


def catch_up_logs(importer: BlockImporter) -> None:
    """
    Bring the log index's bitmaps up to the imported head.
    """
    while importer.index_logs(force=True):
        pass


def progress_line(report: ImportReport, offset: int, size: int | None, elapsed: float) -> str:
    """
    One progress line: the height, blocks, rate and the time left.
    """
    rate = report.imported / elapsed if elapsed > 0 else 0.0
    line = f"imported block {report.head} ({report.imported} blocks, {rate:,.0f} blocks/s"
    if size and offset:
        left = elapsed * (size - offset) / offset
        line += f", {100 * offset / size:.0f}% of the file, ETA {left:.0f}s"
    return line + ")"


def run_export(argv: Sequence[str], stdout: IO[str] = sys.stdout, stderr: IO[str] = sys.stderr) -> int:
    """
    C{nodex export}: the exit status (0 done, 1 failed, 2 bad options).
    """
    try:
        arguments, config = parse(EXPORT_PARSER, argv)
    except UsageError as exc:
        stderr.write(f"nodex export: {exc}\n")
        return 2
    try:
        store = RocksStore.open(str(config.datadir / CHAIN_DIRECTORY))
    except NodexError as exc:
        stderr.write(f"nodex export: cannot open the data directory: {exc}\n")
        return 1
    try:
        with open(arguments.file, "wb") as out:
            count = export_chain(store, out, arguments.first, arguments.last)
    except (NodexError, OSError) as exc:
        stderr.write(f"nodex export: {exc}\n")
        return 1
    finally:
        store.close()
    stdout.write(f"exported {count} blocks to {arguments.file}\n")
    return 0


def run_import(argv: Sequence[str], stdout: IO[str] = sys.stdout, stderr: IO[str] = sys.stderr) -> int:
    """
    C{nodex import}: the exit status (0 done, 1 stopped, 2 bad options).
    """
    try:
        arguments, config = parse(IMPORT_PARSER, argv)
    except UsageError as exc:
        stderr.write(f"nodex import: {exc}\n")
        return 2
    path = Path(arguments.file)
    try:
        source = path.open("rb")
    except OSError as exc:
        stderr.write(f"nodex import: cannot read {path}: {exc.strerror}\n")
        return 1
    try:
        store = open_chain(config)
    except NodexError as exc:
        source.close()
        stderr.write(f"nodex import: cannot open the data directory: {exc}\n")
        return 1
    try:
        importer = BlockImporter(store, chain_rules(config.network, config.chain_id))
        report = import_chain(
            importer, source, path.stat().st_size, lambda line: (stderr.write(line + "\n"), stderr.flush())
        )
    except NodexError as exc:
        stderr.write(f"nodex import: stopped at {exc}; the blocks before it are kept\n")
        return 1
    finally:
        source.close()
        store.close()
    stdout.write(
        f"imported {report.imported} blocks ({report.known} already known); the head is block {report.head}\n"
    )
    return 0


__all__ = [
    "EXPORT_PARSER",
    "IMPORT_PARSER",
    "ImportReport",
    "ImportStoppedError",
    "export_chain",
    "import_chain",
    "open_chain",
    "progress_line",
    "run_export",
    "run_import",
    "UsageError",
]
