"""
Tests for L{nodex.rpc.dev_methods}: the decoders, the answers of each name,
the gating by the C{evm} module, and the unbounded C{hardhat_mine}.
"""

from typing import Any

from twisted.internet.defer import Deferred, succeed
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase
from zope.interface import implementer

from nodex.api.devchain import IDevChain
from nodex.rpc.dev_methods import DevMethods
from nodex.rpc.dispatch import Dispatcher
from nodex.rpc.registry import MODULES, MethodRegistry, ModuleSettings
from nodex.api.errors import DevChainInputError
from tests.rpc.test_state_methods import DispatchFixture

ADDRESS = "0x" + "42" * 20


@implementer(IDevChain)
class RecordingDevChain:
    """
    An L{IDevChain} that records its calls; C{mine} waits for the test.
    """

    def __init__(self) -> None:
        """
        Start with no calls.
        """
        self.calls: list[tuple[Any, ...]] = []
        self.mining: Deferred[None] | None = None

    def _record(self, *call: Any) -> Deferred[None]:
        """
        Record a call.
        """
        self.calls.append(call)
        return succeed(None)

    def set_balance(self, address: bytes, balance: int) -> Deferred[None]:
        """
        Record C{set_balance}.
        """
        return self._record("balance", address, balance)

    def set_code(self, address: bytes, code: bytes) -> Deferred[None]:
        """
        Record C{set_code}.
        """
        return self._record("code", address, code)

    def set_nonce(self, address: bytes, nonce: int) -> Deferred[None]:
        """
        Record C{set_nonce}.
        """
        return self._record("nonce", address, nonce)

    def set_storage_at(self, address: bytes, slot: int, value: int) -> Deferred[None]:
        """
        Record C{set_storage_at}.
        """
        return self._record("storage", address, slot, value)

    def mine(self, blocks: int, interval: int) -> Deferred[None]:
        """
        Record C{mine}.
        """
        self.calls.append(("mine", blocks, interval))
        self.mining = Deferred()
        return self.mining

    def set_next_block_timestamp(self, timestamp: int) -> None:
        """
        Record C{set_next_block_timestamp}.
        """
        if timestamp < 10:
            raise DevChainInputError(f"timestamp {timestamp} is not after the latest block's timestamp 10")
        self.calls.append(("timestamp", timestamp))

    def set_automine(self, enabled: bool) -> None:
        """
        Record C{set_automine}.
        """
        self.calls.append(("automine", enabled))

    def get_automine(self) -> bool:
        """
        Whether the last C{set_automine} switched automining on.
        """
        switches = [call[1] for call in self.calls if call[0] == "automine"]
        return bool(switches) and switches[-1]

    def set_interval_mining(self, milliseconds: int) -> None:
        """
        Record C{set_interval_mining}.
        """
        self.calls.append(("interval", milliseconds))

    def set_block_gas_limit(self, gas_limit: int) -> Deferred[None]:
        """
        Record C{set_block_gas_limit}.
        """
        return self._record("gas", gas_limit)

    def drop_transaction(self, tx_hash: bytes) -> Deferred[bool]:
        """
        Record C{drop_transaction}.
        """
        self.calls.append(("drop", tx_hash))
        return succeed(tx_hash[0] == 1)

    def set_coinbase(self, address: bytes) -> None:
        """
        Record C{set_coinbase}.
        """
        self.calls.append(("coinbase", address))

    def dump_state(self) -> Deferred[dict[str, Any]]:
        """
        Record C{dump_state}.
        """
        return succeed({"format": "nodex-state/1", "accounts": {}})

    def load_state(self, snapshot: Any) -> Deferred[None]:
        """
        Record C{load_state}.
        """
        return self._record("load", snapshot)

    def impersonate_account(self, address: bytes) -> None:
        """
        Record C{impersonate_account}.
        """
        self.calls.append(("impersonate", address))

    def stop_impersonating_account(self, address: bytes) -> bool:
        """
        Record C{stop_impersonating_account}; the account was impersonated
        when it was recorded as such.
        """
        self.calls.append(("stop", address))
        return ("impersonate", address) in self.calls

    def set_auto_impersonate(self, enabled: bool) -> None:
        """
        Record C{set_auto_impersonate}.
        """
        self.calls.append(("auto", enabled))


