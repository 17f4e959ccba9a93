"""
Tests for L{nodex.chain.seal.pow}, L{nodex.chain.seal.bitcoin} and L{nodex.chain.seal.sha256state}.
"""

import hashlib

from twisted.trial.unittest import SynchronousTestCase

from nodex.chain.seal import sha256state
from nodex.chain.seal.bitcoin import (
    encode_varint,
    merkle_branch,
    merkle_root,
    parse_block,
    read_transaction,
    read_varint,
    txid,
)
from nodex.chain.errors import InvalidSealError, MalformedBitcoinDataError
from nodex.chain.seal.pow import (
    MERGED_MINING_TAG,
    Seal,
    bitcoin_work_value,
    check_coinbase_commitment,
    check_seal,
    compress_coinbase,
    compressed_coinbase_txid,
    merkle_proof_root,
    seal_target,
    solve,
    template_coinbase,
    template_seal,
)
from nodex.crypto import double_sha256, keccak256

HASH_FOR_MM = keccak256(b"a header")


def _transaction(script: bytes, outputs: list[bytes], witness: bool = False) -> bytes:
    """
    A one-input Bitcoin transaction with the given input script and output scripts.
    """
    body = encode_varint(1) + b"\x11" * 36 + encode_varint(len(script)) + script + b"\xff" * 4
    body += encode_varint(len(outputs))
    for output in outputs:
        body += (5).to_bytes(8, "little") + encode_varint(len(output)) + output
    if witness:
        return b"\x02\x00\x00\x00" + b"\x00\x01" + body + b"\x01\x20" + b"\x00" * 32 + b"\x00" * 4
    return b"\x02\x00\x00\x00" + body + b"\x00" * 4


class SHA256StateTests(SynchronousTestCase):
    """
    Tests for resuming SHA-256 from a mid-state.
    """

    def test_matches_hashlib(self) -> None:
        """
        Finishing from any 64-byte boundary gives hashlib's digest.
        """
        for size in (0, 1, 55, 56, 63, 64, 65, 119, 200):
            data = bytes(range(256))[:size] * 1
            for cut in range(0, size + 1, 64):
                state = sha256state.midstate(data[:cut])
                self.assertEqual(
                    sha256state.finish(state, cut, data[cut:]), hashlib.sha256(data).digest()
                )

    def test_unaligned_midstate_refused(self) -> None:
        """
        A mid-state can only be taken over whole 64-byte blocks.
        """
        self.assertRaises(InvalidSealError, sha256state.midstate, b"x" * 65)


class BitcoinTests(SynchronousTestCase):
    """
    Tests for the Bitcoin formats merged mining reads.
    """

    def test_varint_round_trip(self) -> None:
        """
        CompactSize integers of every width read back as written.
        """
        for value in (0, 0xFC, 0xFD, 0xFFFF, 0x10000, 0xFFFFFFFF, 2**40):
            encoded = encode_varint(value)
            self.assertEqual(read_varint(encoded, 0), (value, len(encoded)))

    def test_witness_is_stripped(self) -> None:
        """
        A segwit transaction is returned without marker, flag and witness, so its txid is right.
        """
        plain = _transaction(b"\x01\x02", [b"\x51"])
        with_witness = _transaction(b"\x01\x02", [b"\x51"], witness=True)
        stripped, end = read_transaction(with_witness + b"rest")
        self.assertEqual(stripped, plain)
        self.assertEqual(end, len(with_witness))

    def test_parse_block(self) -> None:
        """
        A block parses into its header and witness-free transactions.
        """
        transactions = [_transaction(b"\x01", [b"\x51"], witness=True), _transaction(b"\x02", [b"\x52"])]
        header = b"\x00" * 80
        block = parse_block(header + encode_varint(2) + b"".join(transactions))
        self.assertEqual(block.header, header)
        self.assertEqual(block.transactions[1], transactions[1])

    def test_malformed_blocks(self) -> None:
        """
        Truncated blocks, blocks without transactions and trailing bytes are refused.
        """
        good = b"\x00" * 80 + encode_varint(1) + _transaction(b"\x01", [b"\x51"])
        for bad in (good[:-1], b"\x00" * 80 + b"\x00", good + b"\x00", b"\x00" * 10):
            self.assertRaises(MalformedBitcoinDataError, parse_block, bad)

    def test_branch_leads_to_root(self) -> None:
        """
        The coinbase's merkle branch leads to the block's merkle root, for odd and even counts.
        """
        for count in (1, 2, 3, 5, 8):
            txids = [double_sha256(bytes([i])) for i in range(count)]
            node = txids[0]
            for sibling in merkle_branch(txids):
                node = double_sha256(node + sibling)
            self.assertEqual(node, merkle_root(txids))


