"""
Tests for L{nodex.p2p.relay} (serving requests from the chain) and
L{nodex.p2p.sync.check_header_chain}, with fakes.
"""

from dataclasses import replace
from pathlib import Path
from typing import Any

from twisted.internet.defer import Deferred, fail, succeed
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase
from zope.interface import directlyProvides

from nodex.chain.aside import FILE
from nodex.api.chain import ChainEvent, ChainHead, IPeerChain, ImportOutcome, ImportResult, Unused, from_peer
from nodex.api.errors import InvalidTransactionRejectedError, TransactionRejectedError
from nodex.p2p.errors import DisconnectReason
from nodex.p2p.inbound import KnownSet
from nodex.p2p.messages import (
    BlockBodies,
    BlockHeaders,
    GetBlockBodies,
    GetBlockHeaders,
    Message,
    NewBlock,
    NewBlockHashes,
    Status,
    Transactions,
    encode_frame,
    encode_message,
)
from nodex.p2p.host import NetworkSettings, PeerSettings
from nodex.p2p.network import SORTED_AT_ONCE, PeerNetwork
from nodex.p2p.relay import MAX_UNUSED_ORPHANS, SIDE_BLOCK_DEPTH, TRANSACTION_CHECKS, ChainRelay, side_block_refusal
from nodex.primitives import Hash32
from nodex.p2p.sync import check_header_chain
from nodex.structures.blocks import Block
from nodex.structures.headers import Header
from nodex.structures.transactions import LegacyTransaction, impersonate, sign_transaction
from tests.p2p.test_messages import sample_header
from tests.p2p.test_protocol import GENESIS, FakeHost, established_peer, frames


def chain_of(count: int) -> list[Header]:
    """
    C{count} headers, each the parent of the next.
    """
    headers = [sample_header(0)]
    for number in range(1, count):
        headers.append(replace(sample_header(number), parent_hash=headers[-1].hash))
    return headers


class FakeChain:
    """
    A canonical chain of headers with empty bodies.
    """

    def __init__(self, headers: list[Header]) -> None:
        self.headers = headers
        self.head = ChainHead(headers[-1], len(headers))
        self.by_hash = {header.hash: header for header in headers}

    def get_header_by_hash(self, block_hash: bytes) -> Deferred[Header | None]:
        return succeed(self.by_hash.get(block_hash))

    def get_headers_by_number(self, numbers: list[int]) -> Deferred[list[Header | None]]:
        return succeed([self.headers[n] if n < len(self.headers) else None for n in numbers])

    def get_blocks_by_hash(self, block_hashes: Any) -> Deferred[list[Block | None]]:
        return succeed([Block(self.by_hash[h]) if h in self.by_hash else None for h in block_hashes])


class FakePeer:
    """
    Records what is sent to it.
    """

    def __init__(self) -> None:
        self.sent: list[Message] = []

    def send(self, message: Message) -> None:
        self.sent.append(message)


class ServeTests(SynchronousTestCase):
    """
    Answers to header and body requests.
    """

    def setUp(self) -> None:
        self.headers = chain_of(20)
        self.relay = ChainRelay(FakeChain(self.headers), None, list, lambda: True)  # type: ignore[arg-type]
        self.peer = FakePeer()

    def headers_for(self, request: GetBlockHeaders) -> list[int]:
        """
        The numbers of the headers served for C{request}.
        """
        self.successResultOf(Deferred.fromCoroutine(self.relay.serve(self.peer, request)))  # type: ignore[arg-type]
        answer = self.peer.sent.pop()
        assert isinstance(answer, BlockHeaders)
        self.assertEqual(answer.request_id, request.request_id)
        return [header.number for header in answer.headers]

    def test_by_number(self) -> None:
        """
        Forward, with a skip, in reverse, and stopping at the head or at genesis.
        """
        self.assertEqual(self.headers_for(GetBlockHeaders(1, 3, 4)), [3, 4, 5, 6])
        self.assertEqual(self.headers_for(GetBlockHeaders(2, 3, 4, skip=2)), [3, 6, 9, 12])
        self.assertEqual(self.headers_for(GetBlockHeaders(3, 3, 10, reverse=True)), [3, 2, 1, 0])
        self.assertEqual(self.headers_for(GetBlockHeaders(4, 18, 5)), [18, 19])
        self.assertEqual(self.headers_for(GetBlockHeaders(5, 25, 5)), [])

    def test_by_hash(self) -> None:
        """
        A hash origin starts at that block; an unknown hash gets nothing.
        """
        self.assertEqual(self.headers_for(GetBlockHeaders(1, self.headers[7].hash, 1)), [7])
        self.assertEqual(self.headers_for(GetBlockHeaders(2, self.headers[7].hash, 3, reverse=True)), [7, 6, 5])
        self.assertEqual(self.headers_for(GetBlockHeaders(3, b"\xee" * 32, 3)), [])
        self.assertEqual(self.relay.answered["headers"], 3)

    def test_bodies(self) -> None:
        """
        Bodies in the asked order, stopping at the first unknown block.
        """
        hashes = (self.headers[2].hash, self.headers[3].hash, b"\xee" * 32, self.headers[4].hash)
        self.successResultOf(Deferred.fromCoroutine(self.relay.serve(self.peer, GetBlockBodies(9, hashes))))  # type: ignore[arg-type]
        [answer] = self.peer.sent
        self.assertEqual(answer, BlockBodies(9, (((), ()), ((), ()))))


