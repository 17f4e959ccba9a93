"""
Property tests of the RPC server: random and malformed bodies, batches, ids and params always
get a well-formed JSON-RPC response or one of the transport rejections, and the server keeps
serving.
"""

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from treq.testing import StubTreq
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from nodex.rpc.dispatch import Dispatcher, EnvelopeLimits
from nodex.rpc.eth import EthIdentityMethods
from nodex.rpc.introspection import RPCModulesMethods
from nodex.rpc.net import NetMethods
from nodex.rpc.registry import MODULES, MethodRegistry, ModuleSettings
from nodex.rpc.server import HTTPPolicy, RPCServer
from nodex.rpc.web3 import Web3Methods
from nodex.services.offline import OfflinePeerNetwork

METHODS = [
    "web3_clientVersion", "web3_sha3", "net_version", "net_listening", "eth_chainId",
    "eth_protocolVersion", "rpc_modules", "eth_getBalance", "shh_post", "db_getString", "eth_compileLLL",
]
ERROR_CODES = {-32700, -32600, -32601, -32602, -32603, -32011}

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20)
json_values = st.recursive(
    json_scalars | st.sampled_from(["0x", "0x1", "0x21", "latest", "0x" + "ab" * 20, "0xzz"]),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=10,
)
ids = st.none() | st.integers() | st.text(max_size=10) | st.floats(allow_nan=False, allow_infinity=False) | st.booleans() | st.lists(st.integers(), max_size=2)


@st.composite
def request_objects(draw: Any) -> Any:
    """
    Request objects, mostly plausible, with any member missing or of a wrong type.
    """
    request: dict[str, Any] = {}
    if draw(st.integers(0, 9)):
        request["jsonrpc"] = draw(st.sampled_from(["2.0", "2.0", "1.0", 2]))
    if draw(st.integers(0, 3)):
        request["method"] = draw(st.sampled_from(METHODS) | json_values)
    if draw(st.booleans()):
        request["params"] = draw(st.lists(json_values, max_size=3) | json_values)
    if draw(st.integers(0, 3)):
        request["id"] = draw(ids)
    if draw(st.integers(0, 9)) == 0:
        return draw(json_values)
    return request


bodies = st.one_of(
    request_objects().map(lambda value: json.dumps(value).encode()),
    st.lists(request_objects(), max_size=6).map(lambda value: json.dumps(value).encode()),
    st.binary(max_size=64),
    st.text(max_size=40).map(str.encode),
)


def make_stub() -> StubTreq:
    """
    A server like the node's, with every module enabled and small limits.
    """
    registry = MethodRegistry({name: ModuleSettings(True) for name in MODULES})
    registry.add(Web3Methods("nodex/test"))
    registry.add(NetMethods(33, OfflinePeerNetwork()))
    registry.add(EthIdentityMethods(33, 62))
    registry.add(RPCModulesMethods(registry))
    dispatcher = Dispatcher(registry, Clock(), EnvelopeLimits(max_batch=4, max_response_bytes=4096))
    return StubTreq(RPCServer(dispatcher, HTTPPolicy(max_body_bytes=2048)).resource())


class PropertyTests(SynchronousTestCase):
    """
    Every answer of the server is well formed.
    """

    def check_response(self, item: Any) -> None:
        """
        C{item} is one well-formed JSON-RPC 2.0 response object.
        """
        self.assertIsInstance(item, dict)
        self.assertEqual(item["jsonrpc"], "2.0")
        self.assertIn("id", item)
        self.assertTrue(item["id"] is None or type(item["id"]) in (str, int, float))
        self.assertEqual(("result" in item) + ("error" in item), 1)
        if "error" in item:
            self.assertIn(item["error"]["code"], ERROR_CODES)
            self.assertIsInstance(item["error"]["message"], str)

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(body=bodies, content_type=st.sampled_from(["application/json", "application/json", "text/plain"]))
    def test_answers_are_well_formed(self, body: bytes, content_type: str) -> None:
        """
        Any body gets a JSON-RPC response, a batch of them, nothing (notifications), or a
        transport rejection; the server then still answers eth_chainId.
        """
        stub = make_stub()
        response = self.successResultOf(stub.post("http://127.0.0.1/", data=body, headers={"Content-Type": content_type}))
        content = self.successResultOf(stub.content(response))
        if content_type != "application/json":
            self.assertEqual(response.code, 415)
        elif len(body) > 2048:
            self.assertEqual(response.code, 413)
        else:
            self.assertEqual(response.code, 200)
            if content:
                answer = json.loads(content)
                for item in answer if isinstance(answer, list) else [answer]:
                    self.check_response(item)
        again = self.successResultOf(
            stub.post("http://127.0.0.1/", data=b'{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}', headers={"Content-Type": "application/json"})
        )
        self.assertEqual(json.loads(self.successResultOf(stub.content(again)))["result"], "0x21")

    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(request_id=ids, params=st.lists(json_values, max_size=3))
    def test_ids_and_params(self, request_id: Any, params: list[Any]) -> None:
        """
        A valid id is echoed exactly; an invalid one is answered with null; params never crash.
        """
        stub = make_stub()
        body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "web3_sha3", "params": params}).encode()
        response = self.successResultOf(stub.post("http://127.0.0.1/", data=body, headers={"Content-Type": "application/json"}))
        answer = json.loads(self.successResultOf(stub.content(response)))
        self.check_response(answer)
        if request_id is None or type(request_id) in (str, int, float):
            self.assertEqual(answer["id"], request_id)
        else:
            self.assertIsNone(answer["id"])
            self.assertEqual(answer["error"]["code"], -32600)
