"""
Makes C{twistd nodex} run the node (see L{nodex.tap}).
"""

from twisted.application.service import ServiceMaker

nodex = ServiceMaker("nodex", "nodex.tap", "An EVM full node of the Bitcoin-merge-mined family.", "nodex")
