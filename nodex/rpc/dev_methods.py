"""
The Hardhat and Anvil dev-chain methods (issue 18), served on regtest and
devnet only and gated by the C{evm} module: C{evm_setNextBlockTimestamp},
C{evm_setAutomine}, C{evm_setIntervalMining}, C{evm_setBlockGasLimit}, and
each C{hardhat_*} method under its C{anvil_*} name too.

Hardhat's methods answer C{true}, Anvil's C{null} (as each does); the state
setters answer once their block is written.  C{docs/compatibility.md} says
how each differs from Hardhat and Anvil.
"""

from collections.abc import Callable, Iterable
from typing import Any

from nodex.api.devchain import IDevChain
from nodex.rpc import encoders
from nodex.rpc.decoders import DecodeError, address, any_json, boolean, data, fixed_data, hash32, quantity, uint64
from nodex.rpc.evm_methods import seconds
from nodex.rpc.registry import Method, Param

MODULE = "evm"
"""The module that switches every method here on and off."""

MAX_CODE_BYTES = 0x6000 * 2
"""The largest code C{hardhat_setCode} takes (twice EIP-170's limit, as for initcode)."""


def milliseconds(value: Any) -> int:
    """
    A non-negative number of milliseconds: a JSON integer or a QUANTITY.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise DecodeError(f"interval {value} is negative")
        return value
    if isinstance(value, list):
        raise DecodeError("a range of intervals is not supported: give one number of milliseconds")
    return uint64(value)


def timestamp(value: Any) -> int:
    """
    A timestamp in seconds: a JSON integer, a decimal or QUANTITY string, at most 64 bits.
    """
    number = seconds(value)
    if not 0 <= number < 2**64:
        raise DecodeError(f"timestamp {number} is not a 64-bit unsigned number")
    return number


def code(value: Any) -> bytes:
    """
    Contract code: DATA of at most L{MAX_CODE_BYTES} bytes.
    """
    raw = data(value)
    if len(raw) > MAX_CODE_BYTES:
        raise DecodeError(f"code of {len(raw)} bytes exceeds {MAX_CODE_BYTES} bytes")
    return raw


storage_word = fixed_data(32, "storage value")


def snapshot(value: Any) -> Any:
    """
    A state snapshot: the JSON object C{anvil_dumpState} answers.
    """
    if not isinstance(value, dict):
        raise DecodeError("want the JSON object anvil_dumpState answers")
    return any_json(value)


def reset_options(value: Any) -> dict[str, Any]:
    """
    The options of C{hardhat_reset} / C{anvil_reset}: nothing, or an object
    without C{forking}; nodex runs its own chain and forks none.
    """
    if not isinstance(value, dict):
        raise DecodeError("want an object of reset options")
    if value.get("forking") is not None:
        raise DecodeError("forking another chain is not supported: nodex resets its own chain to genesis")
    unknown = set(value) - {"forking"}
    if unknown:
        raise DecodeError(f"unknown reset option {sorted(unknown)[0]!r}")
    return value


def _true(_: Any) -> bool:
    """
    Hardhat's answer to a control method.
    """
    return True


def _null(_: Any) -> None:
    """
    Anvil's answer to a control method.
    """
    return None


class DevMethods:
    """
    The dev-chain methods over an L{IDevChain}.
    """

    def __init__(self, dev: IDevChain, reset: Callable[[], Any] | None = None) -> None:
        """
        @param dev: the node's dev-chain controls.
        @param reset: C{evm_reset}'s function (back to the genesis block,
            snapshots forgotten, pool emptied), which C{hardhat_reset} and
            C{anvil_reset} call; without it they are not served.
        """
        self._dev = dev
        self._reset = reset

    def _pair(
        self, suffix: str, function: Callable[..., Any], params: tuple[Param, ...], unbounded: bool = False
    ) -> list[Method]:
        """
        The C{hardhat_<suffix>} and C{anvil_<suffix>} methods of one function.

        @param unbounded: the method's writer job may outlast the request
            time limit (see L{Method.unbounded}).
        """
        return [
            Method(f"hardhat_{suffix}", function, params, _true, gated_by=MODULE, unbounded=unbounded),
            Method(f"anvil_{suffix}", function, params, _null, gated_by=MODULE, unbounded=unbounded),
        ]

    def rpc_methods(self) -> Iterable[Method]:
        """
        Every dev-chain method.
        """
        dev = self._dev
        target = Param("address", address)
        methods = [
            Method("evm_setNextBlockTimestamp", self.set_next_block_timestamp, (Param("timestamp", timestamp),), _null),
            Method("evm_setAutomine", dev.set_automine, (Param("enabled", boolean),), _true),
            Method("evm_setIntervalMining", dev.set_interval_mining, (Param("interval", milliseconds),), _true),
            Method("evm_setBlockGasLimit", dev.set_block_gas_limit, (Param("gasLimit", uint64),), _true),
        ]
        mine_params = (Param("blocks", uint64, 1), Param("interval", uint64, 1))
        # A fixture mines thousands of blocks to move time: the run is one
        # writer job that cannot be cancelled, so the answer waits for it.
        methods += self._pair("mine", dev.mine, mine_params, unbounded=True)
        methods += self._pair("setBalance", dev.set_balance, (target, Param("balance", quantity)))
        methods += self._pair("setCode", dev.set_code, (target, Param("code", code)))
        methods += self._pair("setNonce", dev.set_nonce, (target, Param("nonce", uint64)))
        storage = (target, Param("position", quantity), Param("value", storage_word))
        methods += self._pair("setStorageAt", self.set_storage_at, storage)
        methods += self._pair("setCoinbase", dev.set_coinbase, (target,))
        methods += [
            Method("hardhat_getAutomine", dev.get_automine, (), encoders.identity, gated_by=MODULE),
            Method("anvil_getAutomine", dev.get_automine, (), encoders.identity, gated_by=MODULE),
        ]
        if self._reset is not None:
            methods += self._pair("reset", self.reset, (Param("options", reset_options, None),))
        methods += self._pair("impersonateAccount", dev.impersonate_account, (target,))
        methods += [
            # Hardhat answers whether the account was impersonated, Anvil null.
            Method(
                "hardhat_stopImpersonatingAccount", dev.stop_impersonating_account, (target,),
                encoders.identity, gated_by=MODULE,
            ),
            Method("anvil_stopImpersonatingAccount", dev.stop_impersonating_account, (target,), _null, gated_by=MODULE),
            Method(
                "anvil_autoImpersonateAccount", dev.set_auto_impersonate, (Param("enabled", boolean),),
                _null, gated_by=MODULE,
            ),
        ]
        methods += [
            Method("hardhat_dropTransaction", dev.drop_transaction, (Param("hash", hash32),), encoders.identity, gated_by=MODULE),
            Method("anvil_dropTransaction", self.drop_transaction_anvil, (Param("hash", hash32),), encoders.nullable(encoders.data), gated_by=MODULE),
            Method("anvil_dumpState", dev.dump_state, (), encoders.identity, gated_by=MODULE),
            Method("anvil_loadState", dev.load_state, (Param("state", snapshot),), _true, gated_by=MODULE),
        ]
        return methods

    def reset(self, options: dict[str, Any] | None) -> Any:
        """
        C{hardhat_reset} / C{anvil_reset}: C{evm_reset}, back to the genesis
        block (the options were checked to name no fork).
        """
        assert self._reset is not None
        return self._reset()

    def set_next_block_timestamp(self, when: int) -> None:
        """
        C{evm_setNextBlockTimestamp}.
        """
        self._dev.set_next_block_timestamp(when)

    def set_storage_at(self, where: bytes, position: int, value: bytes) -> Any:
        """
        C{hardhat_setStorageAt}: the 32-byte value as a word.
        """
        return self._dev.set_storage_at(where, position, int.from_bytes(value, "big"))

    async def drop_transaction_anvil(self, tx_hash: bytes) -> bytes | None:
        """
        C{anvil_dropTransaction}: the hash when it was dropped, else L{None}.
        """
        return tx_hash if await self._dev.drop_transaction(tx_hash) else None


__all__ = ["DevMethods"]
