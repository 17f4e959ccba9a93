"""
A message and the frame that executes it.

A L{Message} is what a transaction or a CALL/CREATE asks for; an L{Evm} is
the running frame: program counter, stack, memory, gas, and what it will hand
back to its parent (output, logs, refund, accounts to delete).
"""

from typing import TYPE_CHECKING, Any

from nodex.evm.cancellation import CURRENT_CANCELLATION
from nodex.primitives import Address

if TYPE_CHECKING:
    # Only for annotations: the environment imports the rule sets, which
    # import the instructions, which import this module.
    from nodex.evm.environment import BlockEnvironment, TransactionEnvironment
    from nodex.evm.forks import Fork
    from nodex.evm.tracing import Tracer
    from nodex.state.state import State


class Message:
    """
    A request to run code: a call, or a creation when C{is_create}.

    @ivar caller: the address CALLER returns.
    @ivar target: the called address, or L{None} for a creation.
    @ivar current_target: the account whose storage and balance the code uses
        (the new contract's address for a creation).
    @ivar gas: the gas the frame starts with.
    @ivar value: the wei transferred (or, for DELEGATECALL, CALLVALUE).
    @ivar data: the calldata (empty for a creation).
    @ivar code_address: the account whose code runs (a precompile is looked up by it).
    @ivar code: the code to run (the initcode for a creation).
    @ivar depth: 0 for the transaction's own message.
    @ivar should_transfer_value: whether C{value} moves from caller to current_target.
    @ivar is_static: whether state changes are forbidden.
    """

    __slots__ = (
        "caller",
        "target",
        "current_target",
        "gas",
        "value",
        "data",
        "code_address",
        "code",
        "depth",
        "should_transfer_value",
        "is_static",
    )

    def __init__(
        self,
        caller: Address,
        target: Address | None,
        current_target: Address,
        gas: int,
        value: int,
        data: bytes,
        code_address: Address | None,
        code: bytes,
        depth: int,
        should_transfer_value: bool = True,
        is_static: bool = False,
    ) -> None:
        self.caller = caller
        self.target = target
        self.current_target = current_target
        self.gas = gas
        self.value = value
        self.data = data
        self.code_address = code_address
        self.code = code
        self.depth = depth
        self.should_transfer_value = should_transfer_value
        self.is_static = is_static

    @property
    def is_create(self) -> bool:
        """
        Whether the message creates a contract.
        """
        return self.target is None


UNBOUNDED_MARGIN = 2**256
"""L{Evm.margin} of a frame that made no SSTORE and no subcall, and
L{ExecutionContext.call_margin} of a transaction whose frame made no subcall."""


class ExecutionContext:
    """
    What every frame of one transaction shares.

    @ivar state: the world state the frames change.
    @ivar block: the block environment.
    @ivar tx: the transaction environment.
    @ivar tracer: the attached tracer, or L{None}.
    @ivar fork: the rule set (the block's), read once per frame.
    @ivar limit_dependent: set once something happened whose outcome could
        differ with more gas: the GAS instruction ran (other than as the gas
        argument of the call right after it), or a frame halted
        exceptionally (out of gas among the reasons).  While it is unset,
        the same message given more gas runs the same way to the same
        output (L{nodex.chain.calls.call_within}).
    @ivar call_margin: the least, over the subframes the transaction's own
        frame (depth 0) ran, of how much less gas that frame could have had
        and still hand the subframe enough to run as it did
        (L{nodex.evm.instructions.system.subframe_tolerance});
        L{UNBOUNDED_MARGIN} without subframes; -1 once a frame burnt gas in
        an amount that depends on the gas left (a CREATE whose address was
        taken: with less gas it burns less, and its frame goes on with more
        than its shift implies).  Kept apart from that frame's
        own L{Evm.margin}: running short in the transaction's frame fails the
        transaction, whereas a subframe run short may fail and be survived
        (L{nodex.chain.calls.estimate_gas}).
    @ivar cancellation: what tells the interpreter to stop (L{None}: never),
        the L{nodex.evm.cancellation.CURRENT_CANCELLATION} of the context
        that made this one.
    """

    __slots__ = (
        "state", "block", "tx", "tracer", "fork", "pending_step", "limit_dependent", "call_margin", "cancellation",
    )

    def __init__(
        self,
        state: "State",
        block: "BlockEnvironment",
        tx: "TransactionEnvironment",
        tracer: "Tracer | None" = None,
    ) -> None:
        self.state = state
        self.block = block
        self.fork: "Fork" = block.fork
        self.tx = tx
        self.tracer = tracer
        # A traced CALL or CREATE step waiting for its cost to be known.
        self.pending_step: tuple[Any, ...] | None = None
        self.limit_dependent = False
        self.call_margin = UNBOUNDED_MARGIN
        # Set by the service that runs the transaction, if it may be cancelled.
        self.cancellation = CURRENT_CANCELLATION.get()


class Evm:
    """
    One executing frame.

    The instruction functions read and write these attributes directly; the
    stack holds plain C{int} words (top last) and memory is a C{bytearray}
    whose length is always a multiple of 32.

    C{margin} is how much less gas the frame could have started with and
    still have run every instruction as it did, up to its last (whose gas
    left bounds it too, which its parent adds): the least of its gas left
    beyond the 2,300 each SSTORE needs (EIP-2200), of its gas left after
    each CALL-family or CREATE instruction's own cost (before the subframe's
    share), and, below the transaction's frame, of what each subframe
    tolerates (L{nodex.evm.instructions.system.subframe_tolerance}; the
    transaction's frame keeps those in L{ExecutionContext.call_margin}).
    Running the frame with up to C{margin} less gas, each subframe is handed less by at most what it
    tolerates, so every frame runs the same instructions and hands back
    its gas less the same shift; this holds only while no frame read GAS
    or halted exceptionally (L{ExecutionContext.limit_dependent}).
    """

    __slots__ = (
        "pc",
        "stack",
        "memory",
        "code",
        "valid_jump_destinations",
        "gas_left",
        "message",
        "context",
        "state",
        "output",
        "return_data",
        "logs",
        "refund_counter",
        "accounts_to_delete",
        "error",
        "push_values",
        "margin",
    )

    def __init__(
        self,
        message: Message,
        context: ExecutionContext,
        code: bytes,
        valid_jump_destinations: frozenset[int],
    ) -> None:
        self.pc = 0
        self.stack: list[int] = []
        self.memory = bytearray()
        self.code = code
        self.valid_jump_destinations = valid_jump_destinations
        self.gas_left = message.gas
        self.message = message
        self.context = context
        self.state = context.state
        self.output = b""
        self.return_data = b""
        self.logs: list[Any] = []
        self.refund_counter = 0
        self.accounts_to_delete: set[Address] = set()
        self.error: Exception | None = None
        self.push_values: list[int | None] = []
        self.margin = UNBOUNDED_MARGIN
