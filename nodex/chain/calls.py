"""
Calls against a block's state that commit nothing: C{eth_call} and
C{eth_estimateGas}.

A call runs on a fresh L{State} opened at the block's state root, with the
client's state overrides applied, and is thrown away afterwards.  A revert
becomes L{ExecutionRevertedError}, whose message is the specification's
prefix followed by C{revert <reason>} when the payload is an
C{Error(string)}, else by C{execution reverted} (DESIGN §1; geth's form is
L{ExecutionRevertedError.geth_message}), and whose C{data} is the revert
payload, whatever its shape.  The estimate is the least gas with
which the call succeeds, found by binary search.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from nodex.chain.errors import ChainError
from nodex.chain.execution import CallResult, run_call
from nodex.chain.processing import block_environment
from nodex.chain.rules import DEFAULT_FORK_SCHEDULE, ForkSchedule
from nodex.evm.environment import BlockEnvironment
from nodex.evm.gas import GAS_CALL_STIPEND
from nodex.evm.tracing import Tracer
from nodex.primitives import ZERO_ADDRESS, Address, Hash32
from nodex.state.overrides import StateOverrides, apply_overrides
from nodex.state.state import State
from nodex.structures.errors import InsufficientBalanceError, InvalidTransactionError
from nodex.structures.headers import Header
from nodex.structures.transaction_rules import intrinsic_gas
from nodex.structures.transactions import AccessListEntry

REVERT_PREFIX = "VM Exception while processing transaction: "
"""The interface specification's prefix of revert messages (reference §5.1)."""

ERROR_SELECTOR = bytes.fromhex("08c379a0")
"""The selector of Solidity's C{Error(string)}."""

PANIC_SELECTOR = bytes.fromhex("4e487b71")
"""The selector of Solidity's C{Panic(uint256)}."""

NO_OVERRIDES = StateOverrides()


class CallError(ChainError):
    """
    A call or an estimate that cannot give an answer (RPC code -32000).
    """


class InsufficientFundsError(CallError):
    """
    The sender cannot pay the value (or the gas) of the call.
    """

    def __init__(self, message: str = "insufficient funds for transfer") -> None:
        super().__init__(message)


def insufficient_funds_for_gas(balance: int, wanted: int) -> InsufficientFundsError:
    """
    geth's answer for a sender who can pay the value but not even the
    least gas the call needs at its price.
    """
    return InsufficientFundsError(f"insufficient funds for gas * price + value: have {balance} want {wanted}")


class CallFailedError(CallError):
    """
    The call failed for a reason other than a revert (out of gas, an
    invalid instruction): an error only under the Ethereum conventions, as
    geth answers (RPC code -32000, the EVM's reason as the message).
    """


class CallTimeoutError(CallError):
    """
    A call or an estimate ran past the per-request time limit (RPC code -32011).
    """

    def __init__(self) -> None:
        super().__init__("Execution has got timeout out.")


class ExecutionRevertedError(CallError):
    """
    The call reverted (RPC code -32015).

    @ivar data: the revert payload, as the EVM returned it.
    @ivar reason: the C{Error(string)} reason, if the payload is one.
    """

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.reason = decode_revert_reason(data)
        # DESIGN §1: the specification's prefix, then "revert <reason>";
        # ethers looks for "revert" and a hex payload in data and decodes
        # the payload.
        if self.reason is not None:
            message = f"{REVERT_PREFIX}revert {self.reason}"
        else:
            message = f"{REVERT_PREFIX}execution reverted"
        super().__init__(message)

    @property
    def geth_message(self) -> str:
        """
        geth's message for the same revert (the Ethereum conventions, with
        code 3): C{execution reverted: <reason>} for an C{Error(string)},
        C{execution reverted: <what>} for a Solidity panic geth names
        (C{assert(false)}, C{arithmetic underflow or overflow}...), else
        C{execution reverted}.
        """
        reason = self.reason if self.reason is not None else _panic_description(self.data)
        if reason is not None:
            return f"execution reverted: {reason}"
        return "execution reverted"


