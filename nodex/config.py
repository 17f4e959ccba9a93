"""
The node's configuration: a built-in preset per network, then a TOML file,
then command-line flags (DESIGN §7).  Every layer is checked against one
schema, so that an unknown key or a bad value stops the start with a message
naming the key; the result is a L{NodeConfig}, and the merged mapping can be
printed back as TOML (C{--dump-config}).
"""

import ipaddress
import json
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from importlib.resources import files
from pathlib import Path
from typing import Any

from twisted.internet.endpoints import serverFromString

from nodex.errors import NodexError
from nodex.api.conventions import COMPAT_NAMES
from nodex.api.peers import PeerURL

NETWORKS = ("regtest", "devnet", "testnet", "main")
"""The networks that have a preset."""

DEFAULT_NETWORK = "regtest"

LOG_LEVELS = ("info", "debug")

MODULES = ("eth", "net", "web3", "rpc", "evm", "mnr", "personal", "nodex", "debug", "trace", "txpool", "sco", "admin")
"""The RPC modules (reference §9); the same list as L{nodex.rpc.registry.MODULES}."""

Raw = dict[str, Any]


class ConfigError(NodexError):
    """
    A configuration key is unknown or its value is not acceptable; the
    message names the key and where it came from.
    """


Check = Callable[[Any], Any]
"""Validates one value and returns it normalised; raises L{ValueError} with the expectation."""


def _integer(low: int, high: int = 2**63 - 1) -> Check:
    """
    An integer check within C{low}..C{high} (booleans refused).
    """
    def check(value: Any) -> int:
        if type(value) is not int or not low <= value <= high:
            raise ValueError(f"want an integer from {low} to {high}")
        return value

    return check


def _seconds(value: Any) -> float:
    """
    A positive number of seconds, at most a day.
    """
    if type(value) not in (int, float) or not 0 < value <= 86400:
        raise ValueError("want a number of seconds above 0 and at most 86400")
    return float(value)


def _boolean(value: Any) -> bool:
    """
    A TOML boolean.
    """
    if type(value) is not bool:
        raise ValueError("want true or false")
    return value


def _choice(*options: str) -> Check:
    """
    One of the given strings.
    """
    def check(value: Any) -> str:
        if value not in options:
            raise ValueError("want one of " + ", ".join(f'"{option}"' for option in options))
        return value

    return check


def _strings(value: Any) -> list[str]:
    """
    An array of strings.
    """
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError("want an array of strings")
    return list(value)


def _string(value: Any) -> str:
    """
    Any string (the empty string included).
    """
    if not isinstance(value, str):
        raise ValueError("want a string")
    return value


def _network_name(value: Any) -> str:
    """
    The word of the C{eth_sign} prefix: 1 to 64 printable characters.
    """
    if not isinstance(value, str) or not 1 <= len(value) <= 64 or not value.isprintable():
        raise ValueError("want 1 to 64 printable characters")
    return value


def _client_version(value: Any) -> str:
    """
    What C{web3_clientVersion} answers instead of nodex's own string: up to
    200 printable ASCII characters; empty: nodex's own.
    """
    if not isinstance(value, str) or len(value) > 200 or not all(" " <= c <= "~" for c in value):
        raise ValueError("want up to 200 printable ASCII characters (empty: nodex's own version string)")
    return value


def _datadir(value: Any) -> str:
    """
    A directory path (expanded); it may not exist yet, but may not be a file.
    """
    if not isinstance(value, str) or not value:
        raise ValueError("want a directory path")
    path = Path(value).expanduser()
    if path.exists() and not path.is_dir():
        raise ValueError(f"{path} exists and is not a directory")
    return str(path)


class _NoReactor:
    """
    Stands in for the reactor while an endpoint description is parsed: the
    endpoint constructors only store it, and nothing listens.
    """


DISABLED = "none"
"""The endpoint value that turns a server off."""

_UNESCAPED_COLON = re.compile(r"(?<!\\):")


def split_endpoint(description: str) -> tuple[str, list[tuple[str | None, str]]]:
    """
    The one reader of the server endpoint grammar (C{kind:arg:name=value},
    a backslash escaping a colon): the kind, in lower case (Twisted matches
    kinds given by plugins, such as C{tcp6}, whatever their case), and each
    argument as C{(name, value)} with its escapes removed (C{name} is
    L{None} for a positional argument).
    """
    kind, *arguments = _UNESCAPED_COLON.split(description)
    parsed: list[tuple[str | None, str]] = []
    for argument in arguments:
        name, equals, value = argument.partition("=")
        parsed.append((name, value.replace("\\", "")) if equals else (None, argument.replace("\\", "")))
    return kind.lower(), parsed


