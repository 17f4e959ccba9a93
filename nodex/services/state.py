"""
The state service (L5): reads of the world state at any stored block, and
calls against it that commit nothing (C{eth_call}, C{eth_estimateGas}).

Every read opens a fresh L{State} at the block's state root (the node is an
archive and the trie nodes of a written block never change), so reads run
in the reader pool beside block imports.  Calls are bounded twice: by the gas
cap of the network, which bounds the work, and by the per-request time
limit, after which the answer is L{CallTimeoutError} and the EVM in the
thread stops at its next look at its cancellation (within about 100,000
gas, L{nodex.evm.cancellation}), so that a long call neither holds up
other answers nor keeps a reader thread busy for nothing.
"""

import time
from collections import OrderedDict
from threading import Lock
from collections.abc import Callable
from typing import Any, TypeVar

from twisted.application.service import Service
from twisted.internet.defer import Deferred, fail, succeed
from twisted.internet.interfaces import IReactorTime
from twisted.python.failure import Failure
from zope.interface import implementer

from nodex.chain.calls import (
    CallRequest,
    CallTimeoutError,
    call_environment,
    call_within,
    estimate_gas,
    execute_call,
)
from nodex.chain.rules import DEFAULT_FORK_SCHEDULE, ForkSchedule
from nodex.chain.tracing.accesslist import AccessListResult, create_access_list
from nodex.db.kv import KeyValueStore
from nodex.evm.cancellation import Cancellation, ExecutionCancelledError, cancellable
from nodex.db.schema import CODE, TRIE_NODES, read_canonical_hash, read_header_rlp, trie_node_reader
from nodex.api.errors import BlockNotFoundError
from nodex.api.state import AccountProof, IStateService, StorageProof
from nodex.primitives import Address, Hash32
from nodex.services.readerpool import ReaderPool
from nodex.services.threads import RunInThread
from nodex.state.errors import StateError
from nodex.state.overrides import StateOverrideError, StateOverrides
from nodex.state.state import State, decode_storage_value
from nodex.structures.accounts import Account
from nodex.structures.errors import RLPError
from nodex.structures.headers import Header
from nodex.trie import SecureTrie, TrieError, make_proof
from nodex.trie.nodecache import NodeCache

T = TypeVar("T")

DEFAULT_CALL_GAS_CAP = 50_000_000
"""The regtest gas cap of a call (DESIGN §2); main and testnet use the reference's 10,000,000."""

DEFAULT_READERS = 4
"""Threads of the service's own reader pool."""

ACCOUNT_CACHE_SIZE = 4096
"""Accounts kept by (state root, address) for reads on the reactor thread."""

SHARED_ACCOUNTS_SIZE = 8192
"""Accounts kept by (state root, address) for the states of calls and
estimates, on any thread (L{ReaderState})."""

CALL_CACHE_SIZE = 1024
"""Answers of calls kept by (block hash, call), for dapps that poll the same views."""

CALL_CACHE_MAX_OUTPUT = 4096
"""Only answers up to this many bytes are kept."""

CODE_CACHE_BYTES = 16 * 1024 * 1024
"""The most bytes of code the readers keep by code hash."""

INLINE_CALL_GAS = 100_000
"""
The gas of a call's first run on the reactor thread (L{StateService.call}):
a view of a few thousand gas is answered without crossing to a reader
thread; a call that turns out to need more, or to look at its gas, runs
again in the pool.  100,000 gas take about 5 ms at the EVM's usual rate.
"""

INLINE_WINDOW = 0.05
INLINE_WINDOW_BUDGET = 0.01
"""
The total of the inline trials: within any L{INLINE_WINDOW} seconds, the
trials run on the reactor thread while they have taken less than
L{INLINE_WINDOW_BUDGET} seconds in all; beyond it every call goes to the
reader pool until the window ends.  One trial is bounded by its gas, this
bounds their sum: a batch of a hundred 100,000-gas views, or many clients
at once, no longer hold the reactor for the sum of their trials (at most
about a fifth of its time goes to trials, plus one trial's overrun).
"""

INLINE_ESTIMATE_TIME = 0.01
"""
Seconds of CPU an estimate may take on the reactor thread (L{StateService.estimate_gas})
before it is given up there and made in the reader pool instead: its
runs are not bounded by gas (the search's first run has all the gas), so
its deadline stops them (at a frame's start, or at a jump after each
L{nodex.evm.cancellation.CHECK_GAS} gas).
"""

