"""
Tests for L{nodex.p2p.protocol}: frames, the handshake and the limits over
a C{StringTransport}, with a L{Clock}.
"""

from dataclasses import replace

from twisted.internet.defer import Deferred, maybeDeferred
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport
from twisted.trial.unittest import SynchronousTestCase

from nodex.api.peers import PeerEvent
from nodex.p2p.messages import WIRE_PROTOCOL_VERSION
from nodex.p2p.errors import DisconnectReason, PeerGoneError, RequestTimeoutError
from nodex.p2p.identity import NodeKey
from nodex.p2p.framing import HANDSHAKE_FRAME_BYTES
from nodex.p2p.messages import (
    Auth,
    BlockHeaders,
    Disconnect,
    GetPeers,
    Hello,
    Message,
    Ping,
    Pong,
    Status,
    Transactions,
    decode_and_hash,
    decode_message,
    encode_frame,
)
from nodex.p2p.host import ChainStatus, PeerSettings
from nodex.p2p.protocol import THREAD_DECODE_BYTES, PeerProtocol
from tests.p2p.test_messages import sample_header, sample_transaction

GENESIS = b"\x11" * 32


class FakeHost:
    """
    A L{nodex.p2p.protocol.PeerHost} that records what the protocol tells it.
    """

    def __init__(self, network_id: int = 7771, genesis: bytes = GENESIS, settings: PeerSettings | None = None) -> None:
        self.node_key = NodeKey.generate()
        self.peer_settings = settings or PeerSettings(
            messages_per_second=50, request_timeout=5.0, handshake_timeout=3.0, ping_interval=15.0, encryption=False
        )
        self.status = ChainStatus(network_id, genesis, b"\x22" * 32, 7, 8, 50501)
        self.events: list[str] = []
        self.proven: list[bool] = []
        self.failures: list[str] = []
        self.handled: list[Deferred[None]] | None = None
        self.ready: list[PeerProtocol] = []
        self.messages: list[Message] = []
        self.lost: list[PeerProtocol] = []
        self.allowed = True
        self.refuse: DisconnectReason | None = None
        self.held_decodes: list[Deferred[bytes]] | None = None

    def chain_status(self) -> ChainStatus:
        return self.status

    def is_allowed(self, node_id: bytes | None, address: str) -> bool:
        return self.allowed

    def record_event(self, peer: PeerProtocol, event: str) -> None:
        self.events.append(event)
        self.proven.append(peer.proven_node_id is not None)

    def handshake_failed(self, peer: PeerProtocol, why: str) -> None:
        self.failures.append(why)

    def peer_ready(self, peer: PeerProtocol) -> DisconnectReason | None:
        self.ready.append(peer)
        return self.refuse

    def peer_message(self, peer: PeerProtocol, message: Message) -> Deferred[None] | None:
        """
        Keep the message; when the test holds the handling (L{handled}),
        the message stays queued until the test fires its Deferred.
        """
        self.messages.append(message)
        if self.handled is None:
            return None
        waiting: Deferred[None] = Deferred()
        self.handled.append(waiting)
        return waiting

    def peer_lost(self, peer: PeerProtocol) -> None:
        self.lost.append(peer)

    def known_transaction(self, tx_hash: bytes) -> None:
        return None

    def decode(self, payload: bytes) -> Message:
        return decode_message(payload, self.known_transaction)

    def decode_in_thread(self, payload: bytes) -> Deferred[Message]:
        """
        Decode at once, or, when the test holds the decoder
        (L{held_decodes}), when the test fires the Deferred.
        """
        if self.held_decodes is None:
            return maybeDeferred(decode_and_hash, payload)
        waiting: Deferred[bytes] = Deferred()
        self.held_decodes.append(waiting)
        return waiting.addCallback(decode_and_hash)


