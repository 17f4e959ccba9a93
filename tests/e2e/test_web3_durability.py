"""
Durability end to end: a C{twistd -n nodex} process automining a stream of
transactions sent with web3.py is killed with SIGKILL; after a restart on the
same data directory, every transaction whose receipt the client had seen is
still there, in the same block.
"""

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from twisted.trial.unittest import SkipTest, SynchronousTestCase

try:
    from eth_account import Account as EthAccount
    from web3 import Web3
except ImportError:  # pragma: no cover - the test extra is missing
    Web3 = None

from nodex.crypto import keccak256

REPOSITORY = Path(__file__).resolve().parent.parent.parent
KEY = "0x" + keccak256(b"cow").hex()
RECIPIENT = "0x7986b3DF570230288501EEa3D890bd66948C9B79"
STREAM = 400
KILL_AFTER = 40


def free_port() -> int:
    """
    A TCP port nothing listens on now.
    """
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class NodeProcess:
    """
    C{twistd -n nodex} in a child process, run from the repository root.
    """

    def __init__(self, datadir: str, log: Path) -> None:
        self.port = free_port()
        command = [
            sys.executable, "-c", "from twisted.scripts.twistd import run; run()",
            "--pidfile=", "-n", "nodex", "--datadir", datadir, "--rpc", f"tcp:{self.port}:interface=127.0.0.1", "--ws", "none",
        ]
        self._log = log.open("ab")
        self.process = subprocess.Popen(command, cwd=REPOSITORY, stdout=self._log, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{self.port}/"

    def wait_listening(self, timeout: float = 120.0) -> None:
        """
        Wait until the node accepts connections.

        @raise AssertionError: it exited or never listened.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"the node exited with {self.process.returncode}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.1)
        raise AssertionError("the node never listened")

    def kill(self) -> None:
        """
        SIGKILL, and reap.
        """
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=60)
        self._log.close()

    def terminate(self) -> int:
        """
        SIGTERM, and wait for the exit status.
        """
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=60)
        finally:
            self._log.close()


class KillDuringStreamTests(SynchronousTestCase):
    """
    SIGKILL in the middle of a stream of automined transactions.
    """

    def setUp(self) -> None:
        if Web3 is None:
            raise SkipTest("web3.py (the test extra) is not installed")

    def stream(self, w3: Any, raws: list[bytes], seen: dict[str, str], enough: threading.Event) -> None:
        """
        Send the transactions one after another and record each receipt
        seen (transaction hash to block hash) until the node dies.
        """
        for raw in raws:
            try:
                tx_hash = w3.eth.send_raw_transaction(raw)
                receipt = w3.eth.get_transaction_receipt(tx_hash)
            except Exception:
                # The node died under the request: the stream ends here.
                break
            seen["0x" + bytes(tx_hash).hex()] = "0x" + bytes(receipt["blockHash"]).hex()
            if len(seen) >= KILL_AFTER:
                enough.set()
        enough.set()

    def test_no_seen_receipt_is_lost(self) -> None:
        """
        Every receipt the client saw before the kill is there after the
        restart, and the restarted node goes on mining.
        """
        # Absolute: the node runs from the repository root, not from trial's directory.
        datadir = os.path.abspath(self.mktemp())
        log = Path(os.path.abspath(self.mktemp() + ".log"))
        raws = [
            EthAccount.sign_transaction(
                {"chainId": 33, "nonce": n, "gasPrice": 0, "gas": 21000, "to": RECIPIENT, "value": 1}, KEY
            ).raw_transaction
            for n in range(STREAM)
        ]
        node = NodeProcess(datadir, log)
        self.addCleanup(node.kill)
        node.wait_listening()
        w3 = Web3(Web3.HTTPProvider(node.url, request_kwargs={"timeout": 30}))
        seen: dict[str, str] = {}
        enough = threading.Event()
        sender = threading.Thread(target=self.stream, args=(w3, raws, seen, enough), daemon=True)
        sender.start()
        self.assertTrue(enough.wait(300), "the stream did not get going")
        node.kill()
        sender.join(60)
        self.assertGreaterEqual(len(seen), KILL_AFTER)
        self.assertLess(len(seen), STREAM, "the node was killed after the stream ended")

        restarted = NodeProcess(datadir, log)
        self.addCleanup(restarted.kill)
        restarted.wait_listening()
        w3 = Web3(Web3.HTTPProvider(restarted.url, request_kwargs={"timeout": 30}))
        for tx_hash, block_hash in seen.items():
            receipt = w3.eth.get_transaction_receipt(tx_hash)
            self.assertEqual("0x" + bytes(receipt["blockHash"]).hex(), block_hash)
            self.assertEqual(receipt["status"], 1)
        nonce = w3.eth.get_transaction_count(EthAccount.from_key(KEY).address)
        self.assertGreaterEqual(nonce, len(seen))
        fresh = EthAccount.sign_transaction(
            {"chainId": 33, "nonce": 0, "gasPrice": 0, "gas": 21000, "to": RECIPIENT, "value": 1},
            "0x" + keccak256(b"cow3").hex(),
        )
        tx_hash = w3.eth.send_raw_transaction(fresh.raw_transaction)
        self.assertEqual(w3.eth.get_transaction_receipt(tx_hash)["status"], 1)
        self.assertEqual(restarted.terminate(), -signal.SIGTERM if os.name == "posix" else 0)
