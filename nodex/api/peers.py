"""
The peer network, peer reputation and bans: what the RPC edge sees of the P2P
side (L{IPeerNetwork}, L{IPeerScoring}) and what the P2P edge sees of reputation
(L{IReputation}).
"""

from collections.abc import Callable
from dataclasses import dataclass

from twisted.internet.defer import Deferred
from zope.interface import Interface

from nodex.reputation.scoring import PeerEvent, ScoringRecord

__all__ = [
    "IPeerAdmin",
    "IPeerNetwork",
    "IPeerScoring",
    "IReputation",
    "NodeInfo",
    "PEER_URL_SCHEME",
    "PeerDetail",
    "PeerEvent",
    "PeerInfo",
    "PeerURL",
    "ScoringRecord",
    "SyncStatus",
]


@dataclass(frozen=True)
class PeerInfo:
    """
    One connected peer, as C{net_peerList} shows it.

    @ivar node_id: its 64-byte node id.
    @ivar host: the host name this node dialed (outbound), else the empty string.
    @ivar ip: its IP address.
    @ivar port: the TCP port of the connection.
    """

    node_id: bytes
    host: str
    ip: str
    port: int


PEER_URL_SCHEME = "nodex://"
"""The scheme of a peer's URL: C{nodex://<node id, 128 hex digits>@<host>:<port>}."""


@dataclass(frozen=True)
class PeerURL:
    """
    A peer's address, with its node id when known: what C{--peer},
    C{p2p.peers}, C{p2p.static_peers} and C{admin_addPeer} accept
    (C{HOST:PORT}, or the URL C{admin_nodeInfo} shows under C{enode}).
    """

    host: str
    port: int
    node_id: bytes | None = None

    @classmethod
    def parse(cls, text: str) -> "PeerURL":
        """
        Read C{HOST:PORT}, C{[IPV6]:PORT} or C{nodex://NODEID@HOST:PORT}.

        @raise ValueError: none of these.
        """
        node_id = None
        rest = text.strip()
        if rest.lower().startswith(PEER_URL_SCHEME):
            digits, at, rest = rest[len(PEER_URL_SCHEME) :].partition("@")
            if not at or len(digits) != 128:
                raise ValueError(f"{text!r}: want nodex://<node id of 128 hex digits>@HOST:PORT")
            try:
                node_id = bytes.fromhex(digits)
            except ValueError:
                raise ValueError(f"{text!r}: the node id is not hexadecimal") from None
        host, colon, port = rest.rpartition(":")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
            if ":" not in host:
                raise ValueError(f"{text!r}: bad IPv6 address")
        if not colon or not host or not all(c.isalnum() or c in ".-:" for c in host):
            raise ValueError(f"{text!r}: want HOST:PORT or nodex://NODEID@HOST:PORT")
        if not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"{text!r}: want a port from 1 to 65535")
        return cls(host, int(port), node_id)

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        if self.node_id is None:
            return f"{host}:{self.port}"
        return f"{PEER_URL_SCHEME}{self.node_id.hex()}@{host}:{self.port}"


@dataclass(frozen=True)
class NodeInfo:
    """
    This node on the peer network (C{admin_nodeInfo}).

    @ivar listen_host: the address the P2P server is bound to (empty when it does not listen).
    @ivar listen_port: its port (0 when it does not listen).
    """

    node_id: bytes
    listen_host: str
    listen_port: int
    network_id: int
    genesis_hash: bytes
    head_hash: bytes
    head_number: int
    total_difficulty: int
    protocol_version: int
    encryption: bool


@dataclass(frozen=True)
class PeerDetail:
    """
    One established peer in detail (C{admin_peers}).

    @ivar host: the name or address this node dialed (outbound), else empty.
    @ivar ip: its IP address; @ivar port: the TCP port of the connection.
    @ivar listen_port: the port its hello says it accepts peers on (0: none).
    @ivar head_number: its head as it claims it; @ivar shown_number: the
        highest block it has shown (headers linked to this chain).
    @ivar latency: seconds of its last round trip (handshake, then pings), or L{None}.
    @ivar connected_seconds: how long the connection has lasted.
    @ivar static: a static peer (kept connected, redialed with backoff).
    """

    node_id: bytes
    host: str
    ip: str
    port: int
    listen_port: int
    inbound: bool
    protocol_version: int
    head_hash: bytes
    head_number: int
    total_difficulty: int
    shown_number: int
    latency: float | None
    connected_seconds: float
    static: bool


