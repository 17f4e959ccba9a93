"""
Tests for L{nodex.p2p.secure}, the encrypted transport: the known-answer
vectors of C{docs/p2p.md}, sealed frames that are tampered with, replayed,
reordered or truncated, the rekey boundary, and two L{PeerProtocol}s over
C{StringTransport}s: their handshake, a peer that cannot prove its node id,
a man in the middle with its own keys, and frames changed on the way.
"""

from collections.abc import Callable

from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport
from twisted.trial.unittest import SynchronousTestCase

from nodex.api.peers import PeerEvent
from nodex.p2p.messages import WIRE_PROTOCOL_VERSION
from nodex.p2p.errors import DisconnectReason
from nodex.p2p.framing import FrameTooLargeError
from nodex.p2p.host import PeerSettings
from nodex.p2p.identity import NodeKey, verify_challenge
from nodex.p2p.messages import Auth, Disconnect, GetPeers, Hello, Ping, Status, decode_message, encode_frame, encode_message
from nodex.p2p.protocol import PeerProtocol
from nodex.p2p.secure import (
    EPHEMERAL_KEY_BYTES,
    TAG_BYTES,
    FrameAuthenticationError,
    KeyExchangeError,
    SecureFraming,
    ephemeral_public_key,
    next_key,
    seal,
    session_id,
    session_keys,
    shared_secret,
)
from tests.p2p.test_protocol import FakeHost

# The vectors of docs/p2p.md ("Test vectors").
INITIATOR_EPHEMERAL = bytes([0x11]) * 32
RESPONDER_EPHEMERAL = bytes([0x22]) * 32
VECTORS = {
    "E_i": "4f355bdcb7cc0af728ef3cceb9615d90684bb5b2ca5f859ab0f0b704075871aa"
           "385b6b1b8ead809ca67454d9683fcf2ba03456d6fe2c4abe2b07f0fbdbb2f1c1",
    "E_r": "466d7fcae563e5cb09a0d1870bb580344804617879a14949cf22285f1bae3f27"
           "6728176c3c6431f8eeda4538dc37c865e2784f3a9e77d044f33e407797e1278a",
    "secret": "b36b6d195982c5be874d6d542dc268234379e1ae4ff1709402135b7de5cf0766",
    "session": "66109804afd14e7f9d6ba98ce273dc763e0da031e537c6813d6efd97bf696687",
    "k_ir": "61ae035be4874eeda82462c77cb7e8d48c6d6f239fd4b6025e87a606e2498ff1",
    "k_ri": "b64d22bd2c3afdfd5a9186fc1e766844daba48ca83f4cc1a53ca3a32efa7909a",
    "ping": "c20301",
    "frame0_ir": "000000038b086b3693614f3147310250306ab4bdd953b5",
    "frame1_ir": "00000003b3f6a5346efab1cb83d5bf93283b14b8bcacc2",
    "frame0_ri": "000000033f0d14267a634fd4783800e097d711cec5bc3f",
    "next_k_ir": "2f1f6128c26299d87ebba1eecbc86957c6fb35fd7c2678e5478e01093d08b5f8",
    "node_id": "3c72addb4fdf09af94f0c94d7fe92a386a7e70cf8a1d85916386bb2535c7b1b1"
               "3b306b0fe085665d8fc1b28ae1676cd3ad6e08eaeda225fe38d0da4de55703e0",
    "auth": "f84401b841bb05358d7aafffbf1652e7bcc0e2f667c57b41f62f49765f6ae17e4d27a11e"
            "06447c0c79e20bb3acf813c50b742378703899abd5a8907e5d6d1de0812bb3269f00",
}


def pair(**options: int) -> tuple[SecureFraming, SecureFraming]:
    """
    A dialer's and a listener's framing, their keys exchanged.
    """
    initiator = SecureFraming(initiator=True, limit=1 << 20, **options)
    responder = SecureFraming(initiator=False, limit=1 << 20, **options)
    initiator.feed(responder.preamble)
    responder.feed(initiator.preamble)
    assert initiator.exchange() and responder.exchange()
    return initiator, responder


