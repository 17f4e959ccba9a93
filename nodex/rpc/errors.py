"""
The JSON-RPC errors of the RPC edge, and the one table that turns the node's
exceptions into JSON-RPC error codes.

The standard codes come from txjsonrpc-ng (which takes them from the XML-RPC
fault interoperability list, the same numbers JSON-RPC 2.0 uses), and every
L{RPCError} is also a txjsonrpc-ng C{Fault}, so code written against that
library's error type sees C{faultCode} and C{faultString} as it expects.
"""

from typing import Any

from twisted.logger import Logger
from twisted.python.failure import Failure
from txjsonrpc_ng.jsonrpclib import (
    INTERNAL_ERROR,
    INVALID_JSONRPC,
    INVALID_METHOD_PARAMS,
    METHOD_NOT_CALLABLE,
    METHOD_NOT_FOUND,
    NOT_WELLFORMED_ERROR,
    Fault,
)

from nodex.errors import NodexError
from nodex.api.errors import (
    AccountExistsError,
    BlockNotFoundError,
    CallError,
    CallTimeoutError,
    DevChainInputError,
    ExecutionRevertedError,
    FilterNotFoundError,
    InvalidBanError,
    InvalidPrivateKeyError,
    KeyExportRefusedError,
    KeyfileError,
    LocalWalletOffError,
    LogLimitError,
    LogQueryError,
    ServerBusyError,
    StateOverrideError,
    SubscriptionLimitError,
    TraceError,
    TraceQueryError,
    TransactionRejectedError,
    TypedDataError,
    UnknownAccountError,
    WorkSubmissionError,
    UnlockRefusedError,
    UnlockThrottledError,
    WrongPassphraseError,
)

PARSE_ERROR = NOT_WELLFORMED_ERROR
"""-32700: the body is not JSON."""
INVALID_REQUEST = INVALID_JSONRPC
"""-32600: the JSON is not a valid request object."""
INVALID_PARAMS = INVALID_METHOD_PARAMS
"""-32602: a parameter does not decode."""
WALLET_DISABLED = METHOD_NOT_CALLABLE
"""-32604: the local wallet feature is off (reference §5.1)."""
LIMIT_EXCEEDED = -32011
"""Time or response-size limit of reference §1.3."""

__all__ = [
    "ERROR_CODES",
    "GETH_REVERTED",
    "REVERTED",
    "revert_error",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "LIMIT_EXCEEDED",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "WALLET_DISABLED",
    "InternalError",
    "InvalidParamsError",
    "InvalidRequestError",
    "LimitExceededError",
    "MethodNotFoundError",
    "ParseError",
    "RPCError",
    "WalletDisabledError",
    "rpc_error_for",
]

log = Logger()


class RPCError(NodexError, Fault):
    """
    An error answered to a JSON-RPC client: a code, a message and, for EVM
    reverts, C{data}.

    @ivar code: the JSON-RPC error code.
    @ivar message: the human-readable message.
    @ivar data: the optional C{error.data} member (already a JSON value).
    """

    code: int = INTERNAL_ERROR

    def __init__(self, message: str, data: Any = None, code: int | None = None) -> None:
        """
        @param message: what the client reads.
        @param data: the C{error.data} member, if any.
        @param code: a code other than the class's own.
        """
        if code is not None:
            self.code = code
        Fault.__init__(self, self.code, message)
        self.message = message
        self.data = data

    def __str__(self) -> str:
        return self.message

    def to_json(self) -> dict[str, Any]:
        """
        The C{error} member of a JSON-RPC response.
        """
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class ParseError(RPCError):
    """
    The body is not well-formed JSON.
    """

    code = PARSE_ERROR


class InvalidRequestError(RPCError):
    """
    The JSON is not a valid JSON-RPC 2.0 request (or batch).
    """

    code = INVALID_REQUEST


class MethodNotFoundError(RPCError):
    """
    No such method, or not available on this node.
    """

    code = METHOD_NOT_FOUND


class InvalidParamsError(RPCError):
    """
    A parameter is missing, extra, or does not decode as its wire type.
    """

    code = INVALID_PARAMS


class InternalError(RPCError):
    """
    Something went wrong inside the node; details are only logged.
    """

    code = INTERNAL_ERROR


class WalletDisabledError(RPCError):
    """
    A C{personal_*} method on a node whose local wallet is off.
    """

    code = WALLET_DISABLED


class LimitExceededError(RPCError):
    """
    A request ran out of time or its answer out of size.
    """

    code = LIMIT_EXCEEDED


ERROR_CODES: dict[type[Exception], int] = {
    TransactionRejectedError: -32010,
    BlockNotFoundError: -32600,
    UnknownAccountError: INVALID_METHOD_PARAMS,
    CallError: -32000,
    ExecutionRevertedError: -32015,
    CallTimeoutError: LIMIT_EXCEEDED,
    StateOverrideError: INVALID_METHOD_PARAMS,
    LogQueryError: INVALID_METHOD_PARAMS,
    LogLimitError: -32012,
    FilterNotFoundError: -32000,
    InvalidBanError: INVALID_METHOD_PARAMS,
    SubscriptionLimitError: LIMIT_EXCEEDED,
    ServerBusyError: LIMIT_EXCEEDED,
    WorkSubmissionError: -33000,
    LocalWalletOffError: INVALID_METHOD_PARAMS,
    InvalidPrivateKeyError: INVALID_METHOD_PARAMS,
    TypedDataError: INVALID_METHOD_PARAMS,
    WrongPassphraseError: -32000,
    UnlockRefusedError: -32000,
    UnlockThrottledError: -32000,
    KeyExportRefusedError: -32000,
    AccountExistsError: -32000,
    KeyfileError: -32000,
    TraceError: -32000,
    TraceQueryError: INVALID_METHOD_PARAMS,
    DevChainInputError: INVALID_METHOD_PARAMS,
}
"""
Exceptions of the lower layers and the JSON-RPC code each becomes.  The
issues that add services add their exception classes here (for example the
transaction pool's rejections map to -32010); an exception's message becomes
the JSON-RPC message.
"""


REVERTED = -32015
"""The code of a call that reverted (reference §5.1)."""

GETH_REVERTED = 3
"""geth's code of a revert: the Ethereum conventions' (DESIGN §6), and the only
one with which web3.py 8 shows the reason."""


def revert_error(exc: ExecutionRevertedError, code: int = REVERTED, geth_message: bool = False) -> RPCError:
    """
    The answer of a revert: C{code} (-32015 by default, or the configured
    C{rpc.revert_error_code}; the Ethereum conventions give geth's 3), the
    message of DESIGN §1 or geth's, and the revert payload as C{data}
    whatever its shape (reasons, custom errors and panics are decoded from
    it by ethers, viem and web3.py).
    """
    message = exc.geth_message if geth_message else str(exc)
    return RPCError(message, data="0x" + exc.data.hex(), code=code)


def rpc_error_for(exc: BaseException) -> RPCError:
    """
    Translate an exception raised while serving a request into the error the
    client sees.

    L{RPCError}s pass through; classes in L{ERROR_CODES} (or their
    subclasses) keep their message under the mapped code; anything else is
    logged with its traceback and answered as a bare internal error, so that
    no detail of the node leaks to the client.
    """
    if isinstance(exc, RPCError):
        return exc
    for cls in type(exc).__mro__:
        code = ERROR_CODES.get(cls)
        if code is not None:
            return RPCError(str(exc), code=code)
    log.failure("unexpected error in an RPC method", Failure(exc))
    return InternalError("internal error")
