"""
End-to-end tests of the rule sets by fork: a regtest node runs Cancun plus
CLZ from genesis unless its configuration's C{chain.forks} says otherwise,
and a contract using CLZ (0x1e) works on one and fails on the other.
"""

from pathlib import Path

from tests.e2e.test_web3_node import COW, Web3NodeTestCase

# Runtime: PUSH1 1, CLZ, PUSH1 0, MSTORE, PUSH1 32, PUSH1 0, RETURN (returns 255 where CLZ exists).
CLZ_RUNTIME = "60011e60005260206000f3"
# Initcode: PUSH11 <runtime>, PUSH1 0, MSTORE, PUSH1 11, PUSH1 21, RETURN.
CLZ_INITCODE = "0x6a" + CLZ_RUNTIME + "600052600b6015f3"


class ForkSwitchTests(Web3NodeTestCase):
    """
    The network's fork schedule decides whether CLZ exists.
    """

    async def deploy(self) -> str:
        """
        Deploy the CLZ contract from the first cow account; its address.
        """
        tx_hash = await self.blocking(self.w3.eth.send_transaction, {"from": COW, "data": CLZ_INITCODE, "gas": 200_000})
        receipt = await self.receipt(tx_hash)
        self.assertEqual(receipt["status"], 1)
        return receipt["contractAddress"]

    async def test_clz_active_by_default(self) -> None:
        """
        On the regtest preset (Cancun+CLZ from genesis) CLZ counts leading zero bits.
        """
        await self.start_node()
        address = await self.deploy()
        response = await self.rpc("eth_call", {"to": address}, "latest")
        self.assertEqual(int(response["result"], 16), 255)
        tx_hash = await self.blocking(self.w3.eth.send_transaction, {"from": COW, "to": address, "gas": 100_000})
        self.assertEqual((await self.receipt(tx_hash))["status"], 1)

    async def test_clz_invalid_under_cancun(self) -> None:
        """
        On a network configured for plain Cancun, CLZ is an invalid opcode:
        calls return no data (a VM failure other than a revert is not an
        error, reference §eth_call) and transactions are mined with status 0.
        """
        config = Path(self.mktemp())
        config.write_text('[chain.forks]\n0 = "Cancun"\n')
        await self.start_node("--config", str(config))
        address = await self.deploy()
        response = await self.rpc("eth_call", {"to": address, "gas": "0x186a0"}, "latest")
        self.assertEqual(response["result"], "0x")
        tx_hash = await self.blocking(self.w3.eth.send_transaction, {"from": COW, "to": address, "gas": 100_000})
        receipt = await self.receipt(tx_hash)
        self.assertEqual((receipt["status"], receipt["gasUsed"]), (0, 100_000))

    async def test_switch_at_block(self) -> None:
        """
        A schedule of Cancun from genesis and Cancun+CLZ from block 3 runs
        the same contract both ways: at block 1 (Cancun) the call returns
        nothing, at the head (Cancun+CLZ) it returns CLZ's answer.
        """
        config = Path(self.mktemp())
        config.write_text('[chain.forks]\n0 = "Cancun"\n3 = "Cancun+CLZ"\n')
        await self.start_node("--config", str(config))
        address = await self.deploy()
        await self.rpc("evm_mine")
        await self.rpc("evm_mine")
        head = await self.blocking(lambda: self.w3.eth.block_number)
        self.assertGreaterEqual(head, 3)
        old = await self.rpc("eth_call", {"to": address, "gas": "0x186a0"}, "0x1")
        self.assertEqual(old["result"], "0x")
        new = await self.rpc("eth_call", {"to": address}, "latest")
        self.assertEqual(int(new["result"], 16), 255)
