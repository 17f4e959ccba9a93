"""
The instruction table: a 256-entry list of functions indexed by opcode, and
the mnemonics EIP-3155 traces print.

Each category lives in its own module; every undefined byte maps to
L{invalid_opcode}.
"""

from collections.abc import Callable

from nodex.evm.frame import Evm
from nodex.evm.instructions import (
    arithmetic,
    bitwise,
    block,
    control_flow,
    environment,
    keccak,
    log,
    memory,
    stack,
    storage,
    system,
)

Instruction = Callable[[Evm], None]

_DEFINED: dict[int, tuple[str, Instruction]] = {
    0x00: ("STOP", control_flow.stop),
    0x01: ("ADD", arithmetic.add),
    0x02: ("MUL", arithmetic.mul),
    0x03: ("SUB", arithmetic.sub),
    0x04: ("DIV", arithmetic.div),
    0x05: ("SDIV", arithmetic.sdiv),
    0x06: ("MOD", arithmetic.mod),
    0x07: ("SMOD", arithmetic.smod),
    0x08: ("ADDMOD", arithmetic.addmod),
    0x09: ("MULMOD", arithmetic.mulmod),
    0x0A: ("EXP", arithmetic.exp),
    0x0B: ("SIGNEXTEND", arithmetic.signextend),
    0x10: ("LT", bitwise.less_than),
    0x11: ("GT", bitwise.greater_than),
    0x12: ("SLT", bitwise.signed_less_than),
    0x13: ("SGT", bitwise.signed_greater_than),
    0x14: ("EQ", bitwise.equal),
    0x15: ("ISZERO", bitwise.is_zero),
    0x16: ("AND", bitwise.bitwise_and),
    0x17: ("OR", bitwise.bitwise_or),
    0x18: ("XOR", bitwise.bitwise_xor),
    0x19: ("NOT", bitwise.bitwise_not),
    0x1A: ("BYTE", bitwise.get_byte),
    0x1B: ("SHL", bitwise.bitwise_shl),
    0x1C: ("SHR", bitwise.bitwise_shr),
    0x1D: ("SAR", bitwise.bitwise_sar),
    0x1E: ("CLZ", bitwise.count_leading_zeros),
    0x20: ("KECCAK256", keccak.keccak),
    0x30: ("ADDRESS", environment.address),
    0x31: ("BALANCE", environment.balance),
    0x32: ("ORIGIN", environment.origin),
    0x33: ("CALLER", environment.caller),
    0x34: ("CALLVALUE", environment.callvalue),
    0x35: ("CALLDATALOAD", environment.calldataload),
    0x36: ("CALLDATASIZE", environment.calldatasize),
    0x37: ("CALLDATACOPY", environment.calldatacopy),
    0x38: ("CODESIZE", environment.codesize),
    0x39: ("CODECOPY", environment.codecopy),
    0x3A: ("GASPRICE", environment.gasprice),
    0x3B: ("EXTCODESIZE", environment.extcodesize),
    0x3C: ("EXTCODECOPY", environment.extcodecopy),
    0x3D: ("RETURNDATASIZE", environment.returndatasize),
    0x3E: ("RETURNDATACOPY", environment.returndatacopy),
    0x3F: ("EXTCODEHASH", environment.extcodehash),
    0x40: ("BLOCKHASH", block.block_hash),
    0x41: ("COINBASE", block.coinbase),
    0x42: ("TIMESTAMP", block.timestamp),
    0x43: ("NUMBER", block.number),
    0x44: ("PREVRANDAO", block.prev_randao),
    0x45: ("GASLIMIT", block.gas_limit),
    0x46: ("CHAINID", block.chain_id),
    0x47: ("SELFBALANCE", environment.self_balance),
    0x48: ("BASEFEE", environment.base_fee),
    0x49: ("BLOBHASH", environment.blob_hash),
    0x4A: ("BLOBBASEFEE", environment.blob_base_fee),
    0x50: ("POP", stack.pop),
    0x51: ("MLOAD", memory.mload),
    0x52: ("MSTORE", memory.mstore),
    0x53: ("MSTORE8", memory.mstore8),
    0x54: ("SLOAD", storage.sload),
    0x55: ("SSTORE", storage.sstore),
    0x56: ("JUMP", control_flow.jump),
    0x57: ("JUMPI", control_flow.jumpi),
    0x58: ("PC", control_flow.get_pc),
    0x59: ("MSIZE", memory.msize),
    0x5A: ("GAS", control_flow.gas_left),
    0x5B: ("JUMPDEST", control_flow.jumpdest),
    0x5C: ("TLOAD", storage.tload),
    0x5D: ("TSTORE", storage.tstore),
    0x5E: ("MCOPY", memory.mcopy),
    0x5F: ("PUSH0", stack.push0),
    0xF0: ("CREATE", system.create),
    0xF1: ("CALL", system.call),
    0xF2: ("CALLCODE", system.callcode),
    0xF3: ("RETURN", system.return_),
    0xF4: ("DELEGATECALL", system.delegatecall),
    0xF5: ("CREATE2", system.create2),
    0xFA: ("STATICCALL", system.staticcall),
    0xFD: ("REVERT", system.revert),
    0xFE: ("INVALID", system.invalid_opcode),
    0xFF: ("SELFDESTRUCT", system.selfdestruct),
}
for _n in range(1, 33):
    _DEFINED[0x5F + _n] = (f"PUSH{_n}", stack.make_push(_n))
for _n in range(1, 17):
    _DEFINED[0x7F + _n] = (f"DUP{_n}", stack.make_dup(_n))
    _DEFINED[0x8F + _n] = (f"SWAP{_n}", stack.make_swap(_n))
for _n in range(5):
    _DEFINED[0xA0 + _n] = (f"LOG{_n}", log.make_log(_n))

INSTRUCTIONS: list[Instruction] = [
    _DEFINED[op][1] if op in _DEFINED else system.invalid_opcode for op in range(256)
]
"""The function that executes each opcode."""

OPCODE_NAMES: list[str] = [
    _DEFINED[op][0] if op in _DEFINED else f"opcode 0x{op:02x} not defined" for op in range(256)
]
"""The mnemonic of each opcode, as EIP-3155 traces print it."""

__all__ = ["INSTRUCTIONS", "OPCODE_NAMES", "Instruction"]
