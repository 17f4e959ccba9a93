"""
Every module of nodex keeps to its layer (DESIGN §4, C{docs/architecture.md}): a
layer imports only the layers below it, L0-L4 import neither Twisted nor zope,
the API package imports nothing above L4, and the edges reach the node only
through the API package and never import each other.
"""

import ast
from pathlib import Path

from twisted.trial.unittest import SynchronousTestCase

import nodex

LAYERS: dict[str, int] = {
    "nodex.errors": 0,
    "nodex.primitives": 0,
    "nodex.crypto": 0,
    "nodex.rlpcore": 0,
    "nodex.structures": 1,
    "nodex.trie": 1,
    "nodex.db": 1,
    "nodex.wallet": 1,
    "nodex.state": 2,
    "nodex.evm": 3,
    "nodex.chain": 4,
    "nodex.reputation": 4,
    "nodex.statetest": 4,
    "nodex.api": 5,
    "nodex.services": 5,
    "nodex.rpc": 6,
    "nodex.p2p": 6,
    "nodex.manhole": 6,
    "nodex.metrics": 6,
    "nodex": 7,
    "nodex.config": 7,
    "nodex.tap": 7,
    "nodex.node": 7,
    "nodex.simulation": 7,  # the network simulator (its branch): it composes whole nodes
    "nodex.chaintool": 7,
    "nodex.cli": 7,
    "nodex.processfiles": 7,
    "nodex.descriptors": 7,
    "nodex.busypoll": 7,  # how the process's reactor waits (docs/rpc.md, "Busy polling")
}
"""The layer of each top-level module or package of nodex (DESIGN §4)."""

PURE_LAYER = 4
"""The highest layer whose modules import neither Twisted nor zope."""

EDGES = ("nodex.rpc", "nodex.p2p", "nodex.manhole", "nodex.metrics")
"""The edges: each imports, of the node, only its own package and L{EDGE_MAY_IMPORT}."""

EDGE_MAY_IMPORT = ("nodex.api", "nodex.structures", "nodex.primitives", "nodex.errors", "nodex.crypto")
"""What of the node the edges may import besides themselves."""

API_MAY_IMPORT_FRAMEWORK = ("twisted.internet.defer", "zope.interface")
"""All the API package takes of Twisted and zope: Deferred, for annotations, and Interface."""

ROOT = Path(nodex.__file__).parent


def module_name(path: Path) -> str:
    """
    The dotted name of the nodex module at C{path}.
    """
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def is_module(name: str) -> bool:
    """
    Whether C{nodex.<name>} is a module or package (not, say, C{__version__}).
    """
    return (ROOT / f"{name}.py").exists() or (ROOT / name).is_dir()


def imports_of(path: Path) -> set[str]:
    """
    Every module that the module at C{path} imports, anywhere in it (absolute imports only:
    the project writes no other kind).
    """
    tree = ast.parse(path.read_text(), str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            if node.module == "nodex":
                names.update(f"nodex.{alias.name}" for alias in node.names if is_module(alias.name))
    return names


def unit_of(name: str) -> str:
    """
    The top-level module or package of nodex that holds the module called C{name}.
    """
    return ".".join(name.split(".")[:2])


def within(name: str, roots: tuple[str, ...]) -> bool:
    """
    Whether the module C{name} is one of C{roots} or inside one of them.
    """
    return any(name == root or name.startswith(root + ".") for root in roots)


def modules() -> list[tuple[str, Path]]:
    """
    Every module of nodex, by name.
    """
    return [(module_name(path), path) for path in sorted(ROOT.rglob("*.py"))]


class LayerTests(SynchronousTestCase):
    """
    Tests of the imports of every module of nodex.
    """

    def test_every_module_has_a_layer(self) -> None:
        """
        Each top-level module and package of nodex is placed in L{LAYERS}, so that a new one
        must be given a layer.
        """
        for name, _ in modules():
            self.assertIn(unit_of(name), LAYERS, f"{name} has no layer in LAYERS")

    def test_imports_run_down(self) -> None:
        """
        No module imports a module of a layer above its own.
        """
        for name, path in modules():
            layer = LAYERS[unit_of(name)]
            for imported in imports_of(path):
                if within(imported, ("nodex",)) and imported != "nodex":
                    self.assertLessEqual(
                        LAYERS[unit_of(imported)], layer, f"{name} (L{layer}) imports {imported}")

    def test_pure_layers_import_no_framework(self) -> None:
        """
        L0-L4 are plain synchronous Python: they import neither Twisted nor zope.
        """
        for name, path in modules():
            if LAYERS[unit_of(name)] <= PURE_LAYER:
                for imported in imports_of(path):
                    self.assertFalse(within(imported, ("twisted", "zope")), f"{name} imports {imported}")

    def test_c_libraries_behind_their_modules(self) -> None:
        """
        Only C{nodex/crypto.py} imports coincurve, pycryptodome and C{cryptography}
        (the manhole apart, which reads its SSH keys with C{cryptography}), and only
        C{nodex/db/rocks.py} imports rocksdict (STYLE).
        """
        owners = {
            "coincurve": ("nodex.crypto",),
            "Crypto": ("nodex.crypto",),
            "cryptography": ("nodex.crypto", "nodex.manhole"),
            "rocksdict": ("nodex.db.rocks",),
        }
        for name, path in modules():
            for imported in imports_of(path):
                library = imported.split(".")[0]
                if library in owners:
                    self.assertIn(name, owners[library], f"{name} imports {imported}")

    def test_api_takes_only_deferred_and_interface(self) -> None:
        """
        The API package imports nothing above L4 and, of the frameworks, only Deferred and
        Interface: the contract depends on no implementation.
        """
        for name, path in modules():
            if within(name, ("nodex.api",)):
                for imported in imports_of(path):
                    if within(imported, ("twisted", "zope")):
                        self.assertIn(imported, API_MAY_IMPORT_FRAMEWORK, f"{name} imports {imported}")
                    elif within(imported, ("nodex",)) and unit_of(imported) != "nodex.api":
                        self.assertLessEqual(LAYERS[unit_of(imported)], PURE_LAYER, f"{name} imports {imported}")

    def test_services_do_not_import_edges_or_root(self) -> None:
        """
        The services import no edge and nothing of the composition root (caught by the layers;
        said again here because it is the rule people break first).
        """
        for name, path in modules():
            if within(name, ("nodex.services",)):
                for imported in imports_of(path):
                    self.assertFalse(within(imported, EDGES + ("nodex.tap", "nodex.config")),
                                     f"{name} imports {imported}")

    def test_edges_reach_the_node_only_through_the_api(self) -> None:
        """
        Each edge imports only its own package, the API package, the structures and L0; never a
        service, the chain, the EVM, state, storage, or another edge.
        """
        for name, path in modules():
            edge = unit_of(name)
            if edge in EDGES:
                allowed = (edge,) + EDGE_MAY_IMPORT
                for imported in imports_of(path):
                    if within(imported, ("nodex",)):
                        self.assertTrue(imported == "nodex" or within(imported, allowed),
                                        f"{name} imports {imported}")

    def test_a_violation_is_seen(self) -> None:
        """
        The import reader sees imports inside functions and C{from nodex import x} alike, so that
        the tests above can fail.
        """
        path = Path(self.mktemp())
        path.write_text("def f():\n    from nodex.services.chain import ChainService\nfrom nodex import tap\n")
        self.assertEqual(imports_of(path), {"nodex.services.chain", "nodex", "nodex.tap"})
