"""
Tests for L{nodex.rpc.transaction_methods}: sending raw and unsigned
transactions, the pending list, the node's accounts and mining.
"""

from dataclasses import replace

from twisted.trial.unittest import SynchronousTestCase

from nodex.crypto import SECP256K1_N
from nodex.rpc.transaction_methods import build_unsigned
from nodex.rpc.errors import InvalidParamsError
from nodex.services.devchain import Impersonation
from nodex.structures.transactions import (
    IMPERSONATION_FLAG,
    AccessListEntry,
    AccessListTransaction,
    FeeMarketTransaction,
    LegacyTransaction,
    decode_transaction,
    impersonate,
    sign_transaction,
)
from tests.rpc.test_chain_methods import MINER_ADDRESS, RPCFixture, hexed
from tests.services.test_pool import ADDRESSES, CHAIN_ID, FUNDS, KEYS, POOR_KEY, RECIPIENT, legacy

COW = "0x" + ADDRESSES[0].hex()
HOLDER = b"\x66" * 20
"""An account without funds whose key the node does not hold."""


class SendRawTransactionTests(RPCFixture, SynchronousTestCase):
    """
    eth_sendRawTransaction.
    """

    def setUp(self) -> None:
        """
        A node over the fake chain.
        """
        self.make_node(auto=True)

    def test_every_type_is_mined(self) -> None:
        """
        Types 0, 1 and 2 are accepted and, in auto mode, mined before the answer.
        """
        entries = (AccessListEntry(RECIPIENT, (b"\x00" * 32,)),)
        transactions = [
            legacy(0),
            sign_transaction(AccessListTransaction(CHAIN_ID, 1, 0, 30000, RECIPIENT, 1, b"", entries), KEYS[0], None),
            sign_transaction(FeeMarketTransaction(CHAIN_ID, 2, 1, 2, 21000, RECIPIENT, 1, b""), KEYS[0], None),
        ]
        for tx in transactions:
            self.assertEqual(self.call("eth_sendRawTransaction", hexed(tx.encode())), hexed(tx.hash))
            self.assertEqual(self.call("eth_getTransactionReceipt", hexed(tx.hash))["type"], hex(tx.type))
        typed = self.call("eth_getTransactionByHash", hexed(transactions[2].hash))
        self.assertEqual(
            (typed["type"], typed["maxFeePerGas"], typed["maxPriorityFeePerGas"], typed["gasPrice"]),
            ("0x2", "0x2", "0x1", "0x1"),
        )
        self.assertEqual(typed["accessList"], [])
        access = self.call("eth_getTransactionByHash", hexed(transactions[1].hash))
        self.assertEqual(access["accessList"], [{"address": hexed(RECIPIENT), "storageKeys": ["0x" + "00" * 32]}])
        self.assertEqual(len(self.miner.mined), 3)
        self.assertEqual(self.call("eth_blockNumber"), "0x3")

    def test_refused_types(self) -> None:
        """
        Blob and set-code transactions are refused with -32602 and a clear message.
        """
        code, message = self.error("eth_sendRawTransaction", "0x03c0")
        self.assertEqual((code, message), (-32602, "invalid argument 0: transaction type 3 (blob) is not supported by this chain"))
        self.assertEqual(self.error("eth_sendRawTransaction", "0x04c0")[0], -32602)

    def test_garbage(self) -> None:
        """
        Bytes that are no transaction answer -32602.
        """
        code, message = self.error("eth_sendRawTransaction", "0xc0")
        self.assertEqual(code, -32602)
        self.assertTrue(message.startswith("invalid argument 0: "))
        self.assertEqual(self.error("eth_sendRawTransaction", "0x")[0], -32602)
        self.assertEqual(self.error("eth_sendRawTransaction")[0], -32602)

    def test_rejections(self) -> None:
        """
        Bad signature, wrong chain id, low nonce, too little balance and a
        price below the minimum answer -32010 with the reference's message,
        and nothing is stored.
        """
        good = legacy(0)
        high_s = replace(good, s=SECP256K1_N - good.s)
        code, message = self.error("eth_sendRawTransaction", hexed(high_s.encode()))
        self.assertEqual(code, -32010)
        self.assertIn("invalid signature", message)
        self.assertEqual(self.error("eth_sendRawTransaction", hexed(legacy(0, chain_id=31).encode())), (-32010, "Invalid chainId: 31"))
        self.assertEqual(
            self.error("eth_sendRawTransaction", hexed(legacy(0, key=POOR_KEY, gas_price=1).encode())),
            (-32010, "insufficient funds"),
        )
        self.assertEqual(
            self.error("eth_sendRawTransaction", hexed(legacy(0, value=FUNDS * 2).encode())),
            (-32010, "insufficient funds"),
        )
        self.assertEqual(self.call("eth_blockNumber"), "0x0")
        self.assertEqual(len(self.pool), 0)
        self.assertEqual(self.call("txpool_status"), {"pending": 0, "queued": 0})

    def test_low_nonce(self) -> None:
        """
        A nonce below the state nonce answers -32010 "transaction nonce too low".
        """
        from tests.services.test_pool import funded_state

        root = funded_state(self.store, {ADDRESSES[0]: (3, FUNDS)})
        self.chain.adopt(state_root=root)
        self.assertEqual(
            self.error("eth_sendRawTransaction", hexed(legacy(2).encode())), (-32010, "transaction nonce too low")
        )

    def test_price_below_minimum(self) -> None:
        """
        A gas price below the head's minimum answers -32010.
        """
        self.make_node(auto=True, header={"minimum_gas_price": 100})
        self.assertEqual(
            self.error("eth_sendRawTransaction", hexed(legacy(0, gas_price=99).encode())),
            (-32010, "transaction's gas price lower than block's minimum"),
        )
        self.assertEqual(self.call("eth_gasPrice"), hex(110))
        self.assertEqual(self.call("eth_maxPriorityFeePerGas"), hex(110))


