"""
Which EVM this process runs: the pure-Python modules, or the optional
compiled build of them (C{NODEX_COMPILE=1}, docs/evm.md "The compiled build"),
and which of the node's hot modules outside the EVM the same build compiled.

The node logs L{build_line} as it starts.
"""

import importlib
from importlib.machinery import EXTENSION_SUFFIXES

COMPILED_MODULES = (
    "nodex.evm.interpreter",
    "nodex.evm.memory",
    "nodex.evm.frame",
    "nodex.evm.gas",
    "nodex.evm.instructions",
    "nodex.evm.instructions.arithmetic",
    "nodex.evm.instructions.bitwise",
    "nodex.evm.instructions.block",
    "nodex.evm.instructions.control_flow",
    "nodex.evm.instructions.environment",
    "nodex.evm.instructions.keccak",
    "nodex.evm.instructions.log",
    "nodex.evm.instructions.memory",
    "nodex.evm.instructions.stack",
    "nodex.evm.instructions.storage",
    "nodex.evm.instructions.system",
)
"""The EVM's modules of the compiled build (setup.py's C{COMPILED} names their files)."""

NODE_MODULES = (
    "nodex.rlpcore",
    "nodex.primitives",
    "nodex.structures.rlpcodec",
    "nodex.structures.transactions",
    "nodex.trie.hexary",
    "nodex.trie.nodes",
    "nodex.state.state",
    "nodex.services.pool",
    "nodex.services.reputation",
    "nodex.p2p.secure",
    "nodex.p2p.protocol",
    "nodex.p2p.queue",
    "nodex.p2p.messages",
    "nodex.p2p.relay",
    "nodex.p2p.network",
    "nodex.p2p.inbound",
    "nodex.simulation.network",
    "nodex.simulation.clock",
    "nodex.rpc.channel",
    "nodex.rpc.dispatch",
    "nodex.rpc.encoders",
    "nodex.rpc.decoders",
)
"""
The node's modules of the compiled build outside the EVM (setup.py's
C{NODE_COMPILED} names their files): the per-message and per-request paths
(docs/evm.md, "The compiled build").  Named here by string and imported
only by L{compiled_modules}, so that this L3 module imports no edge.
"""


def is_extension(module: object) -> bool:
    """
    Whether C{module} was loaded from a compiled extension rather than a C{.py} file.
    """
    path = getattr(module, "__file__", None) or ""
    return path.endswith(tuple(EXTENSION_SUFFIXES))


def compiled_modules(names: tuple[str, ...] = COMPILED_MODULES) -> list[str]:
    """
    The modules of C{names} (the EVM's, by default; or L{NODE_MODULES}) that
    this process imported from compiled extensions.
    """
    return [name for name in names if is_extension(importlib.import_module(name))]


def evm_part() -> str:
    """
    What L{build_line} says of the EVM.
    """
    compiled = compiled_modules()
    if not compiled:
        return "EVM: pure Python (the compiled build is optional: NODEX_COMPILE=1, docs/evm.md)"
    if len(compiled) == len(COMPILED_MODULES):
        return f"EVM: compiled with Cython ({len(compiled)} modules)"
    pure = [name for name in COMPILED_MODULES if name not in compiled]
    return f"EVM: partly compiled with Cython ({len(compiled)} of {len(COMPILED_MODULES)} modules; pure: {', '.join(pure)})"


def build_line() -> str:
    """
    One line naming the build in use: the EVM compiled, pure Python, or
    partly compiled (an extension that failed to build, or was removed,
    leaves its module pure); then, when any of L{NODE_MODULES} is compiled,
    how many of them.
    """
    line = evm_part()
    compiled = compiled_modules(NODE_MODULES)
    if not compiled:
        return line
    if len(compiled) == len(NODE_MODULES):
        return f"{line}; node: {len(compiled)} modules compiled"
    pure = [name for name in NODE_MODULES if name not in compiled]
    return f"{line}; node: {len(compiled)} of {len(NODE_MODULES)} modules compiled (pure: {', '.join(pure)})"
