"""
The transaction pool: signed transactions waiting to be mined.

The pool validates each transaction against the head state (in a thread:
signature recovery and account reads), keeps it per sender and nonce, and
tells its observers when a transaction becomes executable.  A sender's
I{pending} transactions carry consecutive nonces from its state nonce; the
others are I{queued} until the gap closes.  Rejections raise
L{TransactionRejectedError} with the reference node's messages (reference
§5.3), which the RPC edge answers with code -32010.

Every accepted transaction still in the pool once the observers of its
acceptance are done is also written to the store (column C{METADATA}, key
C{pool:} followed by its hash, value its raw bytes) before L{add} answers,
and deleted when it is mined, replaced, evicted or dropped, so that
L{TransactionPool.load} finds the pool again after a restart and
re-validates it against the head.  (In C{auto} mode the observer mines the
transaction first: its block keeps it, and the pool writes nothing.)

All bookkeeping happens on the reactor thread; only the reads of the head
state run in C{run_in_thread}.
"""

import heapq
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from twisted.application.service import Service
from twisted.internet.defer import Deferred, fail, gatherResults, maybeDeferred, succeed
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from nodex.chain.admission import ACCOUNT_SLOTS, PRICE_BUMP_PERCENT, AdmissionRules, check_admission, check_transaction
from nodex.chain.building.making import LoneAdmission
from nodex.db.kv import KeyValueStore
from nodex.db.schema import METADATA, trie_node_reader
from nodex.api.chain import ChainEvent, IChainService, IFollowUps
from nodex.api.mining import IAutoMining
from nodex.api.pool import ITransactionPool
from nodex.primitives import Address, Hash32
from nodex.services.threads import SerialThread
from nodex.api.errors import InvalidTransactionRejectedError, TransactionRejectedError
from nodex.structures.accounts import Account
from nodex.structures.errors import InvalidSignatureError, InvalidTransactionError, RLPError
from nodex.structures.headers import Header
from nodex.structures.transactions import Transaction, decode_transaction
from nodex.trie import SecureTrie
from nodex.trie.nodecache import NodeCache

GLOBAL_SLOTS = 4096
"""Transactions the whole pool holds before it evicts."""

GLOBAL_BYTES = 32 * 1024 * 1024
"""
Bytes of transactions (their encodings) the whole pool holds before it
evicts, beside the slots: 4,096 transactions of 128 KiB would be 512 MiB in
memory and on disk, and the slots alone did not stop them.
"""

FREE_SHARE = 16
"""
Transactions that pay nothing (no fee, no value) from accounts that hold
nothing take at most a sixteenth of the pool's bytes and slots: where the
minimum gas price is 0 they cost their senders nothing, and would otherwise
crowd out the rest.
"""

POOL_KEY_PREFIX = b"pool:"
"""The prefix of the pool's keys in the C{METADATA} column."""

NONCES_KEPT_BLOCKS = 64
"""
Blocks whose senders' nonces the pool keeps for L{TransactionPool.next_nonce}
(by block hash; the oldest is dropped first).
"""

NONCES_PER_BLOCK = 4096
"""The most senders' nonces kept for one block (a block of 30 M gas holds at most 1,428 transfers)."""

AccountReader = Callable[[bytes, Address], Account | None]
"""Reads an account at a state root: C{(state_root, address) -> Account | None}."""

ThreadRunner = Callable[..., Deferred[Any]]
"""Runs a function with its arguments in a thread: C{deferToThreadPool}-like."""

PoolObserver = Callable[[Transaction], "Deferred[Any] | None"]
"""Called with each transaction that becomes pending; may return a Deferred."""


POOL_NODE_CACHE_SIZE = 1024
"""
Decoded state trie nodes the pool's account reader keeps: the trie's upper
levels, which every admission walks (1 + 16 + 256 nodes for the first three
levels of a large state), and the recent senders' paths.
"""


def store_account_reader(store: KeyValueStore, node_cache: NodeCache | None = None) -> AccountReader:
    """
    An L{AccountReader} over the state tries of a store.

    @param node_cache: decoded nodes the reads walk and keep (a
        L{NodeCache} is safe to share between the reader threads); by
        default one of L{POOL_NODE_CACHE_SIZE} nodes of its own.  Each
        admission reads its sender at the head state: without it, every
        read decoded the nodes from the root down again.
    """
    read_node = trie_node_reader(store)
    cache = NodeCache(POOL_NODE_CACHE_SIZE) if node_cache is None else node_cache

    def read_account(state_root: bytes, address: Address) -> Account | None:
        raw = SecureTrie(read_node, state_root, cache).get(address)
        return None if raw is None else Account.decode(raw)

    return read_account


