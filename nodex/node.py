"""
The node's composition (L7): L{NodeService}, the node's top service, and
L{compose}, the one place where concrete objects are wired together, each
part built with what it needs passed in at construction.  C{twistd nodex}
(L{nodex.tap}), C{nodex run}, the end-to-end tests and the benchmarks call it.
"""

import gc
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from twisted.application.service import MultiService
from twisted.internet.endpoints import serverFromString
from twisted.internet.error import CannotListenError
from twisted.internet.interfaces import (
    IReactorCore,
    IReactorTime,
    IStreamClientEndpoint,
    IStreamServerEndpoint,
)
from twisted.internet.threads import deferToThreadPool
from twisted.logger import Logger
from twisted.python.threadpool import ThreadPool

from nodex.api.chain import IFollowUps
from nodex.api.conventions import REFERENCE_CONVENTIONS, Conventions
from nodex.api.peers import IPeerNetwork, IReputation, PeerURL
from nodex.api.pool import ITransactionPool
from nodex.api.state import CallRequest, StateOverrides
from nodex.busypoll import BusyPollService
from nodex.chain.genesis import genesis_spec_from_mapping, initialize_chain, make_genesis
from nodex.chain.networks import DEV_NETWORKS, REGTEST_MINER_ADDRESS, chain_rules
from nodex.chain.rules import ChainRules, ForkSchedule
from nodex.chain.tracing.limits import TraceLimits
from nodex.config import NodeConfig, listens_on_loopback_only, server_endpoint_description
from nodex.db.errors import FatalStoreError, StoreFullError
from nodex.db.handle import StoreHandle
from nodex.db.kv import KeyValueStore
from nodex.db.rocks import DEFAULT_MAX_OPEN_FILES, RocksStore
from nodex.db.schema import CHAIN_DIRECTORY
from nodex.descriptors import DescriptorPlan
from nodex.descriptors import plan as descriptors_plan
from nodex.descriptors import raise_limit as raise_descriptor_limit
from nodex.errors import NodexError
from nodex.evm.build import build_line
from nodex.metrics import HealthLimits, MetricsResource, MetricsService, NodeMetrics, health, metrics_site
from nodex.p2p.connect import peer_connector
from nodex.p2p.host import NetworkSettings, PeerSettings
from nodex.p2p.messages import WIRE_PROTOCOL_VERSION
from nodex.p2p.network import PeerNetwork
from nodex.primitives import Address
from nodex.processfiles import PidFile
from nodex.reputation.scoring import PunishmentParameters
from nodex.rpc.admin import AdminMethods
from nodex.rpc.chain_methods import ChainMethods
from nodex.rpc.dev_methods import DevMethods
from nodex.rpc.dispatch import CallObserver, Dispatcher, EnvelopeLimits
from nodex.rpc.eth import EthIdentityMethods
from nodex.rpc.evm_methods import EvmMethods
from nodex.rpc.fee_methods import FeeMethods
from nodex.rpc.filter_methods import FilterMethods
from nodex.rpc.introspection import RPCModulesMethods
from nodex.rpc.mining_methods import MiningMethods
from nodex.rpc.net import NetMethods
from nodex.rpc.nodex_methods import NodexMethods, RawDebugMethods
from nodex.rpc.peer_methods import PeerMethods
from nodex.rpc.registry import IMethodProvider, MethodRegistry, ModuleSettings
from nodex.rpc.sco import ScoMethods
from nodex.rpc.server import ConnectionLimits, HTTPPolicy, RPCServer
from nodex.rpc.state_methods import StateMethods
from nodex.rpc.subscription_methods import SubscriptionMethods
from nodex.rpc.trace_methods import TraceMethods
from nodex.rpc.transaction_methods import GasEstimator, TransactionMethods, TransactionSending
from nodex.rpc.txpool import TxPoolMethods
from nodex.rpc.wallet_methods import PersonalMethods, SigningMethods
from nodex.rpc.web3 import Web3Methods, client_version
from nodex.rpc.websocket import RPCWebSocketFactory, WebSocketSettings
from nodex.services.accounts import KEYSTORE_DIRECTORY, Wallet
from nodex.services.blocktime import BlockClock
from nodex.services.chain import ChainService
from nodex.services.cpuminer import CPUMiner
from nodex.services.devchain import DevChain, Impersonation
from nodex.services.filters import FilterService
from nodex.services.listening import ListeningService
from nodex.services.miner import Miner
from nodex.services.offline import OfflinePeerNetwork
from nodex.services.pending import PendingBlocks
from nodex.services.pool import TransactionPool
from nodex.services.rawchain import RawChainData
from nodex.services.reputation import (
    ReputationService,
    ReputationSettings,
    configured_node_ids,
    host_resolver,
)
from nodex.services.sideblocks import SideBlocks
from nodex.services.slices import SliceRunner
from nodex.services.state import StateService
from nodex.services.store import StoreService
from nodex.services.subscriptions import SubscriptionService
from nodex.chain.building.templates import ChainReads
from nodex.services.threads import ChainThreads, SerialThread, set_worker_niceness, worker_pool
from nodex.services.tracing import TracingService
from nodex.services.work import WorkService
from nodex.wallet.keyfile import LIGHT_SCRYPT, STANDARD_SCRYPT

if TYPE_CHECKING:
    from nodex.manhole import ManholeService

log = Logger()


START_ERRORS = ("exit", "stderr", "raise")
"""How a node reports that it cannot start (L{NodeService.start_failed})."""


class NodeStartError(NodexError):
    """
    The node cannot start (a port in use, a store that cannot be opened);
    the message is the one line an operator reads.
    """


def prepare_datadir(path: Path) -> None:
    """
    Create the data directory (private to the user) if it does not exist.

    @raise OSError: it cannot be created.
    """
    path.mkdir(mode=0o700, parents=True, exist_ok=True)


