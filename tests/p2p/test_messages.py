"""
Tests for L{nodex.p2p.messages}: every message survives its encoding, and
malformed payloads are refused with L{MessageError}.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.p2p.errors import MessageError
from nodex.p2p.messages import (
    MAX_HEADERS_PER_MESSAGE,
    MAX_TRANSACTIONS_PER_MESSAGE,
    Auth,
    BlockBodies,
    BlockHeaders,
    Disconnect,
    GetBlockBodies,
    GetBlockHeaders,
    GetPeers,
    Hello,
    MessageCode,
    NewBlock,
    NewBlockHashes,
    PeerAddress,
    Peers,
    Ping,
    Pong,
    RECENT_MESSAGE_BYTES,
    RecentMessages,
    Status,
    Transactions,
    decode_message,
    encode_frame,
    encode_message,
)
from nodex.primitives import Address, Hash32
from nodex.structures.blocks import Block
from nodex.structures.headers import Header
from nodex.structures.rlpcodec import encode_rlp
from nodex.structures.transactions import LegacyTransaction, Transaction, sign_transaction
from tests.chain.test_processing import fee_market_transfer, transfer


def sample_transaction(nonce: int, data: bytes = b"") -> Transaction:
    """
    A signed regtest transaction (a signature a peer could have made).
    """
    unsigned = LegacyTransaction(nonce=nonce, gas_price=1, gas=1_000_000, to=b"\x07" * 20, value=1, data=data)
    return sign_transaction(unsigned, b"\x05" * 32, 33)


def sample_header(number: int = 5) -> Header:
    """
    A header with every field set.
    """
    return Header(
        parent_hash=Hash32(b"\x01" * 32), uncles_hash=Hash32(b"\x02" * 32), coinbase=Address(b"\x03" * 20),
        state_root=Hash32(b"\x04" * 32), transactions_root=Hash32(b"\x05" * 32), receipts_root=Hash32(b"\x06" * 32),
        logs_bloom=b"\x00" * 256, difficulty=7, number=number, gas_limit=30_000_000, gas_used=21_000,
        timestamp=1_700_000_000, extra_data=b"x", paid_fees=9, minimum_gas_price=0, uncle_count=0,
        bitcoin_merged_mining_header=b"\x0a" * 80,
    )


class RoundTripTests(SynchronousTestCase):
    """
    Encoding then decoding gives the message back.
    """

    def test_every_message(self) -> None:
        """
        Each of the fifteen messages, with typical fields.
        """
        header = sample_header()
        transactions = (transfer(0, 0), fee_market_transfer(1, 0, 5, 2))
        block = Block(header, transactions, (sample_header(4),))
        messages = [
            Hello(62, 7771, b"\x01" * 32, b"\x02" * 32, 5, 10**20, b"\x03" * 64, b"\x04" * 32, 50501),
            Auth(b"\x05" * 65),
            Disconnect(4),
            Ping(0),
            Pong(2**63),
            Status(b"\x06" * 32, 9, 12),
            NewBlock(block, 77),
            NewBlockHashes(((b"\x07" * 32, 1), (b"\x08" * 32, 0))),
            Transactions(transactions),
            GetBlockHeaders(1, 0, 192, 0, False),
            GetBlockHeaders(2, b"\x09" * 32, 1, 3, True),
            BlockHeaders(3, (header, sample_header(6))),
            GetBlockBodies(4, (b"\x0a" * 32,)),
            BlockBodies(5, ((transactions, ()), ((), (header,)))),
            GetPeers(),
            Peers((PeerAddress("192.0.2.1", 50501, b"\x0b" * 64), PeerAddress("node.example", 1, b"\x0c" * 64))),
        ]
        self.assertEqual({type(message).code for message in messages}, set(MessageCode))
        for message in messages:
            self.assertEqual(decode_message(encode_message(message)), message)

    def test_encoded_once(self) -> None:
        """
        A message object is encoded once: sent to many peers, its payload
        is the same bytes object each time, equal to a fresh encoding.
        """
        message = NewBlockHashes(((b"\x07" * 32, 1),))
        payload = encode_message(message)
        self.assertIs(encode_message(message), payload)
        self.assertEqual(encode_message(NewBlockHashes(((b"\x07" * 32, 1),))), payload)
        self.assertEqual(message, NewBlockHashes(((b"\x07" * 32, 1),)))

    def test_frame(self) -> None:
        """
        A frame is the payload's length in four big-endian bytes, then the payload.
        """
        frame = encode_frame(Ping(1))
        self.assertEqual(frame, b"\x00\x00\x00\x03\xc2\x03\x01")


class MalformedTests(SynchronousTestCase):
    """
    Payloads that are not messages.
    """

    def assertRefused(self, payload: bytes, fragment: str) -> None:
        """
        Decoding C{payload} raises L{MessageError} whose message contains C{fragment}.
        """
        with self.assertRaises(MessageError) as caught:
            decode_message(payload)
        self.assertIn(fragment, str(caught.exception))

    def test_not_rlp(self) -> None:
        """
        Bytes that are not one RLP item.
        """
        self.assertRefused(b"\xff\x00", "RLP")
        self.assertRefused(b"", "empty")

    def test_not_a_list(self) -> None:
        """
        A string instead of a list.
        """
        self.assertRefused(encode_rlp(b"abc"), "list")

    def test_unknown_code(self) -> None:
        """
        A code no message has.
        """
        self.assertRefused(encode_rlp([b"\x7f"]), "unknown message code 127")

    def test_wrong_field_count(self) -> None:
        """
        A ping without its nonce.
        """
        self.assertRefused(encode_rlp([b"\x03"]), "PING must have 1 fields")

    def test_wrong_lengths(self) -> None:
        """
        A node id of the wrong size.
        """
        fields = [b"\x3e", b"\x01", b"\x01" * 32, b"\x02" * 32, b"\x05", b"\x0a", b"\x03" * 63, b"\x04" * 32, b"\x01"]
        self.assertRefused(encode_rlp([b"", *fields]), "node id must be 64 bytes")

    def test_non_canonical_integer(self) -> None:
        """
        An integer with a leading zero byte.
        """
        self.assertRefused(encode_rlp([b"\x03", b"\x00\x01"]), "canonical")

    def test_too_many_headers_asked(self) -> None:
        """
        A header request beyond the per-message limit.
        """
        count = (MAX_HEADERS_PER_MESSAGE + 1).to_bytes(2, "big")
        self.assertRefused(encode_rlp([b"\x09", b"\x01", b"\x05", count, b"", b""]), "count must be from 1")

    def test_bad_transaction(self) -> None:
        """
        A transaction that does not decode.
        """
        self.assertRefused(encode_rlp([b"\x08", [b"\x05garbage"]]), "")

    def test_bad_host(self) -> None:
        """
        A peer address whose host is not ASCII.
        """
        self.assertRefused(encode_rlp([b"\x0e", [[b"\xff\xfe", b"\x01", b"\x01" * 64]]]), "ASCII")


class KnownTransactionTests(SynchronousTestCase):
    """
    A TRANSACTIONS message's transactions that the node holds are looked
    up by the hash of their bytes, not decoded again; what the lookup
    changes is only the cost.
    """

    def setUp(self) -> None:
        self.legacy = transfer(0, 0)
        self.typed = fee_market_transfer(1, 0, 5, 2)
        self.held = {self.legacy.hash: self.legacy, self.typed.hash: self.typed}
        self.asked: list[bytes] = []

    def known(self, tx_hash: bytes) -> Transaction | None:
        self.asked.append(tx_hash)
        return self.held.get(tx_hash)

    def test_known_reused(self) -> None:
        """
        Held transactions (legacy and typed) are the held objects; another
        is decoded; the message equals the one decoded without the lookup.
        """
        other = sample_transaction(3)
        payload = encode_message(Transactions((self.legacy, other, self.typed)))
        message = decode_message(payload, self.known)
        self.assertEqual(message, decode_message(payload))
        assert isinstance(message, Transactions)
        self.assertIs(message.transactions[0], self.legacy)
        self.assertIs(message.transactions[2], self.typed)
        self.assertIsNot(message.transactions[1], other)
        self.assertEqual(self.asked, [self.legacy.hash, other.hash, self.typed.hash])

    def test_other_messages(self) -> None:
        """
        Other messages are decoded as without the lookup, which is not asked.
        """
        for message in (Ping(1), Status(b"\x01" * 32, 1, 2), GetBlockBodies(1, (b"\x01" * 32,))):
            self.assertEqual(decode_message(encode_message(message), self.known), message)
        self.assertEqual(self.asked, [])

    def test_blocks_known_reused(self) -> None:
        """
        A block's transactions that the node holds (NEW_BLOCK, BLOCK_BODIES)
        are the held objects, their senders already recovered; another is
        decoded; the message equals the one decoded without the lookup.
        """
        other = sample_transaction(3)
        self.legacy.sender
        new_block = NewBlock(Block(sample_header(), (self.legacy, other, self.typed), (sample_header(4),)), 3)
        bodies = BlockBodies(7, (((other,), ()), ((self.typed, self.legacy), ()), ((), (sample_header(4),))))
        for sent in (new_block, bodies):
            payload = encode_message(sent)
            message = decode_message(payload, self.known)
            self.assertEqual(message, decode_message(payload))
            self.assertEqual(message, sent)
        new_block_decoded = decode_message(encode_message(new_block), self.known)
        assert isinstance(new_block_decoded, NewBlock)
        held, unheld, typed = new_block_decoded.block.transactions
        self.assertIs(held, self.legacy)
        self.assertIn("sender", held.__dict__)
        self.assertIsNot(unheld, other)
        self.assertNotIn("sender", unheld.__dict__)
        self.assertIs(typed, self.typed)
        bodies_decoded = decode_message(encode_message(bodies), self.known)
        assert isinstance(bodies_decoded, BlockBodies)
        self.assertIsNot(bodies_decoded.bodies[0][0][0], other)
        self.assertIs(bodies_decoded.bodies[1][0][0], self.typed)
        self.assertIs(bodies_decoded.bodies[1][0][1], self.legacy)

    def test_blocks_unknown_alike(self) -> None:
        """
        A block none of whose transactions the node holds is decoded as
        without the lookup; a malformed block is refused with the same
        error, held transactions or not.
        """
        sent = NewBlock(Block(sample_header(), (sample_transaction(3),), ()), 3)
        payload = encode_message(sent)
        self.assertEqual(decode_message(payload, self.known), sent)
        malformed = encode_rlp([
            bytes([MessageCode.BLOCK_BODIES]), b"\x07",
            [[[self.legacy.encode_in_block(), b"\x02\xc0"], []]],
        ])
        with self.assertRaises(MessageError) as plain:
            decode_message(malformed)
        with self.assertRaises(MessageError) as looked_up:
            decode_message(malformed, self.known)
        self.assertEqual(str(looked_up.exception), str(plain.exception))

    def test_malformed_refused_alike(self) -> None:
        """
        A malformed message is refused with the same error, held
        transactions or not: a legacy transaction's list wrapped as a typed
        one's string, a message with a field too many, one with a
        malformed transaction beside a held one, one with trailing bytes,
        too many transactions.
        """
        legacy = self.legacy.encode_in_block()
        payloads = [
            # The held legacy transaction's bytes as an RLP string.
            encode_rlp([bytes([MessageCode.TRANSACTIONS]), [legacy]]),
            encode_rlp([bytes([MessageCode.TRANSACTIONS]), [], b""]),
            encode_rlp([bytes([MessageCode.TRANSACTIONS]), [b"\x02\xc0"]]),
            encode_message(Transactions((self.legacy,))) + b"\x00",
            encode_rlp([bytes([MessageCode.TRANSACTIONS]), [b"\x01"] * (MAX_TRANSACTIONS_PER_MESSAGE + 1)]),
        ]
        for payload in payloads:
            with self.assertRaises(MessageError) as plain:
                decode_message(payload)
            with self.assertRaises(MessageError) as looked_up:
                decode_message(payload, self.known)
            self.assertEqual(str(looked_up.exception), str(plain.exception))


class RecentMessagesTests(SynchronousTestCase):
    """
    L{RecentMessages}: gossip that comes byte for byte from several peers is decoded once.
    """

    def test_same_bytes_once(self) -> None:
        """
        The same payload of a block, an announcement, transactions or a
        status decodes to the same message object; other bytes do not.
        """
        recent = RecentMessages()
        for message in (
            NewBlock(Block(sample_header(), (sample_transaction(0),), ()), 11),
            NewBlockHashes(((b"\x09" * 32, 4),)),
            Transactions((sample_transaction(1),)),
            Status(b"\x08" * 32, 3, 9),
        ):
            payload = encode_message(message)
            first = recent.decode(payload)
            self.assertEqual(first, message)
            self.assertIs(recent.decode(bytes(bytearray(payload))), first)
        self.assertEqual(len(recent), 4)
        other = recent.decode(encode_message(Status(b"\x08" * 32, 3, 10)))
        self.assertEqual(other, Status(b"\x08" * 32, 3, 10))

    def test_held_transactions(self) -> None:
        """
        A transaction this node holds is its own object (as L{decode_message}'s).
        """
        held = sample_transaction(2)
        recent = RecentMessages(lambda tx_hash: held if tx_hash == held.hash else None)
        message = recent.decode(encode_message(Transactions((sample_transaction(2),))))
        assert isinstance(message, Transactions)
        self.assertIs(message.transactions[0], held)

    def test_malformed_every_time(self) -> None:
        """
        A payload that does not decode is refused at each arrival and never kept.
        """
        recent = RecentMessages()
        payload = encode_message(NewBlockHashes(((b"\x09" * 32, 4),)))[:-1]
        for _ in range(2):
            with self.assertRaises(MessageError):
                recent.decode(payload)
        self.assertEqual(len(recent), 0)

    def test_requests_not_kept(self) -> None:
        """
        Requests, answers and keep-alives, which no two peers send alike, are not kept.
        """
        recent = RecentMessages()
        for message in (Ping(1), GetBlockHeaders(1, 5, 1, 0, False), GetPeers()):
            payload = encode_message(message)
            self.assertEqual(recent.decode(payload), message)
            self.assertIsNot(recent.decode(payload), recent.decode(payload))
        self.assertEqual(len(recent), 0)

    def test_bounded(self) -> None:
        """
        The oldest payload is forgotten past the size; a long payload is not kept.
        """
        recent = RecentMessages(size=2)
        payloads = [encode_message(NewBlockHashes(((bytes([index]) * 32, index),))) for index in range(3)]
        first = recent.decode(payloads[0])
        recent.decode(payloads[1])
        recent.decode(payloads[2])
        self.assertEqual(len(recent), 2)
        self.assertIsNot(recent.decode(payloads[0]), first)
        long = encode_message(Transactions(tuple(sample_transaction(nonce, b"\x01" * 1000) for nonce in range(9))))
        self.assertGreater(len(long), RECENT_MESSAGE_BYTES)
        recent = RecentMessages()
        self.assertIsNot(recent.decode(long), recent.decode(long))
        self.assertEqual(len(recent), 0)
