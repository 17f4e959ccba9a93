"""
End-to-end transfers: how many transactions per second a regtest node in
C{auto} mining mode takes, mines and answers, one after another.

Two workloads, each of 2,000 transactions signed in advance by the cow
accounts: native transfers (21,000 gas each) and ERC-20 C{transfer} calls
on the test token (C{tests/data/contracts/Token.json}, deployed first).
They are sent with C{eth_sendRawTransaction} over one keep-alive HTTP
connection (requests built in advance, answers read with a minimal HTTP/1.1
reader so that the client costs the figure little), each after the previous answer (which, in C{auto} mode, comes
after its block is stored), and the clock stops at the last transaction's
receipt.  The node runs in its own process pinned to core 0
(C{taskset -c 0}); this client runs on core 1.  The node's peak resident
set size (C{VmHWM}) is read from C{/proc} at the end.

Usage::

    python benchmarks/transfers.py [--count 2000] [--workloads native,erc20] [--profile FILE]

C{--profile FILE} runs the node under cProfile and writes its statistics
to C{FILE} when it stops (the figures are then slower; use it to see where
the time goes, with C{python -m pstats FILE}).

Besides transactions per second of wall-clock time, each workload reports
transactions per CPU-second of the node process (user plus system time of
all its threads, from C{/proc}), which other work on the machine disturbs
much less.
"""

import argparse
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from nodeprocess import NODEX_SERVER, free_port
from nodex.crypto import keccak256, private_key_to_address
from nodex.structures.transactions import LegacyTransaction, Transaction, sign_transaction

REPOSITORY = Path(__file__).resolve().parent.parent
TOKEN = REPOSITORY / "tests" / "data" / "contracts" / "Token.json"
CHAIN_ID = 33
SENDERS = [keccak256(seed.encode()) for seed in ("cow", "cow1")]
RECIPIENT = private_key_to_address(keccak256(b"cow2"))

class Client:
    """
    JSON-RPC over one keep-alive HTTP connection.
    """

    def __init__(self, port: int) -> None:
        self._connection = http.client.HTTPConnection("127.0.0.1", port)
        self._ids = 0

    def call(self, method: str, *params: Any) -> Any:
        """
        One request; the result, or L{RuntimeError} with the error.
        """
        self._ids += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self._ids, "method": method, "params": list(params)})
        self._connection.request("POST", "/", body, {"Content-Type": "application/json"})
        answer = json.loads(self._connection.getresponse().read())
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]

    def send_raw(self, raw: str) -> Any:
        """
        eth_sendRawTransaction with a prepared hex string.
        """
        return self.call("eth_sendRawTransaction", raw)


