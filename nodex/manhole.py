"""
The manhole (L6, DESIGN §7): an SSH shell with Python's prompt inside the
running node, for operators.  Off by default; C{--manhole
ssh:PORT:interface=127.0.0.1} (or any server endpoint) opens it.

Only keys listed in an OpenSSH authorized-keys file may log in (any user
name; by default C{<datadir>/manhole_keys}, read again at every login so
that keys can be added or removed without a restart).  The server's own host
key is made on the first start and kept in C{<datadir>/manhole_host_key}.
The namespace holds the node's live services by name and the helpers
C{head()}, C{block(n)}, C{peers()} and C{pool_summary()}
(docs/operating.md).  What is typed runs on the reactor thread: a slow
expression stops the node while it runs.
"""

import os
import warnings
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ed25519
from cryptography.utils import CryptographyDeprecationWarning
from twisted.application.service import MultiService

with warnings.catch_warnings():
    # Twisted before 26 names TripleDES where recent cryptography warns that
    # it moved; the manhole never offers it, and the warning would land on
    # an operator's terminal at every start.
    warnings.simplefilter("ignore", CryptographyDeprecationWarning)
    from twisted.conch import interfaces as conch_interfaces, manhole, manhole_ssh
    from twisted.conch.checkers import IAuthorizedKeysDB, SSHPublicKeyChecker, readAuthorizedKeyFile
    from twisted.conch.insults import insults
    from twisted.conch.ssh import keys
from twisted.cred.portal import Portal
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IStreamServerEndpoint
from twisted.logger import Logger
from zope.interface import implementer

from nodex.api.chain import IChainService
from nodex.api.pool import ITransactionPool

HOST_KEY_FILE = "manhole_host_key"
"""The manhole's SSH host key, under the data directory (made on the first start)."""

AUTHORIZED_KEYS_FILE = "manhole_keys"
"""The default authorized-keys file, under the data directory."""


@implementer(IAuthorizedKeysDB)
class AuthorizedKeysFile:
    """
    The keys of an OpenSSH authorized-keys file, for any user name; read at
    every login; a missing file authorises nobody.
    """

    log = Logger()

    def __init__(self, path: Path) -> None:
        """
        @param path: the authorized-keys file.
        """
        self.path = path

    def getAuthorizedKeys(self, avatarId: bytes) -> Iterable[keys.Key]:
        """
        The keys in the file now.
        """
        try:
            with self.path.open("rb") as handle:
                return list(readAuthorizedKeyFile(handle))
        except FileNotFoundError:
            self.log.warn("manhole login refused: no authorized-keys file {path}", path=str(self.path))
            return []


def load_or_make_host_key(path: Path) -> keys.Key:
    """
    The manhole's host key: read from C{path}, or made (Ed25519) and
    written there, readable by the owner only, on the first start.
    """
    if path.exists():
        return keys.Key.fromFile(str(path))
    key = keys.Key(ed25519.Ed25519PrivateKey.generate())
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(key.toString("openssh"))
    return key


class ManholeSession(manhole_ssh.TerminalSession):
    """
    A terminal session that also works without a pseudo-terminal (C{ssh -T},
    a piped command), follows window changes, and ends on end of input.
    """

    width = 80
    height = 25

    def openShell(self, proto: Any) -> None:
        """
        Start the Python prompt, remembering its transport.
        """
        self._terminal = self.transportFactory(
            proto, self.chainedProtocolFactory(), conch_interfaces.IConchUser(self.original), self.width, self.height
        )

    def windowChanged(self, newWindowSize: tuple[int, ...]) -> None:
        """
        Tell the prompt the terminal's new size.
        """
        self.height, self.width = newWindowSize[:2]
        terminal = getattr(self, "_terminal", None)
        if terminal is not None:
            terminal.chainedProtocol.terminalProtocol.terminalSize(self.width, self.height)

    def eofReceived(self) -> None:
        """
        The client closed its input: end the session.
        """
        terminal = getattr(self, "_terminal", None)
        if terminal is not None:
            terminal.proto.loseConnection()