class VectorTests(SynchronousTestCase):
    """
    The known answers of C{docs/p2p.md}: fixed keys give these bytes.
    """

    def test_key_exchange(self) -> None:
        """
        Ephemeral keys, shared secret, session id and the keys of both directions.
        """
        public_i, public_r = ephemeral_public_key(INITIATOR_EPHEMERAL), ephemeral_public_key(RESPONDER_EPHEMERAL)
        self.assertEqual((public_i.hex(), public_r.hex()), (VECTORS["E_i"], VECTORS["E_r"]))
        secret = shared_secret(INITIATOR_EPHEMERAL, public_r)
        self.assertEqual(secret, shared_secret(RESPONDER_EPHEMERAL, public_i))
        self.assertEqual(secret.hex(), VECTORS["secret"])
        session = session_id(public_i, public_r)
        self.assertEqual(session.hex(), VECTORS["session"])
        outbound, inbound = session_keys(secret, session)
        self.assertEqual((outbound.hex(), inbound.hex()), (VECTORS["k_ir"], VECTORS["k_ri"]))
        self.assertEqual(next_key(outbound).hex(), VECTORS["next_k_ir"])

    def test_frames(self) -> None:
        """
        The first two frames of PING(1) from the dialer, the first from the
        listener: what both framings of the fixed keys send and open.
        """
        payload = encode_message(Ping(1))
        self.assertEqual(payload.hex(), VECTORS["ping"])
        key_ir, key_ri = bytes.fromhex(VECTORS["k_ir"]), bytes.fromhex(VECTORS["k_ri"])
        self.assertEqual(seal(key_ir, 0, payload).hex(), VECTORS["frame0_ir"])
        self.assertEqual(seal(key_ir, 1, payload).hex(), VECTORS["frame1_ir"])
        self.assertEqual(seal(key_ri, 0, payload).hex(), VECTORS["frame0_ri"])
        initiator = SecureFraming(initiator=True, private_key=INITIATOR_EPHEMERAL)
        responder = SecureFraming(initiator=False, private_key=RESPONDER_EPHEMERAL)
        initiator.feed(responder.preamble)
        responder.feed(initiator.preamble + bytes.fromhex(VECTORS["frame0_ir"] + VECTORS["frame1_ir"]))
        self.assertTrue(initiator.exchange() and responder.exchange())
        self.assertEqual([initiator.frame(payload).hex() for _ in range(2)], [VECTORS["frame0_ir"], VECTORS["frame1_ir"]])
        self.assertEqual(responder.frame(payload).hex(), VECTORS["frame0_ri"])
        self.assertEqual([responder.next_frame(), responder.next_frame(), responder.next_frame()], [payload, payload, None])
        self.assertEqual(initiator.session, bytes.fromhex(VECTORS["session"]))

    def test_auth(self) -> None:
        """
        The AUTH of node key 0x33..33 answering challenge 0x44..44 in the vectors' session.
        """
        key = NodeKey.from_private_key(bytes([0x33]) * 32)
        self.assertEqual(key.node_id.hex(), VECTORS["node_id"])
        session = bytes.fromhex(VECTORS["session"])
        signature = key.sign_challenge(bytes([0x44]) * 32, session)
        self.assertEqual(encode_message(Auth(signature)).hex(), VECTORS["auth"])
        self.assertTrue(verify_challenge(signature, bytes([0x44]) * 32, key.node_id, session))
        self.assertFalse(verify_challenge(signature, bytes([0x44]) * 32, key.node_id, b"\x00" * 32))
        self.assertFalse(verify_challenge(signature, bytes([0x44]) * 32, key.node_id))


