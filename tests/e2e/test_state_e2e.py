"""
End-to-end tests of the state methods (issue 6): a real regtest node in its
own process (RocksDB under a temporary directory, HTTP on 127.0.0.1 with an
ephemeral port) driven by web3.py and by raw JSON-RPC.

One node serves every test of a module; it is started on first use and
killed when the test process ends.  The tests skip, saying why, when the
node does not offer the methods that deploy contracts (C{eth_sendTransaction},
wired by the issue-5 providers).
"""

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import rlp
from trie import HexaryTrie
from twisted.trial.unittest import SkipTest, SynchronousTestCase

from nodex.crypto import keccak256

REPOSITORY = Path(__file__).resolve().parent.parent.parent
CONTRACTS = REPOSITORY / "tests" / "data" / "contracts"
COW = "0xcd2a3d9f938e13cd947ec05abc7fe734df8dd826"

NODE_SCRIPT = """
import json, sys
from twisted.internet import reactor
import nodex.node as node_composition
from nodex.config import load_config
layer = json.loads(sys.argv[2])
layer["datadir"] = sys.argv[1]
layer.setdefault("rpc", {})["endpoint"] = "tcp:0:interface=127.0.0.1"
layer["rpc"].setdefault("ws", "none")
config = load_config(None, layer)
node = node_composition.compose(config, reactor)
node.startService()
node.getServiceNamed("rpc").when_listening().addCallback(
    lambda port: print("PORT", port.getHost().port, flush=True))
reactor.run()
"""


