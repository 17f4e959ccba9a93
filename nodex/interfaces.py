"""
The zope interfaces through which the edges (RPC, P2P, manhole) see the
node's services (L5).  The edges depend only on these; the composition root
(L{nodex.tap}) hands them the objects that provide them.

Every method that may touch storage or the network returns a Deferred.
"""

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from twisted.internet.defer import Deferred
from zope.interface import Attribute, Interface

from nodex.chain.bridge import BridgeState, BridgeStateError
from nodex.chain.calls import (
    CallError,
    CallRequest,
    CallTimeoutError,
    ExecutionRevertedError,
    InsufficientFundsError,
)
from nodex.chain.aside import BlockSource, SourceKind, from_peer
from nodex.chain.importer import ChainEvent, ChainHead, Imported, ImportOutcome, ImportResult, Unused
from nodex.chain.making import BlockRequest, LoneAdmission
from nodex.chain.tracing.limits import (
    CALL_TRACER,
    GETH_STRUCT_LOGGER,
    PRESTATE_TRACER,
    STRUCT_LOGGER,
    STRUCT_LOGGERS,
    TRACER_NAMES,
    TraceConfig,
    TraceError,
    TraceLimitError,
    TraceQueryError,
)
from nodex.chain.logsearch import (
    FilterNotFoundError,
    LogEntry,
    LogFilter,
    LogLimitError,
    LogQueryError,
)
from nodex.primitives import Address, Hash32
from nodex.services.bans import InvalidBanError
from nodex.services.errors import (
    AccountExistsError,
    AccountLockedError,
    DevChainInputError,
    BlockNotFoundError,
    InvalidTransactionRejectedError,
    KeyExportRefusedError,
    LocalWalletOffError,
    ServerBusyError,
    ServiceError,
    SubscriptionLimitError,
    TransactionRejectedError,
    UnknownAccountError,
    WorkSubmissionError,
    UnlockRefusedError,
    UnlockThrottledError,
)
from nodex.services.scoring import PeerEvent, ScoringRecord
from nodex.state.overrides import AccountOverride, StateOverrideError, StateOverrides
from nodex.structures.blocks import Block
from nodex.structures.headers import Header
from nodex.structures.receipts import Receipt
from nodex.structures.transactions import Transaction
from nodex.wallet.errors import (
    InvalidPrivateKeyError,
    KeyfileError,
    TypedDataError,
    WalletError,
    WrongPassphraseError,
)

WIRE_PROTOCOL_VERSION = 63
"""
The version of nodex's own peer-to-peer wire protocol (DESIGN §5), which
C{eth_protocolVersion} reports.  It lives here so that the P2P package and the
composition root share it without the RPC edge importing P2P.
"""


COMPAT_NAMES = ("reference", "ethereum")
"""The values of C{compat} (C{--compat}): the two sets of conventions (DESIGN §6)."""


@dataclass(frozen=True)
class Conventions:
    """
    Which answers the node gives where the specification and the reference
    node differ from geth, Anvil and Hardhat (DESIGN §6; every difference
    is listed in C{docs/compatibility.md}): C{"reference"} (the default)
    or C{"ethereum"} (C{--compat ethereum}, C{compat = "ethereum"}).

    The composition root makes one and hands it to every service and
    method provider whose answers depend on it; each asks L{ethereum}.
    """

    name: str = "reference"

    def __post_init__(self) -> None:
        if self.name not in COMPAT_NAMES:
            raise ValueError(f"unknown conventions {self.name!r}: want one of {', '.join(COMPAT_NAMES)}")

    @property
    def ethereum(self) -> bool:
        """
        Whether the node answers as geth and Anvil do.
        """
        return self.name == "ethereum"


REFERENCE_CONVENTIONS = Conventions("reference")
"""The default conventions: the specification's, then the reference node's."""

ETHEREUM_CONVENTIONS = Conventions("ethereum")
"""The conventions Ethereum's tools expect (geth's and Anvil's answers)."""


@dataclass(frozen=True)
class PeerInfo:
    """
    One connected peer, as C{net_peerList} shows it.

    @ivar node_id: its 64-byte node id.
    @ivar host: the host name this node dialed (outbound), else the empty string.
    @ivar ip: its IP address.
    @ivar port: the TCP port of the connection.
    """

    node_id: bytes
    host: str
    ip: str
    port: int


PEER_URL_SCHEME = "nodex://"
"""The scheme of a peer's URL: C{nodex://<node id, 128 hex digits>@<host>:<port>}."""


@dataclass(frozen=True)
class PeerURL:
    """
    A peer's address, with its node id when known: what C{--peer},
    C{p2p.peers}, C{p2p.static_peers} and C{admin_addPeer} accept
    (C{HOST:PORT}, or the URL C{admin_nodeInfo} shows under C{enode}).
    """

    host: str
    port: int
    node_id: bytes | None = None

    @classmethod
    def parse(cls, text: str) -> "PeerURL":
        """
        Read C{HOST:PORT}, C{[IPV6]:PORT} or C{nodex://NODEID@HOST:PORT}.

        @raise ValueError: none of these.
        """
        node_id = None
        rest = text.strip()
        if rest.lower().startswith(PEER_URL_SCHEME):
            digits, at, rest = rest[len(PEER_URL_SCHEME) :].partition("@")
            if not at or len(digits) != 128:
                raise ValueError(f"{text!r}: want nodex://<node id of 128 hex digits>@HOST:PORT")
            try:
                node_id = bytes.fromhex(digits)
            except ValueError:
                raise ValueError(f"{text!r}: the node id is not hexadecimal") from None
        host, colon, port = rest.rpartition(":")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
            if ":" not in host:
                raise ValueError(f"{text!r}: bad IPv6 address")
        if not colon or not host or not all(c.isalnum() or c in ".-:" for c in host):
            raise ValueError(f"{text!r}: want HOST:PORT or nodex://NODEID@HOST:PORT")
        if not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"{text!r}: want a port from 1 to 65535")
        return cls(host, int(port), node_id)

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        if self.node_id is None:
            return f"{host}:{self.port}"
        return f"{PEER_URL_SCHEME}{self.node_id.hex()}@{host}:{self.port}"


