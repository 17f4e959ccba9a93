"""
Chains made for tests and benchmarks: runs of regtest blocks with native
transfers from the development accounts, built and sealed through the
importer (L{BlockImporter.make}) as the miner makes them.
"""

from typing import TYPE_CHECKING, Any

from nodex.chain.aside import FILE
from nodex.chain.genesis import genesis_spec_from_mapping, initialize_chain
from nodex.chain.importer import BlockImporter, ImportResult
from nodex.chain.building.making import BlockTime, TransactionsBlock
from nodex.chain.networks import chain_rules
from nodex.config import load_config
from nodex.crypto import private_key_to_address
from nodex.db.kv import KeyValueStore
from nodex.primitives import Address
from nodex.services.accounts import regtest_keys
from nodex.state.state import State
from nodex.structures.blocks import Block
from nodex.structures.transactions import LegacyTransaction, sign_transaction

if TYPE_CHECKING:
    from twisted.internet.defer import Deferred

REGTEST_CHAIN_ID = 33
RECIPIENT = Address(b"\x77" * 20)


def regtest_importer(store: KeyValueStore) -> BlockImporter:
    """
    An importer over C{store}, holding the regtest genesis.
    """
    config = load_config(None, {"network": "regtest", "datadir": "/nonexistent"})
    initialize_chain(store, "regtest", genesis_spec_from_mapping(config.genesis))
    return BlockImporter(store, chain_rules("regtest", REGTEST_CHAIN_ID))


def make_blocks(importer: BlockImporter, count: int, transfers: int = 0) -> list[Block]:
    """
    Build, seal and store C{count} blocks on the importer's tip, each with
    C{transfers} native transfers (one from each of the first C{transfers}
    development accounts, at most ten).

    @return: the blocks, oldest first.
    """
    keys = regtest_keys()[:transfers]
    senders = [private_key_to_address(key) for key in keys]
    blocks = []
    for _ in range(count):
        tip = importer.tip.header
        state = State.from_store(importer.store, tip.state_root)
        transactions = tuple(
            sign_transaction(
                LegacyTransaction(state.get_nonce(sender), 0, 21_000, RECIPIENT, 1, b""), key, REGTEST_CHAIN_ID
            )
            for key, sender in zip(keys, senders)
        )
        step = importer.make(TransactionsBlock(RECIPIENT, BlockTime(tip.timestamp + 1, tip.timestamp), transactions))
        blocks.append(step.block)
    return blocks


def import_one(chain: Any, block: Block) -> "Deferred[ImportResult]":
    """
    Import C{block} from a chain file through a chain service; fire with its result.
    """
    return chain.import_blocks([block], FILE).addCallback(lambda found: found[0].result)


def import_explained(chain: Any, block: Block) -> "Deferred[tuple[ImportResult, str | None]]":
    """
    Like L{import_one}, with the reason of a refusal.
    """
    return chain.import_blocks([block], FILE).addCallback(lambda found: (found[0].result, found[0].reason))


def store_block(importer: BlockImporter, block: Block) -> ImportResult | None:
    """
    Import C{block} through an importer (no check of the clock).
    """
    return importer.import_blocks([block], None, FILE)[0].result