def established_peer(host: FakeHost | None = None, clock: Clock | None = None) -> tuple[PeerProtocol, StringTransport]:
    """
    A protocol whose handshake with a fresh remote key is done, over a
    C{StringTransport} (cleared); the host's events are left as they were.
    """
    host = host or FakeHost()
    events = len(host.events)
    protocol = PeerProtocol(host, clock or Clock(), inbound=True)
    transport = StringTransport()
    protocol.makeConnection(transport)
    hello = frames(transport)[0]
    assert isinstance(hello, Hello)
    remote = NodeKey.generate()
    ours = Hello(WIRE_PROTOCOL_VERSION, 7771, host.status.genesis_hash, b"\x44" * 32, 100, 101, remote.node_id, b"\x33" * 32, 0)
    for message in (ours, Auth(remote.sign_challenge(hello.challenge))):
        protocol.dataReceived(encode_frame(message))
    assert protocol.established
    transport.clear()
    del host.events[events:], host.proven[events:]
    return protocol, transport


def frames(transport: StringTransport) -> list[Message]:
    """
    The messages written to C{transport} so far (and clear it).
    """
    data = transport.value()
    transport.clear()
    messages = []
    while data:
        length = int.from_bytes(data[:4], "big")
        messages.append(decode_message(data[4 : 4 + length]))
        data = data[4 + length :]
    return messages


