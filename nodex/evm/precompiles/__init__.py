"""
The precompiled contracts at addresses 0x01-0x0a (L3), Cancun rules.

L{PRECOMPILES} maps each 20-byte address to a L{Precompile}: the caller
charges C{gas(data)}, then calls C{run(data)}, and treats
L{PrecompileError} as an exceptional halt.  C{docs/precompiles.md} lists the
contracts, their prices and the libraries they use.
"""

from nodex.evm.precompiles.errors import PrecompileError
from nodex.evm.precompiles.table import PRECOMPILES, Precompile

__all__ = ["PRECOMPILES", "Precompile", "PrecompileError"]
