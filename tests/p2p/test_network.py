"""
Tests of L{nodex.p2p.network} with real nodes over loopback TCP.
"""

from tests.p2p.nodes import NodesTestCase, head_number


class SyncTests(NodesTestCase):
    """
    A node syncs the chain of its peers.
    """

    async def test_sync_from_scratch(self) -> None:
        """
        A new node syncs 1,000 blocks from its peer.
        """
        source = await self.start_node()
        await self.grow(source, 1000)
        follower = await self.start_node("--peer", self.address(source))
        await self.wait_for(lambda: head_number(follower) == 1000, what="the sync")
        assert source.chain is not None and follower.chain is not None
        self.assertEqual(follower.chain.head, source.chain.head)
