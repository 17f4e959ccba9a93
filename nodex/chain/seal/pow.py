"""
The merged-mining proof of work: building and checking a block's seal.

A nodex block is sealed by a Bitcoin block (DESIGN §2, reference §12): the
Bitcoin coinbase transaction carries the tag C{NDXBLOCK:} followed by the
nodex header's hashForMergedMining, a merkle proof links that coinbase to the
Bitcoin header's merkle root, and the Bitcoin header's double SHA-256 must not
exceed 2^256 / difficulty. The three pieces are the header's last three fields.

The coinbase is always stored compressed (reference §12.4): the SHA-256 state
after the whole 64-byte blocks that precede the tag, then the rest of the
transaction. Merkle proof entries are in Bitcoin's internal byte order.

The canonical template (used by the built-in miner and by
C{eth_getWork}/C{eth_submitWork}) is a one-transaction Bitcoin block whose
8-byte nonce fills the header's time and nonce fields; see C{docs/mining.md}.
"""

import hashlib
from dataclasses import dataclass
from typing import Callable, Iterable

from nodex.chain.seal import sha256state
from nodex.chain.seal.bitcoin import HEADER_SIZE, encode_varint, header_merkle_root, txid
from nodex.chain.errors import InvalidSealError
from nodex.crypto import double_sha256, sha256
from nodex.primitives import UINT256_CEILING, direct_init

MERGED_MINING_TAG = b"NDXBLOCK:"
"""The 9-byte marker that precedes hashForMergedMining in the Bitcoin coinbase."""

MAX_BYTES_AFTER_COMMITMENT = 128
"""At most this many coinbase bytes may follow the committed hash (reference §12.3)."""

MAX_MERKLE_PROOF_SIZE = 960
"""At most 30 levels of 32-byte siblings."""

MIN_COUNTED_DIFFICULTY = 3
"""Difficulties of 1 and 2 count as 3 for the target, as the reference does."""

TEMPLATE_BITS = 0x207FFFFF
"""The template header's nBits: Bitcoin regtest's easiest target (informational only)."""

TEMPLATE_VERSION = 0x20000000


@direct_init
@dataclass(frozen=True)
class Seal:
    """
    The three merged-mining fields of a header.

    @ivar bitcoin_header: the 80-byte Bitcoin header.
    @ivar merkle_proof: concatenated 32-byte siblings, coinbase the left-most leaf.
    @ivar coinbase: the compressed coinbase transaction.
    """

    bitcoin_header: bytes
    merkle_proof: bytes
    coinbase: bytes


def seal_target(difficulty: int) -> int:
    """
    The largest Bitcoin header hash (as an integer) that seals a block of C{difficulty}.
    """
    if difficulty <= 0:
        raise InvalidSealError(f"difficulty must be positive, not {difficulty}")
    return UINT256_CEILING // max(difficulty, MIN_COUNTED_DIFFICULTY)


def bitcoin_work_value(bitcoin_header: bytes) -> int:
    """
    The Bitcoin header's double SHA-256 read as a number, in display byte order.
    """
    return int.from_bytes(double_sha256(bitcoin_header), "little")


def compress_coinbase(coinbase: bytes) -> bytes:
    """
    The stored form of a coinbase transaction: mid-state count, state, tail.

    @raise InvalidSealError: the coinbase does not contain the tag.
    """
    position = coinbase.rfind(MERGED_MINING_TAG)
    if position < 0:
        raise InvalidSealError("the Bitcoin coinbase does not contain the merged-mining tag")
    boundary = position - position % 64
    state = sha256state.midstate(coinbase[:boundary])
    return boundary.to_bytes(8, "big") + sha256state.state_to_bytes(state) + coinbase[boundary:]


def _split_compressed(coinbase: bytes) -> tuple[int, tuple[int, ...], bytes]:
    if len(coinbase) < 40:
        raise InvalidSealError(f"compressed coinbase of {len(coinbase)} bytes is shorter than 40")
    absorbed = int.from_bytes(coinbase[:8], "big")
    if absorbed % 64:
        raise InvalidSealError(f"compressed coinbase mid-state count {absorbed} is not a multiple of 64")
    return absorbed, sha256state.state_from_bytes(coinbase[8:40]), coinbase[40:]


def compressed_coinbase_txid(coinbase: bytes) -> bytes:
    """
    The Bitcoin txid (internal byte order) of a compressed coinbase.

    @raise InvalidSealError: the compressed form is malformed.
    """
    absorbed, state, tail = _split_compressed(coinbase)
    if absorbed == 0 and state == sha256state.INITIAL_STATE:
        # Nothing was absorbed: the tail is the whole transaction, and hashlib
        # hashes it some hundred times faster than the pure-Python rounds.
        return double_sha256(tail)
    return sha256(sha256state.finish(state, absorbed, tail))