def endpoint(value: Any) -> str:
    """
    A Twisted server endpoint description, or C{none} to disable the server.
    """
    if not isinstance(value, str) or not value:
        raise ValueError('want a Twisted server endpoint description (e.g. "tcp:4444") or "none"')
    if value == DISABLED:
        return value
    repeated = _repeated_parameter(value)
    if repeated is not None:
        # Twisted keeps the last one, the loopback checks read the first.
        raise ValueError(f'"{repeated}=" is given more than once; give each parameter once')
    try:
        serverFromString(_NoReactor(), value)
    except Exception as exc:
        raise ValueError(f'want a Twisted server endpoint description or "none" ({exc})') from None
    return value


def _repeated_parameter(description: str) -> str | None:
    """
    The name of a C{name=value} parameter that an endpoint description
    gives more than once, or L{None}.
    """
    seen = set()
    for name, _ in split_endpoint(description)[1]:
        if name is not None:
            if name in seen:
                return name
            seen.add(name)
    return None


def listens_on_loopback_only(description: str) -> bool:
    """
    Whether a server endpoint description reaches only this machine: C{none}
    (it listens nowhere), a UNIX socket, or TCP/SSL bound to a loopback
    address (C{interface=127.0.0.1}, C{interface=\\:\\:1},
    C{interface=localhost}); no interface means every interface.  Kinds are
    told apart whatever their case, as Twisted's plugins are.
    """
    if description == DISABLED:
        return True
    kind, arguments = split_endpoint(description)
    if kind == "unix":
        return True
    interface = next((value for name, value in arguments if name == "interface"), None)
    if interface is None:
        return False
    if interface == "localhost":
        return True
    try:
        return ipaddress.ip_address(interface).is_loopback
    except ValueError:
        return False


def _check_loopback(raw: Raw, section: str) -> None:
    """
    Refuse an operator port (manhole, metrics) beyond loopback unless
    C{<section>.allow_remote} says so.

    @raise ConfigError: it would listen beyond loopback.
    """
    table = raw.get(section, {})
    description = table.get("endpoint", DISABLED)
    if not table.get("allow_remote", False) and not listens_on_loopback_only(description):
        raise ConfigError(
            f'configuration key "{section}.endpoint": {description!r} listens beyond the loopback interface;'
            f" bind it to 127.0.0.1 (interface=127.0.0.1) or set {section}.allow_remote = true"
        )


def manhole_endpoint(value: Any) -> str:
    """
    The manhole's endpoint: C{ssh:PORT[:interface=ADDR]} (SSH over TCP, the
    manhole's own notation), any Twisted server endpoint, or C{none}.
    """
    if isinstance(value, str) and value.startswith("ssh:"):
        endpoint("tcp:" + value[len("ssh:") :])
        return value
    return endpoint(value)


def server_endpoint_description(value: str) -> str:
    """
    The Twisted endpoint description of a checked endpoint value (C{ssh:}
    is SSH over C{tcp:}).
    """
    return "tcp:" + value[len("ssh:") :] if value.startswith("ssh:") else value


def _peer(value: str) -> str:
    """
    One C{HOST:PORT} peer address (IPv6 in brackets), or a peer's URL
    C{nodex://NODEID@HOST:PORT} (L{PeerURL}).
    """
    try:
        url = PeerURL.parse(value)
    except ValueError as exc:
        raise ValueError(str(exc)) from None
    if ":" not in url.host and not re.fullmatch(r"[A-Za-z0-9.-]+", url.host):
        raise ValueError(f"{value!r}: want HOST:PORT")
    if ":" in url.host:
        try:
            ipaddress.IPv6Address(url.host)
        except ValueError:
            raise ValueError(f"{value!r}: bad IPv6 address") from None
    return value


def _peers(value: Any) -> list[str]:
    """
    An array of C{HOST:PORT} peers or peer URLs.
    """
    return [_peer(item) for item in _strings(value)]


