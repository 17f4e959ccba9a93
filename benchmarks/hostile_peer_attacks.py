"""
The hostile peers of C{benchmarks/hostile_peers.py}: blocking socket
clients that speak nodex's wire protocol badly on purpose, one function per
attack of issue 24.  Each runs in a thread of the benchmark, from a chosen
loopback address, and returns what it saw: when the node dropped it (seconds
after the attack began) and how.
"""

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nodex.p2p.messages import WIRE_PROTOCOL_VERSION
from nodex.p2p.errors import DisconnectReason
from nodex.p2p.identity import NodeKey
from nodex.p2p.messages import (
    Auth,
    BlockBodies,
    BlockHeaders,
    Disconnect,
    GetBlockBodies,
    GetBlockHeaders,
    Hello,
    Message,
    NewBlock,
    Ping,
    Pong,
    Transactions,
    decode_message,
    encode_frame,
)
from nodex.primitives import Address, Hash32
from nodex.structures.blocks import Block
from tests.p2p.wire import SecureSocket
from nodex.structures.headers import Header
from nodex.structures.rlpcodec import encode_rlp, encode_uint
from nodex.structures.transactions import LegacyTransaction, sign_transaction

REGTEST_NETWORK_ID = 7771


@dataclass
class Outcome:
    """
    What one hostile client saw.

    @ivar dropped_after: seconds from the attack's start until the node
        closed the connection (L{None}: it never did within the attack's time).
    @ivar reason: the node's disconnect reason, or how the connection ended.
    @ivar extra: figures of the attack's own.
    """

    dropped_after: float | None = None
    reason: str = "still open"
    extra: dict[str, Any] = field(default_factory=dict)


class Wire:
    """
    One blocking connection to the node, and its frames.
    """

    def __init__(self, port: int, source: str = "127.0.0.1", timeout: float = 10.0) -> None:
        self.sock = SecureSocket(socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0)))
        self.buffer = b""
        self.closed = False
        self.disconnect: int | None = None

    def send(self, message: Message) -> None:
        self.sock.sendall(encode_frame(message))

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read(self, until: float) -> list[Message]:
        """
        The messages received before C{until} (monotonic), or until the node closes.
        """
        while not self.closed and time.monotonic() < until:
            frames = self._frames()
            if frames:
                return frames
            self.sock.settimeout(max(0.01, until - time.monotonic()))
            try:
                chunk = self.sock.recv(1 << 20)
            except (TimeoutError, socket.timeout):
                break
            except OSError:
                self.closed = True
                break
            if not chunk:
                self.closed = True
                break
            self.buffer += chunk
        return self._frames()

    def _frames(self) -> list[Message]:
        found: list[Message] = []
        while len(self.buffer) >= 4:
            length = int.from_bytes(self.buffer[:4], "big")
            if len(self.buffer) < 4 + length:
                break
            message = decode_message(self.buffer[4 : 4 + length])
            self.buffer = self.buffer[4 + length :]
            if isinstance(message, Disconnect):
                self.disconnect = message.reason
            found.append(message)
        return found

    def wait_closed(self, until: float, answer: Callable[[Message], None] = lambda message: None) -> bool:
        """
        Read (answering what C{answer} answers) until the node closes, or C{until}.
        """
        while not self.closed and time.monotonic() < until:
            for message in self.read(until):
                answer(message)
        return self.closed

    def ending(self) -> str:
        if self.disconnect is not None:
            return DisconnectReason.describe(self.disconnect)
        return "closed without a message" if self.closed else "still open"

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