@dataclass(frozen=True)
class NodeInfo:
    """
    This node on the peer network (C{admin_nodeInfo}).

    @ivar listen_host: the address the P2P server is bound to (empty when it does not listen).
    @ivar listen_port: its port (0 when it does not listen).
    """

    node_id: bytes
    listen_host: str
    listen_port: int
    network_id: int
    genesis_hash: bytes
    head_hash: bytes
    head_number: int
    total_difficulty: int
    protocol_version: int
    encryption: bool


@dataclass(frozen=True)
class PeerDetail:
    """
    One established peer in detail (C{admin_peers}).

    @ivar host: the name or address this node dialed (outbound), else empty.
    @ivar ip: its IP address; @ivar port: the TCP port of the connection.
    @ivar listen_port: the port its hello says it accepts peers on (0: none).
    @ivar head_number: its head as it claims it; @ivar shown_number: the
        highest block it has shown (headers linked to this chain).
    @ivar latency: seconds of its last round trip (handshake, then pings), or L{None}.
    @ivar connected_seconds: how long the connection has lasted.
    @ivar static: a static peer (kept connected, redialed with backoff).
    """

    node_id: bytes
    host: str
    ip: str
    port: int
    listen_port: int
    inbound: bool
    protocol_version: int
    head_hash: bytes
    head_number: int
    total_difficulty: int
    shown_number: int
    latency: float | None
    connected_seconds: float
    static: bool


class IPeerAdmin(Interface):
    """
    The operator's hold on the node's peers (the C{admin} RPC module).
    """

    def node_info() -> "NodeInfo | None":
        """
        This node on the peer network, or L{None} when it has no peer network.
        """

    def peer_details() -> "list[PeerDetail]":
        """
        The established peers, in detail.
        """

    def add_peer(url: PeerURL) -> bool:
        """
        Add a static peer: dialed now and redialed with backoff whenever it
        is not connected, until L{remove_peer}; a URL's node id must be the
        one the peer proves.  Whether the node has a peer network to add it to.
        """

    def remove_peer(url: PeerURL) -> bool:
        """
        Stop keeping a peer: no more redials, its entry forgotten from the
        peer store, and its connection (by node id, else by address) closed.
        Whether there was anything to remove.
        """


class IPeerNetwork(Interface):
    """
    The peer-to-peer side of the node, as the RPC edge sees it.
    """

    def is_listening() -> "Deferred[bool]":
        """
        Whether the node accepts incoming peer connections now.

        @return: a Deferred firing with C{True} while the P2P server listens.
        """

    def peers() -> "list[PeerInfo]":
        """
        The peers whose handshake succeeded and whose connection is open.
        """

    def queue_size() -> int:
        """
        The peer messages received and not yet handled (C{debug_wireProtocolQueueSize}).
        """

    def sync_status() -> "SyncStatus | None":
        """
        The progress of the sync in course, or L{None} when the node is not syncing.
        """




@dataclass(frozen=True)
class TransactionLocation:
    """
    A transaction of the canonical chain and where it sits.
    """

    transaction: Transaction
    block_hash: Hash32
    block_number: int
    index: int


@dataclass(frozen=True)
class BadBlock:
    """
    A block the importer refused (C{debug_getBadBlocks}).

    @ivar reason: the rule it broke.
    """

    block: Block
    reason: str


@dataclass(frozen=True)
class ReceiptView:
    """
    Everything a receipt answer needs, gathered in one read.

    @ivar gas_used: the gas this transaction alone used (its cumulative gas
        minus the previous receipt's).
    @ivar first_log_index: the block-wide index of this receipt's first log.
    @ivar contract_address: the created contract, for a creation.
    @ivar effective_gas_price: what the sender paid per gas.
    """

    receipt: Receipt
    location: TransactionLocation
    gas_used: int
    first_log_index: int
    contract_address: Address | None
    effective_gas_price: int