class Platform:
    """
    What the composition root builds a node on, beside its reactor: where
    its chain is stored, the threads its heavy work runs on, how it listens
    for and dials peers, where its randomness comes from, and the chain
    rules of its network.  This one is the production platform (RocksDB,
    OS threads at the workers' priority, TCP or TLS endpoints,
    C{os.urandom}, the preset's rules); the network simulator
    (C{nodex/simulation}, C{docs/simulation.md}) gives its own, so that the
    services it composes are the ones a node runs, over memory stores,
    simulated connections and simulated time.
    """

    def open_store(self, path: Path, database_files: int = DEFAULT_MAX_OPEN_FILES) -> KeyValueStore:
        """
        Open the chain's key-value store at C{path} (when the node starts),
        with at most C{database_files} files open.
        """
        return RocksStore.open(str(path), database_files)

    def serial_thread(self, reactor: Any, name: str) -> SerialThread:
        """
        A thread that runs jobs one at a time in arrival order (the chain's
        writer, the pool's store thread, the miner's seal thread).
        """
        return SerialThread(reactor, name)

    def thread_pool(self, reactor: Any, minimum: int, maximum: int, name: str) -> ThreadPool:
        """
        A pool of worker threads (the chain's readers, the P2P decoder),
        whose results C{reactor} delivers.
        """
        return worker_pool(minimum, maximum, name)

    def chain_threads(self, reactor: Any) -> ChainThreads:
        """
        The chain's writer thread and reader pool (four readers).
        """
        return ChainThreads(
            reactor, writer=self.serial_thread(reactor, "chain-writer"),
            reader_pool=self.thread_pool(reactor, 1, 4, "chain-reader"),
        )

    def server_endpoint(self, reactor: Any, description: str) -> IStreamServerEndpoint:
        """
        The endpoint a server listens on, from its configured description.
        """
        return serverFromString(reactor, description)

    def peer_connector(self, reactor: Any, tls: bool, ca_certificate: str) -> Callable[[str, int], IStreamClientEndpoint]:
        """
        The function that makes the client endpoint of a peer's host and port.
        """
        return peer_connector(reactor, tls, ca_certificate)

    def entropy(self, size: int) -> bytes:
        """
        C{size} random bytes (the handshake's challenges, the pings' nonces).
        """
        return os.urandom(size)

    def chain_rules(self, config: NodeConfig) -> ChainRules:
        """
        The consensus rules of the configured network.
        """
        return chain_rules(config.network, config.chain_id, ForkSchedule.from_mapping(config.forks))


PLATFORM = Platform()
"""The production platform."""


SWITCH_INTERVAL = 0.0002
"""
The interpreter's thread switch interval in a started node (Python's
default is 5 ms).  While the writer thread imports blocks without pause,
the reactor thread waits for the interpreter lock up to one interval each
time it needs it, several times per request: with 1 ms, the 99th
percentile of C{eth_blockNumber} during an import of 10,000 blocks fell
from 5.6-7.0 ms to 2.7-2.9 ms at the same import rate
(C{benchmarks/RESULTS.md}, "One door for blocks").  With the workers'
lower priority (L{nodex.services.threads.WORKER_NICENESS}) the reactor gets
the core at once and then waits for the lock alone: during a long
C{eth_call} the median was 0.8-0.9 ms with 0.5 ms and 0.5 ms with 0.2 ms,
at the same import rate (C{benchmarks/RESULTS.md}, "Session 5").
"""