PANIC_REASONS = {
    0x00: "generic panic",
    0x01: "assert(false)",
    0x11: "arithmetic underflow or overflow",
    0x12: "division or modulo by zero",
    0x21: "enum overflow",
    0x22: "invalid encoded storage byte array accessed",
    0x31: "out-of-bounds array access; popping on an empty array",
    0x32: "out-of-bounds access of an array or bytesN",
    0x41: "out of memory",
    0x51: "uninitialized function",
}
"""What geth's revert message says for each Solidity panic code."""


def _panic_description(data: bytes) -> str | None:
    """
    geth's words for a C{Panic(uint256)} payload with a known code, else L{None}.
    """
    if len(data) != 36 or data[:4] != PANIC_SELECTOR:
        return None
    return PANIC_REASONS.get(int.from_bytes(data[4:], "big"))


@dataclass(frozen=True)
class CallRequest:
    """
    The call object of C{eth_call} and C{eth_estimateGas}.

    @ivar sender: C{from}; the zero address when absent.
    @ivar to: the callee, or L{None} for a simulated creation.
    @ivar gas: the gas given, or L{None} for the cap.
    @ivar gas_price: the price GASPRICE reads and the sender's balance must cover.
    """

    sender: Address = ZERO_ADDRESS
    to: Address | None = None
    data: bytes = b""
    value: int = 0
    gas: int | None = None
    gas_price: int = 0
    access_list: Sequence[AccessListEntry] = ()


def decode_revert_reason(data: bytes) -> str | None:
    """
    The reason string of an ABI-encoded C{Error(string)} payload, or
    L{None} for any other payload (custom errors, panics, nothing, garbage).
    """
    if data[:4] != ERROR_SELECTOR or len(data) < 68:
        return None
    body = data[4:]
    offset = int.from_bytes(body[:32], "big")
    if offset + 32 > len(body):
        return None
    length = int.from_bytes(body[offset:offset + 32], "big")
    if offset + 32 + length > len(body):
        return None
    return body[offset + 32:offset + 32 + length].decode("utf-8", "replace")


def call_environment(
    header: Header,
    chain_id: int,
    block_hashes: Callable[[int], Hash32 | None],
    forks: ForkSchedule = DEFAULT_FORK_SCHEDULE,
) -> BlockEnvironment:
    """
    The environment of a call made "at" a block: the block's own header
    values, as geth runs C{eth_call} on a block's state with its context.

    @param block_hashes: the canonical hash of an ancestor by number.
    @param forks: the network's schedule, which chooses the rule set.
    """
    # The same environment as the block's own transactions ran in.
    return block_environment(header, chain_id, block_hashes, forks)


def run_request(
    open_state: Callable[[], State],
    block: BlockEnvironment,
    request: CallRequest,
    overrides: StateOverrides,
    gas: int,
    tracer: Tracer | None = None,
) -> CallResult:
    """
    Run C{request} with C{gas} on a fresh state with the overrides applied.

    @param tracer: watches the run (C{eth_createAccessList}).
    @raise InsufficientFundsError: the sender cannot pay the value or the gas.
    @raise InvalidTransactionError: the gas is below the intrinsic gas.
    """
    state = open_state()
    apply_overrides(state, overrides)
    cost = request.value + gas * request.gas_price
    if cost and state.get_balance(request.sender) < cost:
        raise InsufficientFundsError()
    try:
        return run_call(
            state, block, request.sender, request.to, request.data, request.value, gas,
            request.gas_price, request.access_list, tracer,
        )
    except InsufficientBalanceError as exc:
        raise InsufficientFundsError() from exc


