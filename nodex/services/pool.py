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
from twisted.internet.defer import Deferred, gatherResults, maybeDeferred, succeed
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from nodex.db.kv import KeyValueStore
from nodex.db.schema import METADATA, trie_node_reader
from nodex.interfaces import ChainEvent, IChainService, IMiner, ITransactionPool
from nodex.primitives import UINT64_CEILING, Address, Hash32
from nodex.services.threads import SerialThread
from nodex.services.errors import InvalidTransactionRejectedError, TransactionRejectedError
from nodex.structures.accounts import Account
from nodex.structures.errors import (
    IntrinsicGasTooLowError,
    InvalidSignatureError,
    InvalidTransactionError,
    RLPError,
    WrongChainIdError,
)
from nodex.structures.headers import Header
from nodex.structures.transaction_rules import MAX_INIT_CODE_SIZE, validate_transaction
from nodex.structures.transactions import Transaction, decode_transaction
from nodex.trie import SecureTrie

ACCOUNT_SLOTS = 16
"""Transactions one sender may have in the pool (reference C{transaction.accountSlots})."""

GLOBAL_SLOTS = 4096
"""Transactions the whole pool holds before it evicts."""

PRICE_BUMP_PERCENT = 40
"""How much more a replacement must pay per gas (reference C{transaction.gasPriceBump})."""

MAX_TRANSACTION_SIZE = 128 * 1024
"""The largest raw transaction accepted, in bytes."""

RELAYED_GRACE_SECONDS = 2.0
"""
How long a transaction relayed by a peer waits in an automining node's pool
for the block of the node its sender gave it to (a peer's block arrives
within milliseconds on a dev network) before this node mines it itself.
"""

POOL_KEY_PREFIX = b"pool:"
"""The prefix of the pool's keys in the C{METADATA} column."""

AccountReader = Callable[[bytes, Address], Account | None]
"""Reads an account at a state root: C{(state_root, address) -> Account | None}."""

ThreadRunner = Callable[..., Deferred[Any]]
"""Runs a function with its arguments in a thread: C{deferToThreadPool}-like."""

PoolObserver = Callable[[Transaction], "Deferred[Any] | None"]
"""Called with each transaction that becomes pending; may return a Deferred."""


def store_account_reader(store: KeyValueStore) -> AccountReader:
    """
    An L{AccountReader} over the state tries of a store.
    """
    read_node = trie_node_reader(store)

    def read_account(state_root: bytes, address: Address) -> Account | None:
        raw = SecureTrie(read_node, state_root).get(address)
        return None if raw is None else Account.decode(raw)

    return read_account


def pool_key(tx_hash: bytes) -> bytes:
    """
    The C{METADATA} key under which the pool keeps a transaction.
    """
    return POOL_KEY_PREFIX + tx_hash