class HeaderChainTests(SynchronousTestCase):
    """
    L{check_header_chain}.
    """

    def test_chain(self) -> None:
        """
        Consecutive headers on the given parent pass; a gap, a wrong parent or a wrong start do not.
        """
        headers = chain_of(5)
        self.assertIsNone(check_header_chain(headers[1:], 1, headers[0].hash))
        self.assertIn("does not follow", check_header_chain(headers[1:], 1, b"\x00" * 32) or "")
        self.assertIn("has number", check_header_chain(headers[2:], 1, headers[0].hash) or "")
        broken = [headers[1], replace(headers[2], parent_hash=b"\x00" * 32)]
        self.assertIn("header 2 does not follow", check_header_chain(broken, 1, headers[0].hash) or "")


class TransactionRelayTests(SynchronousTestCase):
    """
    Pending transactions spread to the peers that have not seen them.
    """

    def setUp(self) -> None:
        self.peer = FakePeer()
        self.peer.known_transactions = KnownSet(16)  # type: ignore[attr-defined]
        peers = [self.peer]
        self.relay = ChainRelay(FakeChain(chain_of(1)), None, lambda: peers, lambda: True)  # type: ignore[arg-type]
        self.unsigned = LegacyTransaction(0, 0, 21000, b"\x01" * 20, 1, b"")

    def test_signed_spread_once(self) -> None:
        """
        A signed transaction is sent once to a peer.
        """
        signed = sign_transaction(self.unsigned, b"\x02" * 32, 33)
        self.relay.transaction_pending(signed)
        self.relay.transaction_pending(signed)
        self.assertEqual(self.peer.sent, [Transactions((signed,))])

    def test_impersonated_kept_home(self) -> None:
        """
        A dev chain's impersonated transaction is not sent: peers would
        refuse its marker as an invalid signature.
        """
        self.relay.transaction_pending(impersonate(self.unsigned, b"\x03" * 20, 33))
        self.assertEqual(self.peer.sent, [])


class PendingPool:
    """
    A pool whose pending transactions are those in C{pending}.
    """

    def __init__(self) -> None:
        self.pending: dict[bytes, object] = {}

    def get(self, tx_hash: bytes) -> object | None:
        return self.pending.get(tx_hash)


class DelayedTransactionRelayTests(SynchronousTestCase):
    """
    With a delay, pending transactions go out after a random wait, together.
    """

    def setUp(self) -> None:
        self.clock = Clock()
        self.peers = [FakePeer() for _ in range(3)]
        for peer in self.peers:
            peer.known_transactions = KnownSet(16)  # type: ignore[attr-defined]
        self.running = True
        self.relay = ChainRelay(
            FakeChain(chain_of(1)), None, lambda: self.peers, lambda: self.running,  # type: ignore[arg-type]
            clock=self.clock, entropy=lambda count: b"\x80" * count, transaction_delay=1.0,
        )
        self.pool = PendingPool()
        self.relay.pool = self.pool  # type: ignore[assignment]

    def pending(self, *transactions: LegacyTransaction) -> None:
        for transaction in transactions:
            self.pool.pending[transaction.hash] = transaction
            self.relay.transaction_pending(transaction)

    def test_batched_after_the_delay(self) -> None:
        """
        Nothing goes before the delay (here ln 2 of the mean: the entropy
        gives one half); then one message per peer holds every transaction
        that became pending meanwhile, except those the peer sent or was
        sent, and those no longer pending.
        """
        one, two, three = signed(1), signed(2), signed(3)
        self.pending(one, two, three)
        del self.pool.pending[three.hash]
        self.peers[1].known_transactions.note_received(one.hash)  # type: ignore[attr-defined]
        self.clock.advance(0.69)
        self.assertEqual([peer.sent for peer in self.peers], [[], [], []])
        self.clock.advance(0.01)
        self.assertEqual(self.peers[0].sent, [Transactions((one, two))])
        self.assertEqual(self.peers[1].sent, [Transactions((two,))])
        self.assertEqual(self.peers[2].sent, [Transactions((one, two))])
        # Peers lacking the same transactions share one message (encoded once).
        self.assertIs(self.peers[0].sent[0], self.peers[2].sent[0])
        self.pending(one)
        self.clock.advance(10)
        self.assertEqual([len(peer.sent) for peer in self.peers], [1, 1, 1])

    def test_delay_bounded(self) -> None:
        """
        The exponential delay is cut at four times the mean.
        """
        self.relay._entropy = lambda count: b"\xff" * count  # type: ignore[method-assign]
        self.pending(signed(1))
        self.clock.advance(3.999)
        self.assertEqual(self.peers[0].sent, [])
        self.clock.advance(0.001)
        self.assertEqual(len(self.peers[0].sent), 1)

    def test_stopped(self) -> None:
        """
        A stopped relay drops what waited, and a stopped network sends nothing.
        """
        self.pending(signed(1))
        self.relay.stop()
        self.clock.advance(10)
        self.pending(signed(2))
        self.running = False
        self.clock.advance(10)
        self.assertEqual([peer.sent for peer in self.peers], [[], [], []])
        self.assertEqual(self.clock.getDelayedCalls(), [])


