"""
Tests for L{nodex.primitives}.
"""

from dataclasses import FrozenInstanceError, InitVar, dataclass, field

from twisted.trial.unittest import SynchronousTestCase

from nodex.primitives import cached_property, direct_init


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


@dataclass(frozen=True)
class _Written:
    """
    A frozen dataclass with the __init__ C{dataclass} writes.
    """

    number: int
    data: bytes = b""
    note: object = field(default=None, compare=False)


@direct_init
@dataclass(frozen=True)
class _Direct:
    """
    The same fields, with L{direct_init}'s __init__.
    """

    number: int
    data: bytes = b""
    note: object = field(default=None, compare=False)


class DirectInitTests(SynchronousTestCase):
    """
    L{direct_init} gives a frozen dataclass a cheaper C{__init__} with the
    same parameters and result, and refuses the shapes it cannot keep.
    """

    def test_same_instances(self) -> None:
        """
        Positional, keyword and default arguments give the fields the
        dataclass's own C{__init__} gives; the instances are still frozen,
        equal and hashed alike; a missing or unknown argument is refused.
        """
        for args, kwargs in (((1,), {}), ((2, b"x"), {}), ((3,), {"note": "n"}), ((), {"number": 4, "data": b"y"})):
            written, direct = _Written(*args, **kwargs), _Direct(*args, **kwargs)
            self.assertEqual(written.__dict__, direct.__dict__)
            self.assertEqual(hash((written.number, written.data)), hash((direct.number, direct.data)))
            self.assertEqual(direct, _Direct(*args, **kwargs))
            self.assertEqual(hash(direct), hash(_Direct(*args, **kwargs)))
        self.assertEqual(repr(_Direct(5)), "_Direct(number=5, data=b'', note=None)")
        self.assertRaises(FrozenInstanceError, setattr, _Direct(1), "number", 2)
        self.assertRaises(TypeError, _Direct)
        self.assertRaises(TypeError, _Direct, 1, other=2)

    def test_refused_shapes(self) -> None:
        """
        A class that is not a frozen dataclass, or whose fields or
        C{__post_init__} the direct C{__init__} would skip, is refused when
        it is decorated.
        """

        class Plain:
            pass

        @dataclass
        class Thawed:
            number: int

        @dataclass(frozen=True)
        class Factory:
            items: list[int] = field(default_factory=list)

        @dataclass(frozen=True)
        class Hidden:
            number: int = field(default=0, init=False)

        @dataclass(frozen=True)
        class Checked:
            number: int

            def __post_init__(self) -> None:
                pass

        @dataclass(frozen=True)
        class Extra:
            number: int
            scale: InitVar[int] = 1

        @dataclass(frozen=True)
        class KeywordOnly:
            number: int = field(kw_only=True)

        @dataclass(frozen=True, slots=True)
        class Slotted:
            number: int

        for cls in (Plain, Thawed, Factory, Hidden, Checked, Extra, KeywordOnly, Slotted):
            self.assertRaises(TypeError, direct_init, cls)
