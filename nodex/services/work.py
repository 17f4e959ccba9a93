"""
The work service (L5): block templates for miners outside the writer, and
their sealed blocks back into the chain (DESIGN §2, reference §3.5).

A template is an unsealed block built on the head by the same builder the
built-in miner uses (L{nodex.chain.building.builder.build_block}), on a reader
thread against the head's state root, with the pool's pending transactions
and the uncles the node knows from side chains.  Its hashForMergedMining is
the work: merged miners get it from C{mnr_getWork}, Ethereum-style miners
from C{eth_getWork}, the built-in CPU miner (L{nodex.services.cpuminer})
directly.  The last L{KEPT_TEMPLATES} templates are kept by that hash, so
that a miner still working on older work may submit it.

New work is built when the head changes, every L{REFRESH_SECONDS} (a newer
timestamp, the transactions that arrived) and, if asked, on every new
pending transaction; building is lazy while nobody mines (no request in the
last L{REFRESH_SECONDS}), so that a node nobody mines on builds nothing.

A submission becomes a sealed copy of its template; the seal is checked
(reference §12.5) and the block imported through the chain service like a
block from any other source; the answer is the import outcome.
"""

import os
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from twisted.application.service import Service
from twisted.internet.defer import Deferred, fail, succeed
from twisted.internet.interfaces import IReactorTime
from twisted.internet.task import LoopingCall
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from nodex.chain.aside import SUBMITTED
from nodex.chain.building.builder import seal_block
from nodex.chain.errors import InvalidSealError
from nodex.chain.seal.mergedmining import (
    SubmissionError,
    committed_hash,
    seal_from_block,
    seal_from_branch,
    seal_from_transaction_ids,
)
from nodex.chain.seal.pow import Seal, check_seal, seal_target, template_seal
from nodex.chain.rules import ChainRules
from nodex.chain.uncles import still_useful
from nodex.db.kv import KeyValueStore
from nodex.api.chain import ChainEvent, IChainService, IChainWriter, ImportOutcome, ImportResult
from nodex.api.mining import IWorkService, MiningWork, SubmittedBlock
from nodex.api.pool import ITransactionPool
from nodex.primitives import Address, Hash32
from nodex.services.blocktime import BlockClock
from nodex.api.errors import WorkSubmissionError
from nodex.services.miner import order_candidates
from nodex.services.sideblocks import SideBlocks
from nodex.chain.building.templates import HASHRATE_SECONDS, ChainReads
from nodex.services.threads import RunInThread
from nodex.structures.blocks import Block
from nodex.structures.transactions import Transaction

KEPT_TEMPLATES = 20
"""How many templates are kept for submissions (reference §3.5)."""

REFRESH_SECONDS = 60.0
"""New work at least this often while someone mines (reference §3.5)."""

SUBMITTED_RATE_SECONDS = 10.0
"""A rate given through C{eth_submitHashrate} counts this long without being renewed."""

@dataclass
class Template:
    """
    One unit of work: an unsealed block and what a miner needs of it.

    @ivar block: the unsealed block, built on C{block.header.parent_hash}.
    @ivar handed_out: whether C{mnr_getWork} has answered it already.
    """

    block: Block
    created: float
    handed_out: bool = False

    @property
    def hash_for_merged_mining(self) -> bytes:
        """
        The hash the seal must commit to.
        """
        return self.block.header.hash_for_merged_mining

    @property
    def difficulty(self) -> int:
        """
        The block's difficulty.
        """
        return self.block.header.difficulty

    def work(self, notify: bool) -> MiningWork:
        """
        The answer of C{mnr_getWork} and C{eth_getWork} for this template.
        """
        header = self.block.header
        return MiningWork(
            Hash32(header.hash_for_merged_mining),
            seal_target(header.difficulty),
            header.paid_fees,
            notify,
            Hash32(header.parent_hash),
            header.number,
            header.difficulty,
        )


