"""
End-to-end tests of C{rpc.revert_error_code} and the dev-chain batch limit:
web3.py recovers a revert reason only with geth's code 3, ethers (when node
and its npm package are available) with both codes, and a regtest node takes
batches of up to 1,000 requests.
"""

import json
import subprocess
from pathlib import Path
from typing import Any

from twisted.internet.threads import deferToThread

from tests.e2e.ethers import node_with_ethers
from tests.e2e.test_web3_node import COW, Web3NodeTestCase, artifact

ETHERS_SCRIPT = Path(__file__).resolve().parent / "ethers_revert.js"


class RevertCodeTests(Web3NodeTestCase):
    """
    The code of a revert's answer, and what clients make of it.
    """

    async def start_with_code(self, code: int | None) -> Any:
        """
        Start a node answering reverts with C{code} (the preset's when L{None})
        and deploy the Reverter contract; return the web3 contract.
        """
        argv: list[str] = []
        if code is not None:
            config = Path(self.mktemp())
            config.write_text(f"[rpc]\nrevert_error_code = {code}\n")
            argv = ["--config", str(config)]
        w3 = await self.start_node(*argv)
        reverter = artifact("Reverter")
        factory = w3.eth.contract(abi=reverter["abi"], bytecode=reverter["bytecode"])
        tx_hash = await self.blocking(factory.constructor().transact, {"from": COW, "gas": 3_000_000})
        receipt = await self.receipt(tx_hash)
        return w3.eth.contract(address=receipt["contractAddress"], abi=reverter["abi"])

    async def test_default_is_32015(self) -> None:
        """
        By default a revert answers -32015 with the payload and the message
        of DESIGN §1; web3.py 8, which knows a revert only by geth's code 3
        or by "execution reverted" in the message, raises its generic RPC
        error (a difference of the conventions, docs/compatibility.md).
        """
        from web3.exceptions import ContractLogicError, Web3RPCError

        contract = await self.start_with_code(None)
        data = contract.encode_abi("revertWithReason", [])
        response = await self.rpc("eth_call", {"to": contract.address, "data": data}, "latest")
        self.assertEqual(response["error"]["code"], -32015)
        self.assertEqual(
            response["error"]["message"], "VM Exception while processing transaction: revert Reverter: always fails"
        )
        self.assertTrue(response["error"]["data"].startswith("0x08c379a0"))
        with self.assertRaises(Web3RPCError) as caught:
            await self.blocking(contract.functions.revertWithReason().call)
        self.assertNotIsInstance(caught.exception, ContractLogicError)

    async def test_code_3_gives_web3_the_reason(self) -> None:
        """
        With C{rpc.revert_error_code = 3}, eth_call and eth_estimateGas
        answer code 3 and web3.py shows the reason string.
        """
        from web3.exceptions import ContractLogicError

        contract = await self.start_with_code(3)
        data = contract.encode_abi("revertWithReason", [])
        response = await self.rpc("eth_call", {"to": contract.address, "data": data}, "latest")
        self.assertEqual(response["error"]["code"], 3)
        self.assertEqual(
            response["error"]["message"],
            "VM Exception while processing transaction: revert Reverter: always fails",
        )
        with self.assertRaises(ContractLogicError) as caught:
            await self.blocking(contract.functions.revertWithReason().call)
        self.assertIn("Reverter: always fails", str(caught.exception))
        with self.assertRaises(ContractLogicError) as estimate:
            await self.blocking(contract.functions.requirePositive(0).estimate_gas, {"from": COW})
        self.assertIn("value must be positive", str(estimate.exception))

    async def test_ethers_reads_both_codes(self) -> None:
        """
        ethers decodes the reason from C{data} whatever the code.
        """
        node = node_with_ethers()
        for code in (None, 3):
            contract = await self.start_with_code(code)
            url = self.w3.provider.endpoint_uri
            data = contract.encode_abi("revertWithReason", [])
            result = await deferToThread(
                subprocess.run,
                [node.binary, str(ETHERS_SCRIPT), url, contract.address, data],
                capture_output=True,
                text=True,
                timeout=60,
                env=node.environment,
            )
            self.assertEqual(result.returncode, 0, result.stderr)
            answer = json.loads(result.stdout)
            self.assertEqual(answer["reason"], "Reverter: always fails", answer)
            self.assertEqual(answer["code"], "CALL_EXCEPTION")
            await self.stop_node()


class BatchLimitTests(Web3NodeTestCase):
    """
    Regtest (and devnet) accept batches of up to 1,000 requests.
    """

    async def test_batches(self) -> None:
        """
        A batch of 1,000 is answered in full; 1,001 is refused with -32600.
        """
        import requests

        await self.start_node()
        url = self.w3.provider.endpoint_uri

        def post(size: int) -> Any:
            batch = [{"jsonrpc": "2.0", "id": i, "method": "eth_blockNumber", "params": []} for i in range(size)]
            return requests.post(url, json=batch, timeout=60, headers={"Connection": "close"}).json()

        answers = await deferToThread(post, 1000)
        self.assertEqual(len(answers), 1000)
        self.assertEqual({answer["result"] for answer in answers}, {"0x0"})
        refused = await deferToThread(post, 1001)
        self.assertEqual(refused["error"]["code"], -32600)
        self.assertIn("exceeds the limit of 1000", refused["error"]["message"])
