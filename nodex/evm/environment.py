"""
What a message sees of the world outside the state: the block and the transaction.

The EVM knows nothing of how blocks are stored; the caller builds a
L{BlockEnvironment} (the chain passes base fee 0 and excess blob gas 0, so
BLOBBASEFEE is 1; the state tests pass real Cancun values) and a
L{TransactionEnvironment} for each transaction.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from nodex.evm.forks import DEFAULT_FORK, Fork
from nodex.evm.gas import blob_base_fee
from nodex.primitives import Address, Hash32, cached_property, direct_init


def _no_block_hashes(number: int) -> Hash32 | None:
    """
    The block hash lookup of an environment that knows no ancestors.
    """
    return None


@direct_init
@dataclass(frozen=True)
class BlockEnvironment:
    """
    The block a transaction runs in.

    @ivar coinbase: the address that receives the priority fees (COINBASE).
    @ivar number: the block number (NUMBER).
    @ivar timestamp: seconds since the epoch (TIMESTAMP).
    @ivar gas_limit: the block gas limit (GASLIMIT), also the cap on a
        transaction's gas.
    @ivar prev_randao: the 32-byte value PREVRANDAO pushes (on our chain the
        difficulty as a word, on post-merge test environments the mix hash).
    @ivar chain_id: CHAINID.
    @ivar base_fee: the base fee per gas, burnt (BASEFEE); 0 on our chain.
    @ivar excess_blob_gas: EIP-4844's excess blob gas, from which the blob
        base fee follows (0 gives BLOBBASEFEE = 1, our chain's value).
    @ivar block_hashes: maps a block number to the hash of that ancestor, or
        L{None} when it is unknown; BLOCKHASH only asks for the 256 most recent.
    @ivar fork: the rule set the block's transactions run under (the
        chain's schedule chooses it by block number; L{DEFAULT_FORK} when
        none is given).
    """

    coinbase: Address
    number: int
    timestamp: int
    gas_limit: int
    prev_randao: bytes = b"\x00" * 32
    chain_id: int = 33
    base_fee: int = 0
    excess_blob_gas: int = 0
    block_hashes: Callable[[int], Hash32 | None] = field(default=_no_block_hashes, compare=False)
    fork: Fork = DEFAULT_FORK

    @cached_property
    def blob_base_fee(self) -> int:
        """
        The price of a unit of blob gas in this block (BLOBBASEFEE).
        """
        return blob_base_fee(self.excess_blob_gas)


@direct_init
@dataclass(frozen=True)
class TransactionEnvironment:
    """
    The transaction a message belongs to.

    @ivar origin: the sender of the transaction (ORIGIN).
    @ivar gas_price: the effective gas price (GASPRICE).
    @ivar blob_hashes: the versioned hashes of a blob transaction (BLOBHASH);
        empty on our chain.
    """

    origin: Address
    gas_price: int
    blob_hashes: Sequence[Hash32] = ()
