"""
Tests for L{nodex.chaintool}: C{nodex export} and C{nodex import}, on
RocksDB data directories, run as a user runs them.
"""

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from twisted.trial.unittest import SynchronousTestCase

from nodex.chain.importer import BlockImporter, read_head
from nodex.chain.networks import chain_rules
from nodex.chain.chainfile import read_blocks
from nodex.chaintool import open_chain, run_export, run_import
from nodex.config import load_config
from nodex.db.rocks import RocksStore
from nodex.db.schema import CHAIN_DIRECTORY, read_canonical_hash, read_header_rlp, read_receipts_rlp
from nodex.structures.headers import Header
from tests.chain.chainmaker import make_blocks


def regtest_config(datadir: str, network: str = "regtest"):  # type: ignore[no-untyped-def]
    """
    The configuration of a data directory.
    """
    return load_config(None, {"network": network, "datadir": datadir})


def make_datadir(datadir: str, count: int, transfers: int) -> None:
    """
    A regtest data directory holding C{count} blocks of C{transfers} transfers.
    """
    store = open_chain(regtest_config(datadir))
    try:
        make_blocks(BlockImporter(store, chain_rules("regtest", 33)), count, transfers)
    finally:
        store.close()


def chain_summary(datadir: str) -> list[tuple[bytes, bytes, bytes]]:
    """
    Each canonical block's hash, state root and receipts, from a data directory.
    """
    store = RocksStore.open(str(Path(datadir) / CHAIN_DIRECTORY))
    try:
        head = read_head(store, lambda h: Header.decode(read_header_rlp(store, h))).header.number
        summary = []
        for number in range(head + 1):
            block_hash = read_canonical_hash(store, number)
            header = Header.decode(read_header_rlp(store, block_hash))
            summary.append((block_hash, header.state_root, read_receipts_rlp(store, block_hash)))
        return summary
    finally:
        store.close()