class DevMethodsTests(DispatchFixture, SynchronousTestCase):
    """
    The dev methods through a dispatcher.
    """

    def setUp(self) -> None:
        """
        Serve the methods over a recording dev chain, evm on.
        """
        self.dev = RecordingDevChain()
        self.clock = Clock()
        self.dispatcher = self.serve(enabled=True)

    def serve(self, enabled: bool) -> Dispatcher:
        """
        A dispatcher over the methods with the evm module on or off.
        """
        settings = {name: ModuleSettings(True) for name in MODULES}
        settings["evm"] = ModuleSettings(enabled)
        registry = MethodRegistry(settings)
        registry.add(DevMethods(self.dev, self.record_reset))  # type: ignore[arg-type]
        self.registry = registry
        return Dispatcher(registry, self.clock)

    def test_answers(self) -> None:
        """
        Hardhat names answer true, Anvil names null; arguments are decoded.
        """
        self.assertIs(self.call("hardhat_setBalance", ADDRESS, "0x10"), True)
        self.assertIsNone(self.call("anvil_setBalance", ADDRESS, "0x11"))
        self.assertIs(self.call("hardhat_setCode", ADDRESS, "0x6000"), True)
        self.assertIs(self.call("hardhat_setNonce", ADDRESS, "0x3"), True)
        self.assertIs(self.call("hardhat_setStorageAt", ADDRESS, "0x1", "0x" + "00" * 31 + "05"), True)
        self.assertIsNone(self.call("evm_setNextBlockTimestamp", "0x20"))
        self.assertIs(self.call("evm_setAutomine", False), True)
        self.assertIs(self.call("hardhat_getAutomine"), False)
        self.assertIs(self.call("evm_setAutomine", True), True)
        self.assertIs(self.call("anvil_getAutomine"), True)
        self.assertIs(self.call("evm_setIntervalMining", 250), True)
        self.assertIs(self.call("evm_setBlockGasLimit", "0x1c9c380"), True)
        self.assertIs(self.call("hardhat_setCoinbase", ADDRESS), True)
        self.assertIs(self.call("hardhat_dropTransaction", "0x" + "01" * 32), True)
        self.assertIsNone(self.call("anvil_dropTransaction", "0x" + "02" * 32))
        self.assertEqual(self.call("anvil_dropTransaction", "0x" + "01" * 32), "0x" + "01" * 32)
        self.assertEqual(self.call("anvil_dumpState")["format"], "nodex-state/1")
        self.assertIs(self.call("anvil_loadState", {"format": "nodex-state/1"}), True)
        address = bytes.fromhex("42" * 20)
        self.assertIn(("balance", address, 16), self.dev.calls)
        self.assertIn(("storage", address, 1, 5), self.dev.calls)
        self.assertIn(("timestamp", 32), self.dev.calls)
        self.assertIn(("interval", 250), self.dev.calls)
        self.assertIn(("gas", 30_000_000), self.dev.calls)

    def record_reset(self) -> Deferred[None]:
        """
        Record a reset (what evm_reset's function would do).
        """
        self.dev.calls.append(("reset",))
        return succeed(None)

    def test_reset(self) -> None:
        """
        hardhat_reset and anvil_reset reset the chain, with no options or
        options that name no fork; a fork to follow is refused.
        """
        self.assertIs(self.call("hardhat_reset"), True)
        self.assertIsNone(self.call("anvil_reset", {}))
        self.assertIs(self.call("hardhat_reset", {"forking": None}), True)
        self.assertEqual(self.dev.calls.count(("reset",)), 3)
        error = self.error("hardhat_reset", {"forking": {"jsonRpcUrl": "http://example"}})
        self.assertEqual(error["code"], -32602)
        self.assertIn("forking another chain is not supported", error["message"])
        self.assertEqual(self.error("anvil_reset", {"fork": 1})["code"], -32602)
        self.assertEqual(self.error("anvil_reset", "0x1")["code"], -32602)
        self.assertEqual(self.dev.calls.count(("reset",)), 3)

    def test_impersonation(self) -> None:
        """
        The impersonation methods: Hardhat's stop answers whether the account
        was impersonated, Anvil's names answer null.
        """
        other = "0x" + "43" * 20
        self.assertIs(self.call("hardhat_stopImpersonatingAccount", ADDRESS), False)
        self.assertIs(self.call("hardhat_impersonateAccount", ADDRESS), True)
        self.assertIsNone(self.call("anvil_impersonateAccount", other))
        self.assertIs(self.call("hardhat_stopImpersonatingAccount", ADDRESS), True)
        self.assertIsNone(self.call("anvil_stopImpersonatingAccount", other))
        self.assertIsNone(self.call("anvil_autoImpersonateAccount", True))
        self.assertIn(("impersonate", bytes.fromhex("42" * 20)), self.dev.calls)
        self.assertIn(("auto", True), self.dev.calls)
        for request in [
            ("hardhat_impersonateAccount", "0x42"),
            ("anvil_impersonateAccount",),
            ("anvil_autoImpersonateAccount", "yes"),
            ("hardhat_stopImpersonatingAccount", ADDRESS, ADDRESS),
        ]:
            self.assertEqual(self.error(*request)["code"], -32602, request)

    def test_bad_arguments(self) -> None:
        """
        Bad arguments answer -32602 with the argument named.
        """
        cases = [
            (("hardhat_setBalance", "0x12", "0x1"), "invalid argument 0"),
            (("hardhat_setStorageAt", ADDRESS, "0x0", "0x05"), "storage value"),
            (("hardhat_setCode", ADDRESS, "0x" + "00" * 0x6001 * 2), "exceeds"),
            (("evm_setIntervalMining", -1), "negative"),
            (("evm_setIntervalMining", [100, 200]), "range"),
            (("evm_setNextBlockTimestamp", 2**64), "64-bit"),
            (("evm_setNextBlockTimestamp", 5), "not after"),
            (("anvil_loadState", "0x1f8b"), "JSON object"),
            (("hardhat_mine", "0x1", "0x1", "0x1"), "too many arguments"),
        ]
        for request, words in cases:
            error = self.error(*request)
            self.assertEqual(error["code"], -32602, request)
            self.assertIn(words, error["message"], request)

    def test_gated_by_evm(self) -> None:
        """
        With the evm module off, every name is unavailable; rpc_modules lists
        evm (not hardhat or anvil) when it is on.
        """
        self.assertEqual(set(self.registry.enabled_modules()) & {"hardhat", "anvil"}, set())
        self.assertIn("evm", self.registry.enabled_modules())
        self.dispatcher = self.serve(enabled=False)
        for name in ("hardhat_mine", "anvil_setBalance", "evm_setAutomine"):
            self.assertEqual(self.error(name)["code"], -32601)

    def test_mine_outlasts_time_limit(self) -> None:
        """
        hardhat_mine answers when its blocks are written, even after the request time limit.
        """
        body = b'{"jsonrpc": "2.0", "id": 1, "method": "hardhat_mine", "params": ["0x2710"]}'
        answer = self.dispatcher.handle(body)
        self.clock.advance(60)
        self.assertNoResult(answer)
        assert self.dev.mining is not None
        self.dev.mining.callback(None)
        self.assertIn(b'"result": true', self.successResultOf(answer).replace(b'":true', b'": true'))
        self.assertIn(("mine", 10_000, 1), self.dev.calls)
