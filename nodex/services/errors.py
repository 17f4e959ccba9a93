"""
Errors of the services (L5); the RPC edge maps each class to a code in one table.
"""

# The pool's refusals are raised by the admission rules of L4
# (nodex.chain.admission) and named here too, beside the other errors the
# RPC edge maps.
from nodex.chain.errors import InvalidTransactionRejectedError, TransactionRejectedError  # noqa: F401
from nodex.errors import NodexError


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
