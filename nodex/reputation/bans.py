"""
Banned peers, as plain synchronous Python: what C{sco_banAddress} and the
configuration accept (one IPv4 or IPv6 address, a CIDR block, a host name),
what they refuse (loopback, wildcard, malformed), and the table of banned
addresses and blocks that a peer's address is checked against (reference
§3.11, §15).

Host names are only recognised here; resolving them is I/O, which the
reputation service does off the reactor thread.
"""

import functools
import ipaddress
import re
from dataclasses import dataclass

from nodex.reputation.errors import InvalidBanError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_HOST_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")
_LOOPBACK_V4 = ipaddress.IPv4Network("127.0.0.0/8")


@dataclass(frozen=True)
class AddressBlock:
    """
    A CIDR block as given: the address written before the slash and the
    number of bits.  Two blocks are the same ban only when both agree
    (reference §3.11), whatever host bits the address has.

    @ivar address: the address before the slash.
    @ivar bits: the prefix length.
    """

    address: IPAddress
    bits: int

    @property
    def network(self) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
        """
        The addresses the block holds.
        """
        return ipaddress.ip_network((self.address, self.bits), strict=False)

    def __str__(self) -> str:
        return f"{self.address}/{self.bits}"


@dataclass(frozen=True)
class HostName:
    """
    A host name, to be resolved before it is banned.

    @ivar name: the name as given.
    """

    name: str


BanTarget = IPAddress | AddressBlock | HostName
"""What one ban names."""


PARSED_ADDRESSES = 4096
"""How many peer address texts L{parse_peer_address} remembers."""


def normalize_address(address: IPAddress) -> IPAddress:
    """
    An IPv4-mapped IPv6 address (C{::ffff:192.0.2.7}, as a dual-stack socket
    reports an IPv4 peer) as its IPv4 address; any other address unchanged.
    """
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


@functools.lru_cache(maxsize=PARSED_ADDRESSES)
def parse_peer_address(text: str) -> IPAddress | None:
    """
    The IP address of a peer as the P2P layer reports it, normalised; L{None}
    for text that is not an IP address.

    The reputation service asks this before every message a peer sends; the
    parse cost more than the rest of that check (C{ipaddress} parses the
    text octet by octet), so the answers for the last L{PARSED_ADDRESSES}
    texts are kept (an address object is immutable).
    """
    try:
        return normalize_address(ipaddress.ip_address(text))
    except ValueError:
        return None


def _bannable(address: IPAddress) -> bool:
    """
    Whether a single address may be banned: not loopback, not the wildcard.
    """
    return not (address.is_loopback or address.is_unspecified)


def check_bannable(address: IPAddress, given: str) -> IPAddress:
    """
    Refuse loopback and the wildcard address.

    @param given: the text that named C{address}, for the message.
    @return: C{address}, normalised.
    @raise InvalidBanError: C{address} may not be banned.
    """
    address = normalize_address(address)
    if not _bannable(address):
        raise InvalidBanError(given)
    return address


def _parse_block(text: str) -> AddressBlock:
    """
    A CIDR block C{address/bits}, 0 < bits <= 32 (IPv4) or 128 (IPv6), that
    neither holds a loopback nor the wildcard address.

    @raise InvalidBanError: anything else.
    """
    address_text, _, bits_text = text.partition("/")
    try:
        address = normalize_address(ipaddress.ip_address(address_text))
    except ValueError:
        raise InvalidBanError(text) from None
    if not bits_text.isascii() or not bits_text.isdigit() or len(bits_text) > 3:
        raise InvalidBanError(text)
    bits = int(bits_text)
    if not 0 < bits <= address.max_prefixlen:
        raise InvalidBanError(text)
    block = AddressBlock(address, bits)
    network = block.network
    if isinstance(network, ipaddress.IPv4Network):
        refused = network.overlaps(_LOOPBACK_V4) or ipaddress.IPv4Address(0) in network
    else:
        refused = ipaddress.IPv6Address(1) in network or ipaddress.IPv6Address(0) in network
    if refused or not _bannable(address):
        raise InvalidBanError(text)
    return block


def _is_host_name(text: str) -> bool:
    """
    Whether C{text} is a syntactically valid host name (RFC 1123) that is not
    a malformed IP address (all-numeric labels, as in C{1.2.3}).
    """
    name = text[:-1] if text.endswith(".") else text
    if not name or len(name) > 253:
        return False
    labels = name.split(".")
    if not all(_HOST_LABEL.fullmatch(label) for label in labels):
        return False
    return not labels[-1].isdigit()


def parse_ban_target(text: str, allow_host_names: bool = True) -> BanTarget:
    """
    Parse what C{sco_banAddress}, C{sco_unbanAddress} or the
    C{scoring.banned_peer_ips} configuration key name.

    @param allow_host_names: whether a host name is acceptable (not in the
        configuration, which is read before anything may be resolved).
    @return: a normalised address, an L{AddressBlock} or a L{HostName}.
    @raise InvalidBanError: loopback, wildcard, or malformed input.
    """
    if not isinstance(text, str) or not text or text != text.strip():
        raise InvalidBanError(str(text))
    if "/" in text:
        return _parse_block(text)
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        if allow_host_names and _is_host_name(text):
            return HostName(text)
        raise InvalidBanError(text) from None
    return check_bannable(address, text)


class BanList:
    """
    The banned addresses and CIDR blocks (in memory only, as the reference's).
    """

    def __init__(self) -> None:
        self._addresses: dict[IPAddress, None] = {}
        self._blocks: dict[AddressBlock, ipaddress.IPv4Network | ipaddress.IPv6Network] = {}

    def add(self, target: IPAddress | AddressBlock) -> bool:
        """
        Ban an address or a block; whether it was new.
        """
        if isinstance(target, AddressBlock):
            if target in self._blocks:
                return False
            self._blocks[target] = target.network
            return True
        target = normalize_address(target)
        if target in self._addresses:
            return False
        self._addresses[target] = None
        return True

    def remove(self, target: IPAddress | AddressBlock) -> bool:
        """
        Lift the ban of an address, or of a block given exactly as banned;
        whether there was one.
        """
        if isinstance(target, AddressBlock):
            return self._blocks.pop(target, None) is not None
        target = normalize_address(target)
        if target not in self._addresses:
            return False
        del self._addresses[target]
        return True

    def is_banned(self, address: IPAddress) -> bool:
        """
        Whether C{address}, or a block that holds it, is banned.
        """
        address = normalize_address(address)
        if address in self._addresses:
            return True
        return any(address in network for network in self._blocks.values())

    def listing(self) -> list[str]:
        """
        The bans as C{sco_bannedAddresses} shows them: the single addresses,
        then the blocks as C{<address>/<bits>}, each in the order banned.
        """
        return [str(address) for address in self._addresses] + [str(block) for block in self._blocks]


__all__ = [
    "AddressBlock",
    "BanList",
    "BanTarget",
    "HostName",
    "IPAddress",
    "InvalidBanError",
    "check_bannable",
    "normalize_address",
    "parse_ban_target",
    "parse_peer_address",
]