def call_gas(
    open_state: Callable[[], State], request: CallRequest, overrides: StateOverrides, gas_cap: int
) -> int:
    """
    The gas a call runs with: its own (at most the cap), else the cap, and
    with a gas price no more than the sender's balance pays for.
    """
    gas = gas_cap if request.gas is None else min(request.gas, gas_cap)
    if request.gas is None and request.gas_price:
        state = open_state()
        apply_overrides(state, overrides)
        gas = min(gas, max(state.get_balance(request.sender) - request.value, 0) // request.gas_price)
    return gas


def execute_call(
    open_state: Callable[[], State],
    block: BlockEnvironment,
    request: CallRequest,
    overrides: StateOverrides,
    gas_cap: int,
    failures_are_errors: bool = False,
) -> CallResult:
    """
    C{eth_call}: run the call with its gas (or the cap, whichever is less).

    A call that fails for a reason other than a revert (out of gas, an
    invalid instruction) is not an error: its result carries the return
    data, as the reference node answers; with C{failures_are_errors} (the
    Ethereum conventions) it is, as geth answers.

    @param open_state: opens a fresh L{State} at the block's state root.
    @param gas_cap: the network's ceiling on a call's gas.
    @raise ExecutionRevertedError: the call reverted.
    @raise CallFailedError: the call failed otherwise, with C{failures_are_errors}.
    @raise InsufficientFundsError: the sender cannot pay.
    @raise nodex.state.overrides.StateOverrideError: a bad override set.
    @raise CallError: the gas does not cover the intrinsic gas.
    """
    gas = call_gas(open_state, request, overrides, gas_cap)
    try:
        result = run_request(open_state, block, request, overrides, gas)
    except InsufficientFundsError:
        raise
    except InvalidTransactionError as exc:
        raise CallError(str(exc)) from exc
    return _outcome(result, failures_are_errors)


def _outcome(result: CallResult, failures_are_errors: bool) -> CallResult:
    """
    The result of a call, or the error it is.

    @raise ExecutionRevertedError: the call reverted.
    @raise CallFailedError: it failed otherwise, with C{failures_are_errors}.
    """
    if result.reverted:
        raise ExecutionRevertedError(result.output)
    if failures_are_errors and result.error is not None:
        raise CallFailedError(result.error)
    return result


def call_within(
    open_state: Callable[[], State],
    block: BlockEnvironment,
    request: CallRequest,
    overrides: StateOverrides,
    gas_cap: int,
    budget: int,
    failures_are_errors: bool = False,
) -> CallResult | None:
    """
    The result L{execute_call} would give, if running the call with at most
    C{budget} gas can tell it; L{None} when the call needs its full gas.

    The gas a message starts with is seen only through the GAS instruction
    and through running out (in any frame: a caller survives its callee's
    halt, and the gas a CALL forwards is capped by what is left).  A run
    with less gas that ends without either therefore takes the same path
    to the same output as the run with the full gas, and its answer is the
    full run's.  A revert in such a run is the full run's revert too.  With
    a gas price the sender's cost depends on the gas: such a call is never
    tried.

    @param budget: the most gas of the trial run.
    @raise ExecutionRevertedError: the call reverts, whatever its gas.
    @raise CallFailedError: it fails otherwise, whatever its gas, with
        C{failures_are_errors}.
    @raise InsufficientFundsError: the sender cannot pay the value.
    @raise nodex.state.overrides.StateOverrideError: a bad override set.
    @raise CallError: a call of at most C{budget} gas is below its intrinsic gas.
    """
    if request.gas_price:
        return None
    gas = gas_cap if request.gas is None else min(request.gas, gas_cap)
    if gas <= budget:
        return execute_call(open_state, block, request, overrides, gas_cap, failures_are_errors)
    try:
        result = run_request(open_state, block, request, overrides, budget)
    except InsufficientFundsError:
        raise
    except InvalidTransactionError:
        # The intrinsic gas alone is above the budget.
        return None
    if result.limit_dependent:
        return None
    return _outcome(result, failures_are_errors)


def request_intrinsic_gas(request: CallRequest) -> int:
    """
    The intrinsic gas of the transaction the request describes.
    """
    return intrinsic_gas(_IntrinsicView(request.to or b"", request.data, tuple(request.access_list)))  # type: ignore[arg-type]


@dataclass(frozen=True)
class _IntrinsicView:
    """
    The fields L{intrinsic_gas} reads.
    """

    to: bytes
    data: bytes
    access_list: tuple[AccessListEntry, ...]


def estimate_gas(
    open_state: Callable[[], State],
    block: BlockEnvironment,
    request: CallRequest,
    overrides: StateOverrides,
    upper_bound: int,
) -> int:
    """
    C{eth_estimateGas}: the least gas with which the call succeeds.

    The search runs between the intrinsic gas and the request's gas (or
    C{upper_bound}, the pending block's gas limit capped by the node's
    estimation cap); with a gas price, what the sender's balance pays for
    bounds it too.  The first run, with all the gas, decides whether the
    call can succeed at all, and tells the gas it consumed before its
    refund.  With exactly that much the same instructions run, unless a
    subcall is handed less than it needs (what the 63/64 rule keeps back)
    or an SSTORE finds 2,300 gas or less left; for most calls it is the
    answer, which a run with it and one with one gas less confirm.
    Otherwise geth's guess (that gas, plus a stipend, plus a 64th) narrows
    the range, and a binary search finds the least gas.  A run whose
    outcome a successful run already proves (L{_RunProofs}) is not made:
    most estimates so take the first run alone.  Every run shares one state opened
    once, each run's changes undone after it (its reads stay cached).
    The search assumes that a call that succeeds with some gas succeeds
    with more, as the EVM's gas rules make it for calls that do not read
    their own gas.

    @raise ExecutionRevertedError: the call reverts even with all the gas.
    @raise InsufficientFundsError: the sender cannot pay the value, or
        the gas the call needs before it runs (its intrinsic gas).
    @raise CallError: the call fails even with all the gas.
    """
    high = upper_bound if request.gas is None else min(request.gas, upper_bound)
    low = request_intrinsic_gas(request) - 1
    if request.gas_price:
        state = open_state()
        apply_overrides(state, overrides)
        balance = state.get_balance(request.sender)
        if balance < request.value:
            raise InsufficientFundsError()
        allowance = (balance - request.value) // request.gas_price
        if allowance <= low:
            # Not even the intrinsic gas: no search can help, and "gas
            # required exceeds allowance (0)" would hide that the balance
            # is the problem.
            raise insufficient_funds_for_gas(balance, (low + 1) * request.gas_price + request.value)
        high = min(high, allowance)
    if high <= low:
        raise CallError(f"gas required exceeds allowance ({high})")
    run = _runs_on_one_state(open_state, block, request, overrides)
    result = run(high)
    if not result.success:
        if result.reverted:
            raise ExecutionRevertedError(result.output)
        raise CallError(f"gas required exceeds allowance ({high}): {result.error}")
    proofs = _RunProofs()
    proofs.add(high, result)

    def succeeds(gas: int) -> bool:
        proven = proofs.outcome(gas)
        if proven is not None:
            return proven
        try:
            outcome = run(gas)
        except InvalidTransactionError:
            return False
        proofs.add(gas, outcome)
        return outcome.success

    low = max(low, result.gas_used - 1)
    consumed = result.gas_used + result.refund
    edge = proofs.least_success()
    if edge is not None and consumed < edge and low < edge - 1 < high:
        # The first run proves every gas from the edge up, and not the gas
        # consumed: what the edge's margin stands for is a subframe handed
        # all but a 64th of what is left, which needs more than a run with
        # less gas would hand it.  Its caller mostly fails with it (Solidity
        # bubbles the callee's failure up), so one gas less than the edge is
        # tried first: failing, the edge is the answer, in two runs instead
        # of the bisection's four to nine (ERC-4626 deposits and
        # withdrawals, wrappers: session 15).
        if not succeeds(edge - 1):
            return edge
        high = edge - 1
    if low < consumed < high:
        if succeeds(consumed):
            if consumed - 1 == low or not succeeds(consumed - 1):
                return consumed
            high = consumed - 1
        else:
            low = consumed
    optimistic = (consumed + GAS_CALL_STIPEND) * 64 // 63
    if low < optimistic < high:
        if succeeds(optimistic):
            high = optimistic
        else:
            low = optimistic
    while high - low > 1:
        middle = (low + high) // 2
        if succeeds(middle):
            high = middle
        else:
            low = middle
    return high


class _RunProofs:
    """
    What the successful runs of one estimate prove about the outcome of a
    run with less gas, without making it.

    Given C{shift} less gas than a run had, the call's frame has C{shift}
    less at every step; a subframe it runs is handed less by what the
    63/64 rule takes of that, and hands back less by as much, so the
    caller goes on with C{shift} less again.  Each frame's margin
    (L{nodex.evm.frame.Evm}) is the most it can lose and still run the
    same instructions (its SSTOREs keeping more than 2,300, its calls' own
    costs covered, its subframes handed what they tolerate).  For a run
    that read no GAS and in which no frame halted exceptionally
    (C{limit_dependent} unset), which had C{left} gas left at its end:

      - with a shift of at most C{left}, its own frame's margin
        (C{spare_gas}) and what its subframes tolerate (C{call_spare_gas}),
        every frame runs the same instructions and the call's own ends with
        C{left - shift} left: the call succeeds;
      - with a shift above C{left} or above its own frame's margin, but
        within what its subframes tolerate, every subframe runs as it did
        and the call's own frame runs short (at its last step, or at the
        call's cost or the SSTORE whose margin the shift passed, whichever
        comes first): the call fails.

    So the gas consumed before the refund (a shift of C{left}) is proven to
    succeed and one gas less to fail, from the first run alone, for a call
    whose frames all keep a margin of more than what it had left: every call
    without subframes, GAS or an SSTORE near its end (session 9), and
    calls whose subframes are handed more than they need (session 13).
    And a call whose own frame's margin is what stops it (an SSTORE near
    its end, a call with value whose stipend comes back) has its answer,
    the gas that keeps that margin, proven by the first run too.  Other
    runs are made, and those that succeed add their own proofs.
    """

    __slots__ = ("_proofs",)

    def __init__(self) -> None:
        self._proofs: list[tuple[int, int, int, int]] = []

    def add(self, gas: int, result: CallResult) -> None:
        """
        Keep what a run with C{gas} proves, if anything.
        """
        if result.success and not result.limit_dependent:
            left = gas - (result.gas_used + result.refund)
            calls = result.call_spare_gas
            own = min(left, result.spare_gas)
            self._proofs.append((gas, min(own, calls), own, calls))

    def least_success(self) -> int | None:
        """
        The least gas a kept run proves to succeed, if any.
        """
        return min((proven - succeeding for proven, succeeding, _, _ in self._proofs), default=None)

    def outcome(self, gas: int) -> bool | None:
        """
        Whether a run with C{gas} succeeds, if a kept run proves it; else L{None}.
        """
        for proven, succeeding, own, calls in self._proofs:
            shift = proven - gas
            if 0 <= shift <= succeeding:
                return True
            if own < shift <= calls:
                return False
        return None


def _runs_on_one_state(
    open_state: Callable[[], State], block: BlockEnvironment, request: CallRequest, overrides: StateOverrides
) -> Callable[[int], CallResult]:
    """
    A function that runs C{request} with a given gas, every run on one
    state with the overrides applied: a run's changes are journaled from
    the start of its transaction (L{State.begin_transaction}) and undone
    after it, so the next run starts from the same state with the accounts,
    slots and trie nodes already read.

    @raise InsufficientFundsError: (from a run) the sender cannot pay.
    @raise InvalidTransactionError: (from a run) the gas is below the intrinsic gas.
    """
    state = open_state()
    apply_overrides(state, overrides)
    # The overrides become the runs' starting point: no run may undo them.
    state.begin_transaction()

    def run(gas: int) -> CallResult:
        try:
            return run_request(lambda: state, block, request, NO_OVERRIDES, gas)
        finally:
            state.revert(0)

    return run


__all__ = [
    "ERROR_SELECTOR",
    "PANIC_SELECTOR",
    "REVERT_PREFIX",
    "CallError",
    "CallFailedError",
    "CallRequest",
    "CallTimeoutError",
    "ExecutionRevertedError",
    "InsufficientFundsError",
    "call_environment",
    "call_gas",
    "call_within",
    "decode_revert_reason",
    "estimate_gas",
    "execute_call",
    "insufficient_funds_for_gas",
    "request_intrinsic_gas",
    "run_request",
]
