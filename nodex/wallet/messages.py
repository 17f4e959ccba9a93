"""
What C{eth_sign} signs (DESIGN §1, EIP-191 version 0x45): Keccak-256 of
the byte 0x19, C{<network name> Signed Message:\\n}, the message's length
in decimal, then the message; and the 65-byte signature encoding that
wallets and libraries recover from (r, s, v with v = 27 or 28).
"""

from nodex.crypto import keccak256
from nodex.primitives import Hash32

DEFAULT_NETWORK_NAME = "Ethereum"
"""The network name of the prefix unless configured (what standard libraries verify)."""


def signed_message_hash(message: bytes, network_name: str = DEFAULT_NETWORK_NAME) -> Hash32:
    """
    The digest C{eth_sign} signs for C{message}.
    """
    prefix = b"\x19" + network_name.encode("utf-8") + b" Signed Message:\n" + str(len(message)).encode("ascii")
    return keccak256(prefix + message)


def signature_bytes(y_parity: int, r: int, s: int) -> bytes:
    """
    The 65-byte signature C{r ‖ s ‖ v}, v = 27 + y_parity.
    """
    return r.to_bytes(32, "big") + s.to_bytes(32, "big") + bytes([27 + y_parity])


__all__ = ["DEFAULT_NETWORK_NAME", "signature_bytes", "signed_message_hash"]
