"""
End to end: the time rules every nodex node agrees on, and the pending
block (issue 23), driven over JSON-RPC as a client would.

Regtest has no drift limit: a dev chain whose clock runs ahead of the wall
clock (a burst of automined transactions, C{hardhat_mine}, C{evm_increaseTime})
is followed and synced by other nodes, and its own work stays valid;
C{pending} is the block the miner would build next.
"""

import time

from eth_account import Account as EthAccount
from twisted.trial.unittest import SynchronousTestCase

from tests.chain import bitcoin_blocks as bb
from tests.e2e.test_mining_e2e import mine_template
from tests.e2e.test_p2p_e2e import ProcessNodesTestCase
from tests.e2e.test_state_e2e import NodeProcess

# A contract that writes one "checkpoint" per block, as OpenZeppelin's
# ERC20Votes does: called again in the block of its last checkpoint it
# writes nothing; called in a new block it writes a fresh slot (~27,000 gas).
#   NUMBER PUSH1 0 SLOAD EQ PUSH1 same JUMPI
#   NUMBER PUSH1 0 SSTORE   PUSH1 1 NUMBER PUSH1 2 ADD SSTORE STOP
#   same: JUMPDEST STOP
CHECKPOINTS_RUNTIME = "43600054146014574360005560014360020155" + "00" + "5b00"
CHECKPOINTS_INIT = "6016600c60003960166000f3" + CHECKPOINTS_RUNTIME

# Returns block.number: NUMBER PUSH1 0 MSTORE PUSH1 32 PUSH1 0 RETURN.
NUMBER_RUNTIME = "4360005260206000f3"
NUMBER_INIT = "68" + NUMBER_RUNTIME + "60005260096017f3"


def cow_key() -> str:
    """
    The first development account's key (Keccak-256 of "cow", DESIGN §2).
    """
    from nodex.crypto import keccak256

    return "0x" + keccak256(b"cow").hex()


def deploy(node: NodeProcess, init: str) -> str:
    """
    Deploy C{init} from the first development account; the contract's address.
    """
    sender = node.call("eth_accounts")[0]
    tx_hash = node.call("eth_sendTransaction", {"from": sender, "data": "0x" + init, "gas": "0x30000"})
    receipt = node.call("eth_getTransactionReceipt", tx_hash)
    assert receipt["status"] == "0x1", receipt
    return str(receipt["contractAddress"])