class RawSender:
    """
    The hot loop's client: each request's bytes built in advance and written
    to one keep-alive socket, each answer read just far enough to know it
    (headers, then C{Content-Length} bytes), so that the client costs the
    measurement as little as possible.
    """

    def __init__(self, port: int) -> None:
        self._socket = socket.create_connection(("127.0.0.1", port))
        self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._buffer = b""

    @staticmethod
    def request(raw: str, request_id: int) -> bytes:
        """
        The whole HTTP request of one C{eth_sendRawTransaction}.
        """
        body = (
            f'{{"jsonrpc":"2.0","id":{request_id},"method":"eth_sendRawTransaction","params":["{raw}"]}}'
        ).encode()
        head = (
            f"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        return head + body

    def exchange(self, request: bytes) -> bytes:
        """
        Send one request; return the answer's body.
        """
        self._socket.sendall(request)
        while b"\r\n\r\n" not in self._buffer:
            self._buffer += self._socket.recv(65536)
        head, _, rest = self._buffer.partition(b"\r\n\r\n")
        length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        while len(rest) < length:
            rest += self._socket.recv(65536)
        self._buffer = rest[length:]
        return rest[:length]

    def close(self) -> None:
        """
        Close the connection.
        """
        self._socket.close()


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    """
    Wait until the node accepts connections.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("the node exited while starting")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("the node did not start listening")


def peak_rss_mib(pid: int) -> float:
    """
    The process's peak resident set size (VmHWM), in MiB.
    """
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid: int) -> float:
    """
    The user and system CPU time the process has used so far, in seconds.
    """
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def signed(key: bytes, nonce: int, to: bytes, data: bytes = b"", gas: int = 21000, value: int = 0) -> Transaction:
    """
    A legacy EIP-155 transaction of the regtest chain, signed.
    """
    return sign_transaction(LegacyTransaction(nonce, 0, gas, to, value, data), key, CHAIN_ID)


def native_transfers(count: int) -> list[str]:
    """
    C{count} transfers of 1 wei from cow to cow2, hex-encoded.
    """
    return ["0x" + signed(SENDERS[0], nonce, RECIPIENT, value=1).encode().hex() for nonce in range(count)]


def token_creation(supply: int = 10**24) -> bytes:
    """
    The creation code of the test token ("Token", "TOK", C{supply} to its deployer).
    """
    artifact = json.loads(TOKEN.read_text())
    arguments = (
        (96).to_bytes(32, "big") + (160).to_bytes(32, "big") + supply.to_bytes(32, "big")
        + (5).to_bytes(32, "big") + b"Token".ljust(32, b"\x00")
        + (3).to_bytes(32, "big") + b"TOK".ljust(32, b"\x00")
    )
    return bytes.fromhex(artifact["bytecode"][2:]) + arguments


def token_workload(count: int) -> tuple[str, str, list[str]]:
    """
    The token's deployment (by cow1, nonce 0), its address, and C{count}
    C{transfer(cow2, 1)} calls from cow1, hex-encoded.
    """
    deploy = signed(SENDERS[1], 0, b"", token_creation(), gas=3_000_000)
    sender = private_key_to_address(SENDERS[1])
    address = keccak256(bytes([0xD6, 0x94]) + sender + b"\x80")[12:]
    selector = keccak256(b"transfer(address,uint256)")[:4]
    call = selector + RECIPIENT.rjust(32, b"\x00") + (1).to_bytes(32, "big")
    calls = ["0x" + signed(SENDERS[1], nonce, address, call, gas=60_000).encode().hex() for nonce in range(1, count + 1)]
    return "0x" + deploy.encode().hex(), "0x" + address.hex(), calls


def run_workload(client: Client, port: int, transactions: list[str]) -> float:
    """
    Send the transactions one after another over one keep-alive
    connection, each after the previous answer; wait for the last receipt.

    @return: the elapsed seconds.
    @raise RuntimeError: the node refused a transaction.
    """
    requests = [RawSender.request(raw, index) for index, raw in enumerate(transactions)]
    sender = RawSender(port)
    try:
        started = time.perf_counter()
        for request in requests:
            answer = sender.exchange(request)
            if b'"error"' in answer:
                raise RuntimeError(f"refused: {answer.decode()}")
        last = json.loads(answer)["result"]
        while client.call("eth_getTransactionReceipt", last) is None:
            time.sleep(0.001)
        return time.perf_counter() - started
    finally:
        sender.close()


def main() -> None:
    """
    Start the node, run the workloads, print the figures.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--workloads", default="native,erc20")
    parser.add_argument("--profile", default="")
    args = parser.parse_args()
    workloads = args.workloads.split(",")

    print(f"signing {args.count} transactions per workload in advance...", flush=True)
    native = native_transfers(args.count)
    deploy, token, calls = token_workload(args.count)

    datadir = tempfile.mkdtemp(prefix="nodex-transfers-")
    port = free_port()
    profile = str(Path(args.profile).resolve()) if args.profile else ""
    command = [
        "taskset", "-c", "0", sys.executable, "-c", NODEX_SERVER, str(port), datadir, profile, str(REPOSITORY), "0", "",
    ]
    if shutil.which("taskset") is None:
        command = command[3:]
    process = subprocess.Popen(command, cwd=REPOSITORY)
    try:
        os.sched_setaffinity(0, {1})
    except (AttributeError, OSError):
        pass
    try:
        wait_for_port(port, process)
        client = Client(port)
        results = []
        if "native" in workloads:
            cpu = cpu_seconds(process.pid)
            seconds = run_workload(client, port, native)
            results.append(("native transfers", seconds, cpu_seconds(process.pid) - cpu))
        if "erc20" in workloads:
            receipt_hash = client.send_raw(deploy)
            receipt = client.call("eth_getTransactionReceipt", receipt_hash)
            if receipt is None or receipt["contractAddress"] != token:
                raise RuntimeError(f"token deployment failed: {receipt}")
            cpu = cpu_seconds(process.pid)
            seconds = run_workload(client, port, calls)
            cpu = cpu_seconds(process.pid) - cpu
            status = client.call("eth_getTransactionReceipt", client.call("eth_getBlockByNumber", "latest", False)["transactions"][0])["status"]
            if status != "0x1":
                raise RuntimeError("the last token transfer failed")
            results.append(("ERC-20 transfers", seconds, cpu))
        rss = peak_rss_mib(process.pid)
        blocks = int(client.call("eth_blockNumber"), 16)
        for name, seconds, cpu in results:
            print(
                f"{name}: {args.count} in {seconds:.2f} s = {args.count / seconds:,.0f} tx/s;"
                f" node CPU {cpu:.2f} s = {args.count / cpu:,.0f} tx per CPU-second"
            )
        print(f"blocks mined: {blocks}; node peak RSS: {rss:.0f} MiB")
    finally:
        stop_node(process, datadir)


def stop_node(process: subprocess.Popen[bytes], folder: str) -> None:
    """
    Stop a node (SIGINT, killed after 60 s) and delete its folder.
    """
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