def helpers(chain: IChainService, pool: ITransactionPool, peer_network: Any) -> dict[str, Callable[..., Any]]:
    """
    The manhole's helper functions.

    - C{head()}: the head block's number, hash, timestamp and total difficulty;
    - C{block(n)}: a Deferred firing with canonical block C{n} (the prompt
      prints it when it fires);
    - C{peers()}: the connected peers (node id, host, IP address, port);
    - C{pool_summary()}: the pending and queued counts, and the first
      pending transactions' hashes.
    """

    def head() -> dict[str, Any]:
        """
        The head block's number, hash, timestamp and total difficulty.
        """
        current = chain.head
        header = current.header
        return {
            "number": header.number,
            "hash": "0x" + bytes(header.hash).hex(),
            "timestamp": header.timestamp,
            "total_difficulty": current.total_difficulty,
        }

    def block(number: int) -> Deferred[Any]:
        """
        Canonical block C{number}, as a Deferred.
        """
        return chain.get_block_by_number(number)

    def peers() -> list[Any]:
        """
        The connected peers (L{nodex.api.peers.PeerInfo}: node id, host, IP, port).
        """
        return list(peer_network.peers())

    def pool_summary(first: int = 10) -> dict[str, Any]:
        """
        The pending and queued counts and the first C{first} pending hashes.
        """
        pending = pool.pending()
        return {
            "pending": len(pending),
            "queued": len(pool.queued()),
            "first_pending": ["0x" + bytes(tx.hash).hex() for tx in pending[:first]],
        }

    return {"head": head, "block": block, "peers": peers, "pool_summary": pool_summary}


def manhole_portal(namespace: Mapping[str, Any], authorized_keys: Path) -> Portal:
    """
    The SSH portal: public-key logins from C{authorized_keys}, each getting a
    Python prompt over C{namespace}.
    """
    realm = manhole_ssh.TerminalRealm()
    realm.sessionFactory = ManholeSession
    realm.chainedProtocolFactory = lambda: insults.ServerProtocol(manhole.Manhole, dict(namespace))
    return Portal(realm, [SSHPublicKeyChecker(AuthorizedKeysFile(authorized_keys))])


class ManholeService(MultiService):
    """
    The manhole's SSH server: the host key is read (or made) and the port
    opened when the service starts, not when it is composed.
    """

    log = Logger()

    def __init__(
        self,
        endpoint: IStreamServerEndpoint,
        namespace: Mapping[str, Any],
        datadir: Path,
        authorized_keys: Path,
        listening_service: Callable[[IStreamServerEndpoint, Any], Any],
    ) -> None:
        """
        @param endpoint: where to listen.
        @param namespace: the prompt's names.
        @param datadir: where the host key lives.
        @param authorized_keys: the operators' keys.
        @param listening_service: makes the child service that listens
            (L{nodex.services.listening.ListeningService}, for one log line
            and one error report for every server of the node).
        """
        super().__init__()
        self._endpoint = endpoint
        self._namespace = namespace
        self._datadir = datadir
        self._authorized_keys = authorized_keys
        self._listening_service = listening_service
        self.port_service: Any = None

    def _prepare(self) -> None:
        """
        Read or make the host key and add the listening child, once.
        """
        if self.port_service is not None:
            return
        host_key = load_or_make_host_key(self._datadir / HOST_KEY_FILE)
        factory = manhole_ssh.ConchFactory(manhole_portal(self._namespace, self._authorized_keys))
        factory.publicKeys = {host_key.sshType(): host_key.public()}
        factory.privateKeys = {host_key.sshType(): host_key}
        self.port_service = self._listening_service(self._endpoint, factory)
        self.port_service.setServiceParent(self)
        if not self._authorized_keys.exists():
            self.log.warn(
                "manhole: no authorized-keys file {path}: nobody can log in until it lists a key",
                path=str(self._authorized_keys),
            )

    def privilegedStartService(self) -> None:
        """
        Prepare, then listen (before the other services start).
        """
        self._prepare()
        super().privilegedStartService()

    def startService(self) -> None:
        """
        Prepare (if not done) and start listening.
        """
        self._prepare()
        super().startService()


__all__ = [
    "AUTHORIZED_KEYS_FILE",
    "AuthorizedKeysFile",
    "HOST_KEY_FILE",
    "ManholeService",
    "ManholeSession",
    "helpers",
    "load_or_make_host_key",
    "manhole_portal",
]
