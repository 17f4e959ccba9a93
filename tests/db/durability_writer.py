"""
The writer of the durability test: fills a L{RocksStore} with block-sized
batches until it is killed.

Run as C{python -m tests.db.durability_writer <directory>}.  Batch C{n}
(from 1) puts L{PUTS_PER_BATCH} values of about 500 bytes under keys that
start with C{n}, and sets the counter in metadata to C{n}; after each write
returns, the writer prints C{n} on a line of its own.
"""

import sys

from nodex.db.rocks import RocksStore
from nodex.db.schema import BODIES, METADATA

PUTS_PER_BATCH = 200
COUNTER_KEY = b"durability_counter"


def batch_key(number: int, index: int) -> bytes:
    """
    The key of put C{index} of batch C{number}.
    """
    return number.to_bytes(8, "big") + index.to_bytes(2, "big")


def batch_value(number: int, index: int) -> bytes:
    """
    The value of put C{index} of batch C{number}: about 500 bytes that name both.
    """
    return (number.to_bytes(8, "big") + index.to_bytes(2, "big")) * 50


def main(path: str) -> None:
    """
    Write batches 1, 2, 3, ... to the store at C{path} until killed.
    """
    store = RocksStore.open(path)
    number = 0
    while True:
        number += 1
        batch = store.batch()
        for index in range(PUTS_PER_BATCH):
            batch.put(BODIES, batch_key(number, index), batch_value(number, index))
        batch.put(METADATA, COUNTER_KEY, number.to_bytes(8, "big"))
        store.write(batch)
        sys.stdout.write(f"{number}\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1])