class IPeerAdmin(Interface):
    """
    The operator's hold on the node's peers (the C{admin} RPC module).
    """

    def node_info() -> "NodeInfo | None":
        """
        This node on the peer network, or L{None} when it has no peer network.
        """

    def peer_details() -> "list[PeerDetail]":
        """
        The established peers, in detail.
        """

    def add_peer(url: PeerURL) -> bool:
        """
        Add a static peer: dialed now and redialed with backoff whenever it
        is not connected, until L{remove_peer}; a URL's node id must be the
        one the peer proves.  Whether the node has a peer network to add it to.
        """

    def remove_peer(url: PeerURL) -> bool:
        """
        Stop keeping a peer: no more redials, its entry forgotten from the
        peer store, and its connection (by node id, else by address) closed.
        Whether there was anything to remove.
        """


class IPeerNetwork(Interface):
    """
    The peer-to-peer side of the node, as the RPC edge sees it.
    """

    def is_listening() -> "Deferred[bool]":
        """
        Whether the node accepts incoming peer connections now.

        @return: a Deferred firing with C{True} while the P2P server listens.
        """

    def peers() -> "list[PeerInfo]":
        """
        The peers whose handshake succeeded and whose connection is open.
        """

    def queue_size() -> int:
        """
        The peer messages received and not yet handled (C{debug_wireProtocolQueueSize}).
        """

    def sync_status() -> "SyncStatus | None":
        """
        The progress of the sync in course, or L{None} when the node is not syncing.
        """


class IPeerScoring(Interface):
    """
    Peer reputation and bans as the operator sees them: the C{sco} RPC
    module (reference §3.11).  The P2P layer's side is L{IReputation}.
    """

    def ban_address(address: str) -> "Deferred[None]":
        """
        Ban one IPv4 or IPv6 address, every address a host name resolves to,
        or a CIDR block; existing connections from it are dropped at once.

        @return: a Deferred firing with L{None}, or failing with
            L{InvalidBanError} (-32602) for loopback, the wildcard address,
            malformed input or a host name that does not resolve.
        """

    def unban_address(address: str) -> "Deferred[None]":
        """
        Lift a ban named as L{ban_address} takes it (a block exactly as
        banned); lifting a ban that does not exist is not an error.

        @return: a Deferred firing with L{None}, or failing with L{InvalidBanError}.
        """

    def banned_addresses() -> "list[str]":
        """
        The banned single addresses, then the blocks as C{<address>/<bits>}.
        """

    def peer_records() -> "list[ScoringRecord]":
        """
        The scoring records: by node id (least recently used first), then by IP address.
        """

    def clear_address_record(address: str) -> bool:
        """
        Forget the scoring record of an IP address; whether there was one.
        """

    def clear_node_records(prefix: str) -> int:
        """
        Forget the scoring records of the node ids whose hex form starts
        with C{prefix} (lower-case hex digits); how many there were.
        """

    def ban_node(node_id: bytes) -> bool:
        """
        Ban a node id at run time (C{sco_banNode}); its connections are
        dropped at once.  Whether it was not banned already.
        """

    def unban_node(node_id: bytes) -> bool:
        """
        Lift a node id's ban; whether there was one.
        """

    def banned_nodes() -> "list[str]":
        """
        The banned node ids (128 hex digits each), sorted.
        """

    def trust_node(node_id: bytes, trusted: bool) -> bool:
        """
        Trust a node id at run time (C{admin_addTrustedPeer}) or stop
        trusting it; whether that changed anything.
        """


class IReputation(Interface):
    """
    Peer reputation and bans (reference §15), as the P2P layer sees it.
    """

    def record_event(event: str, node_id: "bytes | None", address: str) -> None:
        """
        Record a L{PeerEvent} against the node id when the handshake proved
        it, else against the IP address (C{docs/reputation.md}).
        """

    def is_allowed(node_id: "bytes | None", address: str) -> bool:
        """
        Whether a peer may connect or have its messages handled now: C{False} when its node id or
        address has bad reputation, or its address, a CIDR block holding it, or its node id is banned.
        """

    def add_ban_observer(observer: "Callable[[], None]") -> None:
        """
        Call C{observer} (on the reactor thread) whenever a record turns bad or a ban is added, so
        the P2P layer can disconnect existing connections that C{is_allowed} now refuses.
        """

    def is_trusted(node_id: "bytes | None", address: str) -> bool:
        """
        Whether the operator trusts the node id or the address: such a peer is scored but never
        punished, and keeps the P2P layer's reserved slots.
        """


@dataclass(frozen=True)
class SyncStatus:
    """
    The sync status a C{syncing} subscription gets when it changes.

    @ivar syncing: whether the node is catching up with its peers.
    """

    syncing: bool
    starting_block: int = 0
    current_block: int = 0
    highest_block: int = 0
