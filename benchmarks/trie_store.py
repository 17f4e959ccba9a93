"""
Benchmark of the trie and the store, beside py-trie doing the same trie work.

Run by hand, briefly: C{python benchmarks/trie_store.py [accounts]}
(default 100,000).  Needs py-trie (C{pip install trie}, the C{bench} extra)
for the comparison; without it only nodex's figures are printed.

Trie: insert the random accounts (32-byte keys, 70-byte values) and commit;
then, in a trie reopened at that root, 1,000 updates of existing accounts and
a commit (a block's worth of state changes); then proofs per second.  Store:
random reads of header-sized values from a RocksDB store reopened cold.
"""

import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable

import rlp

from nodex.db.rocks import RocksStore
from nodex.db.schema import read_header_rlp, trie_node_reader, write_header_rlp, write_trie_nodes
from nodex.trie import HexaryTrie, make_proof
from nodex.trie.node_rlp import encode

try:
    from trie import HexaryTrie as PyTrie
except ImportError:  # py-trie is a benchmark-only dependency
    PyTrie = None


def accounts(count: int, seed: int) -> list[tuple[bytes, bytes]]:
    """
    C{count} random 32-byte keys with 70-byte values.
    """
    rng = random.Random(seed)
    return [(rng.randbytes(32), rng.randbytes(70)) for _ in range(count)]


def timed(work: Callable[[], object]) -> float:
    """
    Seconds that one call of C{work} takes.
    """
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def bench_nodex(
    pairs: list[tuple[bytes, bytes]], updates: list[tuple[bytes, bytes]]
) -> dict[str, float]:
    """
    The trie figures for nodex's L{HexaryTrie}.
    """
    nodes: dict[bytes, bytes] = {}
    trie = HexaryTrie(nodes.get)

    def insert() -> None:
        """
        Insert every account, then commit.
        """
        for key, value in pairs:
            trie.put(key, value)
        nodes.update(trie.commit())

    insert_seconds = timed(insert)
    root = trie.root_hash
    block = HexaryTrie(nodes.get, root)

    def update() -> None:
        """
        Apply the updates, then commit.
        """
        for key, value in updates:
            block.put(key, value)
        nodes.update(block.commit())

    update_seconds = timed(update)
    prover = HexaryTrie(nodes.get, root)
    probes = [key for key, _ in pairs[:2000]]
    proof_seconds = timed(lambda: [make_proof(prover, key) for key in probes])
    return {
        "insert": len(pairs) / insert_seconds,
        "update": update_seconds,
        "proofs": len(probes) / proof_seconds,
        "nodes": len(nodes),
    }


def bench_py_trie(
    pairs: list[tuple[bytes, bytes]], updates: list[tuple[bytes, bytes]]
) -> dict[str, float]:
    """
    The same trie figures for py-trie over a dict.  py-trie hashes and
    writes on every set, so there is no separate commit; plain sets measured
    faster than batching them with C{squash_changes}.
    """
    database: dict[bytes, bytes] = {}
    trie = PyTrie(database)

    def insert() -> None:
        """
        Insert every account, then commit.
        """
        for key, value in pairs:
            trie[key] = value

    insert_seconds = timed(insert)
    root = trie.root_hash
    block = PyTrie(database, root)

    def update() -> None:
        """
        Apply the updates, then commit.
        """
        for key, value in updates:
            block[key] = value

    update_seconds = timed(update)
    prover = PyTrie(database, root)
    probes = [key for key, _ in pairs[:2000]]
    proof_seconds = timed(lambda: [prover.get_proof(key) for key in probes])
    return {
        "insert": len(pairs) / insert_seconds,
        "update": update_seconds,
        "proofs": len(probes) / proof_seconds,
    }


def bench_branch_encoding() -> tuple[float, float]:
    """
    Microseconds to encode a full 17-item branch node with nodex's codec and with pyrlp.
    """
    branch = [os.urandom(32) for _ in range(16)] + [b""]
    rounds = 20000
    ours = timed(lambda: [encode(branch) for _ in range(rounds)])
    theirs = timed(lambda: [rlp.encode(branch) for _ in range(rounds)])
    return ours / rounds * 1e6, theirs / rounds * 1e6


