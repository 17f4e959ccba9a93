"""
Scripted hostile peers: the misbehaviours of the hostile-peer issue (#24),
each played by a peer of the simulated network against a few honest nodes.

Most attacks need an established connection: the hostile peer is then a
node composed like any other (its handshake, keep-alive and relay are the
production ones), configured to dial its targets only, whose script
misbehaves on each connection once it is established, through the
production protocol's own sending (so the attack travels in whatever
framing the protocol uses) or, for wire garbage, straight onto the
transport.  Its peer network redials a target that dropped it, as a
persistent attacker would, so a punishment is also seen refusing it.  The
attacks before any handshake (a huge length prefix, a silent connection)
need no node: the peer writes raw bytes from its machine.

An attack's outcome is what the honest nodes did about it: the
punishments their reputation services recorded (the simulation watches
them), the connections they closed, and the reconnections they refused.
"""

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from twisted.internet.protocol import Factory, Protocol
from twisted.python.failure import Failure

from nodex.p2p.identity import NodeKey
from nodex.p2p.messages import NewBlock, Ping, Status, Transactions
from nodex.p2p.protocol import PeerProtocol
from nodex.p2p.secure import ephemeral_public_key
from nodex.primitives import Address, Hash32
from nodex.simulation.clock import NodeClock
from nodex.simulation.node import P2P_PORT, SimulatedNode, node_key_of
from nodex.structures.blocks import Block
from nodex.structures.headers import Header
from nodex.structures.transactions import LegacyTransaction

if TYPE_CHECKING:
    from nodex.simulation.runner import Simulation

HOSTILE_TRACE_BASE = 100_000
"""Hostile peers' numbers in the trace start here (honest nodes' at 0)."""

CHECK_SECONDS = 1.0
"""How often a hostile peer looks for newly established connections to attack."""

RAW_REDIAL_SECONDS = 60.0
"""How often a raw attacker comes back to each target."""


def invalid_block(peer: PeerProtocol, hostile: "HostilePeer") -> None:
    """
    A new block on the target's head (as last heard) whose seal and roots are junk.
    """
    junk = hostile.entropy
    header = Header(
        parent_hash=Hash32(peer.head_hash or junk(32)), uncles_hash=Hash32(junk(32)),
        coinbase=Address(b"\x66" * 20), state_root=Hash32(junk(32)), transactions_root=Hash32(junk(32)),
        receipts_root=Hash32(junk(32)), logs_bloom=b"\x00" * 256, difficulty=1, number=peer.head_number + 1,
        gas_limit=30_000_000, gas_used=0, timestamp=int(hostile.clock.seconds()), extra_data=b"", paid_fees=0,
        minimum_gas_price=0, uncle_count=0, bitcoin_merged_mining_header=junk(80),
    )
    peer.send(NewBlock(Block(header, (), ()), peer.total_difficulty + 1))


def garbage(peer: PeerProtocol, hostile: "HostilePeer") -> None:
    """
    A frame that is no message (written under the protocol, onto the transport).
    """
    assert peer.transport is not None
    peer.transport.write(b"\x00\x00\x00\x08" + b"\xff" * 8)


def flood(peer: PeerProtocol, hostile: "HostilePeer") -> None:
    """
    Twice the allowed messages per second, at once.
    """
    for nonce in range(2 * hostile.messages_per_second + 1):
        peer.send(Ping(nonce))


def invalid_transactions(peer: PeerProtocol, hostile: "HostilePeer") -> None:
    """
    Transactions that can never be valid (an impossible signature), 32 messages of 64.
    """
    for batch in range(32):
        peer.send(Transactions(tuple(
            LegacyTransaction(nonce=batch * 64 + index, gas_price=1, gas=21_000, to=b"\x07" * 20, value=1,
                              data=b"", v=101, r=1, s=0)
            for index in range(64)
        )))


def repeats(peer: PeerProtocol, hostile: "HostilePeer") -> None:
    """
    The same junk block, 100 times.
    """
    junk = hostile.entropy
    header = Header(
        parent_hash=Hash32(junk(32)), uncles_hash=Hash32(junk(32)), coinbase=Address(b"\x66" * 20),
        state_root=Hash32(junk(32)), transactions_root=Hash32(junk(32)), receipts_root=Hash32(junk(32)),
        logs_bloom=b"\x00" * 256, difficulty=1, number=peer.head_number + 1, gas_limit=30_000_000, gas_used=0,
        timestamp=int(hostile.clock.seconds()), extra_data=b"", paid_fees=0, minimum_gas_price=0, uncle_count=0,
        bitcoin_merged_mining_header=junk(80),
    )
    message = NewBlock(Block(header, (), ()), peer.total_difficulty + 1)
    for _ in range(100):
        peer.send(message)


