"""
The dev-chain controls of regtest and devnet (L5): what the Hardhat and
Anvil methods (C{hardhat_*}, C{anvil_*}, C{evm_set*}) do to the node.

Every state change is a new block (L{nodex.chain.dev.blocks}): the head's
state with the change, asked of the chain's writer as a request
(L{nodex.chain.building.making.EditsBlock}, L{nodex.chain.building.making.SnapshotBlock}) and
made by the importer like any block of this node, so that each RPC answer
stays consistent with a block's state root.  Such a block is stamped with
the clock (at least its parent's time plus one) and leaves an
C{evm_increaseTime} offset or an C{evm_setNextBlockTimestamp} time to the
next mined block.  C{hardhat_mine} asks for its whole run of empty blocks
in one writer job (L{nodex.chain.building.making.EmptyRun}).
"""

from dataclasses import replace
from typing import Any

from twisted.internet.defer import Deferred, succeed
from twisted.python.failure import Failure
from zope.interface import implementer

from nodex.chain.dev.blocks import SetBalance, SetCode, SetNonce, SetStorage, StateEdit
from nodex.chain.dev.state import SnapshotError, dump_state
from nodex.chain.building.making import EditsBlock, EmptyRun, SnapshotBlock
from nodex.chain.rules import MIN_GAS_LIMIT
from nodex.api.chain import IChainService, IChainWriter
from nodex.api.devchain import IDevChain, IImpersonation
from nodex.api.mining import IMiner
from nodex.api.pool import ITransactionPool
from nodex.primitives import Address
from nodex.services.blocktime import BlockClock
from nodex.api.errors import DevChainInputError
from nodex.services.miner import CHEAP_SEAL_DIFFICULTY
from nodex.state.state import State
from nodex.structures.blocks import Block
from nodex.structures.transaction_rules import TX_BASE_COST

MAX_MINED_BLOCKS = 200_000
"""The most blocks one C{hardhat_mine} writes: the run's blocks are held
until the chain event that adopts them is published (about 1 KiB each once
written, a node peak of some 600 MiB at this bound); a longer run is several calls."""


@implementer(IImpersonation)
class Impersonation:
    """
    The accounts a dev chain lets C{eth_sendTransaction} send from without
    their keys: the pool admits the impersonation marker of these senders
    only, while they are impersonated.  Kept in memory, as Hardhat and
    Anvil keep theirs: a restart forgets them (C{docs/devchain.md}).

    @ivar automatic: every address is impersonated (C{anvil_autoImpersonateAccount}).
    """

    def __init__(self) -> None:
        # A dict keeps the order in which the addresses were named.
        self._addresses: dict[bytes, None] = {}
        self.automatic = False

    def is_impersonated(self, address: bytes) -> bool:
        """
        Whether transactions from C{address} need no key now.
        """
        return self.automatic or bytes(address) in self._addresses

    def addresses(self) -> list[Address]:
        """
        The accounts impersonated one by one, in the order they were named.
        """
        return [Address(address) for address in self._addresses]

    def start(self, address: bytes) -> None:
        """
        Impersonate C{address}.
        """
        self._addresses[bytes(address)] = None

    def stop(self, address: bytes) -> bool:
        """
        Stop impersonating C{address}; whether it was impersonated one by one.
        """
        if bytes(address) not in self._addresses:
            return False
        del self._addresses[bytes(address)]
        return True