class AcceptingPool:
    """
    A pool that takes every transaction it is offered.
    """

    def __init__(self) -> None:
        self.added: list[object] = []

    def get(self, tx_hash: bytes) -> None:
        return None

    def add(self, transaction: object, relayed: bool = False) -> Deferred[bytes]:
        assert relayed, "the relay marks a peer's transactions as relayed"
        self.added.append(transaction)
        return succeed(b"")


class RefusingPool(AcceptingPool):
    """
    A pool that refuses every transaction with the errors it is given, in turn.
    """

    def __init__(self, *errors: Exception) -> None:
        super().__init__()
        self.errors = list(errors)

    def add(self, transaction: object, relayed: bool = False) -> Deferred[bytes]:
        self.added.append(transaction)
        return fail(self.errors.pop(0) if len(self.errors) > 1 else self.errors[0])


def signed(index: int) -> LegacyTransaction:
    """
    A distinct signed transaction.
    """
    unsigned = LegacyTransaction(index, 0, 21000, b"\x01" * 20, 1, b"")
    return sign_transaction(unsigned, (index + 2).to_bytes(32, "big"), 33)  # type: ignore[return-value]


class TransactionArrivalTests(SynchronousTestCase):
    """
    How the peer network takes a TRANSACTIONS message as it arrives.
    """

    def setUp(self) -> None:
        chain = FakeChain(chain_of(1))
        for name in ("add_observer", "add_side_observer", "add_unused_observer"):
            setattr(chain, name, lambda observer: None)
        directlyProvides(chain, IPeerChain)
        reputation = type("Reputation", (), {"add_ban_observer": lambda self, observer: None})()
        self.network = PeerNetwork(
            chain, reputation, Clock(), Path(self.mktemp()), NetworkSettings(7771, GENESIS),  # type: ignore[arg-type]
            None, lambda host, port: None,  # type: ignore[arg-type, return-value]
        )
        self.pool = AcceptingPool()
        self.network.relay.pool = self.pool  # type: ignore[assignment]
        self.peer, _ = established_peer()

    def test_peer_settings_follow(self) -> None:
        """
        The connections' limits are the settings' (a plain attribute),
        also after the settings are replaced.
        """
        self.assertIs(self.network.peer_settings, self.network.settings.peer)
        replaced = NetworkSettings(7772, GENESIS, peer=PeerSettings(max_queued_messages=3))
        self.network.settings = replaced
        self.assertIs(self.network.peer_settings, replaced.peer)
        self.assertEqual(self.network.peer_settings.max_queued_messages, 3)

    def test_shared_transactions_known(self) -> None:
        """
        A transaction of the shared transactions (the simulator's clients')
        that the pool lacks is that object, not decoded again; the pool's
        own is preferred; without them, a peer's copy is decoded.
        """
        transaction = signed(1)
        payload = encode_message(Transactions((transaction,)))
        decoded = self.network.decode(payload)
        assert isinstance(decoded, Transactions)
        self.assertIsNot(decoded.transactions[0], transaction)
        self.assertIsNone(self.network.known_transaction(transaction.hash))
        self.network.shared_transactions = {transaction.hash: transaction}
        self.assertIs(self.network.known_transaction(transaction.hash), transaction)
        self.assertIsNone(self.network.known_transaction(signed(2).hash))
        payload = encode_message(Transactions((transaction, signed(2))))
        decoded = self.network.decode(payload)
        assert isinstance(decoded, Transactions)
        self.assertIs(decoded.transactions[0], transaction)
        self.assertEqual(decoded.transactions[1], signed(2))
        held = signed(1)
        self.pool.get = lambda tx_hash: held if tx_hash == held.hash else None  # type: ignore[method-assign]
        self.network.pool = self.pool  # type: ignore[assignment]
        self.assertIs(self.network.known_transaction(transaction.hash), held)

    def test_known_sorted_at_once(self) -> None:
        """
        A small message of transactions this node has is sorted as it
        arrives: no work in the peer's lane, nothing for the pool.
        """
        self.network.relay.refused_transactions.add(signed(1).hash)
        self.assertIsNone(self.network._transactions(self.peer, Transactions((signed(1),))))
        self.assertEqual((len(self.peer.transaction_lane), self.pool.added), (0, []))

    def test_fresh_checked_in_the_lane(self) -> None:
        """
        What the pool must check goes through the lane; a message that
        arrives while the lane is busy is sorted in it, in order.
        """
        held: Deferred[None] = Deferred()
        self.peer.transaction_lane.submit(lambda: held)
        arrived = self.network._transactions(self.peer, Transactions((signed(1),)))
        self.assertEqual((len(self.peer.transaction_lane), self.pool.added), (2, []))
        held.callback(None)
        self.successResultOf(arrived)  # type: ignore[arg-type]
        self.assertEqual(self.pool.added, [signed(1)])
        self.successResultOf(self.network._transactions(self.peer, Transactions((signed(2),))))  # type: ignore[arg-type]
        self.assertEqual(self.pool.added, [signed(1), signed(2)])

    def test_large_sorted_in_the_lane(self) -> None:
        """
        A message of more than L{SORTED_AT_ONCE} is sorted in the lane, not as it arrives.
        """
        transactions = tuple(signed(index) for index in range(SORTED_AT_ONCE + 1))
        self.pool.added = []
        sorted_at: list[int] = []
        sort = self.network.relay.sort_transactions
        self.network.relay.sort_transactions = lambda peer, message: sorted_at.append(len(self.peer.transaction_lane)) or sort(peer, message)  # type: ignore[method-assign, func-returns-value]
        self.successResultOf(self.network._transactions(self.peer, Transactions(transactions)))  # type: ignore[arg-type]
        self.assertEqual(sorted_at, [1])
        self.assertEqual(len(self.pool.added), SORTED_AT_ONCE + 1)