class NodeService(MultiService):
    """
    The node: every service of one configuration, with the start line.

    @ivar chain: the chain service (L{None} until composed).
    @ivar miner: the block producer (L{None} until composed).
    @ivar chain_threads: the chain's writer thread and reader pool (L{None}
        until composed), which the pool shares.
    @ivar start_errors: how the node reports that it cannot start: one of
        L{START_ERRORS}.
    @ivar exit_status: 1 once the node stopped because its database
        cannot go on (L{store_failed}), which C{nodex run} exits with.
    @ivar reactor: the reactor the node runs on (L{None} until composed).
    """

    def __init__(self, config: NodeConfig) -> None:
        """
        @param config: the effective configuration.
        """
        super().__init__()
        self.config = config
        self.start_errors = "exit"
        self.chain: ChainService | None = None
        self.miner: Miner | None = None
        self.chain_threads: ChainThreads | None = None
        self.pid_file: PidFile | None = None
        self.exit_status = 0
        self.reactor: Any = None

    def privilegedStartService(self) -> None:
        """
        Take the pid file (L{nodex.processfiles.PidFile}: a second node on
        the same files stops here), then start the children's privileged
        part: the servers listen (so that a port in use stops the node
        before any other service has started).

        @raise SystemExit: the pid file is held, or a server cannot listen
            (L{start_failed}).
        @raise NodeStartError: the same, in a daemon.
        """
        if self.pid_file is not None:
            try:
                self.pid_file.acquire()
            except (NodexError, OSError) as exc:
                self.start_failed(exc if isinstance(exc, NodexError) else NodeStartError(
                    f"cannot write the pid file {self.pid_file.path}: {exc.strerror}"
                ))
        try:
            super().privilegedStartService()
        except CannotListenError as exc:
            self.pid_released()
            self.start_failed(exc)

    def pid_released(self) -> None:
        """
        Remove and unlock the pid file, if the node holds one.
        """
        if self.pid_file is not None:
            self.pid_file.release()

    def stopService(self) -> Any:
        """
        Stop the children, then give up the pid file.
        """
        stopping = super().stopService()

        def release(result: Any) -> Any:
            self.pid_released()
            return result

        if stopping is None:
            return release(None)
        return stopping.addBoth(release)

    def start_failed(self, exc: Exception) -> NoReturn:
        """
        Report in one line why the node cannot start, as L{start_errors} says.

        @raise SystemExit: with the line (C{"exit"}), or with status 1 after
            writing the line on the process's standard error (C{"stderr"}:
            in the foreground, where twistd has turned C{sys.stderr} into
            the log).
        @raise NodeStartError: with the reason (C{"raise"}: in a daemon,
            whose start error twistd hands to the waiting parent process,
            which prints it and exits 1; a L{SystemExit} there would leave
            the parent waiting for ever).
        """
        if self.start_errors == "raise":
            # twistd shows the parent the first 100 bytes of "<class>: <message>".
            raise NodeStartError(str(exc)) from exc
        message = f"nodex: cannot start: {exc}"
        if self.start_errors == "stderr":
            log.critical("{message}", message=message)
            (sys.__stderr__ or sys.stderr).write(message + "\n")
            raise SystemExit(1) from exc
        raise SystemExit(message) from exc

    def startService(self) -> None:
        """
        Log what starts, then start the children; then move everything
        allocated so far out of the garbage collector's sight (L{gc.freeze}).

        The modules, tables and services of a started node live as long as
        the process, yet every full collection walked them all: 20-40 ms
        pauses of the reactor thread every few thousand requests (99th
        percentile of distinct C{eth_call}s 17-21 ms; frozen, 0.9 ms:
        C{benchmarks/RESULTS.md}, "Calls on the reactor thread").  What is
        allocated later is collected as before.
        """
        config = self.config
        log.info(
            "nodex starting: network {network}, chain id {chain_id}, data dir {datadir}, "
            "RPC {rpc}, WebSocket {ws}, P2P {p2p}, manhole {manhole}, mining {mining}",
            network=config.network,
            chain_id=config.chain_id,
            datadir=config.datadir,
            rpc=config.rpc.endpoint,
            ws=config.rpc.ws,
            p2p=config.p2p_endpoint,
            manhole=config.manhole_endpoint,
            mining=config.mining_mode,
        )
        log.info("{line}", line=conventions_line(config))
        log.info("{line}", line=build_line())
        # Before any child starts a thread.
        set_worker_niceness(config.worker_niceness)
        try:
            super().startService()
        except (NodexError, CannotListenError) as exc:
            # A store that cannot be opened (held by another process, of
            # another network), a port in use: one clear line, not a traceback.
            self._stop_started_children()
            self.pid_released()
            self.start_failed(exc)
        except BaseException:
            # A child that cannot start would otherwise leave its started
            # siblings' threads running, and the process would hang instead
            # of exiting with the error.
            self._stop_started_children()
            self.pid_released()
            raise
        gc.collect()
        gc.freeze()
        sys.setswitchinterval(SWITCH_INTERVAL)

    def store_failed(self, error: FatalStoreError) -> None:
        """
        The database cannot go on (a corrupt file, a full disk): say so in
        one line, and stop the node (with exit status 1 under C{nodex run})
        rather than answer an error for everything that touches the store.
        """
        if self.exit_status:
            return
        self.exit_status = 1
        advice = (
            "free space on the disk, then start the node again"
            if isinstance(error, StoreFullError)
            else "restore the data directory from a backup, or rebuild it with nodex import or from peers"
        )
        message = f"nodex: stopping: {error}; {advice}"
        log.critical("{message}", message=message)
        if self.start_errors == "stderr":
            (sys.__stderr__ or sys.stderr).write(message + "\n")
        if self.reactor is not None and self.reactor.running:
            self.reactor.stop()

    def _stop_started_children(self) -> None:
        """
        Stop the children that started before one failed: their threads
        would otherwise keep the process from exiting with the error.
        """
        self.running = False
        for child in reversed(list(self)):
            if child.running:
                child.stopService()


def conventions(config: NodeConfig) -> Conventions:
    """
    The RPC conventions of a configuration (C{compat}, C{--compat}).
    """
    return Conventions(config.compat)


def conventions_line(config: NodeConfig) -> str:
    """
    The start line that names the RPC conventions; on a dev chain under
    the default ones it says how to switch to those Ethereum tools expect.
    """
    if conventions(config).ethereum:
        return "RPC conventions: ethereum (geth's and Anvil's answers; docs/compatibility.md lists the differences)"
    line = "RPC conventions: reference (the interface specification's and the reference node's)"
    if config.network in DEV_NETWORKS:
        line += (
            ". Ethereum tools (Hardhat, viem, Foundry, web3.py) expect geth's and Anvil's:"
            ' start with --compat ethereum, or set compat = "ethereum" (docs/compatibility.md)'
        )
    return line


def ethereum_client_version() -> str:
    """
    C{web3_clientVersion} under the Ethereum conventions: nodex's own
    string after C{anvil/}, the prefix Hardhat's Network Helpers accept
    (with C{hardhatnetwork} and C{zksync}) before they run a fixture.
    """
    return "anvil/" + client_version()


def build_rpc_server(
    config: NodeConfig,
    clock: IReactorTime,
    peers: IPeerNetwork,
    providers: Iterable[IMethodProvider] = (),
    call_observer: CallObserver | None = None,
    follow_ups: IFollowUps | None = None,
) -> RPCServer:
    """
    The JSON-RPC server of a configuration, with every method that exists.

    @param providers: the method providers of the node's services.
    @param call_observer: told of every call (the metrics), if given.
    @param follow_ups: the chain's work put off until an answer is sent,
        which the server holds while it answers (C{docs/chain-service.md}).
    """
    registry = MethodRegistry(
        {
            name: ModuleSettings(module.enabled, module.disabled_methods, module.enabled_methods)
            for name, module in config.rpc.modules.items()
        }
    )
    default_version = ethereum_client_version() if conventions(config).ethereum else client_version()
    registry.add(Web3Methods(config.rpc.client_version or default_version))
    registry.add(NetMethods(config.chain_id, peers))
    registry.add(EthIdentityMethods(config.chain_id, WIRE_PROTOCOL_VERSION))
    for provider in providers:
        registry.add(provider)
    registry.add(RPCModulesMethods(registry))
    limits = EnvelopeLimits(
        max_batch=config.rpc.max_batch,
        max_response_bytes=config.rpc.max_response_bytes,
        timeout=config.rpc.timeout,
    )
    dispatcher = Dispatcher(
        registry, clock, limits, debug=config.log_level == "debug", call_observer=call_observer, follow_ups=follow_ups
    )
    policy = HTTPPolicy(
        max_body_bytes=config.rpc.max_body_bytes,
        hosts=frozenset(host.lower() for host in config.rpc.hosts),
        cors_origins=frozenset(origin.rstrip("/").lower() for origin in config.rpc.cors_origins),
    )
    return RPCServer(dispatcher, policy)