class SealTests(SynchronousTestCase):
    """
    Tests for building and checking merged-mining seals.
    """

    def test_solved_template_is_valid(self) -> None:
        """
        At regtest difficulty the solver finds a seal within a few nonces, and it checks.
        """
        seal = solve(HASH_FOR_MM, 1, range(1000))
        self.assertIsNotNone(seal)
        check_seal(HASH_FOR_MM, 1, seal)

    def test_solve_is_the_first_template_seal(self) -> None:
        """
        L{solve} gives the seal L{template_seal} gives for the first nonce
        whose Bitcoin header meets the target, for many hashes and
        difficulties (the constant template pieces and the copied
        SHA-256 state change nothing), and L{None} when no nonce of those
        given does; a hash of another length takes the general path.
        """

        def reference(hash_for_merged_mining: bytes, difficulty: int, nonces: range) -> Seal | None:
            for number in nonces:
                seal = template_seal(hash_for_merged_mining, number.to_bytes(8, "big"))
                if bitcoin_work_value(seal.bitcoin_header) <= seal_target(difficulty):
                    return seal
            return None

        solved = 0
        for index in range(120):
            hash_for_merged_mining = keccak256(b"header %d" % index)
            difficulty = (1, 2, 3, 7, 40)[index % 5]
            nonces = range(index * 2**32 - 5, index * 2**32 + 200) if index % 7 == 3 else range(200)
            found = solve(hash_for_merged_mining, difficulty, nonces)
            self.assertEqual(found, reference(hash_for_merged_mining, difficulty, nonces))
            if found is not None:
                solved += 1
                check_seal(hash_for_merged_mining, difficulty, found)
        self.assertGreater(solved, 110)
        self.assertIsNone(solve(HASH_FOR_MM, 10**9, range(20)))
        short = keccak256(b"short")[:20]
        self.assertEqual(solve(short, 3, range(100)), reference(short, 3, range(100)))
        last = range(2**64 - 20, 2**64)
        self.assertEqual(solve(HASH_FOR_MM, 3, last), reference(HASH_FOR_MM, 3, last))

    def test_solve_refuses_nonces_beyond_8_bytes(self) -> None:
        """
        A nonce that does not fit the template's 8 bytes (negative, or
        2**64 and above) is refused as L{int.to_bytes} refuses it.
        """
        for nonces in ([-1], [-(2**32)], [2**64], [2**32 - 1, 2**64 + 5]):
            with self.assertRaises(OverflowError):
                solve(HASH_FOR_MM, 10**30, nonces)

    def test_target(self) -> None:
        """
        The target is 2^256 / difficulty, with difficulties below 3 counted as 3.
        """
        self.assertEqual(seal_target(1), 2**256 // 3)
        self.assertEqual(seal_target(1000), 2**256 // 1000)
        self.assertRaises(InvalidSealError, seal_target, 0)

    def test_insufficient_work(self) -> None:
        """
        A template nonce whose header hash exceeds the target is refused.
        """
        target = seal_target(1000)
        for number in range(10000):
            seal = template_seal(HASH_FOR_MM, number.to_bytes(8, "big"))
            if bitcoin_work_value(seal.bitcoin_header) > target:
                break
        exc = self.assertRaises(InvalidSealError, check_seal, HASH_FOR_MM, 1000, seal)
        self.assertIn("does not meet difficulty", str(exc))

    def test_other_hash_refused(self) -> None:
        """
        A seal made for another header does not seal this one.
        """
        seal = solve(HASH_FOR_MM, 1, range(1000))
        exc = self.assertRaises(InvalidSealError, check_seal, keccak256(b"other"), 1, seal)
        self.assertIn("commits to", str(exc))

    def test_compressed_txid(self) -> None:
        """
        The txid of a compressed coinbase equals the txid of the whole one,
        including when the tag lies beyond the first 64 bytes.
        """
        padding = b"\x00" * 150
        coinbase = _transaction(padding, [b"\x6a\x29" + MERGED_MINING_TAG + HASH_FOR_MM])
        compressed = compress_coinbase(coinbase)
        self.assertGreater(int.from_bytes(compressed[:8], "big"), 0)
        self.assertEqual(compressed_coinbase_txid(compressed), txid(coinbase))

    def test_multi_transaction_block(self) -> None:
        """
        A Bitcoin block of several transactions seals when the proof is the coinbase's branch.
        """
        coinbase = _transaction(b"\x00" * 80, [b"\x6a\x29" + MERGED_MINING_TAG + HASH_FOR_MM])
        txids = [txid(coinbase)] + [double_sha256(bytes([i])) for i in range(4)]
        root = merkle_root(txids)
        for nonce in range(1000):
            header = b"\x00" * 36 + root + b"\x00" * 8 + nonce.to_bytes(4, "little")
            if bitcoin_work_value(header) <= seal_target(1):
                break
        seal = Seal(header, b"".join(merkle_branch(txids)), compress_coinbase(coinbase))
        check_seal(HASH_FOR_MM, 1, seal)
        broken = Seal(header, seal.merkle_proof[:-32], seal.coinbase)
        self.assertRaises(InvalidSealError, check_seal, HASH_FOR_MM, 1, broken)

    def test_malformed_pieces(self) -> None:
        """
        Wrong header sizes, ragged proofs and short coinbases are refused with a reason.
        """
        seal = solve(HASH_FOR_MM, 1, range(1000))
        cases = [
            Seal(seal.bitcoin_header[:79], seal.merkle_proof, seal.coinbase),
            Seal(seal.bitcoin_header, b"\x00" * 31, seal.coinbase),
            Seal(seal.bitcoin_header, b"\x00" * 992, seal.coinbase),
            Seal(seal.bitcoin_header, seal.merkle_proof, seal.coinbase[:39]),
            Seal(seal.bitcoin_header, seal.merkle_proof, b"\x00" * 7 + b"\x01" + seal.coinbase[8:]),
        ]
        for case in cases:
            self.assertRaises(InvalidSealError, check_seal, HASH_FOR_MM, 1, case)

    def test_too_many_trailing_bytes(self) -> None:
        """
        More than 128 bytes after the committed hash are refused.
        """
        coinbase = template_coinbase(HASH_FOR_MM) + b"\x00" * 129
        exc = self.assertRaises(
            InvalidSealError, check_coinbase_commitment, compress_coinbase(coinbase), HASH_FOR_MM
        )
        self.assertIn("follow the merged-mining hash", str(exc))

    def test_transaction_shaped_node_refused(self) -> None:
        """
        A proof step whose 64 bytes parse as a Bitcoin transaction is refused.
        """
        pair = bytearray(64)
        pair[4] = 1
        pair[41] = 0
        pair[46] = 1
        pair[55] = 4
        exc = self.assertRaises(InvalidSealError, merkle_proof_root, bytes(pair[:32]), bytes(pair[32:]))
        self.assertIn("64-byte transaction", str(exc))