class FramingTests(SynchronousTestCase):
    """
    Sealed frames, and what a change on the way does to them.
    """

    def test_both_ways(self) -> None:
        """
        Each side opens what the other sealed, in order, under its own direction's key.
        """
        initiator, responder = pair()
        self.assertEqual(initiator.session, responder.session)
        responder.feed(initiator.frame(b"one") + initiator.frame(b"") + initiator.frame(b"three"))
        initiator.feed(responder.frame(b"back"))
        self.assertEqual([responder.next_frame() for _ in range(4)], [b"one", b"", b"three", None])
        self.assertEqual(initiator.next_frame(), b"back")
        self.assertEqual(len(initiator.frame(b"x" * 10)), 4 + 10 + TAG_BYTES)

    def test_frame_by_byte(self) -> None:
        """
        A frame fed a byte at a time opens once whole, and not before.
        """
        initiator, responder = pair()
        sealed = initiator.frame(b"hello there")
        for byte in sealed[:-1]:
            responder.feed(bytes([byte]))
            self.assertIsNone(responder.next_frame())
        responder.feed(sealed[-1:])
        self.assertEqual(responder.next_frame(), b"hello there")
        self.assertEqual(responder.buffered, 0)

    def test_segments_across_frames(self) -> None:
        """
        Frames opened straight from the segments that carry them: a segment
        ending inside a frame, segments fed before the frames of the first
        are read, a frame's length prefix split between segments; each
        payload is C{bytes}, and nothing stays buffered.
        """
        initiator, responder = pair()
        sealed = [initiator.frame(b"frame %d" % index) for index in range(5)]
        responder.feed(sealed[0] + sealed[1][:7])
        self.assertEqual(responder.next_frame(), b"frame 0")
        self.assertIsNone(responder.next_frame())
        self.assertEqual(responder.buffered, 7)
        responder.feed(sealed[1][7:] + sealed[2])
        responder.feed(sealed[3][:2])
        responder.feed(sealed[3][2:])
        responder.feed(sealed[4])
        opened = [responder.next_frame() for _ in range(5)]
        self.assertEqual(opened, [b"frame 1", b"frame 2", b"frame 3", b"frame 4", None])
        self.assertEqual({type(payload) for payload in opened[:4]}, {bytes})
        self.assertEqual(responder.buffered, 0)
        responder.feed(initiator.frame(b"last"))
        self.assertEqual(responder.buffered, 4 + 4 + TAG_BYTES)
        self.assertEqual(responder.next_frame(), b"last")

    def test_limit_in_segment(self) -> None:
        """
        A frame past the limit is refused on its length prefix after a whole
        frame of the same segment opened.
        """
        initiator, responder = pair()
        responder.limit = 10
        responder.feed(initiator.frame(b"x" * 10) + initiator.frame(b"y" * 11))
        self.assertEqual(responder.next_frame(), b"x" * 10)
        with self.assertRaises(FrameTooLargeError):
            responder.next_frame()

    def assertRefuses(self, change: Callable[[list[bytes]], list[bytes]]) -> None:
        """
        Frames changed by C{change} on the way fail authentication at the first changed one.
        """
        initiator, responder = pair()
        frames = [initiator.frame(b"frame %d" % index) for index in range(3)]
        responder.feed(b"".join(change(frames)))
        with self.assertRaises(FrameAuthenticationError):
            for _ in range(3):
                responder.next_frame()

    def test_tampered(self) -> None:
        """
        One flipped bit in the ciphertext, in the tag, or in the length (authenticated as well).
        """
        for position in (4, -1, 3):
            def flip(frames: list[bytes], position: int = position) -> list[bytes]:
                second = bytearray(frames[1])
                second[position] ^= 1
                return [frames[0], bytes(second), frames[2]]

            self.assertRefuses(flip)

    def test_replayed(self) -> None:
        """
        A frame sent again.
        """
        self.assertRefuses(lambda frames: [frames[0], frames[0], frames[1]])

    def test_reordered(self) -> None:
        """
        Two frames swapped.
        """
        self.assertRefuses(lambda frames: [frames[1], frames[0], frames[2]])

    def test_dropped(self) -> None:
        """
        A frame left out: the next is opened with the wrong counter.
        """
        self.assertRefuses(lambda frames: [frames[0], frames[2]])

    def test_truncated(self) -> None:
        """
        A frame cut short is never opened: it waits for the rest (the
        connection's end or the silence timeout ends it), holding only its bytes.
        """
        initiator, responder = pair()
        sealed = initiator.frame(b"x" * 100)
        responder.feed(sealed[:-5])
        self.assertIsNone(responder.next_frame())
        self.assertEqual(responder.buffered, len(sealed) - 5)

    def test_limit_before_opening(self) -> None:
        """
        A length above the limit is refused on its 4 bytes, before anything
        of the frame is buffered or opened.
        """
        initiator, responder = pair()
        responder.limit = 1000
        responder.feed((1001).to_bytes(4, "big"))
        with self.assertRaises(FrameTooLargeError):
            responder.next_frame()
        responder.feed(b"")
        responder.limit = 1 << 20
        initiator_fresh, responder_fresh = pair()
        responder_fresh.limit = 10
        responder_fresh.feed(initiator_fresh.frame(b"x" * 10))
        self.assertEqual(responder_fresh.next_frame(), b"x" * 10)

    def test_rekey_boundary(self) -> None:
        """
        After the frame that completes a key's count, both sides replace it:
        frames on either side of the boundary open, and a receiver that
        does not rekey at the same frame fails on the first frame after it.
        """
        initiator, responder = pair(rekey_frames=3)
        first_key = initiator._send.key  # type: ignore[union-attr]
        sealed = [initiator.frame(b"%d" % index) for index in range(7)]
        self.assertEqual(initiator._send.key, next_key(next_key(first_key)))  # type: ignore[union-attr]
        self.assertEqual(initiator._send.counter, 1)  # type: ignore[union-attr]
        responder.feed(b"".join(sealed))
        self.assertEqual([responder.next_frame() for _ in range(7)], [b"%d" % index for index in range(7)])
        initiator, late = pair(rekey_frames=3)
        late._receive._rekey_frames = 4  # type: ignore[union-attr]
        late.feed(b"".join(initiator.frame(b"%d" % index) for index in range(4)))
        self.assertEqual([late.next_frame() for _ in range(3)], [b"0", b"1", b"2"])
        with self.assertRaises(FrameAuthenticationError):
            late.next_frame()

    def test_rekey_by_bytes(self) -> None:
        """
        A key is also replaced once it sealed the byte bound.
        """
        initiator, responder = pair(rekey_bytes=100)
        first_key = initiator._send.key  # type: ignore[union-attr]
        responder.feed(initiator.frame(b"x" * 60) + initiator.frame(b"y" * 40) + initiator.frame(b"z"))
        self.assertEqual(initiator._send.key, next_key(first_key))  # type: ignore[union-attr]
        self.assertEqual([responder.next_frame() for _ in range(3)], [b"x" * 60, b"y" * 40, b"z"])

    def test_not_a_point(self) -> None:
        """
        An ephemeral key off the curve, or the opening of a plaintext peer, is refused.
        """
        for opening in (b"\x00" * EPHEMERAL_KEY_BYTES, encode_frame(Ping(1)) + b"\x00" * 60):
            framing = SecureFraming(initiator=False)
            framing.feed(opening)
            with self.assertRaises(KeyExchangeError):
                framing.exchange()

    def test_ephemeral_key_forgotten(self) -> None:
        """
        The ephemeral private key is dropped once the session keys are derived (forward secrecy).
        """
        initiator, _ = pair()
        self.assertIsNone(initiator._private_key)