def check_coinbase_commitment(coinbase: bytes, hash_for_merged_mining: bytes) -> None:
    """
    Check that a compressed coinbase commits to C{hash_for_merged_mining} (reference §12.3).

    @raise InvalidSealError: the tag is missing or misplaced, the hash differs,
        too many bytes follow it, or the transaction is too short.
    """
    absorbed, _state, tail = _split_compressed(coinbase)
    if absorbed + len(tail) <= 64:
        raise InvalidSealError("the Bitcoin coinbase must be longer than 64 bytes")
    position = tail.rfind(MERGED_MINING_TAG)
    if position < 0:
        raise InvalidSealError("the Bitcoin coinbase does not contain the merged-mining tag")
    if position >= 64:
        raise InvalidSealError("the merged-mining tag is not in the coinbase's last SHA-256 blocks")
    start = position + len(MERGED_MINING_TAG)
    committed = tail[start : start + 32]
    if committed != hash_for_merged_mining:
        raise InvalidSealError(
            f"the Bitcoin coinbase commits to 0x{committed.hex()}, "
            f"not to hashForMergedMining 0x{hash_for_merged_mining.hex()}"
        )
    trailing = len(tail) - start - 32
    if trailing > MAX_BYTES_AFTER_COMMITMENT:
        raise InvalidSealError(
            f"{trailing} coinbase bytes follow the merged-mining hash, "
            f"at most {MAX_BYTES_AFTER_COMMITMENT} are allowed"
        )


def _looks_like_transaction(pair: bytes) -> bool:
    """
    Whether 64 bytes parse as a one-input, one-output Bitcoin transaction.

    A 64-byte transaction hashes like an inner merkle node, which would let a
    miner pass a transaction off as two siblings; such pairs are refused.
    """
    if pair[4] != 1:
        return False
    script = pair[41]
    if script > 4 or pair[46 + script] != 1:
        return False
    return pair[55 + script] == 4 - script


def merkle_proof_root(leaf: bytes, proof: bytes) -> bytes:
    """
    Follow a merkle proof up from C{leaf}, which is the left child at every level.

    @raise InvalidSealError: the proof is malformed, too long or ambiguous.
    """
    if len(proof) % 32:
        raise InvalidSealError(f"merkle proof of {len(proof)} bytes is not a multiple of 32")
    if len(proof) > MAX_MERKLE_PROOF_SIZE:
        raise InvalidSealError(f"merkle proof of {len(proof)} bytes exceeds {MAX_MERKLE_PROOF_SIZE}")
    node = leaf
    for offset in range(0, len(proof), 32):
        pair = node + proof[offset : offset + 32]
        if _looks_like_transaction(pair):
            raise InvalidSealError("merkle proof node could be read as a 64-byte transaction")
        node = double_sha256(pair)
    return node


def check_seal(hash_for_merged_mining: bytes, difficulty: int, seal: Seal) -> None:
    """
    Check a block's merged-mining seal (reference §12.5).

    @raise InvalidSealError: any part of the seal is malformed or the work is too little.
    """
    if len(seal.bitcoin_header) != HEADER_SIZE:
        raise InvalidSealError(f"the Bitcoin header has {len(seal.bitcoin_header)} bytes, not {HEADER_SIZE}")
    if bitcoin_work_value(seal.bitcoin_header) > seal_target(difficulty):
        raise InvalidSealError(f"the Bitcoin header's hash does not meet difficulty {difficulty}")
    check_coinbase_commitment(seal.coinbase, hash_for_merged_mining)
    root = merkle_proof_root(compressed_coinbase_txid(seal.coinbase), seal.merkle_proof)
    if root != header_merkle_root(seal.bitcoin_header):
        raise InvalidSealError("the merkle proof does not lead to the Bitcoin header's merkle root")


def template_coinbase(hash_for_merged_mining: bytes) -> bytes:
    """
    The canonical template's coinbase: one input, one zero-value OP_RETURN
    output carrying the tag and C{hash_for_merged_mining}.
    """
    commitment = MERGED_MINING_TAG + hash_for_merged_mining
    script = b"\x6a" + bytes([len(commitment)]) + commitment
    return (
        (1).to_bytes(4, "little")
        + encode_varint(1)
        + b"\x00" * 32
        + b"\xff\xff\xff\xff"
        + encode_varint(1)
        + b"\x00"
        + b"\xff\xff\xff\xff"
        + encode_varint(1)
        + (0).to_bytes(8, "little")
        + encode_varint(len(script))
        + script
        + (0).to_bytes(4, "little")
    )


def template_seal(hash_for_merged_mining: bytes, nonce: bytes) -> Seal:
    """
    The seal the canonical template gives with an 8-byte C{nonce}.

    The nonce's first four bytes become the Bitcoin header's time field and
    its last four the header's nonce field.
    """
    if len(nonce) != 8:
        raise InvalidSealError(f"the template nonce has {len(nonce)} bytes, not 8")
    coinbase = template_coinbase(hash_for_merged_mining)
    header = (
        TEMPLATE_VERSION.to_bytes(4, "little")
        + b"\x00" * 32
        + txid(coinbase)
        + nonce[:4]
        + TEMPLATE_BITS.to_bytes(4, "little")
        + nonce[4:]
    )
    return Seal(header, b"", compress_coinbase(coinbase))