class BlockArrivalTests(SynchronousTestCase):
    """
    How the peer network takes a NEW_BLOCK as it arrives.
    """

    setUp = TransactionArrivalTests.setUp

    def test_known_sorted_at_once(self) -> None:
        """
        A block this node has, finding the lane idle, is sorted as it
        arrives: no work in the peer's lane, no import; the peer is known
        to have it; sent again, it is a repeat.
        """
        block = Block(chain_of(2)[1])
        self.network.relay.recent_blocks.add(block.hash)
        imported: list[object] = []
        self.network.relay.import_one = lambda peer, block: imported.append(block)  # type: ignore[assignment, method-assign, return-value]
        self.assertIsNone(self.network._new_block(self.peer, NewBlock(block, 500)))
        self.assertEqual((len(self.peer.lane), imported), (0, []))
        self.assertIn(block.hash, self.peer.known_blocks)
        self.assertEqual(self.peer.total_difficulty, 500)
        self.assertIsNone(self.network._new_block(self.peer, NewBlock(block, 500)))
        self.assertEqual(self.peer.repeated_messages, 1)

    def test_fresh_imported_in_the_lane(self) -> None:
        """
        A block to import goes through the lane; one that arrives while
        the lane is busy is sorted in it, in order.
        """
        headers = chain_of(3)
        imported: list[bytes] = []

        async def import_one(peer: object, block: Block) -> None:
            imported.append(block.hash)

        self.network.relay.import_one = import_one  # type: ignore[method-assign]
        self.successResultOf(self.network._new_block(self.peer, NewBlock(Block(headers[1]), 5)))  # type: ignore[arg-type]
        self.assertEqual(imported, [headers[1].hash])
        held: Deferred[None] = Deferred()
        self.peer.lane.submit(lambda: held)
        arrived = self.network._new_block(self.peer, NewBlock(Block(headers[2]), 6))
        self.assertEqual((len(self.peer.lane), imported), (2, [headers[1].hash]))
        held.callback(None)
        self.successResultOf(arrived)  # type: ignore[arg-type]
        self.assertEqual(imported, [headers[1].hash, headers[2].hash])


