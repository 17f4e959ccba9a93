"""
Blocks of the dev-chain methods (L4): a block that carries a state change
made by an operator rather than by a transaction, and runs of empty blocks.

Hardhat and Anvil change the state of their head in place
(C{hardhat_setBalance}, C{anvil_setCode}, ...); nodex keeps every answer
consistent with a block's state root instead, so each such change is
written as a new block whose state root holds it (C{docs/compatibility.md}).
Such a block carries no transaction that explains its state: another node
re-executing it refuses it.  That is the price of a dev chain whose every
RPC answer comes from a block; L{nodex.chain.dev.state} moves a whole state
to another node instead.
"""

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from nodex.chain.difficulty import next_difficulty
from nodex.chain.errors import ChainError
from nodex.chain.seal.pow import solve
from nodex.chain.processing import receipts_root, transactions_root
from nodex.chain.rules import ChainRules, next_gas_limit
from nodex.primitives import Address
from nodex.state.state import State
from nodex.structures.bloom import BLOOM_BYTES
from nodex.structures.blocks import Block
from nodex.structures.headers import EMPTY_UNCLES_HASH, Header

EMPTY_TRANSACTIONS_ROOT = transactions_root(())
EMPTY_RECEIPTS_ROOT = receipts_root(())
EMPTY_BLOOM = bytes(BLOOM_BYTES)

class SealSearchError(ChainError):
    """
    No seal within the nonce budget: the network's difficulty is beyond the
    built-in solver.
    """


@dataclass(frozen=True)
class SetBalance:
    """
    A dev-chain edit: C{address} holds C{balance} wei (C{hardhat_setBalance}).
    """

    address: Address
    balance: int

    def apply(self, state: State) -> None:
        state.set_balance(self.address, self.balance)


@dataclass(frozen=True)
class SetCode:
    """
    A dev-chain edit: C{address} has C{code}, empty for none (C{hardhat_setCode}).
    """

    address: Address
    code: bytes

    def apply(self, state: State) -> None:
        state.set_code(self.address, self.code)


@dataclass(frozen=True)
class SetNonce:
    """
    A dev-chain edit: C{address} has C{nonce} (C{hardhat_setNonce}).
    """

    address: Address
    nonce: int

    def apply(self, state: State) -> None:
        state.set_nonce(self.address, self.nonce)


@dataclass(frozen=True)
class SetStorage:
    """
    A dev-chain edit: slot C{slot} of C{address} holds C{value} (C{hardhat_setStorageAt}).
    """

    address: Address
    slot: int
    value: int

    def apply(self, state: State) -> None:
        state.set_storage(self.address, self.slot, self.value)


StateEdit = SetBalance | SetCode | SetNonce | SetStorage
"""One change of the state a dev-chain method makes without a transaction."""


def empty_header_fields(
    parent: Header, timestamp: int, coinbase: Address, rules: ChainRules, extra_data: bytes = b""
) -> dict[str, Any]:
    """
    The fields of the unsealed header of an empty block on C{parent}: no
    transaction, so it keeps its parent's state root (the chain pays no
    block reward) and has the empty roots and bloom.
    """
    return dict(
        parent_hash=parent.hash,
        uncles_hash=EMPTY_UNCLES_HASH,
        coinbase=coinbase,
        state_root=parent.state_root,
        transactions_root=EMPTY_TRANSACTIONS_ROOT,
        receipts_root=EMPTY_RECEIPTS_ROOT,
        logs_bloom=EMPTY_BLOOM,
        difficulty=next_difficulty(rules.difficulty, parent.difficulty, parent.timestamp, timestamp, 0),
        number=parent.number + 1,
        gas_limit=next_gas_limit(rules, parent.gas_limit),
        gas_used=0,
        timestamp=timestamp,
        extra_data=extra_data,
        paid_fees=0,
        minimum_gas_price=parent.minimum_gas_price,
        uncle_count=0,
    )


def empty_blocks(
    parent: Header,
    count: int,
    first_timestamp: int,
    interval: int,
    coinbase: Address,
    rules: ChainRules,
    extra_data: bytes = b"",
    max_nonces: int = 2**22,
) -> Iterator[Block]:
    """
    Build and seal C{count} empty blocks on C{parent}, each on the one
    before: no transaction, so each keeps its parent's state root (the
    chain pays no block reward) and has the empty roots and bloom; the
    first is stamped C{first_timestamp} (at least the parent's plus one),
    the others C{interval} seconds apart.

    The headers are made directly rather than by L{build_block}, which
    would commit an unchanged state for each: a fixture that mines
    thousands of blocks to move time waits for this loop.

    @param interval: seconds between blocks, at least 1 (timestamps must
        increase; the dev chain gives 1 for an interval of 0).
    @raise SealSearchError: no seal within the budget.
    """
    timestamp = max(first_timestamp, parent.timestamp + 1)
    for _ in range(count):
        fields = empty_header_fields(parent, timestamp, coinbase, rules, extra_data)
        mining_hash = Header(**fields).hash_for_merged_mining
        seal = solve(mining_hash, fields["difficulty"], range(max_nonces))
        if seal is None:
            raise SealSearchError(
                f"no seal for block {fields['number']} at difficulty {fields['difficulty']}"
                f" in {max_nonces} nonces"
            )
        header = Header(
            **fields,
            bitcoin_merged_mining_header=seal.bitcoin_header,
            bitcoin_merged_mining_merkle_proof=seal.merkle_proof,
            bitcoin_merged_mining_coinbase_transaction=seal.coinbase,
        )
        # The seal leaves the hash for merged mining unchanged: keep the one computed.
        header.__dict__["hash_for_merged_mining"] = mining_hash
        block = Block(header, (), ())
        yield block
        parent = block.header
        timestamp += interval


__all__ = [
    "EMPTY_BLOOM",
    "EMPTY_RECEIPTS_ROOT",
    "EMPTY_TRANSACTIONS_ROOT",
    "SealSearchError",
    "SetBalance",
    "SetCode",
    "SetNonce",
    "SetStorage",
    "StateEdit",
    "empty_blocks",
    "empty_header_fields",
]