class IChainService(Interface):
    """
    The chain: blocks, transactions and receipts, their import and the head.
    """

    chain_id = Attribute("The EIP-155 chain id (int).")
    head = Attribute("The current L{ChainHead}; kept in memory, read on the reactor thread.")
    rules = Attribute(
        "The network's L{nodex.chain.rules.ChainRules} (the RPC edge reads the C{safe} and C{finalized} depths)."
    )

    def get_block_by_hash(block_hash: bytes) -> "Deferred[Block | None]":
        """
        Any stored block (canonical or not) by hash, or L{None}.
        """

    def get_block_by_number(number: int) -> "Deferred[Block | None]":
        """
        The canonical block at C{number}, or L{None} above the head.
        """

    def get_header_by_hash(block_hash: bytes) -> "Deferred[Header | None]":
        """
        Any stored header (canonical or not) by hash, or L{None}.
        """

    def get_total_difficulty(block_hash: bytes) -> "Deferred[int | None]":
        """
        The total difficulty up to a stored block, or L{None}.
        """

    def is_canonical(block_hash: bytes) -> "Deferred[bool]":
        """
        Whether a block is on the canonical chain.
        """

    def get_transaction(tx_hash: bytes) -> "Deferred[TransactionLocation | None]":
        """
        A transaction of the canonical chain by hash, or L{None}.
        """

    def get_receipt(tx_hash: bytes) -> "Deferred[ReceiptView | None]":
        """
        The receipt of a canonical transaction, or L{None}.
        """

    def get_block_receipts(block_hash: bytes) -> "Deferred[list[ReceiptView] | None]":
        """
        The receipts of a stored block in transaction order, or L{None}.
        """

    def bad_blocks() -> "list[BadBlock]":
        """
        The last blocks the importer refused since the node started, oldest
        first, each with the rule it broke.
        """

    def import_blocks(blocks: "Sequence[Block]", source: BlockSource) -> "Deferred[list[ImportOutcome]]":
        """
        Import blocks from outside in order (each in its own atomic batch),
        stopping after the first invalid one; a block whose parent is
        unknown is kept aside, one ahead of the clock held until it is due.

        @param source: where they come from (a peer's node id bounds what it
            may have kept aside; a template built here may carry a dev
            chain's impersonation marker, blocks from peers and files never).
        @return: a Deferred firing with an L{ImportOutcome} per block
            imported, kept or refused, the refused one last.
        """

    def add_observer(observer: "Callable[[ChainEvent], None]") -> None:
        """
        Call C{observer} on the reactor thread after every change of the canonical chain.
        """

    def add_side_observer(observer: "Callable[[Block], None]") -> None:
        """
        Call C{observer} on the reactor thread with every valid block stored
        off the canonical chain (C{IMPORTED_NOT_BEST}): the uncle candidates.
        """

    def add_unused_observer(observer: "Callable[[Unused], None]") -> None:
        """
        Call C{observer} on the reactor thread with every block kept aside
        that left without being imported (its parent never came, no room,
        invalid once due).
        """

    def rewind(number: int) -> "Deferred[None]":
        """
        Make the canonical block at C{number} the head, forgetting the blocks above it.
        """


class IChainWriter(Interface):
    """
    The writing half of the chain, as the node's own block makers (the
    miner, the dev chain, the work service) see it: every write goes
    through the one importer on the writer thread.
    """

    head = Attribute("The current L{ChainHead} (reactor thread).")
    rules = Attribute("The network's L{nodex.chain.rules.ChainRules}.")

    def make(request: BlockRequest, small: bool = False) -> "Deferred[Imported]":
        """
        Build the block C{request} asks for on the tip, seal it with the
        built-in solver and store it, in one writer job.

        @return: a Deferred firing with the published step (its C{block}
            L{None} when the request made none).
        """

    def build(request: BlockRequest) -> "Deferred[tuple[Any, Any]]":
        """
        Build the unsealed block C{request} asks for on the tip without
        storing it (the first half of a block sealed elsewhere).

        @return: a Deferred firing with the built block (or the L{nodex.chain.making.Declined}
            answer) and the state it was built on.
        """

    def store_built(block: Block, outcome: Any, state: Any = None) -> "Deferred[ImportOutcome]":
        """
        Store a block L{build} made, once sealed.
        """

    def import_blocks(blocks: "Sequence[Block]", source: BlockSource) -> "Deferred[list[ImportOutcome]]":
        """
        Import blocks from outside (a miner's submission of a template built here, say).
        """

    def rewind(number: int) -> "Deferred[None]":
        """
        Make the canonical block at C{number} the head, deleting the canonical blocks above it.
        """

    def set_rules(rules: Any) -> "Deferred[None]":
        """
        Replace the network's rules for the blocks built and imported from now on.
        """


class IPendingBlock(Interface):
    """
    The block the miner would build now (C{pending}, DESIGN §6).
    """

    def header() -> "Deferred[Header]":
        """
        The pending block's header: the next number, the time the miner
        would stamp, its coinbase, gas limit and difficulty, and the state
        root after the pending transactions (readable through the state
        service while it is the pending block).
        """

    def block() -> "Deferred[Any]":
        """
        The pending block itself (a C{PendingBlock}: its unsealed C{block}
        and the C{receipts} of its transactions).
        """


class IAutoMining(Interface):
    """
    What an automining miner does as a watcher of the pool
    (L{ITransactionPool.watch_for_miner}).
    """

    def transaction_pending(transaction: Transaction, relayed: bool) -> "Deferred[None] | None":
        """
        A transaction became pending; the Deferred returned (a block being
        mined for it) is what the pool's C{add} waits for.
        """

    def include_alone(transaction: Transaction, admission: LoneAdmission) -> "Deferred[Any] | None":
        """
        Admit and mine a transaction sent to an empty pool in one job, or
        decline (L{None}): the Deferred fires with L{None} once it is mined,
        or with the sender's (nonce, balance) when it is not executable yet.
        """


class ITransactionPool(Interface):
    """
    Transactions waiting to be mined.
    """

    def add(transaction: Transaction, relayed: bool = False) -> "Deferred[Hash32]":
        """
        Validate a signed transaction against the head state and keep it.
        C{relayed}: it came from a peer (in C{auto} mode it asks for no
        block of its own, C{docs/p2p.md}).

        @return: a Deferred firing with its hash, or failing with
            L{nodex.services.errors.TransactionRejectedError} (RPC code -32010).
        """

    def get(tx_hash: bytes) -> "Transaction | None":
        """
        A pooled transaction by hash (in memory).
        """

    def pending() -> "list[Transaction]":
        """
        The executable transactions: per sender, consecutive nonces from its state nonce.
        """

    def queued() -> "list[Transaction]":
        """
        The transactions waiting for a nonce gap to close.
        """

    def next_nonce(address: bytes) -> "Deferred[int]":
        """
        The nonce a new transaction of C{address} should carry (state nonce plus its pending ones).
        """

    def add_observer(observer: "Callable[[Transaction], None]") -> None:
        """
        Call C{observer} with each transaction that becomes pending.  The
        observer may return a Deferred: the L{add} that made the transaction
        pending fires only after it has fired.
        """

    def watch_for_miner(automining: IAutoMining) -> None:
        """
        Let an automining miner watch the pool: told first of each pending
        transaction, and offered first each client's transaction sent to an
        empty pool.
        """

    def clear() -> None:
        """
        Drop every pooled transaction (C{evm_revert}, C{evm_reset}).
        """

    def remove(tx_hashes: "Iterable[bytes]") -> None:
        """
        Drop the transactions the miner found invalid on the head state
        (a nonce already used, too little balance for it, a gas price below
        the block's minimum); unknown hashes are ignored.
        """


