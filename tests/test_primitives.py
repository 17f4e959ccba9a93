"""
Tests for L{nodex.primitives}.
"""

from dataclasses import dataclass

from twisted.trial.unittest import SynchronousTestCase

from nodex.primitives import cached_property


@dataclass(frozen=True)
class _Counted:
    """
    A frozen object with a kept property that counts its computations.
    """

    value: int
    computed: list[int]

    @cached_property
    def double(self) -> int:
        """
        Twice the value.
        """
        self.computed.append(self.value)
        if self.value < 0:
            raise ValueError("negative")
        return 2 * self.value


class CachedPropertyTests(SynchronousTestCase):
    """
    L{cached_property} computes a value once per instance and keeps it.
    """

    def test_computed_once_per_instance(self) -> None:
        """
        The first use computes the value and keeps it in the instance's
        C{__dict__}, even on a frozen dataclass; later uses do not compute
        it again; another instance has its own.
        """
        computed: list[int] = []
        first, second = _Counted(3, computed), _Counted(5, computed)
        self.assertEqual((first.double, first.double, second.double, first.double), (6, 6, 10, 6))
        self.assertEqual(computed, [3, 5])
        self.assertEqual(first.__dict__["double"], 6)

    def test_failure_not_kept(self) -> None:
        """
        A computation that raises keeps nothing: the next use computes again.
        """
        computed: list[int] = []
        failing = _Counted(-1, computed)
        self.assertRaises(ValueError, lambda: failing.double)
        self.assertRaises(ValueError, lambda: failing.double)
        self.assertEqual(computed, [-1, -1])
        self.assertNotIn("double", failing.__dict__)

    def test_on_the_class(self) -> None:
        """
        Looked up on the class, it is the descriptor, with the function's
        name and documentation.
        """
        descriptor = _Counted.double
        self.assertIsInstance(descriptor, cached_property)
        self.assertEqual(descriptor.name, "double")
        self.assertEqual(descriptor.__doc__.strip(), "Twice the value.")