class PeerTransactionsTests(SynchronousTestCase):
    """
    Transactions a peer sends.
    """

    def setUp(self) -> None:
        self.host = FakeHost()
        self.peer, self.transport = established_peer(self.host)
        self.host.events.clear()
        self.relay = ChainRelay(FakeChain(chain_of(1)), None, list, lambda: True)  # type: ignore[arg-type]

    def offer(self, *transactions: object) -> None:
        """
        The peer sends C{transactions} in one message.
        """
        message = Transactions(tuple(transactions))  # type: ignore[arg-type]
        self.successResultOf(Deferred.fromCoroutine(self.relay.transactions(self.peer, message)))

    def test_impersonation_marker_refused(self) -> None:
        """
        A peer's transaction with the impersonation marker never reaches
        the pool (whoever this node impersonates) and counts against the
        peer; its signed transactions do.
        """
        self.relay.pool = AcceptingPool()  # type: ignore[assignment]
        unsigned = LegacyTransaction(0, 0, 21000, b"\x01" * 20, 1, b"")
        marked = impersonate(unsigned, b"\x03" * 20, 33)
        self.offer(marked, signed(0))
        self.assertEqual(self.relay.pool.added, [signed(0)])  # type: ignore[attr-defined]
        self.assertEqual(self.host.events, ["INVALID_TRANSACTION", "VALID_TRANSACTION"])

    def test_refusals(self) -> None:
        """
        A transaction that can never be valid counts against the peer; a
        refusal of the moment does not.
        """
        self.relay.pool = RefusingPool(  # type: ignore[assignment]
            InvalidTransactionRejectedError("invalid signature"), TransactionRejectedError("nonce too low")
        )
        self.offer(signed(0), signed(1))
        self.assertEqual(self.host.events, ["INVALID_TRANSACTION"])

    def test_invalid_threshold(self) -> None:
        """
        Past C{max_invalid_transactions} never-valid transactions in one
        connection, the peer is disconnected for an offence, and the rest of
        its message is not checked.
        """
        limit = self.host.peer_settings.max_invalid_transactions
        pool = self.relay.pool = RefusingPool(InvalidTransactionRejectedError("invalid signature"))  # type: ignore[assignment]
        self.offer(*(signed(index) for index in range(limit + 10)))
        self.assertEqual(len(pool.added), limit + 1)
        self.assertEqual(self.host.events, ["INVALID_TRANSACTION"] * (limit + 1) + ["INVALID_MESSAGE"])
        self.assertEqual(self.peer.disconnect_reason, DisconnectReason.INVALID_TRANSACTIONS)

    def test_known_invalid_not_checked_again(self) -> None:
        """
        A transaction found invalid is not checked again, whoever sends it;
        it still counts against its sender.
        """
        pool = self.relay.pool = RefusingPool(InvalidTransactionRejectedError("invalid signature"))  # type: ignore[assignment]
        self.offer(signed(0))
        other, _ = established_peer(self.host)
        self.successResultOf(Deferred.fromCoroutine(self.relay.transactions(other, Transactions((signed(0),)))))
        self.assertEqual(len(pool.added), 1)
        self.assertEqual(self.host.events, ["INVALID_TRANSACTION"] * 2)

    def test_repeats_cost_nothing(self) -> None:
        """
        A transaction the peer sent before is dropped and its message is a
        repeated message; one the pool refused for now is not offered again
        until the head moves.
        """
        pool = self.relay.pool = RefusingPool(TransactionRejectedError("nonce too low"))  # type: ignore[assignment]
        self.offer(signed(0))
        self.offer(signed(0))
        other, _ = established_peer(self.host)
        self.successResultOf(Deferred.fromCoroutine(self.relay.transactions(other, Transactions((signed(0),)))))
        self.assertEqual(len(pool.added), 1)
        self.assertEqual(self.host.events, ["REPEATED_MESSAGE"])

    def test_repeated_messages_limit(self) -> None:
        """
        Past C{max_repeated_messages} repeats in one connection, the peer is dropped for a flood.
        """
        self.relay.pool = AcceptingPool()  # type: ignore[assignment]
        self.offer(signed(0))
        for _ in range(self.host.peer_settings.max_repeated_messages + 1):
            self.offer(signed(0))
        self.assertEqual(self.peer.disconnect_reason, DisconnectReason.FLOOD)
        self.assertEqual(self.host.events[-1], "INVALID_MESSAGE")

    def test_hand_off_bounded(self) -> None:
        """
        At most L{TRANSACTION_CHECKS} peers' transactions are in the pool's
        checks at once, all peers together.
        """
        waiting: list[Deferred[bytes]] = []

        class SlowPool(AcceptingPool):
            def add(self, transaction: object, relayed: bool = False) -> Deferred[bytes]:
                self.added.append(transaction)
                waiting.append(Deferred())
                return waiting[-1]

        self.relay.pool = SlowPool()  # type: ignore[assignment]
        peers = [established_peer(self.host)[0] for _ in range(TRANSACTION_CHECKS + 3)]
        runs = [
            Deferred.fromCoroutine(self.relay.transactions(peer, Transactions((signed(index), signed(100 + index)))))
            for index, peer in enumerate(peers)
        ]
        self.assertEqual(len(waiting), TRANSACTION_CHECKS)
        while waiting:
            waiting.pop(0).callback(b"")
        self.assertEqual(len(self.relay.pool.added), 2 * len(peers))  # type: ignore[attr-defined]
        for run in runs:
            self.successResultOf(run)


    def test_hand_off_order(self) -> None:
        """
        A check that ends gives its turn to the offer that waited longest
        before anything else of its own offer (its record, its peer's next
        transaction, which waits behind the others then): the order of
        L{DeferredSemaphore.run}'s.
        """
        waiting: list[Deferred[bytes]] = []
        order: list[tuple[int, int]] = []
        host = self.host

        class SlowPool(AcceptingPool):
            def add(self, transaction: Any, relayed: bool = False) -> Deferred[bytes]:
                order.append((transaction.nonce, len(host.events)))
                waiting.append(Deferred())
                return waiting[-1]

        self.relay.pool = SlowPool()  # type: ignore[assignment]
        peers = [established_peer(self.host)[0] for _ in range(TRANSACTION_CHECKS + 2)]
        for index, peer in enumerate(peers):
            Deferred.fromCoroutine(self.relay.transactions(peer, Transactions((signed(index), signed(100 + index)))))
        while waiting:
            waiting.pop(0).callback(b"")
        base = len(host.events) - 2 * len(peers)
        self.assertEqual(
            [(nonce, events - base) for nonce, events in order],
            [(index, 0) for index in range(TRANSACTION_CHECKS)]
            + [(8, 0), (9, 1)]
            + [(100 + index, 2 + index) for index in range(len(peers))],
        )