def compose_chain(
    config: NodeConfig,
    reactor: Any,
    node: NodeService,
    database_files: int = DEFAULT_MAX_OPEN_FILES,
    platform: Platform = PLATFORM,
) -> tuple[ChainService, ChainThreads]:
    """
    Add the store (opened, and its genesis written on the first start,
    when the node starts) and the chain service to C{node}.

    The store service comes first, so that it opens the database before
    the others start and closes it after they have stopped (services stop
    in reverse order); the chain service runs on its own writer thread and
    reader pool, which it returns for the services that share the readers.

    @param database_files: the most table files RocksDB keeps open
        (L{nodex.descriptors}).
    @raise NodexError: the genesis table is wrong.
    """
    path = config.datadir / CHAIN_DIRECTORY
    store = StoreHandle(lambda: platform.open_store(path, database_files), f"the chain database in {path}")
    spec = genesis_spec_from_mapping(config.genesis)
    opener = StoreService(
        store, lambda opened: initialize_chain(opened, config.network, spec), node.store_failed, reactor
    )
    opener.setName("store")
    opener.setServiceParent(node)
    threads = platform.chain_threads(reactor)
    rules = platform.chain_rules(config)
    chain = ChainService(store, rules, reactor, threads=threads)
    chain.setName("chain")
    chain.setServiceParent(node)
    node.chain = chain
    node.chain_threads = threads
    return chain, threads


@dataclass(frozen=True)
class BlockMaking:
    """
    The services that make this node's blocks, composed by L{compose_block_making}.
    """

    pool: TransactionPool
    miner: Miner
    work: WorkService
    block_clock: BlockClock
    side_blocks: SideBlocks
    providers: list[IMethodProvider]


def compose_block_making(
    config: NodeConfig,
    reactor: Any,
    node: NodeService,
    chain: ChainService,
    threads: ChainThreads,
    impersonation: Impersonation | None,
    platform: Platform = PLATFORM,
) -> BlockMaking:
    """
    Add the transaction pool, the miner, the work service (templates for
    external and merged miners, C{docs/mining.md}) and, when
    C{mining.cpu_miner} is on, the built-in CPU miner to C{node}: the path
    from a pooled transaction to a stored block, each part given what it
    needs at construction (C{docs/chain-service.md}).

    The miner watches the pool (its automining); the miner and the work
    service write through the chain's writer (L{IChainWriter}); the time of
    their blocks is one L{BlockClock}, their uncle candidates one
    L{SideBlocks}.  The pool checks transactions on the chain's reader pool
    and writes its changes on a thread of its own.  The miner is added
    before the pool, so that it stops after it.

    @param impersonation: a dev chain's impersonated accounts, whose
        transactions the pool admits.
    """
    impersonating = None if impersonation is None else impersonation.is_impersonated
    pool = TransactionPool(
        chain, chain.store, threads.run_reader, store_thread=platform.serial_thread(reactor, "pool-store"),
        impersonating=impersonating, follow_ups=chain.follow_ups,
    )
    block_clock = BlockClock(reactor, chain.rules, lasting_shift=conventions(config).ethereum)
    side_blocks = SideBlocks(chain)
    coinbase = mining_coinbase(config, genesis_spec_from_mapping(config.genesis).coinbase)
    miner = Miner(
        chain, pool, coinbase, config.mining_mode, reactor, block_clock, side_blocks,
        seal_thread=platform.serial_thread(reactor, "miner-seal"),
    )
    miner.setName("miner")
    miner.setServiceParent(node)
    node.miner = miner
    work = WorkService(
        chain, chain, chain.store, chain.rules, coinbase, reactor, threads.run_reader, pool, block_clock,
        side_blocks, config.update_work_on_new_transactions,
    )
    work.setName("work")
    work.setServiceParent(node)
    if config.cpu_miner:
        thread = platform.serial_thread(reactor, "nodex-cpu-miner")
        cpu = CPUMiner(work, chain, reactor, thread.run, thread.start, thread.stop)
        cpu.setName("cpu-miner")
        cpu.setServiceParent(node)
    pool.setName("pool")
    pool.setServiceParent(node)
    return BlockMaking(pool, miner, work, block_clock, side_blocks, [MiningMethods(work)])


def compose_wallet(config: NodeConfig, reactor: Any) -> Wallet:
    """
    The local wallet of a configuration: off unless C{wallet.enabled}; on
    regtest the development keys held unlocked (reference §13.4); the
    keystore under C{<datadir>/keystore}.  Unlocking is refused when the
    RPC server (HTTP or WebSocket) listens beyond loopback, unless
    C{wallet.allow_insecure_unlock}; new keys are held unlocked and
    C{personal_dumpRawKey} gives keys out only when the configuration says
    so (C{wallet.unlock_new_accounts}, C{wallet.allow_key_export}: regtest
    and devnet).
    """
    options: dict[str, Any] = {
        "enabled": config.wallet_enabled,
        "keystore": config.datadir / KEYSTORE_DIRECTORY,
        "network_name": config.wallet_network_name,
        "kdf": LIGHT_SCRYPT if config.wallet_light_kdf else STANDARD_SCRYPT,
        "unlock_new_accounts": config.wallet_unlock_new_accounts,
        "allow_key_export": config.wallet_allow_key_export,
        "allow_unlock": config.wallet_allow_insecure_unlock
        or (listens_on_loopback_only(config.rpc.endpoint) and listens_on_loopback_only(config.rpc.ws)),
    }
    if config.network == "regtest":
        return Wallet.regtest(config.chain_id, reactor, **options)
    return Wallet(config.chain_id, reactor, **options)


def mining_coinbase(config: NodeConfig, genesis_coinbase: bytes) -> Address:
    """
    The address mined blocks credit: C{mining.coinbase}, else the regtest
    miner key's address on regtest (reference §13.4), else the genesis coinbase.
    """
    if config.mining_coinbase:
        return Address(bytes.fromhex(config.mining_coinbase[2:]))
    return REGTEST_MINER_ADDRESS if config.network == "regtest" else Address(bytes(genesis_coinbase))


