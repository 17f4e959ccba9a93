"""
The methods the RPC edge serves: each L{Method} names its parameters (with
their decoders and defaults) and its result encoder, and the
L{MethodRegistry} decides, per module, which of them a client may call.

A later issue adds methods by writing an object with an C{rpc_methods()}
method (an L{IMethodProvider}) that returns its L{Method}s and by handing it
to the registry in the composition root; nothing in the envelope changes.
"""

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from nodex.rpc.decoders import DecodeError, Decoder
from nodex.rpc.encoders import Encoder, identity
from nodex.rpc.errors import InvalidParamsError, MethodNotFoundError

MODULES = (
    "eth", "net", "web3", "rpc", "evm", "mnr", "personal", "nodex", "debug", "trace", "txpool", "sco", "admin",
)
"""The modules of the specification that nodex implements (reference §9)."""

MODULE_VERSION = "1.0"
"""The version C{rpc_modules} reports for every module."""


class _Required:
    """
    The marker of a parameter without default.
    """

    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()
"""Default of a parameter that the client must give."""


@dataclass(frozen=True)
class Param:
    """
    One positional parameter of a method.

    @ivar name: its name (used for by-name parameters and in documentation).
    @ivar decoder: turns the JSON value into the Python value.
    @ivar default: the value when the client leaves it out (or sends
        C{null}); L{REQUIRED} when it must be given.
    """

    name: str
    decoder: Decoder[Any]
    default: Any = REQUIRED


@dataclass(frozen=True)
class Method:
    """
    A JSON-RPC method: its wire name, the function that serves it, its
    parameters and the encoder of its result.

    @ivar name: the JSON-RPC name, C{<module>_<method>}.
    @ivar function: called with the decoded parameters; returns the result,
        a Deferred firing with it, or a coroutine; raises or fails with
        L{RPCError} or an exception of L{nodex.rpc.errors.ERROR_CODES}.
    @ivar params: the parameters, in order; optional ones last.
    @ivar result: encodes what C{function} returns into JSON.
    @ivar gated_by: the module that switches the method on and off, when
        it is not the prefix of its name.
    @ivar unbounded: the request waits for the method whatever the time
        limit: its work (a dev chain's run of blocks) cannot be cancelled
        once started, so a timeout answer would say it failed while it goes on.
    """

    name: str
    function: Callable[..., Any]
    params: tuple[Param, ...] = ()
    result: Encoder[Any] = identity
    gated_by: str | None = None
    unbounded: bool = False

    @property
    def module(self) -> str:
        """
        The module that gates the method: C{gated_by} when given (the
        C{hardhat_*} and C{anvil_*} aliases belong to C{evm}), else the
        prefix of its name.
        """
        return self.gated_by or self.name.partition("_")[0]

    def decode_params(self, params: list[Any] | dict[str, Any]) -> list[Any]:
        """
        Check and decode the request's C{params} (an array, or an object of
        parameters by name).

        @raise InvalidParamsError: too many, missing or undecodable parameters.
        """
        specs = self.params
        if isinstance(params, dict):
            params = self._positional(params)
        elif len(params) > len(specs):
            raise InvalidParamsError(f"too many arguments, want at most {len(specs)}")
        decoded = []
        for index, spec in enumerate(specs):
            value = params[index] if index < len(params) else None
            if value is None:
                if spec.default is REQUIRED:
                    raise InvalidParamsError(f"missing value for required argument {index}")
                decoded.append(spec.default)
                continue
            try:
                decoded.append(spec.decoder(value))
            except DecodeError as exc:
                raise InvalidParamsError(f"invalid argument {index}: {exc}") from None
        return decoded

    def _positional(self, params: dict[str, Any]) -> list[Any]:
        """
        Order parameters given by name; absent ones become C{null}.

        @raise InvalidParamsError: a name that the method does not have.
        """
        names = [spec.name for spec in self.params]
        for name in params:
            if name not in names:
                raise InvalidParamsError(f'unknown argument "{name}"'[:120])
        return [params.get(name) for name in names]


class IMethodProvider(Protocol):
    """
    Anything that contributes methods to the registry.
    """

    def rpc_methods(self) -> Iterable[Method]:
        """
        The methods this object serves.
        """


