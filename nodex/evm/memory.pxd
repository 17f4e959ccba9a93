# The compiled build (docs/evm.md "The compiled build") compiles this module
# with annotation typing: its `evm: Evm` arguments are the extension type of
# frame.pxd (fields read directly, None refused), its `int` ones Python ints.
from nodex.evm.frame cimport Evm
