"""
The test doubles of the service interfaces stay faithful to them: every method a
fake defines is a method of the interface it stands in for, taking the same
parameters, and every attribute it offers is one the interface declares.  The
real services are checked against the same interfaces with C{verifyObject} in
their own tests, so a change to an interface that a fake does not follow fails
here instead of leaving the unit tests green against a service that no longer
exists.  A fake may add helpers that drive the test (C{publish}, C{adopt}); they
are named here, one by one.
"""

import importlib
import inspect
from typing import Any

from twisted.trial.unittest import SynchronousTestCase
from zope.interface.interface import InterfaceClass, Method

from nodex.api.chain import IChainService, IPeerChain
from nodex.api.devchain import IDevChain
from nodex.api.mining import IMiner
from nodex.api.peers import IPeerNetwork, IReputation
from nodex.api.pool import ITransactionPool
from nodex.api.tracing import ITracingService

FAKES: list[tuple[str, str, InterfaceClass, frozenset[str]]] = [
    ("tests.services.test_filters", "FakeChain", IChainService, frozenset({"publish"})),
    ("tests.services.test_filters", "FakePool", ITransactionPool, frozenset()),
    ("tests.services.test_pool", "FakeChainService", IChainService, frozenset({"adopt", "tell", "import_block"})),
    ("tests.rpc.test_state_methods", "FakeChain", IChainService, frozenset()),
    ("tests.rpc.test_trace_methods", "FakeChain", IChainService, frozenset({"block"})),
    ("tests.rpc.test_blockref", "FakeChain", IChainService, frozenset()),
    ("tests.test_manhole", "FakeChain", IChainService, frozenset()),
    ("tests.test_metrics", "FakeChain", IChainService, frozenset()),
    ("tests.p2p.test_relay", "FakeChain", IPeerChain, frozenset()),
    ("tests.services.test_miner", "FakePool", ITransactionPool, frozenset()),
    ("tests.test_manhole", "FakePool", ITransactionPool, frozenset()),
    ("tests.test_metrics", "FakePool", ITransactionPool, frozenset()),
    ("tests.services.test_pool", "RecordingMiner", IMiner, frozenset({"finish"})),
    ("tests.rpc.test_chain_methods", "FakeMiner", IMiner, frozenset({"on_pending"})),
    ("tests.rpc.test_dev_methods", "RecordingDevChain", IDevChain, frozenset()),
    ("tests.rpc.test_trace_methods", "FakeTracing", ITracingService, frozenset()),
    ("tests.rpc.test_peer_methods", "FakePeers", IPeerNetwork, frozenset()),
    ("tests.test_manhole", "FakeNetwork", IPeerNetwork, frozenset()),
    ("tests.p2p.test_admission", "FakeReputation", IReputation, frozenset()),
]
"""Each fake: its module, its class, the interface it stands in for, and its test helpers."""


def own_members(cls: type) -> dict[str, Any]:
    """
    The public members a fake class defines itself (its instance attributes set in
    C{__init__} are not among them: they are checked on an instance by the tests that
    use it).
    """
    return {name: value for name, value in vars(cls).items() if not name.startswith("_")}


def parameters_of(function: Any) -> list[str]:
    """
    The names of the parameters a fake's method takes after C{self}, C{*args} and
    C{**kwargs} written with their stars.
    """
    names = []
    for parameter in list(inspect.signature(function).parameters.values())[1:]:
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            names.append("*" + parameter.name)
        elif parameter.kind is inspect.Parameter.VAR_KEYWORD:
            names.append("**" + parameter.name)
        else:
            names.append(parameter.name)
    return names


def disagreement(name: str, member: Any, interface: InterfaceClass) -> str | None:
    """
    Why the member C{name} of a fake does not match C{interface}, or L{None}.
    """
    if name not in interface:
        return f"{name} is not part of {interface.getName()}"
    declared = interface[name]
    if not isinstance(declared, Method):
        return None
    if not callable(member):
        return f"{name} is a method of {interface.getName()}, not an attribute"
    info = declared.getSignatureInfo()
    taken = parameters_of(member)
    if any(p.startswith("*") for p in taken):
        return None
    wanted = list(info["positional"])
    if taken[: len(wanted)] != wanted:
        return f"{name}{tuple(taken)} does not take {interface.getName()}.{name}{tuple(wanted)}"
    if len(taken) > len(wanted):
        extra = inspect.signature(member).parameters
        if any(extra[p].default is inspect.Parameter.empty for p in taken[len(wanted):]):
            return f"{name} requires parameters that {interface.getName()}.{name} does not pass"
    return None


class FakeTests(SynchronousTestCase):
    """
    Tests of the fakes of L{FAKES} against their interfaces.
    """

    def test_fakes_match_their_interfaces(self) -> None:
        """
        Every method a fake defines is a method of its interface with the same
        parameters, unless it is one of the fake's named helpers.
        """
        problems = []
        for module, class_name, interface, helpers in FAKES:
            cls = getattr(importlib.import_module(module), class_name)
            for name, member in own_members(cls).items():
                problem = None if name in helpers else disagreement(name, member, interface)
                if problem is not None:
                    problems.append(f"{module}.{class_name}: {problem}")
        self.assertEqual(problems, [], "\n".join(problems))

    def test_helpers_are_not_interface_methods(self) -> None:
        """
        A helper named in L{FAKES} is not a method of the interface (else it would
        escape the check above), and the fake still defines it.
        """
        for module, class_name, interface, helpers in FAKES:
            cls = getattr(importlib.import_module(module), class_name)
            for helper in helpers:
                self.assertNotIn(helper, interface, f"{module}.{class_name}.{helper}")
                self.assertIn(helper, vars(cls), f"{module}.{class_name}.{helper}")

    def test_a_wrong_fake_is_seen(self) -> None:
        """
        A method the interface lacks, or one with other parameters, is reported.
        """

        class Wrong:
            def get_block_by_number(self, height: int) -> None:
                """
                Another parameter name.
                """

            def invented(self) -> None:
                """
                Not in the interface.
                """

        self.assertIn("does not take", disagreement("get_block_by_number", Wrong.get_block_by_number, IChainService) or "")
        self.assertIn("is not part of", disagreement("invented", Wrong.invented, IChainService) or "")
