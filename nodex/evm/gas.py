"""
Gas costs of Cancun (plus CLZ) and the functions that price memory, copies and calls.

Names follow execution-specs so that the two can be read side by side.
"""

GAS_JUMPDEST = 1
GAS_BASE = 2
GAS_VERY_LOW = 3
GAS_LOW = 5
GAS_MID = 8
GAS_HIGH = 10
GAS_EXPONENTIATION = 10
GAS_EXPONENTIATION_PER_BYTE = 50
GAS_MEMORY = 3
GAS_KECCAK256 = 30
GAS_KECCAK256_WORD = 6
GAS_COPY = 3
GAS_BLOCK_HASH = 20
GAS_LOG = 375
GAS_LOG_DATA = 8
GAS_LOG_TOPIC = 375
GAS_CREATE = 32000
GAS_CODE_DEPOSIT = 200
GAS_ZERO = 0
GAS_NEW_ACCOUNT = 25000
GAS_CALL_VALUE = 9000
GAS_CALL_STIPEND = 2300
GAS_SELF_DESTRUCT = 5000
GAS_SELF_DESTRUCT_NEW_ACCOUNT = 25000
GAS_STORAGE_SET = 20000
GAS_STORAGE_UPDATE = 5000
GAS_STORAGE_CLEAR_REFUND = 4800
GAS_COLD_SLOAD = 2100
GAS_COLD_ACCOUNT_ACCESS = 2600
GAS_WARM_ACCESS = 100
GAS_INIT_CODE_WORD_COST = 2
GAS_BLOBHASH_OPCODE = 3
GAS_FAST_STEP = 5

TX_BASE_COST = 21000
TX_DATA_COST_PER_NON_ZERO = 16
TX_DATA_COST_PER_ZERO = 4
TX_CREATE_COST = 32000
TX_ACCESS_LIST_ADDRESS_COST = 2400
TX_ACCESS_LIST_STORAGE_KEY_COST = 1900

STACK_DEPTH_LIMIT = 1024
STACK_LIMIT = 1024
MAX_CODE_SIZE = 0x6000
MAX_INIT_CODE_SIZE = 2 * MAX_CODE_SIZE

GAS_PER_BLOB = 2**17
MIN_BLOB_GASPRICE = 1
BLOB_BASE_FEE_UPDATE_FRACTION = 3338477
MAX_BLOB_GAS_PER_BLOCK = 786432
VERSIONED_HASH_VERSION_KZG = 0x01


def memory_cost(words: int) -> int:
    """
    The total cost of a memory of C{words} 32-byte words (linear plus quadratic).
    """
    return GAS_MEMORY * words + words * words // 512


def max_message_call_gas(gas: int) -> int:
    """
    All but one 64th of C{gas}, the most a frame may pass to a child (EIP-150).
    """
    return gas - gas // 64


def init_code_cost(size: int) -> int:
    """
    The EIP-3860 charge for C{size} bytes of initcode.
    """
    return GAS_INIT_CODE_WORD_COST * ((size + 31) // 32)


def fake_exponential(factor: int, numerator: int, denominator: int) -> int:
    """
    The integer approximation of C{factor * e ** (numerator / denominator)} of EIP-4844.
    """
    i = 1
    output = 0
    numerator_accumulator = factor * denominator
    while numerator_accumulator > 0:
        output += numerator_accumulator
        numerator_accumulator = (numerator_accumulator * numerator) // (denominator * i)
        i += 1
    return output // denominator


def blob_base_fee(excess_blob_gas: int) -> int:
    """
    The price of one unit of blob gas for a block with C{excess_blob_gas}.
    """
    return fake_exponential(MIN_BLOB_GASPRICE, excess_blob_gas, BLOB_BASE_FEE_UPDATE_FRACTION)