class NodeProcess:
    """
    A regtest node in a child process, and JSON-RPC requests to it.
    """

    def __init__(self, layer: dict[str, Any] | None = None) -> None:
        """
        Start the node and wait until it listens.

        @param layer: a configuration layer over the regtest preset.
        """
        self.datadir = tempfile.mkdtemp(prefix="nodex-e2e-")
        self.process = subprocess.Popen(
            [sys.executable, "-c", NODE_SCRIPT, self.datadir, json.dumps(layer or {})],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=REPOSITORY,
            env={**os.environ, "PYTHONPATH": str(REPOSITORY)},
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("PORT "):
            self.stop()
            raise RuntimeError(f"the node did not start: {line!r}")
        self.url = f"http://127.0.0.1:{int(line.split()[1])}/"
        self.next_id = 0
        atexit.register(self.stop)

    def stop(self) -> None:
        """
        Kill the node and remove its data.
        """
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.datadir, ignore_errors=True)

    def request(self, method: str, *params: Any) -> dict[str, Any]:
        """
        The whole JSON-RPC response to one request.
        """
        self.next_id += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": list(params)})
        request = urllib.request.Request(self.url, body.encode(), {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())

    def call(self, method: str, *params: Any) -> Any:
        """
        The result of a request that must succeed.
        """
        response = self.request(method, *params)
        if "error" in response:
            raise AssertionError(f"{method} failed: {response['error']}")
        return response["result"]

    def error(self, method: str, *params: Any) -> dict[str, Any]:
        """
        The error of a request that must fail.
        """
        response = self.request(method, *params)
        if "error" not in response:
            raise AssertionError(f"{method} succeeded: {response['result']}")
        return response["error"]


ETHERS_SCRIPT = """
const { ethers } = require("ethers");
const [url, address, abi] = process.argv.slice(1);
(async () => {
  const provider = new ethers.JsonRpcProvider(url, 33, { staticNetwork: true });
  const contract = new ethers.Contract(address, JSON.parse(abi), provider);
  const out = {};
  const calls = [["revertWithReason", []], ["revertWithoutReason", []], ["revertWithCustomError", []], ["divide", [1, 0]]];
  for (const [name, args] of calls) {
    try {
      await contract[name].staticCall(...args);
      out[name] = "no error";
    } catch (error) {
      out[name] = {
        code: error.code,
        reason: error.reason === undefined ? null : error.reason,
        revert: error.revert ? { name: error.revert.name, args: error.revert.args.map(String) } : null,
      };
    }
  }
  try {
    await contract.requirePositive.estimateGas(0);
  } catch (error) {
    out.estimate = { code: error.code, reason: error.reason };
  }
  console.log(JSON.stringify(out));
})();
"""
"""
A check that ethers v6 decodes nodex's reverts: run by C{node} with the npm
package C{ethers} installed outside the repository (C{NODEX_ETHERS_PATH},
default C{/tmp/node_modules}).
"""


_nodes: dict[str, NodeProcess] = {}


def shared_node(name: str, layer: dict[str, Any] | None = None) -> NodeProcess:
    """
    The node of one test module, started on first use; skip the test if it
    cannot deploy contracts.

    @param layer: a configuration layer over the regtest preset.
    """
    node = _nodes.get(name)
    if node is None:
        node = _nodes[name] = NodeProcess(layer)
    probe = node.request("eth_sendTransaction", {})
    if probe.get("error", {}).get("code") == -32601:
        raise SkipTest("the node does not serve eth_sendTransaction yet (issue-5 providers not wired in nodex.tap)")
    return node


def compiled(name: str) -> dict[str, Any]:
    """
    A compiled test contract (ABI and bytecode).
    """
    return json.loads((CONTRACTS / f"{name}.json").read_text())


def web3_for(node: NodeProcess) -> Any:
    """
    A web3.py client of the node.
    """
    from web3 import Web3

    return Web3(Web3.HTTPProvider(node.url, request_kwargs={"timeout": 60}))


def deploy(w3: Any, name: str, *arguments: Any) -> Any:
    """
    Deploy a test contract from the first dev account; return the web3 contract.
    """
    data = compiled(name)
    factory = w3.eth.contract(abi=data["abi"], bytecode=data["bytecode"])
    tx_hash = factory.constructor(*arguments).transact({"from": w3.eth.accounts[0], "gas": 5_000_000})
    receipt = w3.eth.wait_for_transaction_receipt(tx_hash, timeout=30)
    return w3.eth.contract(address=receipt.contractAddress, abi=data["abi"])


def decode_reason(data: str) -> str:
    """
    The reason of an ABI-encoded C{Error(string)} payload, decoded with eth_abi.
    """
    from eth_abi import decode

    payload = bytes.fromhex(data[2:])
    assert payload[:4] == bytes.fromhex("08c379a0"), data
    return decode(["string"], payload[4:])[0]


def verify_proof(root: bytes, key: bytes, proof: list[str]) -> bytes:
    """
    Check an EIP-1186 proof with py-trie (independent of nodex's trie).
    """
    nodes = [rlp.decode(bytes.fromhex(node[2:])) for node in proof]
    return HexaryTrie.get_from_proof(root, keccak256(key), nodes)


class StateEndToEndTests(SynchronousTestCase):
    """
    State reads, calls, overrides, estimates and proofs against a real node.
    """

    def setUp(self) -> None:
        """
        Reach the module's node and a web3 client; deploy the contracts once.
        """
        self.node = shared_node(__name__)
        self.w3 = web3_for(self.node)
        contracts = getattr(self.node, "state_contracts", None)
        if contracts is None:
            contracts = self.node.state_contracts = {  # type: ignore[attr-defined]
                "storage": deploy(self.w3, "Storage", 5),
                "reverter": deploy(self.w3, "Reverter"),
                "token": deploy(self.w3, "Token", "Test", "TST", 10**24),
            }
        self.storage = contracts["storage"]
        self.reverter = contracts["reverter"]
        self.token = contracts["token"]
        self.sender = self.w3.eth.accounts[0]

    def test_reads_at_blocks(self) -> None:
        """
        Balances, nonces, storage and code at the head and at earlier blocks,
        by number, tag and EIP-1898 object.
        """
        head = self.node.call("eth_blockNumber")
        self.assertEqual(self.node.call("eth_getBalance", COW, "0x0"), hex(10**30))
        self.assertEqual(self.node.call("eth_getTransactionCount", COW, "0x0"), "0x0")
        self.assertNotEqual(self.node.call("eth_getTransactionCount", self.sender, head), "0x0")
        address = self.storage.address
        self.assertEqual(int(self.node.call("eth_getStorageAt", address, "0x0", "latest"), 16), 5)
        self.assertEqual(len(self.node.call("eth_getStorageAt", address, "0x1", "latest")), 66)
        self.assertEqual(self.node.call("eth_getCode", address, "0x0"), "0x")
        self.assertEqual(self.node.call("eth_getCode", address, "latest"), compiled("Storage")["deployedBytecode"])
        genesis = self.node.call("eth_getBlockByNumber", "0x0", False)["hash"]
        self.assertEqual(self.node.call("eth_getBalance", COW, {"blockHash": genesis, "requireCanonical": True}), hex(10**30))
        self.assertEqual(self.node.error("eth_getBalance", COW, "0xffffff")["code"], -32600)
        self.assertEqual(self.node.error("eth_getBalance", COW, {"blockHash": "0x" + "ab" * 32})["code"], -32600)
        self.assertEqual(self.node.error("eth_getCode", address, "pending")["code"], -32201)

    def test_web3_call(self) -> None:
        """
        web3.py calls see the contract's state.
        """
        self.assertEqual(self.storage.functions.get().call(), 5)
        self.assertEqual(self.token.functions.totalSupply().call(), 10**24)
        self.assertGreater(self.token.functions.balanceOf(self.sender).call(), 0)

    def test_web3_revert_errors(self) -> None:
        """
        web3.py raises its contract-error types with the decoded custom
        error and panic.  A reason string under the default conventions
        (code -32015, DESIGN §1's message) reaches it as its generic RPC
        error with the payload in the response; under the Ethereum
        conventions it is a C{ContractLogicError} with the reason
        (C{tests/e2e/test_web3_async_e2e.py}).
        """
        from web3.exceptions import ContractCustomError, ContractLogicError, ContractPanicError, Web3RPCError

        with self.assertRaises(Web3RPCError) as caught:
            self.reverter.functions.revertWithReason().call()
        error = caught.exception.rpc_response["error"]
        self.assertEqual(decode_reason(error["data"]), "Reverter: always fails")
        with self.assertRaises(ContractLogicError):
            self.reverter.functions.revertWithoutReason().call()
        with self.assertRaises(ContractCustomError) as custom:
            self.reverter.functions.revertWithCustomError().call()
        selector = keccak256(b"Unauthorized(address,uint256,string)")[:4].hex()
        self.assertIn(selector, str(custom.exception.data))
        with self.assertRaises(ContractPanicError) as panic:
            self.reverter.functions.divide(1, 0).call()
        self.assertIn("Division by zero", str(panic.exception))
        with self.assertRaises(Web3RPCError) as estimate:
            self.reverter.functions.requirePositive(0).estimate_gas({"from": self.sender})
        self.assertIn("revert value must be positive", str(estimate.exception))

    def test_raw_revert(self) -> None:
        """
        The raw answer: -32015, the DESIGN wording, the payload as data.
        """
        data = self.reverter.encode_abi("revertWithReason", [])
        error = self.node.error("eth_call", {"to": self.reverter.address, "data": data}, "latest")
        self.assertEqual(error["code"], -32015)
        self.assertEqual(error["message"], "VM Exception while processing transaction: revert Reverter: always fails")
        self.assertTrue(error["data"].startswith("0x08c379a0"))

    def test_overrides(self) -> None:
        """
        Each kind of override changes what eth_call sees, and nothing stays.
        """
        address = self.storage.address
        get = self.storage.encode_abi("get", [])
        call = {"to": address, "data": get}
        zero, one = "0x" + "00" * 32, "0x" + "00" * 31 + "01"
        nine = "0x" + "00" * 31 + "09"
        self.assertEqual(int(self.node.call("eth_call", call, "latest", {address: {"stateDiff": {zero: nine}}}), 16), 9)
        self.assertEqual(int(self.node.call("eth_call", call, "latest", {address: {"state": {one: nine}}}), 16), 0)
        other = "0x" + "42" * 20
        code = {other: {"code": compiled("Storage")["deployedBytecode"], "state": {zero: one}}}
        self.assertEqual(int(self.node.call("eth_call", {"to": other, "data": get}, "latest", code), 16), 1)
        poor = "0x" + "43" * 20
        send = {"from": poor, "to": COW, "value": "0x5"}
        self.assertEqual(self.node.error("eth_call", send, "latest")["message"], "insufficient funds for transfer")
        self.assertEqual(self.node.call("eth_call", send, "latest", {poor: {"balance": "0x5", "nonce": "0x7"}}), "0x")
        self.assertEqual(int(self.node.call("eth_call", call, "latest"), 16), 5)
        error = self.node.error("eth_call", call, "latest", {"0x" + "00" * 19 + "01": {"movePrecompileToAddress": other}})
        self.assertIn("not supported yet", error["message"])

    def test_estimate_is_least_gas(self) -> None:
        """
        A transaction sent with one gas less than the estimate fails, and
        then (on the same state: a failed transaction changes no storage) one
        sent with the estimate succeeds.
        """
        storage = deploy(self.w3, "Storage", 5)
        recipient = "0x" + "44" * 20
        for function in (storage.functions.set(77), storage.functions.setEntry(3, b"\x01" * 32),
                         self.token.functions.transfer(recipient, 10)):
            estimate = function.estimate_gas({"from": self.sender})
            try:
                tx_hash = function.transact({"from": self.sender, "gas": estimate - 1})
            except Exception as exc:  # a dev node may answer the failed, mined transaction with an error
                self.assertIn("VM Exception", str(exc))
            else:
                self.assertEqual(self.w3.eth.wait_for_transaction_receipt(tx_hash).status, 0)
            receipt = self.w3.eth.wait_for_transaction_receipt(function.transact({"from": self.sender, "gas": estimate}))
            self.assertEqual(receipt.status, 1)

    def test_create_access_list(self) -> None:
        """
        eth_createAccessList (web3.py's create_access_list) lists the token
        and the two balance slots a transfer touches; a type 1 transaction
        sent with that list uses exactly the gas it answered.
        """
        recipient = "0x" + "45" * 20
        call = {"from": self.sender, "to": self.token.address,
                "data": self.token.encode_abi("transfer", [self.w3.to_checksum_address(recipient), 10])}
        answer = self.w3.eth.create_access_list(call, "latest")
        self.assertNotIn("error", answer)
        entries = answer["accessList"]
        self.assertEqual([entry["address"] for entry in entries], [self.token.address])
        self.assertEqual(len(entries[0]["storageKeys"]), 2)
        tx = {**call, "accessList": entries, "gas": answer["gasUsed"] + 10_000, "gasPrice": 0}
        receipt = self.w3.eth.wait_for_transaction_receipt(self.w3.eth.send_transaction(tx))
        self.assertEqual((receipt.status, receipt.type, receipt.gasUsed), (1, 1, answer["gasUsed"]))
        reverted = self.w3.eth.create_access_list(
            {"from": self.sender, "to": self.reverter.address, "data": self.reverter.encode_abi("revertWithReason", [])}
        )
        self.assertEqual(reverted["error"], "execution reverted")

    def test_estimate_errors(self) -> None:
        """
        Insufficient balance is -32000 insufficient funds for transfer.
        """
        error = self.node.error("eth_estimateGas", {"from": "0x" + "45" * 20, "to": COW, "value": "0x1"})
        self.assertEqual((error["code"], error["message"]), (-32000, "insufficient funds for transfer"))
        self.assertEqual(self.node.call("eth_estimateGas", {"from": COW, "to": "0x" + "46" * 20, "value": "0x1"}), "0x5208")

    def test_proofs(self) -> None:
        """
        Proofs of existing and absent accounts and slots verify against the
        block's stateRoot with py-trie.
        """
        block = self.node.call("eth_getBlockByNumber", "latest", False)
        root = bytes.fromhex(block["stateRoot"][2:])
        address = self.storage.address
        proof = self.node.call("eth_getProof", address, ["0x0", "0x5"], block["number"])
        account = rlp.decode(verify_proof(root, bytes.fromhex(address[2:]), proof["accountProof"]))
        self.assertEqual(account[2].hex(), proof["storageHash"][2:])
        storage_root = bytes.fromhex(proof["storageHash"][2:])
        present, absent = proof["storageProof"]
        self.assertEqual(int(present["value"], 16), rlp.decode(verify_proof(storage_root, (0).to_bytes(32, "big"), present["proof"]), sedes=rlp.sedes.big_endian_int))
        self.assertEqual((absent["value"], verify_proof(storage_root, (5).to_bytes(32, "big"), absent["proof"])), ("0x0", b""))
        nobody = "0x" + "47" * 20
        missing = self.node.call("eth_getProof", nobody, ["0x1"], block["number"])
        self.assertEqual(verify_proof(root, bytes.fromhex(nobody[2:]), missing["accountProof"]), b"")
        self.assertEqual((missing["balance"], missing["nonce"]), ("0x0", "0x0"))


class LongCallTests(SynchronousTestCase):
    """
    A long call runs in the reader pool: the node answers others meanwhile.
    """

    def test_other_requests_answered_during_a_long_call(self) -> None:
        """
        While a call of 50,000,000 gas of hashing runs (seconds), eth_blockNumber
        is answered, and the call is still running when it is; the call then
        ends with its output or the time limit (-32011), never with a hang.
        """
        import threading

        node = shared_node(__name__)
        # JUMPDEST, PUSH0, PUSH1 32, KECCAK256, POP, PUSH0, JUMP: hash forever, until out of gas.
        loop = "0x5b5f60202050" + "5f56"
        target = "0x" + "48" * 20
        outcome: list[dict[str, Any]] = []
        started = threading.Event()

        def long_call() -> None:
            """
            Make the long call, keeping its answer.
            """
            started.set()
            outcome.append(node.request("eth_call", {"to": target, "gas": hex(50_000_000)}, "latest", {target: {"code": loop}}))

        worker = threading.Thread(target=long_call)
        worker.start()
        started.wait()
        time.sleep(0.5)  # let the request reach the node; the call itself lasts seconds
        answered = node.call("eth_blockNumber")
        still_running = worker.is_alive()
        worker.join(60)
        self.assertTrue(answered.startswith("0x"))
        self.assertTrue(still_running, "the long call ended before eth_blockNumber was answered")
        self.assertEqual(len(outcome), 1)
        answer = outcome[0]
        self.assertTrue(answer.get("result") == "0x" or answer["error"]["code"] == -32011, answer)


class EthersTests(SynchronousTestCase):
    """
    ethers v6 raises its CALL_EXCEPTION with the decoded reason, custom error and panic.
    """

    def test_ethers_decodes_reverts(self) -> None:
        """
        Each kind of revert reaches ethers decoded.
        """
        node_binary = shutil.which("node")
        modules = os.environ.get("NODEX_ETHERS_PATH", "/tmp/node_modules")
        if node_binary is None or not (Path(modules) / "ethers").is_dir():
            raise SkipTest(f"node and the npm package ethers (in {modules}) are needed")
        node = shared_node(__name__)
        reverter = deploy(web3_for(node), "Reverter")
        result = subprocess.run(
            [node_binary, "-e", ETHERS_SCRIPT, node.url, reverter.address, json.dumps(compiled("Reverter")["abi"])],
            capture_output=True, text=True, timeout=60, env={**os.environ, "NODE_PATH": modules},
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        out = json.loads(result.stdout)
        self.assertEqual(out["revertWithReason"]["code"], "CALL_EXCEPTION")
        self.assertEqual(out["revertWithReason"]["reason"], "Reverter: always fails")
        self.assertEqual(out["revertWithoutReason"]["code"], "CALL_EXCEPTION")
        custom = out["revertWithCustomError"]
        self.assertEqual((custom["code"], custom["revert"]["name"]), ("CALL_EXCEPTION", "Unauthorized"))
        self.assertEqual(custom["revert"]["args"][1:], ["42", "not the owner"])
        panic = out["divide"]
        self.assertEqual((panic["code"], panic["revert"]["name"], panic["revert"]["args"]), ("CALL_EXCEPTION", "Panic", ["18"]))
        self.assertEqual(out["estimate"], {"code": "CALL_EXCEPTION", "reason": "value must be positive"})
