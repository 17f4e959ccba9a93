"""
Tests for L{nodex.rpc.registry}.
"""

from twisted.trial.unittest import SynchronousTestCase

from nodex.rpc import decoders
from nodex.rpc.decoders import BlockTag
from nodex.rpc.errors import InvalidParamsError, MethodNotFoundError
from nodex.rpc.registry import Method, MethodRegistry, ModuleSettings, Param, unsupported_reason


def _get_balance(address: bytes, block: object) -> tuple[bytes, object]:
    """
    A stand-in method that returns its arguments.
    """
    return address, block


GET_BALANCE = Method(
    "eth_getBalance",
    _get_balance,
    (Param("address", decoders.address), Param("block", decoders.block_selector, BlockTag.LATEST)),
)
ADDRESS = "0x" + "ab" * 20


class MethodParamsTests(SynchronousTestCase):
    """
    Tests for L{Method.decode_params}.
    """

    def test_positional_with_default(self) -> None:
        """
        An optional trailing parameter takes its default when left out or null.
        """
        self.assertEqual(GET_BALANCE.decode_params([ADDRESS]), [b"\xab" * 20, BlockTag.LATEST])
        self.assertEqual(GET_BALANCE.decode_params([ADDRESS, None]), [b"\xab" * 20, BlockTag.LATEST])
        self.assertEqual(GET_BALANCE.decode_params([ADDRESS, "0x2"]), [b"\xab" * 20, 2])

    def test_by_name(self) -> None:
        """
        Parameters may come as an object keyed by their names.
        """
        self.assertEqual(
            GET_BALANCE.decode_params({"block": "earliest", "address": ADDRESS}),
            [b"\xab" * 20, BlockTag.EARLIEST],
        )

    def test_errors(self) -> None:
        """
        Extra, missing, unknown-by-name and undecodable parameters are -32602 with messages that
        name the argument and the expectation.
        """
        cases = [
            ([ADDRESS, "latest", 1], "too many arguments, want at most 2"),
            ([], "missing value for required argument 0"),
            ([None], "missing value for required argument 0"),
            ({"who": ADDRESS}, 'unknown argument "who"'),
            (["0x" + "ab" * 19], "invalid argument 0: hex string has length 38, want 40 for address"),
            ([ADDRESS, "16"], "invalid argument 1: invalid block parameter"),
        ]
        for params, message in cases:
            with self.assertRaises(InvalidParamsError) as caught:
                GET_BALANCE.decode_params(params)
            self.assertIn(message, caught.exception.message)
            self.assertEqual(caught.exception.code, -32602)

    def test_module(self) -> None:
        """
        A method's module is the prefix of its name.
        """
        self.assertEqual(GET_BALANCE.module, "eth")


class MethodRegistryTests(SynchronousTestCase):
    """
    Tests for L{MethodRegistry}.
    """

    def registry(self, **modules: ModuleSettings) -> MethodRegistry:
        """
        A registry with eth_getBalance and web3_clientVersion registered.
        """
        registry = MethodRegistry(modules)
        registry.register(GET_BALANCE)
        registry.register(Method("web3_clientVersion", lambda: "v"))
        return registry

    def test_lookup_enabled(self) -> None:
        """
        A method of an enabled module is found.
        """
        registry = self.registry(eth=ModuleSettings(True))
        self.assertIs(registry.lookup("eth_getBalance"), GET_BALANCE)

    def test_disabled_module(self) -> None:
        """
        A method of a disabled or unconfigured module answers "does not exist/is not available".
        """
        registry = self.registry(eth=ModuleSettings(False))
        for name in ("eth_getBalance", "web3_clientVersion"):
            with self.assertRaises(MethodNotFoundError) as caught:
                registry.lookup(name)
            self.assertEqual(caught.exception.message, f"the method {name} does not exist/is not available")

    def test_method_lists(self) -> None:
        """
        A module's disabled list removes a method; a non-empty enabled list keeps only its methods.
        """
        registry = self.registry(
            eth=ModuleSettings(True, disabled_methods=frozenset({"eth_getBalance"})),
            web3=ModuleSettings(True, enabled_methods=frozenset({"web3_sha3"})),
        )
        self.assertRaises(MethodNotFoundError, registry.lookup, "eth_getBalance")
        self.assertRaises(MethodNotFoundError, registry.lookup, "web3_clientVersion")
        self.assertEqual(registry.enabled_modules(), {})

    def test_unknown_and_unsupported(self) -> None:
        """
        Unknown names answer "method not found"; compilers, db_*, shh_* and
        the dev methods nodex's chain cannot honour say why they are absent.
        """
        registry = self.registry(eth=ModuleSettings(True))
        with self.assertRaises(MethodNotFoundError) as caught:
            registry.lookup("eth_getProofOfNothing")
        self.assertEqual(caught.exception.message, "method not found")
        for name, reason in (
            ("eth_compileSolidity", "compilers are deliberately not included"),
            ("eth_getCompilers", "for security reasons"),
            ("db_putString", "deprecated"),
            ("shh_post", "whisper"),
            ("hardhat_setNextBlockBaseFeePerGas", "base fee is always 0"),
            ("anvil_setPrevRandao", "PREVRANDAO"),
        ):
            with self.assertRaises(MethodNotFoundError) as caught:
                registry.lookup(name)
            self.assertIn(f"the method {name} is not supported", caught.exception.message)
            self.assertIn(reason, caught.exception.message)
            self.assertEqual(caught.exception.code, -32601)
        self.assertIsNone(unsupported_reason("eth_chainId"))

    def test_enabled_modules(self) -> None:
        """
        rpc_modules lists the modules with a callable method, each at version 1.0.
        """
        registry = self.registry(eth=ModuleSettings(True), web3=ModuleSettings(True), evm=ModuleSettings(True))
        self.assertEqual(registry.enabled_modules(), {"eth": "1.0", "web3": "1.0"})
        self.assertEqual(registry.names(), ["eth_getBalance", "web3_clientVersion"])

    def test_register_twice_or_without_prefix(self) -> None:
        """
        A name can be registered once, and must have a module prefix.
        """
        registry = self.registry()
        self.assertRaises(ValueError, registry.register, GET_BALANCE)
        self.assertRaises(ValueError, registry.register, Method("nomodule", lambda: None))