@dataclass(frozen=True)
class ModuleSettings:
    """
    Whether the methods of one module may be called (reference §6: callable
    iff the module is enabled, the method is not in C{disabled_methods}, and
    C{enabled_methods} is empty or names it).
    """

    enabled: bool
    disabled_methods: frozenset[str] = field(default_factory=frozenset)
    enabled_methods: frozenset[str] = field(default_factory=frozenset)

    def allows(self, name: str) -> bool:
        """
        Whether the method C{name} of this module may be called.
        """
        if not self.enabled or name in self.disabled_methods:
            return False
        return not self.enabled_methods or name in self.enabled_methods


_COMPILERS = frozenset({"eth_getCompilers", "eth_compileLLL", "eth_compileSolidity", "eth_compileSerpent"})

_DEV_CHAIN_ABSENT = {
    "hardhat_setNextBlockBaseFeePerGas": "the base fee is always 0 on this chain (DESIGN §2)",
    "anvil_setNextBlockBaseFeePerGas": "the base fee is always 0 on this chain (DESIGN §2)",
    "hardhat_setPrevRandao": "PREVRANDAO reads the block's proof-of-work difficulty on this chain, which nothing sets",
    "anvil_setPrevRandao": "PREVRANDAO reads the block's proof-of-work difficulty on this chain, which nothing sets",
}
"""The Hardhat and Anvil methods that Network Helpers call and nodex's chain cannot honour."""


def unsupported_reason(name: str) -> str | None:
    """
    Why a method of the specification's "not supported" groups, or a dev
    method nodex's chain cannot honour, is absent, or L{None} for any other
    name (DESIGN §1).
    """
    if name in _COMPILERS:
        return "compilers are deliberately not included in the node, for security reasons"
    if name.startswith("db_"):
        return "the db_* methods are deprecated"
    if name.startswith("shh_"):
        return "the whisper messaging protocol (shh_*) is absent"
    return _DEV_CHAIN_ABSENT.get(name)


class MethodRegistry:
    """
    The methods of the node, and which of them this node's configuration
    lets a client call.
    """

    def __init__(self, modules: Mapping[str, ModuleSettings]) -> None:
        """
        @param modules: the settings of each module; a module without an
            entry is disabled.
        """
        self._modules = dict(modules)
        self._methods: dict[str, Method] = {}
        self._callable: dict[str, Method] = {}

    def register(self, method: Method) -> None:
        """
        Add one method.

        @raise ValueError: a method of that name is already registered, or
            its name has no module prefix.
        """
        if method.name in self._methods:
            raise ValueError(f"method {method.name} is registered twice")
        if "_" not in method.name:
            raise ValueError(f"method name {method.name} has no module prefix")
        self._methods[method.name] = method
        settings = self._modules.get(method.module)
        if settings is not None and settings.allows(method.name):
            self._callable[method.name] = method

    def add(self, provider: IMethodProvider) -> None:
        """
        Register every method of C{provider}.
        """
        for method in provider.rpc_methods():
            self.register(method)

    def lookup(self, name: str) -> Method:
        """
        The method a client may call under C{name}.

        @raise MethodNotFoundError: no such method (C{method not found}), a
            method of an unsupported group (with the reason), or a method
            that this node's configuration disables.
        """
        method = self._callable.get(name)
        if method is not None:
            return method
        if name in self._methods:
            raise MethodNotFoundError(f"the method {name} does not exist/is not available")
        reason = unsupported_reason(name)
        if reason is not None:
            raise MethodNotFoundError(f"the method {name} is not supported: {reason}")
        raise MethodNotFoundError("method not found")

    def enabled_modules(self) -> dict[str, str]:
        """
        The modules that have at least one callable method, each with
        L{MODULE_VERSION}, in alphabetical order (C{rpc_modules}).
        """
        names = sorted({method.module for method in self._callable.values()})
        return {name: MODULE_VERSION for name in names}

    def names(self) -> list[str]:
        """
        Every registered method name, callable or not, sorted.
        """
        return sorted(self._methods)


__all__ = [
    "IMethodProvider",
    "MODULES",
    "MODULE_VERSION",
    "Method",
    "MethodRegistry",
    "ModuleSettings",
    "Param",
    "REQUIRED",
    "unsupported_reason",
]
