"""
End-to-end tests of an automined transaction's answer sent before the
observers of its block run (C{docs/chain-service.md}, "Answer first"): a
client that has the answer sees the block everywhere at once.
"""

import http.client
import json
from typing import Any

from twisted.trial.unittest import SynchronousTestCase

from nodex.crypto import keccak256, private_key_to_address
from nodex.structures.transactions import LegacyTransaction, sign_transaction
from tests.e2e.test_state_e2e import NodeProcess

KEY = keccak256(b"cow1")
SENDER = "0x" + private_key_to_address(KEY).hex()
RECIPIENT = bytes(range(1, 21))
CHAIN_ID = 33
SENDS = 30


class Connection:
    """
    One keep-alive HTTP connection to the node (the RPC server's direct lane).
    """

    def __init__(self, url: str) -> None:
        host, _, port = url.removeprefix("http://").rstrip("/").partition(":")
        self._http = http.client.HTTPConnection(host, int(port), timeout=60)
        self._id = 0

    def call(self, method: str, *params: Any) -> Any:
        """
        The result of a request that must succeed.
        """
        self._id += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self._id, "method": method, "params": list(params)})
        self._http.request("POST", "/", body, {"Content-Type": "application/json"})
        answer = json.loads(self._http.getresponse().read())
        if "error" in answer:
            raise AssertionError(f"{method} failed: {answer['error']}")
        return answer["result"]

    def close(self) -> None:
        """
        Close the connection.
        """
        self._http.close()


class AnswerFirstTests(SynchronousTestCase):
    """
    An automining regtest node, asked on one connection right after each
    answer on another.
    """

    def setUp(self) -> None:
        self.node = NodeProcess()
        self.addCleanup(self.node.stop)
        self.sending = Connection(self.node.url)
        self.asking = Connection(self.node.url)
        self.addCleanup(self.sending.close)
        self.addCleanup(self.asking.close)

    def test_block_seen_right_after_the_answer(self) -> None:
        """
        Right after each C{eth_sendRawTransaction} answer, another
        connection finds the receipt, the sender's next nonce (pending
        included), an empty pool, and the block and the transaction in
        its filters' changes.
        """
        blocks = self.asking.call("eth_newBlockFilter")
        pending = self.asking.call("eth_newPendingTransactionFilter")
        for nonce in range(SENDS):
            raw = sign_transaction(LegacyTransaction(nonce, 0, 21_000, RECIPIENT, 1, b""), KEY, CHAIN_ID).encode()
            tx_hash = self.sending.call("eth_sendRawTransaction", "0x" + raw.hex())
            receipt = self.asking.call("eth_getTransactionReceipt", tx_hash)
            self.assertIsNotNone(receipt, nonce)
            self.assertEqual(receipt["status"], "0x1")
            self.assertEqual(int(self.asking.call("eth_getTransactionCount", SENDER, "pending"), 16), nonce + 1)
            self.assertEqual(self.asking.call("txpool_content")["pending"], {})
            self.assertEqual(self.asking.call("eth_getFilterChanges", blocks), [receipt["blockHash"]])
            self.assertEqual(self.asking.call("eth_getFilterChanges", pending), [tx_hash])
            self.assertEqual(self.asking.call("eth_blockNumber"), receipt["blockNumber"])