class IMiner(Interface):
    """
    The block producer.
    """

    coinbase = Attribute("The address credited with fees (bytes, 20).")
    mode = Attribute("The mining mode: auto, interval, manual or off (str).")
    is_mining = Attribute("Whether blocks are produced without being asked (bool).")
    due_now = Attribute("Whether a block can be stamped on the head now, within the network's drift limit (bool).")

    def mine(empty: bool = True) -> "Deferred[Block | None]":
        """
        Build, seal and import one block of pending transactions now; with
        C{empty} false, nothing (L{None}) when none of them can be included.
        """

    def mine_alone(transaction: "Transaction", admission: LoneAdmission) -> "Deferred[Any]":
        """
        Admit C{transaction} with the pool's rules and mine it in a block of
        its own, in one writer job; fires with L{None} once it is mined, or
        with its sender's (nonce, balance) when it is not executable yet.
        """

    def start() -> None:
        """
        Resume automatic mining (C{evm_startMining}).
        """

    def stop() -> None:
        """
        Suspend automatic mining (C{evm_stopMining}).
        """

    def increase_time(seconds: int) -> int:
        """
        Add to the offset applied to the next block's timestamp; return the
        accumulated offset.
        """

    def chain_time() -> int:
        """
        The time the next block would be stamped with before the
        parent-plus-one rule (a set timestamp, or the clock plus the offset).
        """

    def set_chain_time(timestamp: int) -> None:
        """
        Make the next blocks' time go on from C{timestamp} now.
        """


@dataclass(frozen=True)
class MiningWork:
    """
    One unit of mining work (C{mnr_getWork}, C{eth_getWork}).

    @ivar hash_for_merged_mining: what the seal must commit to (also
        C{eth_getWork}'s pow-hash).
    @ivar target: 2^256 / max(difficulty, 3): the largest acceptable
        Bitcoin header hash, as a number.
    @ivar fees: the fees the block pays its coinbase, in wei.
    @ivar notify: whether this work is news to a merged miner (reference §3.5).
    @ivar parent_hash: the hash of the block the work builds on.
    @ivar number: the height of the block being mined.
    @ivar difficulty: its difficulty.
    """

    hash_for_merged_mining: Hash32
    target: int
    fees: int
    notify: bool
    parent_hash: Hash32
    number: int
    difficulty: int


@dataclass(frozen=True)
class SubmittedBlock:
    """
    What became of a submitted seal: the import outcome, and the sealed
    block's hash and number.
    """

    result: ImportResult
    block_hash: Hash32
    number: int


class IWorkService(Interface):
    """
    Work for miners outside the writer, and their sealed blocks (C{docs/mining.md}).
    """

    coinbase = Attribute("The address the templates credit (bytes, 20).")

    def merged_mining_work() -> "Deferred[MiningWork]":
        """
        The current work, with C{notify} set the first time news is handed out.
        """

    def work() -> "Deferred[MiningWork]":
        """
        The current work, C{notify} always false (C{eth_getWork}).
        """

    def submit_bitcoin_block(raw: bytes) -> "Deferred[SubmittedBlock]":
        """
        Seal with a whole serialised Bitcoin block.

        @return: a Deferred failing with L{WorkSubmissionError} (-33000) when
            the block is malformed, names unknown work or has too little work.
        """

    def submit_transaction_ids(header: bytes, coinbase: bytes, ids: "list[bytes]") -> "Deferred[SubmittedBlock]":
        """
        Seal with a header, a coinbase and every transaction id (display order).
        """

    def submit_merkle_branch(
        header: bytes, coinbase: bytes, hashes: "list[bytes]", count: int
    ) -> "Deferred[SubmittedBlock]":
        """
        Seal with a header, a coinbase, its id and its merkle branch (internal order).
        """

    def submit_work(nonce: bytes, pow_hash: bytes) -> "Deferred[bool]":
        """
        Seal with the canonical template and an 8-byte nonce; whether the block was accepted.
        """

    def submit_hashrate(rate: int, client_id: bytes) -> bool:
        """
        Record an external miner's hash rate.
        """

    def hashrate() -> int:
        """
        The node's own measured rate plus the recently submitted rates.
        """

    def network_hashrate() -> "Deferred[int]":
        """
        The network's rate estimated from the last hour's blocks.
        """

    def is_cpu_mining() -> bool:
        """
        Whether the built-in CPU miner is searching seals now.
        """