class Wire:
    """
    Two endpoints' transports, bytes carried between them by the test (and
    changed on the way by C{tamper}).
    """

    def __init__(self, left: PeerProtocol, right: PeerProtocol) -> None:
        self.left, self.right = left, right
        self.left_transport, self.right_transport = StringTransport(), StringTransport()
        self.tamper: Callable[[bytes], bytes] | None = None

    def connect(self) -> None:
        self.left.makeConnection(self.left_transport)
        self.right.makeConnection(self.right_transport)
        self.flow()

    def flow(self) -> None:
        """
        Carry bytes both ways until both sides are quiet.
        """
        while True:
            to_right, to_left = self.left_transport.value(), self.right_transport.value()
            if not to_right and not to_left:
                return
            self.left_transport.clear()
            self.right_transport.clear()
            if to_right and not self.right.closed:
                self.right.dataReceived(self.tamper(to_right) if self.tamper else to_right)
            if to_left and not self.left.closed:
                self.left.dataReceived(to_left)


class SessionlessKey(NodeKey):
    """
    A node key that signs its AUTH as over a plaintext connection, whatever the session.
    """

    def sign_challenge(self, challenge: bytes, session: bytes = b"") -> bytes:
        return NodeKey.sign_challenge(self, challenge)


def secure_host() -> FakeHost:
    """
    A fake host whose connections speak the encrypted transport.
    """
    return FakeHost(settings=PeerSettings(messages_per_second=50, handshake_timeout=3.0, encryption=True))