def mining_mode(value: Any) -> str:
    """
    C{auto}, C{interval:SECONDS}, C{manual} or C{off}.
    """
    if value in ("auto", "manual", "off"):
        return value
    if isinstance(value, str) and value.startswith("interval:"):
        try:
            seconds = float(value[len("interval:") :])
        except ValueError:
            seconds = 0.0
        if 0 < seconds <= 86400:
            return value
    raise ValueError('want "auto", "interval:SECONDS" (0 < SECONDS <= 86400), "manual" or "off"')


def _coinbase(value: Any) -> str:
    """
    A 0x-prefixed 20-byte address, or the empty string for the network's default.
    """
    if value == "":
        return value
    if not isinstance(value, str) or not re.fullmatch(r"0x[0-9a-fA-F]{40}", value):
        raise ValueError('want a 0x-prefixed 20-byte hex address, or "" for the network default')
    return value.lower()


def _strings_path(value: Any) -> str:
    """
    A file path (expanded), or the empty string for the default.
    """
    if not isinstance(value, str):
        raise ValueError("want a file path, or \"\" for the default")
    return str(Path(value).expanduser()) if value else ""


def _fetch_delay(value: Any) -> float:
    """
    How long an announced block waits for a whole copy before it is fetched: 0 (at once) to 10 seconds.
    """
    if type(value) not in (int, float) or not 0 <= value <= 10:
        raise ValueError("want a number of seconds from 0 (at once) to 10")
    return float(value)


def _relay_delay(value: Any) -> float:
    """
    The mean wait before pending transactions go to peers: 0 (at once) to a minute.
    """
    if type(value) not in (int, float) or not 0 <= value <= 60:
        raise ValueError("want a number of seconds from 0 (at once) to 60")
    return float(value)


def _seconds_or_zero(value: Any) -> float:
    """
    A number of seconds from 0 (off) to a week.
    """
    if type(value) not in (int, float) or not 0 <= value <= 604800:
        raise ValueError("want a number of seconds from 0 (no limit) to 604800")
    return float(value)


def _table(value: Any) -> dict[str, Any]:
    """
    Any table (the genesis is checked by the genesis builder).
    """
    if not isinstance(value, dict):
        raise ValueError("want a table")
    return value


def _revert_error_code(value: Any) -> int:
    """
    The JSON-RPC code of a revert: the specification's -32015 or geth's 3.
    """
    if type(value) is not int or value not in (-32015, 3):
        raise ValueError("want -32015 or 3")
    return value


def _fork_schedule(value: Any) -> dict[str, str]:
    """
    A table of first block (a decimal key) to EVM rule set name, with block 0 named.
    """
    from nodex.evm.forks import FORKS

    if not isinstance(value, dict) or not value:
        raise ValueError("want a table of first block to fork name")
    for key, name in value.items():
        if not (isinstance(key, str) and key.isdigit() and (key == "0" or not key.startswith("0"))):
            raise ValueError(f"block {key!r} is not a decimal block number")
        if name not in FORKS:
            raise ValueError(f"block {key}: unknown fork {name!r}, want one of {', '.join(sorted(FORKS))}")
    if "0" not in value:
        raise ValueError("want the fork of block 0")
    return dict(value)


_MODULE_SCHEMA = {
    "enabled": _boolean,
    "disabled_methods": _strings,
    "enabled_methods": _strings,
}

def _node_ids(value: Any) -> list[str]:
    """
    An array of node ids: 64-byte public keys in hex (C{0x} optional).
    """
    ids = _strings(value)
    for text in ids:
        digits = text.removeprefix("0x")
        if len(digits) != 128 or not re.fullmatch(r"[0-9a-fA-F]+", digits):
            raise ValueError(f"{_show(text)}: want a node id of 128 hex digits")
    return ids


def _banned_addresses(value: Any) -> list[str]:
    """
    An array of IPv4 or IPv6 addresses and CIDR blocks that may be banned
    (not loopback, not the wildcard address; no host names).
    """
    from nodex.reputation.bans import parse_ban_target
    from nodex.reputation.errors import InvalidBanError

    texts = _strings(value)
    for text in texts:
        try:
            parse_ban_target(text, allow_host_names=False)
        except InvalidBanError:
            raise ValueError(
                f"{_show(text)}: want an IP address or CIDR block, not loopback or the wildcard address"
            ) from None
    return texts