class SideBlockTests(SynchronousTestCase):
    """
    Side blocks (stored off the canonical chain) spread to the peers that lack them.
    """

    def setUp(self) -> None:
        headers = chain_of(3)
        self.side = Block(replace(headers[2], extra_data=b"side"))
        chain = FakeChain(headers)
        chain.get_total_difficulty = lambda block_hash: succeed(7)  # type: ignore[attr-defined]
        self.peers = [FakePeer() for _ in range(4)]
        for peer in self.peers:
            peer.known_blocks = KnownSet(16)  # type: ignore[attr-defined]
        self.running = True
        self.syncing = False
        sync = type("Sync", (), {"syncing": property(lambda _: self.syncing)})()
        self.relay = ChainRelay(chain, sync, lambda: self.peers, lambda: self.running)  # type: ignore[arg-type]

    def test_spread(self) -> None:
        """
        Whole to the square root of the unaware peers with its total
        difficulty, announced to the others; a peer that knows it gets nothing.
        """
        self.peers[3].known_blocks.add(self.side.hash)  # type: ignore[attr-defined]
        self.relay.side_block(self.side)
        self.assertEqual(self.peers[0].sent, [NewBlock(self.side, 7)])
        for peer in self.peers[1:3]:
            self.assertEqual(peer.sent, [NewBlockHashes(((self.side.hash, self.side.number),))])
        self.assertEqual(self.peers[3].sent, [])
        # One announcement object for all (encoded once).
        self.assertIs(self.peers[1].sent[0], self.peers[2].sent[0])
        self.relay.side_block(self.side)
        self.assertEqual(sum(len(peer.sent) for peer in self.peers), 3)

    def test_not_while_syncing_or_stopped(self) -> None:
        """
        Nothing is spread while the node syncs or the network is stopped.
        """
        self.syncing = True
        self.relay.side_block(self.side)
        self.syncing, self.running = False, False
        self.relay.side_block(self.side)
        self.assertEqual([peer.sent for peer in self.peers], [[], [], [], []])


class HeadSpreadTests(SynchronousTestCase):
    """
    A new head spreads whole to a few peers and by hash to the rest,
    without a STATUS; a peer whose announced block became the head is
    known to have its work.
    """

    def setUp(self) -> None:
        self.headers = chain_of(3)
        self.chain = FakeChain(self.headers)
        self.peers = [FakePeer() for _ in range(4)]
        for peer in self.peers:
            peer.known_blocks = KnownSet(16)  # type: ignore[attr-defined]
        sync = type("Sync", (), {"syncing": False})()
        self.relay = ChainRelay(self.chain, sync, lambda: self.peers, lambda: True)  # type: ignore[arg-type]

    def test_announced_without_status(self) -> None:
        """
        Whole to the square root of the unaware peers, a hash alone to each other.
        """
        head = Block(self.headers[2])
        self.relay.chain_changed(ChainEvent((head,)))
        for peer in self.peers[:2]:
            self.assertEqual(peer.sent, [NewBlock(head, 3)])
        for peer in self.peers[2:]:
            self.assertEqual(peer.sent, [NewBlockHashes(((head.hash, head.number),))])

    def test_work_learnt_from_an_announced_block(self) -> None:
        """
        An announced block that becomes the head when imported tells this
        node the announcer's work (an announcement does not); one stored
        off the canonical chain does not.
        """
        peer, _ = established_peer()
        peer.total_difficulty = 1
        block = Block(self.headers[2])
        becomes_head = False

        def import_blocks(blocks: list[Block], source: object) -> Deferred[list[ImportOutcome]]:
            if becomes_head:
                self.chain.head = ChainHead(blocks[0].header, 3)
                return succeed([ImportOutcome(Hash32(blocks[0].hash), ImportResult.IMPORTED_BEST)])
            return succeed([ImportOutcome(Hash32(blocks[0].hash), ImportResult.IMPORTED_NOT_BEST)])

        self.chain.import_blocks = import_blocks  # type: ignore[attr-defined]
        self.chain.head = ChainHead(self.headers[1], 2)
        self.successResultOf(Deferred.fromCoroutine(self.relay.import_one(peer, block)))
        self.assertEqual(peer.total_difficulty, 1)
        self.relay.recent_blocks = KnownSet(16)
        becomes_head = True
        self.successResultOf(Deferred.fromCoroutine(self.relay.import_one(peer, block)))
        self.assertEqual((peer.total_difficulty, peer.head_hash), (3, block.hash))