class PendingBlockTests(SynchronousTestCase):
    """
    C{pending} is the block the miner would build now.
    """

    def setUp(self) -> None:
        """
        A regtest node (automining).
        """
        self.node = NodeProcess()
        self.addCleanup(self.node.stop)

    def test_call_sees_the_next_number(self) -> None:
        """
        C{eth_call} at C{pending} runs with C{block.number} = head + 1, at
        C{latest} with the head's.
        """
        address = deploy(self.node, NUMBER_INIT)
        head = int(self.node.call("eth_blockNumber"), 16)
        at_latest = self.node.call("eth_call", {"to": address}, "latest")
        at_pending = self.node.call("eth_call", {"to": address}, "pending")
        self.assertEqual((int(at_latest, 16), int(at_pending, 16)), (head, head + 1))

    def test_estimate_at_pending_is_enough(self) -> None:
        """
        An estimate at C{pending} for a contract that writes one checkpoint
        per block covers the new checkpoint its transaction will write, so
        the transaction sent with it succeeds; the estimate at C{latest}
        (the head's block, whose checkpoint exists) would not.
        """
        address = deploy(self.node, CHECKPOINTS_INIT)
        sender = self.node.call("eth_accounts")[0]
        call = {"from": sender, "to": address}
        self.node.call("eth_sendTransaction", {**call, "gas": "0x20000"})
        at_latest = int(self.node.call("eth_estimateGas", call, "latest"), 16)
        at_pending = int(self.node.call("eth_estimateGas", call, "pending"), 16)
        self.assertGreater(at_pending, at_latest + 15_000)
        tx_hash = self.node.call("eth_sendTransaction", {**call, "gas": hex(at_pending)})
        self.assertEqual(self.node.call("eth_getTransactionReceipt", tx_hash)["status"], "0x1")
        short = self.node.call("eth_sendTransaction", {**call, "gas": hex(at_latest)})
        self.assertEqual(self.node.call("eth_getTransactionReceipt", short)["status"], "0x0")

    def test_own_work_after_moving_time(self) -> None:
        """
        After C{evm_increaseTime} of an hour and C{evm_mine}, the node's own
        C{eth_getWork} and C{mnr_getWork} are sealed and accepted.
        """
        self.node.call("evm_increaseTime", "0xe10")
        self.node.call("evm_mine")
        head = self.node.call("eth_getBlockByNumber", "latest", False)
        self.assertGreater(int(head["timestamp"], 16), time.time() + 3000)
        pow_hash, _seed, target = self.node.call("eth_getWork")
        nonce = mine_template(bytes.fromhex(pow_hash[2:]), int(target, 16))
        self.assertIs(self.node.call("eth_submitWork", "0x" + nonce.hex(), pow_hash, "0x" + "00" * 32), True)
        work = self.node.call("mnr_getWork")
        pow_hash_bytes = bytes.fromhex(work["blockHashForMergedMining"][2:])
        raw, _header, _ids = bb.mined_block(bb.tagged_coinbase(pow_hash_bytes), 2, int(work["target"], 16))
        answer = self.node.call("mnr_submitBitcoinBlock", raw.hex())
        self.assertEqual(bytes.fromhex(answer["blockImportedResult"][2:]), b"IMPORTED_BEST")
        self.assertEqual(int(self.node.call("eth_blockNumber"), 16), int(head["number"], 16) + 2)


class FollowerTests(ProcessNodesTestCase):
    """
    Followers of a regtest node whose clock runs ahead of the wall clock.
    """

    timeout = 300

    async def test_follower_through_a_burst(self) -> None:
        """
        A follower of an automining node stays at its head through a burst
        of 200 transactions (each in a block of its own, one second after
        the last: the head runs minutes ahead of the wall clock), and keeps
        its peer.
        """
        a = await self.spawn()
        b = await self.spawn("--mining", "off", "--peer", f"127.0.0.1:{a.ports['p2p']}")
        await self.until(b, "net_peerCount", "0x1")
        key = cow_key()
        for nonce in range(200):
            signed = EthAccount.sign_transaction(
                {"chainId": 33, "nonce": nonce, "gas": 21000, "gasPrice": 0, "to": "0x" + "77" * 20, "value": 1}, key
            )
            await self.call(a, "eth_sendRawTransaction", "0x" + bytes(signed.raw_transaction).hex())
        head = await self.call(a, "eth_getBlockByNumber", "latest", False)
        self.assertEqual(int(head["number"], 16), 200)
        self.assertGreater(int(head["timestamp"], 16), time.time() + 100)
        await self.until(b, "eth_blockNumber", head["number"])
        self.assertEqual((await self.call(b, "eth_getBlockByNumber", "latest", False))["hash"], head["hash"])
        self.assertEqual(await self.call(b, "net_peerCount"), "0x1")

    async def test_fresh_node_syncs_a_mined_run(self) -> None:
        """
        After C{hardhat_mine} of 5,000 blocks (the head 5,000 s ahead), a
        fresh node syncs all of it.
        """
        a = await self.spawn()
        await self.call(a, "hardhat_mine", "0x1388")
        head = await self.call(a, "eth_getBlockByNumber", "latest", False)
        self.assertEqual(head["number"], "0x1388")
        b = await self.spawn("--mining", "off", "--peer", f"127.0.0.1:{a.ports['p2p']}")
        # 5,000 blocks: minutes on a loaded 2-core machine, within the class's timeout.
        await self.until(b, "eth_blockNumber", "0x1388", seconds=240)
        self.assertEqual((await self.call(b, "eth_getBlockByNumber", "latest", False))["hash"], head["hash"])
