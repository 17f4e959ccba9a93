"""
Which EVM this process runs: the pure-Python modules, or the optional
compiled build of them (C{NODEX_COMPILE=1}, docs/evm.md "The compiled build").

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
"""The modules the compiled build compiles (setup.py's C{COMPILED} names their files)."""


def is_extension(module: object) -> bool:
    """
    Whether C{module} was loaded from a compiled extension rather than a C{.py} file.
    """
    path = getattr(module, "__file__", None) or ""
    return path.endswith(tuple(EXTENSION_SUFFIXES))


def compiled_modules() -> list[str]:
    """
    The modules of L{COMPILED_MODULES} that this process imported from compiled extensions.
    """
    return [name for name in COMPILED_MODULES if is_extension(importlib.import_module(name))]


def build_line() -> str:
    """
    One line naming the EVM in use: compiled, pure Python, or partly compiled
    (an extension that failed to build, or was removed, leaves its module pure).
    """
    compiled = compiled_modules()
    if not compiled:
        return "EVM: pure Python (the compiled build is optional: NODEX_COMPILE=1, docs/evm.md)"
    if len(compiled) == len(COMPILED_MODULES):
        return f"EVM: compiled with Cython ({len(compiled)} modules)"
    pure = [name for name in COMPILED_MODULES if name not in compiled]
    return f"EVM: partly compiled with Cython ({len(compiled)} of {len(COMPILED_MODULES)} modules; pure: {', '.join(pure)})"