def liar(peer: PeerProtocol, hostile: "HostilePeer") -> None:
    """
    A STATUS claiming block 1,000,000 with total difficulty 2^200, a head
    it cannot show (issue 24's liar): the peer's requests are answered
    from its real chain, which never reaches the claim.  Sent again at
    every look (L{REPEATED_ATTACKS}), since the node's own STATUS would
    replace the claim when its head moves.
    """
    peer.send(Status(hostile.lie, 1_000_000, 2**200))


ESTABLISHED_ATTACKS: dict[str, Callable[[PeerProtocol, "HostilePeer"], None]] = {
    "invalid-block": invalid_block,
    "garbage": garbage,
    "flood": flood,
    "invalid-transactions": invalid_transactions,
    "repeats": repeats,
    "liar": liar,
}
"""The attacks on an established connection, by name."""

REPEATED_ATTACKS = ("liar",)
"""The attacks made again on every connection at each look, not once."""

RAW_ATTACKS: dict[str, bytes | None] = {
    # An ephemeral key (the encrypted transport's opening, docs/p2p.md), then
    # a length of 4 GiB: refused on the length, before anything is buffered.
    "large-frame": ephemeral_public_key(b"\x01" * 32) + b"\xff\xff\xff\xff",
    "silent": None,
}
"""The attacks before any handshake: the bytes written at once (L{None}: nothing, the connection held)."""

ATTACKS = tuple(ESTABLISHED_ATTACKS) + tuple(RAW_ATTACKS)
"""Every attack, by name."""

PUNISHING_ATTACKS = ("invalid-block", "garbage", "flood", "large-frame", "liar", "invalid-transactions", "repeats")
"""
The attacks a node punishes (the default mix): issue 13's, and issue 24's
liar, never-valid transactions and repeats (all but C{silent}, whose
connections are closed at the handshake timeout).
"""


class _RawConnection(Protocol):
    """
    A raw connection of an attacker: it writes its bytes and waits for the end.
    """

    def __init__(self, hostile: "HostilePeer", payload: bytes | None) -> None:
        self._hostile = hostile
        self._payload = payload

    def connectionMade(self) -> None:
        self._hostile.connections += 1
        if self._payload:
            assert self.transport is not None
            self.transport.write(self._payload)

    def dataReceived(self, data: bytes) -> None:
        pass

    def connectionLost(self, reason: Failure = Failure(ConnectionError())) -> None:  # noqa: B008
        self._hostile.closed += 1


@dataclass
class AttackOutcome:
    """
    What one attack achieved against the honest nodes.
    """

    peers: int = 0
    attacks: int = 0
    connections: int = 0
    closed: int = 0
    refused: int = 0
    punished: int = 0