def _template_parts() -> tuple[bytes, bytes, bytes]:
    """
    The canonical template's coinbase before and after its 32-byte
    commitment, and what its compressed form puts before the coinbase.

    The tag sits in the coinbase's first 64 bytes, so the compressed form
    absorbs nothing: the same head (a zero count, SHA-256's initial state)
    whatever the hash committed to.
    """
    coinbase = template_coinbase(bytes(32))
    start = coinbase.rfind(MERGED_MINING_TAG) + len(MERGED_MINING_TAG)
    compressed = compress_coinbase(coinbase)
    assert compressed.endswith(coinbase), "the template's tag moved out of its first SHA-256 block"
    return coinbase[:start], coinbase[start + 32 :], compressed[: -len(coinbase)]


_TEMPLATE_HEAD, _TEMPLATE_TAIL, _TEMPLATE_COMPRESSED_HEAD = _template_parts()
_TEMPLATE_HEADER_HEAD = TEMPLATE_VERSION.to_bytes(4, "little") + b"\x00" * 32
"""The template header's version and (zero) previous block hash: its merkle root follows."""
_TEMPLATE_BITS = TEMPLATE_BITS.to_bytes(4, "little")


def solve(hash_for_merged_mining: bytes, difficulty: int, nonces: Iterable[int]) -> Seal | None:
    """
    Search the canonical template for a seal, trying each nonce in turn.

    Every automined block is sealed here (about three nonces at regtest's
    difficulty): the template coinbase around a 32-byte hash is two
    constant pieces, and the first 64 bytes of the template header do not
    change from nonce to nonce, so their SHA-256 state is computed once
    and copied (what L{search} does for the CPU miner's batches).

    @return: the first seal that meets C{difficulty}, or L{None} if none of the nonces does.
    """
    target = seal_target(difficulty)
    if len(hash_for_merged_mining) == 32:
        coinbase = _TEMPLATE_HEAD + hash_for_merged_mining + _TEMPLATE_TAIL
        compressed = _TEMPLATE_COMPRESSED_HEAD + coinbase
    else:
        coinbase = template_coinbase(hash_for_merged_mining)
        compressed = compress_coinbase(coinbase)
    root = txid(coinbase)
    prefix = _TEMPLATE_HEADER_HEAD + root
    first = hashlib.sha256(prefix[:64])
    tail = prefix[64:]
    sha256_ = hashlib.sha256
    from_bytes = int.from_bytes
    # The nonce's first four bytes (the header's time) change once every
    # 2**32 nonces: the bytes around them are made once per change.
    high: int | None = None
    head = b""
    for number in nonces:
        if number >> 32 != high:
            high = number >> 32
            head = tail + high.to_bytes(4, "big") + _TEMPLATE_BITS
        inner = first.copy()
        inner.update(head + (number & 0xFFFFFFFF).to_bytes(4, "big"))
        if from_bytes(sha256_(inner.digest()).digest(), "little") <= target:
            nonce = number.to_bytes(8, "big")
            return Seal(prefix + nonce[:4] + _TEMPLATE_BITS + nonce[4:], b"", compressed)
    return None


def search(
    hash_for_merged_mining: bytes,
    difficulty: int,
    start: int,
    count: int,
    stopped: Callable[[], bool] | None = None,
) -> tuple[Seal | None, int]:
    """
    Search C{count} template nonces from C{start} for a seal: the built-in
    CPU miner's batch.

    Same outcome as L{solve} over C{range(start, start + count)}, faster:
    the first 64 bytes of the template header never change, so their
    SHA-256 state is computed once and copied for every nonce.

    @param start: the first nonce, as an unsigned 64-bit number.
    @param stopped: asked every 4096 nonces; when it answers C{True} the
        search ends early (shutdown, a new head).
    @return: the seal found (or L{None}) and how many nonces were tried.
    """
    target = seal_target(difficulty)
    coinbase = template_coinbase(hash_for_merged_mining)
    root = txid(coinbase)
    prefix = TEMPLATE_VERSION.to_bytes(4, "little") + b"\x00" * 32 + root[:28]
    first = hashlib.sha256(prefix)
    bits = TEMPLATE_BITS.to_bytes(4, "little")
    tail_root = root[28:]
    sha256_ = hashlib.sha256
    from_bytes = int.from_bytes
    tried = 0
    end = min(start + count, 2**64)
    number = start
    while number < end:
        chunk_end = min(number + 4096, end, (number | 0xFFFFFFFF) + 1)
        high = (number >> 32).to_bytes(4, "big")
        head = tail_root + high + bits
        for low in range(number & 0xFFFFFFFF, (number & 0xFFFFFFFF) + (chunk_end - number)):
            inner = first.copy()
            inner.update(head + low.to_bytes(4, "big"))
            if from_bytes(sha256_(inner.digest()).digest(), "little") <= target:
                nonce = high + low.to_bytes(4, "big")
                tried += low - (number & 0xFFFFFFFF) + 1
                return template_seal(hash_for_merged_mining, nonce), tried
        tried += chunk_end - number
        number = chunk_end
        if stopped is not None and stopped():
            break
    return None, tried
