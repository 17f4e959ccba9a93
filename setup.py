"""
Setuptools entry point; the metadata lives in setup.cfg.

C{twisted.plugins} is added to the packages here because setuptools' package
discovery cannot see a namespace that another distribution (Twisted) owns,
and twistd finds the C{nodex} plugin only if its module is installed there.

With C{NODEX_COMPILE=1} in the environment, the EVM's instruction loop and
instruction modules are also compiled with Cython (docs/evm.md, "The compiled
build"): the Python files stay the source of truth, and every extension is
optional, so that a machine without a C compiler (or without Cython) gets the
pure-Python interpreter, with a warning, instead of a failed install.
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
"""The modules of the compiled build (the EVM benchmark's compute workload runs about 1.5 times faster)."""


def compiled_extensions() -> list:
    """
    The Cython extensions, when C{NODEX_COMPILE=1} asks for them and Cython is there.
    """
    if os.environ.get("NODEX_COMPILE") != "1":
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        print("NODEX_COMPILE=1 but Cython is missing: the EVM stays pure Python", file=sys.stderr)
        return []
    extensions = cythonize(COMPILED, language_level=3, quiet=True)
    for extension in extensions:
        extension.optional = True
    return extensions


setup(
    packages=find_packages(include=["nodex", "nodex.*"]) + ["twisted.plugins"],
    ext_modules=compiled_extensions(),
)