class ImpersonatedSendTests(RPCFixture, SynchronousTestCase):
    """
    eth_sendTransaction from an impersonated account on a dev chain.
    """

    def setUp(self) -> None:
        """
        A node whose impersonated accounts are C{self.impersonation}.
        """
        self.impersonation = Impersonation()
        self.make_node(auto=True, impersonation=self.impersonation)

    def test_sent_without_key(self) -> None:
        """
        An impersonated account the wallet has no key for sends with the
        marker; the transaction reads back from that account.
        """
        holder = HOLDER
        self.impersonation.start(holder)
        tx_hash = self.call("eth_sendTransaction", {"from": hexed(holder), "to": hexed(RECIPIENT), "data": "0x05"})
        found = self.call("eth_getTransactionByHash", tx_hash)
        self.assertEqual((found["from"], found["s"], found["input"]), (hexed(holder), "0x0", "0x05"))
        self.assertEqual(int(found["r"], 16), IMPERSONATION_FLAG | int.from_bytes(holder, "big"))

    def test_held_key_signs(self) -> None:
        """
        An impersonated account whose key the wallet holds still signs.
        """
        self.impersonation.start(ADDRESSES[0])
        tx_hash = self.call("eth_sendTransaction", {"from": COW, "to": hexed(RECIPIENT)})
        self.assertNotEqual(self.call("eth_getTransactionByHash", tx_hash)["s"], "0x0")

    def test_accounts_list_impersonated(self) -> None:
        """
        eth_accounts lists the wallet's accounts, then the impersonated
        ones not among them (as Anvil does); personal accounts stay the wallet's.
        """
        wallet = self.call("eth_accounts")
        self.impersonation.start(HOLDER)
        self.impersonation.start(ADDRESSES[0])
        self.assertEqual(self.call("eth_accounts"), wallet + [hexed(HOLDER)])
        self.impersonation.stop(HOLDER)
        self.assertEqual(self.call("eth_accounts"), wallet)

    def test_not_impersonated(self) -> None:
        """
        Without impersonation an unknown account cannot send, and a raw
        marked transaction is refused.
        """
        holder = HOLDER
        code, message = self.error("eth_sendTransaction", {"from": hexed(holder), "to": hexed(RECIPIENT)})
        self.assertIn("Could not find account", message)
        marked = impersonate(LegacyTransaction(0, 0, 21000, RECIPIENT, 0, b""), holder, CHAIN_ID)
        code, message = self.error("eth_sendRawTransaction", hexed(marked.encode()))
        self.assertEqual(code, -32010)
        self.assertIn("impersonated sender's marker", message)
        self.assertEqual(self.call("eth_blockNumber"), "0x0")


