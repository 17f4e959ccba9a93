"""
Tests for L{nodex.rpc.txpool}: the shapes of reference §3.10, and geth's.
"""

from eth_utils import to_checksum_address
from twisted.trial.unittest import SynchronousTestCase

from nodex.api.conventions import ETHEREUM_CONVENTIONS
from nodex.rpc.txpool import signed_bytes_hex
from tests.rpc.test_chain_methods import RPCFixture, hexed
from tests.services.test_pool import ADDRESSES, RECIPIENT, legacy


class TxPoolMethodsTests(RPCFixture, SynchronousTestCase):
    """
    txpool_status, txpool_content and txpool_inspect.
    """

    def setUp(self) -> None:
        """
        A node over the fake chain.
        """
        self.make_node(auto=False)
        self.pending, self.queued = legacy(0, gas_price=128, value=255), legacy(2)
        self.creation = legacy(1, to=b"", data=b"\x00", gas=60000)
        for tx in (self.pending, self.queued):
            self.successResultOf(self.pool.add(tx))

    def test_status(self) -> None:
        """
        Plain JSON numbers of pending and queued transactions.
        """
        self.assertEqual(self.call("txpool_status"), {"pending": 1, "queued": 1})

    def test_content(self) -> None:
        """
        Nested by RAWHEX sender and decimal nonce, each an array of the reference's objects.
        """
        content = self.call("txpool_content")
        sender = ADDRESSES[0].hex()
        self.assertEqual(list(content), ["pending", "queued"])
        self.assertEqual(list(content["queued"][sender]), ["2"])
        obj = content["pending"][sender]["0"][0]
        self.assertEqual(
            obj,
            {
                "blockHash": "0x" + "00" * 32,
                "blockNumber": None,
                "transactionIndex": None,
                "from": hexed(ADDRESSES[0]),
                "gas": "0x5208",
                "gasPrice": "0x0080",
                "hash": hexed(self.pending.hash),
                "input": "0x",
                "nonce": "0x0",
                "to": hexed(RECIPIENT),
                "value": "0x00ff",
            },
        )

    def test_creation(self) -> None:
        """
        A creation's to is 0x00 in content and empty in inspect.
        """
        self.successResultOf(self.pool.add(self.creation))
        sender = ADDRESSES[0].hex()
        self.assertEqual(self.call("txpool_content")["pending"][sender]["1"][0]["to"], "0x00")
        self.assertEqual(self.call("txpool_inspect")["pending"][sender]["1"], [": 1 wei + 60000 x 0 gas"])

    def test_inspect(self) -> None:
        """
        One line per transaction: to, value, gas and price.
        """
        inspect = self.call("txpool_inspect")
        sender = ADDRESSES[0].hex()
        self.assertEqual(inspect["pending"][sender]["0"], [f"{RECIPIENT.hex()}: 255 wei + 21000 x 128 gas"])
        self.assertEqual(inspect["queued"][sender]["2"], [f"{RECIPIENT.hex()}: 1 wei + 21000 x 0 gas"])

    def test_signed_bytes(self) -> None:
        """
        The reference's big-integer hex: 0x00 for zero, a leading zero byte when the top bit is set.
        """
        self.assertEqual([signed_bytes_hex(v) for v in (0, 1, 127, 128, 256)], ["0x00", "0x01", "0x7f", "0x0080", "0x0100"])

    def test_content_from(self) -> None:
        """
        One sender's part of txpool_content; nothing for another.
        """
        mine = self.call("txpool_contentFrom", hexed(ADDRESSES[0]))
        self.assertEqual((list(mine["pending"]), list(mine["queued"])), (["0"], ["2"]))
        self.assertEqual(self.call("txpool_contentFrom", hexed(RECIPIENT)), {"pending": {}, "queued": {}})


class GethTxPoolTests(RPCFixture, SynchronousTestCase):
    """
    The txpool methods in geth's shapes, under the Ethereum conventions.
    """

    def setUp(self) -> None:
        """
        A node over the fake chain, with a pending and a queued transaction.
        """
        self.make_node(auto=False, conventions=ETHEREUM_CONVENTIONS)
        self.pending, self.queued = legacy(0, gas_price=128, value=255), legacy(2)
        for tx in (self.pending, self.queued):
            self.successResultOf(self.pool.add(tx))
        self.sender = to_checksum_address(hexed(ADDRESSES[0]))

    def test_status(self) -> None:
        """
        QUANTITY counts.
        """
        self.assertEqual(self.call("txpool_status"), {"pending": "0x1", "queued": "0x1"})

    def test_content(self) -> None:
        """
        Checksummed senders, decimal nonces, one transaction object each
        (eth_getTransactionByHash's, without a block).
        """
        content = self.call("txpool_content")
        self.assertEqual(list(content["pending"]), [self.sender])
        obj = content["pending"][self.sender]["0"]
        self.assertEqual((obj["hash"], obj["gasPrice"], obj["value"], obj["to"]), (hexed(self.pending.hash), "0x80", "0xff", hexed(RECIPIENT)))
        self.assertEqual((obj["blockHash"], obj["blockNumber"], obj["transactionIndex"]), (None, None, None))
        self.assertEqual(content["queued"][self.sender]["2"]["nonce"], "0x2")
        self.assertEqual(self.call("txpool_contentFrom", hexed(ADDRESSES[0]))["queued"]["2"]["nonce"], "0x2")

    def test_inspect(self) -> None:
        """
        geth's one-line summaries, creations included.
        """
        self.successResultOf(self.pool.add(legacy(1, to=b"", data=b"\x00", gas=60000)))
        inspect = self.call("txpool_inspect")["pending"][self.sender]
        to = to_checksum_address(hexed(RECIPIENT))
        self.assertEqual(inspect["0"], f"{to}: 255 wei + 21000 gas \u00d7 128 wei")
        self.assertEqual(inspect["1"], "contract creation: 1 wei + 60000 gas \u00d7 0 wei")
