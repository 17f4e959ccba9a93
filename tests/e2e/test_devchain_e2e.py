"""
End-to-end tests of the Hardhat and Anvil dev-chain methods (issue 18): a
regtest node from L{makeService} driven by web3.py as a Hardhat-style
fixture drives it; each state setter writes a block, C{hardhat_mine} writes
a run of empty blocks, and a state snapshot moves from one node to another.
"""

import time
from pathlib import Path
from typing import Any

from nodex.node import NodeService
from nodex.tap import Options, makeService
from tests.e2e.test_forks_e2e import CLZ_RUNTIME
from tests.e2e.test_web3_node import COW, COW1, Web3NodeTestCase, artifact, checksummed

NOBODY = "0x" + "42" * 20
WHALE = "0x" + "7a" * 20
"""A token holder whose key nobody has (lower case, as the node answers)."""
SLOT_VALUE = "0x" + "00" * 31 + "2a"


class DevChainTestCase(Web3NodeTestCase):
    """
    Helpers for the dev-chain tests.
    """

    async def ok(self, method: str, *params: Any) -> Any:
        """
        The result of a request that must succeed.
        """
        response = await self.rpc(method, *params)
        self.assertNotIn("error", response, f"{method}: {response}")
        return response["result"]

    async def invalid(self, method: str, *params: Any) -> str:
        """
        The message of a request that must be refused with -32602.
        """
        response = await self.rpc(method, *params)
        self.assertIn("error", response, f"{method} accepted: {response}")
        self.assertEqual(response["error"]["code"], -32602, response)
        return response["error"]["message"]

    async def head(self) -> Any:
        """
        The latest block.
        """
        return await self.blocking(self.w3.eth.get_block, "latest")


class StateSetterTests(DevChainTestCase):
    """
    hardhat_/anvil_ setBalance, setCode, setNonce and setStorageAt write a block each.
    """

    async def test_set_balance_writes_block(self) -> None:
        """
        The balance is set by a new block whose state root holds it; the
        earlier block still answers the old balance.
        """
        await self.start_node()
        before = await self.head()
        self.assertIs(await self.ok("hardhat_setBalance", NOBODY, "0xde0b6b3a7640000"), True)
        after = await self.head()
        self.assertEqual(after["number"], before["number"] + 1)
        self.assertNotEqual(after["stateRoot"], before["stateRoot"])
        self.assertEqual(await self.blocking(self.w3.eth.get_balance, NOBODY), 10**18)
        self.assertEqual(await self.blocking(self.w3.eth.get_balance, NOBODY, before["number"]), 0)
        self.assertIsNone(await self.ok("anvil_setBalance", NOBODY, "0x5"))
        self.assertEqual(await self.blocking(self.w3.eth.get_balance, NOBODY), 5)

    async def test_set_code_and_call(self) -> None:
        """
        Code set at an address runs when called (a Hardhat fixture's mock).
        """
        await self.start_node()
        await self.ok("hardhat_setCode", NOBODY, "0x" + CLZ_RUNTIME)
        self.assertEqual(await self.ok("eth_getCode", NOBODY, "latest"), "0x" + CLZ_RUNTIME)
        self.assertEqual(int(await self.ok("eth_call", {"to": NOBODY}, "latest"), 16), 255)
        await self.ok("anvil_setCode", NOBODY, "0x")
        self.assertEqual(await self.ok("eth_getCode", NOBODY, "latest"), "0x")

    async def test_set_nonce_and_storage(self) -> None:
        """
        The nonce and a storage slot read back as set; sending from the account uses the nonce.
        """
        await self.start_node()
        await self.ok("hardhat_setNonce", COW1, "0x10")
        self.assertEqual(await self.blocking(self.w3.eth.get_transaction_count, COW1), 16)
        tx_hash = await self.blocking(self.w3.eth.send_transaction, {"from": COW1, "to": NOBODY, "value": 1})
        self.assertEqual((await self.blocking(self.w3.eth.get_transaction, tx_hash))["nonce"], 16)
        await self.ok("hardhat_setStorageAt", NOBODY, "0x0", SLOT_VALUE)
        self.assertEqual(await self.ok("eth_getStorageAt", NOBODY, "0x0", "latest"), SLOT_VALUE)
        await self.ok("anvil_setStorageAt", NOBODY, "0x0", "0x" + "00" * 32)
        self.assertEqual(int(await self.ok("eth_getStorageAt", NOBODY, "0x0", "latest"), 16), 0)

    async def test_bad_input(self) -> None:
        """
        Malformed arguments are refused with -32602 naming the problem.
        """
        await self.start_node()
        self.assertIn("address", await self.invalid("hardhat_setBalance", "0x12", "0x1"))
        self.assertIn("quantity", await self.invalid("hardhat_setBalance", NOBODY, "12"))
        self.assertIn("storage value", await self.invalid("hardhat_setStorageAt", NOBODY, "0x0", "0x2a"))
        self.assertIn("odd length", await self.invalid("hardhat_setCode", NOBODY, "0x123"))
        self.assertIn("quantity", await self.invalid("hardhat_setNonce", NOBODY, "0x1" + "0" * 16))
        self.assertIn("boolean", await self.invalid("evm_setAutomine", "yes"))
        self.assertIn("range", await self.invalid("evm_setIntervalMining", [1, 2]))
        self.assertIn("hash", await self.invalid("hardhat_dropTransaction", "0x12"))
        self.assertIn("is below", await self.invalid("evm_setBlockGasLimit", "0x10"))
        self.assertIn("format", await self.invalid("anvil_loadState", {"accounts": {}}))
        self.assertIn("not after", await self.invalid("evm_setNextBlockTimestamp", 0))
        before = await self.head()
        self.assertIn("64 bits", await self.invalid("evm_increaseTime", hex(2**80)))
        await self.ok("evm_mine")
        head = await self.head()
        self.assertEqual(head["number"], before["number"] + 1)
        self.assertLess(head["timestamp"], time.time() + 60)


