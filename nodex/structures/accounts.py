"""
Accounts as the state trie stores them: C{[nonce, balance, storageRoot, codeHash]}.
"""

from dataclasses import dataclass

from nodex.crypto import EMPTY_KECCAK, keccak256
from nodex.primitives import UINT64_CEILING, UINT256_CEILING, Hash32, cached_property, direct_init
from nodex.rlpcore import LIST_PREFIXES, STRING_PREFIXES
from nodex.structures.errors import RLPError
from nodex.structures.rlpcodec import (
    decode_fixed,
    decode_list,
    decode_rlp,
    decode_uint,
    encode_rlp,
    encode_uint,
    encode_uint_item,
)

EMPTY_TRIE_ROOT = Hash32(keccak256(b"\x80"))
"""The root hash of an empty Merkle-Patricia trie (Keccak-256 of the RLP empty string)."""

_HASH_PREFIX = STRING_PREFIXES[32]
"""The RLP prefix of a 32-byte string: a storage root's or a code hash's."""


@direct_init
@dataclass(frozen=True)
class Account:
    """
    One account of the world state.

    @ivar nonce: transactions sent (or contracts created, for a contract).
    @ivar balance: in wei.
    @ivar storage_root: root hash of the account's storage trie.
    @ivar code_hash: Keccak-256 of the account's code.
    """

    nonce: int = 0
    balance: int = 0
    storage_root: Hash32 = EMPTY_TRIE_ROOT
    code_hash: Hash32 = Hash32(EMPTY_KECCAK)

    def encode(self) -> bytes:
        """
        The RLP stored as the value of the account in the state trie.
        """
        return self._encoded

    @cached_property
    def _encoded(self) -> bytes:
        # Written out for the fields' usual shapes (an account is encoded at every change, two or three a
        # transaction); any other goes the general way, with the same result or error.
        nonce, balance, storage_root, code_hash = self.nonce, self.balance, self.storage_root, self.code_hash
        if not (
            0 <= nonce < UINT64_CEILING
            and 0 <= balance < UINT256_CEILING
            and type(storage_root) is bytes
            and len(storage_root) == 32
            and type(code_hash) is bytes
            and len(code_hash) == 32
        ):
            return encode_rlp([encode_uint(nonce), encode_uint(balance), storage_root, code_hash])
        payload = b"".join(
            (encode_uint_item(nonce), encode_uint_item(balance), _HASH_PREFIX, storage_root, _HASH_PREFIX, code_hash)
        )
        return LIST_PREFIXES[len(payload)] + payload

    @classmethod
    def decode(cls, raw: bytes) -> "Account":
        """
        Read an account from its RLP.

        @raise RLPError: not a canonical list of four fields, a hash that is
            not 32 bytes, a nonce of 2**64 or more, a balance of 2**256 or more.
        """
        fields = decode_list(decode_rlp(raw), "account", 4)
        nonce = decode_uint(fields[0], "account nonce")
        balance = decode_uint(fields[1], "account balance")
        if nonce >= UINT64_CEILING:
            raise RLPError(f"account nonce {nonce} does not fit in 64 bits")
        if balance >= UINT256_CEILING:
            raise RLPError("account balance does not fit in 256 bits")
        return cls(
            nonce,
            balance,
            Hash32(decode_fixed(fields[2], "account storage root", 32)),
            Hash32(decode_fixed(fields[3], "account code hash", 32)),
        )

    @property
    def is_empty(self) -> bool:
        """
        Whether the account is empty in the sense of EIP-161: no nonce, no
        balance and no code.
        """
        return self.nonce == 0 and self.balance == 0 and self.code_hash == EMPTY_KECCAK


EMPTY_ACCOUNT = Account()
"""An account with no nonce, no balance, no storage and no code."""


__all__ = ["EMPTY_ACCOUNT", "EMPTY_TRIE_ROOT", "Account"]
