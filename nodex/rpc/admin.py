"""
The C{admin} module: the operator's hold on the node's peers, in geth's
names and, where they fit, geth's shapes (C{docs/operating.md}, "Peers");
and the run-time node bans of the C{sco} module (an extension:
C{docs/compatibility.md}).

Off by default on main and testnet; and wherever it is on, its methods
answer only while the RPC server listens on loopback alone, unless
C{rpc.admin_allow_remote} says otherwise (they change whom the node talks
to).
"""

from collections.abc import Iterable
from typing import Any

from nodex.api.peers import IPeerAdmin, IPeerScoring, PeerDetail, PeerURL  # noqa: F401
from nodex.rpc import decoders
from nodex.rpc.decoders import DecodeError
from nodex.rpc.errors import MethodNotFoundError
from nodex.rpc.registry import Method, Param

REMOTE_REFUSED = (
    "the admin methods are answered only while the RPC server listens on loopback alone; "
    "set rpc.admin_allow_remote = true to answer them beyond it"
)


def peer_url(value: Any) -> PeerURL:
    """
    A peer's C{HOST:PORT} or C{nodex://NODEID@HOST:PORT}.

    @raise DecodeError: neither.
    """
    try:
        return PeerURL.parse(decoders.string(value))
    except ValueError as exc:
        raise DecodeError(str(exc)) from None


def node_id(value: Any) -> bytes:
    """
    A node id: 128 hex digits (C{0x} optional), or a peer URL that names one.

    @raise DecodeError: neither.
    """
    text = decoders.string(value)
    if text.lower().startswith("nodex://"):
        url = peer_url(text)
        assert url.node_id is not None
        return url.node_id
    digits = text[2:] if text[:2] in ("0x", "0X") else text
    try:
        raw = bytes.fromhex(digits)
    except ValueError:
        raw = b""
    if len(raw) != 64 or len(digits) != 128:
        raise DecodeError("want a node id of 128 hex digits, or nodex://NODEID@HOST:PORT")
    return raw


def _listen_host(host: str) -> str:
    """
    The host of this node's URL: the bound address, or 127.0.0.1 when it is bound to every interface.
    """
    return "127.0.0.1" if host in ("", "0.0.0.0", "::") else host