def handshake(wire: Wire, genesis: bytes, key: NodeKey | None = None, head_number: int = 0,
              total_difficulty: int = 1, head_hash: bytes | None = None) -> Hello | None:
    """
    Send a hello, answer the node's challenge, and wait for its auth.

    @return: the node's hello, or L{None} when it refused.
    """
    key = key or NodeKey.generate()
    wire.send(Hello(WIRE_PROTOCOL_VERSION, REGTEST_NETWORK_ID, genesis, head_hash or genesis, head_number,
                    total_difficulty, key.node_id, os.urandom(32), 0))
    deadline = time.monotonic() + 10
    theirs: Hello | None = None
    authed = False
    while not wire.closed and time.monotonic() < deadline and not authed:
        for message in wire.read(deadline):
            if isinstance(message, Hello):
                theirs = message
                wire.send(Auth(key.sign_challenge(message.challenge, wire.sock.session)))
            elif isinstance(message, Auth):
                authed = True
    return theirs if authed and not wire.closed else None


def established(port: int, genesis: bytes, outcome: Outcome, source: str = "127.0.0.2", timeout: float = 10.0,
                **hello: Any) -> Wire | None:
    """
    A connection from C{source} whose handshake is done, or L{None} (and
    C{outcome} says why) when the node refused it.
    """
    wire = Wire(port, source, timeout)
    if handshake(wire, genesis, **hello) is None:
        outcome.reason = f"handshake refused: {wire.ending()}"
        wire.close()
        return None
    return wire


def answer_pings(wire: Wire) -> Callable[[Message], None]:
    def answer(message: Message) -> None:
        if isinstance(message, Ping):
            wire.send(Pong(message.nonce))
    return answer


def forged_transaction_rlp(nonce: int, data: bytes = b"") -> bytes:
    """
    The RLP of a legacy transaction whose signature cannot be one (s = 0).
    """
    fields = [encode_uint(nonce), encode_uint(1), encode_uint(21_000 + 16 * len(data)), b"\x07" * 20,
              encode_uint(1), data, encode_uint(101), encode_uint(1), b""]
    return encode_rlp(fields)


def transactions_frame(raw_transactions: list[bytes]) -> bytes:
    """
    The frame of a TRANSACTIONS message of already encoded transactions.
    """
    body = b"".join(raw_transactions)
    payload = _list(encode_uint_rlp(0x08) + _list(body))
    return len(payload).to_bytes(4, "big") + payload


def encode_uint_rlp(value: int) -> bytes:
    return encode_rlp(encode_uint(value))


