"""
Tests for the methods of issue 2: web3, net, eth identity and rpc_modules.
"""

from twisted.internet.defer import Deferred, succeed
from twisted.trial.unittest import SynchronousTestCase
from zope.interface import implementer
from zope.interface.verify import verifyObject

from nodex.api.peers import IPeerNetwork
from nodex.p2p.messages import WIRE_PROTOCOL_VERSION
from nodex.rpc.eth import EthIdentityMethods
from nodex.rpc.introspection import RPCModulesMethods
from nodex.rpc.net import NetMethods
from nodex.rpc.registry import Method, MethodRegistry, ModuleSettings
from nodex.rpc.web3 import Web3Methods, client_version
from nodex.services.offline import OfflinePeerNetwork


def by_name(provider: object) -> dict[str, Method]:
    """
    A provider's methods keyed by their JSON-RPC names.
    """
    return {method.name: method for method in provider.rpc_methods()}  # type: ignore[attr-defined]


@implementer(IPeerNetwork)
class ListeningPeers:
    """
    A peer network that listens.
    """

    def is_listening(self) -> Deferred[bool]:
        """
        Always listening.
        """
        return succeed(True)


class Web3MethodsTests(SynchronousTestCase):
    """
    Tests for L{Web3Methods} and L{client_version}.
    """

    def test_client_version_format(self) -> None:
        """
        The version string is nodex/<version>/<os>-<machine>/python<major.minor>.
        """
        self.assertEqual(client_version("1.2.3", "linux", "X86_64", (3, 11)), "nodex/1.2.3/linux-x86_64/python3.11")
        self.assertEqual(client_version("1.2.3", "linux", "", (3, 12)), "nodex/1.2.3/linux/python3.12")
        self.assertTrue(client_version().startswith("nodex/"))

    def test_methods(self) -> None:
        """
        web3_clientVersion answers the configured string; web3_sha3 the Keccak-256 of its DATA.
        """
        methods = by_name(Web3Methods("nodex/test"))
        self.assertEqual(methods["web3_clientVersion"].function(), "nodex/test")
        sha3 = methods["web3_sha3"]
        digest = sha3.function(*sha3.decode_params(["0x68656c6c6f"]))
        self.assertEqual(
            sha3.result(digest), "0x1c8aff950685c2ed4bc3174f3472287b56d9517b9c948127319a09a7a36deac8"
        )
        empty = sha3.result(sha3.function(*sha3.decode_params(["0x"])))
        self.assertEqual(empty, "0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470")


class NetMethodsTests(SynchronousTestCase):
    """
    Tests for L{NetMethods}.
    """

    def test_version_is_decimal_chain_id(self) -> None:
        """
        net_version is the chain id in decimal.
        """
        method = by_name(NetMethods(33, OfflinePeerNetwork()))["net_version"]
        self.assertEqual(method.result(method.function()), "33")

    def test_listening_asks_the_peer_network(self) -> None:
        """
        net_listening is what the peer network says: false offline, true when listening.
        """
        self.assertFalse(self.successResultOf(NetMethods(33, OfflinePeerNetwork()).listening()))
        self.assertTrue(self.successResultOf(NetMethods(33, ListeningPeers()).listening()))

    def test_offline_provides_interface(self) -> None:
        """
        L{OfflinePeerNetwork} provides L{IPeerNetwork}.
        """
        self.assertTrue(verifyObject(IPeerNetwork, OfflinePeerNetwork()))


class EthIdentityMethodsTests(SynchronousTestCase):
    """
    Tests for L{EthIdentityMethods}.
    """

    def test_chain_id_and_protocol_version(self) -> None:
        """
        eth_chainId is the hex chain id; eth_protocolVersion the hex wire-protocol version.
        """
        methods = by_name(EthIdentityMethods(33, WIRE_PROTOCOL_VERSION))
        chain_id = methods["eth_chainId"]
        self.assertEqual(chain_id.result(chain_id.function()), "0x21")
        version = methods["eth_protocolVersion"]
        self.assertEqual(version.result(version.function()), "0x3f")


class RPCModulesMethodsTests(SynchronousTestCase):
    """
    Tests for L{RPCModulesMethods}.
    """

    def test_modules(self) -> None:
        """
        rpc_modules lists the enabled modules that have methods, at version 1.0.
        """
        registry = MethodRegistry({"eth": ModuleSettings(True), "rpc": ModuleSettings(True), "net": ModuleSettings(False)})
        registry.add(EthIdentityMethods(33, 62))
        registry.add(NetMethods(33, OfflinePeerNetwork()))
        modules = RPCModulesMethods(registry)
        registry.add(modules)
        self.assertEqual(modules.modules(), {"eth": "1.0", "rpc": "1.0"})
