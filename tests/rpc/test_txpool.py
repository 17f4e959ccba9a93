"""
Tests for L{nodex.rpc.txpool}: the shapes of reference §3.10.
"""

from twisted.trial.unittest import SynchronousTestCase

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
