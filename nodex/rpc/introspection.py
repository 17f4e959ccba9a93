"""
The C{rpc} module: what the server offers.
"""

from collections.abc import Iterable

from nodex.rpc.registry import Method, MethodRegistry


class RPCModulesMethods:
    """
    C{rpc_modules}.
    """

    def __init__(self, registry: MethodRegistry) -> None:
        """
        @param registry: the registry whose modules are reported.
        """
        self._registry = registry

    def rpc_methods(self) -> Iterable[Method]:
        """
        The methods of the C{rpc} module.
        """
        return [Method("rpc_modules", self.modules)]

    def modules(self) -> dict[str, str]:
        """
        Each module with a callable method, mapped to its version C{"1.0"}.
        """
        return self._registry.enabled_modules()


__all__ = ["RPCModulesMethods"]
