"""
Setuptools entry point; the metadata lives in setup.cfg.

C{twisted.plugins} is added to the packages here because setuptools' package
discovery cannot see a namespace that another distribution (Twisted) owns,
and twistd finds the C{nodex} plugin only if its module is installed there.

With C{NODEX_COMPILE=1} in the environment, the EVM's instruction loop and
instruction modules are also compiled with Cython (docs/evm.md, "The compiled
build"): the Python files stay the source of truth, and every extension is
optional, so that a machine without a C compiler gets the pure-Python
interpreter instead of a failed install.  Cython is then a build requirement
(C{setup_requires}, which pip installs into its isolated build environment);
without the variable nothing is compiled and Cython is never fetched.
"""

import os
import sys

from setuptools import find_packages, setup

COMPILED = [
    "nodex/evm/interpreter.py",
    "nodex/evm/memory.py",
    "nodex/evm/frame.py",
    "nodex/evm/gas.py",
    "nodex/evm/instructions/*.py",
]
"""The modules of the compiled build (nodex.evm.build.COMPILED_MODULES names the same)."""

DIRECTIVES = {
    "language_level": 3,
    # Annotations stay annotations: typed as C or exact builtin types, an
    # `int` argument would truncate a float and a `bytes` or `tuple` one
    # refuse a bytearray or a list, where the pure-Python source takes them.
    # What is typed is declared in the .pxd files, beside the modules.
    "annotation_typing": False,
}
"""Cython's compiler directives for the modules of the build."""

ANNOTATED = [
    "nodex/evm/memory.py",
    "nodex/evm/instructions/arithmetic.py",
    "nodex/evm/instructions/bitwise.py",
    "nodex/evm/instructions/block.py",
    "nodex/evm/instructions/control_flow.py",
    "nodex/evm/instructions/keccak.py",
    "nodex/evm/instructions/log.py",
    "nodex/evm/instructions/memory.py",
    "nodex/evm/instructions/stack.py",
    "nodex/evm/instructions/storage.py",
]
"""
The modules compiled with their annotations as types: every annotation in
them is C{evm: Evm} (the extension type of frame.pxd, which their .pxd
cimports: its attributes become fields; None is refused), an C{int} or a
tuple the callers always build (L{nodex.evm.memory.expand_memory_for}).
The other modules annotate C{bytes}, tuples and booleans that need not be exact.
"""


def wanted() -> bool:
    """
    Whether this install asks for the compiled build.
    """
    return os.environ.get("NODEX_COMPILE") == "1"


def compiled_extensions() -> list:
    """
    The Cython extensions, when C{NODEX_COMPILE=1} asks for them and Cython is there.

    Each is optional: setuptools' C{build_ext} warns and goes on when one
    does not compile, and the module stays pure Python.
    """
    if not wanted():
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        # Also the first pass of a PEP 517 build, which asks setup.py for its
        # build requirements before it installs Cython.
        print("NODEX_COMPILE=1 but Cython is missing: the EVM stays pure Python", file=sys.stderr)
        return []
    # Both cores of a small machine (Cython's C generation, then the C compiler: build_ext's parallel option below).
    threads = os.cpu_count() or 1
    extensions = cythonize(
        ANNOTATED, compiler_directives={**DIRECTIVES, "annotation_typing": True}, quiet=True, nthreads=threads
    )
    extensions += cythonize(COMPILED, exclude=ANNOTATED, compiler_directives=DIRECTIVES, quiet=True, nthreads=threads)
    for extension in extensions:
        extension.optional = True
    return extensions


if __name__ == "__main__":
    setup(
        packages=find_packages(include=["nodex", "nodex.*"]) + ["twisted.plugins"],
        setup_requires=["Cython>=3.0"] if wanted() else [],
        ext_modules=compiled_extensions(),
        options={"build_ext": {"parallel": os.cpu_count() or 1}} if wanted() else {},
    )
