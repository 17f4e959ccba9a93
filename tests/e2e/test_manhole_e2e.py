"""
End-to-end tests of the manhole: the real C{ssh} client logs in to a running
node with an Ed25519 key and evaluates expressions; a key that is not in the
authorized-keys file is refused.
"""

import os
import shutil
import subprocess
from pathlib import Path

from twisted.internet import reactor
from twisted.internet.defer import Deferred
from twisted.internet.protocol import ProcessProtocol
from twisted.python.failure import Failure
from twisted.trial.unittest import SkipTest, TestCase

from nodex.node import NodeService
from nodex.tap import Options, makeService

SSH = shutil.which("ssh")
SSH_KEYGEN = shutil.which("ssh-keygen")


class _Output(ProcessProtocol):
    """
    Collects a process's output and fires C{ended} with its exit code.
    """

    def __init__(self, stdin: bytes) -> None:
        """
        @param stdin: what to type once connected.
        """
        self.stdin = stdin
        self.output = b""
        self.ended: Deferred[int | None] = Deferred()

    def connectionMade(self) -> None:
        """
        Type the lines.
        """
        self.transport.write(self.stdin)  # type: ignore[union-attr]

    def outReceived(self, data: bytes) -> None:
        """
        Keep the output; end the session after the end marker.
        """
        self.output += data
        # Close the session once the answers are in (end of input, then Ctrl-D).
        if b"<<end>>" in self.output.replace(b"'", b"") and self.transport is not None:
            self.transport.write(b"\x04")
            self.transport.closeStdin()  # type: ignore[attr-defined]

    errReceived = outReceived

    def processEnded(self, reason: Failure) -> None:
        """
        Fire C{ended} with the exit code.
        """
        self.ended.callback(reason.value.exitCode)


class ManholeTests(TestCase):
    """
    A node with its manhole on 127.0.0.1, port 0, and the real ssh client.
    """

    timeout = 120

    def setUp(self) -> None:
        """
        Skip without the OpenSSH client; a folder for keys.
        """
        if SSH is None or SSH_KEYGEN is None:
            raise SkipTest("the OpenSSH client (ssh, ssh-keygen) is needed: apt-get install openssh-client")
        self.keys = Path(self.mktemp())
        self.keys.mkdir()

    def make_key(self, name: str) -> Path:
        """
        A new Ed25519 key pair without a passphrase; the private key's path.
        """
        path = self.keys / name
        subprocess.run([SSH_KEYGEN, "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
        return path

    async def start_node(self, authorized: list[Path]) -> int:
        """
        Start a regtest node with the manhole, authorising the given keys;
        return the manhole's port.
        """
        datadir = Path(self.mktemp())
        datadir.mkdir(mode=0o700)
        (datadir / "manhole_keys").write_text("".join(Path(f"{key}.pub").read_text() for key in authorized))
        options = Options()
        options.parseOptions([
            "--datadir", str(datadir), "--rpc", "none", "--ws", "none", "--manhole", "ssh:0:interface=127.0.0.1",
        ])
        node: NodeService = makeService(options)
        node.startService()
        self.addCleanup(node.stopService)
        self.datadir = datadir
        port = await node.getServiceNamed("manhole").port_service.when_listening()
        return port.getHost().port

    async def ssh(self, key: Path, port: int, lines: bytes) -> tuple[int | None, bytes]:
        """
        Run the ssh client with C{key}, typing C{lines}; its status and output.
        """
        command = [
            SSH, "-tt", "-i", str(key), "-p", str(port), "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
            "-o", "StrictHostKeyChecking=no", "-o", f"UserKnownHostsFile={self.keys / 'known_hosts'}",
            "-o", "ConnectTimeout=30", "-F", "/dev/null", "operator@127.0.0.1",
        ]
        process = _Output(lines)
        reactor.spawnProcess(process, SSH, command, env={"PATH": os.environ.get("PATH", "")})
        code = await process.ended
        return code, process.output

    async def test_login_and_evaluate(self) -> None:
        """
        With an authorised Ed25519 key, the prompt evaluates expressions over
        the live services and the helpers.
        """
        key = self.make_key("operator")
        port = await self.start_node([key])
        lines = (
            b"block(0)\n"
            b"head()['number'] + 40\n"
            b"chain.chain_id\n"
            b"pool_summary()['pending'], peers()\n"
            b"config.network, sorted(k for k in ('chain', 'pool', 'miner', 'state', 'filters', 'reputation') if k in globals())\n"
            b"'<<' + 'end>>'\n"
        )
        code, output = await self.ssh(key, port, lines)
        text = output.decode(errors="replace")
        # block(n) answers a Deferred (the read runs in a reader thread); the
        # prompt prints its result when it fires, which may come after the
        # session has typed its last line.
        self.assertIn("<Deferred #0>", text)
        if "Deferred #0 called back" in text:
            self.assertIn("Deferred #0 called back: Block(", text)
        self.assertIn("40", text)
        self.assertIn("33", text)
        self.assertIn("(0, [])", text)
        self.assertIn("('regtest', ['chain', 'filters', 'miner', 'pool', 'reputation', 'state'])", text)
        self.assertTrue((self.datadir / "manhole_host_key").exists())
        self.assertEqual((self.datadir / "manhole_host_key").stat().st_mode & 0o777, 0o600)

    async def test_wrong_key_refused(self) -> None:
        """
        A key that the authorized-keys file does not list is refused.
        """
        allowed = self.make_key("operator")
        stranger = self.make_key("stranger")
        port = await self.start_node([allowed])
        code, output = await self.ssh(stranger, port, b"1 + 1\n")
        self.assertEqual(code, 255)
        self.assertIn(b"Permission denied", output)
        self.assertNotIn(b"\n2", output)
