"""
The errors the edges map: the services' own (L5), and those of the layers below that
reach the edges, re-exported here so that the edges find every one in one place
(the RPC edge maps each class to a code in one table, L{nodex.rpc.errors}).
"""

# Those of L4 and below are raised there (the pool's refusals by the admission rules
# of nodex.chain.admission) and named here too, beside the services' own.
from nodex.chain.bridge import BridgeStateError
from nodex.chain.calls import CallError, CallTimeoutError, ExecutionRevertedError, InsufficientFundsError
from nodex.chain.errors import InvalidTransactionRejectedError, TransactionRejectedError
from nodex.chain.logs.search import FilterNotFoundError, LogLimitError, LogQueryError
from nodex.chain.tracing.limits import TraceError, TraceLimitError, TraceQueryError
from nodex.errors import NodexError
from nodex.reputation.errors import InvalidBanError
from nodex.state.overrides import StateOverrideError
from nodex.wallet.errors import (
    InvalidPrivateKeyError,
    KeyfileError,
    TypedDataError,
    WalletError,
    WrongPassphraseError,
)

__all__ = [
    "AccountExistsError",
    "AccountLockedError",
    "BlockNotFoundError",
    "BridgeStateError",
    "CallError",
    "CallTimeoutError",
    "DevChainInputError",
    "ExecutionRevertedError",
    "FilterNotFoundError",
    "InsufficientFundsError",
    "InvalidBanError",
    "InvalidPrivateKeyError",
    "InvalidTransactionRejectedError",
    "KeyExportRefusedError",
    "KeyfileError",
    "LocalWalletOffError",
    "LogLimitError",
    "LogQueryError",
    "ServerBusyError",
    "ServiceError",
    "StateOverrideError",
    "SubscriptionLimitError",
    "TraceError",
    "TraceLimitError",
    "TraceQueryError",
    "TransactionRejectedError",
    "TypedDataError",
    "UnknownAccountError",
    "UnlockRefusedError",
    "UnlockThrottledError",
    "WalletError",
    "WorkSubmissionError",
    "WrongPassphraseError",
]


class ServiceError(NodexError):
    """
    Base class of the errors the services raise deliberately.
    """


class UnknownAccountError(ServiceError):
    """
    The node holds no unlocked key for the address asked to sign.
    """


class BlockNotFoundError(ServiceError):
    """
    A block named by number, hash or tag is not known (or not canonical when
    that was required).
    """


class SubscriptionLimitError(ServiceError):
    """
    A subscription would pass a limit on how many may exist (per connection
    or for the whole node).
    """


class ServerBusyError(ServiceError):
    """
    Work the node refuses at once because too much of its kind already
    waits (the reader threads' queue, key derivations); the client may try
    again shortly (RPC code -32011).
    """


class WorkSubmissionError(ServiceError):
    """
    A merged-mining or C{eth_submitWork} submission was refused before its
    block was imported: malformed Bitcoin data, work the node does not know,
    or a seal without enough work (RPC code -33000, reference §3.5).

    @ivar detail: what exactly was wrong, when the message is the
        reference's fixed text (L{None} otherwise).
    """

    def __init__(self, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = detail


class LocalWalletOffError(ServiceError):
    """
    A signing request (C{eth_sign}, C{eth_sendTransaction} ...) on a node
    whose local wallet is off (reference §6).
    """

    def __init__(self) -> None:
        super().__init__("Local wallet is disabled in this node")


class UnlockRefusedError(ServiceError):
    """
    Unlocking is refused: the RPC server listens beyond the loopback
    interface and the configuration does not allow unlocking there.
    """


class UnlockThrottledError(ServiceError):
    """
    An attempt to open a keystore key is refused for now: wrong passphrases
    for the account came just before, or another attempt for it runs.
    """


class KeyExportRefusedError(ServiceError):
    """
    C{personal_dumpRawKey} on a node whose configuration gives out no keys.
    """


class AccountExistsError(ServiceError):
    """
    A key imported into the keystore is already there.
    """


class AccountLockedError(UnknownAccountError):
    """
    The keystore holds the address's key, but it is not unlocked (or its
    unlock has expired).
    """


class DevChainInputError(ServiceError):
    """
    A dev-chain method's argument that is well-formed but not acceptable
    (a timestamp not after the head's, a gas limit too low, a malformed
    state snapshot, a mined transaction to drop); answered -32602.
    """
