"""
LOG0 to LOG4: append a log record to the frame.
"""

from collections.abc import Callable

from nodex.evm.errors import WriteInStaticContextError
from nodex.evm.frame import Evm
from nodex.evm.gas import GAS_LOG, GAS_LOG_DATA, GAS_LOG_TOPIC
from nodex.evm.memory import charge_gas, expand_memory, read_memory


def make_log(num_topics: int) -> Callable[[Evm], None]:
    """
    The LOGn instruction with C{num_topics} topics.

    A log is kept as C{(address, topics, data)} with 32-byte topics; it
    reaches the transaction's receipt only if every enclosing frame succeeds.
    """

    def log_n(evm: Evm) -> None:
        # STACK
        stack = evm.stack
        start = stack.pop()
        size = stack.pop()
        topics = tuple(stack.pop().to_bytes(32, "big") for _ in range(num_topics))
        # GAS
        charge_gas(evm, GAS_LOG + GAS_LOG_DATA * size + GAS_LOG_TOPIC * num_topics)
        expand_memory(evm, start, size)
        if evm.message.is_static:
            raise WriteInStaticContextError
        # OPERATION
        evm.logs.append((evm.message.current_target, topics, read_memory(evm, start, size)))
        # PROGRAM COUNTER
        evm.pc += 1

    log_n.__name__ = f"log{num_topics}"
    log_n.__doc__ = f"LOG{num_topics}: record a log with {num_topics} topics and a memory range as data."
    return log_n
