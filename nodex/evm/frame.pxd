# Cython declarations for the optional compiled build (NODEX_COMPILE=1,
# docs/evm.md "The compiled build"); frame.py stays the source of truth and
# runs as it is without Cython.  Compiled, Evm is an extension type with the
# same attributes (its __slots__), all Python objects: the modules that
# cimport it read and write them as fields of a C struct rather than through
# attribute look-ups.  Other code sees the same attributes.
cdef class Evm:
    cdef public object pc, stack, memory, code, valid_jump_destinations, gas_left
    cdef public object message, context, state, output, return_data, logs
    cdef public object refund_counter, accounts_to_delete, error, push_values, margin