def _trusted_addresses(value: Any) -> list[str]:
    """
    An array of IPv4 or IPv6 addresses and CIDR blocks to trust (loopback allowed; no host names).
    """
    texts = _strings(value)
    for text in texts:
        try:
            ipaddress.ip_network(text, strict=False)
        except ValueError:
            raise ValueError(f"{_show(text)}: want an IP address or CIDR block") from None
    return texts


def _punishments(max_records_low: int) -> dict[str, Check]:
    """
    The punishment parameters of one kind of scoring record.
    """
    return {
        "duration": _integer(1),
        "increment": _integer(0, 10000),
        "max_duration": _integer(0),
        "max_records": _integer(max_records_low),
    }


_SCORING_SCHEMA = {
    "punishment_enabled": _boolean,
    "banned_peer_ids": _node_ids,
    "banned_peer_ips": _banned_addresses,
    "trusted_peer_ids": _node_ids,
    "trusted_peer_ips": _trusted_addresses,
    "node": _punishments(1),
    "address": _punishments(0),
}

SCHEMA: dict[str, Any] = {
    "network": _choice(*NETWORKS),
    "datadir": _datadir,
    "log_level": _choice(*LOG_LEVELS),
    "worker_niceness": _integer(0, 19),
    "compat": _choice(*COMPAT_NAMES),
    "chain": {"chain_id": _integer(1), "forks": _fork_schedule},
    "rpc": {
        "endpoint": endpoint,
        "hosts": _strings,
        "cors_origins": _strings,
        "max_body_bytes": _integer(1024),
        "max_batch": _integer(1),
        "max_response_bytes": _integer(1024),
        "timeout": _seconds,
        "call_gas_cap": _integer(21000),
        "estimate_gas_cap": _integer(21000),
        "max_log_blocks": _integer(0),
        "max_logs": _integer(0),
        "ws": endpoint,
        "ws_max_subscriptions": _integer(1, 100_000),
        "ws_max_queue_bytes": _integer(65536),
        "ws_max_connections": _integer(1, 1_000_000),
        "ws_max_connections_per_address": _integer(1, 1_000_000),
        "max_connections": _integer(1, 1_000_000),
        "max_connections_per_address": _integer(1, 1_000_000),
        "read_timeout": _seconds,
        "idle_timeout": _seconds,
        "busy_poll": _integer(0, 10_000),
        "max_filters_per_client": _integer(1, 10_000),
        "revert_error_code": _revert_error_code,
        "client_version": _client_version,
        "admin_allow_remote": _boolean,
        "trace_max_steps": _integer(1),
        "trace_filter_max_blocks": _integer(1),
        "trace_filter_max_traces": _integer(1),
        "modules": {name: _MODULE_SCHEMA for name in MODULES},
    },
    "p2p": {
        "endpoint": endpoint,
        "network_id": _integer(0),
        "peers": _peers,
        "static_peers": _peers,
        "max_inbound": _integer(0, 10000),
        "max_outbound": _integer(0, 10000),
        "max_half_open_per_address": _integer(1, 10000),
        "max_connections_per_address": _integer(1, 10000),
        "max_frame_bytes": _integer(65536, 2**32 - 1),
        "messages_per_second": _integer(1),
        "max_outstanding_requests": _integer(1, 1024),
        "request_timeout": _seconds,
        "handshake_timeout": _seconds,
        "max_queued_messages": _integer(1, 100_000),
        "max_queued_bytes": _integer(65536, 2**32 - 1),
        "max_invalid_transactions": _integer(0, 1_000_000),
        "max_handshake_failures": _integer(0, 10000),
        "reserved_slots": _integer(0, 10000),
        "transaction_delay": _relay_delay,
        "fetch_delay": _fetch_delay,
        "encryption": _boolean,
        "tls": _boolean,
        "tls_ca_certificate": _string,
    },
    "mining": {
        "mode": mining_mode,
        "coinbase": _coinbase,
        "cpu_miner": _boolean,
        "update_work_on_new_transactions": _boolean,
    },
    "manhole": {"endpoint": manhole_endpoint, "allow_remote": _boolean, "authorized_keys": _strings_path},
    "metrics": {
        "endpoint": endpoint,
        "allow_remote": _boolean,
        "max_head_age": _seconds_or_zero,
        "max_blocks_behind": _integer(0),
    },
    "wallet": {
        "enabled": _boolean,
        "network_name": _network_name,
        "allow_insecure_unlock": _boolean,
        "light_kdf": _boolean,
        "unlock_new_accounts": _boolean,
        "allow_key_export": _boolean,
    },
    "genesis": _table,
    "scoring": _SCORING_SCHEMA,
}
"""Every configuration key: nested tables, and at the leaves the checks."""


