"""
The node's unlocked accounts: on regtest, the public development keys of
reference §13.4 (Keccak-256 of C{cow}, C{cow1} ... C{cow9}, then the miner
coinbase key), which sign C{eth_sendTransaction} requests.

The keys are public knowledge: anyone can spend what these accounts hold on
any chain that funds them.  L{DevAccounts.banner} says so at start.
"""

from collections.abc import Iterable

from twisted.application.service import Service
from twisted.internet.defer import Deferred, fail, succeed
from twisted.logger import Logger
from zope.interface import implementer

from nodex.crypto import keccak256, private_key_to_address
from nodex.interfaces import IAccounts
from nodex.primitives import Address
from nodex.services.errors import UnknownAccountError
from nodex.structures.transactions import LegacyTransaction, Transaction, sign_transaction

COW_SEEDS = ("cow",) + tuple(f"cow{index}" for index in range(1, 10))
"""The seeds of the ten funded regtest accounts, in C{eth_accounts} order."""

MINER_SEED = "regtest_miner_secret_please_change"
"""The seed of the regtest miner's coinbase key."""


def key_from_seed(seed: str) -> bytes:
    """
    The private key derived from a seed as the reference does: Keccak-256 of its UTF-8 bytes.
    """
    return keccak256(seed.encode("utf-8"))


def regtest_keys() -> list[bytes]:
    """
    The regtest development keys: the ten cow keys, then the miner coinbase key.
    """
    return [key_from_seed(seed) for seed in COW_SEEDS] + [key_from_seed(MINER_SEED)]


@implementer(IAccounts)
class DevAccounts(Service):
    """
    Unlocked accounts held in memory, in a fixed order.

    As a service it logs the accounts and their keys when it starts, if
    asked to (the regtest node does).
    """

    log = Logger()

    def __init__(self, keys: Iterable[bytes], chain_id: int, announce: bool = False) -> None:
        """
        @param keys: 32-byte private keys, in the order of L{addresses}.
        @param chain_id: the chain that legacy transactions are signed for (EIP-155).
        @param announce: log the accounts and keys at start.
        """
        self._keys: dict[Address, bytes] = {}
        for key in keys:
            self._keys.setdefault(private_key_to_address(key), key)
        self._chain_id = chain_id
        self._announce = announce

    @classmethod
    def regtest(cls, chain_id: int, announce: bool = True) -> "DevAccounts":
        """
        The regtest accounts of reference §13.4.
        """
        return cls(regtest_keys(), chain_id, announce)

    def addresses(self) -> list[Address]:
        """
        The unlocked accounts, in the order their keys were given.
        """
        return list(self._keys)

    def holds(self, address: bytes) -> bool:
        """
        Whether the node holds an unlocked key for C{address}.
        """
        return address in self._keys

    def sign_transaction(self, unsigned: Transaction, address: bytes) -> Deferred[Transaction]:
        """
        Sign C{unsigned} with the key of C{address}: a legacy transaction
        with EIP-155 for this chain, a typed one with its own chain id.

        @return: a Deferred firing with the signed transaction, or failing
            with L{UnknownAccountError}.
        """
        key = self._keys.get(Address(address))
        if key is None:
            return fail(UnknownAccountError(f"Could not find account for address: 0x{bytes(address).hex()}"))
        chain_id = self._chain_id if isinstance(unsigned, LegacyTransaction) else None
        return succeed(sign_transaction(unsigned, key, chain_id))

    def banner(self) -> str:
        """
        The text shown at start: every account with its private key, and the warning.
        """
        lines = ["Development accounts (unlocked, funded on regtest):", ""]
        for index, (address, key) in enumerate(self._keys.items()):
            lines.append(f"({index}) 0x{address.hex()}")
            lines.append(f"    private key: 0x{key.hex()}")
        lines += [
            "",
            "WARNING: these private keys are public. Never send real funds to these accounts,"
            " on any network: anyone can take them.",
        ]
        return "\n".join(lines)

    def startService(self) -> None:
        """
        Log the accounts if this node announces them.
        """
        super().startService()
        if self._announce:
            self.log.warn("{banner}", banner=self.banner())


__all__ = ["COW_SEEDS", "DevAccounts", "MINER_SEED", "key_from_seed", "regtest_keys"]