@implementer(IDevChain)
class DevChain:
    """
    The dev-chain controls of one node.
    """

    def __init__(
        self,
        chain: IChainService,
        writer: IChainWriter,
        miner: IMiner,
        pool: ITransactionPool,
        block_clock: BlockClock,
        impersonation: Impersonation | None = None,
    ) -> None:
        """
        @param chain: the chain's reads (transactions, the head's state).
        @param writer: makes the dev chain's blocks.
        @param miner: its coinbase and mode are changed.
        @param pool: where dropped transactions are removed.
        @param block_clock: the time of the node's blocks (the offset and
            set time the dev methods move).
        @param impersonation: the impersonated accounts the pool and
            C{eth_sendTransaction} consult (a set of its own by default).
        """
        self._chain = chain
        self._writer = writer
        self._miner = miner
        self._pool = pool
        self._block_clock = block_clock
        self._impersonation = Impersonation() if impersonation is None else impersonation

    # State setters

    def _write_edits(self, *edits: StateEdit) -> "Deferred[Block]":
        """
        Write a block whose state is the head's with C{edits} applied.
        """
        request = EditsBlock(self._miner.coinbase, self._block_clock.plain_time(), edits)
        return self._writer.make(request).addCallback(lambda step: step.block)

    def set_balance(self, address: bytes, balance: int) -> "Deferred[Block]":
        """
        Write a block in which C{address} holds C{balance} wei.
        """
        return self._write_edits(SetBalance(Address(address), balance))

    def set_code(self, address: bytes, code: bytes) -> "Deferred[Block]":
        """
        Write a block in which C{address} has C{code} (empty: no code).
        """
        return self._write_edits(SetCode(Address(address), code))

    def set_nonce(self, address: bytes, nonce: int) -> "Deferred[Block]":
        """
        Write a block in which C{address} has C{nonce}.
        """
        return self._write_edits(SetNonce(Address(address), nonce))

    def set_storage_at(self, address: bytes, slot: int, value: int) -> "Deferred[Block]":
        """
        Write a block in which slot C{slot} of C{address} holds C{value}.
        """
        return self._write_edits(SetStorage(Address(address), slot, value))

    # Blocks and time

    def mine(self, blocks: int, interval: int) -> "Deferred[Block | None]":
        """
        Mine the pool's pending transactions into the first blocks, then
        write the others as empty blocks in one writer job: the first at the
        next block's time (an C{evm_setNextBlockTimestamp} time or the clock
        plus the C{evm_increaseTime} offset, both consumed), the others
        C{interval} seconds apart; an interval of 0 (what viem's test
        client sends) stamps each block one second after its parent, the
        least a timestamp may grow, as Anvil's blocks mined at once are.

        @raise DevChainInputError: C{blocks} above L{MAX_MINED_BLOCKS}, or
            a network whose seals are dear.
        """
        difficulty = self._writer.head.header.difficulty
        if difficulty > CHEAP_SEAL_DIFFICULTY:
            # Each seal would be searched on the writer thread, holding
            # every other block for seconds (devnet's difficulty).
            raise DevChainInputError(
                f"the head's difficulty {difficulty} is above {CHEAP_SEAL_DIFFICULTY}: runs of blocks need"
                " a network whose seals are cheap (regtest); mine one block at a time with evm_mine"
            )
        if blocks > MAX_MINED_BLOCKS:
            raise DevChainInputError(
                f"cannot mine {blocks} blocks at once: at most {MAX_MINED_BLOCKS} per call (call again for more)"
            )
        if blocks == 0:
            return succeed(None)
        return Deferred.fromCoroutine(self._mine(blocks, max(interval, 1)))

    async def _mine(self, blocks: int, interval: int) -> Block | None:
        """
        Mine the pool's pending transactions first, a block at a time as
        Hardhat and Anvil do (a fixture that turns automining off, sends,
        then calls C{mine()} waits for those transactions: issue 27), then
        the rest of the blocks as a run of empty ones, the first of them
        C{interval} seconds after the last mined one.
        """
        last: Block | None = None
        while blocks and self._pool.pending():
            mined = await self._miner.mine()
            blocks -= 1
            if mined is not None:
                last = mined
        if not blocks:
            return last
        if last is None:
            time = self._block_clock.time()
        else:
            time = replace(self._block_clock.time(), wanted=last.header.timestamp + interval)
        step = await self._writer.make(EmptyRun(self._miner.coinbase, time, blocks, interval))
        if last is None:
            self._block_clock.consume()
        return step.block

    def set_next_block_timestamp(self, timestamp: int) -> None:
        """
        Stamp the next mined block with C{timestamp}.

        @raise DevChainInputError: not after the head's timestamp.
        """
        head = self._chain.head.header.timestamp
        if timestamp <= head:
            raise DevChainInputError(
                f"timestamp {timestamp} is not after the latest block's timestamp {head}"
            )
        self._block_clock.set_next(timestamp)

    def set_automine(self, enabled: bool) -> None:
        """
        Mine a block per accepted transaction (C{auto}), or only when asked
        (C{manual}, or C{interval} if interval mining is on).
        """
        if enabled:
            self._miner.set_mode("auto")
        elif self._miner.mode == "auto":
            self._miner.set_mode("manual")

    def get_automine(self) -> bool:
        """
        Whether a block is mined per accepted transaction (C{auto} mode).
        """
        return self._miner.mode == "auto"

    def set_interval_mining(self, milliseconds: int) -> None:
        """
        Mine a block every C{milliseconds} (C{interval} mode, automining
        off); 0 stops interval mining (C{manual}, unless automining is on).
        """
        if milliseconds > 0:
            self._miner.set_mode(f"interval:{milliseconds / 1000}")
        elif self._miner.mode == "interval":
            self._miner.set_mode("manual")

    def set_block_gas_limit(self, gas_limit: int) -> "Deferred[None]":
        """
        Give the blocks from the next on C{gas_limit} (on devnet, whose
        limit moves by 1/1024 per block, the target they move towards).

        @raise DevChainInputError: below 21,000 (a fixed limit) or below the
            network minimum of 3,000,000 (a moving one).
        """
        rules = self._writer.rules
        least = TX_BASE_COST if rules.fixed_gas_limit else MIN_GAS_LIMIT
        if gas_limit < least:
            raise DevChainInputError(f"block gas limit {gas_limit} is below {least}")
        return self._writer.set_rules(replace(rules, target_gas_limit=gas_limit))

    def set_coinbase(self, address: bytes) -> None:
        """
        Credit the fees of the blocks from now on to C{address}.
        """
        self._miner.coinbase = Address(address)

    # Transactions

    async def _drop(self, tx_hash: bytes) -> bool:
        """
        Remove a pooled transaction; refuse a mined one.
        """
        if self._pool.get(tx_hash) is not None:
            self._pool.remove([tx_hash])
            return True
        if await self._chain.get_transaction(tx_hash) is not None:
            raise DevChainInputError(f"transaction 0x{bytes(tx_hash).hex()} is already mined and cannot be dropped")
        return False

    def drop_transaction(self, tx_hash: bytes) -> "Deferred[bool]":
        """
        Remove a transaction from the pool.

        @return: a Deferred firing with whether it was pooled, or failing
            with L{DevChainInputError} when it is already mined.
        """
        return Deferred.fromCoroutine(self._drop(tx_hash))

    # Impersonation

    def impersonate_account(self, address: bytes) -> None:
        """
        Let C{eth_sendTransaction} send from C{address} without its key.
        """
        self._impersonation.start(address)

    def stop_impersonating_account(self, address: bytes) -> bool:
        """
        Stop impersonating C{address}; whether it was impersonated.  Its
        transactions already pooled stay and are mined.
        """
        return self._impersonation.stop(address)

    def set_auto_impersonate(self, enabled: bool) -> None:
        """
        Impersonate every address (C{True}), or only those named one by one.
        """
        self._impersonation.automatic = enabled

    # Snapshots

    def dump_state(self) -> "Deferred[dict[str, Any]]":
        """
        Every account of the head's state (the format of L{nodex.chain.dev.state}).
        """
        header = self._chain.head.header
        chain_id = self._chain.chain_id

        def dump(state: State) -> dict[str, Any]:
            return dump_state(state.read_node, state.read_code, header.state_root, chain_id, header.number)

        return self._chain.run_with_state(dump, header.state_root)

    def load_state(self, snapshot: Any) -> "Deferred[Block]":
        """
        Write a block whose state is the head's with the snapshot's accounts laid over it.

        @return: a Deferred firing with the block, or failing with
            L{DevChainInputError} when the snapshot is malformed.
        """
        request = SnapshotBlock(self._miner.coinbase, self._block_clock.plain_time(), snapshot)

        def malformed(failure: Failure) -> None:
            failure.trap(SnapshotError)
            raise DevChainInputError(failure.getErrorMessage())

        return self._writer.make(request).addCallbacks(lambda step: step.block, malformed)


__all__ = ["Impersonation", "MAX_MINED_BLOCKS", "DevChain"]
