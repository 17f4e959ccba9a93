"""
Re-executing transactions with a tracer attached, through the same code as
block import: a block's transactions run one after the other with
L{nodex.chain.execution.apply_transaction} on its parent's state, in the
block's environment (L{nodex.chain.processing.block_environment}); the
traced ones carry a tracer, the others none.  A traced call
(C{debug_traceCall}) runs with L{nodex.chain.execution.run_call}, as
C{eth_call} does.  Nothing is committed to the store: the state is thrown
away afterwards.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from nodex.chain.calls import CallRequest, InsufficientFundsError
from nodex.chain.execution import apply_transaction, run_call
from nodex.chain.processing import BlockHashes, block_environment, sender_of
from nodex.chain.rules import DEFAULT_FORK_SCHEDULE, ForkSchedule
from nodex.chain.errors import InvalidBlockError
from nodex.chain.tracing.calltree import CallTracer
from nodex.chain.tracing.flat import FlatCallTracer
from nodex.chain.tracing.fourbyte import FourByteTracer
from nodex.chain.tracing.limits import (
    CALL_TRACER,
    FLAT_CALL_TRACER,
    FOUR_BYTE_TRACER,
    PRESTATE_TRACER,
    GETH_STRUCT_LOGGER,
    STRUCT_LOGGER,
    TraceBudget,
    TraceConfig,
    TraceError,
)
from nodex.chain.tracing.prestate import PrestateTracer
from nodex.chain.tracing.run import TracedRun
from nodex.chain.tracing.gethlog import GethStructLogTracer
from nodex.chain.tracing.structlog import StructLogTracer
from nodex.evm.environment import BlockEnvironment
from nodex.evm.tracing import Tracer
from nodex.state.overrides import apply_overrides
from nodex.state.state import State
from nodex.structures.blocks import Block
from nodex.structures.errors import InvalidTransactionError
from nodex.structures.transactions import Transaction


class ResultTracer(Tracer, Protocol):
    """
    A tracer that gives a JSON value for the run it watched.
    """

    def result(self, run: TracedRun) -> Any:
        """
        The trace of C{run}.
        """


@dataclass(frozen=True)
class TracedTransaction:
    """
    One traced transaction of a block.

    @ivar trace: the tracer's JSON value.
    @ivar run: what the tracer was told about the transaction.
    """

    transaction: Transaction
    index: int
    trace: Any
    run: TracedRun


def make_tracer(config: TraceConfig, budget: TraceBudget) -> ResultTracer:
    """
    The tracer C{config} names, charging C{budget}.

    @raise TraceError: an unknown tracer name (the RPC edge refuses those first).
    """
    name = config.tracer
    if name == STRUCT_LOGGER:
        return StructLogTracer(config, budget)
    if name == GETH_STRUCT_LOGGER:
        return GethStructLogTracer(config, budget)
    if name == CALL_TRACER:
        return CallTracer(config, budget)
    if name == FLAT_CALL_TRACER:
        return FlatCallTracer(budget)
    if name == PRESTATE_TRACER:
        return PrestateTracer(config, budget)
    if name == FOUR_BYTE_TRACER:
        return FourByteTracer(budget)
    raise TraceError(f"unknown tracer {name!r}")


def _pre_state(state: State, committed: dict[bytes, bytes]) -> State:
    """
    Commit C{state} (in memory) and open a second state at its root, for a
    tracer that reads what the accounts held before the traced transaction.

    @param committed: the nodes of earlier commits of this replay; updated.
    """
    root, nodes = state.commit()
    committed.update(nodes)
    read_node, read_code, codes = state.read_node, state.read_code, state.new_codes
    return State(
        lambda node_hash: committed.get(node_hash) or read_node(node_hash),
        lambda code_hash: codes.get(code_hash) or read_code(code_hash),
        root,
    )


def trace_block(
    block: Block,
    state: State,
    chain_id: int,
    block_hashes: BlockHashes,
    new_tracer: Callable[[], ResultTracer | None],
    budget: TraceBudget,
    only: int | None = None,
    forks: ForkSchedule = DEFAULT_FORK_SCHEDULE,
) -> list[TracedTransaction]:
    """
    Replay C{block} on C{state}, its parent's state, tracing its transactions.

    @param new_tracer: makes the tracer of one transaction.
    @param only: the index of the one transaction to trace (the replay
        stops after it), or L{None} for all.
    @param forks: the network's schedule, which chooses the block's rule set.
    @return: the traced transactions in block order.
    @raise TraceError: a transaction cannot be replayed (the block is not valid
        on this state), or a limit was reached (L{TraceLimitError}).
    """
    header = block.header
    environment = block_environment(header, chain_id, block_hashes, forks)
    traced: list[TracedTransaction] = []
    committed: dict[bytes, bytes] = {}
    gas_used = 0
    for index, transaction in enumerate(block.transactions):
        if only is not None and index > only:
            break
        budget.check_time()
        tracer = new_tracer() if only is None or index == only else None
        if tracer is not None and getattr(tracer, "needs_pre_state", False):
            tracer.pre_state = _pre_state(state, committed)  # type: ignore[attr-defined]
        try:
            # A stored block: an impersonation marker in it was accepted
            # when the block was (a dev chain's own block).
            sender = sender_of(transaction, index, chain_id, impersonation=True)
            result = apply_transaction(state, environment, transaction, sender, gas_used, tracer=tracer)
        except (InvalidBlockError, InvalidTransactionError) as exc:
            raise TraceError(f"cannot replay transaction {index} of block {header.number}: {exc}") from exc
        gas_used += result.gas_used
        if tracer is None:
            continue
        run = TracedRun(
            sender=sender,
            to=transaction.to or None,
            value=transaction.value,
            input=transaction.data,
            gas=transaction.gas,
            gas_used=result.gas_used,
            output=result.output,
            error=result.error,
            contract_address=result.contract_address,
            state=state,
            coinbase=header.coinbase,
            block_hash=header.hash,
            block_number=header.number,
            tx_hash=transaction.hash,
            position=index,
            reverted=result.reverted,
        )
        traced.append(TracedTransaction(transaction, index, tracer.result(run), run))
    return traced


def trace_call(
    state: State,
    environment: BlockEnvironment,
    request: CallRequest,
    config: TraceConfig,
    tracer: ResultTracer,
    gas_cap: int,
) -> Any:
    """
    Run a call on C{state} (a block's state, thrown away afterwards) with
    C{tracer} attached, after the config's state overrides, as C{eth_call}
    runs it.

    @param gas_cap: the network's ceiling on a call's gas.
    @return: the tracer's value.
    @raise InsufficientFundsError: the sender cannot pay the value.
    @raise nodex.state.overrides.StateOverrideError: a bad override set.
    @raise TraceError: the gas does not cover the intrinsic gas; a limit.
    """
    apply_overrides(state, config.state_overrides)
    gas = gas_cap if request.gas is None else min(request.gas, gas_cap)
    if request.value and state.get_balance(request.sender) < request.value:
        raise InsufficientFundsError()
    if getattr(tracer, "needs_pre_state", False):
        tracer.pre_state = _pre_state(state, {})  # type: ignore[attr-defined]
    try:
        result = run_call(
            state, environment, request.sender, request.to, request.data, request.value, gas,
            request.gas_price, request.access_list, tracer=tracer,
        )
    except InvalidTransactionError as exc:
        raise TraceError(str(exc)) from exc
    created = None
    if request.to is None and tracer is not None:
        created = getattr(getattr(tracer, "root", None), "to", None)
    run = TracedRun(
        sender=request.sender,
        to=request.to,
        value=request.value,
        input=request.data,
        gas=gas,
        gas_used=result.gas_used,
        output=result.output,
        error=result.error,
        contract_address=created,
        state=state,
        coinbase=environment.coinbase,
        block_hash=None,
        block_number=environment.number,
        tx_hash=None,
        position=None,
        reverted=result.reverted,
    )
    return tracer.result(run)


__all__ = ["ResultTracer", "TracedTransaction", "make_tracer", "trace_block", "trace_call"]
