"""
Turning a decoded block parameter into a block of the chain.

Every method that takes a block (by number, tag or EIP-1898 selector) goes
through L{resolve_block}, so that tags, unknown blocks and the C{pending}
policy of DESIGN §1 behave the same everywhere.
"""

from nodex.interfaces import BlockNotFoundError, IChainService
from nodex.rpc.decoders import BlockHashSelector, BlockSelector, BlockTag
from nodex.rpc.errors import RPCError
from nodex.structures.blocks import Block

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
    head too (blocks are mined as soon as transactions arrive on a dev chain,
    and a non-mining node has no block of its own in preparation), except for
    the methods that refuse it.

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
    if selector is BlockTag.EARLIEST:
        return await chain.get_block_by_number(0)
    if isinstance(selector, BlockTag):
        return await chain.get_block_by_number(chain.head.header.number)
    return await chain.get_block_by_number(selector)


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
