"""
End-to-end test of the node's accounts through ethers 6's C{JsonRpcSigner},
when node and the ethers npm package are available: C{signMessage}
(C{personal_sign}, verified by ethers itself) and C{sendTransaction} from
an impersonated account (C{hardhat_impersonateAccount}).
"""

import json
import subprocess
from pathlib import Path

from twisted.internet.threads import deferToThread

from tests.e2e.ethers import node_with_ethers
from tests.e2e.test_web3_node import COW, Web3NodeTestCase, checksummed

ETHERS_SCRIPT = Path(__file__).resolve().parent / "ethers_signer.js"
WHALE = "0x" + "7b" * 20
RECIPIENT = "0x" + "42" * 20


class EthersSignerTests(Web3NodeTestCase):
    """
    ethers' signer over the node's accounts.
    """

    async def test_sign_and_impersonated_send(self) -> None:
        """
        ethers verifies the node's personal_sign signature as COW's, and an
        impersonated account's transfer is mined from that account.
        """
        node = node_with_ethers()
        await self.start_node()
        await self.rpc("hardhat_impersonateAccount", WHALE)
        await self.rpc("hardhat_setBalance", WHALE, hex(10**18))
        url = self.w3.provider.endpoint_uri
        result = await deferToThread(
            subprocess.run,
            [node.binary, str(ETHERS_SCRIPT), url, COW, WHALE, RECIPIENT],
            capture_output=True,
            text=True,
            timeout=60,
            env=node.environment,
        )
        self.assertEqual(result.returncode, 0, result.stderr)
        answer = json.loads(result.stdout)
        self.assertEqual(answer["recovered"], checksummed(COW), answer)
        self.assertEqual((answer["from"], answer["status"]), (checksummed(WHALE), 1), answer)
        self.assertEqual(await self.blocking(self.w3.eth.get_balance, checksummed(RECIPIENT)), 5)
