"""
The two sets of conventions the node answers by (DESIGN §6), handed by the
composition root to every service and method provider whose answers depend on them.
"""

from dataclasses import dataclass

__all__ = [
    "COMPAT_NAMES",
    "Conventions",
    "ETHEREUM_CONVENTIONS",
    "REFERENCE_CONVENTIONS",
]


COMPAT_NAMES = ("reference", "ethereum")
"""The values of C{compat} (C{--compat}): the two sets of conventions (DESIGN §6)."""


@dataclass(frozen=True)
class Conventions:
    """
    Which answers the node gives where the specification and the reference
    node differ from geth, Anvil and Hardhat (DESIGN §6; every difference
    is listed in C{docs/compatibility.md}): C{"reference"} (the default)
    or C{"ethereum"} (C{--compat ethereum}, C{compat = "ethereum"}).

    The composition root makes one and hands it to every service and
    method provider whose answers depend on it; each asks L{ethereum}.
    """

    name: str = "reference"

    def __post_init__(self) -> None:
        if self.name not in COMPAT_NAMES:
            raise ValueError(f"unknown conventions {self.name!r}: want one of {', '.join(COMPAT_NAMES)}")

    @property
    def ethereum(self) -> bool:
        """
        Whether the node answers as geth and Anvil do.
        """
        return self.name == "ethereum"


REFERENCE_CONVENTIONS = Conventions("reference")
"""The default conventions: the specification's, then the reference node's."""


ETHEREUM_CONVENTIONS = Conventions("ethereum")
"""The conventions Ethereum's tools expect (geth's and Anvil's answers)."""
