"""
Turning a decoded block parameter into a block of the chain.

Every method that takes a block (by number, tag or EIP-1898 selector) goes
through L{resolve_block}, so that tags, unknown blocks and the C{pending}
policy of DESIGN §1 behave the same everywhere.
"""

from nodex.api.chain import IChainService
from nodex.api.errors import BlockNotFoundError
from nodex.api.mining import IPendingBlock
from nodex.rpc.decoders import BlockHashSelector, BlockSelector, BlockTag
from nodex.rpc.errors import RPCError
from nodex.structures.blocks import Block
from nodex.structures.headers import Header

PENDING_UNSUPPORTED = -32201


class PendingNotSupportedError(RPCError):
    """
    One of the five partially supported methods was asked for C{pending} (DESIGN §1).
    """

    code = PENDING_UNSUPPORTED

    def __init__(self) -> None:
        super().__init__("The method doesn't support 'pending' as a parameter yet")


def describe(selector: BlockSelector) -> str:
    """
    How an error message names the block a client asked for.
    """
    if isinstance(selector, BlockTag):
        return selector.value
    if isinstance(selector, BlockHashSelector):
        return "with hash 0x" + selector.block_hash.hex()
    return hex(selector)


async def resolve_block(
    chain: IChainService, selector: BlockSelector, *, pending_supported: bool = True
) -> Block | None:
    """
    The block a parameter names.

    C{latest} is the head, C{earliest} the genesis block; C{pending} is the
    head here (the methods that read a block's stored contents), except for
    the methods that refuse it; the methods that run code or read state at
    C{pending} use the pending block instead (L{header_at}); C{safe} and
    C{finalized} as L{tag_number} says.

    @param pending_supported: L{False} for the five methods of the
        specification that refuse C{pending}.
    @return: the block, or L{None} for a number above the head or an unknown hash.
    @raise PendingNotSupportedError: C{pending} where it is refused.
    @raise BlockNotFoundError: an EIP-1898 hash with C{requireCanonical} that
        is not on the canonical chain.
    """
    if selector is BlockTag.PENDING and not pending_supported:
        raise PendingNotSupportedError()
    if isinstance(selector, BlockHashSelector):
        block = await chain.get_block_by_hash(selector.block_hash)
        if block is not None and selector.require_canonical:
            if not await chain.is_canonical(selector.block_hash):
                raise BlockNotFoundError(
                    f"Block with hash 0x{selector.block_hash.hex()} is not canonical and it is required"
                )
        return block
    if isinstance(selector, BlockTag):
        return await chain.get_block_by_number(tag_number(chain, selector))
    return await chain.get_block_by_number(selector)


def tag_number(chain: IChainService, tag: BlockTag) -> int:
    """
    The number of the block a tag names now: C{earliest} 0; C{latest} and
    C{pending} the head; C{safe} and C{finalized} the block the network's
    depth below the head (the head itself on regtest, confirmations on
    proof-of-work networks: L{nodex.chain.networks.SAFE_CONFIRMATIONS}).
    """
    if tag is BlockTag.EARLIEST:
        return 0
    head = chain.head.header.number
    if tag is BlockTag.SAFE:
        return max(head - chain.rules.safe_depth, 0)
    if tag is BlockTag.FINALIZED:
        return max(head - chain.rules.finalized_depth, 0)
    return head


async def require_block(
    chain: IChainService, selector: BlockSelector, *, pending_supported: bool = True
) -> Block:
    """
    Like L{resolve_block}, for methods where an unknown block is an error.

    @raise BlockNotFoundError: C{Block <id> not found} (reference §3.3).
    """
    block = await resolve_block(chain, selector, pending_supported=pending_supported)
    if block is None:
        raise BlockNotFoundError(f"Block {describe(selector)} not found")
    return block


async def header_at(
    chain: IChainService, selector: BlockSelector, pending: IPendingBlock | None = None
) -> Header:
    """
    The header whose state and environment a call, an estimate, a trace or
    a state read at a block parameter runs in: for C{pending}, the block
    the miner would build now (DESIGN §6), when the node has one.

    @raise BlockNotFoundError: an unknown block.
    """
    if selector is BlockTag.PENDING and pending is not None:
        return await pending.header()
    if selector is BlockTag.LATEST or selector is BlockTag.PENDING:
        return chain.head.header
    return (await require_block(chain, selector)).header