class SecureProtocolTests(SynchronousTestCase):
    """
    Two protocols over the encrypted transport.
    """

    def setUp(self) -> None:
        self.clock = Clock()
        self.dialer_host, self.listener_host = secure_host(), secure_host()
        self.dialer = PeerProtocol(self.dialer_host, self.clock, inbound=False)
        self.listener = PeerProtocol(self.listener_host, self.clock, inbound=True)
        self.wire = Wire(self.dialer, self.listener)

    def test_handshake(self) -> None:
        """
        Both sides establish, each knowing the other's node id, over one session.
        """
        self.wire.connect()
        self.assertTrue(self.dialer.established and self.listener.established)
        self.assertEqual(self.dialer.proven_node_id, self.listener_host.node_key.node_id)
        self.assertEqual(self.listener.proven_node_id, self.dialer_host.node_key.node_id)
        self.assertEqual(self.dialer.session, self.listener.session)
        self.assertEqual(len(self.dialer.session), 32)
        self.dialer.send(Ping(7))
        self.wire.flow()
        self.assertFalse(self.dialer.closed)

    def test_nothing_readable(self) -> None:
        """
        Nothing of the hello appears in the clear: not the node id, not the genesis hash.
        """
        self.dialer.makeConnection(self.wire.left_transport)
        self.listener.makeConnection(self.wire.right_transport)
        sent = b""
        while True:
            to_right, to_left = self.wire.left_transport.value(), self.wire.right_transport.value()
            if not to_right and not to_left:
                break
            sent += to_right + to_left
            self.wire.left_transport.clear()
            self.wire.right_transport.clear()
            self.listener.dataReceived(to_right)
            self.dialer.dataReceived(to_left)
        self.assertTrue(self.dialer.established)
        for secret in (self.dialer_host.node_key.node_id, self.listener_host.node_key.node_id, self.dialer_host.status.genesis_hash):
            self.assertNotIn(secret, sent)

    def assertOffence(self, tamper: Callable[[bytes], bytes]) -> None:
        """
        Once established, the dialer's next frames changed by C{tamper}:
        the listener disconnects it (bad frame) and records an offence of its node id.
        """
        self.wire.connect()
        self.assertTrue(self.listener.established)
        del self.listener_host.events[:], self.listener_host.proven[:]
        self.wire.tamper = tamper
        self.dialer.send(Ping(1))
        self.dialer.send(Ping(2))
        self.wire.flow()
        self.assertEqual(self.listener.disconnect_reason, DisconnectReason.BAD_FRAME)
        self.assertEqual((self.listener_host.events, self.listener_host.proven), ([PeerEvent.INVALID_MESSAGE], [True]))
        self.assertEqual(self.dialer.received_disconnect, DisconnectReason.BAD_FRAME)

    def test_flipped_byte(self) -> None:
        """
        One byte of a frame flipped on the way.
        """
        self.assertOffence(lambda data: data[:-1] + bytes([data[-1] ^ 0x80]))

    def test_replayed_frame(self) -> None:
        """
        The first frame played twice.
        """
        self.assertOffence(lambda data: data[: len(data) // 2] * 2 + data[len(data) // 2 :])

    def test_reordered_frames(self) -> None:
        """
        The two frames swapped.
        """
        self.assertOffence(lambda data: data[len(data) // 2 :] + data[: len(data) // 2])

    def test_wrong_node_id(self) -> None:
        """
        A dialer whose hello names another node's id cannot sign for it: a
        bad handshake, a failed handshake of its address.
        """
        impostor = NodeKey.generate()
        self.dialer_host.node_key = NodeKey(impostor.private_key, NodeKey.generate().node_id)
        self.wire.connect()
        self.assertEqual(self.listener.disconnect_reason, DisconnectReason.BAD_HANDSHAKE)
        self.assertIn(PeerEvent.FAILED_HANDSHAKE, self.listener_host.events)
        self.assertEqual(self.listener_host.ready, [])

    def test_plaintext_signature(self) -> None:
        """
        An AUTH that signs no session (a plaintext one, replayed into an encrypted session) is refused.
        """
        key = self.dialer_host.node_key
        self.dialer_host.node_key = SessionlessKey(key.private_key, key.node_id)
        self.wire.connect()
        self.assertEqual(self.listener.disconnect_reason, DisconnectReason.BAD_HANDSHAKE)
        self.assertEqual(self.listener_host.ready, [])

    def test_man_in_the_middle(self) -> None:
        """
        A relay with its own ephemeral keys runs one key exchange with each
        side and passes every message across, opened and sealed again: each
        side's AUTH signs its own session, so neither side accepts the other.
        """
        self.dialer.makeConnection(self.wire.left_transport)
        self.listener.makeConnection(self.wire.right_transport)
        toward_dialer = SecureFraming(initiator=False, limit=1 << 20)
        toward_listener = SecureFraming(initiator=True, limit=1 << 20)
        self.dialer.dataReceived(toward_dialer.preamble)
        self.listener.dataReceived(toward_listener.preamble)
        for _ in range(10):
            from_dialer = self.wire.left_transport.value()
            from_listener = self.wire.right_transport.value()
            self.wire.left_transport.clear()
            self.wire.right_transport.clear()
            if not from_dialer and not from_listener:
                break
            toward_dialer.feed(from_dialer)
            toward_listener.feed(from_listener)
            toward_dialer.exchange()
            toward_listener.exchange()
            for source, target, protocol in ((toward_dialer, toward_listener, self.listener), (toward_listener, toward_dialer, self.dialer)):
                while (payload := source.next_frame()) is not None:
                    if not protocol.closed and target.ready:
                        protocol.dataReceived(target.frame(payload))
        self.assertFalse(self.dialer.established or self.listener.established)
        self.assertEqual(
            {self.dialer.disconnect_reason, self.listener.disconnect_reason} - {None}, {DisconnectReason.BAD_HANDSHAKE}
        )

    def test_not_a_key(self) -> None:
        """
        An opening that is no ephemeral key (a plaintext peer's hello) is a
        failed handshake; nothing is said, there being no session to say it in.
        """
        transport = StringTransport()
        self.listener.makeConnection(transport)
        transport.clear()
        hello = Hello(WIRE_PROTOCOL_VERSION, 7771, b"\x11" * 32, b"\x44" * 32, 1, 1, NodeKey.generate().node_id, b"\x33" * 32, 0)
        self.listener.dataReceived(encode_frame(hello))
        self.assertEqual(self.listener.disconnect_reason, DisconnectReason.BAD_HANDSHAKE)
        self.assertEqual(self.listener_host.events, [PeerEvent.FAILED_HANDSHAKE])
        self.assertEqual(transport.value(), b"")
        self.assertTrue(transport.disconnecting)

    def test_timeout_before_exchange(self) -> None:
        """
        A peer that never sends its key is dropped at the handshake timeout.
        """
        transport = StringTransport()
        self.listener.makeConnection(transport)
        self.assertEqual(len(transport.value()), EPHEMERAL_KEY_BYTES)
        self.clock.advance(3.0)
        self.assertEqual(self.listener.disconnect_reason, DisconnectReason.HANDSHAKE_TIMEOUT)
        self.assertEqual(self.listener_host.events, [PeerEvent.FAILED_HANDSHAKE])

    def test_refused_address(self) -> None:
        """
        An address refused at connection is closed before the key exchange: nothing sent.
        """
        self.listener_host.allowed = False
        transport = StringTransport()
        self.listener.makeConnection(transport)
        self.assertEqual(transport.value(), b"")
        self.assertTrue(transport.disconnecting)
        self.assertEqual(self.listener.disconnect_reason, DisconnectReason.BAD_REPUTATION)

    def test_handshake_frame_limit(self) -> None:
        """
        Until the handshake is done the frame limit is a hello's size, checked before opening.
        """
        transport = StringTransport()
        self.listener.makeConnection(transport)
        peer = SecureFraming(initiator=True)
        peer.feed(transport.value())
        peer.exchange()
        self.listener.dataReceived(peer.preamble + (10_000).to_bytes(4, "big"))
        self.assertEqual(self.listener.disconnect_reason, DisconnectReason.FRAME_TOO_LARGE)
        peer.feed(transport.value()[EPHEMERAL_KEY_BYTES:])
        messages = []
        while (payload := peer.next_frame()) is not None:
            messages.append(decode_message(payload))
        self.assertEqual([type(message) for message in messages], [Hello, Disconnect])
        self.assertEqual(messages[-1], Disconnect(int(DisconnectReason.FRAME_TOO_LARGE)))

    def test_messages_over_session(self) -> None:
        """
        Once established, messages reach the other side's host, in order.
        """
        self.wire.connect()
        self.dialer.send(GetPeers())
        self.dialer.send(Status(b"\x55" * 32, 9, 10))
        self.wire.flow()
        self.assertEqual(self.listener_host.messages, [GetPeers(), Status(b"\x55" * 32, 9, 10)])