def _list(body: bytes) -> bytes:
    if len(body) < 56:
        return bytes([0xC0 + len(body)]) + body
    length = len(body).to_bytes((len(body).bit_length() + 7) // 8, "big")
    return bytes([0xF7 + len(length)]) + length + body


def orphan_block(number: int, payload_bytes: int, parent: bytes | None = None) -> Block:
    """
    A block of random parent (or C{parent}) at C{number}, its seal junk,
    carrying about C{payload_bytes} of transactions (80 of equal size).
    """
    size = max(1, payload_bytes // 80)
    data = os.urandom(size)
    transactions = tuple(
        LegacyTransaction(nonce=index, gas_price=1, gas=10_000_000, to=b"\x07" * 20, value=0, data=data, v=101, r=1, s=1)
        for index in range(80)
    )
    header = Header(
        parent_hash=Hash32(parent or os.urandom(32)), uncles_hash=Hash32(os.urandom(32)), coinbase=Address(b"\x42" * 20),
        state_root=Hash32(os.urandom(32)), transactions_root=Hash32(os.urandom(32)),
        receipts_root=Hash32(os.urandom(32)), logs_bloom=b"\x00" * 256, difficulty=1, number=number,
        gas_limit=30_000_000, gas_used=0, timestamp=int(time.time()), extra_data=b"", paid_fees=0,
        minimum_gas_price=0, uncle_count=0, bitcoin_merged_mining_header=os.urandom(80),
    )
    return Block(header, transactions, ())


# The attacks.  Each takes the node's P2P port, its genesis hash, the time
# the attack started and the deadline, and returns an Outcome.


def invalid_transactions(port: int, genesis: bytes, start: float, deadline: float, messages: int = 100,
                         per_message: int = 4096) -> Outcome:
    """
    After a handshake, C{messages} TRANSACTIONS of C{per_message}
    transactions with impossible signatures, as fast as the node reads.
    """
    frames = [
        transactions_frame([forged_transaction_rlp(batch * per_message + index) for index in range(per_message)])
        for batch in range(messages)
    ]
    begun = time.monotonic()
    outcome = Outcome()
    wire = established(port, genesis, outcome)
    if wire is None:
        return outcome
    sent = 0
    try:
        for frame in frames:
            wire.send_raw(frame)
            sent += 1
    except OSError:
        wire.closed = True
    wire.wait_closed(deadline)
    outcome.dropped_after = time.monotonic() - begun if wire.closed else None
    outcome.reason = wire.ending()
    outcome.extra = {"messages_sent": sent}
    wire.close()
    return outcome


def orphans(port: int, genesis: bytes, start: float, deadline: float, head: Callable[[], int],
            count: int = 40, payload_bytes: int = 8 * 1024 * 1024) -> Outcome:
    """
    After a handshake, C{count} NEW_BLOCKs of random parents at the head's
    next number, each with about 8 MB of transactions.
    """
    outcome = Outcome()
    wire = established(port, genesis, outcome, timeout=30)
    if wire is None:
        return outcome
    begun = time.monotonic()
    sent = 0
    try:
        for _ in range(count):
            if time.monotonic() > deadline:
                break
            wire.send(NewBlock(orphan_block(head() + 1, payload_bytes), 10**9))
            sent += 1
    except OSError:
        wire.closed = True
    wire.wait_closed(deadline, answer_pings(wire))
    outcome.dropped_after = time.monotonic() - begun if wire.closed else None
    outcome.reason = wire.ending()
    outcome.extra = {"blocks_sent": sent}
    wire.close()
    return outcome


def silent(port: int, genesis: bytes, start: float, deadline: float, addresses: int = 13, per_address: int = 4) -> Outcome:
    """
    C{per_address} connections from each of C{addresses} loopback
    addresses, sending nothing; half a second later an honest handshake
    from 127.0.0.1 (its time to be adopted, or its refusal); at the end, a
    reconnect from each address (refused or not).
    """
    sources = [f"127.0.0.{2 + index}" for index in range(addresses)]
    wires: list[Wire] = []
    for source in sources:
        for _ in range(per_address):
            try:
                wires.append(Wire(port, source))
            except OSError:
                pass
    time.sleep(0.5)
    asked = time.monotonic()
    honest = Wire(port, "127.0.0.1")
    adopted = handshake(honest, genesis) is not None
    honest_ms = (time.monotonic() - asked) * 1000
    honest.close()
    closed_at: list[float] = []
    lock = threading.Lock()

    def watch(wire: Wire) -> None:
        if wire.wait_closed(deadline):
            with lock:
                closed_at.append(time.monotonic() - start)
        wire.close()

    threads = [threading.Thread(target=watch, args=(wire,), daemon=True) for wire in wires]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    refused = 0
    for source in sources:
        try:
            again = Wire(port, source)
        except OSError:
            refused += 1
            continue
        again.wait_closed(time.monotonic() + 2)
        refused += int(again.disconnect == DisconnectReason.BAD_REPUTATION)
        again.close()
    outcome = Outcome()
    outcome.dropped_after = max(closed_at) if len(closed_at) == len(wires) else None
    outcome.reason = f"{len(closed_at)} of {len(wires)} closed"
    outcome.extra = {
        "honest_adopted": adopted, "honest_handshake_ms": round(honest_ms, 1),
        "addresses_refused_on_reconnect": refused,
    }
    return outcome


def large_before_hello(port: int, genesis: bytes, start: float, deadline: float, connections: int = 24,
                       frame_bytes: int = 16 * 1024 * 1024 - 1) -> Outcome:
    """
    C{connections} connections (one per loopback address), each sending a
    frame of 16 MiB before any hello.
    """
    closed_at: list[float] = []
    lock = threading.Lock()
    chunk = os.urandom(1 << 20)

    def one(source: str) -> None:
        try:
            wire = Wire(port, source, timeout=5)
            wire.send_raw(frame_bytes.to_bytes(4, "big"))
            for _ in range(frame_bytes // len(chunk)):
                wire.send_raw(chunk)
        except OSError:
            pass
        else:
            wire.wait_closed(deadline)
            if wire.closed:
                with lock:
                    closed_at.append(time.monotonic() - start)
            wire.close()
            return
        with lock:
            closed_at.append(time.monotonic() - start)

    threads = [threading.Thread(target=one, args=(f"127.0.1.{index + 2}",), daemon=True) for index in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    outcome = Outcome()
    outcome.dropped_after = max(closed_at) if len(closed_at) == connections else None
    outcome.reason = f"{len(closed_at)} of {connections} closed"
    return outcome


def liar(port: int, genesis: bytes, start: float, deadline: float) -> Outcome:
    """
    A hello claiming total difficulty 2^200 and block 1,000,000; every
    request answered with nothing.
    """
    outcome = Outcome()
    begun = time.monotonic()
    wire = established(port, genesis, outcome, head_number=1_000_000, total_difficulty=2**200, head_hash=os.urandom(32))
    if wire is None:
        return outcome
    asked = [0]

    def answer(message: Message) -> None:
        if isinstance(message, GetBlockHeaders):
            asked[0] += 1
            wire.send(BlockHeaders(message.request_id, ()))
        elif isinstance(message, GetBlockBodies):
            wire.send(BlockBodies(message.request_id, ()))
        elif isinstance(message, Ping):
            wire.send(Pong(message.nonce))

    try:
        wire.wait_closed(deadline, answer)
    except OSError:
        wire.closed = True
    outcome.dropped_after = time.monotonic() - begun if wire.closed else None
    outcome.reason = wire.ending()
    outcome.extra = {"header_requests": asked[0]}
    wire.close()
    return outcome


def repeats(port: int, genesis: bytes, start: float, deadline: float, head: Callable[[], int]) -> Outcome:
    """
    After a handshake, 200 identical TRANSACTIONS (one transaction of an
    unfunded sender) and 50 identical NEW_BLOCKs (a small block of random parent).
    """
    transaction = sign_transaction(
        LegacyTransaction(nonce=0, gas_price=1, gas=21_000, to=b"\x07" * 20, value=1, data=b""), os.urandom(32), 33
    )
    transactions = encode_frame(Transactions((transaction,)))
    block = encode_frame(NewBlock(orphan_block(head() + 1, 8000), 10**9))
    outcome = Outcome()
    wire = established(port, genesis, outcome)
    if wire is None:
        return outcome
    begun = time.monotonic()
    sent = 0
    try:
        for frame in [transactions] * 200 + [block] * 50:
            wire.send_raw(frame)
            sent += 1
    except OSError:
        wire.closed = True
    wire.wait_closed(min(deadline, time.monotonic() + 10), answer_pings(wire))
    outcome.dropped_after = time.monotonic() - begun if wire.closed else None
    outcome.reason = wire.ending()
    outcome.extra = {"messages_sent": sent}
    wire.close()
    return outcome


def neighbour(port: int, genesis: bytes, start: float, deadline: float, head: Callable[[], int]) -> Outcome:
    """
    An honest peer and an attacker, both from 127.0.0.1; the attacker sends
    an invalid block (on the genesis block, its seal junk).  Whether the
    honest peer is still connected 3 s later.
    """
    outcome = Outcome()
    honest = established(port, genesis, outcome, "127.0.0.1")
    attacker = established(port, genesis, outcome, "127.0.0.1") if honest is not None else None
    if honest is None or attacker is None:
        return outcome
    begun = time.monotonic()
    attacker.send(NewBlock(orphan_block(1, 1000, parent=genesis), 10**9))
    attacker.wait_closed(min(deadline, begun + 10), answer_pings(attacker))
    outcome.dropped_after = time.monotonic() - begun if attacker.closed else None
    outcome.reason = attacker.ending()
    honest.wait_closed(time.monotonic() + 3, answer_pings(honest))
    outcome.extra = {"honest_kept": not honest.closed, "honest_ending": honest.ending()}
    honest.close()
    attacker.close()
    return outcome


SIBLINGS = """
import itertools, sys
from twisted.internet import reactor
from twisted.internet.defer import ensureDeferred
from nodex.config import load_config
from nodex.tap import compose
from nodex.chain.building.builder import seal_block
from nodex.chain.building.making import BlockTime, TransactionsBlock
from nodex.chain.seal.pow import solve
from nodex.primitives import Address

datadir, count, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
config = load_config(None, {"datadir": datadir, "rpc": {"endpoint": "none", "ws": "none"}, "p2p": {"endpoint": "none"},
                            "mining": {"mode": "manual"}})
node = compose(config, reactor)

async def siblings():
    with open(out, "wb") as handle:
        for index in range(count):
            request = TransactionsBlock(Address(b"\\x42" * 20), BlockTime(0, 0), (), b"sibling %d" % index)
            built, _ = await node.chain.build(request)
            header = built.block.header
            seal = solve(header.hash_for_merged_mining, header.difficulty, itertools.count())
            raw = seal_block(built.block, seal).encode()
            handle.write(len(raw).to_bytes(4, "big") + raw)

def run():
    node.startService()
    d = ensureDeferred(siblings())
    d.addErrback(lambda f: (f.printTraceback(), None))
    d.addBoth(lambda _: node.stopService()).addBoth(lambda _: reactor.stop())

reactor.callWhenRunning(run)
reactor.run()
"""
"""Writes C{count} distinct sealed blocks on the regtest genesis (none stored) to a file."""


def make_siblings(work: Path, count: int) -> Path:
    """
    The file of C{count} sealed blocks at height 1, built by a node of this checkout.
    """
    out = work / "siblings.bin"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    subprocess.run([sys.executable, "-c", SIBLINGS, str(work / "siblings"), str(count), str(out)], check=True, env=env)
    return out


def side_blocks(port: int, genesis: bytes, start: float, deadline: float, siblings: Path) -> Outcome:
    """
    After a handshake, distinct sealed blocks at height 1 (1,000 by default)
    as NEW_BLOCKs to a node far above it, 200 a second (below the message
    rate limit, so that what stops them is the side-block rules).
    """
    data = siblings.read_bytes()
    frames = []
    while data:
        length = int.from_bytes(data[:4], "big")
        frames.append(encode_frame(NewBlock(Block.decode(data[4 : 4 + length]), 10**9)))
        data = data[4 + length :]
    outcome = Outcome()
    wire = established(port, genesis, outcome)
    if wire is None:
        return outcome
    begun = time.monotonic()
    sent = 0
    try:
        for index, frame in enumerate(frames):
            delay = begun + index / 200 - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            wire.send_raw(frame)
            sent += 1
    except OSError:
        wire.closed = True
    wire.wait_closed(deadline, answer_pings(wire))
    outcome.dropped_after = time.monotonic() - begun if wire.closed else None
    outcome.reason = wire.ending()
    outcome.extra = {"blocks_sent": sent}
    wire.close()
    return outcome


ATTACKS = {
    "invalid-transactions": invalid_transactions,
    "orphans": orphans,
    "silent": silent,
    "large-before-hello": large_before_hello,
    "liar": liar,
    "repeats": repeats,
    "neighbour": neighbour,
    "side-blocks": side_blocks,
}
"""The attacks by name; those taking C{head} get a function reading the node's head number."""

NEEDS_HEAD = {"orphans", "repeats", "neighbour"}
NEEDS_SIBLINGS = {"side-blocks"}


__all__ = ["ATTACKS", "NEEDS_HEAD", "NEEDS_SIBLINGS", "Outcome", "make_siblings"]
