"""
The mining methods: the merged-mining module C{mnr} (reference §3.5) and
the Ethereum-style work methods C{eth_getWork}, C{eth_submitWork},
C{eth_submitHashrate}, C{eth_hashrate} and C{eth_netHashrate} (DESIGN §1,
reference §3.3, §17).  C{docs/mining.md} says how a miner uses them.

The C{mnr_submit*} methods take I{bare} hex (no C{0x}), as the reference
does; a malformed argument answers -32603 as the reference's does, with a
message that says which argument and why.  Refused submissions answer
-33000 (L{nodex.api.errors.WorkSubmissionError}); an import outcome, even
C{INVALID_BLOCK}, is a successful answer.
"""

from collections.abc import Iterable
from typing import Any

from nodex.api.mining import IWorkService, MiningWork, SubmittedBlock
from nodex.rpc import decoders, encoders
from nodex.rpc.decoders import DecodeError
from nodex.rpc.errors import INTERNAL_ERROR, RPCError
from nodex.rpc.registry import Method, Param

_HEX = frozenset("0123456789abcdefABCDEF")

MAX_HASHRATE_BYTES = 32


class MalformedArgumentError(RPCError):
    """
    An C{mnr_*} argument that is not bare hex of the expected shape (-32603, as the reference answers).
    """

    code = INTERNAL_ERROR


def bare_hex(index: int, name: str) -> Any:
    """
    A decoder of bare hex (no C{0x} prefix, an even number of digits) for argument C{index}.
    """

    def decode(value: Any) -> bytes:
        if not isinstance(value, str):
            raise MalformedArgumentError(f"invalid argument {index} ({name}): want a string of bare hex")
        if value[:2] in ("0x", "0X"):
            raise MalformedArgumentError(f"invalid argument {index} ({name}): want bare hex without the 0x prefix")
        if len(value) % 2 or not _HEX.issuperset(value):
            raise MalformedArgumentError(f"invalid argument {index} ({name}): not an even number of hex digits")
        return bytes.fromhex(value)

    return decode


def hash_list(index: int, name: str) -> Any:
    """
    A decoder of one string of whitespace-separated bare-hex hashes.
    """
    entry = bare_hex(index, name)

    def decode(value: Any) -> list[bytes]:
        if not isinstance(value, str):
            raise MalformedArgumentError(f"invalid argument {index} ({name}): want a string of hashes")
        return [entry(part) for part in value.split()]

    return decode


def bare_count(index: int, name: str) -> Any:
    """
    A decoder of a bare-hex number (no C{0x}).
    """

    def decode(value: Any) -> int:
        if not isinstance(value, str) or not value or value[:2] in ("0x", "0X") or not _HEX.issuperset(value):
            raise MalformedArgumentError(f"invalid argument {index} ({name}): want a number in bare hex")
        if len(value) > 16:
            raise MalformedArgumentError(f"invalid argument {index} ({name}): more than 64 bits")
        return int(value, 16)

    return decode


def hashrate_value(value: Any) -> int:
    """
    A hash rate: a C{0x}-prefixed hex number of at most 32 bytes (the
    specification's 32-byte hex string; shorter forms, as QUANTITY, too).
    """
    if not isinstance(value, str) or value[:2] not in ("0x", "0X"):
        raise DecodeError("want a hex string for hashrate")
    digits = value[2:]
    if not digits or not _HEX.issuperset(digits):
        raise DecodeError("invalid hex string for hashrate")
    if len(digits) > 2 * MAX_HASHRATE_BYTES:
        raise DecodeError(f"hex string has length {len(digits)}, want at most {2 * MAX_HASHRATE_BYTES} for hashrate")
    return int(digits, 16)


def merged_mining_work(work: MiningWork) -> dict[str, Any]:
    """
    The object of C{mnr_getWork}, in the reference's member order.
    """
    return {
        "blockHashForMergedMining": encoders.hash32(work.hash_for_merged_mining),
        "target": encoders.hash32(work.target.to_bytes(32, "big")),
        "feesPaidToMiner": encoders.decimal(work.fees),
        "notify": work.notify,
        "parentBlockHash": encoders.hash32(work.parent_hash),
    }