def check_layer(layer: Mapping[str, Any], source: str) -> Raw:
    """
    Check every key of one configuration layer against L{SCHEMA}.

    @param source: where the layer comes from, for the message.
    @return: the layer with normalised values.
    @raise ConfigError: an unknown key or a bad value.
    """
    return _check_table(layer, SCHEMA, (), source)


def _check_table(layer: Mapping[str, Any], schema: Mapping[str, Any], path: tuple[str, ...], source: str) -> Raw:
    """
    Check one table of a layer against its part of the schema.
    """
    checked: Raw = {}
    for key, value in layer.items():
        where = ".".join((*path, key))
        spec = schema.get(key)
        if spec is None:
            raise ConfigError(f'unknown configuration key "{where}" (in {source})')
        if isinstance(spec, dict):
            if not isinstance(value, dict):
                raise ConfigError(f'configuration key "{where}" (in {source}): want a table')
            checked[key] = _check_table(value, spec, (*path, key), source)
            continue
        try:
            checked[key] = spec(value)
        except ValueError as exc:
            raise ConfigError(f'configuration key "{where}" (in {source}): {exc}, got {_show(value)}') from None
    return checked


def _show(value: Any) -> str:
    """
    A value shortened for a message.
    """
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def merge(base: Raw, override: Mapping[str, Any]) -> Raw:
    """
    Lay C{override} over C{base}: tables merge key by key, other values
    (arrays included) replace; the C{genesis} table replaces as a whole, so
    that a file's genesis never mixes with the preset's.
    """
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict) and key != "genesis":
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def load_preset(network: str) -> Raw:
    """
    The built-in preset of C{network}, as shipped inside the package.

    @raise ConfigError: no such network, or the preset is broken.
    """
    if network not in NETWORKS:
        raise ConfigError(f'unknown network "{network}": want one of {", ".join(NETWORKS)}')
    text = files("nodex").joinpath("presets", f"{network}.toml").read_text()
    return check_layer(tomllib.loads(text), f"the {network} preset")


def read_file(path: str) -> Raw:
    """
    Read and check a TOML configuration file.

    @raise ConfigError: unreadable, not TOML, or with a bad key.
    """
    try:
        with open(path, "rb") as handle:
            layer = tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"cannot read configuration file {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"configuration file {path} is not valid TOML: {exc}") from None
    return check_layer(layer, path)


def effective(file_layer: Raw | None, flag_layer: Raw) -> Raw:
    """
    The effective configuration mapping: the preset of the chosen network
    (flags, then the file, then regtest), the file over it, the flags over
    both; C{datadir} defaults to C{~/.nodex/<network>}.

    @raise ConfigError: any layer is wrong.
    """
    flags = check_layer(flag_layer, "the command line")
    from_file = file_layer or {}
    network = flags.get("network") or from_file.get("network") or DEFAULT_NETWORK
    merged = merge(merge(load_preset(network), from_file), flags)
    datadir = merged.pop("datadir", None) or str(Path("~/.nodex", network).expanduser())
    merged.pop("network", None)
    return {"network": network, "datadir": datadir, **merged}


@dataclass(frozen=True)
class ModuleConfig:
    """
    The switches of one RPC module (reference §6 semantics).
    """

    enabled: bool
    disabled_methods: frozenset[str]
    enabled_methods: frozenset[str]


@dataclass(frozen=True)
class RPCConfig:
    """
    The JSON-RPC server's settings (reference §1.3 limits).
    """

    endpoint: str
    hosts: tuple[str, ...]
    cors_origins: tuple[str, ...]
    max_body_bytes: int
    max_batch: int
    max_response_bytes: int
    timeout: float
    call_gas_cap: int
    estimate_gas_cap: int
    max_log_blocks: int
    max_logs: int
    modules: Mapping[str, ModuleConfig]
    ws: str = "none"
    ws_max_subscriptions: int = 128
    ws_max_queue_bytes: int = 16 * 1024 * 1024
    ws_max_connections: int = 1024
    ws_max_connections_per_address: int = 256
    max_connections: int = 1024
    max_connections_per_address: int = 256
    read_timeout: float = 30.0
    idle_timeout: float = 120.0
    busy_poll: int = 0
    max_filters_per_client: int = 1000
    revert_error_code: int = -32015
    client_version: str = ""
    trace_max_steps: int = 1_000_000
    trace_filter_max_blocks: int = 5_000
    trace_filter_max_traces: int = 10_000
    admin_allow_remote: bool = False


