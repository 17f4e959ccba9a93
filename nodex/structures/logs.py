"""
Logs emitted by the LOG instructions, as receipts carry them:
C{[address, [topic, ...], data]}.
"""

from dataclasses import dataclass

from nodex.primitives import Address, Hash32, direct_init
from nodex.structures.errors import RLPError
from nodex.structures.rlpcodec import RLPItem, decode_bytes, decode_fixed, decode_list

MAX_TOPICS = 4


@direct_init
@dataclass(frozen=True)
class Log:
    """
    One log entry.

    @ivar address: the 20-byte address of the contract that emitted it.
    @ivar topics: up to four 32-byte topics.
    @ivar data: the unindexed payload.
    """

    address: Address
    topics: tuple[Hash32, ...]
    data: bytes

    def to_rlp_item(self) -> RLPItem:
        """
        The RLP item of the log, ready for encoding inside a receipt.
        """
        return [self.address, list(self.topics), self.data]

    @classmethod
    def from_rlp_item(cls, item: RLPItem) -> "Log":
        """
        Read a log from its decoded RLP item.

        @raise nodex.structures.errors.RLPError: the shape is wrong, the
            address is not 20 bytes, a topic is not 32 bytes or there are
            more than four topics.
        """
        address, topics, data = decode_list(item, "log", 3)
        topic_items = decode_list(topics, "log topics")
        if len(topic_items) > MAX_TOPICS:
            raise RLPError(f"a log has at most {MAX_TOPICS} topics, got {len(topic_items)}")
        return cls(
            Address(decode_fixed(address, "log address", 20)),
            tuple(Hash32(decode_fixed(topic, "log topic", 32)) for topic in topic_items),
            decode_bytes(data, "log data"),
        )


__all__ = ["MAX_TOPICS", "Log"]
