"""
Tests for L{nodex.manhole}: keys, the host key, and the helpers.
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from twisted.conch.ssh import keys
from twisted.internet.defer import succeed
from twisted.trial.unittest import SynchronousTestCase

from nodex.api.chain import ChainHead
from nodex.manhole import AuthorizedKeysFile, helpers, load_or_make_host_key
from tests.test_metrics import header

ED25519_PUBLIC = (
    b"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAbE1PA6Zb1ScLq0aQgBbJ5fB4z+1yHcWqxD9ihFt0fK operator@example"
)


@dataclass
class FakeTransaction:
    """
    A transaction that has only a hash.
    """

    hash: bytes


@dataclass
class FakeChain:
    """
    A chain with a head, recording the blocks asked for.
    """

    head: ChainHead = field(default_factory=lambda: ChainHead(header(7, 99), 8))
    asked: list[int] = field(default_factory=list)

    def get_block_by_number(self, number: int) -> Any:
        """
        A stand-in block, at once.
        """
        self.asked.append(number)
        return succeed(f"block {number}")


@dataclass
class FakePool:
    """
    A pool of twelve pending and one queued transaction.
    """

    def pending(self) -> list[FakeTransaction]:
        """
        Twelve pending transactions.
        """
        return [FakeTransaction(bytes([index]) * 32) for index in range(12)]

    def queued(self) -> list[FakeTransaction]:
        """
        One queued transaction.
        """
        return [FakeTransaction(b"\xff" * 32)]


class FakeNetwork:
    """
    A peer network of one peer.
    """

    def peers(self) -> list[str]:
        """
        One peer entry.
        """
        return ["0123abcd | peer.example/192.0.2.1:50501"]


class AuthorizedKeysFileTests(SynchronousTestCase):
    """
    Tests for L{AuthorizedKeysFile}.
    """

    def test_reads_keys_for_any_user(self) -> None:
        """
        The file's keys (comments and blank lines skipped) for any user name,
        read again at each login.
        """
        path = Path(self.mktemp())
        path.write_bytes(b"# operators\n\n" + ED25519_PUBLIC + b"\n")
        database = AuthorizedKeysFile(path)
        found = list(database.getAuthorizedKeys(b"anyone"))
        self.assertEqual([key.sshType() for key in found], [b"ssh-ed25519"])
        path.write_bytes(b"")
        self.assertEqual(list(database.getAuthorizedKeys(b"anyone")), [])

    def test_missing_file_authorises_nobody(self) -> None:
        """
        Without the file nobody logs in (and no error is raised).
        """
        self.assertEqual(list(AuthorizedKeysFile(Path(self.mktemp())).getAuthorizedKeys(b"root")), [])
        self.flushLoggedErrors()


class HostKeyTests(SynchronousTestCase):
    """
    Tests for L{load_or_make_host_key}.
    """

    def test_made_once_private_and_reused(self) -> None:
        """
        The first start makes an Ed25519 key readable by the owner only; the
        next start reads the same key.
        """
        path = Path(self.mktemp())
        made = load_or_make_host_key(path)
        self.assertEqual(made.sshType(), b"ssh-ed25519")
        self.assertTrue(made.isPublic() is False)
        self.assertEqual(path.stat().st_mode & 0o777, 0o600)
        self.assertEqual(load_or_make_host_key(path), made)
        self.assertEqual(keys.Key.fromFile(str(path)).fingerprint(), made.fingerprint())


class HelperTests(SynchronousTestCase):
    """
    Tests for L{helpers}.
    """

    def setUp(self) -> None:
        """
        The helpers over the fakes.
        """
        self.chain = FakeChain()
        self.tools = helpers(self.chain, FakePool(), FakeNetwork())  # type: ignore[arg-type]

    def test_head(self) -> None:
        """
        C{head()} names the head's number, hash, timestamp and total difficulty.
        """
        head = self.tools["head"]()
        self.assertEqual(
            head,
            {"number": 7, "hash": "0x" + self.chain.head.header.hash.hex(), "timestamp": 99, "total_difficulty": 8},
        )

    def test_block(self) -> None:
        """
        C{block(n)} asks the chain for canonical block C{n}.
        """
        self.assertEqual(self.successResultOf(self.tools["block"](3)), "block 3")
        self.assertEqual(self.chain.asked, [3])

    def test_peers_and_pool(self) -> None:
        """
        C{peers()} lists the network's peers; C{pool_summary()} counts and
        shows the first pending hashes.
        """
        self.assertEqual(self.tools["peers"](), ["0123abcd | peer.example/192.0.2.1:50501"])
        summary = self.tools["pool_summary"](2)
        self.assertEqual(summary, {"pending": 12, "queued": 1, "first_pending": ["0x" + "00" * 32, "0x" + "01" * 32]})