class StatusTests(SynchronousTestCase):
    """
    A peer's status replaces its claimed head.
    """

    def test_status_replaces_claim(self) -> None:
        """
        A lighter head than claimed before replaces the claim (a dev node
        rewound); the peer's unbacked claims are not cleared by it.
        """
        peer, _ = established_peer()
        peer.claim_failures = 2
        asked: list[object] = []
        sync = type("Sync", (), {"maybe_sync": lambda _, peer=None: asked.append(peer)})()
        relay = ChainRelay(FakeChain(chain_of(1)), sync, list, lambda: True)  # type: ignore[arg-type]
        relay.status(peer, Status(b"\x05" * 32, 3, 4))
        self.assertEqual((peer.head_hash, peer.head_number, peer.total_difficulty), (b"\x05" * 32, 3, 4))
        self.assertEqual((peer.claim_failures, asked), (2, [None]))

    def test_status_of_an_announced_block_starts_no_sync(self) -> None:
        """
        The status that follows a block announcement names the announced
        block: it is fetched and imported from the announcement, and the
        status starts no sync run (one runs only when the block cannot be
        attached); a status naming a block not on its way still does.
        """
        peer, transport = established_peer()
        asked: list[object] = []
        sync = type("Sync", (), {"maybe_sync": lambda _, peer=None: asked.append(peer)})()
        headers = chain_of(2)
        relay = ChainRelay(FakeChain(headers[:1]), sync, list, lambda: True)  # type: ignore[arg-type]
        relay.announced(peer, NewBlockHashes(((headers[1].hash, 1),)))
        relay.status(peer, Status(headers[1].hash, 1, 2))
        self.assertEqual(asked, [])
        [request] = frames(transport)
        assert isinstance(request, GetBlockHeaders)
        self.assertEqual((request.origin, request.count), (headers[1].hash, 1))
        relay.status(peer, Status(b"\x05" * 32, 1, 2))
        self.assertEqual(asked, [None])

    def test_announced_block_fetched_once(self) -> None:
        """
        A block two peers announce is fetched from the first only; the
        second's fetch waits for it (without looking the block up in the
        store: it is not there yet), and asks its own peer only if the
        first failed.
        """
        headers = chain_of(2)
        sync = type("Sync", (), {"maybe_sync": lambda _, peer=None: None})()
        chain = FakeChain(headers[:1])
        looked_up: list[bytes] = []
        get_header_by_hash = chain.get_header_by_hash
        chain.get_header_by_hash = lambda block_hash: looked_up.append(block_hash) or get_header_by_hash(block_hash)  # type: ignore[method-assign]
        relay = ChainRelay(chain, sync, list, lambda: True)  # type: ignore[arg-type]
        (first, first_wire), (second, second_wire) = established_peer(), established_peer()
        for peer in (first, second):
            relay.announced(peer, NewBlockHashes(((headers[1].hash, 1),)))
        self.assertEqual(looked_up, [headers[1].hash])
        [request] = frames(first_wire)
        self.assertEqual(frames(second_wire), [])
        assert isinstance(request, GetBlockHeaders)
        first.dataReceived(encode_frame(BlockHeaders(request.request_id, ())))
        [again] = frames(second_wire)
        assert isinstance(again, GetBlockHeaders)
        self.assertEqual(again.origin, headers[1].hash)


class FetchDelayTests(SynchronousTestCase):
    """
    With a fetch delay, an announced block waits for a whole copy before it
    is fetched from the announcer.
    """

    def setUp(self) -> None:
        self.headers = chain_of(2)
        self.clock = Clock()
        sync = type("Sync", (), {"maybe_sync": lambda _, peer=None: None})()
        self.relay = ChainRelay(
            FakeChain(self.headers[:1]), sync, list, lambda: True, clock=self.clock, fetch_delay=0.5,  # type: ignore[arg-type]
        )
        self.peer, self.wire = established_peer()

    def test_fetched_after_the_delay(self) -> None:
        """
        Nothing is asked before the delay has passed; then the header.
        """
        self.relay.announced(self.peer, NewBlockHashes(((self.headers[1].hash, 1),)))
        self.clock.advance(0.49)
        self.assertEqual(frames(self.wire), [])
        self.clock.advance(0.01)
        [request] = frames(self.wire)
        assert isinstance(request, GetBlockHeaders)
        self.assertEqual(request.origin, self.headers[1].hash)

    def test_whole_copy_meanwhile(self) -> None:
        """
        A block that arrives whole (and is imported) during the delay is not fetched.
        """
        self.relay.announced(self.peer, NewBlockHashes(((self.headers[1].hash, 1),)))
        self.relay.recent_blocks.add(self.headers[1].hash)
        self.clock.advance(0.5)
        self.assertEqual(frames(self.wire), [])
        self.assertEqual(self.clock.getDelayedCalls(), [])
        self.assertEqual(self.relay._fetching, {})

    def test_some_whole_meanwhile(self) -> None:
        """
        Of two blocks announced, the one that arrived whole during the
        delay is dropped, the other fetched.
        """
        headers = chain_of(3)
        self.relay.chain = FakeChain(headers[:1])  # type: ignore[assignment]
        self.relay.announced(self.peer, NewBlockHashes(((headers[1].hash, 1), (headers[2].hash, 2))))
        self.relay.recent_blocks.add(headers[1].hash)
        self.clock.advance(0.5)
        [request] = frames(self.wire)
        assert isinstance(request, GetBlockHeaders)
        self.assertEqual(request.origin, headers[2].hash)

    def test_announced_during_the_delay_is_arriving(self) -> None:
        """
        While its fetch waits, the announced block is on its way: the
        status that follows the announcement starts no sync.
        """
        asked: list[object] = []
        self.relay.sync = type("Sync", (), {"maybe_sync": lambda _, peer=None: asked.append(peer)})()  # type: ignore[assignment]
        self.relay.announced(self.peer, NewBlockHashes(((self.headers[1].hash, 1),)))
        self.relay.status(self.peer, Status(self.headers[1].hash, 1, 2))
        self.assertEqual(asked, [])

    def test_stop_ends_the_wait(self) -> None:
        """
        When the relay stops, the waiting fetches end without asking
        anything and leave no timed call behind.
        """
        running = [True]
        self.relay._running = lambda: running[0]
        self.relay.announced(self.peer, NewBlockHashes(((self.headers[1].hash, 1),)))
        running[0] = False
        self.relay.stop()
        self.assertEqual(self.clock.getDelayedCalls(), [])
        self.clock.advance(1)
        self.assertEqual(frames(self.wire), [])
        self.assertEqual(self.relay._fetching, {})

    def test_no_clock_no_delay(self) -> None:
        """
        Without a clock the delay is ignored: the fetch starts at once.
        """
        sync = type("Sync", (), {"maybe_sync": lambda _, peer=None: None})()
        relay = ChainRelay(FakeChain(self.headers[:1]), sync, list, lambda: True, fetch_delay=0.5)  # type: ignore[arg-type]
        relay.announced(self.peer, NewBlockHashes(((self.headers[1].hash, 1),)))
        [request] = frames(self.wire)
        assert isinstance(request, GetBlockHeaders)


