# Cython declarations for the optional compiled build (NODEX_COMPILE=1,
# docs/evm.md "The compiled build"): they type the instruction loop's program
# counter, opcode and stack index as C integers and its frame, code, stack and
# PUSH values as what the loop always gives them; interpreter.py stays the
# source of truth and runs as it is without Cython.  The gas stays a Python
# int: transactions of state tests and calls may carry more than 2**63 gas.
cimport cython
from nodex.evm.frame cimport Evm

@cython.locals(pc=Py_ssize_t, op=int, index=Py_ssize_t, entry=Py_ssize_t, countdown=Py_ssize_t, code=bytes, stack=list, push_values=list)
cpdef _run(Evm evm)