class HostilePeer:
    """
    One hostile peer of a simulation.

    @ivar index: its number among the hostile peers.
    @ivar attack: the name of its attack.
    @ivar targets: the honest nodes it attacks.
    """

    def __init__(self, simulation: "Simulation", index: int, attack: str, targets: list[int]) -> None:
        from nodex.simulation.runner import hostile_address

        self.simulation = simulation
        self.index = index
        self.attack = attack
        self.targets = targets
        self.address = hostile_address(index)
        seed = simulation.scenario.seed
        key = node_key_of(seed, index, "hostile")
        self.node_id = NodeKey.from_private_key(key).node_id
        self._random = random.Random(f"{seed}/hostile/{index}")
        self.lie = self._random.randbytes(32)
        self.attacks = 0
        self.connections = 0
        self.closed = 0
        self._attacked: dict[PeerProtocol, None] = {}
        self.node: SimulatedNode | None = None
        addresses = [f"{simulation.nodes[target].address}:{P2P_PORT}" for target in targets]
        if attack in ESTABLISHED_ATTACKS:
            layer = {
                "network": "regtest",
                "rpc": {"endpoint": "none", "ws": "none"},
                "p2p": {"endpoint": "none", "peers": addresses, "max_outbound": max(1, len(addresses))},
                "mining": {"mode": "off"},
            }
            self.node = SimulatedNode(
                simulation.time, simulation.network, HOSTILE_TRACE_BASE + index, self.address, key, self.node_id,
                0.0, simulation.workdir / "hostile", layer, f"{seed}/hostile-node/{index}",
                simulation.scenario.drift_limit or None, simulation.scenario.writer_job_ms / 1000,
                f"hostile {index}",
            )
            self.clock = self.node.clock
            self.messages_per_second = self.node.config.p2p.messages_per_second
        else:
            self.clock = NodeClock(simulation.time, label=f"hostile {index}")
            self.host = simulation.network.add_host(self.address, self.clock, HOSTILE_TRACE_BASE + index)
            self.messages_per_second = 0

    def entropy(self, size: int) -> bytes:
        """
        The attacker's seeded random bytes.
        """
        return self._random.randbytes(size)

    def start(self) -> None:
        """
        Begin: a node dials its targets; a raw attacker connects to each now and then.
        """
        if self.node is not None:
            self.node.start(lambda node, event: None, lambda node, block: None, lambda node: None)
            self.simulation.time.later(CHECK_SECONDS, self._check)
        else:
            for number, target in enumerate(self.targets):
                self.simulation.time.later(number * 0.5, self._raw_dial, target)

    def _check(self) -> None:
        """
        Attack each connection established since the last look, once.
        """
        node = self.node
        assert node is not None
        if node.core is None:
            return
        for peer in list(self._attacked):
            if peer.closed:
                del self._attacked[peer]
                self.closed += 1
        for peer in node.peers.established_peers():
            if peer not in self._attacked:
                self._attacked[peer] = None
                self.connections += 1
                self.attacks += 1
                ESTABLISHED_ATTACKS[self.attack](peer, self)
            elif self.attack in REPEATED_ATTACKS:
                ESTABLISHED_ATTACKS[self.attack](peer, self)
        self.simulation.time.later(CHECK_SECONDS, self._check)

    def _raw_dial(self, target: int) -> None:
        address = self.simulation.nodes[target].address
        payload = RAW_ATTACKS[self.attack]
        endpoint = self.host.client_endpoint(address, P2P_PORT)
        factory = Factory.forProtocol(lambda: _RawConnection(self, payload))
        self.attacks += 1
        endpoint.connect(factory).addErrback(lambda failure: None)
        self.simulation.time.later(RAW_REDIAL_SECONDS, self._raw_dial, target)

    def refused(self) -> int:
        """
        How many of its connections ended before their handshake (the targets refused them).
        """
        if self.node is None or self.node.core is None:
            return 0
        return sum(self.node.peers.unfinished_handshakes.values())


def make_hostile_peers(simulation: "Simulation", count: int) -> list[HostilePeer]:
    """
    The scenario's hostile peers: attacks given out in turn, each peer
    attacking C{hostile_targets} honest nodes drawn from the seed.
    """
    scenario = simulation.scenario
    attacks = scenario.attacks or PUNISHING_ATTACKS
    rng = random.Random(f"{scenario.seed}/hostile")
    honest = [node.index for node in simulation.nodes]
    peers = []
    for index in range(count):
        targets = sorted(rng.sample(honest, min(scenario.hostile_targets, len(honest))))
        peers.append(HostilePeer(simulation, index, attacks[index % len(attacks)], targets))
    return peers


def attack_outcomes(peers: list[HostilePeer], punished: set[int]) -> dict[str, dict[str, int]]:
    """
    The outcome of each attack over the peers that ran it.

    @param punished: the hostile peers some honest node punished.
    """
    outcomes: dict[str, AttackOutcome] = {}
    for peer in peers:
        outcome = outcomes.setdefault(peer.attack, AttackOutcome())
        outcome.peers += 1
        outcome.attacks += peer.attacks
        outcome.connections += peer.connections
        outcome.closed += peer.closed
        outcome.refused += peer.refused()
        outcome.punished += peer.index in punished
    return {name: vars(outcome) for name, outcome in sorted(outcomes.items())}


__all__ = ["ATTACKS", "AttackOutcome", "HostilePeer", "PUNISHING_ATTACKS", "attack_outcomes", "make_hostile_peers"]
