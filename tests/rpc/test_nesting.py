"""
Tests for L{nodex.rpc.nesting}.
"""

import sys

from twisted.trial.unittest import SynchronousTestCase

from nodex.rpc.dispatch import Dispatcher  # noqa: F401  (the module that relies on the check)
from nodex.rpc.nesting import MAX_NESTING, nesting_depth, too_deep


class NestingTests(SynchronousTestCase):
    """
    Tests for measuring a body's nesting without parsing it.
    """

    def test_depths(self) -> None:
        """
        The depth counts arrays and objects and ignores brackets inside strings.
        """
        body = b'[' * 200 + b'{"a": "[[[[\\"[[["}' + b']' * 200
        self.assertEqual(nesting_depth(body), 201)
        self.assertEqual(nesting_depth(b'{"method": "eth_call", "params": [{}]}'), 0)

    def test_limit(self) -> None:
        """
        Bodies one level deeper than the limit are too deep; at the limit they are not.
        """
        self.assertFalse(too_deep(b"[" * MAX_NESTING + b"]" * MAX_NESTING))
        self.assertTrue(too_deep(b"[" * (MAX_NESTING + 1)))

    def test_survives_a_high_recursion_limit(self) -> None:
        """
        With the recursion limit the EVM sets, a hundred thousand brackets are
        refused before the C parser could exhaust the stack.
        """
        previous = sys.getrecursionlimit()
        sys.setrecursionlimit(max(previous, 100_000))
        self.addCleanup(sys.setrecursionlimit, previous)
        self.assertTrue(too_deep(b"[" * 100_000))


class NestingAgreesWithParserTests(SynchronousTestCase):
    """
    The depth measured from the bytes is the depth the parser sees.
    """

    def test_escapes_in_strings(self) -> None:
        """
        Escaped quotes and backslashes inside strings neither end a string
        early nor hide brackets that follow it.
        """
        import json

        def depth(value: object) -> int:
            if isinstance(value, list):
                return 1 + max((depth(item) for item in value), default=0)
            if isinstance(value, dict):
                return 1 + max((depth(item) for item in value.values()), default=0)
            return 0

        tricky = ['\\', '"', '\\"', '"\\', '[[{', '\\[', 'a\\\\"]', '\n\t"[]"']
        for text in tricky:
            value: object = text
            for level in range(150):
                value = [value, {"k" + text: text}] if level % 2 else {"x": value, text: [text]}
            body = json.dumps(value).encode()
            self.assertEqual(nesting_depth(body), depth(value), text)
