"""
Tests for L{nodex.reputation.bans}: what may be banned, and the ban list.
"""

from ipaddress import IPv4Address, IPv6Address

from twisted.trial.unittest import SynchronousTestCase

from nodex.reputation.bans import AddressBlock, BanList, HostName, parse_ban_target, parse_peer_address
from nodex.reputation.errors import InvalidBanError

REFUSED = [
    "",
    " 192.0.2.7",
    "192.0.2.7 ",
    "127.0.0.1",
    "127.1.2.3",
    "::1",
    "0.0.0.0",
    "::",
    "::ffff:127.0.0.1",
    "0:0:0:0:0:0:0:1",
    "192.0.2.7/0",
    "192.0.2.7/33",
    "2001:db8::/0",
    "2001:db8::/129",
    "192.0.2.7/",
    "192.0.2.7/x",
    "192.0.2.7/-1",
    "192.0.2.7/+8",
    "192.0.2.7/0008",
    "192.0.2.7/٣",
    "/24",
    "127.0.0.0/8",
    "127.0.0.0/24",
    "64.0.0.0/1",
    "0.0.0.0/8",
    "::/1",
    "::/64",
    "::1/128",
    "192.0.2.7/24/8",
    "1.2.3",
    "1.2.3.4.5",
    "256.1.1.1",
    "192.0.2.7:80",
    "[2001:db8::1]",
    "host_name.example",
    "-bad.example",
    "bad-.example",
    "a..b",
    ".",
    "a" * 64 + ".example",
    ("a" * 60 + ".") * 5 + "example",
    "exa mple.com",
    "http://example.com",
    "example.com\n",
]


class ParseTests(SynchronousTestCase):
    """
    Tests for L{parse_ban_target}.
    """

    def test_single_addresses(self) -> None:
        """
        IPv4 and IPv6 addresses; an IPv4-mapped IPv6 address is its IPv4 address.
        """
        self.assertEqual(parse_ban_target("192.0.2.7"), IPv4Address("192.0.2.7"))
        self.assertEqual(parse_ban_target("2001:DB8::1"), IPv6Address("2001:db8::1"))
        self.assertEqual(parse_ban_target("::ffff:192.0.2.7"), IPv4Address("192.0.2.7"))
        self.assertEqual(parse_ban_target("10.0.0.1"), IPv4Address("10.0.0.1"))

    def test_blocks(self) -> None:
        """
        CIDR blocks keep the address as given and the bits; 0 < bits <= 32 or 128.
        """
        block = parse_ban_target("192.0.2.7/24")
        self.assertEqual(block, AddressBlock(IPv4Address("192.0.2.7"), 24))
        self.assertEqual(str(block), "192.0.2.7/24")
        self.assertEqual(str(block.network), "192.0.2.0/24")
        self.assertEqual(str(parse_ban_target("2001:db8::/32")), "2001:db8::/32")
        self.assertEqual(str(parse_ban_target("192.0.2.7/32")), "192.0.2.7/32")
        self.assertEqual(str(parse_ban_target("2001:db8::1/128")), "2001:db8::1/128")
        self.assertEqual(str(parse_ban_target("128.0.0.0/1")), "128.0.0.0/1")

    def test_host_names(self) -> None:
        """
        Host names are recognised for resolution, unless refused.
        """
        self.assertEqual(parse_ban_target("peer-1.example.org"), HostName("peer-1.example.org"))
        self.assertEqual(parse_ban_target("localhost"), HostName("localhost"))
        self.assertEqual(parse_ban_target("example.com."), HostName("example.com."))
        self.assertRaises(InvalidBanError, parse_ban_target, "example.com", allow_host_names=False)

    def test_refused(self) -> None:
        """
        Loopback, wildcard, blocks holding either, and malformed input are refused with the
        reference's message.
        """
        for text in REFUSED:
            with self.assertRaises(InvalidBanError, msg=repr(text)) as caught:
                parse_ban_target(text)
            self.assertTrue(str(caught.exception).startswith("invalid banned address "), text)

    def test_message(self) -> None:
        """
        The message names the address; a very long one is shortened.
        """
        self.assertEqual(str(InvalidBanError("127.0.0.1")), "invalid banned address 127.0.0.1")
        self.assertEqual(str(InvalidBanError("x" * 1000)), "invalid banned address " + "x" * 64 + "...")

    def test_peer_address(self) -> None:
        """
        Peer addresses are normalised; anything else is L{None}.
        """
        self.assertEqual(parse_peer_address("::ffff:10.1.2.3"), IPv4Address("10.1.2.3"))
        self.assertEqual(parse_peer_address("2001:db8::1"), IPv6Address("2001:db8::1"))
        self.assertIsNone(parse_peer_address("/tmp/socket"))


class BanListTests(SynchronousTestCase):
    """
    Tests for L{BanList}.
    """

    def setUp(self) -> None:
        """
        An empty list.
        """
        self.bans = BanList()

    def test_address(self) -> None:
        """
        A banned address is banned; others are not; unbanning lifts it.
        """
        self.assertTrue(self.bans.add(IPv4Address("192.0.2.7")))
        self.assertFalse(self.bans.add(IPv4Address("192.0.2.7")))
        self.assertTrue(self.bans.is_banned(IPv4Address("192.0.2.7")))
        self.assertTrue(self.bans.is_banned(IPv6Address("::ffff:192.0.2.7")))
        self.assertFalse(self.bans.is_banned(IPv4Address("192.0.2.8")))
        self.assertTrue(self.bans.remove(IPv4Address("192.0.2.7")))
        self.assertFalse(self.bans.remove(IPv4Address("192.0.2.7")))
        self.assertFalse(self.bans.is_banned(IPv4Address("192.0.2.7")))

    def test_blocks(self) -> None:
        """
        A block bans every address it holds, IPv4 and IPv6.
        """
        self.bans.add(parse_ban_target("198.51.100.0/24"))
        self.bans.add(parse_ban_target("2001:db8::/32"))
        self.assertTrue(self.bans.is_banned(IPv4Address("198.51.100.255")))
        self.assertFalse(self.bans.is_banned(IPv4Address("198.51.101.0")))
        self.assertTrue(self.bans.is_banned(IPv6Address("2001:db8:ffff::1")))
        self.assertFalse(self.bans.is_banned(IPv6Address("2001:db9::1")))

    def test_block_unban_exactly_as_given(self) -> None:
        """
        A block is lifted only when named with the same address and bits.
        """
        self.bans.add(parse_ban_target("192.0.2.7/24"))
        self.assertFalse(self.bans.remove(parse_ban_target("192.0.2.0/24")))
        self.assertFalse(self.bans.remove(parse_ban_target("192.0.2.7/25")))
        self.assertTrue(self.bans.is_banned(IPv4Address("192.0.2.1")))
        self.assertTrue(self.bans.remove(parse_ban_target("192.0.2.7/24")))
        self.assertFalse(self.bans.is_banned(IPv4Address("192.0.2.1")))

    def test_listing(self) -> None:
        """
        Single addresses first, then blocks as C{<address>/<bits>}, each in the order banned.
        """
        for text in ("2001:db8::/32", "192.0.2.7", "198.51.100.9/24", "2001:DB8::7"):
            self.bans.add(parse_ban_target(text))
        self.assertEqual(self.bans.listing(), ["192.0.2.7", "2001:db8::7", "2001:db8::/32", "198.51.100.9/24"])