class IAccounts(Interface):
    """
    The keys the node holds and signs with: the local wallet (development
    keys held in memory, and the keystore's accounts, usable while
    unlocked).

    Every signing method fails with L{LocalWalletOffError} when the wallet
    is off, and with L{UnknownAccountError} for an address whose key the
    node does not hold unlocked.
    """

    enabled = Attribute("Whether the local wallet is on (C{wallet.enabled}).")

    def addresses() -> "list[Address]":
        """
        The wallet's accounts, locked or not, in a stable order
        (C{eth_accounts}): development and seed accounts, then the keystore's.
        """

    def holds(address: bytes) -> bool:
        """
        Whether the node holds an unlocked key for C{address} now.
        """

    def sign_transaction(unsigned: Any, address: bytes) -> "Deferred[Transaction]":
        """
        Sign an unsigned transaction with the key of C{address}.

        @return: a Deferred firing with the signed transaction, or failing
            with L{nodex.services.errors.UnknownAccountError} for an address
            the node holds no unlocked key for.
        """

    def sign_transaction_with_passphrase(unsigned: Any, address: bytes, passphrase: str) -> "Deferred[Transaction]":
        """
        Sign with the keystore key of C{address}, opened with C{passphrase}
        for this one signature (the unlocked state stays as it was).

        @return: a Deferred firing with the signed transaction, or failing
            with L{UnknownAccountError} (no keystore entry) or
            L{WrongPassphraseError}.
        """

    def sign_message(address: bytes, message: bytes) -> "Deferred[bytes]":
        """
        Sign C{message} as C{eth_sign} does (DESIGN §1 prefix).

        @return: a Deferred firing with the 65-byte signature r ‖ s ‖ v.
        """

    def sign_message_with_passphrase(address: bytes, message: bytes, passphrase: str) -> "Deferred[bytes]":
        """
        Sign C{message} as L{sign_message} does, with the keystore key of
        C{address} opened by C{passphrase} for this signature only.
        """

    def recover_message_signer(message: bytes, signature: bytes) -> "Address":
        """
        The address whose key made the 65-byte C{signature} of C{message}
        (the L{sign_message} digest).

        @raise nodex.crypto.SignatureError: no key can be recovered.
        """

    def sign_typed_data(address: bytes, typed_data: Any) -> "Deferred[bytes]":
        """
        Sign EIP-712 typed data (C{eth_signTypedData_v4}).

        @return: a Deferred firing with the 65-byte signature, or failing
            with L{TypedDataError}.
        """

    def new_account(passphrase: str) -> "Deferred[Address]":
        """
        Create a random key, store it in the keystore under C{passphrase}
        and hold it unlocked for the default duration.
        """

    def import_raw_key(private_key: bytes, passphrase: str) -> "Deferred[Address]":
        """
        Store C{private_key} in the keystore under C{passphrase} and hold it
        unlocked for the default duration.

        @return: a Deferred failing with L{InvalidPrivateKeyError} or
            L{AccountExistsError}.
        """

    def new_account_with_seed(seed: str) -> "Deferred[Address]":
        """
        Hold the key Keccak-256(seed) unlocked, in memory only.
        """

    def unlock(address: bytes, passphrase: str, duration: float) -> "Deferred[bool]":
        """
        Open the keystore key of C{address} and hold it for C{duration} seconds.

        @return: a Deferred firing with C{False} when the address has no
            keystore entry, C{True} once unlocked; failing with
            L{WrongPassphraseError} or L{UnlockRefusedError}.
        """

    def lock(address: bytes) -> bool:
        """
        Drop the key of C{address} from memory; whether one was held.
        """

    def dump_raw_key(address: bytes) -> "Deferred[bytes]":
        """
        The private key of C{address}, when held unlocked.

        @return: a Deferred failing with L{UnknownAccountError} otherwise.
        """


class IPeerScoring(Interface):
    """
    Peer reputation and bans as the operator sees them: the C{sco} RPC
    module (reference §3.11).  The P2P layer's side is L{IReputation}.
    """

    def ban_address(address: str) -> "Deferred[None]":
        """
        Ban one IPv4 or IPv6 address, every address a host name resolves to,
        or a CIDR block; existing connections from it are dropped at once.

        @return: a Deferred firing with L{None}, or failing with
            L{InvalidBanError} (-32602) for loopback, the wildcard address,
            malformed input or a host name that does not resolve.
        """

    def unban_address(address: str) -> "Deferred[None]":
        """
        Lift a ban named as L{ban_address} takes it (a block exactly as
        banned); lifting a ban that does not exist is not an error.

        @return: a Deferred firing with L{None}, or failing with L{InvalidBanError}.
        """

    def banned_addresses() -> "list[str]":
        """
        The banned single addresses, then the blocks as C{<address>/<bits>}.
        """

    def peer_records() -> "list[ScoringRecord]":
        """
        The scoring records: by node id (least recently used first), then by IP address.
        """

    def clear_address_record(address: str) -> bool:
        """
        Forget the scoring record of an IP address; whether there was one.
        """

    def clear_node_records(prefix: str) -> int:
        """
        Forget the scoring records of the node ids whose hex form starts
        with C{prefix} (lower-case hex digits); how many there were.
        """

    def ban_node(node_id: bytes) -> bool:
        """
        Ban a node id at run time (C{sco_banNode}); its connections are
        dropped at once.  Whether it was not banned already.
        """

    def unban_node(node_id: bytes) -> bool:
        """
        Lift a node id's ban; whether there was one.
        """

    def banned_nodes() -> "list[str]":
        """
        The banned node ids (128 hex digits each), sorted.
        """

    def trust_node(node_id: bytes, trusted: bool) -> bool:
        """
        Trust a node id at run time (C{admin_addTrustedPeer}) or stop
        trusting it; whether that changed anything.
        """


@dataclass(frozen=True)
class StorageProof:
    """
    One storage slot's value and its proof (EIP-1186).

    @ivar key: the slot as the client gave it.
    @ivar proof: the trie nodes from the storage root down, root first.
    """

    key: int
    value: int
    proof: tuple[bytes, ...]


@dataclass(frozen=True)
class AccountProof:
    """
    An account's fields, their proof against the block's state root, and
    the proofs of the asked storage slots (EIP-1186).
    """

    address: Address
    balance: int
    nonce: int
    code_hash: Hash32
    storage_hash: Hash32
    account_proof: tuple[bytes, ...]
    storage_proofs: tuple[StorageProof, ...]