def _thd_seal_submission(
    make_seal: Callable[..., Seal], args: Sequence[Any], templates: dict[bytes, Template]
) -> tuple[Template, Seal]:
    """
    Build the seal of a submission, find its template and check the seal
    (a reader thread: the coinbase's mid-state is pure Python).

    @raise WorkSubmissionError: malformed, unknown, or not enough work.
    """
    try:
        seal = make_seal(*args)
    except SubmissionError as exc:
        raise WorkSubmissionError(str(exc)) from exc
    wanted = committed_hash(seal.coinbase[40:])
    template = templates.get(wanted)
    if template is None:
        raise WorkSubmissionError(f"Cannot publish block, could not find hash 0x{wanted.hex()} in the cache")
    try:
        check_seal(wanted, template.difficulty, seal)
    except InvalidSealError as exc:
        header = template.block.header
        raise WorkSubmissionError(
            f"Invalid block supplied by miner: {header.hash.hex()[:8]} {wanted.hex()[:8]} at height {header.number}",
            str(exc),
        ) from exc
    return template, seal


@implementer(IWorkService)
class WorkService(Service):
    """
    Templates for miners, and their submissions.

    @ivar coinbase: the address the templates credit.
    @ivar local_hashrate: a callable giving the built-in CPU miner's
        measured hashes per second (set by the miner; 0 without one).
    @ivar cpu_mining: a callable saying whether the built-in CPU miner runs.
    """

    log = Logger()

    def __init__(
        self,
        chain: IChainService,
        writer: IChainWriter,
        store: KeyValueStore,
        rules: ChainRules,
        coinbase: Address,
        clock: IReactorTime,
        run_in_thread: RunInThread,
        pool: ITransactionPool,
        block_clock: BlockClock,
        side_blocks: SideBlocks,
        update_on_transactions: bool = False,
        extra_data: bytes = b"",
    ) -> None:
        """
        @param chain: the head, and the changes that make work stale.
        @param writer: where sealed blocks are imported.
        @param store: the chain's key-value store (the head's state, the ancestry).
        @param rules: the network's L{nodex.chain.rules.ChainRules}.
        @param run_in_thread: runs template builds and seal checks (a reader pool).
        @param pool: where pending transactions come from.
        @param block_clock: the time policy of the node's blocks.
        @param side_blocks: the uncle candidates.
        @param update_on_transactions: build new work on every new pending transaction.
        """
        self._chain = chain
        self._writer = writer
        self._reads = ChainReads(store, rules, coinbase, extra_data)
        self.coinbase = coinbase
        self._clock = clock
        self._run_in_thread = run_in_thread
        self._pool = pool
        self._block_clock = block_clock
        self._side_blocks = side_blocks
        self._templates: OrderedDict[bytes, Template] = OrderedDict()
        self._current: Template | None = None
        self._building: list[Deferred[Template]] | None = None
        self._after: list[Deferred[Template]] = []
        self._dirty = False
        self._last_request: float | None = None
        self._notified_parent: bytes | None = None
        self._notified_fees = 0
        self._rates: dict[bytes, tuple[int, float]] = {}
        self._loop: LoopingCall | None = None
        self.local_hashrate: Callable[[], int] = lambda: 0
        self.cpu_mining: Callable[[], bool] = lambda: False
        chain.add_observer(self._chain_changed)
        chain.add_side_observer(self._side_block)
        if update_on_transactions:
            pool.add_observer(self._transaction_pending)

    # Service

    def startService(self) -> None:
        """
        Start the refresh loop.
        """
        super().startService()
        self._loop = LoopingCall(self._refresh)
        self._loop.clock = self._clock
        self._loop.start(REFRESH_SECONDS, now=False)

    def stopService(self) -> None:
        """
        Stop the refresh loop.
        """
        super().stopService()
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._loop = None

    # Triggers

    @property
    def active(self) -> bool:
        """
        Whether someone asked for work within the last L{REFRESH_SECONDS}.
        """
        return self._last_request is not None and self._clock.seconds() - self._last_request < REFRESH_SECONDS

    def _chain_changed(self, event: ChainEvent) -> None:
        """
        A new head: the current work is stale (abandoned blocks became
        uncle candidates, L{SideBlocks}).
        """
        self._current = None
        if event.rewound:
            self._templates.clear()
        self._build_if_active()

    def _side_block(self, block: Block) -> None:
        """
        A valid block stored off the canonical chain (from a peer, a merged
        miner or this node's miner): an uncle candidate (L{SideBlocks}), so
        new work that includes it.
        """
        self._current = None
        self._build_if_active()

    def _transaction_pending(self, transaction: Transaction) -> None:
        """
        A new pending transaction: new work, if configured so.
        """
        self._current = None
        self._build_if_active()

    def _refresh(self) -> None:
        """
        Every L{REFRESH_SECONDS}: new work with a newer timestamp.
        """
        self._current = None
        self._build_if_active()

    def _build_if_active(self) -> None:
        """
        Build new work now if someone mines; otherwise wait until asked.
        """
        if self.running and self.active:
            self._build(trigger=True).addErrback(lambda failure: self.log.failure("building mining work failed", failure))

    # Templates

    def current_template(self) -> Deferred[Template]:
        """
        The newest template on the head, built if there is none yet.

        @return: a Deferred firing with the L{Template}.
        """
        self._last_request = self._clock.seconds()
        current = self._current
        head = self._chain.head.header
        if current is not None and current.block.header.parent_hash == head.hash:
            return succeed(current)
        return self._build()

    def _build(self, trigger: bool = False) -> Deferred[Template]:
        """
        Build a template on the head, one build at a time.

        A caller arriving during a build shares its result, unless a
        trigger (a new head, new transactions, the refresh) came during it:
        that build is stale, so a new one follows it and later callers wait
        for that one.

        @param trigger: the call comes from a trigger, not a miner's request.
        """
        waiter: Deferred[Template] = Deferred()
        if self._building is not None:
            if trigger:
                self._dirty = True
            (self._after if self._dirty else self._building).append(waiter)
            return waiter
        self._building = [waiter]
        self._dirty = False
        head = self._chain.head.header
        candidates = order_candidates(self._pool.pending())
        side = [header for header in self._side_blocks.candidates() if still_useful(header, head.number)]
        timestamp = self._block_clock.next_stamp(head.timestamp)
        built = self._run_in_thread(self._reads.thd_build, head, candidates, timestamp, side)
        built.addCallback(lambda template: template.block).addBoth(self._built)
        return waiter

    def _built(self, result: Any) -> None:
        """
        Keep a new template and hand it to the waiting callers; build again
        if a trigger came during the build.
        """
        waiters, self._building = self._building or [], None
        after, self._after = self._after, []
        if isinstance(result, Block):
            template = Template(result, self._clock.seconds())
            self._keep(template)
            if result.header.parent_hash == self._chain.head.header.hash:
                self._current = template
            outcome: Any = template
        else:
            outcome = result
        for waiter in waiters:
            self._fire(waiter, outcome)
        if (self._dirty or after) and self.running:
            self._dirty = False
            self._build().addBoth(self._fire_all, after)
        else:
            for waiter in after:
                self._fire(waiter, outcome)

    def _fire_all(self, outcome: Any, waiters: list[Deferred[Template]]) -> None:
        """
        Fire every waiter with the outcome of a build; a failure nobody waited for is logged.
        """
        if not waiters and isinstance(outcome, Failure):
            self.log.failure("building mining work failed", outcome)
        for waiter in waiters:
            self._fire(waiter, outcome)

    @staticmethod
    def _fire(waiter: Deferred[Template], outcome: Any) -> None:
        """
        Fire C{waiter} with a template or a failure.
        """
        if isinstance(outcome, Failure):
            waiter.errback(outcome)
        else:
            waiter.callback(outcome)

    def _keep(self, template: Template) -> None:
        """
        Keep a template by its hash, forgetting the oldest past L{KEPT_TEMPLATES}.
        """
        self._templates[template.hash_for_merged_mining] = template
        self._templates.move_to_end(template.hash_for_merged_mining)
        while len(self._templates) > KEPT_TEMPLATES:
            self._templates.popitem(last=False)

    # Handing out work

    async def _merged_mining_work(self) -> MiningWork:
        template = await self.current_template()
        return template.work(self._notify(template))

    def merged_mining_work(self) -> Deferred[MiningWork]:
        """
        The work of C{mnr_getWork}, with its C{notify} flag.
        """
        return Deferred.fromCoroutine(self._merged_mining_work())

    def _notify(self, template: Template) -> bool:
        """
        Whether handing out C{template} is news: the first time, when its
        parent differs from the last notified work's, or its fees exceed the
        last notified fees by more than 10 %.
        """
        if template.handed_out:
            return False
        template.handed_out = True
        header = template.block.header
        news = header.parent_hash != self._notified_parent or header.paid_fees * 10 > self._notified_fees * 11
        if news:
            self._notified_parent = header.parent_hash
            self._notified_fees = header.paid_fees
        return news

    async def _work(self) -> MiningWork:
        template = await self.current_template()
        return template.work(False)

    def work(self) -> Deferred[MiningWork]:
        """
        The current work without touching the C{notify} bookkeeping (C{eth_getWork}).
        """
        return Deferred.fromCoroutine(self._work())

    # Submissions

    def submit_bitcoin_block(self, raw: bytes) -> Deferred[SubmittedBlock]:
        """
        Seal a template with a whole Bitcoin block (C{mnr_submitBitcoinBlock}).

        @return: a Deferred firing with the import outcome, or failing with
            L{WorkSubmissionError}.
        """
        return Deferred.fromCoroutine(self._submit_logged(seal_from_block, (raw,)))

    def submit_transaction_ids(self, header: bytes, coinbase: bytes, ids: Sequence[bytes]) -> Deferred[SubmittedBlock]:
        """
        Seal a template with a header, a coinbase and the block's transaction
        ids in display order (C{mnr_submitBitcoinBlockTransactions}).
        """
        return Deferred.fromCoroutine(self._submit_logged(seal_from_transaction_ids, (header, coinbase, list(ids))))

    def submit_merkle_branch(
        self, header: bytes, coinbase: bytes, hashes: Sequence[bytes], count: int
    ) -> Deferred[SubmittedBlock]:
        """
        Seal a template with a header, a coinbase, the coinbase id and its
        merkle branch in internal order (C{mnr_submitBitcoinBlockPartialMerkle}).
        """
        return Deferred.fromCoroutine(self._submit_logged(seal_from_branch, (header, coinbase, list(hashes), count)))

    async def _submit(self, make_seal: Callable[..., Seal], args: Sequence[Any]) -> SubmittedBlock:
        template, seal = await self._run_in_thread(_thd_seal_submission, make_seal, args, dict(self._templates))
        return await self._import(seal_block(template.block, seal))

    async def _submit_logged(self, make_seal: Callable[..., Seal], args: Sequence[Any]) -> SubmittedBlock:
        try:
            return await self._submit(make_seal, args)
        except WorkSubmissionError as exc:
            self.log.info("mining submission refused: {message} ({detail})", message=str(exc), detail=exc.detail)
            raise

    def submit_template_seal(self, pow_hash: bytes, seal: Seal) -> Deferred[SubmittedBlock]:
        """
        Import the block of a template sealed by the built-in CPU miner.

        @return: a Deferred failing with L{WorkSubmissionError} for an unknown template.
        """
        template = self._templates.get(pow_hash)
        if template is None:
            return fail(
                WorkSubmissionError(f"Cannot publish block, could not find hash 0x{pow_hash.hex()} in the cache")
            )
        return Deferred.fromCoroutine(self._import(seal_block(template.block, seal)))

    async def _submit_work(self, nonce: bytes, pow_hash: bytes) -> bool:
        template = self._templates.get(pow_hash)
        if template is None:
            return False
        seal = template_seal(pow_hash, nonce)
        try:
            # The template's coinbase holds the tag in its first 64 bytes:
            # no mid-state to resume, hashlib does it all.
            check_seal(pow_hash, template.difficulty, seal)
        except InvalidSealError:
            return False
        submitted = await self._import(seal_block(template.block, seal))
        return submitted.result in ACCEPTED

    def submit_work(self, nonce: bytes, pow_hash: bytes) -> Deferred[bool]:
        """
        Seal a template with the canonical one-transaction Bitcoin block and
        an 8-byte nonce (C{eth_submitWork}, C{docs/mining.md}).

        @return: a Deferred firing with C{True} when the block was accepted,
            C{False} for unknown work, too little work or an invalid block.
        """
        return Deferred.fromCoroutine(self._submit_work(nonce, pow_hash))

    async def _import(self, block: Block) -> SubmittedBlock:
        """
        Import a sealed block: the one door every block goes through.
        """
        result, reason = await self._import_block(block)
        header = block.header
        if result is ImportResult.IMPORTED_BEST:
            # The template took the dev chain's time offset, if any.
            self._block_clock.consume()
        if result is ImportResult.IMPORTED_NOT_BEST:
            # The chain told _side_block: an uncle candidate already.
            self.log.info("mined block {number} 0x{hash} is a side block", number=header.number, hash=header.hash.hex())
        elif result is ImportResult.INVALID_BLOCK:
            self.log.warn("mined block {number} refused: {reason}", number=header.number, reason=reason)
        else:
            self.log.info(
                "mined block {number} 0x{hash}: {result}", number=header.number, hash=header.hash.hex(),
                result=result.value,
            )
        return SubmittedBlock(result, Hash32(header.hash), header.number)

    def _import_block(self, block: Block) -> "Deferred[tuple[ImportResult, str | None]]":
        """
        Hand one sealed block to the chain's importer (the one door for
        blocks): its outcome and, for an invalid block, the reason.
        """

        def outcome(outcomes: list[ImportOutcome]) -> tuple[ImportResult, str | None]:
            for entry in outcomes:
                if entry.block_hash == block.hash:
                    return entry.result, entry.reason
            raise WorkSubmissionError(f"the importer reported nothing for block 0x{block.hash.hex()}")

        # The template was built here: its transactions came through this
        # node's pool, impersonated senders' included (a dev chain).
        return self._writer.import_blocks([block], SUBMITTED).addCallback(outcome)

    # Hash rates

    def is_cpu_mining(self) -> bool:
        """
        Whether the built-in CPU miner is searching seals now.
        """
        return bool(self.cpu_mining())

    def submit_hashrate(self, rate: int, client_id: bytes) -> bool:
        """
        Record an external miner's rate (C{eth_submitHashrate}).
        """
        self._rates[bytes(client_id)] = (rate, self._clock.seconds())
        return True

    def hashrate(self) -> int:
        """
        The built-in miner's measured rate plus the external miners' rates
        submitted within the last L{SUBMITTED_RATE_SECONDS}.
        """
        now = self._clock.seconds()
        for client, (_rate, at) in list(self._rates.items()):
            if now - at >= SUBMITTED_RATE_SECONDS:
                del self._rates[client]
        return int(self.local_hashrate()) + sum(rate for rate, _at in self._rates.values())

    def network_hashrate(self) -> Deferred[int]:
        """
        The cumulative difficulty (blocks and their uncles) of the canonical
        blocks of the last hour, per second (C{eth_netHashrate}).
        """
        head = self._chain.head
        since = int(self._clock.seconds()) - HASHRATE_SECONDS
        return self._run_in_thread(self._reads.thd_network_hashrate, head.header, head.total_difficulty, since)


ACCEPTED = frozenset(
    {ImportResult.IMPORTED_BEST, ImportResult.IMPORTED_NOT_BEST, ImportResult.EXIST, ImportResult.FUTURE_BLOCK}
)
"""The outcomes of a submission that C{eth_submitWork} answers C{true} (a
block a second ahead of a slow clock is held until it is due)."""


def random_nonce_start() -> int:
    """
    A random 64-bit starting nonce, so that two nodes mining one template do not repeat each other.
    """
    return int.from_bytes(os.urandom(8), "big")


__all__ = [
    "KEPT_TEMPLATES",
    "REFRESH_SECONDS",
    "SUBMITTED_RATE_SECONDS",
    "Template",
    "WorkService",
    "random_nonce_start",
]
