"""
The P2P edge keeps to its layer (DESIGN §4): it reaches the node only
through L{nodex.api} and imports no service, chain, EVM, state,
storage or RPC code.
"""

from pathlib import Path

from twisted.trial.unittest import SynchronousTestCase

import nodex.p2p
from tests.rpc.test_layers import nodex_imports

ALLOWED = ("nodex.p2p", "nodex.api", "nodex.structures", "nodex.primitives", "nodex.errors", "nodex.crypto")


class LayerTests(SynchronousTestCase):
    """
    Tests of the imports of C{nodex.p2p}.
    """

    def test_p2p_imports_only_allowed_layers(self) -> None:
        """
        Every module of nodex.p2p imports only the P2P package, the interfaces, the structures and L0.
        """
        package = Path(nodex.p2p.__file__).parent
        for path in sorted(package.rglob("*.py")):
            for name in nodex_imports(path):
                allowed = any(name == root or name.startswith(root + ".") for root in ALLOWED)
                self.assertTrue(allowed, f"{path.name} imports {name}")