class FixtureFlowTests(DevChainTestCase):
    """
    A Hardhat-style fixture: deploy a token, give an account tokens and
    ether by setting its storage slot and balance, move tokens from it, and
    move time with hardhat_mine.
    """

    async def test_token_fixture(self) -> None:
        """
        The token balance written into the mapping's slot is the account's
        balance; it then transfers tokens like any holder.
        """
        from nodex.crypto import keccak256

        w3 = await self.start_node()
        token = artifact("Token")
        factory = w3.eth.contract(abi=token["abi"], bytecode=token["bytecode"])
        receipt = await self.receipt(
            await self.blocking(factory.constructor("Token", "TOK", 10**24).transact, {"from": COW, "gas": 3_000_000})
        )
        contract = w3.eth.contract(address=receipt["contractAddress"], abi=token["abi"])
        holder = COW1
        # balanceOf is the fourth slot (name, symbol, totalSupply, balanceOf).
        slot = keccak256(bytes.fromhex(holder[2:].rjust(64, "0")) + (3).to_bytes(32, "big"))
        await self.ok("hardhat_setStorageAt", contract.address, "0x" + slot.hex(), "0x" + (500).to_bytes(32, "big").hex())
        await self.ok("hardhat_setBalance", holder, hex(10**20))
        self.assertEqual(await self.blocking(contract.functions.balanceOf(holder).call), 500)
        tx_hash = await self.blocking(contract.functions.transfer(NOBODY, 120).transact, {"from": holder, "gas": 100_000})
        self.assertEqual((await self.receipt(tx_hash))["status"], 1)
        self.assertEqual(await self.blocking(contract.functions.balanceOf(holder).call), 380)
        self.assertEqual(await self.blocking(contract.functions.balanceOf(NOBODY).call), 120)
        before = (await self.head())["timestamp"]
        await self.ok("hardhat_mine", hex(100), hex(3600))
        moved = (await self.head())["timestamp"] - before
        self.assertTrue(99 * 3600 < moved <= 99 * 3600 + 60, moved)
        self.assertEqual(await self.blocking(contract.functions.balanceOf(NOBODY).call), 120)


