"""
Chains made for tests and benchmarks: runs of regtest blocks with native
transfers from the development accounts, built and sealed through the
importer (L{BlockImporter.produce}) as the miner builds them.
"""

from nodex.chain.builder import build_block, seal_block
from nodex.chain.genesis import genesis_spec_from_mapping, initialize_chain
from nodex.chain.importer import BlockImporter
from nodex.chain.networks import chain_rules
from nodex.chain.pow import solve
from nodex.config import load_config
from nodex.crypto import private_key_to_address
from nodex.db.kv import KeyValueStore
from nodex.primitives import Address
from nodex.services.accounts import regtest_keys
from nodex.structures.blocks import Block
from nodex.structures.transactions import LegacyTransaction, sign_transaction

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

        def produce(parent, state, block_hashes):  # type: ignore[no-untyped-def]
            transactions = [
                sign_transaction(
                    LegacyTransaction(state.get_nonce(sender), 0, 21_000, RECIPIENT, 1, b""), key, REGTEST_CHAIN_ID
                )
                for key, sender in zip(keys, senders)
            ]
            built = build_block(
                parent, state, transactions, RECIPIENT, parent.timestamp + 1, importer.rules, block_hashes
            )
            header = built.block.header
            seal = solve(header.hash_for_merged_mining, header.difficulty, range(1 << 20))
            assert seal is not None
            return seal_block(built.block, seal), built.outcome

        step = importer.produce(produce)
        blocks.append(step.block)
    return blocks