MAX_RECHECKS = 8
"""How many times an admission reads its sender again because the head moved meanwhile."""


def pool_key(tx_hash: bytes) -> bytes:
    """
    The C{METADATA} key under which the pool keeps a transaction.
    """
    return POOL_KEY_PREFIX + tx_hash


@dataclass
class _Sender:
    """
    One sender's transactions.

    @ivar state_nonce: the sender's nonce in the head state, as last known;
        L{None} after a reorganisation until it is read again.
    @ivar transactions: by nonce.
    """

    state_nonce: int | None
    transactions: dict[int, Transaction] = field(default_factory=dict)

    def first_nonce(self) -> int:
        """
        Where this sender's pending run starts.
        """
        if self.state_nonce is not None:
            return self.state_nonce
        return min(self.transactions, default=0)

    def pending_run(self) -> Iterator[Transaction]:
        """
        The consecutive transactions from the state nonce, in nonce order.
        """
        nonce = self.first_nonce()
        transactions = self.transactions
        while nonce in transactions:
            yield transactions[nonce]
            nonce += 1

    def is_pending(self, nonce: int) -> bool:
        """
        Whether the transaction with C{nonce} is in the pending run.
        """
        start = self.first_nonce()
        if nonce < start:
            return False
        return all(n in self.transactions for n in range(start, nonce + 1))