@dataclass(frozen=True)
class P2PConfig:
    """
    The peer network's limits and transport (C{[p2p]} but its endpoint,
    network id and peers, which L{NodeConfig} holds); C{docs/p2p.md} gives
    each key's meaning and bounds.  A key added to C{[p2p]} for the peer
    network becomes a field here, read by name in L{build}.
    """

    max_inbound: int
    max_outbound: int
    max_half_open_per_address: int
    max_connections_per_address: int
    max_frame_bytes: int
    messages_per_second: int
    max_outstanding_requests: int
    request_timeout: float
    handshake_timeout: float
    max_queued_messages: int
    max_queued_bytes: int
    max_invalid_transactions: int
    max_handshake_failures: int
    reserved_slots: int
    transaction_delay: float
    fetch_delay: float
    encryption: bool
    tls: bool
    tls_ca_certificate: str


@dataclass(frozen=True)
class MetricsConfig:
    """
    The metrics and health port (docs/operating.md).

    @ivar endpoint: where it listens, or C{none}.
    @ivar allow_remote: whether it may listen beyond the loopback interface.
    @ivar max_head_age: seconds after which the head is stale and
        C{/health} answers 503 (0: never).
    @ivar max_blocks_behind: how far behind a syncing node may be and still
        be healthy.
    """

    endpoint: str = "none"
    allow_remote: bool = False
    max_head_age: float = 0.0
    max_blocks_behind: int = 64


@dataclass(frozen=True)
class ManholeConfig:
    """
    Who may use the manhole, and from where.

    @ivar allow_remote: whether it may listen beyond the loopback interface.
    @ivar authorized_keys: the OpenSSH authorized-keys file ("" for
        C{<datadir>/manhole_keys}).
    """

    allow_remote: bool = False
    authorized_keys: str = ""


@dataclass(frozen=True)
class NodeConfig:
    """
    The effective configuration of a node.

    @ivar raw: the merged mapping it was built from (what C{--dump-config}
        prints); the node reads its typed sections, never this.
    @ivar p2p: the peer network's limits and transport (C{[p2p]}).
    @ivar scoring: peer scoring and bans (C{[scoring]}).
    @ivar worker_niceness: how much nicer than the reactor thread the
        worker threads run (L{nodex.services.threads.set_worker_niceness}).
    @ivar compat: whose conventions the RPC answers follow, C{"reference"}
        or C{"ethereum"} (L{nodex.api.conventions.Conventions}).
    """

    network: str
    datadir: Path
    log_level: str
    chain_id: int
    rpc: RPCConfig
    p2p_endpoint: str
    p2p_network_id: int
    peers: tuple[str, ...]
    mining_mode: str
    manhole_endpoint: str
    wallet_enabled: bool
    genesis: Mapping[str, Any]
    raw: Mapping[str, Any]
    p2p: P2PConfig
    scoring: "ScoringConfig"
    mining_coinbase: str = ""
    cpu_miner: bool = False
    update_work_on_new_transactions: bool = False
    metrics: MetricsConfig = MetricsConfig()
    manhole: ManholeConfig = ManholeConfig()
    wallet_network_name: str = "Ethereum"
    wallet_allow_insecure_unlock: bool = False
    wallet_light_kdf: bool = False
    wallet_unlock_new_accounts: bool = True
    wallet_allow_key_export: bool = True
    forks: Mapping[int, str] = field(default_factory=lambda: {0: "Cancun+CLZ"})
    worker_niceness: int = 10
    compat: str = "reference"