def submitted_block(submitted: SubmittedBlock) -> dict[str, Any]:
    """
    The SubmittedBlockInfo object of the C{mnr_submit*} methods.
    """
    return {
        "blockImportedResult": encoders.data(submitted.result.value.encode("ascii")),
        "blockHash": encoders.hash32(submitted.block_hash),
        "blockIncludedHeight": encoders.quantity(submitted.number),
    }


def ethereum_work(work: MiningWork) -> list[str]:
    """
    The three values of C{eth_getWork}: pow-hash, seed hash (none: zeros), target.
    """
    return [
        encoders.hash32(work.hash_for_merged_mining),
        encoders.hash32(b"\x00" * 32),
        encoders.hash32(work.target.to_bytes(32, "big")),
    ]


class MiningMethods:
    """
    The C{mnr} module and the work and hash-rate methods of C{eth}.
    """

    def __init__(self, work: IWorkService) -> None:
        """
        @param work: the work service.
        """
        self._work = work

    def rpc_methods(self) -> Iterable[Method]:
        """
        The mining methods.
        """
        return [
            Method("mnr_getWork", self._work.merged_mining_work, (), merged_mining_work),
            Method(
                "mnr_submitBitcoinBlock",
                self._work.submit_bitcoin_block,
                (Param("bitcoinBlockHex", bare_hex(0, "bitcoinBlockHex")),),
                submitted_block,
            ),
            Method(
                "mnr_submitBitcoinBlockTransactions",
                self.submit_transactions,
                (
                    Param("blockHashHex", decoders.string),
                    Param("blockHeaderHex", bare_hex(1, "blockHeaderHex")),
                    Param("coinbaseHex", bare_hex(2, "coinbaseHex")),
                    Param("txHashes", hash_list(3, "txHashes")),
                ),
                submitted_block,
            ),
            Method(
                "mnr_submitBitcoinBlockPartialMerkle",
                self.submit_partial_merkle,
                (
                    Param("blockHashHex", decoders.string),
                    Param("blockHeaderHex", bare_hex(1, "blockHeaderHex")),
                    Param("coinbaseHex", bare_hex(2, "coinbaseHex")),
                    Param("merkleHashes", hash_list(3, "merkleHashes")),
                    Param("blockTxnCountHex", bare_count(4, "blockTxnCountHex")),
                ),
                submitted_block,
            ),
            Method("eth_getWork", self._work.work, (), ethereum_work),
            Method(
                "eth_submitWork",
                self.submit_work,
                (
                    Param("nonce", decoders.fixed_data(8, "nonce")),
                    Param("powHash", decoders.hash32),
                    Param("mixDigest", decoders.hash32),
                ),
            ),
            Method(
                "eth_submitHashrate",
                self.submit_hashrate,
                (Param("hashrate", hashrate_value), Param("id", decoders.hash32)),
            ),
            Method("eth_hashrate", self._work.hashrate, (), encoders.quantity),
            Method("eth_netHashrate", self._work.network_hashrate, (), int),
        ]

    def submit_transactions(self, _block_hash: str, header: bytes, coinbase: bytes, ids: list[bytes]) -> Any:
        """
        C{mnr_submitBitcoinBlockTransactions}: the block hash argument is ignored, as in the reference.
        """
        return self._work.submit_transaction_ids(header, coinbase, ids)

    def submit_partial_merkle(
        self, _block_hash: str, header: bytes, coinbase: bytes, hashes: list[bytes], count: int
    ) -> Any:
        """
        C{mnr_submitBitcoinBlockPartialMerkle}: the block hash argument is ignored, as in the reference.
        """
        return self._work.submit_merkle_branch(header, coinbase, hashes, count)

    def submit_work(self, nonce: bytes, pow_hash: bytes, _mix_digest: bytes) -> Any:
        """
        C{eth_submitWork}: the mix digest has no meaning for a merged-mining seal and is ignored.
        """
        return self._work.submit_work(nonce, pow_hash)

    def submit_hashrate(self, rate: int, client_id: bytes) -> bool:
        """
        C{eth_submitHashrate}.
        """
        return self._work.submit_hashrate(rate, client_id)


__all__ = [
    "MalformedArgumentError",
    "MiningMethods",
    "bare_count",
    "bare_hex",
    "ethereum_work",
    "hash_list",
    "hashrate_value",
    "merged_mining_work",
    "submitted_block",
]
