"""
The node's identity on the wire: its secp256k1 key, kept in
C{<datadir>/nodekey}, and the signatures of the handshake (C{docs/p2p.md},
"Handshake").
"""

import os
from dataclasses import dataclass
from pathlib import Path

from nodex.crypto import (
    SECP256K1_N,
    SignatureError,
    keccak256,
    private_key_to_public_key,
    recover_public_key,
    sign,
)
from nodex.p2p.errors import NodeKeyError
from nodex.p2p.messages import AUTH_DOMAIN

NODE_KEY_FILE = "nodekey"
"""The node key's file name under the data directory: 64 hex digits and a newline."""


@dataclass(frozen=True)
class NodeKey:
    """
    A node's private key and its node id (the 64-byte public key).
    """

    private_key: bytes
    node_id: bytes

    @classmethod
    def from_private_key(cls, private_key: bytes) -> "NodeKey":
        """
        The node key of a 32-byte secp256k1 scalar.

        @raise NodeKeyError: not a valid key.
        """
        try:
            return cls(private_key, private_key_to_public_key(private_key))
        except SignatureError as exc:
            raise NodeKeyError(f"invalid node key: {exc}") from exc

    @classmethod
    def generate(cls) -> "NodeKey":
        """
        A new random node key.
        """
        while True:
            candidate = os.urandom(32)
            if 0 < int.from_bytes(candidate, "big") < SECP256K1_N:
                return cls.from_private_key(candidate)

    def sign_challenge(self, challenge: bytes, session: bytes = b"") -> bytes:
        """
        The 65-byte signature (r, s, y parity) that answers the other side's
        C{challenge} in the encrypted session C{session} (its id; empty
        over a plaintext connection).
        """
        y_parity, r, s = sign(handshake_digest(challenge, self.node_id, session), self.private_key)
        return r.to_bytes(32, "big") + s.to_bytes(32, "big") + bytes((y_parity,))


def handshake_digest(challenge: bytes, node_id: bytes, session: bytes = b"") -> bytes:
    """
    What a node signs to prove its key: Keccak-256 of the domain, the
    challenge it received, its own node id and the session id of the
    encrypted transport (which binds the session's keys to the node id; empty
    over a plaintext connection).
    """
    return keccak256(AUTH_DOMAIN + challenge + node_id + session)


def verify_challenge(signature: bytes, challenge: bytes, node_id: bytes, session: bytes = b"") -> bool:
    """
    Whether C{signature} proves that the holder of C{node_id}'s key signed
    C{challenge} in the session C{session}.
    """
    if len(signature) != 65:
        return False
    r = int.from_bytes(signature[:32], "big")
    s = int.from_bytes(signature[32:64], "big")
    try:
        return recover_public_key(handshake_digest(challenge, node_id, session), signature[64], r, s) == node_id
    except SignatureError:
        return False


def load_or_create_node_key(datadir: Path) -> NodeKey:
    """
    Read the node key of a data directory, creating it (mode 0600) on the first start.

    @raise NodeKeyError: the file cannot be read or written, or holds no valid key.
    """
    path = datadir / NODE_KEY_FILE
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        key = NodeKey.generate()
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "w") as handle:
                handle.write(key.private_key.hex() + "\n")
        except OSError as exc:
            raise NodeKeyError(f"cannot create the node key {path}: {exc.strerror}") from None
        return key
    except OSError as exc:
        raise NodeKeyError(f"cannot read the node key {path}: {exc.strerror}") from None
    try:
        private_key = bytes.fromhex(text)
    except ValueError:
        raise NodeKeyError(f"the node key {path} is not hexadecimal") from None
    if len(private_key) != 32:
        raise NodeKeyError(f"the node key {path} must hold 32 bytes, not {len(private_key)}")
    return NodeKey.from_private_key(private_key)


__all__ = [
    "NODE_KEY_FILE",
    "NodeKey",
    "handshake_digest",
    "load_or_create_node_key",
    "verify_challenge",
]
