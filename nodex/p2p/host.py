"""
What a connection needs of the node's peer network (L{PeerHost}), and the
settings both run by: the seam between one connection
(L{nodex.p2p.protocol.PeerProtocol}) and the network
(L{nodex.p2p.network.PeerNetwork}), which tests fill with fakes.
"""

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from twisted.internet.defer import Deferred

from nodex.p2p.errors import DisconnectReason
from nodex.p2p.identity import NodeKey
from nodex.p2p.messages import Message

if TYPE_CHECKING:
    from nodex.p2p.protocol import PeerProtocol
    from nodex.structures.transactions import Transaction


@dataclass(frozen=True)
class PeerSettings:
    """
    The limits of one connection (C{p2p.*} configuration keys).

    @ivar max_frame_bytes: the largest frame accepted after the handshake;
        a larger length prefix disconnects (before it, a hello's size).
    @ivar messages_per_second: the most messages a peer may send in one second.
    @ivar max_outstanding_requests: the most requests in flight each way.
    @ivar request_timeout: seconds a peer has to answer a request.
    @ivar handshake_timeout: seconds a peer has to finish the handshake.
    @ivar ping_interval: seconds a connection may be idle before the side
        that dialed pings (as Bitcoin Core's two minutes); a peer silent
        for three intervals is dropped.
    @ivar max_queued_messages: the most messages of a peer received and not
        handled yet; while that many wait, the peer is not read from.
    @ivar max_queued_bytes: the same bound in bytes of frames.
    @ivar max_invalid_transactions: how many transactions that can never be
        valid a peer may send in one connection; one more is an offence.
    @ivar max_repeated_messages: how many messages repeating what the peer
        sent before it may send in one connection; one more is an offence.
    @ivar encryption: speak the encrypted transport (L{nodex.p2p.secure});
        L{False} only on a network all of whose nodes turn it off.
    """

    max_frame_bytes: int = 16 * 1024 * 1024
    messages_per_second: int = 500
    max_outstanding_requests: int = 16
    request_timeout: float = 10.0
    handshake_timeout: float = 5.0
    ping_interval: float = 120.0
    max_queued_messages: int = 64
    max_queued_bytes: int = 8 * 1024 * 1024
    max_invalid_transactions: int = 16
    max_repeated_messages: int = 64
    encryption: bool = True


@dataclass(frozen=True)
class ChainStatus:
    """
    What a hello says about the sender's chain.
    """

    network_id: int
    genesis_hash: bytes
    head_hash: bytes
    head_number: int
    total_difficulty: int
    listen_port: int


@dataclass(frozen=True)
class NetworkSettings:
    """
    The peer network's configuration.

    @ivar bootstrap: C{(host, port)} of the peers to dial and redial.
    @ivar reconnect_delay: the first delay before redialing a lost bootstrap peer, doubled per failure.
    @ivar max_reconnect_delay: the longest delay between redials.
    @ivar max_half_open_per_address: the most inbound connections still in
        their handshake from one IP address; one more is an offence.
    @ivar max_connections_per_address: the most open inbound connections
        (in their handshake or established) from one IP address; one more is an offence.
    @ivar max_handshake_failures: failed handshakes (timeouts, bad proofs,
        messages out of order) an address may have within ten minutes; one
        more is an offence of the address.
    @ivar expected_ids: the node ids configured peers' URLs name, by
        C{(host, port)}: a peer there that proves another id is refused.
    @ivar reserved_slots: connection slots, beyond the limits of inbound
        peers and of connections in their handshake, that only trusted,
        configured and known-good peers may take.
    @ivar transaction_delay: the mean of the random delay (exponential,
        at most four times the mean) before pending transactions go to
        peers, all that became pending meanwhile in one message per peer;
        0 sends each at once (C{docs/p2p.md}, "Propagation").
    @ivar fetch_delay: seconds a block a peer announced by hash waits for
        another peer to send it whole before it is fetched from the
        announcer; 0 fetches at once (C{docs/p2p.md}, "Propagation").
    """

    network_id: int
    genesis_hash: bytes
    bootstrap: tuple[tuple[str, int], ...] = ()
    max_inbound: int = 25
    max_outbound: int = 10
    max_half_open_per_address: int = 4
    max_connections_per_address: int = 8
    max_handshake_failures: int = 3
    reserved_slots: int = 8
    reconnect_delay: float = 1.0
    max_reconnect_delay: float = 60.0
    progress_interval: float = 10.0
    transaction_delay: float = 1.0
    fetch_delay: float = 0.5
    peer: PeerSettings = field(default_factory=PeerSettings)
    expected_ids: tuple[tuple[tuple[str, int], bytes], ...] = ()


class PeerHost(Protocol):
    """
    What a L{PeerProtocol} needs from the node's peer network.
    """

    node_key: NodeKey
    peer_settings: PeerSettings

    def chain_status(self) -> ChainStatus:
        """
        This node's side of a hello.
        """

    def is_allowed(self, node_id: bytes | None, address: str) -> bool:
        """
        Whether a peer may connect or be heard now.
        """

    def record_event(self, peer: "PeerProtocol", event: str) -> None:
        """
        Record a L{PeerEvent} against a peer: its node id once the handshake
        proved it, else its address.
        """

    def handshake_failed(self, peer: "PeerProtocol", why: str) -> None:
        """
        Count a handshake that failed by the peer's doing (a timeout, a bad
        proof, a message out of order) against its address.
        """

    def peer_ready(self, peer: "PeerProtocol") -> DisconnectReason | None:
        """
        Adopt a peer whose handshake succeeded, or say why it must go.
        """

    def peer_message(self, peer: "PeerProtocol", message: Message) -> "Deferred[Any] | None":
        """
        Handle a message of an adopted peer (every message but the
        handshake's, keep-alive's and answers to this node's requests).

        @return: L{None} when it is handled, or a Deferred that fires when
            it is (the message stays in the peer's inbound queue until then).
        """

    def peer_lost(self, peer: "PeerProtocol") -> None:
        """
        Forget a peer whose connection ended (adopted or not).
        """

    def known_transaction(self, tx_hash: bytes) -> "Transaction | None":
        """
        A transaction this node holds (its pool's), by hash: a peer's copy
        of it is not decoded again (L{nodex.p2p.messages.decode_message}).
        """

    def decode(self, payload: bytes) -> Message:
        """
        Decode a frame's payload on the reactor thread (with the
        transactions this node holds: L{known_transaction}); gossip that
        other peers sent byte for byte may come decoded already
        (L{nodex.p2p.messages.RecentMessages}).

        @raise MessageError: the payload is not a message.
        """

    def decode_in_thread(self, payload: bytes) -> "Deferred[Message]":
        """
        Decode a large frame's payload off the reactor thread
        (L{nodex.p2p.messages.decode_and_hash}).

        @return: a Deferred firing with the message, or failing with
            L{MessageError}.
        """


__all__ = ["ChainStatus", "NetworkSettings", "PeerHost", "PeerSettings"]
