"""
Tests for L{nodex.rlpcore}: the node's RLP byte codec, checked against
pyrlp (the reference implementation) on generated values and bytes.
"""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rlp import DecodingError
from rlp.codec import decode_raw, encode_raw
from twisted.trial.unittest import SynchronousTestCase

from nodex.rlpcore import (
    EMPTY_LIST,
    EMPTY_STRING,
    RLPFormatError,
    decode,
    decode_item,
    encode,
    encode_bytes,
    encode_list_payload,
    item_bounds,
    list_payload_bounds,
)

_strings = st.binary(max_size=80) | st.binary(min_size=1000, max_size=1100)
_items = st.recursive(_strings, lambda children: st.lists(children, max_size=6), max_leaves=30)


def _depth(item: object) -> int:
    """
    How deeply lists nest in C{item}.
    """
    if isinstance(item, list):
        return 1 + max((_depth(child) for child in item), default=0)
    return 0


class EncodeTests(SynchronousTestCase):
    """
    Encoding byte strings and lists.
    """

    def test_short_forms(self) -> None:
        """
        A byte below 0x80 stands for itself; the empty string and list have
        one-byte encodings; a 55-byte string keeps the short form and a
        56-byte one takes the long form.
        """
        self.assertEqual(encode(b"\x7f"), b"\x7f")
        self.assertEqual(encode(b"\x80"), b"\x81\x80")
        self.assertEqual(encode(b""), EMPTY_STRING)
        self.assertEqual(encode([]), EMPTY_LIST)
        self.assertEqual(encode(b"a" * 55)[:1], b"\xb7")
        self.assertEqual(encode(b"a" * 56)[:2], b"\xb8\x38")

    def test_tuples_bytearrays_and_memoryviews(self) -> None:
        """
        Tuples encode as lists; bytearrays and memoryviews as byte strings.
        """
        self.assertEqual(encode((b"ab", [b"c"])), encode([b"ab", [b"c"]]))
        self.assertEqual(encode([bytearray(b"dog")]), encode([b"dog"]))
        self.assertEqual(encode(memoryview(b"dog")), encode(b"dog"))

    def test_other_types_refused(self) -> None:
        """
        Integers, strings and None are not RLP items.
        """
        for value in (1, "dog", None, [b"a", 2], {b"a": b"b"}):
            with self.assertRaises(RLPFormatError):
                encode(value)

    def test_helpers_agree(self) -> None:
        """
        L{encode_bytes} and L{encode_list_payload} give what L{encode} gives.
        """
        for value in (b"", b"\x01", b"\x81", b"x" * 60, b"y" * 2000):
            self.assertEqual(encode_bytes(value), encode(value))
        items = [b"x" * 60, b"", [b"z" * 1500]]
        self.assertEqual(encode_list_payload(b"".join(encode(item) for item in items)), encode(items))

    @settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(_items)
    def test_same_as_pyrlp(self, item: object) -> None:
        """
        Every generated item encodes as pyrlp encodes it, and decodes back.
        """
        encoded = encode(item)
        self.assertEqual(encoded, encode_raw(item))
        if _depth(item) <= 16:
            self.assertEqual(decode(encoded), item)