class UnusedOrphanTests(SynchronousTestCase):
    """
    Blocks a peer sent that the chain kept aside and dropped unused.
    """

    def setUp(self) -> None:
        self.host = FakeHost()
        self.peer, _ = established_peer(self.host)
        self.recorded: list[tuple[str, bytes]] = []
        self.relay = ChainRelay(
            FakeChain(chain_of(1)), None, lambda: [self.peer], lambda: True,  # type: ignore[arg-type]
            lambda event, node_id: self.recorded.append((event, node_id)),
        )

    def unused(self, reason: str, node_id: bytes | None = None) -> None:
        source = from_peer(node_id or self.peer.node_id or b"")
        self.relay.unused(Unused(Hash32(b"\x01" * 32), source, reason))

    def test_parents_never_came(self) -> None:
        """
        Past eight orphans whose parent never came (or pushed out for room),
        the connected sender is disconnected for an unbacked claim.
        """
        for index in range(MAX_UNUSED_ORPHANS):
            self.unused("its parent never came" if index % 2 else "pushed out: no room left for its source")
        self.assertFalse(self.peer.closed)
        self.unused("its parent never came")
        self.assertEqual(self.peer.disconnect_reason, DisconnectReason.UNBACKED_CLAIM)
        self.assertEqual(self.host.events, ["INVALID_MESSAGE"])

    def test_invalid_once_checked(self) -> None:
        """
        A kept block found invalid once its parent or its time came is an
        invalid block of its sender, recorded by node id when it has gone.
        """
        self.unused("invalid once due: bad state root", node_id=b"\x07" * 64)
        self.assertEqual(self.recorded, [("INVALID_BLOCK", b"\x07" * 64)])
        self.unused("invalid: bad state root")
        self.assertEqual(self.peer.disconnect_reason, DisconnectReason.INVALID_BLOCK)

    def test_other_sources(self) -> None:
        """
        Blocks of a chain file or of this node's miner count against no peer.
        """
        self.relay.unused(Unused(Hash32(b"\x01" * 32), FILE, "its parent never came"))
        self.assertEqual((self.recorded, self.host.events), ([], []))


class SideBlockRefusalTests(SynchronousTestCase):
    """
    Which side blocks from gossip are within reach of the head.
    """

    def test_work(self) -> None:
        """
        A side block whose chain is short of the head's work by at most
        seven blocks at the head's difficulty is within reach; one more
        unit of shortfall is not; its uncles' work counts.
        """
        head = ChainHead(replace(sample_header(20), difficulty=10), 1000)
        block = Block(replace(sample_header(15), difficulty=10))
        self.assertIsNone(side_block_refusal(block, 1000 - 10 - SIDE_BLOCK_DEPTH * 10, head))
        self.assertIn("less work", side_block_refusal(block, 1000 - 10 - SIDE_BLOCK_DEPTH * 10 - 1, head) or "")
        uncle = replace(sample_header(14), difficulty=1)
        with_uncle = Block(block.header, (), (uncle,))
        self.assertIsNone(side_block_refusal(with_uncle, 1000 - 10 - SIDE_BLOCK_DEPTH * 10 - 1, head))