def compose_transaction_methods(
    chain: ChainService,
    making: BlockMaking,
    accounts: Wallet,
    peers: IPeerNetwork | None,
    impersonation: Impersonation | None,
    chain_id: int,
    rules: Conventions = REFERENCE_CONVENTIONS,
    estimate: GasEstimator | None = None,
    pending: PendingBlocks | None = None,
) -> tuple[EvmMethods, list[IMethodProvider]]:
    """
    The RPC providers of issue 5 (blocks, transactions, txpool, evm) and
    the wallet's; the C{evm} provider also returned on its own, for the
    dev chain's reset.

    @param peers: the peer network, whose sync C{eth_syncing} reports.
    @param rules: the RPC conventions (txpool shapes, snapshot rules).
    @param estimate: under the Ethereum conventions, estimates the gas of
        C{eth_sendTransaction} requests that name none (Anvil's rule).
    @param pending: the pending block, which C{eth_getBlockByNumber} and
        its siblings answer at C{pending} under the Ethereum conventions.
    """
    pool, miner = making.pool, making.miner
    evm = EvmMethods(chain, pool, miner, rules)
    sending = TransactionSending(pool, chain_id, estimate)
    providers: list[IMethodProvider] = [
        ChainMethods(chain, pool, peers, pending, rules),
        TransactionMethods(chain, pool, accounts, miner, making.work, impersonation, sending),
        TxPoolMethods(pool, rules),
        evm,
        PersonalMethods(accounts, pool, chain_id, sending),
        SigningMethods(accounts, pool, chain_id, sending),
    ]
    return evm, providers


def pending_estimator(state: StateService, pending: PendingBlocks) -> GasEstimator:
    """
    The gas estimator of C{eth_sendTransaction} under the Ethereum
    conventions: C{eth_estimateGas} at C{pending}, the block the
    transaction will be mined in (Anvil's rule).
    """

    async def estimate(request: CallRequest) -> int:
        return await state.estimate_gas(await pending.header(), request, StateOverrides())

    return estimate


def compose_dev_chain(
    config: NodeConfig,
    chain: ChainService,
    making: BlockMaking,
    impersonation: Impersonation | None = None,
    reset: Callable[[], Any] | None = None,
) -> list[IMethodProvider]:
    """
    The dev-chain methods of issue 18 (C{hardhat_*}, C{anvil_*},
    C{evm_set*}, gated by the C{evm} module) on regtest and devnet
    (L{DEV_NETWORKS}, DESIGN §6); none on main and testnet, whatever their
    modules say.

    @param impersonation: the impersonated accounts the pool consults.
    @param reset: C{evm_reset}'s function, for C{hardhat_reset} and C{anvil_reset}.
    """
    if config.network not in DEV_NETWORKS:
        return []
    return [DevMethods(DevChain(chain, chain, making.miner, making.pool, making.block_clock, impersonation), reset)]


def compose_state_and_logs(
    config: NodeConfig,
    reactor: Any,
    node: NodeService,
    chain: ChainService,
    threads: ChainThreads,
    making: BlockMaking,
    deliveries: SliceRunner | None = None,
) -> tuple[StateService, PendingBlocks, list[IMethodProvider]]:
    """
    Add the state service (reads at any block, calls, estimates, proofs, on
    its own reader pool) and the filter service to C{node}; make the
    pending block (the block the miner would build now, where calls at
    C{pending} run); return them with the RPC providers of issue 6.

    @param deliveries: the slices in which the filters and the
        subscriptions get a block's changes (one for both).
    """
    rpc = config.rpc
    pool = making.pool
    state = StateService(
        chain.store, config.chain_id, None, reactor,
        call_gas_cap=rpc.call_gas_cap, time_limit=rpc.timeout, estimate_gas_cap=rpc.estimate_gas_cap,
        forks=chain.rules.forks, call_failures_are_errors=conventions(config).ethereum,
    )
    state.setName("state")
    state.setServiceParent(node)
    pending = PendingBlocks(
        chain, pool, making.miner, making.block_clock, ChainReads(chain.store, chain.rules, making.miner.coinbase),
        threads.run_reader, state.hold_state, making.side_blocks,
    )
    filters = FilterService(
        chain.store, chain, pool, state.run_in_thread, reactor,
        max_block_range=rpc.max_log_blocks or None, max_logs=rpc.max_logs or None, time_limit=rpc.timeout,
        max_filters_per_client=rpc.max_filters_per_client, runner=deliveries,
    )
    filters.setName("filters")
    filters.setServiceParent(node)
    providers: list[IMethodProvider] = [
        StateMethods(
            chain, state, pool, revert_error_code=rpc.revert_error_code, pending=pending, conventions=conventions(config)
        ),
        FilterMethods(filters, chain),
        FeeMethods(chain),
    ]
    return state, pending, providers


def compose_reputation(config: NodeConfig, reactor: Any, node: NodeService) -> tuple[ReputationService, list[IMethodProvider]]:
    """
    Add the reputation service (peer scoring and bans, C{[scoring]}) to
    C{node} as C{"reputation"}, and return it with the C{sco} RPC provider.
    The P2P service takes the reputation service as its L{IReputation}.

    Host names given to C{sco_banAddress} are resolved by the reactor's
    name resolver, which runs C{getaddrinfo} in the reactor's thread pool.
    """
    scoring = config.scoring

    def parameters(seconds: int, increment: int, max_seconds: int) -> PunishmentParameters:
        return PunishmentParameters(seconds * 1000, increment, max_seconds * 1000)

    settings = ReputationSettings(
        node=parameters(scoring.node.duration, scoring.node.increment, scoring.node.max_duration),
        address=parameters(scoring.address.duration, scoring.address.increment, scoring.address.max_duration),
        max_node_records=scoring.node.max_records,
        max_address_records=scoring.address.max_records,
        punishment_enabled=scoring.punishment_enabled,
        banned_node_ids=configured_node_ids(scoring.banned_peer_ids),
        banned_addresses=scoring.banned_peer_ips,
        trusted_node_ids=configured_node_ids(scoring.trusted_peer_ids),
        trusted_addresses=scoring.trusted_peer_ips,
    )
    reputation = ReputationService(reactor, host_resolver(reactor), settings)
    reputation.setName("reputation")
    reputation.setServiceParent(node)
    return reputation, [ScoMethods(reputation)]


