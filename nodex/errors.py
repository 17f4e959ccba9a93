"""
The root of every exception nodex raises on purpose.

Each package keeps its own exceptions in its own C{errors} module, all
descending from L{NodexError}, so that the edges (RPC, P2P) can translate
them from one table and treat anything else as unexpected.
"""


class NodexError(Exception):
    """
    Base class of every error nodex raises deliberately.
    """