class DecodeTests(SynchronousTestCase):
    """
    Decoding accepts canonical RLP only.
    """

    def assertRefused(self, data: bytes, words: str) -> None:
        """
        Decoding C{data} fails with a message containing C{words}.
        """
        with self.assertRaises(RLPFormatError) as caught:
            decode(data)
        self.assertIn(words, str(caught.exception))

    def test_non_canonical_refused(self) -> None:
        """
        A prefixed single byte, a long form for a short payload, a length
        with a leading zero, truncation and trailing bytes are refused.
        """
        self.assertRefused(b"\x81\x05", "single byte")
        self.assertRefused(b"\xc2\x81\x05", "single byte")
        self.assertRefused(b"\xb8\x05hello", "long-form")
        self.assertRefused(b"\xb9\x00\x38" + b"a" * 56, "leading zero")
        self.assertRefused(b"\x83do", "past the end")
        self.assertRefused(b"\xc3\x83do", "past the end")
        self.assertRefused(b"\xc5\x83dog", "past the end")
        self.assertRefused(b"\x83dogs", "trailing")
        self.assertRefused(b"", "data ended")

    def test_depth_bounded(self) -> None:
        """
        Lists nested deeper than the limit are refused without recursing
        into them, however deep they go.
        """
        self.assertEqual(decode(b"\xc1\xc0", max_depth=2), [[]])
        with self.assertRaises(RLPFormatError):
            decode(b"\xc1\xc0", max_depth=1)
        deep = b"\xc0"
        for _ in range(20000):
            deep = encode_list_payload(deep)
        self.assertRefused(deep, "nested too deeply")

    def test_item_and_bounds(self) -> None:
        """
        L{decode_item} reads one item inside a larger buffer;
        L{list_payload_bounds} finds a list's payload.
        """
        data = b"xx" + encode([b"dog", b"cat"]) + b"yy"
        item, stop = decode_item(data, 2, len(data) - 2)
        self.assertEqual((item, stop), ([b"dog", b"cat"], len(data) - 2))
        self.assertEqual(list_payload_bounds(encode([b"dog"])), (1, 5))
        with self.assertRaises(RLPFormatError):
            list_payload_bounds(b"\x83dog")
        with self.assertRaises(RLPFormatError):
            list_payload_bounds(encode([b"dog"]) + b"\x00")

    @settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.binary(max_size=64) | _items.map(encode).flatmap(lambda data: st.just(data) | st.binary(max_size=3).map(lambda extra: data[: len(data) // 2] + extra)))
    def test_agrees_with_pyrlp(self, data: bytes) -> None:
        """
        On any bytes, this decoder and pyrlp's strict one accept the same
        inputs and give the same items.
        """
        try:
            expected = decode_raw(data, True, False)[0]
        except (DecodingError, RecursionError):
            expected = None
        try:
            got = decode(data)
        except RLPFormatError:
            got = None
        if expected is not None and _depth(expected) > 16:
            expected = None
        self.assertEqual(got, expected)


class ItemBoundsTests(SynchronousTestCase):
    """
    L{item_bounds} finds an item's payload without decoding it, checking its prefix as decoding does.
    """

    def test_bounds(self) -> None:
        """
        A single byte, a short and a long string, a short and a long list
        (inside some data): where the payload starts, where the item
        stops, whether it is a list; what a list holds is not looked at.
        """
        long_string = encode(b"x" * 60)
        long_list = encode([b"y" * 30, b"z" * 30])
        data = b"\x05" + encode(b"abc") + long_string + b"\xc2\xff\xff" + long_list
        self.assertEqual(item_bounds(data, 0, len(data)), (0, 1, False))
        self.assertEqual(item_bounds(data, 1, len(data)), (2, 5, False))
        self.assertEqual(item_bounds(data, 5, len(data)), (7, 67, False))
        # b"\xff\xff" is no valid content: not looked at.
        self.assertEqual(item_bounds(data, 67, len(data)), (68, 70, True))
        self.assertEqual(item_bounds(data, 70, len(data)), (72, len(data), True))

    def test_refused_as_decoding_refuses(self) -> None:
        """
        A prefixed single byte below 0x80, a long form for a short length,
        an item past the end, no item at all.
        """
        for data, end in ((b"\x81\x05", 2), (b"\xb8\x05abcde", 7), (b"\x83ab", 3), (b"\xc3\x01\x02", 3), (b"", 0)):
            with self.assertRaises(RLPFormatError):
                item_bounds(data, 0, end)
            if data:
                with self.assertRaises(RLPFormatError):
                    decode_item(data, 0, end)