class IStateService(Interface):
    """
    Reads of the world state at any stored block, and calls against it that
    commit nothing.  Each runs in the reader pool against the block's state
    root; calls are bounded by the gas cap and the per-request time limit.
    """

    call_gas_cap = Attribute("The most gas an eth_call or an estimate may use (int).")

    def get_balance(header: Header, address: bytes) -> "Deferred[int]":
        """
        The balance of C{address} in the state after block C{header}.
        """

    def get_nonce(header: Header, address: bytes) -> "Deferred[int]":
        """
        The nonce of C{address} after block C{header}.
        """

    def get_storage(header: Header, address: bytes, slot: int) -> "Deferred[int]":
        """
        A storage slot of C{address} after block C{header} (zero when absent).
        """

    def get_code(header: Header, address: bytes) -> "Deferred[bytes]":
        """
        The code of C{address} after block C{header} (empty when none).
        """

    def get_proof(header: Header, address: bytes, slots: "list[int]") -> "Deferred[AccountProof]":
        """
        The EIP-1186 proof of an account and some of its slots after block C{header}.
        """

    def call(header: Header, request: CallRequest, overrides: StateOverrides) -> "Deferred[bytes]":
        """
        Run a call on the state after block C{header}, in that block's context.

        @return: a Deferred firing with the return data, or failing with
            L{ExecutionRevertedError} (-32015), L{InsufficientFundsError},
            L{CallError}, L{StateOverrideError} or L{CallTimeoutError}.
        """

    def estimate_gas(header: Header, request: CallRequest, overrides: StateOverrides) -> "Deferred[int]":
        """
        The least gas with which the call succeeds on the state after block
        C{header}, at most the block's gas limit (or the request's gas).

        @return: a Deferred firing with the gas, or failing as L{call} does.
        """

    def create_access_list(header: Header, request: CallRequest, overrides: StateOverrides) -> "Deferred[Any]":
        """
        The EIP-2930 access list the call would want on the state after
        block C{header}, and the gas it uses with it (C{eth_createAccessList}).

        @return: a Deferred firing with an object with C{access_list},
            C{gas_used} and C{error} (the failed call's, or L{None}), or
            failing with L{InsufficientFundsError}, L{CallError} or
            L{CallTimeoutError}.
        """


class IFilterService(Interface):
    """
    C{eth_getLogs} and the polled filters.  Block bounds are block numbers,
    or L{None} for the head at the time of the query (a live filter follows
    the head).
    """

    def get_logs(from_block: "int | None", to_block: "int | None", log_filter: LogFilter) -> "Deferred[list[LogEntry]]":
        """
        The logs of the canonical blocks in the range that the filter selects.

        @return: a Deferred firing with the entries in chain order (none when
            C{from_block} is above the head and C{to_block} open), or failing
            with L{LogLimitError} (-32012) for a range or a result beyond the
            network's limits, L{LogQueryError} for a numeric C{from_block}
            above a numeric C{to_block}, or L{CallTimeoutError} (-32011) past
            the time limit.
        """

    def get_block_logs(block_hash: bytes, log_filter: LogFilter) -> "Deferred[list[LogEntry]]":
        """
        The selected logs of one stored block (EIP-234).

        @return: a Deferred failing with L{BlockNotFoundError} for an unknown hash.
        """

    def new_log_filter(
        from_block: "int | None", to_block: "int | None", log_filter: LogFilter, owner: "Hashable | None" = None
    ) -> int:
        """
        Install a log filter; return its random 128-bit id.

        @param owner: the client that asks, whose quota it counts against
            (L{None}: none).
        @raise LogLimitError: too many filters are installed, in all or by
            the client.
        """

    def new_block_filter(owner: "Hashable | None" = None) -> int:
        """
        Install a filter of new canonical block hashes; return its id.

        @raise LogLimitError: as L{new_log_filter}.
        """

    def new_pending_transaction_filter(owner: "Hashable | None" = None) -> int:
        """
        Install a filter of newly pending transaction hashes; return its id.

        @raise LogLimitError: as L{new_log_filter}.
        """

    def get_filter_changes(filter_id: int) -> "list[LogEntry] | list[Hash32]":
        """
        Everything the filter gathered since the previous poll; restarts its expiry.

        @raise FilterNotFoundError: unknown, uninstalled or expired id, or
            (a subclass, once) removed because too many changes waited in it.
        """

    def get_filter_logs(filter_id: int) -> "Deferred[list[LogEntry]]":
        """
        Every log a log filter selects in its range now; does not restart its expiry.

        @return: a Deferred failing with L{FilterNotFoundError}.
        """

    def uninstall_filter(filter_id: int) -> bool:
        """
        Remove a filter; whether it existed.
        """


class IBlockSource(Interface):
    """
    Batch reads of the chain for serving peers: one reader job per request.
    """

    def get_headers_by_number(numbers: "list[int]") -> "Deferred[list[Header | None]]":
        """
        The canonical headers at C{numbers}, in that order (L{None} above the head).
        """

    def get_blocks_by_hash(block_hashes: "Iterable[bytes]") -> "Deferred[list[Block | None]]":
        """
        Stored blocks by hash, in the order asked (L{None} for the unknown).
        """


class IReputation(Interface):
    """
    Peer reputation and bans (reference §15), as the P2P layer sees it.
    """

    def record_event(event: str, node_id: "bytes | None", address: str) -> None:
        """
        Record a L{PeerEvent} against the node id when the handshake proved
        it, else against the IP address (C{docs/reputation.md}).
        """

    def is_allowed(node_id: "bytes | None", address: str) -> bool:
        """
        Whether a peer may connect or have its messages handled now: C{False} when its node id or
        address has bad reputation, or its address, a CIDR block holding it, or its node id is banned.
        """

    def add_ban_observer(observer: "Callable[[], None]") -> None:
        """
        Call C{observer} (on the reactor thread) whenever a record turns bad or a ban is added, so
        the P2P layer can disconnect existing connections that C{is_allowed} now refuses.
        """

    def is_trusted(node_id: "bytes | None", address: str) -> bool:
        """
        Whether the operator trusts the node id or the address: such a peer is scored but never
        punished, and keeps the P2P layer's reserved slots.
        """