def build(raw: Raw) -> NodeConfig:
    """
    Turn an effective mapping into a L{NodeConfig}.

    @raise ConfigError: a key that every configuration needs is missing.
    """
    _check_loopback(raw, "manhole")
    _check_loopback(raw, "metrics")
    try:
        rpc = raw["rpc"]
        modules = {
            name: ModuleConfig(
                enabled=settings.get("enabled", False),
                disabled_methods=frozenset(settings.get("disabled_methods", ())),
                enabled_methods=frozenset(settings.get("enabled_methods", ())),
            )
            for name, settings in rpc.get("modules", {}).items()
        }
        return NodeConfig(
            network=raw["network"],
            datadir=Path(raw["datadir"]),
            log_level=raw.get("log_level", "info"),
            chain_id=raw["chain"]["chain_id"],
            rpc=RPCConfig(
                endpoint=rpc["endpoint"],
                hosts=tuple(rpc["hosts"]),
                cors_origins=tuple(rpc["cors_origins"]),
                max_body_bytes=rpc["max_body_bytes"],
                max_batch=rpc["max_batch"],
                max_response_bytes=rpc["max_response_bytes"],
                timeout=rpc["timeout"],
                call_gas_cap=rpc["call_gas_cap"],
                estimate_gas_cap=rpc["estimate_gas_cap"],
                max_log_blocks=rpc["max_log_blocks"],
                max_logs=rpc["max_logs"],
                modules=modules,
                ws=rpc.get("ws", "none"),
                ws_max_subscriptions=rpc.get("ws_max_subscriptions", 128),
                ws_max_queue_bytes=rpc.get("ws_max_queue_bytes", 16 * 1024 * 1024),
                ws_max_connections=rpc.get("ws_max_connections", 1024),
                ws_max_connections_per_address=rpc.get("ws_max_connections_per_address", 256),
                max_connections=rpc.get("max_connections", 1024),
                max_connections_per_address=rpc.get("max_connections_per_address", 256),
                read_timeout=rpc.get("read_timeout", 30.0),
                idle_timeout=rpc.get("idle_timeout", 120.0),
                busy_poll=rpc.get("busy_poll", 0),
                max_filters_per_client=rpc.get("max_filters_per_client", 1000),
                revert_error_code=rpc.get("revert_error_code", -32015),
                client_version=rpc.get("client_version", ""),
                trace_max_steps=rpc.get("trace_max_steps", 1_000_000),
                trace_filter_max_blocks=rpc.get("trace_filter_max_blocks", 5_000),
                trace_filter_max_traces=rpc.get("trace_filter_max_traces", 10_000),
                admin_allow_remote=rpc.get("admin_allow_remote", False),
            ),
            p2p_endpoint=raw["p2p"]["endpoint"],
            p2p_network_id=raw["p2p"]["network_id"],
            peers=tuple(dict.fromkeys([*raw["p2p"]["peers"], *raw["p2p"]["static_peers"]])),
            mining_mode=raw["mining"]["mode"],
            manhole_endpoint=raw["manhole"]["endpoint"],
            wallet_enabled=raw["wallet"]["enabled"],
            genesis=raw["genesis"],
            raw=raw,
            p2p=P2PConfig(**{item.name: raw["p2p"][item.name] for item in fields(P2PConfig)}),
            scoring=_scoring_config(raw),
            mining_coinbase=raw["mining"].get("coinbase", ""),
            cpu_miner=raw["mining"].get("cpu_miner", False),
            update_work_on_new_transactions=raw["mining"].get("update_work_on_new_transactions", False),
            metrics=MetricsConfig(
                endpoint=raw["metrics"]["endpoint"],
                allow_remote=raw["metrics"]["allow_remote"],
                max_head_age=raw["metrics"]["max_head_age"],
                max_blocks_behind=raw["metrics"]["max_blocks_behind"],
            ),
            manhole=ManholeConfig(
                allow_remote=raw["manhole"]["allow_remote"],
                authorized_keys=raw["manhole"]["authorized_keys"],
            ),
            wallet_network_name=raw["wallet"].get("network_name", "Ethereum"),
            wallet_allow_insecure_unlock=raw["wallet"].get("allow_insecure_unlock", False),
            wallet_light_kdf=raw["wallet"].get("light_kdf", False),
            wallet_unlock_new_accounts=raw["wallet"].get("unlock_new_accounts", True),
            wallet_allow_key_export=raw["wallet"].get("allow_key_export", True),
            forks={int(block): name for block, name in raw["chain"].get("forks", {"0": "Cancun+CLZ"}).items()},
            worker_niceness=raw.get("worker_niceness", 10),
            compat=raw.get("compat", "reference"),
        )
    except KeyError as exc:
        raise ConfigError(f"configuration key {exc} is missing from every layer") from None