def compose_admin(config: NodeConfig, peers: Any, reputation: ReputationService) -> AdminMethods:
    """
    The C{admin} module (and C{sco}'s node bans): its methods answer only
    while the RPC servers (HTTP and WebSocket) listen on loopback alone,
    unless C{rpc.admin_allow_remote}.
    """
    allowed = config.rpc.admin_allow_remote or (
        listens_on_loopback_only(config.rpc.endpoint) and listens_on_loopback_only(config.rpc.ws)
    )
    default_version = ethereum_client_version() if conventions(config).ethereum else client_version()
    return AdminMethods(peers, reputation, config.rpc.client_version or default_version, allowed)


def compose_raw_chain(
    node: NodeService, chain: ChainService, pool: ITransactionPool | None = None
) -> list[IMethodProvider]:
    """
    The RPC providers of the C{nodex} module and C{eth_bridgeState}, reading
    through L{RawChainData} on the chain's reader threads, and of the
    C{debug_getRaw*} getters.
    """
    assert node.chain_threads is not None
    raw = RawChainData(chain, node.chain_threads.run_reader)
    return [NodexMethods(chain, raw, WIRE_PROTOCOL_VERSION), RawDebugMethods(chain, pool)]


def compose_subscriptions(
    chain: ChainService, pool: ITransactionPool | None, peers: IPeerNetwork | None = None, clock: Any = None,
    deliveries: SliceRunner | None = None,
) -> SubscriptionMethods:
    """
    The subscription service over the chain and the pool, and its RPC
    provider (C{eth_subscribe}, C{eth_unsubscribe}; over HTTP they answer
    that a WebSocket is needed).

    @param peers: the peer network, whose sync reaches the C{syncing} subscriptions.
    @param clock: times the slices of the deliveries (the reactor).
    @param deliveries: the slices, shared with the filters.
    """
    service = SubscriptionService(chain, pool, clock=clock, runner=deliveries)
    if isinstance(peers, PeerNetwork):
        peers.sync.add_observer(service.sync_status_changed)
    return SubscriptionMethods(service)


def websocket_factory(
    config: NodeConfig, server: RPCServer, subscriptions: SubscriptionMethods, reactor: Any,
    max_connections: int | None = None,
) -> RPCWebSocketFactory:
    """
    The WebSocket server of a configuration: the HTTP server's dispatcher
    and Host/Origin rules, with the WebSocket limits.

    @param max_connections: the connection cap, if the descriptors'
        plan lowered the configured one.
    """
    rpc = config.rpc
    settings = WebSocketSettings(
        max_message_bytes=rpc.max_body_bytes,
        max_subscriptions=rpc.ws_max_subscriptions,
        max_queue_bytes=rpc.ws_max_queue_bytes,
        max_connections=rpc.ws_max_connections if max_connections is None else max_connections,
        max_connections_per_address=rpc.ws_max_connections_per_address,
    )
    return RPCWebSocketFactory(server.dispatcher, server.policy, subscriptions, settings, reactor=reactor)


def compose_metrics(
    config: NodeConfig, reactor: Any, node: NodeService, pool: ITransactionPool, peers: IPeerNetwork
) -> NodeMetrics:
    """
    Add the metrics and health port to C{node} (docs/operating.md) and
    return the metrics, for the RPC dispatcher's call observer.  Peers and
    the sync progress come from the peer network.
    """
    chain, miner = node.chain, node.miner
    assert chain is not None and miner is not None

    def peer_count() -> int:
        return len(peers.peers())

    def sync_progress() -> tuple[int, int] | None:
        status = peers.sync_status()
        if status is None or not status.syncing:
            return None
        return status.current_block, status.highest_block

    metrics = NodeMetrics(chain, pool, peer_count, lambda: miner.blocks_mined, reactor)
    chain.add_observer(metrics.chain_changed)
    limits = HealthLimits(config.metrics.max_head_age, config.metrics.max_blocks_behind)
    in_thread = partial(deferToThreadPool, reactor, reactor.getThreadPool())
    resource = MetricsResource(
        metrics, lambda: health(metrics, chain, peer_count, sync_progress, limits), in_thread
    )
    service = MetricsService(metrics, reactor, config.datadir / CHAIN_DIRECTORY, in_thread)
    listening = ListeningService("metrics", serverFromString(reactor, config.metrics.endpoint), metrics_site(resource))
    listening.setName("metrics-port")
    listening.setServiceParent(service)
    service.setName("metrics")
    service.setServiceParent(node)
    return metrics


def compose_manhole(
    config: NodeConfig, reactor: Any, node: NodeService, pool: ITransactionPool, peers: IPeerNetwork
) -> "ManholeService":
    """
    Add the manhole to C{node}, last, so that its namespace holds every
    service: each named service under its name, C{network} (the peer
    network), C{config}, C{node}, and the helpers of
    L{nodex.manhole.helpers}.
    """
    # Imported here: twisted.conch is needed only when the manhole is on.
    from nodex.manhole import AUTHORIZED_KEYS_FILE, ManholeService, helpers

    assert node.chain is not None
    namespace: dict[str, Any] = dict(node.namedServices)
    namespace.update(network=peers, config=config, node=node)
    namespace.update(helpers(node.chain, pool, peers))
    authorized = Path(config.manhole.authorized_keys or config.datadir / AUTHORIZED_KEYS_FILE)
    endpoint = serverFromString(reactor, server_endpoint_description(config.manhole_endpoint))
    manhole = ManholeService(
        endpoint, namespace, config.datadir, authorized,
        lambda where, factory: ListeningService("manhole", where, factory),
    )
    manhole.setName("manhole")
    manhole.setServiceParent(node)
    return manhole