class AdminMethods:
    """
    C{admin_nodeInfo}, C{admin_peers}, C{admin_addPeer},
    C{admin_removePeer}, C{admin_addTrustedPeer}, C{admin_removeTrustedPeer};
    C{sco_banNode}, C{sco_unbanNode}, C{sco_bannedNodes}.
    """

    def __init__(self, peers: IPeerAdmin, scoring: Any, client_version: str, allowed: bool = True) -> None:
        """
        @param peers: the node's peer network.
        @param scoring: the node's reputation service (L{IPeerScoring} and L{nodex.api.peers.IReputation}).
        @param client_version: the node's name (C{web3_clientVersion}).
        @param allowed: whether the admin methods may answer (the RPC server
            listens on loopback alone, or the operator allowed them beyond it).
        """
        self._peers = peers
        self._scoring = scoring
        self._name = client_version
        self._allowed = allowed

    def rpc_methods(self) -> Iterable[Method]:
        """
        The methods of the C{admin} module, and the node bans of C{sco}.
        """
        return [
            Method("admin_nodeInfo", self.node_info, ()),
            Method("admin_peers", self.peers, ()),
            Method("admin_addPeer", self.add_peer, (Param("url", peer_url),)),
            Method("admin_removePeer", self.remove_peer, (Param("url", peer_url),)),
            Method("admin_addTrustedPeer", self.add_trusted_peer, (Param("url", node_id),)),
            Method("admin_removeTrustedPeer", self.remove_trusted_peer, (Param("url", node_id),)),
            Method("sco_banNode", self.ban_node, (Param("nodeId", node_id),)),
            Method("sco_unbanNode", self.unban_node, (Param("nodeId", node_id),)),
            Method("sco_bannedNodes", self.banned_nodes, ()),
        ]

    def _check(self) -> None:
        if not self._allowed:
            raise MethodNotFoundError(REMOTE_REFUSED)

    def node_info(self) -> dict[str, Any] | None:
        """
        This node on the peer network (C{null} without one).
        """
        self._check()
        info = self._peers.node_info()
        if info is None:
            return None
        host = _listen_host(info.listen_host)
        url = PeerURL(host, info.listen_port, info.node_id) if info.listen_port else None
        return {
            "id": info.node_id.hex(),
            "name": self._name,
            "enode": str(url) if url is not None else None,
            "ip": host if info.listen_port else None,
            "listenAddr": f"{info.listen_host}:{info.listen_port}" if info.listen_port else None,
            "ports": {"discovery": 0, "listener": info.listen_port},
            "protocols": {
                "nodex": {
                    "version": info.protocol_version,
                    "network": info.network_id,
                    "genesis": "0x" + info.genesis_hash.hex(),
                    "head": "0x" + info.head_hash.hex(),
                    "headNumber": info.head_number,
                    "difficulty": info.total_difficulty,
                    "encryption": info.encryption,
                },
            },
        }

    def peers(self) -> list[dict[str, Any]]:
        """
        The established peers, in detail.
        """
        self._check()
        scores = {
            record.id: record for record in self._scoring.peer_records() if record.kind == "node"
        }
        return [self._peer(peer, scores.get(peer.node_id.hex()[:8])) for peer in self._peers.peer_details()]

    def _peer(self, peer: PeerDetail, record: Any) -> dict[str, Any]:
        host = peer.host or peer.ip
        port = peer.listen_port if peer.inbound else peer.port
        return {
            "id": peer.node_id.hex(),
            "name": "",
            "enode": str(PeerURL(host, port, peer.node_id)) if port else None,
            "caps": [f"nodex/{peer.protocol_version}"],
            "network": {
                "remoteAddress": f"{peer.ip}:{peer.port}",
                "inbound": peer.inbound,
                "trusted": self._scoring.is_trusted(peer.node_id, peer.ip),
                "static": peer.static,
            },
            "protocols": {
                "nodex": {
                    "version": peer.protocol_version,
                    "head": "0x" + peer.head_hash.hex(),
                    "headNumber": peer.head_number,
                    "shownNumber": peer.shown_number,
                    "difficulty": peer.total_difficulty,
                },
            },
            "latency": round(peer.latency * 1000, 3) if peer.latency is not None else None,
            "connectedSeconds": round(peer.connected_seconds, 3),
            "score": record.score if record is not None else 0,
        }

    def add_peer(self, url: PeerURL) -> bool:
        """
        Keep a static peer (dialed now, redialed with backoff); C{true}.
        """
        self._check()
        return self._peers.add_peer(url)

    def remove_peer(self, url: PeerURL) -> bool:
        """
        Stop keeping a peer and close its connection; whether there was one.
        """
        self._check()
        return self._peers.remove_peer(url)

    def add_trusted_peer(self, node: bytes) -> bool:
        """
        Trust a node id: scored, never punished, reserved slots; C{true}.
        """
        self._check()
        self._scoring.trust_node(node, True)
        return True

    def remove_trusted_peer(self, node: bytes) -> bool:
        """
        Stop trusting a node id; C{true}.
        """
        self._check()
        self._scoring.trust_node(node, False)
        return True

    def ban_node(self, node: bytes) -> None:
        """
        Ban a node id until C{sco_unbanNode} or a restart; its connections close at once.
        """
        self._scoring.ban_node(node)

    def unban_node(self, node: bytes) -> None:
        """
        Lift a node id's ban; not an error when there is none.
        """
        self._scoring.unban_node(node)

    def banned_nodes(self) -> list[str]:
        """
        The banned node ids.
        """
        return self._scoring.banned_nodes()


__all__ = ["REMOTE_REFUSED", "AdminMethods", "node_id", "peer_url"]
