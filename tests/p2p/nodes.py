"""
Real nodes in one process for the P2P tests: each from L{nodex.node.compose}
with RocksDB under a temporary directory and its P2P server on 127.0.0.1
port 0, plus helpers to grow a chain quickly and to wait for a condition.
"""

from collections.abc import Callable, Sequence
from typing import Any

from twisted.internet import reactor
from twisted.internet.task import deferLater
from twisted.trial.unittest import TestCase

from nodex.chain.building.making import BlockTime, TransactionsBlock
from nodex.p2p.network import PeerNetwork
from nodex.primitives import Address
from nodex.structures.blocks import Block
from nodex.structures.transactions import Transaction
from nodex.node import NodeService, compose
from nodex.tap import Options

COINBASE = Address(b"\x42" * 20)


class NodesTestCase(TestCase):
    """
    A test case that starts nodes and stops them at its end.
    """

    async def start_node(self, *argv: str, datadir: str | None = None) -> NodeService:
        """
        Start a regtest node with P2P on 127.0.0.1 port 0, no RPC and manual mining.
        """
        options = Options()
        options.parseOptions(
            ["--datadir", datadir or self.mktemp(), "--rpc", "none", "--mining", "manual",
             "--p2p", "tcp:0:interface=127.0.0.1", "--ws", "none", *argv]
        )
        assert options.config is not None
        node = compose(options.config, reactor)
        node.startService()
        self.addCleanup(self.stop_node, node)
        return node

    async def stop_node(self, node: NodeService) -> None:
        """
        Stop a node unless already stopped.
        """
        if node.running:
            # A block import still in flight when the chain service closes
            # its store publishes its event after the close (the pool then
            # writes to a closed store): stop the peers first, and let the
            # imports they started finish.
            network = node.namedServices.get("p2p")
            if isinstance(network, PeerNetwork) and network.running:
                await network.stopService()
                waited = 0.0
                while (network.queue_size() or network.sync.syncing) and waited < 10:
                    await deferLater(reactor, 0.02, lambda: None)
                    waited += 0.02
            await node.stopService()

    def network(self, node: NodeService) -> PeerNetwork:
        """
        The peer network of a node.
        """
        network = node.getServiceNamed("p2p")
        assert isinstance(network, PeerNetwork)
        return network

    def address(self, node: NodeService) -> str:
        """
        The C{HOST:PORT} of a node's P2P server.
        """
        return f"127.0.0.1:{self.network(node).listening_port}"

    async def grow(self, node: NodeService, count: int, transactions: Callable[[int], Sequence[Transaction]] = lambda i: (),
                   extra_data: bytes = b"") -> list[Block]:
        """
        Add C{count} blocks to a node's chain, each one second after its
        parent (so that a long chain stays in the past), with the
        transactions C{transactions(index)} returns.
        """
        chain = node.chain
        assert chain is not None
        blocks = []
        for index in range(count):
            step = await chain.make(next_block(transactions(index), extra_data))
            assert step.block is not None
            blocks.append(step.block)
        return blocks

    async def wait_for(self, condition: Callable[[], bool], timeout: float = 60.0, what: str = "a condition") -> None:
        """
        Poll C{condition} every 20 ms until it holds; fail after C{timeout} seconds.
        """
        waited = 0.0
        while not condition():
            if waited > timeout:
                self.fail(f"timed out waiting for {what}")
            await deferLater(reactor, 0.02, lambda: None)
            waited += 0.02


def next_block(transactions: Sequence[Transaction], extra_data: bytes = b"") -> TransactionsBlock:
    """
    A request for a block of C{transactions} on the tip, one second after it
    (at regtest difficulty the importer seals it at once).
    """
    return TransactionsBlock(COINBASE, BlockTime(0, 0), tuple(transactions), extra_data)


def event_counts(node: NodeService, record: str) -> dict[str, int]:
    """
    The peer events a node's reputation service counted against an address,
    or against the node id whose hex form starts with C{record}.
    """
    reputation = node.getServiceNamed("reputation")
    for entry in reputation.peer_records():
        if entry.id == record or (entry.kind == "node" and record.startswith(entry.id)):
            return dict(entry.counters)
    return {}


def head_number(node: NodeService) -> int:
    """
    A node's head block number.
    """
    assert node.chain is not None
    return int(node.chain.head.header.number)


__all__ = ["NodesTestCase", "event_counts", "head_number", "next_block"]


async def rpc_port(node: NodeService) -> int:
    """
    The port of a node's RPC server.
    """
    port = await node.getServiceNamed("rpc").when_listening()
    return int(port.getHost().port)


async def rpc(node: NodeService, method: str, *params: Any) -> Any:
    """
    Call a JSON-RPC method of a node over HTTP; return its result (fail on an error).
    """
    import json

    import treq

    url = f"http://127.0.0.1:{await rpc_port(node)}/"
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)}).encode()
    response = await treq.post(url, data=body, headers={"Content-Type": "application/json"}, persistent=False)
    answer = json.loads(await response.content())
    if "error" in answer:
        raise AssertionError(f"{method}: {answer['error']}")
    return answer["result"]