def compose_tracing(
    config: NodeConfig,
    reactor: Any,
    node: NodeService,
    chain: ChainService,
    state: StateService,
    pending: PendingBlocks,
) -> list[IMethodProvider]:
    """
    Add the tracing service (replays with a tracer attached, in the state
    service's reader threads) to C{node}, and return the provider of the
    C{debug_trace*} and C{trace_*} methods (issue 15).

    A trace stops at 90 % of C{rpc.timeout}, so that its own error, which
    names the limit, reaches the client before the request's deadline; its
    answer is bounded by C{rpc.max_response_bytes}, its steps by
    C{rpc.trace_max_steps}; C{trace_filter} by C{rpc.trace_filter_max_blocks}
    and C{rpc.trace_filter_max_traces}.
    """
    rpc = config.rpc
    limits = TraceLimits(
        max_steps=rpc.trace_max_steps, max_bytes=rpc.max_response_bytes, time_limit=rpc.timeout * 0.9
    )
    tracing = TracingService(
        chain, state, reactor, limits,
        max_traces=rpc.trace_filter_max_traces, max_filter_blocks=rpc.trace_filter_max_blocks,
    )
    tracing.setName("tracing")
    tracing.setServiceParent(node)
    return [TraceMethods(chain, tracing, pending, conventions(config))]


@dataclass
class NodeCore:
    """
    The services that take part in the network, composed by
    L{compose_core}: what every node runs, and all that the network
    simulator runs of one.

    @ivar node: the node service they belong to.
    @ivar impersonation: a dev chain's impersonated accounts (L{None} elsewhere).
    @ivar reputation_providers: the RPC provider of the reputation service (C{sco}).
    """

    node: NodeService
    chain: ChainService
    threads: ChainThreads
    making: BlockMaking
    reputation: ReputationService
    peers: IPeerNetwork
    impersonation: Impersonation | None
    reputation_providers: list[IMethodProvider]

    def attach_peers(self) -> None:
        """
        Add the peer network (when there is one) to the node, after the
        services added so far: it finds the pool started, and stops (no
        more imports from peers) before it.
        """
        if isinstance(self.peers, PeerNetwork):
            self.peers.setServiceParent(self.node)


def compose_core(
    config: NodeConfig, reactor: Any, platform: Platform = PLATFORM, database_files: int = DEFAULT_MAX_OPEN_FILES
) -> NodeCore:
    """
    Compose the services that take part in the network, in order: the
    store and the chain (L{compose_chain}), the pool, the miner and the
    work service (L{compose_block_making}), the reputation service, and the
    peer network when one is configured (L{compose_p2p}; otherwise the
    node is offline), which takes the reputation service as its
    L{IReputation} and the pool for its transactions.  The peer network is
    not yet added to the node (L{NodeCore.attach_peers}).

    @param platform: what the node is built on (L{Platform}).
    @param database_files: the most files the chain's store keeps open.
    """
    prepare_datadir(config.datadir)
    node = NodeService(config)
    node.reactor = reactor
    chain, threads = compose_chain(config, reactor, node, database_files, platform)
    # A dev chain's impersonated accounts: the dev methods name them, the
    # pool and eth_sendTransaction consult them.
    impersonation = Impersonation() if config.network in DEV_NETWORKS else None
    making = compose_block_making(config, reactor, node, chain, threads, impersonation, platform)
    reputation, reputation_providers = compose_reputation(config, reactor, node)
    peers = compose_p2p(config, reactor, chain, reputation, platform)
    if isinstance(peers, PeerNetwork):
        peers.use_pool(making.pool)
    return NodeCore(node, chain, threads, making, reputation, peers, impersonation, reputation_providers)


def compose(config: NodeConfig, reactor: Any, platform: Platform = PLATFORM) -> NodeService:
    """
    Wire the services of a configuration together.

    The core (L{compose_core}: the chain service and the miner first, so
    that they start before and stop after the edges, the pool, the
    reputation service and the peer network) comes first, then the
    wallet, the state and log services, and the edges clients talk to.

    @param reactor: provides L{IReactorCore}, L{IReactorTime} and the
        listening interfaces the endpoints need.
    @param platform: what the node is built on (L{Platform}).
    """
    assert IReactorCore.providedBy(reactor)
    descriptors = plan_descriptors(config)
    core = compose_core(config, reactor, platform, descriptors.database_files)
    node, chain, threads, making, peers = core.node, core.chain, core.threads, core.making, core.peers
    impersonation = core.impersonation
    accounts = compose_wallet(config, reactor)
    accounts.setName("accounts")
    accounts.setServiceParent(node)
    pool = making.pool
    # One runner for the filters' and the subscriptions' deliveries: a
    # block's changes then hold the reactor one slice at a time in all.
    deliveries = SliceRunner(reactor)
    state, pending, providers = compose_state_and_logs(config, reactor, node, chain, threads, making, deliveries)
    rules = conventions(config)
    estimate = pending_estimator(state, pending) if rules.ethereum else None
    evm, transaction_providers = compose_transaction_methods(
        chain, making, accounts, peers, impersonation, config.chain_id, rules, estimate, pending
    )
    providers += transaction_providers
    providers += making.providers
    providers += core.reputation_providers
    core.attach_peers()
    providers.append(PeerMethods(peers))
    providers.append(compose_admin(config, peers, core.reputation))
    subscriptions = compose_subscriptions(chain, pool, peers, reactor, deliveries)
    providers.append(subscriptions)
    providers += compose_dev_chain(config, chain, making, impersonation, evm.reset)
    providers += compose_tracing(config, reactor, node, chain, state, pending)
    providers += compose_raw_chain(node, chain, pool)
    metrics = compose_metrics(config, reactor, node, pool, peers) if config.metrics.endpoint != "none" else None
    if config.rpc.endpoint != "none" or config.rpc.ws != "none":
        observer = None if metrics is None else metrics.observe_call
        server = build_rpc_server(config, reactor, peers, providers, call_observer=observer, follow_ups=chain.follow_ups)
        if config.rpc.busy_poll:
            # Keep looking for a test suite's next request across its turn (docs/rpc.md, "Busy polling").
            polling = BusyPollService(reactor, config.rpc.busy_poll / 1_000_000)
            polling.setName("busy-poll")
            polling.setServiceParent(node)
        if metrics is not None:
            metrics.set_method_names(server.dispatcher.registry.names())
        if config.rpc.endpoint != "none":
            limits = ConnectionLimits(
                max_connections=descriptors.http_connections,
                max_connections_per_address=config.rpc.max_connections_per_address,
                read_timeout=config.rpc.read_timeout,
                idle_timeout=config.rpc.idle_timeout,
            )
            rpc = ListeningService("RPC", serverFromString(reactor, config.rpc.endpoint), server.site(limits, reactor))
            rpc.setName("rpc")
            rpc.setServiceParent(node)
        if config.rpc.ws != "none":
            factory = websocket_factory(config, server, subscriptions, reactor, descriptors.ws_connections)
            ws = ListeningService("WebSocket", serverFromString(reactor, config.rpc.ws), factory, factory.close_all)
            ws.setName("ws")
            ws.setServiceParent(node)
    if config.manhole_endpoint != "none":
        compose_manhole(config, reactor, node, pool, peers)
    return node