DEFAULT_TIME_LIMIT = 5.0
"""Seconds a call or an estimate may take (the reference's C{rpc.timeout})."""


@implementer(IStateService)
class StateService(Service):
    """
    State reads and calls over one store.

    @ivar call_gas_cap: the most gas a call may use.
    @ivar estimate_gas_cap: the most gas an estimate searches up to.
    """

    def __init__(
        self,
        store: KeyValueStore,
        chain_id: int,
        run_in_thread: RunInThread | None,
        clock: IReactorTime,
        call_gas_cap: int = DEFAULT_CALL_GAS_CAP,
        time_limit: float = DEFAULT_TIME_LIMIT,
        estimate_gas_cap: int | None = None,
        readers: int = DEFAULT_READERS,
        inline_call_gas: int = INLINE_CALL_GAS,
        forks: ForkSchedule = DEFAULT_FORK_SCHEDULE,
        call_failures_are_errors: bool = False,
    ) -> None:
        """
        @param store: the chain's store.
        @param chain_id: the EIP-155 chain id (CHAINID in calls).
        @param run_in_thread: runs a function in a reader thread (tests pass
            C{maybeDeferred}); L{None} for the service's own pool of
            C{readers} threads, started and stopped with the service.
        @param clock: measures the time limit; with the own pool, also the
            reactor that delivers the results.
        @param call_gas_cap: the network's gas cap for calls.
        @param time_limit: seconds a call or an estimate may take.
        @param estimate_gas_cap: the network's cap for estimates (the call
            cap when L{None}).
        @param inline_call_gas: the gas of a call's first run on the calling
            (reactor) thread, before the reader pool (see L{call}); 0 sends
            every call to the pool.
        @param forks: the network's schedule of EVM rule sets.
        @param call_failures_are_errors: whether a call that fails without
            reverting (out of gas, an invalid instruction) is an error, as
            geth answers (the Ethereum conventions), rather than its return
            data, as the reference answers.
        """
        self._store = store
        self._call_failures_are_errors = call_failures_are_errors
        self._chain_id = chain_id
        self._forks = forks
        self._clock = clock
        self._pool: ReaderPool | None = None
        if run_in_thread is None:
            self._pool = ReaderPool(clock, readers, name="state-reader")
            run_in_thread = self._pool.run
        self._run_in_thread = run_in_thread
        self.call_gas_cap = call_gas_cap
        self.estimate_gas_cap = call_gas_cap if estimate_gas_cap is None else estimate_gas_cap
        self._time_limit = time_limit
        self.inline_call_gas = inline_call_gas
        self.inline_estimate_time = INLINE_ESTIMATE_TIME
        self._thread_time = time.thread_time
        self._wall_time = time.perf_counter
        self._window_start = float("-inf")
        self._window_spent = 0.0
        self._accounts: OrderedDict[tuple[bytes, bytes], Account | None] = OrderedDict()
        self._calls: OrderedDict[tuple[bytes, CallRequest], bytes] = OrderedDict()
        self._shared_accounts: dict[tuple[bytes, Address], Account | None] = {}
        # Shared by the reader threads: nodes are named by their hash, so
        # what is kept stays right whatever the chain does.
        self._node_cache = NodeCache()
        self._codes: dict[bytes, bytes] = {}
        self._code_bytes = 0
        self._codes_lock = Lock()
        # The trie nodes and code of the pending block's state, which the
        # store does not hold (L{hold_state}): read by the reader threads,
        # replaced whole on the reactor thread.
        self._held: tuple[dict[bytes, bytes], dict[bytes, bytes]] = ({}, {})
        self._last_held: tuple[dict[bytes, bytes], dict[bytes, bytes]] = ({}, {})
        store = self._store

        def read_node(node_hash: bytes) -> bytes | None:
            found = store.get(TRIE_NODES, node_hash)
            return self._held[0].get(node_hash) if found is None else found

        self._read_node: Callable[[bytes], bytes | None] = read_node

    def hold_state(self, nodes: dict[bytes, bytes], codes: dict[bytes, bytes]) -> None:
        """
        Make the trie nodes and code of a state the store does not hold
        readable (the pending block's, L{nodex.services.pending}): the last
        two states held stay readable, so that a call still running on the
        previous pending block finds its nodes.
        """
        previous_nodes, previous_codes = self._last_held
        self._last_held = (nodes, codes)
        self._held = ({**previous_nodes, **nodes}, {**previous_codes, **codes})

    def startService(self) -> None:
        """
        Start the own reader pool, if any.
        """
        if self._pool is not None:
            self._pool.start()
        super().startService()

    def stopService(self) -> None:
        """
        Stop the own reader pool after the work queued on it.
        """
        if self._pool is not None:
            self._pool.stop()
        return super().stopService()

    def run_in_thread(self, function: Callable[..., T], *args: Any) -> "Deferred[T]":
        """
        Run C{function(*args)} where this service runs its reads (for the
        filter service, which shares the pool).
        """
        return self._run_in_thread(function, *args)

    @property
    def forks(self) -> ForkSchedule:
        """
        The network's schedule of EVM rule sets (for the tracers' replays).
        """
        return self._forks

    # Reads

    def _read(self, header: Header, function: Callable[[State], T]) -> "Deferred[T]":
        """
        Run C{function} on a state opened at C{header}'s root in the reader pool.
        """
        return self._run_in_thread(self._thd_read, header, function)

    def _thd_read(self, header: Header, function: Callable[[State], T]) -> T:
        """
        Open the state of C{header} and apply C{function}; a state the store
        lacks is a missing block's state.

        @raise BlockNotFoundError: the state is not in the store.
        """
        try:
            return function(State(self._read_node, self._read_code, header.state_root, self._node_cache))
        except (StateError, TrieError) as exc:
            raise BlockNotFoundError(f"State not found for block with hash 0x{header.hash.hex()}") from exc

    def _account(self, header: Header, address: bytes) -> "Deferred[Account | None]":
        """
        The account of C{address} after block C{header}.

        A state root never changes what it holds, so accounts read once are
        kept by (state root, address), on the reactor thread, and answered
        again without a trip to the reader pool.
        """
        key = (header.state_root, bytes(address))
        cache = self._accounts
        if key in cache:
            cache.move_to_end(key)
            return succeed(cache[key])

        def remember(account: Account | None) -> Account | None:
            """
            Keep the account read, forgetting the least recently used beyond the size.
            """
            cache[key] = account
            if len(cache) > ACCOUNT_CACHE_SIZE:
                cache.popitem(last=False)
            return account

        return self._read(header, lambda state: state.get_account(Address(address))).addCallback(remember)

    def get_balance(self, header: Header, address: bytes) -> "Deferred[int]":
        """
        The balance of C{address} after block C{header}.

        @return: a Deferred firing with the balance in wei.
        """
        return self._account(header, address).addCallback(lambda account: 0 if account is None else account.balance)

    def get_nonce(self, header: Header, address: bytes) -> "Deferred[int]":
        """
        The nonce of C{address} after block C{header}.
        """
        return self._account(header, address).addCallback(lambda account: 0 if account is None else account.nonce)

    def get_storage(self, header: Header, address: bytes, slot: int) -> "Deferred[int]":
        """
        The value of storage slot C{slot} of C{address} after block C{header}.
        """
        return self._read(header, lambda state: state.get_storage(Address(address), slot))

    def get_code(self, header: Header, address: bytes) -> "Deferred[bytes]":
        """
        The code of C{address} after block C{header}.
        """
        return self._read(header, lambda state: state.get_code(Address(address)))

    def get_proof(self, header: Header, address: bytes, slots: list[int]) -> "Deferred[AccountProof]":
        """
        The EIP-1186 proof of C{address} and its C{slots} after block C{header}.

        @return: a Deferred firing with an L{AccountProof}.
        """
        return self._run_in_thread(self._thd_get_proof, header, Address(address), list(slots))

    def _thd_get_proof(self, header: Header, address: Address, slots: list[int]) -> AccountProof:
        """
        Build the proofs from the state trie and the account's storage trie.

        @raise BlockNotFoundError: the state is not in the store.
        """
        read_node = trie_node_reader(self._store)
        try:
            accounts = SecureTrie(read_node, header.state_root)
            account_proof = make_proof(accounts, address)
            raw = accounts.get(address)
            account = Account() if raw is None else Account.decode(raw)
            storage = SecureTrie(read_node, account.storage_root)
            storage_proofs = []
            for slot in slots:
                key = slot.to_bytes(32, "big")
                value = storage.get(key)
                storage_proofs.append(
                    StorageProof(slot, 0 if value is None else decode_storage_value(value), tuple(make_proof(storage, key)))
                )
        except (TrieError, RLPError, StateError) as exc:
            raise BlockNotFoundError(f"State not found for block with hash 0x{header.hash.hex()}") from exc
        return AccountProof(
            address=address,
            balance=account.balance,
            nonce=account.nonce,
            code_hash=account.code_hash,
            storage_hash=account.storage_root,
            account_proof=tuple(account_proof),
            storage_proofs=tuple(storage_proofs),
        )

    # Calls

    def _block_hashes(self, header: Header) -> Callable[[int], Hash32 | None]:
        """
        BLOCKHASH for a call at C{header}: the hashes of its own ancestors,
        read from the canonical index for a canonical block and by walking
        the parent hashes for a block of a side chain.  Which of the two is
        found out at the first BLOCKHASH, since most calls execute none.
        """
        store = self._store
        canonical: list[bool] = []
        known = {header.number - 1: header.parent_hash}
        lowest = [header]

        # The annotation is a string: a nested def evaluates its annotations
        # at every call of the enclosing function, and C{Hash32 | None} makes
        # a typing union each time (a NewType has no C{types.UnionType}).
        def block_hash(number: int) -> "Hash32 | None":
            """
            The ancestor's hash at height C{number}.
            """
            if number >= header.number:
                return None
            if not canonical:
                canonical.append(read_canonical_hash(store, header.number) == header.hash)
            if canonical[0]:
                found = read_canonical_hash(store, number)
                return None if found is None else Hash32(found)
            # A side chain's ancestors: read headers down to the height.
            while number not in known and lowest[0].number > 1:
                parent_rlp = read_header_rlp(store, lowest[0].parent_hash)
                if parent_rlp is None:
                    return None
                parent = Header.decode(parent_rlp)
                known[parent.number - 1] = parent.parent_hash
                lowest[0] = parent
            return known.get(number)

        return block_hash

    def _cancellation(self) -> Cancellation:
        """
        The cancellation of a run that starts now: it stops at the time
        limit, and when its caller gives up (L{_limited}).
        """
        return Cancellation(self._clock.seconds() + self._time_limit, self._clock.seconds)

    def _in_time(self, function: Callable[..., T], *args: Any) -> "Deferred[T]":
        """
        Run C{function(*args)} in the reader pool, within the time limit:
        the EVM runs it starts stop at the limit (or when the caller gives
        up), and a job still queued then does not start.

        @return: a Deferred failing with L{CallTimeoutError} at the time
            limit, or with L{nodex.api.errors.ServerBusyError} at once when
            too many jobs wait for the pool.
        """
        cancellation = self._cancellation()
        return self._limited(self._run_in_thread(_cancellable, cancellation, function, *args), cancellation)

    def _limited(self, deferred: "Deferred[T]", cancellation: Cancellation | None = None) -> "Deferred[T]":
        """
        A Deferred of C{deferred}'s outcome, or failing with
        L{CallTimeoutError} if that has not come within the time limit (an
        outcome after it is dropped).

        One timer and one callback: every call goes through here, and
        C{Deferred.addTimeout} costs three callbacks and a cancellation.

        @param cancellation: cancelled when the caller gives up (the run
            stops by itself at the time limit).
        """
        limited: Deferred[T]

        def cancel(_: object) -> None:
            """
            The caller gave up: stop the timer and the run.
            """
            if timer.active():
                timer.cancel()
            if cancellation is not None:
                cancellation.cancel()

        def expire() -> None:
            """
            The time is up.
            """
            if cancellation is not None:
                cancellation.cancel()
            limited.errback(CallTimeoutError())

        def deliver(result: object) -> None:
            """
            Hand the outcome on, unless the time ran out or the caller gave up first.
            """
            if timer.active():
                timer.cancel()
                if isinstance(result, Failure):
                    limited.errback(result)
                else:
                    limited.callback(result)  # type: ignore[arg-type]

        limited = Deferred(cancel)
        timer = self._clock.callLater(self._time_limit, expire)
        deferred.addBoth(deliver)
        return limited

    def call(self, header: Header, request: CallRequest, overrides: StateOverrides) -> "Deferred[bytes]":
        """
        Run C{request} on the state after block C{header}, in its context.

        A call without overrides is a function of the block (its state and
        its context) and the call object alone, so the answers of recent
        successful calls are kept by (block hash, call) on the reactor
        thread and given again without running: dapps poll the same views
        (balances, allowances, reserves) over and over.

        @return: a Deferred firing with the return data, or failing with
            L{nodex.api.errors.ExecutionRevertedError},
            L{nodex.api.errors.CallError},
            L{nodex.api.errors.StateOverrideError} or L{CallTimeoutError}.
        """
        key = None if overrides else _call_key(header, request)
        calls = self._calls
        if key is not None and key in calls:
            calls.move_to_end(key)
            return succeed(calls[key])
        answered = self._call_at_once(header, request, overrides)
        if isinstance(answered, Failure):
            return fail(answered)
        if answered is not None:
            if key is not None:
                self._remember_call(key, answered)
            return succeed(answered)
        if key is None:
            return self._in_time(self._thd_call, header, request, overrides)

        def remember(output: bytes) -> bytes:
            self._remember_call(key, output)
            return output

        return self._in_time(self._thd_call, header, request, overrides).addCallback(remember)

    def _remember_call(self, key: tuple[bytes, CallRequest], output: bytes) -> None:
        """
        Keep a short answer, forgetting the least recently used beyond the size.
        """
        if len(output) <= CALL_CACHE_MAX_OUTPUT:
            calls = self._calls
            calls[key] = output
            if len(calls) > CALL_CACHE_SIZE:
                calls.popitem(last=False)

    def _call_at_once(self, header: Header, request: CallRequest, overrides: StateOverrides) -> bytes | Failure | None:
        """
        Try the call on this thread with at most L{inline_call_gas} gas
        (L{nodex.chain.calls.call_within}): most calls are views of a few
        thousand gas, and a crossing to a reader thread and back cost more
        than they do.  The trial is bounded by its gas (100,000 gas: about
        5 ms, 25 ms at the EVM's slowest measured rate), so that other
        requests wait at most that long (DESIGN §4, docs/state-and-logs.md).

        @return: the output or the failure of the call, or L{None} when it
            needs more gas than the trial had (it then runs in the pool).
        """
        if not self.inline_call_gas or not self._inline_allowed():
            return None
        started = self._clock.seconds()
        try:
            result = self._run_call(header, request, overrides, self.inline_call_gas)
        except Exception:
            return Failure()
        finally:
            self._window_spent += self._clock.seconds() - started
        return None if result is None else result.output

    def _inline_allowed(self) -> bool:
        """
        Whether the trials of the current window have time left
        (L{INLINE_WINDOW_BUDGET}); a new window starts when one has passed.
        """
        now = self._clock.seconds()
        if now - self._window_start >= INLINE_WINDOW:
            self._window_start = now
            self._window_spent = 0.0
        return self._window_spent < INLINE_WINDOW_BUDGET

    def _thd_call(self, header: Header, request: CallRequest, overrides: StateOverrides) -> bytes:
        """
        Execute the call in the reader thread.
        """
        result = self._run_call(header, request, overrides, None)
        assert result is not None
        return result.output

    def _run_call(
        self, header: Header, request: CallRequest, overrides: StateOverrides, budget: int | None
    ) -> Any:
        """
        Execute the call with its full gas, or try it within C{budget} gas
        (L{None} if that is not enough to know its result).
        """
        block = call_environment(header, self._chain_id, self._block_hashes(header), self._forks)
        opener = self._opener(header)
        try:
            strict = self._call_failures_are_errors
            if budget is None:
                return execute_call(opener, block, request, overrides, self.call_gas_cap, strict)
            return call_within(opener, block, request, overrides, self.call_gas_cap, budget, strict)
        except StateOverrideError:
            raise
        except (StateError, TrieError) as exc:
            raise BlockNotFoundError(f"State not found for block with hash 0x{header.hash.hex()}") from exc

    def estimate_gas(self, header: Header, request: CallRequest, overrides: StateOverrides) -> "Deferred[int]":
        """
        The least gas with which C{request} succeeds after block C{header},
        searched up to the block's gas limit (and the gas cap).

        @return: a Deferred firing with the gas, or failing as L{call} does.
        """
        answered = self._estimate_at_once(header, request, overrides)
        if isinstance(answered, Failure):
            return fail(answered)
        if answered is not None:
            return succeed(answered)
        return self._in_time(self._thd_estimate_gas, header, request, overrides)

    def _estimate_at_once(self, header: Header, request: CallRequest, overrides: StateOverrides) -> int | Failure | None:
        """
        Make the estimate on this thread, the search the pool would make
        (L{nodex.chain.calls.estimate_gas}, so the same answer), while the
        inline trials' time budget allows, and for at most
        L{INLINE_ESTIMATE_TIME}: a test suite's estimates take one to a
        few runs of a few thousand gas each, and the crossing to a reader
        thread and back cost more.  An estimate whose runs pass that
        deadline is given up here and made in the pool from the start.

        @return: the estimate or the failure, or L{None} when it is to be
            made in the pool.
        """
        if not self.inline_call_gas or not self._inline_allowed():
            return None
        started = self._clock.seconds()
        cancellation = self._inline_cancellation()
        try:
            with cancellable(cancellation):
                return self._estimate(header, request, overrides)
        except ExecutionCancelledError:
            return None
        except Exception:
            return Failure()
        finally:
            self._window_spent += self._clock.seconds() - started

    def _inline_cancellation(self) -> Cancellation:
        """
        The cancellation of a run on this thread: due once the thread has
        spent L{inline_estimate_time} seconds of CPU from now, so that a
        run the machine's other work preempts is not given up for that.
        The thread's CPU clock is a system call (about a microsecond, and a
        frame start looks at it): it is read only once the monotonic clock
        (read in user space) shows that much time gone, since a thread
        cannot have used more CPU than the time that passed.
        """
        budget = self.inline_estimate_time
        wall, cpu = self._wall_time, self._thread_time
        wall_due = wall() + budget

        def now() -> float:
            return cpu() if wall() >= wall_due else float("-inf")

        return Cancellation(cpu() + budget, now)

    def _thd_estimate_gas(self, header: Header, request: CallRequest, overrides: StateOverrides) -> int:
        """
        Run the search in the reader thread.
        """
        return self._estimate(header, request, overrides)

    def _estimate(self, header: Header, request: CallRequest, overrides: StateOverrides) -> int:
        """
        The estimate, searched with all the gas.
        """
        block = call_environment(header, self._chain_id, self._block_hashes(header), self._forks)
        upper = min(header.gas_limit, self.estimate_gas_cap)
        try:
            return estimate_gas(self._opener(header), block, request, overrides, upper)
        except StateOverrideError:
            raise
        except (StateError, TrieError) as exc:
            raise BlockNotFoundError(f"State not found for block with hash 0x{header.hash.hex()}") from exc

    def create_access_list(
        self, header: Header, request: CallRequest, overrides: StateOverrides = StateOverrides()
    ) -> "Deferred[AccessListResult]":
        """
        The access list C{request} would want after block C{header}, and
        the gas it uses with it (C{eth_createAccessList}).

        @return: a Deferred firing with an L{AccessListResult}, or failing
            with L{InsufficientFundsError}, L{CallError} or L{CallTimeoutError}.
        """
        return self._in_time(self._thd_create_access_list, header, request, overrides)

    def _thd_create_access_list(
        self, header: Header, request: CallRequest, overrides: StateOverrides
    ) -> AccessListResult:
        """
        Run the rounds in the reader thread.
        """
        block = call_environment(header, self._chain_id, self._block_hashes(header), self._forks)
        try:
            return create_access_list(self._opener(header), block, request, overrides, self.call_gas_cap)
        except StateOverrideError:
            raise
        except (StateError, TrieError) as exc:
            raise BlockNotFoundError(f"State not found for block with hash 0x{header.hash.hex()}") from exc

    def open_state(self, header: Header) -> State:
        """
        A fresh state at C{header}'s root over this service's store and
        caches (for the tracing service's replays, in this service's reader
        threads).
        """
        return self._opener(header)()

    def ancestor_hashes(self, header: Header) -> Callable[[int], Hash32 | None]:
        """
        The BLOCKHASH lookup of a block at C{header}: its own ancestors'
        hashes, whether it is canonical or on a side chain.
        """
        return self._block_hashes(header)

    def _opener(self, header: Header) -> Callable[[], State]:
        """
        A function that opens a fresh state at C{header}'s root.
        """
        root = header.state_root
        read_node, read_code, node_cache = self._read_node, self._read_code, self._node_cache
        accounts = self._shared_accounts
        return lambda: ReaderState(read_node, read_code, root, node_cache, accounts)

    def _read_code(self, code_hash: bytes) -> bytes | None:
        """
        Code by its hash, kept for the next calls (the same few contracts
        are called over and over); the kept code is bounded by its bytes.
        """
        codes = self._codes
        code = codes.get(code_hash)
        if code is None:
            code = self._store.get(CODE, code_hash) or self._held[1].get(code_hash)
            if code is not None and len(code) <= CODE_CACHE_BYTES:
                # Reader threads miss at once; the byte count needs the lock.
                with self._codes_lock:
                    if self._code_bytes + len(code) > CODE_CACHE_BYTES:
                        # Rarely reached: starting again is simpler than an LRU.
                        codes.clear()
                        self._code_bytes = 0
                    codes[code_hash] = code
                    self._code_bytes += len(code)
        return code