def _cost(transaction: Transaction) -> int:
    """
    The most a transaction can take from its sender: gas at the highest price plus value.
    """
    return transaction.gas * transaction.max_fee_per_gas + transaction.value


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
        price_bump_percent: int = PRICE_BUMP_PERCENT,
        store_thread: SerialThread | None = None,
        impersonating: Callable[[bytes], bool] | None = None,
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
        @param impersonating: on a dev chain, tells whether an address is
            impersonated now: a transaction carrying the impersonation
            marker of such a sender is admitted (C{docs/devchain.md});
            L{None} (main, testnet) refuses every marker as the invalid
            signature it is.
        """
        self._chain = chain
        self._store = store
        self._run_in_thread = run_in_thread
        self._read_account = read_account or store_account_reader(store)
        self._account_slots = account_slots
        self._global_slots = global_slots
        self._price_bump = price_bump_percent
        self._senders: dict[Address, _Sender] = {}
        self._by_hash: dict[Hash32, Transaction] = {}
        self._observers: list[PoolObserver] = []
        self._automining: AutoMining | None = None
        self._in_flight: dict[Hash32, Transaction] = {}
        self._persisted: set[Hash32] = set()
        self._store_thread = store_thread
        self._impersonating = impersonating
        self._stopped = False
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
        if self._automining is not None:
            self._automining.stop()
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
        """
        sender = self._senders.get(Address(address))
        if sender is not None and sender.state_nonce is not None:
            return succeed(self._after_in_flight(address, sender.state_nonce + sum(1 for _ in sender.pending_run())))
        root = self._chain.head.header.state_root
        reading = self._run_in_thread(self._read_account, root, Address(address))

        def counted(account: Account | None) -> int:
            nonce = 0 if account is None else account.nonce
            current = self._senders.get(Address(address))
            if current is None:
                return self._after_in_flight(address, nonce)
            if current.state_nonce is None:
                current.state_nonce = nonce
            return self._after_in_flight(address, current.state_nonce + sum(1 for _ in current.pending_run()))

        return reading.addCallback(counted)

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

    def use_automining(self, automining: "AutoMining") -> None:
        """
        Mine in C{auto} mode through C{automining}: it is told first of each
        transaction that becomes pending, like an observer, and a
        transaction sent to an empty pool is admitted and mined in one
        writer job (L{IMiner.mine_alone}).
        """
        self._automining = automining

    # Adding

    def add(self, transaction: Transaction, relayed: bool = False) -> Deferred[Hash32]:
        """
        Validate a signed transaction against the head state and keep it.

        @param relayed: the transaction came from a peer, not from this
            node's clients: in C{auto} mode it asks for no block of its own
            (L{AutoMining.relayed}, C{docs/p2p.md}).
        @return: a Deferred firing with its hash once the observers of the
            transactions it made pending are done, or failing with
            L{TransactionRejectedError}.
        """
        header = self._chain.head.header
        automining = self._automining
        if not relayed and automining is not None and not self._by_hash and automining.idle:
            return self._add_and_mine(automining, transaction, header)
        checking = self._run_in_thread(self._thd_validate, transaction, header)
        return checking.addCallback(self._admit_unless_mined, transaction, relayed, header)

    def _admit_unless_mined(
        self, found: tuple[int, int], transaction: Transaction, relayed: bool, header: Header
    ) -> Deferred[Hash32]:
        """
        Admit a transaction checked against C{header}'s state; if the head
        moved during the check, first make sure no new block holds it (a
        peer's transaction often arrives together with the block that
        mined it, and the state read before that block cannot tell).
        """
        if self._chain.head.header.hash == header.hash:
            return self._admit(found, transaction, relayed)

        def located(location: Any) -> Deferred[Hash32]:
            if location is not None:
                raise TransactionRejectedError("transaction nonce too low")
            return self._admit(found, transaction, relayed)

        return self._chain.get_transaction(transaction.hash).addCallback(located)

    def _add_and_mine(self, automining: "AutoMining", transaction: Transaction, header: Header) -> Deferred[Hash32]:
        """
        The path of a transaction sent to an empty pool in C{auto} mode:
        validated and, if executable, mined in one writer job, without
        entering the pool (its block keeps it).  The sender has nothing
        pooled, so of L{_admit}'s rules only the nonce and funds ones apply;
        a transaction whose nonce is ahead is admitted (queued) as usual.
        """
        found: list[tuple[int, int]] = []

        def check(state: Any) -> bool:
            self._thd_check(transaction, header)
            sender = transaction.sender
            nonce, balance = state.get_nonce(sender), state.get_balance(sender)
            found.append((nonce, balance))
            if transaction.nonce < nonce:
                raise TransactionRejectedError("transaction nonce too low")
            if transaction.nonce >= nonce + self._account_slots:
                raise TransactionRejectedError("transaction nonce too high")
            if _cost(transaction) > balance:
                raise TransactionRejectedError("insufficient funds")
            return transaction.nonce == nonce

        def mined(block: Any) -> Any:
            self._in_flight.pop(transaction.hash, None)
            if isinstance(block, Failure):
                return block
            if block is None:
                return self._admit(found[0], transaction)
            notified = self._notify_observers([transaction])
            if notified.called:
                return transaction.hash
            return notified.addCallback(lambda _: transaction.hash)

        self._in_flight[transaction.hash] = transaction
        return automining.mine_alone(transaction, check).addBoth(mined)

    def _thd_validate(self, transaction: Transaction, header: Header) -> tuple[int, int]:
        """
        The checks that need no pool (L{_thd_check}), then the sender's
        nonce and balance in the head state (in a thread).
        """
        self._thd_check(transaction, header)
        account = self._read_account(header.state_root, transaction.sender)
        return (0, 0) if account is None else (account.nonce, account.balance)

    def _thd_check(self, transaction: Transaction, header: Header) -> None:
        """
        The checks that need neither pool nor state: the transaction's own
        rules (L{InvalidTransactionRejectedError}: it can never be valid)
        and the head's limits (in a thread: they recover the sender).
        """
        size = len(transaction.encode())
        if size > MAX_TRANSACTION_SIZE:
            raise InvalidTransactionRejectedError(
                f"transaction's size is higher than defined maximum: {size} > {MAX_TRANSACTION_SIZE}"
            )
        if transaction.is_create and len(transaction.data) > MAX_INIT_CODE_SIZE:
            raise InvalidTransactionRejectedError("transaction's init code size is invalid")
        if transaction.nonce >= UINT64_CEILING - 1:
            raise InvalidTransactionRejectedError("transaction nonce too high")
        try:
            validate_transaction(transaction, self._chain.chain_id, self._may_impersonate(transaction))
        except WrongChainIdError:
            raise InvalidTransactionRejectedError(f"Invalid chainId: {transaction.chain_id}") from None
        except IntrinsicGasTooLowError:
            raise InvalidTransactionRejectedError("transaction's basic cost is above the gas limit") from None
        except InvalidSignatureError as exc:
            raise InvalidTransactionRejectedError(str(exc)) from None
        except InvalidTransactionError as exc:
            if transaction.gas * transaction.max_fee_per_gas >= 1 << 256:
                raise InvalidTransactionRejectedError("transaction's gas price exceeds cap") from None
            raise InvalidTransactionRejectedError(str(exc)) from None
        if transaction.gas > header.gas_limit:
            raise TransactionRejectedError(
                f"transaction's gas limit of {transaction.gas} exceeds the block's gas limit of {header.gas_limit}"
            )
        if transaction.effective_gas_price < header.minimum_gas_price:
            raise TransactionRejectedError("transaction's gas price lower than block's minimum")

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
        The rules that depend on the pool, then keep the transaction (on the
        reactor thread, so that two arrivals cannot interleave).

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
        nonce = transaction.nonce
        first = sender.first_nonce()
        if nonce < first:
            raise TransactionRejectedError("transaction nonce too low")
        replaced = sender.transactions.get(nonce)
        if replaced is None and len(sender.transactions) >= self._account_slots:
            raise TransactionRejectedError("account exceeds quota")
        if nonce >= first + self._account_slots:
            raise TransactionRejectedError("transaction nonce too high")
        if replaced is not None:
            self._check_bump(replaced, transaction)
        cost = _cost(transaction)
        if cost > balance:
            raise TransactionRejectedError("insufficient funds")
        others = sum(_cost(tx) for n, tx in sender.transactions.items() if n != nonce)
        if others + cost > balance:
            raise TransactionRejectedError("insufficient funds to pay for pending and new transactions")
        removed: list[Transaction] = []
        if replaced is None and len(self._by_hash) >= self._global_slots:
            removed.append(self._evict(transaction))
        if replaced is not None:
            removed.append(replaced)
            del self._by_hash[replaced.hash]
        was_pending = {tx.nonce for tx in sender.pending_run()}
        self._senders[address] = sender
        sender.transactions[nonce] = transaction
        self._by_hash[tx_hash] = transaction
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

    def _check_bump(self, old: Transaction, new: Transaction) -> None:
        """
        Refuse a replacement that does not pay enough more per gas.
        """
        factor = 100 + self._price_bump
        for old_price, new_price in (
            (old.max_fee_per_gas, new.max_fee_per_gas),
            (old.max_priority_fee_per_gas, new.max_priority_fee_per_gas),
        ):
            if new_price * 100 < old_price * factor:
                raise TransactionRejectedError("gas price not enough to bump transaction")

    def _evict(self, incoming: Transaction) -> Transaction:
        """
        Make room for C{incoming} in a full pool: drop the cheapest queued
        transaction, or else the cheapest last pending transaction of another
        sender if C{incoming} pays more.

        @return: the dropped transaction.
        @raise TransactionRejectedError: nothing may be dropped.
        """
        victims = self.queued()
        if not victims:
            victims = [
                run[-1]
                for address, sender in self._senders.items()
                if address != incoming.sender and (run := list(sender.pending_run()))
            ]
            victims = [tx for tx in victims if tx.effective_gas_price < incoming.effective_gas_price]
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
            hears of them as relayed (L{AutoMining.relayed}).
        """
        if self._automining is None:
            return self._notify_observers(transactions)
        first = self._automining.relayed if relayed else self._automining
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
                if isinstance(result, Deferred):
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
        self._by_hash.pop(transaction.hash, None)
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
            self._by_hash.pop(transaction.hash, None)
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
        included: set[Hash32] = set()
        stale_senders: set[Address] = set()
        for block in event.abandoned:
            for transaction in block.transactions:
                stale_senders.add(transaction.sender)
        for address in stale_senders:
            sender = self._senders.get(address)
            if sender is not None:
                sender.state_nonce = None
        advanced: dict[Address, int] = {}
        for block in event.adopted:
            for transaction in block.transactions:
                included.add(transaction.hash)
                address = transaction.sender
                advanced[address] = max(advanced.get(address, 0), transaction.nonce + 1)
        mined = [self._by_hash[tx_hash] for tx_hash in included if tx_hash in self._by_hash]
        for transaction in mined:
            self._forget(transaction)
        self._persist([], mined)
        for address, nonce in advanced.items():
            sender = self._senders.get(address)
            if sender is None or address in stale_senders:
                continue
            if sender.state_nonce is None or sender.state_nonce < nonce:
                sender.state_nonce = nonce
                self._prune(address, sender)
        for block in event.abandoned:
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
        for key, raw in self._store.iterate(METADATA, POOL_KEY_PREFIX):
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


class AutoMining:
    """
    The pool observer of the miner's C{auto} mode: for a transaction that
    becomes pending, mine a block and make the L{TransactionPool.add} that
    accepted it wait for that block.

    Transactions that become pending together (a nonce gap closed) share one
    block: a transaction that was already among the candidates of a block
    being mined waits for that block rather than asking for another.
    """

    def __init__(self, miner: IMiner, pool: ITransactionPool, clock: IReactorTime | None = None) -> None:
        """
        @param miner: mines, when it is in C{auto} mode and mining.
        @param pool: whose pending transactions the miner takes.
        @param clock: times the wait of peers' transactions
            (L{RELAYED_GRACE_SECONDS}); L{None}: they wait for the next
            block whatever its cause.
        """
        self._miner = miner
        self._pool = pool
        self._clock = clock
        self._candidates: set[Hash32] = set()
        self._waiters: list[Deferred[None]] | None = None
        self._relayed: set[Hash32] = set()
        self._relayed_call: IDelayedCall | None = None

    @property
    def _automining(self) -> bool:
        """
        Whether the miner is in C{auto} mode and mining.
        """
        return self._miner.is_mining and self._miner.mode == "auto"

    def relayed(self, transaction: Transaction) -> None:
        """
        A transaction from a peer became pending: no block of its own.  The
        node its sender gave it to mines it, if that node automines, and
        this node imports that block; if it is still pending
        L{RELAYED_GRACE_SECONDS} later (its first node does not mine), this
        node mines it then.  So two automining peers do not both mine every
        transaction (C{docs/p2p.md}, "Automining with peers").
        """
        if not self._automining or self._clock is None:
            return
        self._relayed.add(transaction.hash)
        if self._relayed_call is None:
            self._relayed_call = self._clock.callLater(RELAYED_GRACE_SECONDS, self._mine_relayed)

    def _mine_relayed(self) -> None:
        """
        The grace of peers' transactions is over: mine those still pending.
        """
        self._relayed_call = None
        waiting, self._relayed = self._relayed, set()
        if not self._automining:
            return
        still = [transaction for transaction in self._pool.pending() if transaction.hash in waiting]
        if still:
            TransactionPool.log.info(
                "mining {count} peers' transactions that no block brought within {seconds} s",
                count=len(still), seconds=RELAYED_GRACE_SECONDS,
            )
            self(still[0])

    def stop(self) -> None:
        """
        Forget the peers' transactions waiting for their grace to end (the node stops).
        """
        if self._relayed_call is not None and self._relayed_call.active():
            self._relayed_call.cancel()
        self._relayed_call = None
        self._relayed = set()

    def __call__(self, transaction: Transaction) -> Deferred[None] | None:
        """
        Mine (or join the block being mined) for C{transaction}.

        @return: a Deferred firing once the block is stored, or L{None}
            when the miner is not automining.
        """
        if not self._automining:
            return None
        if self._waiters is None or transaction.hash not in self._candidates:
            self._candidates = {tx.hash for tx in self._pool.pending()}
            self._waiters = waiters = []
            # No empty block: the transactions may have come meanwhile in a
            # block from a peer (a relayed one after its grace, say).
            self._miner.mine(empty=False).addBoth(self._mined, waiters)
            if self._waiters is not waiters:
                # The block was stored at once (a synchronous miner).
                return succeed(None)
        waiter: Deferred[None] = Deferred()
        self._waiters.append(waiter)
        return waiter

    def _mined(self, result: object, waiters: list[Deferred[None]]) -> None:
        """
        Release the transactions that waited for a block (a failed block is
        logged by the pool: the transactions stay pending).
        """
        if self._waiters is waiters:
            self._waiters = None
            self._candidates = set()
        for waiter in waiters:
            waiter.callback(None)
        if isinstance(result, Failure):
            TransactionPool.log.failure("automatic mining failed", result)

    @property
    def idle(self) -> bool:
        """
        Whether the miner automines and no block of this automining is being produced.
        """
        return self._waiters is None and self._automining

    def mine_alone(self, transaction: Transaction, check: Callable[[Any], bool]) -> Deferred[Any]:
        """
        Have the miner admit (C{check}) and mine C{transaction} in one job
        (L{IMiner.mine_alone}).
        """
        return self._miner.mine_alone(transaction, check)


__all__ = [
    "ACCOUNT_SLOTS",
    "AutoMining",
    "GLOBAL_SLOTS",
    "MAX_TRANSACTION_SIZE",
    "POOL_KEY_PREFIX",
    "PRICE_BUMP_PERCENT",
    "RELAYED_GRACE_SECONDS",
    "AccountReader",
    "PoolObserver",
    "TransactionPool",
    "pool_key",
    "store_account_reader",
]