def plan_descriptors(config: NodeConfig) -> DescriptorPlan:
    """
    Raise the process's limit on open descriptors where the system allows,
    and share it between the database, the peers and the RPC connections
    (L{nodex.descriptors}); warn when the configured connection caps had
    to be lowered to fit.
    """
    p2p = config.p2p
    peers = 0
    if config.p2p_endpoint != "none" or config.peers:
        peers = p2p.max_inbound + p2p.max_outbound + p2p.max_half_open_per_address
    rpc = config.rpc
    shared = descriptors_plan(
        raise_descriptor_limit(),
        rpc.max_connections if rpc.endpoint != "none" else 0,
        rpc.ws_max_connections if rpc.ws != "none" else 0,
        peers,
    )
    if shared.lowered:
        log.warn(
            "the process may open {limit} files (ulimit -n): serving at most {http} HTTP and {ws} WebSocket"
            " connections instead of rpc.max_connections = {http_configured} and rpc.ws_max_connections ="
            " {ws_configured}; raise the limit (systemd: LimitNOFILE=) for more",
            limit=shared.limit, http=shared.http_connections, ws=shared.ws_connections,
            http_configured=rpc.max_connections, ws_configured=rpc.ws_max_connections,
        )
    return shared


def _peer_address(text: str) -> tuple[str, int]:
    """
    The host and port of a C{HOST:PORT} peer (IPv6 in brackets) or of a peer URL.
    """
    url = PeerURL.parse(text)
    return url.host, url.port


def _expected_ids(peers: tuple[str, ...]) -> tuple[tuple[tuple[str, int], bytes], ...]:
    """
    The node ids the peer URLs among C{peers} name, by host and port.
    """
    urls = [PeerURL.parse(text) for text in peers]
    return tuple(((url.host, url.port), url.node_id) for url in urls if url.node_id is not None)


def compose_p2p(
    config: NodeConfig, reactor: Any, chain: ChainService, reputation: IReputation, platform: Platform = PLATFORM
) -> IPeerNetwork:
    """
    The peer network (a service named C{p2p}, for the caller to add to the
    node after the pool) when the configuration has a P2P endpoint or peers
    to dial (C{docs/p2p.md}); otherwise the offline network.

    The node key lives in the data directory (read or created when the
    service starts); outbound connections use TLS (checking the peer's host
    name) when C{p2p.tls} is set; offences go to C{reputation}, which is
    asked before a peer is accepted or heard.  The genesis hash of the
    handshake is computed from the genesis table (nothing is opened here).
    """
    p2p = config.p2p
    if config.p2p_endpoint == "none" and not config.peers:
        return OfflinePeerNetwork()
    genesis, _, _ = make_genesis(genesis_spec_from_mapping(config.genesis))
    settings = NetworkSettings(
        network_id=config.p2p_network_id,
        genesis_hash=genesis.hash,
        bootstrap=tuple(_peer_address(peer) for peer in config.peers),
        expected_ids=_expected_ids(config.peers),
        max_inbound=p2p.max_inbound,
        max_outbound=p2p.max_outbound,
        max_half_open_per_address=p2p.max_half_open_per_address,
        max_connections_per_address=p2p.max_connections_per_address,
        max_handshake_failures=p2p.max_handshake_failures,
        reserved_slots=p2p.reserved_slots,
        transaction_delay=p2p.transaction_delay,
        fetch_delay=p2p.fetch_delay,
        peer=PeerSettings(
            max_frame_bytes=p2p.max_frame_bytes,
            messages_per_second=p2p.messages_per_second,
            max_outstanding_requests=p2p.max_outstanding_requests,
            request_timeout=p2p.request_timeout,
            handshake_timeout=p2p.handshake_timeout,
            max_queued_messages=p2p.max_queued_messages,
            max_queued_bytes=p2p.max_queued_bytes,
            max_invalid_transactions=p2p.max_invalid_transactions,
            encryption=p2p.encryption,
        ),
    )
    listen = None if config.p2p_endpoint == "none" else platform.server_endpoint(reactor, config.p2p_endpoint)
    connect = platform.peer_connector(reactor, p2p.tls, p2p.tls_ca_certificate)
    network = PeerNetwork(
        chain, reputation, reactor, config.datadir, settings, listen, connect,
        decoder_pool=lambda: platform.thread_pool(reactor, 1, 1, "nodex-p2p-decode"),
        entropy=platform.entropy,
    )
    network.setName("p2p")
    return network


__all__ = [
    "BlockMaking",
    "NodeCore",
    "NodeService",
    "NodeStartError",
    "PLATFORM",
    "Platform",
    "START_ERRORS",
    "SWITCH_INTERVAL",
    "build_rpc_server",
    "compose",
    "compose_admin",
    "compose_block_making",
    "compose_chain",
    "compose_core",
    "compose_dev_chain",
    "compose_manhole",
    "compose_metrics",
    "compose_p2p",
    "compose_raw_chain",
    "compose_reputation",
    "compose_state_and_logs",
    "compose_subscriptions",
    "compose_tracing",
    "compose_transaction_methods",
    "compose_wallet",
    "conventions",
    "conventions_line",
    "ethereum_client_version",
    "mining_coinbase",
    "pending_estimator",
    "plan_descriptors",
    "prepare_datadir",
    "websocket_factory",
]