_MISSING: Any = object()


class ReaderState(State):
    """
    A state for calls, estimates and replays whose first read of each
    account comes from a cache shared by all such states of the service
    (by state root and address), and goes into it: every call reads its
    sender and its contract again, each a trie walk and a decoding (about a
    tenth of an C{eth_call}'s instructions), and a state root never changes
    what it holds.

    An account this state has not changed is, at any root its own commits
    reach, what it was at the root it started from; an account it changed
    is in its own accounts, which are read first. So the cache, keyed by
    the starting root, is never stale. Its dictionary operations are single
    steps under the interpreter lock, so reader threads and the reactor
    share it without a lock; past L{SHARED_ACCOUNTS_SIZE} entries it starts
    again (rarely reached: simpler than an LRU).
    """

    def __init__(
        self,
        read_node: Callable[[bytes], bytes | None],
        read_code: Callable[[bytes], bytes | None],
        state_root: bytes,
        node_cache: NodeCache | None,
        shared_accounts: dict[tuple[bytes, Address], Account | None],
    ) -> None:
        """
        @param shared_accounts: the accounts read by the service's states,
            by (state root, address).
        """
        super().__init__(read_node, read_code, state_root, node_cache)
        self._root = bytes(state_root)
        self._shared_accounts = shared_accounts

    def get_account(self, address: Address) -> Account | None:
        """
        The account at C{address}: this state's own, else the shared
        cache's at the starting root, else read from the trie (and shared).
        """
        try:
            return self._accounts[address]
        except KeyError:
            pass
        key = (self._root, address)
        shared = self._shared_accounts
        account = shared.get(key, _MISSING)
        if account is _MISSING:
            account = super().get_account(address)
            if len(shared) >= SHARED_ACCOUNTS_SIZE:
                shared.clear()
            shared[key] = account
        else:
            self._accounts[address] = account
        return account


