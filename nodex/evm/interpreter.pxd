# Cython declarations for the optional compiled build (NODEX_COMPILE=1,
# docs/evm.md "The compiled build"): they type the instruction loop's program
# counter, opcode and stack index as C integers; interpreter.py stays the
# source of truth and runs as it is without Cython. The gas stays a Python
# int: transactions of state tests and calls may carry more than 2**63 gas.
cimport cython

@cython.locals(pc=Py_ssize_t, op=int, index=Py_ssize_t, code=bytes, stack=list)
cpdef _run(evm)