class SubscriptionKind:
    """
    The kinds of C{eth_subscribe}, by their wire names (reference §16).
    """

    NEW_HEADS = "newHeads"
    LOGS = "logs"
    NEW_PENDING_TRANSACTIONS = "newPendingTransactions"
    SYNCING = "syncing"

    ALL = (NEW_HEADS, LOGS, NEW_PENDING_TRANSACTIONS, SYNCING)


@dataclass(frozen=True)
class NewHead:
    """
    A block that became canonical, as a C{newHeads} subscription gets it.

    @ivar total_difficulty: the chain's total difficulty up to and including it.
    """

    block: Block
    total_difficulty: int


@dataclass(frozen=True)
class SyncStatus:
    """
    The sync status a C{syncing} subscription gets when it changes.

    @ivar syncing: whether the node is catching up with its peers.
    """

    syncing: bool
    starting_block: int = 0
    current_block: int = 0
    highest_block: int = 0


class ISubscriptionService(Interface):
    """
    Pushed notifications of new heads, logs, pending transactions and the
    sync status (C{eth_subscribe}); each is delivered on the reactor thread,
    once, in chain order, after the block it concerns is readable.
    """

    def subscribe(
        kind: str, deliver: "Callable[[Any], None]", log_filter: "LogFilter | None" = None,
        full_transactions: bool = False,
    ) -> bytes:
        """
        Start a subscription of a L{SubscriptionKind}; C{deliver} is called
        with each L{NewHead}, L{LogEntry} (C{removed} set when a
        reorganisation revokes it), pending transaction hash (or
        L{Transaction} with C{full_transactions}), or L{SyncStatus}.

        @return: the subscription's random 16-byte id.
        @raise ValueError: an unknown kind.
        @raise SubscriptionLimitError: the node holds its limit of subscriptions.
        """

    def unsubscribe(subscription_id: bytes) -> bool:
        """
        End a subscription; whether it existed.
        """


class IRawChainData(Interface):
    """
    The chain's data in its consensus encodings, and the bridge account's
    state: what the C{nodex} module and C{eth_bridgeState} answer.
    """

    def get_raw_header(block_hash: bytes) -> "Deferred[bytes | None]":
        """
        The RLP of a stored header whose Keccak-256 is C{block_hash}, or L{None}.
        """

    def get_raw_receipt(tx_hash: bytes) -> "Deferred[bytes | None]":
        """
        The consensus encoding of a canonical transaction's receipt (its
        value in the receipts trie), or L{None}.
        """

    def get_receipt_trie_nodes(block_hash: bytes, tx_hash: bytes) -> "Deferred[list[bytes] | None]":
        """
        The receipts-trie nodes proving a transaction's receipt under the
        block's receiptsRoot, the receipt's node first and the root last;
        L{None} when the transaction is not in the block.

        @return: a Deferred failing with L{BlockNotFoundError} for an unknown block.
        """

    def get_bridge_state() -> "Deferred[BridgeState]":
        """
        The bridge account's state at the head (L{nodex.chain.bridge}).
        """

@dataclass(frozen=True)
class TraceFilter:
    """
    The query of C{trace_filter}.

    @ivar from_block: the first block, or L{None} for the genesis block.
    @ivar to_block: the last block, or L{None} for the head.
    @ivar from_addresses: the accounts a trace must come from (empty: any).
    @ivar to_addresses: the accounts a trace must go to (empty: any).
    @ivar after: how many matching traces to skip.
    @ivar count: the most traces to answer, or L{None} for the node's limit.
    """

    from_block: int | None = None
    to_block: int | None = None
    from_addresses: frozenset[bytes] = frozenset()
    to_addresses: frozenset[bytes] = frozenset()
    after: int = 0
    count: int | None = None


class ITracingService(Interface):
    """
    Traces made by re-executing stored transactions and calls with a tracer
    attached, in reader threads, bounded in steps, bytes and time.
    """

    def trace_transaction(tx_hash: bytes, config: TraceConfig) -> "Deferred[Any]":
        """
        The trace of a canonical transaction (C{debug_traceTransaction}).

        @return: a Deferred firing with the tracer's JSON value, or failing
            with L{TraceError} (-32000) for an unknown transaction, or
            L{TraceLimitError} (-32000) naming the limit reached.
        """

    def trace_block(block_hash: bytes, config: TraceConfig) -> "Deferred[list[dict[str, Any]]]":
        """
        The traces of a stored block's transactions, each C{{txHash, result}}.

        @return: a Deferred failing with L{TraceError} for an unknown or
            the genesis block, or with L{TraceLimitError}.
        """

    def trace_call(header: Header, request: CallRequest, config: TraceConfig) -> "Deferred[Any]":
        """
        The trace of a call on the state after block C{header} (C{debug_traceCall}).
        """

    def parity_transaction(tx_hash: bytes) -> "Deferred[list[dict[str, Any]] | None]":
        """
        The Parity-style flat traces of a canonical transaction, or L{None}.
        """

    def parity_block(block: Block) -> "Deferred[list[dict[str, Any]]]":
        """
        The flat traces of a block's transactions, in order.
        """

    def parity_filter(query: TraceFilter) -> "Deferred[list[dict[str, Any]]]":
        """
        The flat traces of a range of canonical blocks that match C{query}.

        @return: a Deferred failing with L{TraceQueryError} (-32602) for a
            range, C{after} or C{count} beyond the limits.
        """


