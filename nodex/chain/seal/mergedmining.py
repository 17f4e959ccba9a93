"""
Turning a merged miner's submission into a nodex seal (reference §3.5, §12).

A merged miner hands the node its Bitcoin work in one of three forms: the
whole serialised Bitcoin block; the 80-byte header, the coinbase and every
transaction id of the block; or the header, the coinbase and the merkle
branch of the coinbase.  Each becomes the same L{Seal}: the header, the
merkle proof (the coinbase's siblings bottom-up, internal byte order) and
the compressed coinbase.  L{committed_hash} reads which template the
coinbase commits to, so that the node can find the block to seal.

Byte orders: transaction ids in the C{txHashes} form come in display order
(reversed, as Bitcoin tools print them); merkle hashes in the
partial-merkle form come in internal order (the raw double SHA-256 output);
see C{docs/mining.md}.
"""

from collections.abc import Sequence

from nodex.chain.seal.bitcoin import HEADER_SIZE, merkle_branch, parse_block, read_transaction, txid
from nodex.chain.errors import InvalidSealError, MalformedBitcoinDataError
from nodex.chain.seal.partialmerkle import coinbase_branch
from nodex.chain.seal.pow import MAX_MERKLE_PROOF_SIZE, MERGED_MINING_TAG, Seal, compress_coinbase

MAX_COINBASE_SIZE = 64 * 1024
"""The largest coinbase transaction accepted (its mid-state is computed in pure Python)."""

MAX_TRANSACTION_IDS = 1 << 20
"""The most transaction ids a submission may list (a Bitcoin block holds far fewer)."""


class SubmissionError(InvalidSealError):
    """
    A merged-mining submission is malformed: truncated or oversized data,
    a coinbase without the tag, a transaction list that does not start with
    the coinbase, a branch of the wrong depth.
    """


def committed_hash(coinbase: bytes) -> bytes:
    """
    The 32 bytes after the last merged-mining tag of a coinbase: the
    hashForMergedMining the miner worked on.

    @raise SubmissionError: the tag is missing or not followed by 32 bytes.
    """
    position = coinbase.rfind(MERGED_MINING_TAG)
    if position < 0:
        raise SubmissionError("the Bitcoin coinbase does not contain the merged-mining tag NDXBLOCK:")
    start = position + len(MERGED_MINING_TAG)
    committed = coinbase[start : start + 32]
    if len(committed) != 32:
        raise SubmissionError("the merged-mining tag is not followed by a 32-byte hash")
    return committed


def _checked_header(header: bytes) -> bytes:
    if len(header) != HEADER_SIZE:
        raise SubmissionError(f"the Bitcoin header has {len(header)} bytes, not {HEADER_SIZE}")
    return header


def _checked_coinbase(coinbase: bytes) -> bytes:
    """
    A coinbase as given: one whole transaction without witness, of a bounded size.
    """
    if len(coinbase) > MAX_COINBASE_SIZE:
        raise SubmissionError(f"the coinbase of {len(coinbase)} bytes exceeds {MAX_COINBASE_SIZE}")
    try:
        stripped, end = read_transaction(coinbase)
    except MalformedBitcoinDataError as exc:
        raise SubmissionError(f"the coinbase is not a Bitcoin transaction: {exc}") from exc
    if end != len(coinbase):
        raise SubmissionError(f"{len(coinbase) - end} bytes follow the coinbase transaction")
    if stripped != coinbase:
        raise SubmissionError("the coinbase must be serialised without witness data")
    return coinbase


def _seal(header: bytes, coinbase: bytes, branch: Sequence[bytes]) -> Seal:
    proof = b"".join(branch)
    if len(proof) > MAX_MERKLE_PROOF_SIZE:
        raise SubmissionError(f"a merkle branch of {len(branch)} levels is deeper than 30")
    return Seal(header, proof, compress_coinbase(coinbase))


def seal_from_block(raw: bytes) -> Seal:
    """
    The seal of a whole serialised Bitcoin block (C{mnr_submitBitcoinBlock}):
    its first transaction is the coinbase.

    @raise SubmissionError: the block or its coinbase is malformed.
    """
    try:
        block = parse_block(raw)
    except MalformedBitcoinDataError as exc:
        raise SubmissionError(f"not a Bitcoin block: {exc}") from exc
    coinbase = _checked_coinbase(block.transactions[0])
    committed_hash(coinbase)
    return _seal(block.header, coinbase, merkle_branch([txid(tx) for tx in block.transactions]))


def seal_from_transaction_ids(header: bytes, coinbase: bytes, display_ids: Sequence[bytes]) -> Seal:
    """
    The seal of a header, a coinbase and every transaction id of the block
    (C{mnr_submitBitcoinBlockTransactions}).

    @param display_ids: the ids in display byte order, coinbase first.
    @raise SubmissionError: a piece is malformed, or the first id is not the coinbase's.
    """
    _checked_header(header)
    _checked_coinbase(coinbase)
    committed_hash(coinbase)
    if not display_ids:
        raise SubmissionError("the list of transaction ids is empty")
    if len(display_ids) > MAX_TRANSACTION_IDS:
        raise SubmissionError(f"{len(display_ids)} transaction ids, at most {MAX_TRANSACTION_IDS}")
    ids = [_hash32(entry, index)[::-1] for index, entry in enumerate(display_ids)]
    if ids[0] != txid(coinbase):
        raise SubmissionError(
            f"the first transaction id {display_ids[0].hex()} is not the coinbase's {txid(coinbase)[::-1].hex()}"
        )
    return _seal(header, coinbase, merkle_branch(ids))


def seal_from_branch(header: bytes, coinbase: bytes, merkle_hashes: Sequence[bytes], transaction_count: int) -> Seal:
    """
    The seal of a header, a coinbase and its merkle branch
    (C{mnr_submitBitcoinBlockPartialMerkle}).

    @param merkle_hashes: the coinbase txid, then the siblings from the leaf
        level up, all in internal byte order.
    @param transaction_count: how many transactions the Bitcoin block holds;
        the hashes are read as the partial merkle tree of such a block in
        which only the coinbase matches (L{coinbase_branch}), so the branch
        must have exactly the depth of that tree.
    @raise SubmissionError: a piece is malformed, the first hash is not the
        coinbase's id, or the branch has the wrong depth.
    """
    _checked_header(header)
    _checked_coinbase(coinbase)
    committed_hash(coinbase)
    if not merkle_hashes:
        raise SubmissionError("The list of merkle hashes can't be empty")
    hashes = [_hash32(entry, index) for index, entry in enumerate(merkle_hashes)]
    if hashes[0] != txid(coinbase):
        raise SubmissionError(
            f"the first merkle hash {hashes[0].hex()} is not the coinbase's id {txid(coinbase).hex()}"
        )
    try:
        branch = coinbase_branch(transaction_count, hashes)
    except MalformedBitcoinDataError as exc:
        raise SubmissionError(str(exc)) from exc
    return _seal(header, coinbase, branch)


def _hash32(entry: bytes, index: int) -> bytes:
    if len(entry) != 32:
        raise SubmissionError(f"hash {index} has {len(entry)} bytes, not 32")
    return entry


__all__ = [
    "MAX_COINBASE_SIZE",
    "MAX_TRANSACTION_IDS",
    "SubmissionError",
    "committed_hash",
    "seal_from_block",
    "seal_from_branch",
    "seal_from_transaction_ids",
]
