"""
Benchmark of the transaction structures: sender recoveries per second for
types 0 and 2, and decodes (with the hash) per second.

Run by hand, briefly: C{python benchmarks/structures.py [seconds]}.  Each
measurement works on fresh objects so that no cached sender or hash is
reused.
"""

import sys
import time
from collections.abc import Callable
from dataclasses import replace

from nodex.crypto import keccak256
from nodex.structures.transactions import (
    AccessListEntry,
    FeeMarketTransaction,
    LegacyTransaction,
    Transaction,
    decode_transaction,
    sign_transaction,
)

KEY = keccak256(b"cow")
RECIPIENT = b"\x35" * 20


def signed_transactions(count: int) -> tuple[list[bytes], list[bytes]]:
    """
    C{count} raw legacy (EIP-155) and C{count} raw type 2 transactions, with
    distinct nonces so that every signature differs.
    """
    legacy = LegacyTransaction(0, 10**9, 21000, RECIPIENT, 10**18, b"")
    fee_market = FeeMarketTransaction(
        33, 0, 10**9, 2 * 10**9, 60000, RECIPIENT, 1, b"\xa9\x05\x9c\xbb" + b"\x00" * 64,
        (AccessListEntry(RECIPIENT, (b"\x01" * 32,)),),
    )
    raw_legacy = [sign_transaction(replace(legacy, nonce=n), KEY, 33).encode() for n in range(count)]
    raw_typed = [sign_transaction(replace(fee_market, nonce=n), KEY, 33).encode() for n in range(count)]
    return raw_legacy, raw_typed


def rate(work: Callable[[bytes], object], raws: list[bytes], seconds: float) -> float:
    """
    Operations per second of C{work} over C{raws}, repeated for about C{seconds}.
    """
    done = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for raw in raws:
            work(raw)
        done += len(raws)
    return done / (time.perf_counter() - start)


def recover(raw: bytes) -> Transaction:
    """
    Decode a transaction and recover its sender.
    """
    tx = decode_transaction(raw)
    tx.sender
    return tx


def decode_and_hash(raw: bytes) -> Transaction:
    """
    Decode a transaction and take its hash.
    """
    tx = decode_transaction(raw)
    tx.hash
    return tx


def main(seconds: float) -> None:
    """
    Print the rates.
    """
    raw_legacy, raw_typed = signed_transactions(500)
    decode_only_legacy = rate(decode_and_hash, raw_legacy, seconds)
    decode_only_typed = rate(decode_and_hash, raw_typed, seconds)
    print(f"decode+hash, type 0:            {decode_only_legacy:10,.0f} /s")
    print(f"decode+hash, type 2:            {decode_only_typed:10,.0f} /s")
    print(f"decode+sender recovery, type 0: {rate(recover, raw_legacy, seconds):10,.0f} /s")
    print(f"decode+sender recovery, type 2: {rate(recover, raw_typed, seconds):10,.0f} /s")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