class IImpersonation(Interface):
    """
    A dev chain's impersonated accounts (C{nodex.services.devchain.Impersonation}):
    C{eth_sendTransaction} sends from them without their keys.
    """

    def is_impersonated(address: bytes) -> bool:
        """
        Whether transactions from C{address} need no key now.
        """

    def addresses() -> "list[Address]":
        """
        The accounts impersonated one by one, in the order they were named
        (C{eth_accounts} lists them after the wallet's, as Anvil does).
        """


class IDevChain(Interface):
    """
    The Hardhat and Anvil dev-chain controls of regtest and devnet
    (C{nodex.services.devchain}): state setters that write a block, runs of
    empty blocks, mining switches and state snapshots.
    """

    def set_balance(address: bytes, balance: int) -> "Deferred[Block]":
        """
        Write a block in which C{address} holds C{balance} wei.
        """

    def set_code(address: bytes, code: bytes) -> "Deferred[Block]":
        """
        Write a block in which C{address} has C{code}.
        """

    def set_nonce(address: bytes, nonce: int) -> "Deferred[Block]":
        """
        Write a block in which C{address} has C{nonce}.
        """

    def set_storage_at(address: bytes, slot: int, value: int) -> "Deferred[Block]":
        """
        Write a block in which slot C{slot} of C{address} holds C{value}.
        """

    def mine(blocks: int, interval: int) -> "Deferred[Block | None]":
        """
        Write C{blocks} empty blocks, C{interval} seconds apart, in one writer job.
        """

    def set_next_block_timestamp(timestamp: int) -> None:
        """
        Stamp the next mined block with C{timestamp}.

        @raise DevChainInputError: not after the head's timestamp.
        """

    def set_automine(enabled: bool) -> None:
        """
        Mine a block per transaction, or stop doing so.
        """

    def get_automine() -> bool:
        """
        Whether a block is mined per transaction.
        """

    def set_interval_mining(milliseconds: int) -> None:
        """
        Mine a block every C{milliseconds} (0: stop).
        """

    def set_block_gas_limit(gas_limit: int) -> "Deferred[None]":
        """
        Give the blocks from the next on C{gas_limit}.
        """

    def drop_transaction(tx_hash: bytes) -> "Deferred[bool]":
        """
        Remove a transaction from the pool; whether it was there.
        """

    def set_coinbase(address: bytes) -> None:
        """
        Credit the fees of the blocks from now on to C{address}.
        """

    def dump_state() -> "Deferred[dict[str, Any]]":
        """
        A snapshot of every account of the head's state (C{nodex.chain.devstate}).
        """

    def load_state(snapshot: Any) -> "Deferred[Block]":
        """
        Write a block whose state is the head's with C{snapshot}'s accounts laid over it.
        """

    def impersonate_account(address: bytes) -> None:
        """
        Let C{eth_sendTransaction} send from C{address} without its key
        (the impersonation marker, C{docs/devchain.md}).
        """

    def stop_impersonating_account(address: bytes) -> bool:
        """
        Stop impersonating C{address}; whether it was impersonated.
        """

    def set_auto_impersonate(enabled: bool) -> None:
        """
        Impersonate every address, or only those named one by one.
        """


__all__ = [
    "COMPAT_NAMES",
    "Conventions",
    "ETHEREUM_CONVENTIONS",
    "REFERENCE_CONVENTIONS",
    "BadBlock",
    "BridgeState",
    "BridgeStateError",
    "IRawChainData",
    "AccountExistsError",
    "AccountLockedError",
    "DevChainInputError",
    "IDevChain",
    "IImpersonation",
    "AccountOverride",
    "AccountProof",
    "BlockNotFoundError",
    "CallError",
    "CallRequest",
    "CallTimeoutError",
    "ExecutionRevertedError",
    "FilterNotFoundError",
    "IFilterService",
    "IStateService",
    "InsufficientFundsError",
    "InvalidPrivateKeyError",
    "KeyfileError",
    "LocalWalletOffError",
    "LogEntry",
    "LogFilter",
    "LogLimitError",
    "LogQueryError",
    "StateOverrideError",
    "StateOverrides",
    "StorageProof",
    "ChainEvent",
    "ChainHead",
    "IAccounts",
    "ISubscriptionService",
    "NewHead",
    "SubscriptionKind",
    "SubscriptionLimitError",
    "SyncStatus",
    "IChainService",
    "IMiner",
    "IPeerScoring",
    "InvalidBanError",
    "ScoringRecord",
    "IWorkService",
    "MiningWork",
    "SubmittedBlock",
    "WorkSubmissionError",
    "IPeerNetwork",
    "ITransactionPool",
    "IAutoMining",
    "IPendingBlock",
    "IChainWriter",
    "BlockSource",
    "SourceKind",
    "from_peer",
    "Imported",
    "ImportOutcome",
    "ImportResult",
    "Unused",
    "ReceiptView",
    "KeyExportRefusedError",
    "ServerBusyError",
    "ServiceError",
    "TransactionLocation",
    "InvalidTransactionRejectedError",
    "TransactionRejectedError",
    "TypedDataError",
    "UnknownAccountError",
    "UnlockRefusedError",
    "UnlockThrottledError",
    "PEER_URL_SCHEME",
    "IPeerAdmin",
    "NodeInfo",
    "PeerDetail",
    "PeerURL",
    "WIRE_PROTOCOL_VERSION",
    "IReputation",
    "PeerEvent",
    "IBlockSource",
    "PeerInfo",
    "WalletError",
    "WrongPassphraseError",
    "CALL_TRACER",
    "ITracingService",
    "PRESTATE_TRACER",
    "GETH_STRUCT_LOGGER",
    "STRUCT_LOGGER",
    "STRUCT_LOGGERS",
    "TRACER_NAMES",
    "TraceConfig",
    "TraceError",
    "TraceFilter",
    "TraceLimitError",
    "TraceQueryError",
]
