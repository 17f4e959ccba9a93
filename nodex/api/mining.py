"""
Block production as the edges see it: the miner, automining, the pending block
and the work handed to outside miners.
"""

from dataclasses import dataclass
from typing import Any

from twisted.internet.defer import Deferred
from zope.interface import Attribute, Interface

from nodex.chain.importer import ImportResult
from nodex.chain.building.making import LoneAdmission
from nodex.primitives import Hash32
from nodex.structures.blocks import Block
from nodex.structures.headers import Header
from nodex.structures.transactions import Transaction

__all__ = [
    "IAutoMining",
    "IMiner",
    "IPendingBlock",
    "IWorkService",
    "MiningWork",
    "SubmittedBlock",
]


class IPendingBlock(Interface):
    """
    The block the miner would build now (C{pending}, DESIGN §6).
    """

    def header() -> "Deferred[Header]":
        """
        The pending block's header: the next number, the time the miner
        would stamp, its coinbase, gas limit and difficulty, and the state
        root after the pending transactions (readable through the state
        service while it is the pending block).
        """

    def block() -> "Deferred[Any]":
        """
        The pending block itself (a C{PendingBlock}: its unsealed C{block}
        and the C{receipts} of its transactions).
        """

    def header_now() -> "Header | None":
        """
        The pending block's header if it is known at once, without building
        (nothing pending to execute: the head's empty child), else L{None}
        (then ask L{header}): the estimates and calls of an automining dev
        chain, which hardhat-ethers makes at C{pending}, resolve it without
        a Deferred.
        """


class IAutoMining(Interface):
    """
    What an automining miner does as a watcher of the pool
    (L{ITransactionPool.watch_for_miner}).
    """

    def transaction_pending(transaction: Transaction, relayed: bool) -> "Deferred[None] | None":
        """
        A transaction became pending; the Deferred returned (a block being
        mined for it) is what the pool's C{add} waits for.
        """

    def include_alone(transaction: Transaction, admission: LoneAdmission) -> "Deferred[Any] | None":
        """
        Admit and mine a transaction sent to an empty pool in one job, or
        decline (L{None}): the Deferred fires with L{None} once it is mined,
        or with the sender's (nonce, balance) when it is not executable yet.
        """


class IMiner(Interface):
    """
    The block producer.
    """

    coinbase = Attribute("The address credited with fees (bytes, 20).")
    mode = Attribute("The mining mode: auto, interval, manual or off (str).")
    is_mining = Attribute("Whether blocks are produced without being asked (bool).")
    due_now = Attribute("Whether a block can be stamped on the head now, within the network's drift limit (bool).")

    def mine(empty: bool = True) -> "Deferred[Block | None]":
        """
        Build, seal and import one block of pending transactions now; with
        C{empty} false, nothing (L{None}) when none of them can be included.
        """

    def mine_alone(transaction: "Transaction", admission: LoneAdmission) -> "Deferred[Any]":
        """
        Admit C{transaction} with the pool's rules and mine it in a block of
        its own, in one writer job; fires with L{None} once it is mined, or
        with its sender's (nonce, balance) when it is not executable yet.
        """

    def start() -> None:
        """
        Resume automatic mining (C{evm_startMining}).
        """

    def stop() -> None:
        """
        Suspend automatic mining (C{evm_stopMining}).
        """

    def increase_time(seconds: int) -> int:
        """
        Add to the offset applied to the next block's timestamp; return the
        accumulated offset.
        """

    def chain_time() -> int:
        """
        The time the next block would be stamped with before the
        parent-plus-one rule (a set timestamp, or the clock plus the offset).
        """

    def set_chain_time(timestamp: int) -> None:
        """
        Make the next blocks' time go on from C{timestamp} now.
        """


@dataclass(frozen=True)
class MiningWork:
    """
    One unit of mining work (C{mnr_getWork}, C{eth_getWork}).

    @ivar hash_for_merged_mining: what the seal must commit to (also
        C{eth_getWork}'s pow-hash).
    @ivar target: 2^256 / max(difficulty, 3): the largest acceptable
        Bitcoin header hash, as a number.
    @ivar fees: the fees the block pays its coinbase, in wei.
    @ivar notify: whether this work is news to a merged miner (reference §3.5).
    @ivar parent_hash: the hash of the block the work builds on.
    @ivar number: the height of the block being mined.
    @ivar difficulty: its difficulty.
    """

    hash_for_merged_mining: Hash32
    target: int
    fees: int
    notify: bool
    parent_hash: Hash32
    number: int
    difficulty: int


@dataclass(frozen=True)
class SubmittedBlock:
    """
    What became of a submitted seal: the import outcome, and the sealed
    block's hash and number.
    """

    result: ImportResult
    block_hash: Hash32
    number: int


class IWorkService(Interface):
    """
    Work for miners outside the writer, and their sealed blocks (C{docs/mining.md}).
    """

    coinbase = Attribute("The address the templates credit (bytes, 20).")

    def merged_mining_work() -> "Deferred[MiningWork]":
        """
        The current work, with C{notify} set the first time news is handed out.
        """

    def work() -> "Deferred[MiningWork]":
        """
        The current work, C{notify} always false (C{eth_getWork}).
        """

    def submit_bitcoin_block(raw: bytes) -> "Deferred[SubmittedBlock]":
        """
        Seal with a whole serialised Bitcoin block.

        @return: a Deferred failing with L{WorkSubmissionError} (-33000) when
            the block is malformed, names unknown work or has too little work.
        """

    def submit_transaction_ids(header: bytes, coinbase: bytes, ids: "list[bytes]") -> "Deferred[SubmittedBlock]":
        """
        Seal with a header, a coinbase and every transaction id (display order).
        """

    def submit_merkle_branch(
        header: bytes, coinbase: bytes, hashes: "list[bytes]", count: int
    ) -> "Deferred[SubmittedBlock]":
        """
        Seal with a header, a coinbase, its id and its merkle branch (internal order).
        """

    def submit_work(nonce: bytes, pow_hash: bytes) -> "Deferred[bool]":
        """
        Seal with the canonical template and an 8-byte nonce; whether the block was accepted.
        """

    def submit_hashrate(rate: int, client_id: bytes) -> bool:
        """
        Record an external miner's hash rate.
        """

    def hashrate() -> int:
        """
        The node's own measured rate plus the recently submitted rates.
        """

    def network_hashrate() -> "Deferred[int]":
        """
        The network's rate estimated from the last hour's blocks.
        """

    def is_cpu_mining() -> bool:
        """
        Whether the built-in CPU miner is searching seals now.
        """