class ImpersonationTests(DevChainTestCase):
    """
    The Hardhat-style impersonation flow: impersonate a token holder whose
    key nobody has, move its tokens, stop impersonating; the transactions
    read back from the holder, after a restart too.
    """

    async def deploy_token(self, w3: Any) -> Any:
        """
        Deploy the test token from COW and give L{WHALE} 1,000 tokens.
        """
        token = artifact("Token")
        factory = w3.eth.contract(abi=token["abi"], bytecode=token["bytecode"])
        receipt = await self.receipt(
            await self.blocking(factory.constructor("Token", "TOK", 10**24).transact, {"from": COW, "gas": 3_000_000})
        )
        contract = w3.eth.contract(address=receipt["contractAddress"], abi=token["abi"])
        sent = await self.blocking(contract.functions.transfer(checksummed(WHALE), 1000).transact, {"from": COW, "gas": 100_000})
        self.assertEqual((await self.receipt(sent))["status"], 1)
        return contract

    async def refused_send(self, sender: str) -> str:
        """
        The message of an eth_sendTransaction from C{sender} that must fail.
        """
        response = await self.rpc("eth_sendTransaction", {"from": sender, "to": NOBODY, "value": "0x0"})
        self.assertIn("error", response, f"accepted: {response}")
        return response["error"]["message"]

    async def test_token_holder_flow(self) -> None:
        """
        Impersonate the holder, transfer its tokens (legacy and type 2
        requests), trace the transfer, stop impersonating; the node answers
        the holder as sender before and after a restart.
        """
        w3 = await self.start_node()
        contract = await self.deploy_token(w3)
        self.assertIn("Could not find account", await self.refused_send(WHALE))
        self.assertIs(await self.ok("hardhat_impersonateAccount", WHALE), True)
        await self.ok("hardhat_setBalance", WHALE, hex(10**18))
        tx_hash = await self.blocking(contract.functions.transfer(checksummed(NOBODY), 120).transact, {"from": checksummed(WHALE)})
        receipt = await self.receipt(tx_hash)
        self.assertEqual((receipt["status"], receipt["from"].lower()), (1, WHALE))
        self.assertEqual(await self.blocking(contract.functions.balanceOf(checksummed(WHALE)).call), 880)
        self.assertEqual(await self.blocking(contract.functions.balanceOf(checksummed(NOBODY)).call), 120)
        sent = await self.blocking(w3.eth.get_transaction, tx_hash)
        self.assertEqual(sent["from"].lower(), WHALE)
        typed = await self.ok(
            "eth_sendTransaction", {"from": WHALE, "to": NOBODY, "value": "0x7", "maxFeePerGas": "0x0"}
        )
        self.assertEqual((await self.receipt(typed))["type"], 2)
        self.assertEqual(await self.blocking(w3.eth.get_balance, checksummed(NOBODY)), 7)
        trace = await self.ok("debug_traceTransaction", "0x" + bytes(tx_hash).hex(), {"tracer": "callTracer"})
        self.assertEqual(trace["from"], WHALE)
        self.assertIs(await self.ok("hardhat_stopImpersonatingAccount", WHALE), True)
        self.assertIs(await self.ok("hardhat_stopImpersonatingAccount", WHALE), False)
        self.assertIn("Could not find account", await self.refused_send(WHALE))
        datadir = self.datadir
        await self.stop_node()
        w3 = await self.start_node(datadir=datadir)
        again = await self.blocking(w3.eth.get_transaction, tx_hash)
        self.assertEqual((again["from"].lower(), again["blockNumber"]), (WHALE, sent["blockNumber"]))
        self.assertEqual((await self.receipt(typed))["from"].lower(), WHALE)
        block = await self.blocking(w3.eth.get_block, sent["blockNumber"], True)
        self.assertEqual([tx["from"].lower() for tx in block["transactions"]], [WHALE])

    async def test_marker_needs_impersonation(self) -> None:
        """
        A raw transaction carrying the marker of an account nobody
        impersonates is refused; Anvil's automatic impersonation lets any
        account send.
        """
        from nodex.structures.transactions import LegacyTransaction, impersonate

        await self.start_node()
        unsigned = LegacyTransaction(0, 0, 21_000, bytes.fromhex(NOBODY[2:]), 0, b"")
        marked = impersonate(unsigned, bytes.fromhex(WHALE[2:]), 33)
        response = await self.rpc("eth_sendRawTransaction", "0x" + marked.encode().hex())
        self.assertEqual(response["error"]["code"], -32010, response)
        self.assertIn("impersonated", response["error"]["message"])
        self.assertIsNone(await self.ok("anvil_autoImpersonateAccount", True))
        response = await self.rpc("eth_sendRawTransaction", "0x" + marked.encode().hex())
        self.assertEqual(response.get("result"), "0x" + marked.hash.hex(), response)
        self.assertEqual((await self.receipt(marked.hash))["status"], 1)
        self.assertIsNone(await self.ok("anvil_autoImpersonateAccount", False))
        self.assertIn("Could not find account", await self.refused_send(WHALE))
        self.assertIsNone(await self.ok("anvil_impersonateAccount", WHALE))
        self.assertEqual((await self.receipt(await self.ok("eth_sendTransaction", {"from": WHALE, "to": NOBODY})))["status"], 1)
        self.assertIsNone(await self.ok("anvil_stopImpersonatingAccount", WHALE))
        self.assertIn("address", await self.invalid("hardhat_impersonateAccount", "0x12"))

    async def test_reset(self) -> None:
        """
        hardhat_reset goes back to the genesis block, as evm_reset does;
        a fork to follow is refused.
        """
        await self.start_node()
        await self.ok("hardhat_mine", "0x5")
        self.assertIs(await self.ok("hardhat_reset"), True)
        self.assertEqual((await self.head())["number"], 0)
        self.assertIn("forking", await self.invalid("anvil_reset", {"forking": {"jsonRpcUrl": "http://127.0.0.1:1"}}))