@implementer(ITransactionPool)
class TransactionPool(Service):
    """
    Validated transactions by sender and nonce, kept in memory and in the store.

    As a service it takes back the persisted transactions when it starts
    (L{load}); start it after the chain service, whose threads it may use.
    """

    log = Logger()

    def __init__(
        self,
        chain: IChainService,
        store: KeyValueStore,
        run_in_thread: ThreadRunner,
        *,
        read_account: AccountReader | None = None,
        account_slots: int = ACCOUNT_SLOTS,
        global_slots: int = GLOBAL_SLOTS,
        global_bytes: int = GLOBAL_BYTES,
        price_bump_percent: int = PRICE_BUMP_PERCENT,
        store_thread: SerialThread | None = None,
        impersonating: Callable[[bytes], bool] | None = None,
        follow_ups: IFollowUps | None = None,
    ) -> None:
        """
        @param chain: the chain whose head the transactions are checked against;
            the pool observes it to drop mined transactions and take back
            abandoned ones.
        @param store: where the pool persists its transactions.
        @param run_in_thread: runs the admission checks (signature recovery,
            state reads) off the reactor thread; the node gives it the
            reader pool, so that admission does not wait behind block
            imports on the writer.
        @param store_thread: the thread that writes the pool's changes to
            the store, in order (started and stopped with the service);
            L{None} writes at once on the calling thread (unit tests).
        @param read_account: reads an account at a state root (default: from
            C{store}'s state tries).
        @param global_slots: the most transactions pooled.
        @param global_bytes: the most bytes of transactions pooled (and persisted).
        @param impersonating: on a dev chain, tells whether an address is
            impersonated now: a transaction carrying the impersonation
            marker of such a sender is admitted (C{docs/devchain.md});
            L{None} (main, testnet) refuses every marker as the invalid
            signature it is.
        @param follow_ups: what the RPC edge holds while it answers (the
            chain's): the observers of a transaction mined alone for the
            answer being computed are told after it is sent, after the
            chain's observers of its block (L{_included_alone}).
        """
        self._chain = chain
        self._follow_ups = follow_ups
        self._store = store
        self._run_in_thread = run_in_thread
        self._read_account = read_account or store_account_reader(store)
        self._rules = AdmissionRules(chain.chain_id, account_slots, price_bump_percent)
        self._global_slots = global_slots
        self._global_bytes = global_bytes
        self._bytes = 0
        self._free: dict[Hash32, int] = {}
        self._free_bytes = 0
        self._senders: dict[Address, _Sender] = {}
        self._by_hash: dict[Hash32, Transaction] = {}
        self._observers: list[PoolObserver] = []
        self._automining: IAutoMining | None = None
        self._in_flight: dict[Hash32, Transaction] = {}
        self._persisted: set[Hash32] = set()
        self._store_thread = store_thread
        self._impersonating = impersonating
        self._stopped = False
        self._nonces_at: dict[Hash32, dict[Address, int]] = {}
        chain.add_observer(self._chain_changed)

    def startService(self) -> None:
        """
        Start the store thread; load the transactions persisted by an
        earlier run (in the background).
        """
        if self._store_thread is not None:
            self._store_thread.start()
        super().startService()
        self.load().addCallbacks(
            lambda count: self.log.info(
                "transaction pool: {count} {noun} restored", count=count,
                noun="transaction" if count == 1 else "transactions",
            ),
            lambda failure: self.log.failure("cannot restore the transaction pool", failure),
        )

    def stopService(self) -> None:
        """
        Stop the store thread after the writes queued on it; changes after
        that (a block import finishing while the node stops) stay in memory
        only: the store closes when the node has stopped.
        """
        super().stopService()
        self._stopped = True
        if self._store_thread is not None:
            self._store_thread.stop()

    # Reading

    def __len__(self) -> int:
        """
        How many transactions the pool holds.
        """
        return len(self._by_hash)

    def get(self, tx_hash: bytes) -> Transaction | None:
        """
        A pooled transaction by hash.
        """
        return self._by_hash.get(Hash32(tx_hash))

    def pending(self) -> list[Transaction]:
        """
        The executable transactions, in the order a block template takes
        them: each sender's in nonce order, senders interleaved by price (the
        highest-paying next transaction first; first come first on a tie).
        """
        runs = [list(sender.pending_run()) for sender in self._senders.values()]
        heap = [(-run[0].effective_gas_price, order, 0) for order, run in enumerate(runs) if run]
        heapq.heapify(heap)
        ordered = []
        while heap:
            _, order, position = heapq.heappop(heap)
            run = runs[order]
            ordered.append(run[position])
            position += 1
            if position < len(run):
                heapq.heappush(heap, (-run[position].effective_gas_price, order, position))
        return ordered

    def queued(self) -> list[Transaction]:
        """
        The transactions waiting for a nonce gap to close, by sender then nonce.
        """
        queued = []
        for sender in self._senders.values():
            run = {tx.nonce for tx in sender.pending_run()}
            queued.extend(tx for nonce, tx in sorted(sender.transactions.items()) if nonce not in run)
        return queued

    def is_pending(self, tx_hash: bytes) -> bool:
        """
        Whether a pooled transaction is executable now.
        """
        transaction = self._by_hash.get(Hash32(tx_hash))
        if transaction is None:
            return False
        return self._senders[transaction.sender].is_pending(transaction.nonce)

    def next_nonce(self, address: bytes) -> Deferred[int]:
        """
        The nonce a new transaction of C{address} should carry: its state
        nonce plus its pending transactions.

        A sender the pool does not follow (an automined transaction is
        never pooled) has its nonce at the head taken from what the pool
        learnt of the head's block (L{_remember_nonces}): the nonce after
        the sender's last transaction in the blocks the head was adopted
        with, or one read at that block before.  Otherwise its account is
        read at the head on this thread: one trie path, a few nodes (tens
        of microseconds), where the crossing to a reader thread and back
        cost more than the read (light work, as DESIGN §4 allows on the
        reactor thread; docs/chain-service.md).
        """
        address = Address(address)
        sender = self._senders.get(address)
        if sender is not None and sender.state_nonce is not None:
            return succeed(self._after_in_flight(address, sender.state_nonce + sum(1 for _ in sender.pending_run())))
        head = self._chain.head.header
        known = self._nonces_at.get(head.hash)
        nonce = None if known is None else known.get(address)
        if nonce is not None:
            return succeed(self._counted(address, nonce))
        reading = maybeDeferred(self._read_account, head.state_root, address)

        def counted(account: Account | None) -> int:
            nonce = 0 if account is None else account.nonce
            self._remember_nonces(head.hash, {address: nonce})
            return self._counted(address, nonce)

        return reading.addCallback(counted)

    def _counted(self, address: Address, nonce: int) -> int:
        """
        The next nonce of C{address}, whose nonce at the head is C{nonce}.
        """
        current = self._senders.get(address)
        if current is None:
            return self._after_in_flight(address, nonce)
        if current.state_nonce is None:
            current.state_nonce = nonce
        return self._after_in_flight(address, current.state_nonce + sum(1 for _ in current.pending_run()))

    def _remember_nonces(self, block_hash: Hash32, nonces: dict[Address, int]) -> None:
        """
        Keep senders' nonces in the state of block C{block_hash}: a block's
        hash commits to its state, so they stay right whatever the chain
        does later (a rewind to the block, a reorganisation back to it).
        At most L{NONCES_PER_BLOCK} senders a block, for the last
        L{NONCES_KEPT_BLOCKS} blocks.
        """
        kept = self._nonces_at.get(block_hash)
        if kept is None:
            if len(self._nonces_at) >= NONCES_KEPT_BLOCKS:
                del self._nonces_at[next(iter(self._nonces_at))]
            kept = self._nonces_at[block_hash] = {}
        for address, nonce in nonces.items():
            if len(kept) >= NONCES_PER_BLOCK:
                break
            kept[address] = nonce

    def _after_in_flight(self, address: bytes, nonce: int) -> int:
        """
        C{nonce}, or past the transactions of C{address} being admitted and
        mined in one job (L{_add_and_mine}), which are in no list yet.
        """
        for transaction in self._in_flight.values():
            if transaction.sender == address and transaction.nonce >= nonce:
                nonce = transaction.nonce + 1
        return nonce

    # Observers

    def add_observer(self, observer: PoolObserver) -> None:
        """
        Call C{observer} with each transaction that becomes pending.  If it
        returns a Deferred, the L{add} that made the transaction pending fires
        only after it (the miner's C{auto} mode mines before the RPC answer).
        """
        self._observers.append(observer)

    def watch_for_miner(self, automining: IAutoMining) -> None:
        """
        Let an automining miner watch the pool (it registers itself: the
        pool knows nothing of miners).  It is told first of each transaction
        that becomes pending, before the observers, and may ask for the
        block the L{add} then waits for; and a transaction from this node's
        clients that arrives while the pool holds nothing is first offered
        to it alone (L{IAutoMining.include_alone}): admitted and mined in
        one writer job, it never enters the pool.
        """
        self._automining = automining

    # Adding

    def add(self, transaction: Transaction, relayed: bool = False) -> Deferred[Hash32]:
        """
        Validate a signed transaction against the head state and keep it.

        @param relayed: the transaction came from a peer, not from this
            node's clients: it is never mined alone, and an automining
            miner hears of it as relayed (C{docs/p2p.md}).
        @return: a Deferred firing with its hash once the observers of the
            transactions it made pending are done, or failing with
            L{TransactionRejectedError}.
        """
        header = self._chain.head.header
        automining = self._automining
        if not relayed and automining is not None and not self._by_hash:
            try:
                admission = LoneAdmission(self._rules, self._may_impersonate(transaction))
            except InvalidSignatureError as exc:
                return fail(InvalidTransactionRejectedError(str(exc)))
            offered = automining.include_alone(transaction, admission)
            if offered is not None:
                return self._included_alone(offered, transaction)
        checking = self._run_in_thread(self._thd_validate, transaction, header)
        checking.addCallback(self._admit_unless_mined, transaction, relayed, header)
        return checking.addErrback(self._refused_when_stopped)

    def _refused_when_stopped(self, failure: Failure) -> Failure:
        """
        A check that failed after the pool stopped: a refusal of the moment
        (L{TransactionRejectedError}), whatever broke.  A check still on a
        thread when the node stops finds the store closed under it; its
        caller (a peer's relay, a client's request, a rewound block's
        transactions) is told the pool is gone, as for any refusal, instead
        of an error that nobody expects while stopping.
        """
        if self._stopped and not failure.check(TransactionRejectedError):
            return Failure(TransactionRejectedError("the transaction pool has stopped"))
        return failure

    def _admit_unless_mined(
        self, found: tuple[int, int], transaction: Transaction, relayed: bool, header: Header, rechecks: int = 0
    ) -> Deferred[Hash32]:
        """
        Admit a transaction checked against C{header}'s state; if the head
        moved during the check, read its sender's nonce and balance again
        at the new head first (a peer's transaction often arrives together
        with the block that mined it, and the state read before that block
        cannot tell; a sender's nonce read before it is stale, and the
        transaction would be queued behind a nonce already used while the
        chain event that could promote it has passed).  At most
        L{MAX_RECHECKS} reads: under a stream of blocks (a sync) the last
        one is used.
        """
        head = self._chain.head.header
        if head.hash == header.hash or rechecks >= MAX_RECHECKS:
            return self._admit(found, transaction, relayed)
        reading = self._run_in_thread(self._thd_nonce_and_balance, head.state_root, transaction.sender)
        return reading.addCallback(self._admit_unless_mined, transaction, relayed, head, rechecks + 1)

    def _thd_nonce_and_balance(self, state_root: bytes, address: Address) -> tuple[int, int]:
        """
        An account's nonce and balance at C{state_root} (in a thread).
        """
        account = self._read_account(state_root, address)
        return (0, 0) if account is None else (account.nonce, account.balance)

    def _included_alone(self, offered: "Deferred[tuple[int, int] | None]", transaction: Transaction) -> Deferred[Hash32]:
        """
        Follow a transaction the miner took to mine alone: once its block
        is stored, tell the observers of it as pending (its block holds
        it: the pool keeps nothing); if it was not executable yet (its nonce
        is ahead), admit it with the account the miner read.

        The observers are told after the answer is sent when the RPC edge
        holds one (L{IFollowUps}), after the chain's observers of the block,
        which were put off too: the pool's observers return nothing to wait
        for (only the automining's transaction_pending does, and it is not
        told of a transaction mined alone).
        """

        def done(result: "tuple[int, int] | None | Failure") -> Any:
            self._in_flight.pop(transaction.hash, None)
            if isinstance(result, Failure):
                return result
            if result is not None:
                return self._admit(result, transaction)
            follow_ups = self._follow_ups
            if follow_ups is not None and follow_ups.holding:
                follow_ups.later(self._notify_observers, [transaction])
                return transaction.hash
            notified = self._notify_observers([transaction])
            if notified.called:
                return transaction.hash
            return notified.addCallback(lambda _: transaction.hash)

        if offered.called and offered.result is None and self._follow_ups is not None and self._follow_ups.holding:
            # Mined at once while an answer is computed (an automined send
            # on an idle writer): done() without a run of the Deferred's
            # callback loop (~5 thousand instructions); nothing could read
            # _in_flight between its entry and its removal.  (Deferred.result
            # is Twisted's attribute, read and never written; it holds a
            # fired Deferred's result, None only for a block stored.)
            return succeed(done(None))
        self._in_flight[transaction.hash] = transaction
        return offered.addBoth(done)

    def _thd_validate(self, transaction: Transaction, header: Header) -> tuple[int, int]:
        """
        The admission rules that need no pool and no state
        (L{check_transaction}), then the sender's nonce and balance in the
        head state (in a thread).
        """
        check_transaction(
            transaction, self._rules, header.gas_limit, header.minimum_gas_price, self._may_impersonate(transaction)
        )
        return self._thd_nonce_and_balance(header.state_root, transaction.sender)

    def _may_impersonate(self, transaction: Transaction) -> bool:
        """
        Whether C{transaction} carries the impersonation marker of a sender
        impersonated now on this dev chain.

        @raise InvalidSignatureError: the marker comes with a recovery id
            other than 0.
        """
        if not transaction.impersonated or self._impersonating is None:
            return False
        return self._impersonating(transaction.sender)

    def _admit(self, found: tuple[int, int], transaction: Transaction, relayed: bool = False) -> Deferred[Hash32]:
        """
        The rules that depend on the pool (L{check_admission}), then keep
        the transaction (on the reactor thread, so that two arrivals cannot
        interleave).

        @param relayed: the transaction came from a peer (see L{add}).
        """
        tx_hash = transaction.hash
        if tx_hash in self._by_hash:
            where = "pending" if self.is_pending(tx_hash) else "queued"
            raise TransactionRejectedError(f"{where} transaction with same hash already exists")
        address = transaction.sender
        state_nonce, balance = found
        sender = self._senders.get(address)
        if sender is None:
            sender = _Sender(state_nonce)
        elif sender.state_nonce is None or sender.state_nonce < state_nonce:
            sender.state_nonce = state_nonce
            self._prune(address, sender)
        replaced = check_admission(transaction, sender.first_nonce(), balance, sender.transactions, self._rules)
        free = balance == 0 and transaction.value == 0 and transaction.gas * transaction.max_fee_per_gas == 0
        removed = self._make_room(transaction, replaced, free)
        if replaced is not None:
            removed.append(replaced)
            self._untrack(replaced)
        nonce = transaction.nonce
        was_pending = {tx.nonce for tx in sender.pending_run()}
        self._senders[address] = sender
        sender.transactions[nonce] = transaction
        self._track(transaction, free)
        self._persist([], removed)
        promoted = [tx for tx in sender.pending_run() if tx.nonce not in was_pending or tx is transaction]
        return self._notify(promoted, relayed).addCallback(self._keep, transaction)

    def _keep(self, _: object, transaction: Transaction) -> Hash32 | Deferred[Hash32]:
        """
        Persist an accepted transaction once its observers are done, unless
        they have already mined it (C{auto} mode: the block holds it then,
        and writing it only to delete it would be wasted).

        @return: its hash, the answer of L{add}, once it is written.
        """
        if self._by_hash.get(transaction.hash) is transaction:
            return self._persist([transaction], []).addCallback(lambda _: transaction.hash)
        return transaction.hash

    # Slots and bytes

    def _track(self, transaction: Transaction, free: bool = False) -> None:
        """
        Count a transaction that enters the pool.
        """
        self._by_hash[transaction.hash] = transaction
        size = len(transaction.encode())
        self._bytes += size
        if free:
            self._free[transaction.hash] = size
            self._free_bytes += size

    def _untrack(self, transaction: Transaction) -> None:
        """
        Stop counting a transaction that leaves the pool.
        """
        if self._by_hash.pop(transaction.hash, None) is None:
            return
        self._bytes -= len(transaction.encode())
        size = self._free.pop(transaction.hash, None)
        if size is not None:
            self._free_bytes -= size

    def _make_room(self, incoming: Transaction, replaced: Transaction | None, free: bool) -> list[Transaction]:
        """
        Make room for C{incoming} (replacing C{replaced}, if any) within the
        slots and the bytes: drop the cheapest transactions (L{_evict}) until
        it fits.  A transaction that pays nothing from an account that holds
        nothing takes at most a L{FREE_SHARE}th of them.

        @return: the dropped transactions (the caller deletes them from the store).
        @raise TransactionRejectedError: it does not fit (what was dropped
            meanwhile is deleted from the store).
        """
        size = len(incoming.encode())
        freed = 0 if replaced is None else len(replaced.encode())
        if free and replaced is None and (
            self._free_bytes + size > self._global_bytes // FREE_SHARE
            or len(self._free) >= self._global_slots // FREE_SHARE
        ):
            raise TransactionRejectedError(
                "transaction pool is full of transactions that pay nothing from accounts that hold nothing"
            )
        removed: list[Transaction] = []
        try:
            if replaced is None and len(self._by_hash) >= self._global_slots:
                removed.append(self._evict(incoming))
            while self._bytes - freed + size > self._global_bytes:
                removed.append(self._evict(incoming, keep=replaced))
        except TransactionRejectedError:
            self._persist([], removed)
            raise
        return removed

    def _evict(self, incoming: Transaction, keep: Transaction | None = None) -> Transaction:
        """
        Make room for C{incoming} in a full pool: drop the cheapest queued
        transaction, or else the cheapest last pending transaction of another
        sender if C{incoming} pays more.

        @param keep: a transaction not to drop (the one C{incoming} replaces).
        @return: the dropped transaction.
        @raise TransactionRejectedError: nothing may be dropped.
        """
        victims = [tx for tx in self.queued() if tx is not keep]
        if not victims:
            victims = [
                run[-1]
                for address, sender in self._senders.items()
                if address != incoming.sender and (run := list(sender.pending_run()))
            ]
            victims = [
                tx for tx in victims if tx.effective_gas_price < incoming.effective_gas_price and tx is not keep
            ]
        if not victims:
            raise TransactionRejectedError("transaction pool is full")
        victim = min(victims, key=lambda tx: (tx.effective_gas_price, -tx.nonce))
        self._forget(victim)
        return victim

    def _notify(self, transactions: list[Transaction], relayed: bool = False) -> Deferred[Any]:
        """
        Tell automining and the observers about newly pending transactions;
        fire when every Deferred they returned has fired (failures are logged).

        @param relayed: a peer's transaction made them pending: automining
            hears of them as relayed.
        """
        automining = self._automining
        if automining is None:
            return self._notify_observers(transactions)

        def first(transaction: Transaction) -> "Deferred[Any] | None":
            return automining.transaction_pending(transaction, relayed)

        return self._notify_observers(transactions, [first, *self._observers])

    def _notify_observers(
        self, transactions: list[Transaction], observers: list[PoolObserver] | None = None
    ) -> Deferred[Any]:
        """
        Tell C{observers} (default: the observers) about newly pending
        transactions; fire when every Deferred they returned has fired.
        """
        waits = []
        for transaction in transactions:
            for observer in self._observers if observers is None else observers:
                # Most observers answer at once: only their Deferreds are waited for.
                try:
                    result = observer(transaction)
                except Exception:
                    self._observer_failed(Failure())
                    continue
                # Most return None: no isinstance of an abstract Awaitable (~0.7 us) then.
                if result is not None and isinstance(result, Deferred):
                    waits.append(result.addErrback(self._observer_failed))
        if not waits:
            return succeed(None)
        if len(waits) == 1:
            return waits[0]
        return gatherResults(waits)

    def _observer_failed(self, failure: Failure) -> None:
        """
        An observer failed: log it; the transaction stays accepted.
        """
        self.log.failure("a transaction-pool observer failed", failure)

    # Removing

    def _forget(self, transaction: Transaction) -> None:
        """
        Drop one transaction from memory (the caller deletes it from the store).
        """
        self._untrack(transaction)
        sender = self._senders.get(transaction.sender)
        if sender is None:
            return
        if sender.transactions.get(transaction.nonce) is transaction:
            del sender.transactions[transaction.nonce]
        if not sender.transactions:
            del self._senders[transaction.sender]

    def _prune(self, address: Address, sender: _Sender) -> list[Transaction]:
        """
        Drop a sender's transactions whose nonce its state has passed.
        """
        assert sender.state_nonce is not None
        stale = [tx for nonce, tx in sender.transactions.items() if nonce < sender.state_nonce]
        for transaction in stale:
            del sender.transactions[transaction.nonce]
            self._untrack(transaction)
        self._persist([], stale)
        if not sender.transactions and self._senders.get(address) is sender:
            del self._senders[address]
        return stale

    def clear(self) -> None:
        """
        Drop every pooled transaction (C{evm_revert}, C{evm_reset}).
        """
        dropped = list(self._by_hash.values())
        self._senders.clear()
        self._by_hash.clear()
        self._bytes = self._free_bytes = 0
        self._free.clear()
        self._persist([], dropped)

    def remove(self, tx_hashes: Iterable[bytes]) -> None:
        """
        Drop the transactions the miner found invalid on the head state;
        unknown hashes are ignored.
        """
        dropped = [self._by_hash[Hash32(h)] for h in tx_hashes if Hash32(h) in self._by_hash]
        for transaction in dropped:
            self._forget(transaction)
        self._persist([], dropped)

    def _chain_changed(self, event: ChainEvent) -> None:
        """
        Follow the canonical chain: mined transactions leave the pool, the
        nonces of their senders move on, and the transactions of abandoned
        blocks come back (re-validated against the new head).
        """
        if event.rewound:
            for sender in self._senders.values():
                sender.state_nonce = None
            return
        # Only what can change something is done: an automined transaction's
        # block abandons nothing and finds nothing pooled (it was never
        # pooled), so its event only remembers its sender's nonce.
        abandoned = event.abandoned
        stale_senders: set[Address] = set()
        if abandoned:
            for block in abandoned:
                for transaction in block.transactions:
                    stale_senders.add(transaction.sender)
            for address in stale_senders:
                sender = self._senders.get(address)
                if sender is not None:
                    sender.state_nonce = None
        advanced: dict[Address, int] = {}
        impersonated: set[Address] = set()
        for block in event.adopted:
            for transaction in block.transactions:
                address = transaction.sender
                advanced[address] = max(advanced.get(address, 0), transaction.nonce + 1)
                # (Only a marker has an s of 0: the property is read for those only.)
                if transaction.s == 0 and transaction.impersonated:
                    impersonated.add(address)
        if event.adopted:
            # A signed transaction's sender has no code (EIP-3607), so
            # nothing but its own transactions moves its nonce: after the
            # head, it is the one after its last.  An impersonated sender
            # may be a contract, whose CREATEs move it too: read it.  (This
            # holds for the forks nodex runs, up to Cancun: EIP-7702's
            # delegated accounts, whose code may CREATE, and its
            # authorizations, which move the signer's nonce in another
            # sender's transaction, would break it.)
            self._remember_nonces(
                event.adopted[-1].hash,
                {address: nonce for address, nonce in advanced.items() if address not in impersonated}
                if impersonated
                else advanced,
            )
        included: set[Hash32] = set()
        if self._by_hash or abandoned:
            included = {transaction.hash for block in event.adopted for transaction in block.transactions}
        if self._by_hash:
            mined = [self._by_hash[tx_hash] for tx_hash in included if tx_hash in self._by_hash]
            for transaction in mined:
                self._forget(transaction)
            if mined:
                # (An automined transaction that took the one-job path was
                # never pooled: nothing to forget, nor to write.)
                self._persist([], mined)
        promoted: list[Transaction] = []
        if self._senders:
            for address, nonce in advanced.items():
                sender = self._senders.get(address)
                if sender is None or address in stale_senders:
                    continue
                if sender.state_nonce is None or sender.state_nonce < nonce:
                    was_pending = {tx.hash for tx in sender.pending_run()}
                    sender.state_nonce = nonce
                    self._prune(address, sender)
                    promoted.extend(tx for tx in sender.pending_run() if tx.hash not in was_pending)
        if promoted:
            # Queued transactions whose gap the block closed (their sender's
            # earlier transaction was mined): automining and the observers
            # hear of them now, or they would wait for the next transaction.
            self._notify(promoted)
        for block in abandoned:
            for transaction in block.transactions:
                if transaction.hash not in included and transaction.hash not in self._by_hash:
                    self.add(transaction).addErrback(self._dropped, transaction)

    def _dropped(self, failure: Failure, transaction: Transaction) -> None:
        """
        A transaction could not come back into the pool: say why in the log.
        """
        failure.trap(TransactionRejectedError)
        self.log.info(
            "transaction {hash} left the pool: {reason}",
            hash="0x" + transaction.hash.hex(),
            reason=failure.getErrorMessage(),
        )

    # Persistence

    def _persist(self, added: Iterable[Transaction], removed: Iterable[Transaction]) -> Deferred[None]:
        """
        Write the pool's changes to the store in one batch, on the store
        thread (in the order of the calls); a failed write is logged.

        @return: a Deferred firing once the batch is written.
        """
        batch = self._store.batch()
        persisted = self._persisted
        for transaction in removed:
            if transaction.hash in persisted:
                persisted.discard(transaction.hash)
                batch.delete(METADATA, pool_key(transaction.hash))
        for transaction in added:
            persisted.add(transaction.hash)
            batch.put(METADATA, pool_key(transaction.hash), transaction.encode())
        if not len(batch) or self._stopped:
            return succeed(None)
        if self._store_thread is None:
            writing = maybeDeferred(self._store.write, batch)
        else:
            writing = self._store_thread.run(self._store.write, batch)
        return writing.addErrback(lambda failure: self.log.failure("cannot write the pool's changes", failure))

    def load(self) -> Deferred[int]:
        """
        Take back the transactions persisted by an earlier run, re-validating
        each against the head; those that fail are deleted.

        @return: a Deferred firing with how many came back.
        """
        reading = self._run_in_thread(self._thd_read_persisted)
        return reading.addCallback(self._readmit)

    def _thd_read_persisted(self) -> list[Transaction]:
        """
        Decode the persisted transactions, deleting what does not decode, in
        nonce order (in a thread).
        """
        transactions = []
        broken = self._store.batch()
        read = 0
        for key, raw in self._store.iterate(METADATA, POOL_KEY_PREFIX):
            read += len(raw)
            if read > self._global_bytes:
                # More than the pool holds (an earlier version counted no
                # bytes): what is beyond is not read into memory.
                broken.delete(METADATA, key)
                continue
            try:
                transaction = decode_transaction(raw)
                transaction.sender
            except (RLPError, InvalidTransactionError):
                broken.delete(METADATA, key)
                continue
            transactions.append(transaction)
        if len(broken):
            self._store.write(broken)
        transactions.sort(key=lambda tx: tx.nonce)
        return transactions

    async def _readmit_all(self, transactions: list[Transaction]) -> int:
        """
        Add the persisted transactions one after another.
        """
        kept = 0
        for transaction in transactions:
            try:
                await self.add(transaction)
            except TransactionRejectedError as exc:
                self._persist([], [transaction])
                self.log.info(
                    "persisted transaction {hash} dropped: {reason}", hash="0x" + transaction.hash.hex(), reason=exc
                )
            else:
                kept += 1
        return kept

    def _readmit(self, transactions: list[Transaction]) -> Deferred[int]:
        """
        Start L{_readmit_all} as a Deferred.
        """
        self._persisted.update(transaction.hash for transaction in transactions)
        return Deferred.fromCoroutine(self._readmit_all(transactions))


__all__ = [
    "FREE_SHARE",
    "GLOBAL_BYTES",
    "MAX_RECHECKS",
    "GLOBAL_SLOTS",
    "POOL_KEY_PREFIX",
    "POOL_NODE_CACHE_SIZE",
    "AccountReader",
    "PoolObserver",
    "TransactionPool",
    "pool_key",
    "store_account_reader",
]
