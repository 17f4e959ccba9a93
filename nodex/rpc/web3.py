"""
The C{web3} module: the client's name and version, and Keccak-256.
"""

import platform
import sys
from collections.abc import Iterable

from nodex import __version__
from nodex.crypto import keccak256
from nodex.rpc import decoders, encoders
from nodex.rpc.registry import Method, Param


def client_version(
    version: str = __version__,
    system: str = sys.platform,
    machine: str = platform.machine(),
    python: tuple[int, int] = (sys.version_info.major, sys.version_info.minor),
) -> str:
    """
    The C{web3_clientVersion} string,
    C{nodex/<version>/<platform>/python<major.minor>}, where the platform is
    the operating system and the machine, as in C{linux-x86_64}.
    """
    host = f"{system}-{machine.lower()}" if machine else system
    return f"nodex/{version}/{host}/python{python[0]}.{python[1]}"


class Web3Methods:
    """
    C{web3_clientVersion} and C{web3_sha3}.
    """

    def __init__(self, version: str) -> None:
        """
        @param version: what C{web3_clientVersion} answers (see
            L{client_version}).
        """
        self._version = version

    def rpc_methods(self) -> Iterable[Method]:
        """
        The methods of the C{web3} module.
        """
        return [
            Method("web3_clientVersion", self.client_version),
            Method("web3_sha3", self.sha3, (Param("data", decoders.data),), encoders.hash32),
        ]

    def client_version(self) -> str:
        """
        The name and version of the node.
        """
        return self._version

    def sha3(self, data: bytes) -> bytes:
        """
        Keccak-256 (not the standardised SHA3-256) of C{data}.
        """
        return keccak256(data)


__all__ = ["Web3Methods", "client_version"]