class MiningControlTests(DevChainTestCase):
    """
    hardhat_mine, timestamps, automine, interval mining, gas limit and coinbase.
    """

    async def test_mine_many_and_read_one(self) -> None:
        """
        hardhat_mine of 10,000 blocks moves the head by 10,000; block 5,000
        reads back with its parent and timestamp; the default is one block.
        """
        await self.start_node()
        start = await self.head()
        self.assertIs(await self.ok("hardhat_mine", hex(10_000), "0x3c"), True)
        head = await self.head()
        self.assertEqual(head["number"], start["number"] + 10_000)
        middle = await self.blocking(self.w3.eth.get_block, start["number"] + 5_000)
        before = await self.blocking(self.w3.eth.get_block, start["number"] + 4_999)
        self.assertEqual(middle["parentHash"], before["hash"])
        self.assertEqual(middle["timestamp"] - before["timestamp"], 60)
        self.assertEqual(middle["transactions"], [])
        self.assertEqual(middle["stateRoot"], start["stateRoot"])
        self.assertEqual(head["timestamp"] - middle["timestamp"], 60 * 5_000)
        await self.ok("anvil_mine")
        self.assertEqual((await self.head())["number"], head["number"] + 1)
        # A transaction after the run builds on it.
        tx_hash = await self.blocking(self.w3.eth.send_transaction, {"from": COW, "to": NOBODY, "value": 7})
        receipt = await self.receipt(tx_hash)
        self.assertEqual(receipt["blockNumber"], head["number"] + 2)
        # Interval 0 (viem's test client): one second apart, as Anvil stamps them.
        last = await self.head()
        self.assertIsNone(await self.ok("anvil_mine", "0x3", "0x0"))
        after = await self.head()
        self.assertEqual(after["number"], last["number"] + 3)
        self.assertGreaterEqual(after["timestamp"], last["timestamp"] + 3)

    async def test_mine_takes_pending_transactions(self) -> None:
        """
        With automining off, hardhat_mine mines the pending transactions
        into its first block (OpenZeppelin's batchInBlock), then empty ones.
        """
        await self.start_node()
        await self.ok("evm_setAutomine", False)
        sent = [
            await self.blocking(self.w3.eth.send_transaction, {"from": COW, "to": NOBODY, "value": value})
            for value in (1, 2)
        ]
        start = await self.head()
        self.assertIs(await self.ok("hardhat_mine", "0x3"), True)
        receipts = [await self.receipt(tx_hash) for tx_hash in sent]
        self.assertEqual({receipt["blockNumber"] for receipt in receipts}, {start["number"] + 1})
        self.assertEqual((await self.head())["number"], start["number"] + 3)

    async def test_next_timestamp(self) -> None:
        """
        evm_setNextBlockTimestamp stamps the next block exactly, mined by a
        transaction or by hardhat_mine.
        """
        await self.start_node()
        wanted = (await self.head())["timestamp"] + 1000
        self.assertIsNone(await self.ok("evm_setNextBlockTimestamp", wanted))
        tx_hash = await self.blocking(self.w3.eth.send_transaction, {"from": COW, "to": NOBODY, "value": 1})
        block = await self.blocking(self.w3.eth.get_block, (await self.receipt(tx_hash))["blockNumber"])
        self.assertEqual(block["timestamp"], wanted)
        await self.ok("evm_setNextBlockTimestamp", hex(wanted + 500))
        await self.ok("hardhat_mine", "0x2")
        self.assertEqual((await self.head())["timestamp"], wanted + 501)

    async def test_automine_and_interval(self) -> None:
        """
        With automine off a transaction stays pending until a block is mined;
        interval mining mines on its own.
        """
        await self.start_node()
        self.assertIs(await self.ok("hardhat_getAutomine"), True)
        self.assertIs(await self.ok("evm_setAutomine", False), True)
        self.assertIs(await self.ok("anvil_getAutomine"), False)
        tx_hash = await self.blocking(self.w3.eth.send_transaction, {"from": COW, "to": NOBODY, "value": 1})
        self.assertIsNone(await self.receipt(tx_hash))
        await self.ok("evm_mine")
        self.assertIsNotNone(await self.receipt(tx_hash))
        self.assertIs(await self.ok("evm_setIntervalMining", 200), True)
        start = (await self.head())["number"]
        from twisted.internet import reactor
        from twisted.internet.task import deferLater

        for _ in range(100):
            await deferLater(reactor, 0.1, lambda: None)
            if (await self.head())["number"] > start:
                break
        self.assertGreater((await self.head())["number"], start)
        await self.ok("evm_setIntervalMining", 0)
        await self.ok("evm_setAutomine", True)
        tx_hash = await self.blocking(self.w3.eth.send_transaction, {"from": COW, "to": NOBODY, "value": 1})
        self.assertIsNotNone(await self.receipt(tx_hash))

    async def test_gas_limit_and_coinbase(self) -> None:
        """
        evm_setBlockGasLimit and hardhat_setCoinbase apply to the next blocks.
        """
        await self.start_node()
        self.assertIs(await self.ok("evm_setBlockGasLimit", hex(45_000_000)), True)
        self.assertIs(await self.ok("hardhat_setCoinbase", NOBODY), True)
        await self.ok("evm_mine")
        head = await self.head()
        self.assertEqual(head["gasLimit"], 45_000_000)
        self.assertEqual(head["miner"].lower(), NOBODY)
        self.assertEqual((await self.ok("eth_coinbase")).lower(), NOBODY)

    async def test_drop_transaction(self) -> None:
        """
        A pending transaction is dropped (true, then false); a mined one is refused.
        """
        await self.start_node()
        await self.ok("evm_setAutomine", False)
        tx_hash = await self.blocking(self.w3.eth.send_transaction, {"from": COW, "to": NOBODY, "value": 1})
        hexed = "0x" + bytes(tx_hash).hex()
        self.assertIs(await self.ok("hardhat_dropTransaction", hexed), True)
        self.assertIs(await self.ok("hardhat_dropTransaction", hexed), False)
        self.assertIsNone(await self.ok("anvil_dropTransaction", hexed))
        await self.ok("evm_setAutomine", True)
        mined = await self.blocking(self.w3.eth.send_transaction, {"from": COW, "to": NOBODY, "value": 2})
        self.assertIn("already mined", await self.invalid("hardhat_dropTransaction", "0x" + bytes(mined).hex()))


