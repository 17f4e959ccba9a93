"""
Bitcoin blocks built by hand for the merged-mining tests: coinbases with the
tag wherever a test wants it, ordinary transactions, headers mined to a
target.  Nothing here comes from the code under test except the varint
encoding and hashing helpers, which have their own tests.
"""

import hashlib
import os

from nodex.chain.seal.bitcoin import encode_varint
from nodex.chain.seal.pow import MERGED_MINING_TAG


def double_sha256(data: bytes) -> bytes:
    """
    Bitcoin's hash.
    """
    return hashlib.sha256(hashlib.sha256(data).digest()).digest()


def coinbase(commitment: bytes, prefix: bytes = b"", suffix: bytes = b"", input_script: bytes = b"\x03\x01\x02\x03") -> bytes:
    """
    A coinbase: one input spending nothing, a 50 BTC output, and an
    OP_RETURN output whose script is C{prefix ‖ commitment ‖ suffix}.

    @param commitment: usually C{TAG ‖ hashForMergedMining}.
    """
    script = b"\x6a" + prefix + commitment + suffix
    return (
        (1).to_bytes(4, "little")
        + encode_varint(1)
        + b"\x00" * 32
        + b"\xff\xff\xff\xff"
        + encode_varint(len(input_script))
        + input_script
        + b"\xff\xff\xff\xff"
        + encode_varint(2)
        + (50 * 10**8).to_bytes(8, "little")
        + encode_varint(25)
        + b"\x76\xa9\x14" + b"\x11" * 20 + b"\x88\xac"
        + (0).to_bytes(8, "little")
        + encode_varint(len(script))
        + script
        + (0).to_bytes(4, "little")
    )


def tagged_coinbase(hash_for_merged_mining: bytes, **kwargs: bytes) -> bytes:
    """
    A coinbase committing to C{hash_for_merged_mining}.
    """
    return coinbase(MERGED_MINING_TAG + hash_for_merged_mining, **kwargs)


def transaction(seed: int) -> bytes:
    """
    An ordinary one-input, one-output transaction, different for each C{seed}.
    """
    return (
        (2).to_bytes(4, "little")
        + encode_varint(1)
        + seed.to_bytes(32, "little")
        + (0).to_bytes(4, "little")
        + encode_varint(0)
        + b"\xfe\xff\xff\xff"
        + encode_varint(1)
        + (1000 + seed).to_bytes(8, "little")
        + encode_varint(22)
        + b"\x00\x14" + seed.to_bytes(20, "big")
        + (0).to_bytes(4, "little")
    )


def merkle_root(ids: list[bytes]) -> bytes:
    """
    Bitcoin's merkle root of transaction ids (internal order), written
    independently of L{nodex.chain.seal.bitcoin.merkle_root}.
    """
    level = ids
    while len(level) > 1:
        if len(level) % 2:
            level = level + level[-1:]
        level = [double_sha256(level[i] + level[i + 1]) for i in range(0, len(level), 2)]
    return level[0]


def mined_header(root: bytes, target: int, start: int = 0) -> bytes:
    """
    An 80-byte header with merkle root C{root} whose hash is at most C{target}.
    """
    previous = os.urandom(32)
    for nonce in range(start, start + 10_000_000):
        header = (
            (0x20000000).to_bytes(4, "little")
            + previous
            + root
            + (1_700_000_000).to_bytes(4, "little")
            + (0x207FFFFF).to_bytes(4, "little")
            + nonce.to_bytes(4, "little")
        )
        if int.from_bytes(double_sha256(header), "little") <= target:
            return header
    raise AssertionError("no nonce found")


def unmined_header(root: bytes, target: int) -> bytes:
    """
    An 80-byte header with merkle root C{root} whose hash is I{above} C{target}.
    """
    for nonce in range(10_000):
        header = (0x20000000).to_bytes(4, "little") + b"\x00" * 32 + root + b"\x00" * 8 + nonce.to_bytes(4, "little")
        if int.from_bytes(double_sha256(header), "little") > target:
            return header
    raise AssertionError("every header met the target")


def block(header: bytes, transactions: list[bytes]) -> bytes:
    """
    A serialised Bitcoin block.
    """
    return header + encode_varint(len(transactions)) + b"".join(transactions)


def mined_block(coinbase_tx: bytes, others: int, target: int) -> tuple[bytes, bytes, list[bytes]]:
    """
    A block of C{coinbase_tx} and C{others} ordinary transactions, mined to C{target}.

    @return: the serialised block, its header and its transaction ids (internal order).
    """
    transactions = [coinbase_tx] + [transaction(seed + 1) for seed in range(others)]
    ids = [double_sha256(tx) for tx in transactions]
    header = mined_header(merkle_root(ids), target)
    return block(header, transactions), header, ids


def branch(ids: list[bytes]) -> list[bytes]:
    """
    The siblings of the first leaf, bottom-up (internal order).
    """
    siblings = []
    level = ids
    while len(level) > 1:
        if len(level) % 2:
            level = level + level[-1:]
        siblings.append(level[1])
        level = [double_sha256(level[i] + level[i + 1]) for i in range(0, len(level), 2)]
    return siblings