class SendTransactionTests(RPCFixture, SynchronousTestCase):
    """
    eth_sendTransaction signs with the dev accounts, with the specification's defaults.
    """

    def setUp(self) -> None:
        """
        A node over the fake chain.
        """
        self.make_node(auto=False)

    def sent(self, request: dict) -> LegacyTransaction:
        """
        Send a request; return the pooled transaction.
        """
        tx_hash = self.call("eth_sendTransaction", request)
        tx = self.pool.get(bytes.fromhex(tx_hash[2:]))
        assert tx is not None
        return tx  # type: ignore[return-value]

    def test_defaults(self) -> None:
        """
        gas 90000, gasPrice 0, value 0, nonce = the pending nonce, EIP-155 legacy.
        """
        first = self.sent({"from": COW, "to": hexed(RECIPIENT)})
        self.assertIsInstance(first, LegacyTransaction)
        self.assertEqual((first.gas, first.gas_price, first.value, first.nonce, first.chain_id), (90000, 0, 0, 0, 33))
        self.assertEqual(first.sender, ADDRESSES[0])
        second = self.sent({"from": COW, "to": hexed(RECIPIENT), "value": "0x5", "data": "0x01"})
        self.assertEqual((second.nonce, second.value, second.data), (1, 5, b"\x01"))
        self.assertEqual(decode_transaction(second.encode()), second)

    def test_fee_fields_make_type_2(self) -> None:
        """
        Fee caps make a type 2 transaction; an access list alone a type 1.
        """
        fee = self.sent({"from": COW, "to": hexed(RECIPIENT), "maxFeePerGas": "0x9", "maxPriorityFeePerGas": "0x2"})
        self.assertIsInstance(fee, FeeMarketTransaction)
        self.assertEqual((fee.max_fee_per_gas, fee.max_priority_fee_per_gas), (9, 2))
        access = self.sent({"from": COW, "to": hexed(RECIPIENT), "accessList": [{"address": hexed(RECIPIENT), "storageKeys": []}]})
        self.assertIsInstance(access, AccessListTransaction)
        self.assertEqual(access.access_list, (AccessListEntry(RECIPIENT, ()),))

    def test_input_wins_over_data_and_gas_limit(self) -> None:
        """
        input wins over data; gasLimit stands in for gas.
        """
        tx = self.sent({"from": COW, "to": hexed(RECIPIENT), "data": "0x01", "input": "0x02", "gasLimit": "0x5308"})
        self.assertEqual((tx.data, tx.gas), (b"\x02", 0x5308))

    def test_replacement_by_nonce(self) -> None:
        """
        A request naming the nonce of a pending transaction replaces it.
        """
        old = self.sent({"from": COW, "to": hexed(RECIPIENT), "gasPrice": "0x64"})
        new = self.sent({"from": COW, "to": hexed(RECIPIENT), "gasPrice": "0x8c", "nonce": "0x0"})
        self.assertIsNone(self.pool.get(old.hash))
        self.assertEqual(self.pool.pending(), [new])
        self.assertEqual(
            self.error("eth_sendTransaction", {"from": COW, "to": hexed(RECIPIENT), "gasPrice": "0x8d", "nonce": "0x0"}),
            (-32010, "gas price not enough to bump transaction"),
        )

    def test_unknown_account(self) -> None:
        """
        A sender without an unlocked key answers -32602.
        """
        code, message = self.error("eth_sendTransaction", {"from": "0x" + "01" * 20})
        self.assertEqual((code, message), (-32602, "Could not find account for address: 0x" + "01" * 20))

    def test_bad_requests(self) -> None:
        """
        A missing from, a wrong chain id and a refused type answer -32602.
        """
        self.assertEqual(
            self.error("eth_sendTransaction", {"to": hexed(RECIPIENT)}),
            (-32602, 'invalid argument 0: missing required field "from"'),
        )
        self.assertEqual(self.error("eth_sendTransaction", {"from": COW, "chainId": "0x1f"}), (-32602, "Invalid chainId: 31"))
        self.assertEqual(
            self.error("eth_sendTransaction", {"from": COW, "type": "0x3"}),
            (-32602, 'invalid argument 0: field "type": transaction type 3 (blob) is not supported by this chain'),
        )
        self.assertEqual(self.error("eth_sendTransaction", {"from": COW, "gas": "12"})[0], -32602)

    def test_build_unsigned_contradictions(self) -> None:
        """
        Fee caps on a legacy type and an access list on a legacy type are refused.
        """
        with self.assertRaises(InvalidParamsError):
            build_unsigned({"type": 0, "maxFeePerGas": 1}, 33, 0)
        with self.assertRaises(InvalidParamsError):
            build_unsigned({"type": 0, "accessList": ()}, 33, 0)
        only_fee = build_unsigned({"maxFeePerGas": 7}, 33, 0)
        self.assertEqual((only_fee.max_fee_per_gas, only_fee.max_priority_fee_per_gas), (7, 7))

    def test_pending_transactions(self) -> None:
        """
        eth_pendingTransactions lists the node's own pooled transactions in the specification's shape.
        """
        own = self.sent({"from": COW, "to": hexed(RECIPIENT)})
        self.successResultOf(self.pool.add(legacy(0, key=POOR_KEY, value=0)))
        listed = self.call("eth_pendingTransactions")
        self.assertEqual([item["hash"] for item in listed], [hexed(own.hash)])
        self.assertEqual(
            (listed[0]["blockHash"], listed[0]["blockNumber"], listed[0]["transactionIndex"], listed[0]["type"]),
            ("0x" + "00" * 32, None, "0x0", "0x0"),
        )


class AccountMethodsTests(RPCFixture, SynchronousTestCase):
    """
    eth_accounts, eth_coinbase, eth_mining, eth_gasPrice.
    """

    def setUp(self) -> None:
        """
        A node over the fake chain.
        """
        self.make_node(auto=True)

    def test_accounts(self) -> None:
        """
        Eleven accounts, the cows first, the coinbase last.
        """
        accounts = self.call("eth_accounts")
        self.assertEqual(len(accounts), 11)
        self.assertEqual((accounts[0], accounts[-1]), (COW, hexed(MINER_ADDRESS)))

    def test_coinbase_mining_gas_price(self) -> None:
        """
        The coinbase is the miner's; mining follows the miner; the gas price is 0 on regtest.
        """
        self.assertEqual(self.call("eth_coinbase"), hexed(MINER_ADDRESS))
        self.assertIs(self.call("eth_mining"), True)
        self.miner.stop()
        self.assertIs(self.call("eth_mining"), False)
        self.assertEqual(self.call("eth_gasPrice"), "0x0")