class SnapshotTests(DevChainTestCase):
    """
    anvil_dumpState on one node, anvil_loadState on another.
    """

    async def test_dump_and_load(self) -> None:
        """
        A second node loading the first's snapshot has its state root, balances, code and storage.
        """
        w3 = await self.start_node()
        token = artifact("Token")
        factory = w3.eth.contract(abi=token["abi"], bytecode=token["bytecode"])
        receipt = await self.receipt(
            await self.blocking(factory.constructor("Token", "TOK", 10**24).transact, {"from": COW, "gas": 3_000_000})
        )
        address = receipt["contractAddress"]
        await self.ok("hardhat_setBalance", NOBODY, "0x1234")
        dumped = await self.ok("anvil_dumpState")
        source_root = (await self.head())["stateRoot"]
        self.assertEqual(dumped["format"], "nodex-state/1")
        self.assertEqual(dumped["stateRoot"], "0x" + bytes(source_root).hex())
        await self.stop_node()
        w3 = await self.start_node()
        self.assertIs(await self.ok("anvil_loadState", dumped), True)
        self.assertEqual((await self.head())["stateRoot"], source_root)
        self.assertEqual(await self.blocking(w3.eth.get_balance, NOBODY), 0x1234)
        self.assertEqual(await self.ok("eth_getCode", address, "latest"), token["deployedBytecode"])
        contract = w3.eth.contract(address=address, abi=token["abi"])
        self.assertEqual(await self.blocking(contract.functions.balanceOf(COW).call), 10**24)