class ChainToolTests(SynchronousTestCase):
    """
    Export and import between data directories.
    """

    def setUp(self) -> None:
        """
        A source data directory of 30 blocks with 3 transfers each, exported to a file.
        """
        self.source = self.mktemp()
        make_datadir(self.source, 30, 3)
        self.file = self.mktemp()
        out = io.StringIO()
        self.assertEqual(run_export([self.file, "--datadir", self.source], out, io.StringIO()), 0)
        self.assertIn("exported 31 blocks", out.getvalue())

    def run_import(self, datadir: str, *extra: str, path: str | None = None) -> tuple[int, str, str]:
        """
        Run C{nodex import}; its status, output and errors.
        """
        out, err = io.StringIO(), io.StringIO()
        status = run_import([path or self.file, "--datadir", datadir, *extra], out, err)
        return status, out.getvalue(), err.getvalue()

    def test_round_trip(self) -> None:
        """
        Importing the export into a fresh data directory gives the same
        blocks, state roots and receipts.
        """
        target = self.mktemp()
        status, out, err = self.run_import(target)
        self.assertEqual((status, err), (0, ""))
        self.assertIn("imported 30 blocks (1 already known); the head is block 30", out)
        self.assertEqual(chain_summary(target), chain_summary(self.source))

    def test_resume(self) -> None:
        """
        An import of a truncated file stops at its last whole block, keeping
        it; the whole file imported later goes on from there.
        """
        data = Path(self.file).read_bytes()
        cut = self.mktemp()
        Path(cut).write_bytes(data[: len(data) * 2 // 3])
        target = self.mktemp()
        status, _out, err = self.run_import(target, path=cut)
        self.assertEqual(status, 1)
        self.assertIn("truncated", err)
        self.assertIn("the blocks before it are kept", err)
        partial = chain_summary(target)
        self.assertGreater(len(partial), 1)
        status, out, _err = self.run_import(target)
        self.assertEqual(status, 0)
        self.assertIn(f"({len(partial)} already known)", out)
        self.assertEqual(chain_summary(target), chain_summary(self.source))

    def test_export_range(self) -> None:
        """
        --from and --to export part of the chain; a range beyond the head is refused.
        """
        part = self.mktemp()
        out = io.StringIO()
        self.assertEqual(run_export([part, "--datadir", self.source, "--from", "0", "--to", "9"], out, io.StringIO()), 0)
        self.assertIn("exported 10 blocks", out.getvalue())
        err = io.StringIO()
        self.assertEqual(run_export([part, "--datadir", self.source, "--to", "99"], io.StringIO(), err), 1)
        self.assertIn("the chain holds blocks 0 to 30", err.getvalue())

    def test_import_later_part_needs_parent(self) -> None:
        """
        A file that starts above a fresh data directory's head is refused,
        naming the first block and its missing parent.
        """
        part = self.mktemp()
        run_export([part, "--datadir", self.source, "--from", "10"], io.StringIO(), io.StringIO())
        status, _out, err = self.run_import(self.mktemp(), path=part)
        self.assertEqual(status, 1)
        self.assertIn("block 10", err)
        self.assertIn("parent", err)

    def test_other_network_refused(self) -> None:
        """
        A regtest file imported into a devnet data directory is refused with
        a clear message, and nothing is imported.
        """
        target = self.mktemp()
        status, _out, err = self.run_import(target, "--network", "devnet")
        self.assertEqual(status, 1)
        self.assertIn("another chain", err)
        self.assertEqual(len(chain_summary(target)), 1)

    def test_bad_block_stops_at_last_good(self) -> None:
        """
        A file whose tenth block is corrupted stops the import there with a
        message naming the block; the nine before it are kept.
        """
        data = bytearray(Path(self.file).read_bytes())
        offsets = [0] + [end for _block, end in read_blocks(io.BytesIO(bytes(data)))]
        # Change a byte inside block 10's transactions (its signature), keeping the RLP shape.
        data[offsets[11] - 5] ^= 0x01
        bad = self.mktemp()
        Path(bad).write_bytes(bytes(data))
        target = self.mktemp()
        status, _out, err = self.run_import(target, path=bad)
        self.assertEqual(status, 1)
        self.assertIn("block 10", err)
        self.assertEqual(len(chain_summary(target)), 10)

    def test_running_node_refused(self) -> None:
        """
        A data directory another process holds (a running node) is refused.
        """
        store = RocksStore.open(str(Path(self.source) / CHAIN_DIRECTORY))
        self.addCleanup(store.close)
        status, _out, err = self.run_import(self.source)
        self.assertEqual(status, 1)
        self.assertIn("cannot open the data directory", err)
        err = io.StringIO()
        self.assertEqual(run_export([self.mktemp(), "--datadir", self.source], io.StringIO(), err), 1)
        self.assertIn("cannot open the data directory", err.getvalue())

    def test_bad_options(self) -> None:
        """
        Missing files and unknown options answer a usage error (status 2).
        """
        err = io.StringIO()
        self.assertEqual(run_import([], io.StringIO(), err), 2)
        self.assertIn("nodex import:", err.getvalue())
        self.assertEqual(run_export([self.file, "--bogus"], io.StringIO(), io.StringIO()), 2)
        status, _out, err_text = self.run_import(self.mktemp(), path=self.mktemp())
        self.assertEqual(status, 1)
        self.assertIn("cannot read", err_text)


IMPORT_SCRIPT = "import sys; from nodex.chaintool import run_import; sys.exit(run_import(sys.argv[1:]))"


class KilledImportTests(SynchronousTestCase):
    """
    C{kill -9} during an import leaves whole blocks, and the import resumes.
    """

    def test_kill_and_resume(self) -> None:
        """
        An import of 5,000 blocks killed with SIGKILL mid-way keeps a prefix
        of whole blocks; run again, it ends with the same chain as the source.
        """
        source = self.mktemp()
        make_datadir(source, 5000, 1)
        chain_file = self.mktemp()
        self.assertEqual(run_export([chain_file, "--datadir", source], io.StringIO(), io.StringIO()), 0)
        target = self.mktemp()
        process = subprocess.Popen(
            [sys.executable, "-c", IMPORT_SCRIPT, chain_file, "--datadir", target],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", "")},
        )
        assert process.stderr is not None
        deadline = time.monotonic() + 120
        # The first progress line comes after a second of importing.
        line = process.stderr.readline()
        self.assertTrue(line.startswith(b"imported block"), line)
        self.assertLess(time.monotonic(), deadline)
        process.send_signal(signal.SIGKILL)
        process.wait()
        process.stdout.close()
        process.stderr.close()
        partial = chain_summary(target)
        self.assertGreater(len(partial), 1)
        self.assertLess(len(partial), 5001)
        self.assertEqual(partial, chain_summary(source)[: len(partial)])
        out = io.StringIO()
        self.assertEqual(run_import([chain_file, "--datadir", target], out, io.StringIO()), 0)
        self.assertEqual(chain_summary(target), chain_summary(source))
