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