class NotOnPublicNetworksTests(DevChainTestCase):
    """
    None of the dev-chain methods exists on main or testnet.
    """

    async def test_absent_on_testnet(self) -> None:
        """
        A testnet node with the evm module switched on still answers -32601.
        """
        config = Path(self.mktemp())
        config.write_text('network = "testnet"\n[rpc.modules.evm]\nenabled = true\n[mining]\nmode = "off"\n')
        datadir = self.mktemp()
        options = Options()
        options.parseOptions(["--datadir", datadir, "--rpc", "tcp:0:interface=127.0.0.1", "--config", str(config)])
        node: NodeService = makeService(options)
        node.startService()
        self.addCleanup(node.stopService)
        port = await node.getServiceNamed("rpc").when_listening()
        import requests
        from twisted.internet.threads import deferToThread

        url = f"http://127.0.0.1:{port.getHost().port}/"
        for method in ("hardhat_setBalance", "anvil_mine", "evm_setAutomine", "anvil_dumpState", "hardhat_impersonateAccount"):
            answer = await deferToThread(
                lambda m=method: requests.post(url, json={"jsonrpc": "2.0", "id": 1, "method": m, "params": []}, timeout=30).json()
            )
            self.assertEqual(answer["error"]["code"], -32601, answer)
        answer = await deferToThread(
            lambda: requests.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "evm_snapshot", "params": []}, timeout=30).json()
        )
        self.assertNotIn("error", answer)