def bench_store(count: int) -> dict[str, float]:
    """
    Header-sized (about 600 bytes) writes in 1,000-item batches, then random
    reads by hash from the store reopened cold.
    """
    directory = tempfile.mkdtemp(prefix="nodex-bench-")
    try:
        rng = random.Random(3)
        hashes = [rng.randbytes(32) for _ in range(count)]
        store = RocksStore.open(directory)

        def write() -> None:
            """
            Write every value in batches of 1,000.
            """
            for start in range(0, count, 1000):
                batch = store.batch()
                for block_hash in hashes[start : start + 1000]:
                    write_header_rlp(batch, block_hash, block_hash * 19)
                store.write(batch)

        write_seconds = timed(write)
        store.close()
        store = RocksStore.open(directory)
        probes = [rng.choice(hashes) for _ in range(50000)]
        read_seconds = timed(lambda: [read_header_rlp(store, block_hash) for block_hash in probes])
        store.close()
        return {"writes": count / write_seconds, "reads": len(probes) / read_seconds}
    finally:
        shutil.rmtree(directory)


def bench_block_over_rocksdb(
    pairs: list[tuple[bytes, bytes]], updates: list[tuple[bytes, bytes]]
) -> float:
    """
    Seconds for a block's state work over RocksDB: open the committed trie
    at its root in a store reopened cold, apply the updates, commit, and
    write the new nodes in one batch.
    """
    directory = tempfile.mkdtemp(prefix="nodex-bench-")
    try:
        store = RocksStore.open(directory)
        trie = HexaryTrie(trie_node_reader(store))
        for key, value in pairs:
            trie.put(key, value)
        batch = store.batch()
        write_trie_nodes(batch, trie.commit())
        store.write(batch)
        root = trie.root_hash
        store.close()
        store = RocksStore.open(directory)

        def block() -> None:
            """
            One block: open at the root, update, commit, write.
            """
            trie = HexaryTrie(trie_node_reader(store), root)
            for key, value in updates:
                trie.put(key, value)
            batch = store.batch()
            write_trie_nodes(batch, trie.commit())
            store.write(batch)

        seconds = timed(block)
        store.close()
        return seconds
    finally:
        shutil.rmtree(directory)


def main(count: int) -> None:
    """
    Run every figure and print them.
    """
    pairs = accounts(count, 1)
    rng = random.Random(2)
    updates = [(key, rng.randbytes(70)) for key, _ in rng.sample(pairs, 1000)]
    ours = bench_nodex(pairs, updates)
    print(f"nodex   insert {count:,} + commit: {ours['insert']:,.0f} keys/s ({ours['nodes']:,.0f} nodes)")
    print(f"nodex   1,000 updates + commit: {ours['update'] * 1000:.1f} ms")
    print(f"nodex   proofs: {ours['proofs']:,.0f} /s")
    if PyTrie is not None:
        theirs = bench_py_trie(pairs, updates)
        print(f"py-trie insert {count:,}: {theirs['insert']:,.0f} keys/s")
        print(f"py-trie 1,000 updates: {theirs['update'] * 1000:.1f} ms")
        print(f"py-trie proofs: {theirs['proofs']:,.0f} /s")
        print(f"insert speed-up: {ours['insert'] / theirs['insert']:.1f}x")
    node_encode, pyrlp_encode = bench_branch_encoding()
    print(f"branch encode: nodex {node_encode:.1f} us, pyrlp {pyrlp_encode:.1f} us")
    block_seconds = bench_block_over_rocksdb(pairs, updates)
    print(f"nodex   1,000 updates + commit + write, nodes read from RocksDB: {block_seconds * 1000:.1f} ms")
    store = bench_store(count)
    print(f"rocksdb header writes (batches of 1,000): {store['writes']:,.0f} /s")
    print(f"rocksdb random header reads: {store['reads']:,.0f} /s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
