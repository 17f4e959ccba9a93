"""
The ways an EVM frame can stop other than by running off its code.

L{Halt} and its subclasses are raised inside the interpreter and caught at
the frame boundary (they never leave L{nodex.evm} as exceptions; a finished
frame carries one in its C{error}): L{Stop} is a normal end (STOP, RETURN,
SELFDESTRUCT), L{Revert} keeps the frame's remaining gas, and every
L{ExceptionalHalt} consumes all of it.  They are control flow, not
L{nodex.errors.NodexError}s: problems with the state surface as
L{nodex.state.errors.StateError}.
"""


class Halt(Exception):
    """
    Control flow: the current frame stops executing.
    """


class Stop(Halt):
    """
    The frame ended normally (STOP, RETURN, SELFDESTRUCT or the end of code).
    """


class Revert(Halt):
    """
    REVERT: the frame's changes are undone but its remaining gas is returned.
    """


class ExceptionalHalt(Halt):
    """
    The frame failed: its changes are undone and all its gas is consumed.
    """

    description = "exceptional halt"


class OutOfGasError(ExceptionalHalt):
    """
    Not enough gas for the next step.
    """

    description = "out of gas"


class StackUnderflowError(ExceptionalHalt):
    """
    An instruction needs more items than the stack holds.
    """

    description = "stack underflow"


class StackOverflowError(ExceptionalHalt):
    """
    The stack would grow beyond 1024 items.
    """

    description = "stack limit reached 1024"


class InvalidOpcodeError(ExceptionalHalt):
    """
    The byte at the program counter is not an instruction (or is INVALID).
    """

    description = "invalid opcode"


class InvalidJumpDestError(ExceptionalHalt):
    """
    JUMP or JUMPI to a position that is not a JUMPDEST.
    """

    description = "invalid jump destination"


class WriteInStaticContextError(ExceptionalHalt):
    """
    A state-modifying instruction inside a STATICCALL.
    """

    description = "write protection"


class OutOfBoundsReadError(ExceptionalHalt):
    """
    RETURNDATACOPY beyond the end of the return data.
    """

    description = "return data out of bounds"


class InvalidContractPrefixError(ExceptionalHalt):
    """
    A creation returned code starting with 0xEF (EIP-3541).
    """

    description = "invalid code: must not begin with 0xef"


class AddressCollisionError(ExceptionalHalt):
    """
    A transaction creates a contract where an account with code, nonce or storage already is.
    """

    description = "contract address collision"


class PrecompileFailedError(ExceptionalHalt):
    """
    A precompiled contract refused its input.
    """

    description = "precompile failed"