def load_config(config_file: str | None, flag_layer: Raw) -> NodeConfig:
    """
    The node's configuration from the presets, an optional file and the flags.

    @raise ConfigError: a layer is unreadable or wrong.
    """
    file_layer = read_file(config_file) if config_file else None
    return build(effective(file_layer, flag_layer))


@dataclass(frozen=True)
class PunishmentConfig:
    """
    The punishments of one kind of peer scoring record (reference §15).

    @ivar duration: the first punishment, in seconds.
    @ivar increment: percent added per earlier punishment.
    @ivar max_duration: the longest punishment in seconds (0: none).
    @ivar max_records: the most records kept (0: no bound).
    """

    duration: int
    increment: int
    max_duration: int
    max_records: int


@dataclass(frozen=True)
class ScoringConfig:
    """
    The peer scoring and ban settings (C{[scoring]}).
    """

    punishment_enabled: bool
    banned_peer_ids: tuple[str, ...]
    banned_peer_ips: tuple[str, ...]
    trusted_peer_ids: tuple[str, ...]
    trusted_peer_ips: tuple[str, ...]
    node: PunishmentConfig
    address: PunishmentConfig


def _scoring_config(raw: Raw) -> ScoringConfig:
    """
    The C{[scoring]} table of an effective configuration.

    @raise ConfigError: a key is missing from every layer.
    """
    try:
        table = raw["scoring"]
        return ScoringConfig(
            punishment_enabled=table["punishment_enabled"],
            banned_peer_ids=tuple(table["banned_peer_ids"]),
            banned_peer_ips=tuple(table["banned_peer_ips"]),
            trusted_peer_ids=tuple(table["trusted_peer_ids"]),
            trusted_peer_ips=tuple(table["trusted_peer_ips"]),
            node=_punishment_config(table["node"]),
            address=_punishment_config(table["address"]),
        )
    except KeyError as exc:
        raise ConfigError(f"configuration key {exc} of [scoring] is missing from every layer") from None


def _punishment_config(table: Mapping[str, Any]) -> PunishmentConfig:
    """
    One C{[scoring.node]} or C{[scoring.address]} table.

    @raise KeyError: a key is missing.
    """
    return PunishmentConfig(table["duration"], table["increment"], table["max_duration"], table["max_records"])


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def dump_toml(mapping: Mapping[str, Any]) -> str:
    """
    Write a configuration mapping as TOML that L{tomllib} reads back equal.
    """
    lines: list[str] = []
    _dump_table(lines, (), mapping)
    return "\n".join(lines).strip() + "\n"


def _dump_table(lines: list[str], path: tuple[str, ...], table: Mapping[str, Any]) -> None:
    """
    Write one table: its scalar keys under its header, then its sub-tables.
    """
    scalars = [(key, value) for key, value in table.items() if not isinstance(value, dict)]
    tables = [(key, value) for key, value in table.items() if isinstance(value, dict)]
    if path and (scalars or not tables):
        lines.append("")
        lines.append("[" + ".".join(_toml_key(part) for part in path) + "]")
    for key, value in scalars:
        lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
    for key, value in tables:
        _dump_table(lines, (*path, key), value)


def _toml_key(key: str) -> str:
    """
    A key, bare when TOML allows, else quoted.
    """
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key)


def _toml_value(value: Any) -> str:
    """
    A scalar or array value in TOML syntax.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    raise ConfigError(f"cannot write {value!r} as TOML")


__all__ = [
    "ConfigError",
    "DEFAULT_NETWORK",
    "LOG_LEVELS",
    "MODULES",
    "ManholeConfig",
    "MetricsConfig",
    "ModuleConfig",
    "NETWORKS",
    "NodeConfig",
    "PunishmentConfig",
    "ScoringConfig",
    "RPCConfig",
    "SCHEMA",
    "build",
    "check_layer",
    "dump_toml",
    "effective",
    "endpoint",
    "load_config",
    "listens_on_loopback_only",
    "split_endpoint",
    "load_preset",
    "manhole_endpoint",
    "merge",
    "mining_mode",
    "read_file",
    "P2PConfig",
    "server_endpoint_description",
]