class ProtocolTests(SynchronousTestCase):
    """
    One side of a connection, the other played by the test.
    """

    def setUp(self) -> None:
        self.clock = Clock()
        self.host = FakeHost()
        self.protocol = PeerProtocol(self.host, self.clock, inbound=True)
        self.transport = StringTransport()
        self.protocol.makeConnection(self.transport)
        self.protocol.connectionLost = self._lost  # type: ignore[method-assign]
        self.remote = NodeKey.generate()
        self.challenge = b"\x33" * 32

    def _lost(self, reason: object = None) -> None:
        PeerProtocol.connectionLost(self.protocol)

    def hello(self, **changes: object) -> Hello:
        """
        A hello of the remote side that matches the host's chain.
        """
        hello = Hello(WIRE_PROTOCOL_VERSION, 7771, GENESIS, b"\x44" * 32, 100, 101, self.remote.node_id, self.challenge, 50502)
        return replace(hello, **changes)

    def receive(self, *messages: Message) -> None:
        """
        Feed messages to the protocol.
        """
        for message in messages:
            self.protocol.dataReceived(encode_frame(message))

    def sent_hello(self) -> Hello:
        """
        The hello the protocol sent when it connected.
        """
        hello = frames(self.transport)[0]
        assert isinstance(hello, Hello)
        return hello

    def handshake(self) -> None:
        """
        Complete the handshake as an honest peer.
        """
        ours = self.sent_hello()
        self.receive(self.hello(), Auth(self.remote.sign_challenge(ours.challenge)))
        self.transport.clear()

    def assertDisconnected(self, reason: DisconnectReason) -> None:
        """
        The protocol's last message is a disconnect with C{reason}, and it closed the connection.
        """
        sent = frames(self.transport)
        self.assertEqual(sent[-1], Disconnect(int(reason)))
        self.assertTrue(self.transport.disconnecting)
        self.assertEqual(self.protocol.disconnect_reason, reason)

    def test_hello_first(self) -> None:
        """
        On connection the protocol sends its hello: version, network, genesis, head, key, challenge, port.
        """
        hello = self.sent_hello()
        self.assertEqual(
            (hello.protocol_version, hello.network_id, hello.genesis_hash, hello.head_number, hello.total_difficulty),
            (WIRE_PROTOCOL_VERSION, 7771, GENESIS, 7, 8),
        )
        self.assertEqual((hello.node_id, hello.listen_port, len(hello.challenge)), (self.host.node_key.node_id, 50501, 32))

    def test_handshake(self) -> None:
        """
        A matching hello gets the signature of its challenge; a valid proof of the key adopts the peer.
        """
        ours = self.sent_hello()
        self.receive(self.hello())
        auth = frames(self.transport)[0]
        assert isinstance(auth, Auth)
        self.assertEqual(auth.signature, self.host.node_key.sign_challenge(self.challenge))
        self.receive(Auth(self.remote.sign_challenge(ours.challenge)))
        self.assertTrue(self.protocol.established)
        self.assertEqual(self.host.ready, [self.protocol])
        self.assertEqual((self.protocol.node_id, self.protocol.head_number), (self.remote.node_id, 100))
        self.assertIn(PeerEvent.SUCCESSFUL_HANDSHAKE, self.host.events)

    def test_head_moved_during_handshake(self) -> None:
        """
        Blocks adopted between the hello and the peer's proof reached only
        established peers: the new peer hears the head in a status; an
        unmoved head sends nothing more.
        """
        ours = self.sent_hello()
        self.receive(self.hello())
        self.transport.clear()
        self.host.status = replace(self.host.status, head_hash=b"\x55" * 32, head_number=9, total_difficulty=10)
        self.receive(Auth(self.remote.sign_challenge(ours.challenge)))
        self.assertEqual(frames(self.transport), [Status(b"\x55" * 32, 9, 10)])

        other = PeerProtocol(self.host, self.clock, inbound=True)
        transport = StringTransport()
        other.makeConnection(transport)
        hello = frames(transport)[0]
        assert isinstance(hello, Hello)
        remote = NodeKey.generate()
        for message in (self.hello(node_id=remote.node_id), Auth(remote.sign_challenge(hello.challenge))):
            other.dataReceived(encode_frame(message))
        self.assertTrue(other.established)
        self.assertEqual([type(message) for message in frames(transport)], [Auth])

    def test_bad_signature(self) -> None:
        """
        A signature by another key, or of another challenge, ends the connection (bad handshake).
        """
        ours = self.sent_hello()
        self.receive(self.hello(), Auth(NodeKey.generate().sign_challenge(ours.challenge)))
        self.assertDisconnected(DisconnectReason.BAD_HANDSHAKE)
        self.assertEqual(self.host.events, [PeerEvent.FAILED_HANDSHAKE])
        self.assertEqual(self.host.ready, [])

    def test_signature_of_other_challenge(self) -> None:
        """
        A signature of the wrong challenge is refused.
        """
        self.sent_hello()
        self.receive(self.hello(), Auth(self.remote.sign_challenge(b"\x00" * 32)))
        self.assertDisconnected(DisconnectReason.BAD_HANDSHAKE)

    def test_mismatches(self) -> None:
        """
        A hello of another version, network or genesis ends the connection with its reason and event.
        """
        cases = [
            ({"protocol_version": WIRE_PROTOCOL_VERSION + 1}, DisconnectReason.INCOMPATIBLE_PROTOCOL, PeerEvent.INCOMPATIBLE_PROTOCOL),
            ({"network_id": 775}, DisconnectReason.WRONG_NETWORK, PeerEvent.INVALID_NETWORK),
            ({"genesis_hash": b"\x99" * 32}, DisconnectReason.WRONG_GENESIS, PeerEvent.UNEXPECTED_GENESIS),
        ]
        for changes, reason, event in cases:
            self.setUp()
            self.sent_hello()
            self.receive(self.hello(**changes))
            self.assertDisconnected(reason)
            self.assertEqual(self.host.events, [event])

    def test_self_connection(self) -> None:
        """
        A hello with this node's own id ends the connection.
        """
        self.sent_hello()
        self.receive(self.hello(node_id=self.host.node_key.node_id))
        self.assertDisconnected(DisconnectReason.SELF_CONNECTION)

    def test_garbage(self) -> None:
        """
        Bytes that are not a message end the connection (protocol error), and the rest is ignored.
        """
        self.sent_hello()
        self.protocol.dataReceived(b"\x00\x00\x00\x05hello and more garbage")
        self.assertDisconnected(DisconnectReason.PROTOCOL_ERROR)
        self.assertEqual(self.host.events, [PeerEvent.INVALID_MESSAGE])
        self.protocol.dataReceived(encode_frame(self.hello()))
        self.assertEqual(self.transport.value(), b"")

    def test_frame_over_limit(self) -> None:
        """
        A length prefix above the limit ends the connection before the frame arrives.
        """
        self.sent_hello()
        self.protocol.dataReceived((self.host.peer_settings.max_frame_bytes + 1).to_bytes(4, "big"))
        self.assertDisconnected(DisconnectReason.FRAME_TOO_LARGE)

    def test_frames_split_and_joined(self) -> None:
        """
        Frames cut anywhere and several in one read are all handled.
        """
        ours = self.sent_hello()
        data = encode_frame(self.hello()) + encode_frame(Auth(self.remote.sign_challenge(ours.challenge))) + encode_frame(GetPeers())
        for index in range(len(data)):
            self.protocol.dataReceived(data[index : index + 1])
        self.assertTrue(self.protocol.established)
        self.assertEqual(self.host.messages, [GetPeers()])

    def test_message_before_handshake(self) -> None:
        """
        Anything but a hello first ends the connection: an unexpected
        message of the address (no identity is proven), and a failed
        handshake for the host to count.
        """
        self.sent_hello()
        self.receive(GetPeers())
        self.assertDisconnected(DisconnectReason.UNEXPECTED_MESSAGE)
        self.assertEqual((self.host.events, self.host.proven), ([PeerEvent.UNEXPECTED_MESSAGE], [False]))
        self.assertEqual(self.host.failures, ["GET_PEERS before the handshake"])

    def test_handshake_timeout(self) -> None:
        """
        A peer that does not finish the handshake in the handshake time is
        dropped: a failed handshake of its address, counted by the host.
        """
        self.sent_hello()
        self.receive(self.hello())
        self.clock.advance(2.9)
        self.assertFalse(self.transport.disconnecting)
        self.clock.advance(0.2)
        self.assertDisconnected(DisconnectReason.HANDSHAKE_TIMEOUT)
        self.assertEqual((self.host.events, self.host.proven), ([PeerEvent.FAILED_HANDSHAKE], [False]))
        self.assertEqual(self.host.failures, ["handshake timed out"])

    def test_events_against_the_proven_identity(self) -> None:
        """
        Before the proof of its key a peer's events are its address's (its
        hello's node id is only a claim); from the proof on, its node id's.
        """
        ours = self.sent_hello()
        self.receive(self.hello(), Auth(self.remote.sign_challenge(ours.challenge)))
        self.assertEqual((self.host.events, self.host.proven), ([PeerEvent.SUCCESSFUL_HANDSHAKE], [True]))
        self.setUp()
        self.sent_hello()
        self.receive(self.hello(), Auth(NodeKey.generate().sign_challenge(b"\x00" * 32)))
        self.assertEqual((self.host.events, self.host.proven), ([PeerEvent.FAILED_HANDSHAKE], [False]))
        self.assertEqual(self.host.failures, ["bad proof of its key"])

    def test_frames_before_the_handshake_are_small(self) -> None:
        """
        Before the handshake is done a frame may be no longer than the
        longest hello: a longer length prefix ends the connection at once,
        an offence of the address.  After it, frames up to the frame limit
        are read.
        """
        self.sent_hello()
        self.protocol.dataReceived((HANDSHAKE_FRAME_BYTES + 1).to_bytes(4, "big"))
        self.assertDisconnected(DisconnectReason.FRAME_TOO_LARGE)
        self.assertEqual((self.host.events, self.host.proven), ([PeerEvent.INVALID_MESSAGE], [False]))
        self.setUp()
        self.handshake()
        self.receive(Transactions(tuple(sample_transaction(nonce) for nonce in range(100))))
        self.assertFalse(self.transport.disconnecting)
        self.assertEqual(len(self.host.messages), 1)

    def test_refused_address(self) -> None:
        """
        A connection from an address the reputation refuses is closed at once.
        """
        host = FakeHost()
        host.allowed = False
        transport = StringTransport()
        PeerProtocol(host, self.clock, inbound=True).makeConnection(transport)
        self.assertEqual(frames(transport), [Disconnect(int(DisconnectReason.BAD_REPUTATION))])

    def test_refused_after_handshake(self) -> None:
        """
        A peer the host refuses (too many peers) gets the host's reason.
        """
        self.host.refuse = DisconnectReason.TOO_MANY_PEERS
        ours = self.sent_hello()
        self.receive(self.hello(), Auth(self.remote.sign_challenge(ours.challenge)))
        self.assertDisconnected(DisconnectReason.TOO_MANY_PEERS)

    def test_ping(self) -> None:
        """
        A ping is answered with a pong of the same nonce.
        """
        self.handshake()
        self.receive(Ping(77))
        self.assertEqual(frames(self.transport), [Pong(77)])

    def dialer(self) -> None:
        """
        Make the protocol under test the side that dialed (the one that pings).
        """
        self.protocol = PeerProtocol(self.host, self.clock, inbound=False)
        self.transport = StringTransport()
        self.protocol.makeConnection(self.transport)
        self.protocol.connectionLost = self._lost  # type: ignore[method-assign]

    def test_keep_alive(self) -> None:
        """
        The side that dialed pings an idle connection every interval; a
        peer silent for three intervals is dropped.
        """
        self.dialer()
        self.handshake()
        self.clock.advance(15)
        self.assertIsInstance(frames(self.transport)[0], Ping)
        self.clock.advance(15)
        self.clock.advance(15)
        self.clock.advance(15)
        self.assertDisconnected(DisconnectReason.REQUEST_TIMEOUT)

    def test_accepting_side_does_not_ping(self) -> None:
        """
        The side that accepted the connection never pings (the dialer
        does: one ping per idle interval, not two); it still drops a peer
        silent for more than three intervals.
        """
        self.handshake()
        for _ in range(3):
            self.clock.advance(15)
            self.assertEqual(frames(self.transport), [])
        self.assertFalse(self.transport.disconnecting)
        self.clock.advance(15)
        self.assertDisconnected(DisconnectReason.REQUEST_TIMEOUT)

    def test_accepting_side_kept_alive_by_pings(self) -> None:
        """
        The dialer's pings keep the accepting side from dropping it.
        """
        self.handshake()
        for nonce in range(10):
            self.clock.advance(15)
            self.receive(Ping(nonce))
            self.assertEqual(frames(self.transport), [Pong(nonce)])
        self.assertFalse(self.transport.disconnecting)

    def test_no_ping_on_a_busy_connection(self) -> None:
        """
        A connection with messages both ways within the interval is not
        pinged: the next ping goes an interval after the older of the last
        message received and the last sent, and the peer is dropped once
        silent for more than three intervals.
        """
        self.dialer()
        self.handshake()
        self.clock.advance(10)
        self.receive(Ping(1))
        self.assertEqual(frames(self.transport), [Pong(1)])
        self.clock.advance(5)
        self.assertEqual(frames(self.transport), [])
        self.clock.advance(10)
        self.assertIsInstance(frames(self.transport)[0], Ping)
        self.clock.advance(15)
        self.clock.advance(15)
        self.assertFalse(self.transport.disconnecting)
        self.clock.advance(15)
        self.assertDisconnected(DisconnectReason.REQUEST_TIMEOUT)

    def test_ping_when_only_receiving(self) -> None:
        """
        A dialer that hears from the peer but has sent nothing for an
        interval pings anyway: else the peer would find it silent.
        """
        self.dialer()
        self.handshake()
        for _ in range(3):
            self.clock.advance(5)
            self.receive(GetPeers())
        sent = [message for message in frames(self.transport) if isinstance(message, Ping)]
        self.assertEqual(len(sent), 1)

    def test_flood(self) -> None:
        """
        More messages in one second than the limit end the connection.
        """
        self.handshake()
        for _ in range(48):
            self.receive(Ping(1))
        self.assertFalse(self.transport.disconnecting)
        self.receive(Ping(1))
        self.assertDisconnected(DisconnectReason.FLOOD)
        self.assertIn(PeerEvent.INVALID_MESSAGE, self.host.events)

    def test_backlog_after_a_pause_is_no_flood(self) -> None:
        """
        Messages the peer sent while this node was not reading from it
        arrive together when reading resumes: within the limit's rate over
        the paused time, they are no flood.
        """
        self.host.peer_settings = replace(self.host.peer_settings, max_queued_messages=40)
        self.handshake()
        self.host.handled = []
        self.receive(*[GetPeers()] * 40)
        self.assertTrue(self.protocol.paused)
        self.clock.advance(3)
        while self.host.handled:
            self.host.handled.pop(0).callback(None)
        self.assertFalse(self.protocol.paused)
        self.host.handled = None
        self.protocol.dataReceived(encode_frame(GetPeers()) * 150)
        self.assertFalse(self.transport.disconnecting)
        self.assertEqual(len(self.host.messages), 40 + 150)
        self.receive(*[GetPeers()] * 20)
        self.assertDisconnected(DisconnectReason.FLOOD)

    def test_flood_window(self) -> None:
        """
        The limit is per second: the same number of messages spread over two seconds is fine.
        """
        self.handshake()
        for _ in range(40):
            self.receive(Ping(1))
        self.clock.advance(1)
        for _ in range(40):
            self.receive(Ping(1))
        self.assertFalse(self.transport.disconnecting)

    def test_request_answered(self) -> None:
        """
        An answer with the request's id fires the request's Deferred.
        """
        self.handshake()
        waiter = self.protocol.request_headers(5, 2)
        request = frames(self.transport)[0]
        self.receive(BlockHeaders(request.request_id, ()))  # type: ignore[attr-defined]
        self.assertEqual(self.successResultOf(waiter), ())

    def big_answer(self, request_id: int) -> BlockHeaders:
        """
        A header answer longer than L{THREAD_DECODE_BYTES}.
        """
        count = THREAD_DECODE_BYTES // len(sample_header().encode()) + 1
        return BlockHeaders(request_id, tuple(sample_header(number) for number in range(count)))

    def test_large_frame_decoded_off_the_reactor(self) -> None:
        """
        A frame of at least L{THREAD_DECODE_BYTES} goes to the host's
        decoder, which also hashes its headers; the frames behind it wait
        for it, so messages are still handled in order.
        """
        self.handshake()
        self.host.held_decodes = []
        waiter = self.protocol.request_headers(0, 512)
        request = frames(self.transport)[0]
        answer = self.big_answer(request.request_id)  # type: ignore[attr-defined]
        self.receive(answer, GetPeers())
        self.assertEqual(len(self.host.held_decodes), 1)
        self.assertNoResult(waiter)
        self.assertEqual(self.host.messages, [])
        self.host.held_decodes.pop().callback(encode_frame(answer)[4:])
        headers = self.successResultOf(waiter)
        self.assertEqual(headers, answer.headers)
        self.assertTrue(all("hash" in vars(header) for header in headers))
        self.assertEqual(self.host.messages, [GetPeers()])

    def test_small_frame_decoded_at_once(self) -> None:
        """
        A frame below L{THREAD_DECODE_BYTES} is decoded and handled at once.
        """
        self.handshake()
        self.host.held_decodes = []
        self.receive(GetPeers())
        self.assertEqual((self.host.held_decodes, self.host.messages), ([], [GetPeers()]))

    def test_large_garbage(self) -> None:
        """
        A large frame that is not a message ends the connection with a protocol error.
        """
        self.handshake()
        payload = b"\xff" * THREAD_DECODE_BYTES
        self.protocol.dataReceived(len(payload).to_bytes(4, "big") + payload)
        self.assertDisconnected(DisconnectReason.PROTOCOL_ERROR)
        self.assertEqual(self.host.events[-1], PeerEvent.INVALID_MESSAGE)

    def test_paused_while_frames_wait(self) -> None:
        """
        While more than the queue's bytes of frames waits for the decoder,
        the peer's stream is paused; it resumes once they are handled.
        """
        self.host.peer_settings = replace(self.host.peer_settings, max_queued_bytes=3 * THREAD_DECODE_BYTES)
        self.handshake()
        self.host.held_decodes = []
        answers = [self.big_answer(request_id) for request_id in range(1, 5)]
        self.receive(*answers)
        self.assertEqual(self.transport.producerState, "paused")
        while self.host.held_decodes:
            self.host.held_decodes.pop(0).callback(encode_frame(answers[0])[4:])
        self.assertEqual(self.transport.producerState, "producing")

    def test_queue_bounded(self) -> None:
        """
        A peer's messages stay in its inbound queue until handled; at
        C{max_queued_messages} the node stops reading (the stream is paused
        and what was read is not cut into more frames), and reads on once a
        message is handled.
        """
        self.host.peer_settings = replace(self.host.peer_settings, messages_per_second=1000)
        self.handshake()
        self.host.handled = []
        limit = self.host.peer_settings.max_queued_messages
        self.protocol.dataReceived(encode_frame(GetPeers()) * (limit + 5))
        self.assertEqual((len(self.host.messages), self.protocol.queued), (limit, limit))
        self.assertEqual(self.transport.producerState, "paused")
        self.assertTrue(self.protocol.paused)
        self.host.handled.pop(0).callback(None)
        self.assertEqual(len(self.host.messages), limit + 1)
        self.assertEqual(self.transport.producerState, "paused")
        while self.host.handled:
            self.host.handled.pop(0).callback(None)
        self.assertEqual((len(self.host.messages), self.protocol.queued), (limit + 5, 0))
        self.assertEqual(self.transport.producerState, "producing")

    def test_queue_bounded_by_bytes(self) -> None:
        """
        The queue is also bounded by the bytes of its frames.
        """
        self.host.peer_settings = replace(self.host.peer_settings, max_queued_bytes=70000)
        self.handshake()
        self.host.handled = []
        big = Transactions(tuple(sample_transaction(nonce, data=b"\x01" * 30000) for nonce in range(1)))
        self.receive(big, big, big)
        self.assertEqual((len(self.host.messages), self.protocol.queued), (3, 3))
        self.assertEqual(self.transport.producerState, "paused")
        self.host.handled.pop(0).callback(None)
        self.assertEqual(self.transport.producerState, "producing")

    def test_no_timeout_while_paused(self) -> None:
        """
        While the node does not read from a peer (its queue is full), the
        peer's answers may wait in the stream: an unanswered request or a
        silence is not held against it; once reading resumes it gets the
        time again.
        """
        self.host.peer_settings = replace(self.host.peer_settings, messages_per_second=1000)
        self.handshake()
        waiter = self.protocol.request_headers(5, 2)
        self.host.handled = []
        self.receive(*[GetPeers()] * self.host.peer_settings.max_queued_messages)
        self.assertTrue(self.protocol.paused)
        self.clock.advance(60)
        self.assertFalse(self.transport.disconnecting)
        self.assertNoResult(waiter)
        while self.host.handled:
            self.host.handled.pop(0).callback(None)
        self.clock.advance(4.9)
        self.assertFalse(self.transport.disconnecting)
        self.clock.advance(5.1)
        self.failureResultOf(waiter, RequestTimeoutError)
        self.assertDisconnected(DisconnectReason.REQUEST_TIMEOUT)

    def test_request_timeout(self) -> None:
        """
        A request unanswered in the request time fails, and the peer is dropped.
        """
        self.handshake()
        waiter = self.protocol.request_headers(5, 2)
        self.clock.advance(5)
        self.failureResultOf(waiter, RequestTimeoutError)
        self.assertDisconnected(DisconnectReason.REQUEST_TIMEOUT)
        self.assertIn(PeerEvent.TIMEOUT_MESSAGE, self.host.events)

    def test_request_peer_gone(self) -> None:
        """
        A request in flight fails when the connection ends.
        """
        self.handshake()
        waiter = self.protocol.request_headers(5, 2)
        self.protocol.connectionLost()
        self.failureResultOf(waiter, PeerGoneError)
        self.assertEqual(self.host.lost, [self.protocol])

    def test_unsolicited_answer(self) -> None:
        """
        An answer to no request is recorded as unexpected and ignored.
        """
        self.handshake()
        self.receive(BlockHeaders(99, ()))
        self.assertEqual(self.host.events[-1], PeerEvent.UNEXPECTED_MESSAGE)
        self.assertFalse(self.transport.disconnecting)

    def test_too_many_headers(self) -> None:
        """
        More headers than asked is a protocol error.
        """
        self.handshake()
        waiter = self.protocol.request_headers(5, 1)
        request = frames(self.transport)[0]
        header = sample_header()
        self.receive(BlockHeaders(request.request_id, (header, header)))  # type: ignore[attr-defined]
        self.failureResultOf(waiter)
        self.assertDisconnected(DisconnectReason.PROTOCOL_ERROR)

    def test_serving_limit(self) -> None:
        """
        A peer with more requests in flight than the limit is dropped.
        """
        self.handshake()
        for _ in range(self.host.peer_settings.max_outstanding_requests):
            self.assertTrue(self.protocol.begin_serving())
        self.assertFalse(self.protocol.begin_serving())
        self.assertDisconnected(DisconnectReason.FLOOD)

    def test_disconnect_received(self) -> None:
        """
        A disconnect from the peer closes the connection and records its reason.
        """
        self.handshake()
        self.receive(Disconnect(int(DisconnectReason.TOO_MANY_PEERS)))
        self.assertTrue(self.transport.disconnecting)
        self.assertEqual(self.protocol.received_disconnect, DisconnectReason.TOO_MANY_PEERS)