def _cancellable(cancellation: Cancellation, function: Callable[..., T], *args: Any) -> T:
    """
    Run C{function(*args)} (in a reader thread) with C{cancellation} as the
    cancellation of its EVM runs; a job whose time ran out while it waited
    does not start.

    @raise CallTimeoutError: the run was cancelled (the caller, which gave
        up, drops it).
    """
    try:
        with cancellable(cancellation):
            cancellation.check()
            return function(*args)
    except ExecutionCancelledError:
        raise CallTimeoutError() from None


def _call_key(header: Header, request: CallRequest) -> tuple[bytes, CallRequest] | None:
    """
    The cache key of a call at a block, or L{None} if the call object cannot be one.
    """
    try:
        hash(request)
    except TypeError:
        return None
    return (header.hash, request)


__all__ = [
    "ACCOUNT_CACHE_SIZE",
    "CALL_CACHE_MAX_OUTPUT",
    "CALL_CACHE_SIZE",
    "CODE_CACHE_BYTES",
    "DEFAULT_CALL_GAS_CAP",
    "DEFAULT_TIME_LIMIT",
    "INLINE_CALL_GAS",
    "INLINE_WINDOW",
    "INLINE_WINDOW_BUDGET",
    "SHARED_ACCOUNTS_SIZE",
    "ReaderState",
    "StateService",
]
