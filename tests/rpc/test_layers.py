"""
The RPC edge keeps to its layer (DESIGN §4): it reaches the node only through
L{nodex.api} and imports no service, chain, EVM, state, storage or P2P code.
"""

import ast
from pathlib import Path

from twisted.trial.unittest import SynchronousTestCase

import nodex.rpc

ALLOWED_NODEX = ("nodex.rpc", "nodex.api", "nodex.structures", "nodex.primitives", "nodex.errors", "nodex.crypto")


def nodex_imports(path: Path) -> set[str]:
    """
    The C{nodex} modules that the module at C{path} imports.
    """
    tree = ast.parse(path.read_text(), str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return {name for name in names if name == "nodex" or name.startswith("nodex.")}


class LayerTests(SynchronousTestCase):
    """
    Tests of the imports of C{nodex.rpc}.
    """

    def test_rpc_imports_only_allowed_layers(self) -> None:
        """
        Every module of nodex.rpc imports only the RPC package, the interfaces, the structures
        and L0 (and C{nodex} itself, for its version).
        """
        package = Path(nodex.rpc.__file__).parent
        for path in sorted(package.rglob("*.py")):
            for name in nodex_imports(path):
                allowed = name == "nodex" or any(name == root or name.startswith(root + ".") for root in ALLOWED_NODEX)
                self.assertTrue(allowed, f"{path.name} imports {name}")
